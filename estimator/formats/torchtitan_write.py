"""Writing a strategy back into a torchtitan TOML (docs/model.md#frameworks): the file's own strategy and the new one
are both mapped onto the file's keys, and only the keys that differ are changed (tomlkit round trip: comments, order and
quoting kept). What a torchtitan TOML cannot express is refused (R-FW)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import tomlkit

from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .common import load_toml
from .support import original_strategy, refuse, refuse_unwritable
from .torchtitan import (
    FORMAT,
    LOCATIONS,
    NEW_ONLY,
    SCHEDULES,
    WRITE_SCHEDULE,
    find_key,
    read,
    schedule_key,
    schema_of,
    stage_weights,
)
from .torchtitan_features import write_float8

# Strategy fields this writer expresses (other changed fields are refused, R-FW)
WRITABLE = {"seq_length", "dp", "tp", "pp", "vpp", "cp", "ep", "etp", "d_rep", "d_sh", "micro_batch_size",
            "micro_batches", "n_acc", "sequence_parallel", "cp_algo", "ulysses_degree", "schedule",
            "emb_out_in_offset", "vocab_parallel_loss", "compute_bytes", "reduce_bytes", "recompute.default_mode",
            "recompute.ranges", "recompute.rule", "sharding.mode", "sharding.os", "sharding.reshard_after_forward",
            "sharding.reshard_head_unit", "compile", "async_tp", "offload_params", "offload_optimizer",
            "fp8", "fp8_param"}
WIDTH_NAMES = {2: "bfloat16", 4: "float32"}
DELETE = "<delete>"  # view value: remove the key (the framework default applies)

@dataclass(frozen=True)
class _Context:
    schema: str
    rep_all: bool      # data_parallel_replicate_degree = -1
    shard_all: bool    # data_parallel_shard_degree = -1
    had_global: bool
    had_lps: bool
    old_microbatches: bool  # pipeline_parallel_microbatches (count) rather than the micro-batch size
    schedule_text: str | None
    n_layers: int
    weights: int
    had_rotate: bool = False  # the file states context_parallel_rotate_method
    had_compile: bool = False
    had_async_tp: bool = False
    had_cpu_offload: bool = False
    tokens: bool = False  # the batch is stated in tokens (num_tokens_per_microbatch_per_dp_rank)
    step_tokens: bool = False  # the global batch in tokens (num_tokens_per_train_step; the tokens schema's key)


def _context(data: dict[str, Any], parsed: ParsedConfig) -> _Context:
    rep, shard = find_key(data, "dp_replicate")[0], find_key(data, "dp_shard")
    sched = find_key(data, "schedule")[0]
    schema = schema_of(data)
    return _Context(schema=schema, rep_all=rep == -1, shard_all=shard[1] is None or shard[0] == -1,
                    had_global=(find_key(data, "global_batch_size")[0] or -1) > 0 or
                    find_key(data, "step_tokens")[1] is not None,
                    had_lps=find_key(data, "layers_per_stage")[1] is not None,
                    old_microbatches=find_key(data, "pp_microbatches")[1] is not None or schema != "parallelism",
                    schedule_text=str(sched) if sched is not None else None,
                    n_layers=parsed.model.num_layers, weights=stage_weights(data),
                    had_rotate=find_key(data, "cp_rotate")[1] is not None,
                    had_compile=find_key(data, "compile")[1] is not None,
                    had_async_tp=find_key(data, "async_tp")[1] is not None,
                    had_cpu_offload=find_key(data, "cpu_offload")[1] is not None,
                    tokens=find_key(data, "local_batch_size")[1] is None and
                    find_key(data, "microbatch_tokens")[1] is not None,
                    step_tokens=find_key(data, "global_batch_size")[1] is None and
                    (find_key(data, "step_tokens")[1] is not None or
                     find_key(data, "microbatch_tokens")[1] is not None))


def _view(st: Strategy, ctx: _Context, path: str) -> dict[str, Any]:
    """The file values (by LOCATIONS name) that express ``st``; None = leave the file as it is."""
    sh, dp, cp, pp = st.sharding, st.dp, st.cp, st.pp
    v: dict[str, Any] = {}
    if sh.mode == "none":
        if cp > 1:
            raise refuse(FORMAT, "context parallelism without FSDP (torchtitan shards over dp_shard × cp)", path)
        d_rep, d_sh = dp, 1
    elif sh.mode == "fsdp":
        if sh.os not in (None, dp * cp) or not sh.span_cp:
            raise refuse(FORMAT, f"an FSDP shard group of {sh.os} (torchtitan shards over dp_shard × cp = "
                                 f"{dp * cp}; use hsdp)", path)
        d_rep, d_sh = 1, dp
    elif sh.mode == "hsdp":
        d_sh = st.d_sh or (sh.os // cp if sh.os and sh.os % cp == 0 else None)
        if d_sh is None or dp % d_sh or (sh.os not in (None, d_sh * cp)):
            raise refuse(FORMAT, f"HSDP with dp {dp}, d_sh {st.d_sh}, shard size {sh.os}", path)
        d_rep = dp // d_sh
    else:
        raise refuse(FORMAT, f"sharding {sh.mode!r} (torchtitan runs FSDP2, HSDP or DDP)", path)
    v["dp_replicate"] = -1 if ctx.rep_all else d_rep
    v["dp_shard"] = -1 if ctx.shard_all else d_sh
    v.update(tp=st.tp, pp=pp, cp=cp, ep=st.ep, etp=st.etp, seq_len=st.seq_length)
    if cp > 1 and (st.cp_algo not in ("ring", "allgather") or (st.ulysses_degree or 1) > 1):
        raise refuse(FORMAT, f"context-parallel algorithm {st.cp_algo} (torchtitan runs ring attention: all-gather "
                             "or all-to-all rotation)", path)
    if cp > 1:  # all-gather is PyTorch's default rotation: stated only where the file states it or it changes
        v["cp_rotate"] = "alltoall" if st.cp_algo == "ring" else ("allgather" if ctx.had_rotate else None)
    b, m, n_acc = st.micro_batch_size, st.micro_batches, st.n_acc
    if pp == 1:
        lbs, steps = b, m * n_acc
    else:
        lbs, steps = b * m, n_acc
        v["pp_microbatches" if ctx.old_microbatches else "pp_microbatch_size"] = m if ctx.old_microbatches else b
        _view_schedule(v, st, ctx, path)
    global_batch = lbs * dp * steps if (ctx.had_global or steps > 1) else None
    if ctx.tokens:  # the 2026 schema counts tokens per micro-batch and data-parallel rank
        v["microbatch_tokens"] = lbs * st.seq_length
    else:
        v["local_batch_size"] = lbs
    if ctx.step_tokens:
        v["step_tokens"] = global_batch * st.seq_length if global_batch is not None else None
    else:
        v["global_batch_size"] = global_batch
    v["reshard"] = _view_reshard(st, path)
    v["disable_loss_parallel"] = True if st.vocab_parallel_loss is False else None
    v["ac_mode"], v["ac_option"] = _view_recompute(st, ctx, path)
    _view_compile(v, st, ctx, path)
    v["async_tp"] = True if st.async_tp else (False if ctx.had_async_tp else None)
    if st.offload_params != st.offload_optimizer:
        raise refuse(FORMAT, "offload of only the parameters or only the optimizer (torchtitan's "
                             "training.enable_cpu_offload moves parameters, gradients and optimizer states together)",
                     path)
    v["cpu_offload"] = True if st.offload_params else (False if ctx.had_cpu_offload else None)
    for name, width in (("mp_param", st.compute_bytes), ("mp_reduce", st.reduce_bytes)):
        if width is not None and width not in WIDTH_NAMES:
            raise refuse(FORMAT, f"a {width}-byte mixed-precision dtype", path)
        v[name] = WIDTH_NAMES.get(width) if width is not None else None
    return v


def _view_compile(v: dict[str, Any], st: Strategy, ctx: _Context, path: str) -> None:
    """[compile] enable + components (the 2024-12 schema: training.compile, the model only)."""
    parts = tuple(st.compile)
    if ctx.schema != "parallelism":
        if parts not in ((), ("model",)):
            raise refuse(FORMAT, f"compile of {', '.join(parts)} in the 2024-12 schema (training.compile compiles "
                                 "the model only)", path)
        v["compile"] = bool(parts) if (parts or ctx.had_compile) else None
        return
    v["compile"] = bool(parts) if (parts or ctx.had_compile) else None
    if parts:
        v["compile_components"] = [p for p in ("model", "loss") if p in parts]


def _view_schedule(v: dict[str, Any], st: Strategy, ctx: _Context, path: str) -> None:
    sched = st.schedule_name
    if sched not in WRITE_SCHEDULE:
        raise refuse(FORMAT, f"the {sched} schedule", path)
    original = SCHEDULES.get(schedule_key(ctx.schedule_text)) if ctx.schedule_text else None
    if st.schedule is not None or st.vpp > 1 or ctx.schedule_text is not None:
        v["schedule"] = ctx.schedule_text if original and original[0] == sched else WRITE_SCHEDULE[sched]
    if ctx.schema != "parallelism":
        if st.emb_out_in_offset:
            raise refuse(FORMAT, "embedding/output counted as layers in the 2024-12 schema", path)
    elif not st.emb_out_in_offset:
        v["first_less"] = v["last_less"] = 0
    elif ctx.weights != 2:
        v["first_less"] = v["last_less"] = 1
    looped = sched in ("interleaved", "interleaved_zb", "looped_bfs")  # multi-stage schedules: 2 per rank by default
    if not looped and not ctx.had_lps:
        return
    if looped and st.vpp == 2 and not ctx.had_lps:
        return
    stages = st.pp * st.vpp
    total = ctx.n_layers + (2 if st.emb_out_in_offset else 0)
    lps = next((k for k in range(1, total + 1) if math.ceil(total / k) == stages), None)
    if lps is None and st.vpp == (2 if looped else 1):
        lps = DELETE  # the schedule's own default chunk count
    if lps is None:
        raise refuse(FORMAT, f"{st.vpp} chunks per stage for {ctx.n_layers} layers on {st.pp} stages "
                             "(no pipeline_parallel_layers_per_stage gives it)", path)
    v["layers_per_stage"] = lps


def _view_reshard(st: Strategy, path: str) -> str:
    raf, head, pp = st.sharding.reshard_after_forward, st.sharding.reshard_head_unit, st.pp
    effective = raf if raf is not None else pp == 1
    if effective and head:
        return "always"
    if effective and not head and pp == 1:
        return "default"
    if not effective and not head:
        return "default" if raf is None else "never"
    raise refuse(FORMAT, f"reshard_after_forward {raf} with reshard_head_unit {head} at pp {pp}", path)


def _view_recompute(st: Strategy, ctx: _Context, path: str) -> tuple[str, str | None]:
    rec = st.recompute
    if any(x not in (None, False) for x in (rec.full_counts, rec.sel_counts, rec.comm_counts)) or \
            rec.uniform_group > 1 or rec.switches is not None:
        raise refuse(FORMAT, "per-stage recompute counts, groups or switches (torchtitan: activation_checkpoint "
                             "mode none|selective|full, selective_ac_option op or every k-th layer)", path)
    if rec.ranges:
        first = sorted(r.first for r in rec.ranges)
        for k in range(1, ctx.n_layers + 1):
            pattern = [i for i in range(ctx.n_layers) if (i + 1) % k == 0]
            if first == pattern and all(r.count == 1 and r.option == "full" for r in rec.ranges) and \
                    rec.default_mode == "none":
                return "selective", str(k)
        raise refuse(FORMAT, "recompute ranges other than every k-th layer in full", path)
    if rec.default_mode == "selective":
        if rec.rule not in (None, "torchtitan_op"):
            raise refuse(FORMAT, f"the {rec.rule} selective-recompute rule", path)
        return "selective", "op"
    return rec.default_mode, None


def _location(data: dict[str, Any], schema: str, name: str, path: str) -> tuple[str, str]:
    """The (section, key) a view value is written at: where the file states it, else the schema's place."""
    locations = LOCATIONS[name]
    for section, key in locations:
        if isinstance(data.get(section), dict) and key in data[section]:
            return section, key
    if schema != "parallelism" and name in NEW_ONLY:
        raise refuse(FORMAT, f"{name} in the 2024-12 schema (no such key)", path)
    return locations[0] if schema == "parallelism" or len(locations) == 1 else locations[1]


