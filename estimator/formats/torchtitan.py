"""torchtitan TOML job configs (docs/model.md#frameworks): the reader (the strategy, and the model through the flavor
table). Writing a changed strategy back is ``torchtitan_write``.

Both schemas are read: the ``[parallelism]`` one (2025-06 … 2026-02, ``training.local_batch_size``) and
the 2024-12 one (degrees under ``[training]`` and ``[experimental]``, ``training.batch_size``). torchtitan's
``data_parallel_shard_degree = -1`` takes every remaining device, so the device count comes from
``--devices``: no TOML states it, and it is never guessed.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .. import flavors
from ..errors import ConfigError
from ..messages import msg
from ..parsed import Provenance
from ..warnings import Assumption
from .common import dig
from .known_keys import catalogue, check_sections
from .support import Collector, Reading, check_micro_batches, dtype_bytes, to_int
from .torchtitan_features import FEATURE_LOCATIONS, read_features
from .torchtitan_split import read_split

FORMAT = "torchtitan"

# canonical name -> places it is written, [parallelism]-schema first, then the 2024-12 schema
LOCATIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "dp_replicate": (("parallelism", "data_parallel_replicate_degree"),
                     ("training", "data_parallel_replicate_degree")),
    "dp_shard": (("parallelism", "data_parallel_shard_degree"), ("training", "data_parallel_shard_degree")),
    "tp": (("parallelism", "tensor_parallel_degree"), ("training", "tensor_parallel_degree")),
    "pp": (("parallelism", "pipeline_parallel_degree"), ("experimental", "pipeline_parallel_degree")),
    "cp": (("parallelism", "context_parallel_degree"), ("experimental", "context_parallel_degree")),
    "ep": (("parallelism", "expert_parallel_degree"),),
    "etp": (("parallelism", "expert_tensor_parallel_degree"),),
    "schedule": (("parallelism", "pipeline_parallel_schedule"), ("experimental", "pipeline_parallel_schedule")),
    "layers_per_stage": (("parallelism", "pipeline_parallel_layers_per_stage"),),
    "pp_microbatch_size": (("parallelism", "pipeline_parallel_microbatch_size"),),
    "pp_microbatches": (("parallelism", "pipeline_parallel_microbatches"),
                        ("experimental", "pipeline_parallel_microbatches")),
    "first_less": (("parallelism", "pipeline_parallel_first_stage_less_layers"),),
    "last_less": (("parallelism", "pipeline_parallel_last_stage_less_layers"),),
    "reshard": (("parallelism", "fsdp_reshard_after_forward"),),
    "disable_loss_parallel": (("parallelism", "disable_loss_parallel"), ("training", "disable_loss_parallel")),
    "local_batch_size": (("training", "local_batch_size"), ("training", "batch_size")),
    "global_batch_size": (("training", "global_batch_size"),),
    "seq_len": (("training", "seq_len"), ("training", "max_context_length")),
    # 2026 schema: the batch in tokens (per micro-batch and data-parallel rank; per step)
    "microbatch_tokens": (("training", "num_tokens_per_microbatch_per_dp_rank"),),
    "step_tokens": (("training", "num_tokens_per_train_step"),),
    "mp_param": (("training", "mixed_precision_param"), ("parallelism", "mixed_precision_param")),
    "mp_reduce": (("training", "mixed_precision_reduce"), ("parallelism", "mixed_precision_reduce")),
    "ac_mode": (("activation_checkpoint", "mode"),),
    "ac_option": (("activation_checkpoint", "selective_ac_option"),),
    "ac_budget": (("activation_checkpoint", "memory_budget"),),
    "opt_impl": (("optimizer", "implementation"),),
    "opt_name": (("optimizer", "name"),),
    "opt_in_bwd": (("optimizer", "early_step_in_backward"),),
    "split_points": (("parallelism", "pipeline_parallel_split_points"),
                     ("experimental", "pipeline_parallel_split_points")),
    "fqns_per_part": (("parallelism", "module_fqns_per_model_part"),),
    "train_dtype": (("training", "dtype"),),
    "cp_balancer": (("parallelism", "context_parallel_load_balancer"),),
    "compile": (("compile", "enable"), ("training", "compile")),
    "compile_components": (("compile", "components"),),
    "cp_rotate": (("parallelism", "context_parallel_rotate_method"),),
    "async_tp": (("parallelism", "enable_async_tensor_parallel"), ("experimental", "enable_async_tensor_parallel"),
                 ("compile", "enable_async_tensor_parallel")),
    "cpu_offload": (("training", "enable_cpu_offload"),),
}
# keys the 2024-12 schema does not have (only the first location is [parallelism])
NEW_ONLY = {"ep", "etp", "layers_per_stage", "pp_microbatch_size", "first_less", "last_less", "reshard",
            "cp_rotate", "microbatch_tokens", "step_tokens"}

# torch.distributed.pipelining schedule names (matched case-insensitively) -> (schedule, chunks per stage)
SCHEDULES: dict[str, tuple[str, int | None]] = {
    "1f1b": ("1f1b", 1), "gpipe": ("gpipe", 1), "interleaved1f1b": ("interleaved", None),
    "loopedbfs": ("looped_bfs", None), "interleavedzerobubble": ("interleaved_zb", None),
    "zbvzerobubble": ("zbv", 2), "dualpipev": ("dualpipev", 2),
}
WRITE_SCHEDULE = {"1f1b": "1F1B", "gpipe": "GPipe", "interleaved": "Interleaved1F1B", "zbv": "ZBVZeroBubble",
                  "dualpipev": "DualPipeV", "looped_bfs": "LoopedBFS", "interleaved_zb": "InterleavedZeroBubble"}
# switches whose memory or time is not priced, said when on: (section, key, what is left out)
UNPRICED_SWITCHES = (
    ("parallelism", "enable_fsdp_symm_mem", msg("torchtitan.unpriced-fsdp-symm-mem")),
    ("parallelism", "pipeline_parallel_expert_parallel_overlap", msg("torchtitan.unpriced-pp-ep-overlap")),
    ("float8", "force_recompute_fp8_weight_in_bwd", msg("torchtitan.unpriced-fp8-weight-recompute")),
    ("parallelism", "enable_compiled_autograd", msg("torchtitan.unpriced-compiled-autograd")),
)
OPTIMIZER_IMPLS = {"fused": "fused", "foreach": "foreach", "for-loop": "forloop", "forloop": "forloop",
                   "for_loop": "forloop"}


# ------------------------------------------------------------------------------------------ helpers
def header_devices(text: str) -> str | None:
    """The device count a header comment mentions (``preset for 64 A100 GPUs``), for error hints only."""
    match = re.search(r"#.*?\b(\d+)\s+((?:A100|H100|H200|B200|H20|MI\d+)\w*\s+)?(GPUs?|NPUs?|cards?|ranks?)",
                      text)
    return " ".join(x.strip() for x in match.groups() if x) if match else None


def find_key(data: dict[str, Any], name: str) -> tuple[Any, str | None]:
    """(value, 'section.key') of the first location of ``name`` present in the file."""
    for section, key in LOCATIONS[name]:
        table = data.get(section)
        if isinstance(table, dict) and key in table:
            return table[key], f"{section}.{key}"
    return None, None


def schema_of(data: dict[str, Any]) -> str:
    training = data.get("training") if isinstance(data.get("training"), dict) else {}
    if isinstance(data.get("parallelism"), dict):
        return "parallelism"
    if "experimental" in data or "batch_size" in training or "tensor_parallel_degree" in training:
        return "2024-12"
    return "parallelism"


# ------------------------------------------------------------------------------------------ detect
def detect(data: Any, path: str) -> bool:
    """A torchtitan job config: a ``[model]`` table plus torchtitan's sections (not a HyperParallel YAML)."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        return False
    if "accelerator" in data or "fsdp_config" in data or "train" in data:
        return False
    tt_sections = {"parallelism", "job", "experimental", "activation_checkpoint", "float8", "quantize"}
    model = data["model"]
    return bool(tt_sections & set(data)) or ("flavor" in model and isinstance(data.get("training"), dict)) or (
        path.lower().endswith(".toml") and "flavor" in model)


