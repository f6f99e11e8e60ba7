"""Writing a strategy back into a HyperParallel YAML (docs/model.md#frameworks): the file's own strategy and the new one
are both mapped onto the file's keys, and only the values that differ are spliced into the text at their node
positions (comments, order, quoting and indentation kept byte for byte). What the file cannot express is
refused (R-FW)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from ..errors import ConfigError
from ..messages import msg
from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .common import load_yaml
from .hyperparallel import AUTO, FORMAT, SCHEDULES, SEQ_KEYS, V2, HyperParallelFile, present, read, schema, yaml_node
from .support import original_strategy, plain_lists, refuse, refuse_unwritable

# schedule / cp_algo -> the name written for it (interleaved 1F1B is 1f1b with pp_interleave_num > 1)
WRITE_SCHEDULES = {"1f1b": "1f1b", "interleaved": "1f1b", "gpipe": "gpipe", "zbv": "zero_bubble_v",
                   "dualpipev": "dualpipev", "seq1f1b": "seqpipe", "seqsmartvpp": "seqsmartvpp"}
WRITE_CP_ALGOS = {"ring": "colossalai_cp", "ulysses": "ulysses_cp", "hybrid": "hybrid_cp"}
# Strategy fields this writer expresses (other changed fields are refused, R-FW)
WRITABLE = {"seq_length", "dp", "tp", "pp", "vpp", "cp", "ep", "etp", "d_rep", "d_sh", "micro_batch_size",
            "micro_batches", "n_acc", "sequence_parallel", "cp_algo", "ulysses_degree", "schedule", "offset",
            "recompute_slice_activation", "vocab_parallel_loss", "recompute.default_mode", "recompute.full_counts",
            "recompute.sel_counts", "recompute.ranges", "sharding.mode", "sharding.os", "sharding.os_e",
            "sharding.reshard_after_forward"}


@dataclass(frozen=True)
class _Context:
    kind: str
    seq_keys: tuple[str, ...]
    had: frozenset[str]          # canonical names present in the file
    shard: int                   # V2 dp_shard / auto dp_shard_size as read
    rep: int                     # V2 dp_replicate
    parallel_optimizer: bool
    schedule_text: str | None
    had_full_rec: bool
    had_sel_rec: bool
    had_layers: bool


def _context(src: HyperParallelFile) -> _Context:
    seq = next((k for k in SEQ_KEYS[src.kind] if present(src.data, k)), SEQ_KEYS[src.kind][0])
    keys = src.keys
    return _Context(kind=src.kind, seq_keys=seq, had=frozenset(k for k in keys if src.has(k)),
                    shard=src.int("dp_shard" if src.kind == "v2" else "dp_shard_size", 1),
                    rep=src.int("dp_replicate", 1), parallel_optimizer=src.get("parallel_optimizer") is True,
                    schedule_text=str(src.get("schedule")) if src.has("schedule") else None,
                    had_full_rec=src.has("full_rec"), had_sel_rec=src.has("sel_rec"),
                    had_layers=src.has("ac_layers"))


def _view(st: Strategy, ctx: _Context, path: str) -> dict[str, Any]:
    """File values (by canonical name) expressing ``st``; None = leave the file as it is."""
    sh, dp, cp = st.sharding, st.dp, st.cp
    v: dict[str, Any] = {"tp": st.tp, "pp": st.pp, "cp": cp, "ep": st.ep, "etp": st.etp, "b": st.micro_batch_size,
                         "seq": st.seq_length, "sp": st.sequence_parallel}
    if sh.mode not in ("none", "fsdp", "hsdp"):
        raise refuse(FORMAT, f"sharding {sh.mode!r} (HyperParallel runs FSDP2 or HSDP)", path)
    v["vpp"] = st.vpp if (st.vpp > 1 or "vpp" in ctx.had) else None
    sched = st.schedule_name if st.pp > 1 else None
    if sched is not None and (st.schedule is not None or st.vpp > 1 or ctx.schedule_text is not None):
        original = SCHEDULES.get((ctx.schedule_text or "").strip().lower())
        v["schedule"] = ctx.schedule_text if original == sched or (original == "1f1b" and sched == "interleaved") \
            else WRITE_SCHEDULES.get(sched)
    if cp > 1:
        v["cp_algo"] = (st.cp_algo, st.ulysses_degree)
    total = st.micro_batch_size * dp * st.micro_batches * st.n_acc
    v["G"] = total if ("G" in ctx.had or st.n_acc > 1) else None
    if ctx.kind == "v2":
        _view_v2(v, st, ctx, path)
    else:
        _view_auto(v, st, ctx, path)
    return v


def _view_v2(v: dict[str, Any], st: Strategy, ctx: _Context, path: str) -> None:
    sh, dp, cp = st.sharding, st.dp, st.cp
    optimizer_sharded = ctx.parallel_optimizer and sh.mode != "none"
    if st.d_rep and st.d_sh and not optimizer_sharded:
        rep, shard = st.d_rep, st.d_sh
    elif ctx.shard == 1 or sh.mode == "none":
        rep, shard = dp, 1
    elif ctx.rep == 1:
        rep, shard = 1, dp
    elif dp % ctx.rep == 0:
        rep, shard = ctx.rep, dp // ctx.rep
    else:
        raise refuse(FORMAT, f"dp {dp} with dp_replicate {ctx.rep}", path)
    v.update(dp_shard=shard, dp_replicate=rep, m=st.micro_batches)
    if sh.mode == "none":
        v["parallel_optimizer"] = False if ctx.parallel_optimizer else None
    elif optimizer_sharded or shard * cp == 1:
        size = sh.os or (st.d_sh * cp if st.d_sh else dp * cp)
        v["parallel_optimizer"] = True
        v["shard_size"] = size if (size != dp * cp or "shard_size" in ctx.had) else None
    elif sh.os not in (None, shard * cp):
        raise refuse(FORMAT, f"an FSDP shard group of {sh.os} with dp_shard {shard}", path)
    if st.cp > 1:
        algo, degree = v.pop("cp_algo")
        if algo not in WRITE_CP_ALGOS:
            raise refuse(FORMAT, f"context-parallel algorithm {algo}", path)
        if algo == "hybrid" and degree not in (None, 1):
            raise refuse(FORMAT, "a Ulysses degree inside hybrid CP (no Hyper V2 key)", path)
        v["cp_algo"] = WRITE_CP_ALGOS[algo]
    rec = st.recompute
    if rec.ranges or rec.comm_counts not in (None, False) or rec.uniform_group > 1 or rec.switches is not None:
        raise refuse(FORMAT, "recompute ranges, comm recompute, groups or switches", path)
    full, sel = rec.full_counts, rec.sel_counts
    v["ac"] = "full" if (rec.default_mode == "full" or full not in (None, False)) else \
        "selective" if (rec.default_mode == "selective" or sel not in (None, False)) else "none"
    if ctx.had_full_rec or (full is not None and not isinstance(full, bool)):
        v["full_rec"] = plain_lists(full) if full is not None else rec.default_mode == "full"
    if ctx.had_sel_rec or (sel is not None and not isinstance(sel, bool)):
        v["sel_rec"] = plain_lists(sel) if sel is not None else False
    v["slice"] = st.recompute_slice_activation
    v["offset"] = plain_lists(st.offset) if st.offset is not None else (0 if "offset" in ctx.had else None)


def _view_auto(v: dict[str, Any], st: Strategy, ctx: _Context, path: str) -> None:
    sh, dp, cp = st.sharding, st.dp, st.cp
    if sh.mode == "none":
        shard = 1
    elif sh.os is not None:
        shard = sh.os
    elif sh.mode == "hsdp" and st.d_sh:
        shard = st.d_sh * cp
    else:
        shard = dp * cp
    v["dp_shard_size"] = shard
    v["edp_shard_size"] = sh.os_e
    v["reshard"] = sh.reshard_after_forward
    v["loss_parallel"] = st.vocab_parallel_loss
    v["m"] = st.micro_batches if (st.pp > 1 or "m" in ctx.had) else None
    if st.pp == 1 and "m" not in ctx.had:
        v["G"] = st.micro_batch_size * dp * st.micro_batches * st.n_acc
    rec = st.recompute
    layers_count = ctx.had_layers and isinstance(rec.full_counts, int) and not isinstance(rec.full_counts, bool)
    if (rec.full_counts not in (None, False, True) or rec.sel_counts not in (None, False) or
            rec.comm_counts not in (None, False) or rec.uniform_group > 1 or rec.switches is not None) and \
            not layers_count:
        raise refuse(FORMAT, "per-stage recompute counts (activation_checkpoint has mode and layers)", path)
    if rec.ranges:
        if any(r.option != "full" or r.count != 1 for r in rec.ranges) or not ctx.had_layers:
            raise refuse(FORMAT, "recompute ranges other than a list of fully recomputed layers", path)
        v["ac"], v["ac_layers"] = "full", sorted(r.first for r in rec.ranges)
    elif isinstance(rec.full_counts, int) and not isinstance(rec.full_counts, bool):
        v["ac"], v["ac_layers"] = "full", rec.full_counts
    else:
        v["ac"] = "full" if rec.default_mode == "full" or rec.full_counts is True else rec.default_mode


# ------------------------------------------------------------------------------------ text splicing
def _scalar(value: Any, old: str | None) -> str:
    """YAML text for ``value``, in the style of the token it replaces (quotes, boolean spelling)."""
    if isinstance(value, bool):
        word = "true" if value else "false"
        if old and old[:1].isupper():
            return word.upper() if old.isupper() else word.capitalize()
        return word
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_scalar(x, None) for x in value) + "]"
    if isinstance(value, str):
        if old and old[:1] in "'\"":
            return old[0] + value.replace(old[0], "\\" + old[0] if old[0] == '"' else "''") + old[0]
        return value if re.fullmatch(r"[A-Za-z_][\w.\-/]*", value) and value.lower() not in (
            "true", "false", "yes", "no", "on", "off", "null") else '"' + value + '"'
    return str(value)


def _splice(text: str, keys: tuple[str, ...], value: Any, path: str) -> str:
    """``text`` with the value at ``keys`` replaced (or the key inserted under its nearest parent)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    found = yaml_node(root, keys)
    if found is not None:
        knode, vnode = found
        if vnode.start_mark.index < knode.end_mark.index:
            raise refuse(FORMAT, f"{'.'.join(keys)} (its value is a YAML alias)", path)
        if isinstance(vnode, yaml.MappingNode):
            raise refuse(FORMAT, f"{'.'.join(keys)} (a mapping, not a value)", path)
        start, end = vnode.start_mark.index, vnode.end_mark.index
        old = text[start:end]
        new = _scalar(value, old if isinstance(vnode, yaml.ScalarNode) else None)
        if start == end and text[start - 1:start] == ":":
            new = " " + new
        return text[:start] + new + text[end:]
    # insert under the deepest existing parent mapping
    depth = len(keys) - 1
    while depth > 0 and not isinstance((yaml_node(root, keys[:depth]) or (None, None))[1], yaml.MappingNode):
        depth -= 1
    parent = yaml_node(root, keys[:depth])[1] if depth else root
    rest = keys[depth:]
    if not isinstance(parent, yaml.MappingNode):
        raise refuse(FORMAT, f"{'.'.join(keys)} (no mapping to add it to)", path)
    if parent.flow_style:
        if len(rest) > 1:
            raise refuse(FORMAT, f"{'.'.join(keys)} inside a flow mapping", path)
        at = parent.end_mark.index - 1
        sep = ", " if parent.value else ""
        return text[:at] + f"{sep}{rest[0]}: {_scalar(value, None)}" + text[at:]
    if parent.value:
        indent = parent.value[0][0].start_mark.column
        last = parent.value[-1][1].end_mark
        line_end = text.find("\n", last.index if last.column else last.index - 1)
    else:
        indent, line_end = 0, len(text.rstrip("\n"))
    line_end = len(text) if line_end < 0 else line_end
    block = "".join(f"\n{' ' * (indent + 2 * i)}{key}:" for i, key in enumerate(rest))
    block += " " + _scalar(value, None)
    return text[:line_end] + block + text[line_end:]