def job_changes(job: dict[str, Any], parsed: ParsedConfig, old: Strategy, new: Strategy,
                path: str) -> dict[str, Any]:
    """``section.key`` → value of the job-config keys that express ``new`` where it differs from ``old`` (None:
    remove the key), as the TOML writer would write them; the Python registry's refusal names them. Raises
    ConfigError [R-FW] for what torchtitan's job config cannot express."""
    refuse_unwritable(FORMAT, old, new, WRITABLE, path)
    ctx = _context(job, parsed)
    before, after = _view(old, ctx, path), _view(new, ctx, path)
    out: dict[str, Any] = {}
    for name, value in after.items():
        if value is not None and before.get(name) != value:
            section, key = _location(job, ctx.schema, name, path)
            out[f"{section}.{key}"] = None if value == DELETE else value
    if (old.fp8, old.fp8_param) != (new.fp8, new.fp8_param):
        out["model_converters"] = f"float8 {new.fp8}" + (" (FP8 weights)" if new.fp8_param else "")
    return out


def _set_toml(doc: Any, data: dict[str, Any], schema: str, name: str, value: Any, path: str) -> None:
    section, key = _location(data, schema, name, path)
    if value == DELETE:
        if section in doc and key in doc[section]:
            del doc[section][key]
        return
    if section not in doc:
        doc.add(section, tomlkit.table())
    table = doc[section]
    old = table.get(key)
    if isinstance(value, str) and old is not None and getattr(old, "type", None) is not None and \
            "SLL" in str(old.type):
        value = tomlkit.string(value, literal=True)
    table[key] = value


def write_toml(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """``source.text`` with only the keys defining ``strategy`` changed (tomlkit round trip: comments, order
    and quoting kept). Raises ConfigError [R-FW] for what a torchtitan TOML cannot express."""
    data = load_toml(source.text, source.path)
    old = original_strategy(source, parsed, read, data)
    refuse_unwritable(FORMAT, old, strategy, WRITABLE, source.path)
    ctx = _context(data, parsed)
    before, after = _view(old, ctx, source.path), _view(strategy, ctx, source.path)
    changes = {k: v for k, v in after.items() if v is not None and before.get(k) != v}
    if not changes and (old.fp8, old.fp8_param) == (strategy.fp8, strategy.fp8_param):
        return source.text
    doc = tomlkit.parse(source.text)
    for name, value in changes.items():
        _set_toml(doc, data, ctx.schema, name, value, source.path)
    write_float8(doc, data, old, strategy, source.path)
    return tomlkit.dumps(doc)