# ------------------------------------------------------------------------------------------- read
def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    """The strategy of a torchtitan TOML; the model comes from the flavor table (docs/model.md#frameworks)."""
    if not isinstance(data, dict):
        raise ConfigError(msg("torchtitan.torchtitan-config-must"), path=path)
    for section in ("model", "training", "parallelism", "experimental", "activation_checkpoint", "optimizer"):
        if section in data and not isinstance(data[section], dict):
            raise ConfigError(msg("torchtitan.must-table", section=section), path=path, key=section)
    c = Collector(path)
    c.derive("options.framework", "torchtitan", "torchtitan TOML")
    n_layers = _read_model(c, data)
    _read_strategy(c, text, data, devices, n_layers)
    _read_options(c, data)
    read_features(c, data)
    known = [keys for locations in (*LOCATIONS.values(), *FEATURE_LOCATIONS.values()) for keys in locations]
    c.warnings.extend(check_sections(data, catalogue(FORMAT), path, read=known))
    role = "both" if any(k.startswith("model.") for k in c.values) else "strategy"
    return c.reading(FORMAT, role)


def _read_model(c: Collector, data: dict[str, Any]) -> int | None:
    model = data.get("model") or {}
    name, flavor = model.get("name"), model.get("flavor")
    if name is None or flavor is None:
        c.warn("W-FLAVOR", msg("W-FLAVOR"))
        return None
    found = flavors.lookup(str(name), str(flavor))
    if found is None:
        known = flavors.flavor_names(str(name))
        listing = f"known {name} flavors: {', '.join(known)}" if known else \
            f"models with a flavor table: {', '.join(flavors.families())}"
        c.warn("W-FLAVOR", msg("W-FLAVOR.torchtitan-flavor-shipped", name=name, flavor=flavor, listing=listing))
        return None
    table = flavors.source_of(str(name))
    for key, value in found.items():
        c.values[key] = value
        c.provenance[key] = Provenance("file", path=c.path, key=f"model.flavor (flavor table {table})", raw=flavor)
    return int(found["model.num_layers"])