def _set(text: str, ctx: _Context, name: str, value: Any, path: str) -> str:
    if name == "seq":
        return _splice(text, ctx.seq_keys, value, path)
    if name == "cp_algo" and ctx.kind == "auto_models":
        return _set_wrapper(text, value, path)
    keys = (V2 if ctx.kind == "v2" else AUTO).get(name)
    if keys is None:
        raise refuse(FORMAT, f"{name} in the {ctx.kind} schema", path)
    return _splice(text, keys, value, path)


def _set_wrapper(text: str, value: tuple[str, int | None], path: str) -> str:
    algo, degree = value
    data = load_yaml(text, path)
    entries = data.get("plan_overrides") if isinstance(data.get("plan_overrides"), list) else []
    for i, entry in enumerate(entries):
        wrapper = entry.get("inner_wrapper") if isinstance(entry, dict) else None
        if isinstance(wrapper, dict) and "ulysses_degree" in wrapper and algo == "hybrid" and degree:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
            seq = yaml_node(root, ("plan_overrides",))[1]
            node = yaml_node(seq.value[i], ("inner_wrapper", "ulysses_degree"))[1]
            return text[:node.start_mark.index] + str(degree) + text[node.end_mark.index:]
    raise refuse(FORMAT, f"context-parallel algorithm {algo} (edit plan_overrides[].inner_wrapper by hand)", path)


def write_yaml(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """``source.text`` with only the values defining ``strategy`` changed, spliced at their node positions
    (comments, order, quoting and indentation kept). Raises ConfigError [R-FW] for what the file cannot
    express."""
    data = load_yaml(source.text, source.path)
    kind = schema(data)
    if kind is None:
        raise ConfigError(msg("hyperparallel_write.hyperparallel-yaml"), path=source.path)
    old = original_strategy(source, parsed, read, data)
    refuse_unwritable(FORMAT, old, strategy, WRITABLE, source.path)
    ctx = _context(HyperParallelFile(source.text, source.path, data, kind))
    before, after = _view(old, ctx, source.path), _view(strategy, ctx, source.path)
    text = source.text
    for name, value in after.items():
        if value is not None and before.get(name) != value:
            text = _set(text, ctx, name, value, source.path)
    return text