def _degree(c: Collector, data: dict[str, Any], name: str, default: int, allow_all: bool = False) -> int:
    raw, key = find_key(data, name)
    if key is None:
        return default
    return to_int(raw, c.path, key, allowed=(-1,) if allow_all else ())


def _read_strategy(c: Collector, text: str, data: dict[str, Any], devices: int | None, n_layers: int | None) -> None:
    path = c.path
    d_rep = _degree(c, data, "dp_replicate", 1, allow_all=True)
    d_sh = _degree(c, data, "dp_shard", -1, allow_all=True)
    tp, pp, cp = (_degree(c, data, k, 1) for k in ("tp", "pp", "cp"))
    ep = _degree(c, data, "ep", 1)
    for name, value in (("tp", tp), ("pp", pp), ("cp", cp), ("ep", ep)):
        _, key = find_key(data, name)
        if key:
            c.put(f"strategy.{name}", value, key)
    d_rep, d_sh = _resolve_dp(c, text, data, devices, d_rep, d_sh, tp * pp * cp)
    dp = d_rep * d_sh
    how = "data_parallel_replicate_degree × data_parallel_shard_degree"
    c.derive("strategy.dp", dp, how + f" = {d_rep}×{d_sh}")
    # FSDP over dp_shard × cp (HSDP with replicas); pure replication is DDP
    if d_sh * cp > 1:
        mode = "hsdp" if d_rep > 1 else "fsdp"
        if mode == "hsdp":
            c.derive("strategy.d_rep", d_rep, "data_parallel_replicate_degree")
            c.derive("strategy.d_sh", d_sh, "data_parallel_shard_degree")
    else:
        mode = "none"
    c.derive("strategy.sharding", mode, "torchtitan applies fully_shard over dp_shard × cp" if mode != "none"
             else "no dp_shard × cp group: no FSDP" + (" (DDP replicas)" if d_rep > 1 else ""))
    raw, key = find_key(data, "etp")
    if key:
        c.put("strategy.etp", to_int(raw, path, key), key)
    c.derive("strategy.sequence_parallel", tp > 1, "torchtitan's tensor parallelism always shards norms (SP)")
    if cp > 1:
        c.derive("strategy.cp_algo", "allgather", "PyTorch context parallelism's default rotate method allgather")
    raw, key = find_key(data, "disable_loss_parallel")
    if key and raw is True:
        c.put("strategy.vocab_parallel_loss", False, key, raw)
    raw, key = find_key(data, "reshard")
    if key:
        _reshard(c, str(raw), key, pp)
    _read_batch(c, data, dp, pp, n_layers)
    _read_recompute(c, data, n_layers)
    _read_widths(c, data)


def _resolve_dp(c: Collector, text: str, data: dict[str, Any], devices: int | None, d_rep: int, d_sh: int,
                others: int) -> tuple[int, int]:
    """Replace a −1 degree by the remaining devices: N/(tp·pp·cp·the other dp degree)."""
    path = c.path
    if d_rep == -1 and d_sh == -1:
        raise ConfigError(msg("torchtitan.only-one-data_parallel_replicate_degree"),
                          path=path, key=find_key(data, "dp_replicate")[1])
    if -1 not in (d_rep, d_sh):
        if devices is not None and devices != d_rep * d_sh * others:
            raise ConfigError(msg("torchtitan.devices-does-match", devices=devices, value=d_rep * d_sh, others=others,
                                  product=d_rep * d_sh * others), path=path,
                              key=find_key(data, "dp_shard")[1])
        for name, value in (("dp_replicate", d_rep), ("dp_shard", d_sh)):
            _, key = find_key(data, name)
            if key:
                c.provenance[f"strategy.{'d_rep' if name == 'dp_replicate' else 'd_sh'}"] = Provenance(
                    "file", path=path, key=key, raw=value)
        return d_rep, d_sh
    name = "dp_shard" if d_sh == -1 else "dp_replicate"
    key = find_key(data, name)[1] or LOCATIONS[name][0][0] + "." + LOCATIONS[name][0][1]
    other = d_rep if d_sh == -1 else d_sh
    if devices is None:
        hint = header_devices(text)
        raise ConfigError(msg("torchtitan.minus-one-devices.hint", key=key, hint=hint) if hint else
                          msg("torchtitan.minus-one-devices", key=key), path=path, key=key)
    if devices < 1 or devices % (others * other):
        raise ConfigError(msg("torchtitan.devices-multiple-tp", devices=devices, value=others * other, key=key),
                          path=path, key=key)
    rest = devices // (others * other)
    c.assumptions.append(Assumption("strategy.dp", rest * other, msg("torchtitan.devices-tp-pp", key=key,
                                                                     devices=devices, other=other, rest=rest)))
    return (d_rep, rest) if d_sh == -1 else (rest, d_sh)


def _reshard(c: Collector, raw: str, key: str, pp: int) -> None:
    policy = raw.strip().lower()
    if policy == "default":
        return  # torchtitan: reshard unless PP; the head unit stays gathered (resolve's defaults)
    if policy not in ("always", "never"):
        raise ConfigError(msg("torchtitan.fsdp_reshard_after_forward-must-default", raw=raw),
                          path=c.path, key=key)
    c.put("strategy.reshard_after_forward", policy == "always", key, raw)
    c.put("strategy.reshard_head_unit", policy == "always", key, raw)


def _tokens_as_sequences(c: Collector, data: dict[str, Any], name: str) -> tuple[int | None, str | None]:
    """A batch stated in tokens (2026 schema) as a count of sequences of seq_len / max_context_length."""
    raw, key = find_key(data, name)
    if key is None:
        return None, None
    tokens = to_int(raw, c.path, key)
    seq_raw, seq_key = find_key(data, "seq_len")
    if seq_key is None:
        raise ConfigError(msg("torchtitan.counts-tokens-give", key=key),
                          path=c.path, key=key)
    seq = to_int(seq_raw, c.path, seq_key)
    if tokens % seq:
        raise ConfigError(msg("torchtitan.whole-number-token", key=key, tokens=tokens, seq=seq, seq_key=seq_key),
                          path=c.path, key=key)
    return tokens // seq, f"{key} / {seq_key}"


def _read_batch(c: Collector, data: dict[str, Any], dp: int, pp: int, n_layers: int | None) -> None:
    path = c.path
    raw, lbs_key = find_key(data, "local_batch_size")
    tokens_lbs, tokens_key = _tokens_as_sequences(c, data, "microbatch_tokens")
    if lbs_key is None and tokens_lbs is not None:
        lbs, lbs_key = tokens_lbs, tokens_key
    elif lbs_key is None:
        lbs = 8
        c.assumptions.append(Assumption("training.local_batch_size", 8, msg("torchtitan.torchtitan-default")))
    else:
        lbs = to_int(raw, path, lbs_key)
    raw, g_key = find_key(data, "global_batch_size")
    gbs = to_int(raw, path, g_key, allowed=(-1, 0)) if g_key else -1
    if g_key is None:
        step_sequences, step_key = _tokens_as_sequences(c, data, "step_tokens")
        gbs, g_key = (step_sequences, step_key) if step_sequences is not None else (gbs, g_key)
    steps = 1
    if gbs > 0:
        if gbs % (lbs * dp):
            raise ConfigError(msg("torchtitan.global_batch_size-multiple-local_batch_size", gbs=gbs, lbs=lbs, dp=dp),
                              path=path, key=g_key)
        steps = check_micro_batches(gbs // (lbs * dp), path, g_key)
    raw, seq_key = find_key(data, "seq_len")
    if seq_key:
        c.put("strategy.seq_length", to_int(raw, path, seq_key), seq_key)
    else:
        c.assume("strategy.seq_length", 2048, msg("torchtitan.torchtitan-default-training"))
    if pp == 1:
        c.put("strategy.micro_batch_size", lbs, lbs_key or "training.local_batch_size (default)", lbs)
        c.derive("strategy.micro_batches", steps, "gradient accumulation steps = global_batch_size/"
                                                  f"(local_batch_size·dp) = {steps}" if gbs > 0 else
                 "no gradient accumulation")
        return
    raw, n_key = find_key(data, "pp_microbatches")
    if n_key:  # older files state the micro-batch count
        m = to_int(raw, path, n_key)
        if lbs % m:
            raise ConfigError(msg("torchtitan.local-batch-does", lbs=lbs, m=m), path=path, key=n_key)
        b = lbs // m
        c.derive("strategy.micro_batch_size", b, f"local batch / {n_key}")
    elif schema_of(data) != "parallelism":
        # the 2024-12 schema: experimental.pipeline_parallel_microbatches defaults to the pipeline degree
        m = pp
        if lbs % m:
            raise ConfigError(msg("torchtitan.batch_size-does-split", lbs=lbs, m=m),
                              path=path, key=lbs_key or "training.batch_size")
        b = lbs // m
        c.assume("strategy.micro_batches", m, msg("torchtitan.torchtitan-default-pipeline_parallel_microbatches"))
        c.derive("strategy.micro_batch_size", b, f"batch size {lbs} / {m} micro-batches")
    else:
        raw, b_key = find_key(data, "pp_microbatch_size")
        b = to_int(raw, path, b_key) if b_key else 1
        if lbs % b:
            raise ConfigError(msg("torchtitan.local_batch_size-multiple-pipeline_parallel_microbatch_size", lbs=lbs,
                                  b=b),
                              path=path, key=b_key or lbs_key)
        if b_key:
            c.put("strategy.micro_batch_size", b, b_key)
        else:
            c.assume("strategy.micro_batch_size", 1,
                     msg("torchtitan.torchtitan-default-pipeline_parallel_microbatch_size"))
        m = check_micro_batches(lbs // b, path, lbs_key or "training.local_batch_size")
    if "strategy.micro_batches" not in c.values:
        c.derive("strategy.micro_batches", m, f"local batch {lbs} / micro-batch size {b}")
    c.derive("strategy.n_acc", steps, "gradient accumulation steps")
    if m < pp:
        c.values["options.allow_underfilled_pipeline"] = True
        c.warn("W-PP-UNDERFILLED", msg("W-PP-UNDERFILLED", m=m, pp=pp))
    _read_schedule(c, data, pp, n_layers, m)


def _read_schedule(c: Collector, data: dict[str, Any], pp: int, n_layers: int | None, m: int) -> None:
    path = c.path
    raw, key = find_key(data, "schedule")
    text = str(raw).strip() if key else "1F1B"
    if not key:
        c.assumptions.append(Assumption("strategy.schedule", "1f1b", msg("torchtitan.torchtitan-default-f1b")))
    if dig(data, "parallelism", "pipeline_parallel_schedule_csv"):
        c.warn("W-UNMODELLED", msg("W-UNMODELLED.csv-pipeline-schedule"))
    entry = SCHEDULES.get(schedule_key(text))
    if entry is None:
        raise ConfigError(msg("torchtitan.unknown-pipeline-schedule", text=text,
                              values=', '.join(WRITE_SCHEDULE.values())),
                          path=path, key=key)
    schedule, vp = entry
    raw, lps_key = find_key(data, "layers_per_stage")
    if lps_key:
        lps = to_int(raw, path, lps_key)
        if n_layers is None:
            c.warn("W-UNMODELLED", msg("W-UNMODELLED.pipeline_parallel_layers_per_stage-needs-layer"))
        else:
            weights = stage_weights(data, path)
            stages = math.ceil((n_layers + weights) / lps)
            if stages % pp:
                raise ConfigError(msg("torchtitan.layers-embedding-output", n_layers=n_layers, weights=weights, lps=lps,
                                      stages=stages, pp=pp),
                                  path=path, key=lps_key)
            per_rank = stages // pp
            if vp is not None and per_rank != vp:
                raise ConfigError(msg("torchtitan.schedule-runs-stage", text=text, vp=vp, lps=lps, per_rank=per_rank),
                                  path=path,
                                  key=lps_key)
            vp = per_rank
    split = read_split(c, data, n_layers, pp, vp, schedule)
    if split is not None:
        vp = split
    if key and schedule != "1f1b":  # 1F1B is what an unset schedule means
        c.put("strategy.schedule", schedule, key, text)
    if schedule in ("interleaved", "interleaved_zb"):
        # torch.distributed.pipelining runs rounds of m / max(1, m // pp) micro-batches through the chunks
        group = m // max(1, m // pp)
        if m % max(1, m // pp):
            raise ConfigError(msg("torchtitan.needs-micro-batches", text=text, m=m, pp=pp, max=max(1, m // pp)),
                              path=path, key=key)
        if group != pp:
            c.derive("strategy.vpp_group", group, f"PyTorch's {text}: {m} micro-batches in rounds of "
                                                  f"m / max(1, m // pp) = {group}")
    c.derive("strategy.vpp", vp or 2, "torchtitan looped schedules: 2 stages per rank" if vp is None
             else "stages per rank")
    if split is not None:
        return  # the split states the positions (the embedding and the output count one each)
    c.derive("strategy.emb_out_in_offset", stage_weights(data, path) > 0,
             "torchtitan splits layers counting the embedding and output as layers "
             "(pipeline_parallel_first/last_stage_less_layers)")


def schedule_key(text: str) -> str:
    key = text.strip().lower()
    return key[len("schedule"):] if key.startswith("schedule") else key


def stage_weights(data: dict[str, Any], path: str | None = None) -> int:
    """Layer positions the embedding and output count for (torchtitan's first/last_stage_less_layers, 1 each
    by default; the 2024-12 split counted layers only)."""
    if schema_of(data) != "parallelism":
        return 0
    total = 0
    for name in ("first_less", "last_less"):
        raw, key = find_key(data, name)
        total += 1 if key is None else to_int(raw, path or "", key, minimum=0)
    return total


def _read_recompute(c: Collector, data: dict[str, Any], n_layers: int | None) -> None:
    path = c.path
    raw, key = find_key(data, "ac_mode")
    mode = str(raw).strip().lower() if key else "selective"
    option, opt_key = find_key(data, "ac_option")
    option = "op" if opt_key is None else str(option).strip().lower()
    if option == "op":  # the per-op policy prices selective layers (torchtitan_op rule)
        c.put("strategy.selective_rule", "torchtitan_op", opt_key or "activation_checkpoint.selective_ac_option "
              "(default)", option)
    if not key:
        c.assume("strategy.recompute", "selective", msg("torchtitan.torchtitan-default-activation_checkpoint"))
    if mode == "none":
        c.put("strategy.recompute", "none", key, raw)
    elif mode == "full":
        c.put("strategy.recompute", "full", key, raw)
    elif mode == "memory_budget":
        budget, budget_key = find_key(data, "ac_budget")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))):
            raise ConfigError(msg("torchtitan.memory_budget-must-number", budget=budget), path=path,
                              key=budget_key)
        full = budget is not None and budget <= 0
        c.put("strategy.recompute", "full" if full else "none", key, raw)
        c.warn("W-UNMODELLED", msg("W-UNMODELLED.memory-budget.full", budget=budget) if full else
               msg("W-UNMODELLED.memory-budget", budget=budget))
    elif mode == "selective":
        if option == "op":
            c.put("strategy.recompute", "selective", key, raw)
        else:
            every = to_int(option, path, opt_key or "activation_checkpoint.selective_ac_option", minimum=1)
            c.put("strategy.recompute", "none", key, raw)
            if n_layers is None:
                c.warn("W-UNMODELLED", msg("W-UNMODELLED.selective_ac_option-needs-layer", every=every))
                return
            ranges = [{"first": i, "count": 1, "option": "full"} for i in range(n_layers) if (i + 1) % every == 0]
            c.put("strategy.recompute_ranges", ranges, opt_key, option)
    else:
        raise ConfigError(msg("torchtitan.activation_checkpoint-mode-must", raw=raw),
                          path=path, key=key)


def _read_widths(c: Collector, data: dict[str, Any]) -> None:
    raw, key = find_key(data, "train_dtype")
    if key:
        width = dtype_bytes(raw, c.path, key)
        if width != 4:
            # the model is built under set_default_dtype(training.dtype): its weights, their gradients and AdamW's
            # states (zeros_like the weights) take that width, with no fp32 copy
            for field in ("strategy.param_bytes", "strategy.grad_bytes", "strategy.optimizer_state_bytes"):
                c.put(field, width, key, raw)
    raw, key = find_key(data, "mp_param")
    if key:
        c.put("strategy.compute_bytes", dtype_bytes(raw, c.path, key), key, raw)
    raw, key = find_key(data, "mp_reduce")
    if key:
        c.put("strategy.reduce_bytes", dtype_bytes(raw, c.path, key), key, raw)


def _read_options(c: Collector, data: dict[str, Any]) -> None:
    raw, key = find_key(data, "opt_impl")
    if key:
        impl = str(raw).strip().lower()
        if impl == "fused_opt_states_bf16":
            c.put("options.optimizer_impl", "fused", key, raw)
            c.put("strategy.optimizer_state_bytes", 2, key, raw)
        elif impl in OPTIMIZER_IMPLS:
            c.put("options.optimizer_impl", OPTIMIZER_IMPLS[impl], key, raw)
        else:
            raise ConfigError(msg("torchtitan.unknown-optimizer-implementation", raw=raw),
                              path=c.path, key=key)
    raw, key = find_key(data, "opt_name")
    if key and str(raw).lower() not in ("adamw", "adam"):
        c.warn("W-UNMODELLED", msg("W-UNMODELLED.optimizer-priced-adamw-2", raw=raw))
    raw, key = find_key(data, "opt_in_bwd")
    if key and raw is True:
        # torchtitan's build_optimizers refuses the optimizer in the backward with PP or EP (NotImplementedError)
        refused = [f"{name} {c.values[f'strategy.{name}']}" for name in ("pp", "ep")
                   if c.values.get(f"strategy.{name}", 1) > 1]
        if refused:
            raise ConfigError(msg("torchtitan.early-step-refused", degrees=", ".join(refused)), path=c.path, key=key)
        c.warn("W-UNMODELLED", msg("W-UNMODELLED.early-step-in-backward"))
    raw, key = find_key(data, "cp_balancer")
    if key:
        balancer = str(raw).strip().lower()
        if balancer in ("headtail", "ptrr", "", "none"):
            c.put("strategy.cp_load_balance", balancer in ("headtail", "ptrr"), key, raw)
        else:
            c.warn("W-NOT-PRICED", msg("W-NOT-PRICED.cp-balancer", raw=raw))
    for section, name, text in UNPRICED_SWITCHES:
        if dig(data, section, name) is True:
            c.warn("W-UNMODELLED", msg("W-UNMODELLED.torchtitan-switch", key=f"{section}.{name}", effect=text))
    raw, key = find_key(data, "compile")
    if key and raw is True:
        components, c_key = find_key(data, "compile_components")
        if c_key is None:  # [compile] enable and the [parallelism] schema's training.compile compile model and
            # loss (build_cross_entropy_loss compiled the loss from 2025-04 on); 2024-12's training.compile the model
            parts = ("model",) if schema_of(data) == "2024-12" else ("model", "loss")
            c.put("strategy.compile", parts, key, raw)
        elif not isinstance(components, list) or any(str(x) not in ("model", "loss") for x in components):
            raise ConfigError(msg("torchtitan.compile-components-must", components=components), path=c.path,
                              key=c_key)
        else:
            c.put("strategy.compile", tuple(str(x) for x in components), c_key, components)

