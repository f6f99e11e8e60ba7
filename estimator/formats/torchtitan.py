"""torchtitan TOML job configs (spec §11.3): read a strategy (and the model through the flavor table),
write a changed strategy back with comments, order and quoting kept.

Both schemas are read: the ``[parallelism]`` one (2025-06 … 2026-02, ``training.local_batch_size``) and
the 2024-12 one (degrees under ``[training]`` and ``[experimental]``, ``training.batch_size``). torchtitan's
``data_parallel_shard_degree = -1`` takes every remaining device, so the device count comes from
``--devices``: no TOML states it, and it is never guessed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from .. import flavors
from ..errors import ConfigError
from ..parsed import ParsedConfig, Provenance, SourceFile
from ..strategy import Strategy
from ..warnings import Assumption, EstimateWarning
from . import Reading
from .common import dig, load_toml

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
    "seq_len": (("training", "seq_len"),),
    "mp_param": (("training", "mixed_precision_param"), ("parallelism", "mixed_precision_param")),
    "mp_reduce": (("training", "mixed_precision_reduce"), ("parallelism", "mixed_precision_reduce")),
    "ac_mode": (("activation_checkpoint", "mode"),),
    "ac_option": (("activation_checkpoint", "selective_ac_option"),),
    "ac_budget": (("activation_checkpoint", "memory_budget"),),
    "opt_impl": (("optimizer", "implementation"),),
    "opt_name": (("optimizer", "name"),),
    "compile": (("compile", "enable"), ("training", "compile")),
    "compile_components": (("compile", "components"),),
}
# keys the 2024-12 schema does not have (only the first location is [parallelism])
NEW_ONLY = {"ep", "etp", "layers_per_stage", "pp_microbatch_size", "first_less", "last_less", "reshard"}

# torch.distributed.pipelining schedule names (matched case-insensitively) -> (schedule, chunks per stage)
SCHEDULES: dict[str, tuple[str, int | None]] = {
    "1f1b": ("1f1b", 1), "gpipe": ("gpipe", 1), "interleaved1f1b": ("interleaved", None),
    "loopedbfs": ("gpipe", 1), "interleavedzerobubble": ("interleaved", None),
    "zbvzerobubble": ("zbv", 2), "dualpipev": ("dualpipev", 2),
}
WRITE_SCHEDULE = {"1f1b": "1F1B", "gpipe": "GPipe", "interleaved": "Interleaved1F1B", "zbv": "ZBVZeroBubble",
                  "dualpipev": "DualPipeV"}
DTYPE_BYTES = {"float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2,
               "half": 2}
OPTIMIZER_IMPLS = {"fused": "fused", "foreach": "foreach", "for-loop": "forloop", "forloop": "forloop",
                   "for_loop": "forloop"}


# ------------------------------------------------------------------------------------------ helpers
@dataclass
class Collector:
    """Flat canonical values with their provenance, warnings and assumptions, for one file."""

    path: str
    values: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Provenance] = field(default_factory=dict)
    warnings: list[EstimateWarning] = field(default_factory=list)
    assumptions: list[Assumption] = field(default_factory=list)

    def put(self, name: str, value: Any, key: str, raw: Any = None) -> None:
        """A value read from the file at ``key``."""
        self.values[name] = value
        self.provenance[name] = Provenance("file", path=self.path, key=key, raw=value if raw is None else raw)

    def derive(self, name: str, value: Any, how: str) -> None:
        self.values[name] = value
        self.provenance[name] = Provenance("derived", path=self.path, key=how)

    def assume(self, name: str, value: Any, source: str) -> None:
        """A value the file leaves to the framework's default."""
        self.values[name] = value
        self.provenance[name] = Provenance("default", path=self.path, key=source)
        self.assumptions.append(Assumption(name, value, source))

    def warn(self, code: str, text: str) -> None:
        self.warnings.append(EstimateWarning(code, text))

    def reading(self, fmt: str, role: str) -> Reading:
        return Reading(fmt, role, self.values, self.provenance, self.warnings, self.assumptions)


MAX_VALUE = 2 ** 40          # no degree, batch or length in a real config comes near this
MAX_MICRO_BATCHES = 1 << 16   # schedules are replayed micro-batch by micro-batch


def to_int(value: Any, path: str, key: str, minimum: int = 1, allowed: tuple[int, ...] = (),
           maximum: int = MAX_VALUE) -> int:
    """An integer config value in [``minimum``, ``maximum``] (or one of ``allowed``), else a ConfigError
    naming the key."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"expected an integer, got {value!r}", path=path, key=key)
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except (ValueError, OverflowError):
        number = None
    if number is None:
        raise ConfigError(f"expected an integer, got {value!r}", path=path, key=key)
    if number < minimum and number not in allowed:
        extra = f" (or {', '.join(map(str, allowed))})" if allowed else ""
        raise ConfigError(f"must be an integer ≥ {minimum}{extra}; got {number}", path=path, key=key)
    if number > maximum:
        raise ConfigError(f"{number} is implausibly large (limit {maximum})", path=path, key=key)
    return number


def check_micro_batches(m: int, path: str, key: str) -> int:
    """Micro-batches per pipeline flush, bounded (the schedule replay is linear in them)."""
    if m > MAX_MICRO_BATCHES:
        raise ConfigError(f"{m} micro-batches per step is implausibly many (limit {MAX_MICRO_BATCHES}); check the "
                          "batch sizes", path=path, key=key)
    return m


def dtype_bytes(value: Any, path: str, key: str) -> int:
    name = str(value).strip().lower().replace("torch.", "")
    if name in DTYPE_BYTES:
        return DTYPE_BYTES[name]
    if "fp8" in name or "float8" in name:
        return 2
    raise ConfigError(f"unknown dtype {value!r}; expected one of float32, bfloat16, float16", path=path, key=key)


def header_devices(text: str) -> str | None:
    """The device count a header comment mentions (``preset for 64 A100 GPUs``), for error hints only."""
    match = re.search(r"#.*?\b(\d+)\s+((?:A100|H100|H200|B200|H20|MI\d+)\w*\s+)?(GPUs?|NPUs?|cards?|ranks?)",
                      text)
    return " ".join(x.strip() for x in match.groups() if x) if match else None


def _find(data: dict[str, Any], name: str) -> tuple[Any, str | None]:
    """(value, 'section.key') of the first location of ``name`` present in the file."""
    for section, key in LOCATIONS[name]:
        table = data.get(section)
        if isinstance(table, dict) and key in table:
            return table[key], f"{section}.{key}"
    return None, None


def _schema(data: dict[str, Any]) -> str:
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
    """The strategy of a torchtitan TOML; the model comes from the flavor table (spec §11.3)."""
    if not isinstance(data, dict):
        raise ConfigError("a torchtitan config must be a TOML table", path=path)
    for section in ("model", "training", "parallelism", "experimental", "activation_checkpoint", "optimizer"):
        if section in data and not isinstance(data[section], dict):
            raise ConfigError(f"[{section}] must be a table", path=path, key=section)
    c = Collector(path)
    c.derive("options.framework", "torchtitan", "torchtitan TOML")
    n_layers = _read_model(c, data)
    _read_strategy(c, text, data, devices, n_layers)
    _read_options(c, data)
    role = "both" if any(k.startswith("model.") for k in c.values) else "strategy"
    return c.reading(FORMAT, role)


def _read_model(c: Collector, data: dict[str, Any]) -> int | None:
    model = data.get("model") or {}
    name, flavor = model.get("name"), model.get("flavor")
    converters = model.get("converters") or []
    if not isinstance(converters, list):
        converters = [converters]
    float8 = [str(x) for x in converters if "float8" in str(x) or str(x).lower().startswith("mx")]
    if float8 or dig(data, "float8", "enable_float8_linear") is True:
        c.warn("W-FP8", f"float8 training ({', '.join(float8) or 'float8.enable_float8_linear'}) is parsed but "
                        "priced as bf16 (spec §1.1)")
    if name is None or flavor is None:
        c.warn("W-FLAVOR", "the file names no [model] name/flavor; give the model with --model config.json")
        return None
    found = flavors.lookup(str(name), str(flavor))
    if found is None:
        known = flavors.flavor_names(str(name))
        listing = f"known {name} flavors: {', '.join(known)}" if known else \
            f"models with a flavor table: {', '.join(flavors.families())}"
        c.warn("W-FLAVOR", f"torchtitan flavor {name!r}/{flavor!r} is not in the shipped table ({listing}); the "
                           "model must come from --model config.json")
        return None
    table = flavors.source_of(str(name))
    for key, value in found.items():
        c.values[key] = value
        c.provenance[key] = Provenance("file", path=c.path, key=f"model.flavor (flavor table {table})", raw=flavor)
    return int(found["model.num_layers"])


def _degree(c: Collector, data: dict[str, Any], name: str, default: int, allow_all: bool = False) -> int:
    raw, key = _find(data, name)
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
        _, key = _find(data, name)
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
    raw, key = _find(data, "etp")
    if key:
        c.put("strategy.etp", to_int(raw, path, key), key)
    c.derive("strategy.sequence_parallel", tp > 1, "torchtitan's tensor parallelism always shards norms (SP)")
    if cp > 1:
        c.derive("strategy.cp_algo", "ring", "torchtitan context parallelism is ring attention")
    raw, key = _find(data, "disable_loss_parallel")
    if key and raw is True:
        c.put("strategy.vocab_parallel_loss", False, key, raw)
    raw, key = _find(data, "reshard")
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
        raise ConfigError("only one of data_parallel_replicate_degree and data_parallel_shard_degree may be -1",
                          path=path, key=_find(data, "dp_replicate")[1])
    if -1 not in (d_rep, d_sh):
        if devices is not None and devices != d_rep * d_sh * others:
            raise ConfigError(f"--devices {devices} does not match the degrees the file states: dp "
                              f"{d_rep * d_sh} × tp·pp·cp {others} = {d_rep * d_sh * others} devices", path=path,
                              key=_find(data, "dp_shard")[1])
        for name, value in (("dp_replicate", d_rep), ("dp_shard", d_sh)):
            _, key = _find(data, name)
            if key:
                c.provenance[f"strategy.{'d_rep' if name == 'dp_replicate' else 'd_sh'}"] = Provenance(
                    "file", path=path, key=key, raw=value)
        return d_rep, d_sh
    name = "dp_shard" if d_sh == -1 else "dp_replicate"
    key = _find(data, name)[1] or LOCATIONS[name][0][0] + "." + LOCATIONS[name][0][1]
    other = d_rep if d_sh == -1 else d_sh
    if devices is None:
        hint = header_devices(text)
        raise ConfigError(f"{key} = -1 takes every remaining device and a torchtitan TOML does not state the "
                          f"device count: pass --devices N (the world size you launch with"
                          + (f"; the file's header mentions {hint}" if hint else "") + ")", path=path, key=key)
    if devices < 1 or devices % (others * other):
        raise ConfigError(f"--devices {devices} is not a multiple of tp·pp·cp × the other dp degree = "
                          f"{others * other}, so {key} = -1 cannot fill it", path=path, key=key)
    rest = devices // (others * other)
    c.assumptions.append(Assumption("strategy.dp", rest * other, f"{key} = -1: --devices {devices}/"
                                                                 f"(tp·pp·cp·{other}) = {rest}"))
    return (d_rep, rest) if d_sh == -1 else (rest, d_sh)


def _reshard(c: Collector, raw: str, key: str, pp: int) -> None:
    policy = raw.strip().lower()
    if policy == "default":
        return  # torchtitan: reshard unless PP; the head unit stays gathered (resolve's defaults)
    if policy not in ("always", "never"):
        raise ConfigError(f"fsdp_reshard_after_forward must be default, always or never; got {raw!r}",
                          path=c.path, key=key)
    c.put("strategy.reshard_after_forward", policy == "always", key, raw)
    c.put("strategy.reshard_head_unit", policy == "always", key, raw)


def _read_batch(c: Collector, data: dict[str, Any], dp: int, pp: int, n_layers: int | None) -> None:
    path = c.path
    raw, lbs_key = _find(data, "local_batch_size")
    if lbs_key is None:
        lbs = 8
        c.assumptions.append(Assumption("training.local_batch_size", 8, "torchtitan default"))
    else:
        lbs = to_int(raw, path, lbs_key)
    raw, g_key = _find(data, "global_batch_size")
    gbs = to_int(raw, path, g_key, allowed=(-1, 0)) if g_key else -1
    steps = 1
    if gbs > 0:
        if gbs % (lbs * dp):
            raise ConfigError(f"global_batch_size {gbs} is not a multiple of local_batch_size {lbs} × dp {dp}; "
                              "torchtitan accumulates whole local batches", path=path, key=g_key)
        steps = check_micro_batches(gbs // (lbs * dp), path, g_key)
    raw, seq_key = _find(data, "seq_len")
    if seq_key:
        c.put("strategy.seq_length", to_int(raw, path, seq_key), seq_key)
    else:
        c.assume("strategy.seq_length", 2048, "torchtitan default training.seq_len")
    if pp == 1:
        c.put("strategy.micro_batch_size", lbs, lbs_key or "training.local_batch_size (default)", lbs)
        c.derive("strategy.micro_batches", steps, "gradient accumulation steps = global_batch_size/"
                                                  f"(local_batch_size·dp) = {steps}" if gbs > 0 else
                 "no gradient accumulation")
        return
    raw, n_key = _find(data, "pp_microbatches")
    if n_key:  # older files state the micro-batch count
        m = to_int(raw, path, n_key)
        if lbs % m:
            raise ConfigError(f"local batch {lbs} does not split into {m} micro-batches", path=path, key=n_key)
        b = lbs // m
        c.derive("strategy.micro_batch_size", b, f"local batch / {n_key}")
    else:
        raw, b_key = _find(data, "pp_microbatch_size")
        b = to_int(raw, path, b_key) if b_key else 1
        if lbs % b:
            raise ConfigError(f"local_batch_size {lbs} is not a multiple of pipeline_parallel_microbatch_size {b}",
                              path=path, key=b_key or lbs_key)
        if b_key:
            c.put("strategy.micro_batch_size", b, b_key)
        else:
            c.assume("strategy.micro_batch_size", 1, "torchtitan default pipeline_parallel_microbatch_size")
        m = check_micro_batches(lbs // b, path, lbs_key or "training.local_batch_size")
    c.derive("strategy.micro_batches", m, f"local batch {lbs} / micro-batch size {b}")
    c.derive("strategy.n_acc", steps, "gradient accumulation steps")
    if m < pp:
        c.values["options.allow_underfilled_pipeline"] = True
        c.warn("W-PP-UNDERFILLED", f"{m} micro-batch(es) for {pp} pipeline stages: torchtitan runs it (with a "
                                   "bubble warning); priced as such")
    _read_schedule(c, data, pp, n_layers)


def _read_schedule(c: Collector, data: dict[str, Any], pp: int, n_layers: int | None) -> None:
    path = c.path
    raw, key = _find(data, "schedule")
    text = str(raw).strip() if key else "1F1B"
    if not key:
        c.assumptions.append(Assumption("strategy.schedule", "1f1b", "torchtitan default 1F1B"))
    if dig(data, "parallelism", "pipeline_parallel_schedule_csv"):
        c.warn("W-UNMODELLED", "a CSV pipeline schedule is not modelled; priced as the named schedule")
    entry = SCHEDULES.get(_schedule_key(text))
    if entry is None:
        raise ConfigError(f"unknown pipeline schedule {text!r}; expected one of "
                          f"{', '.join(WRITE_SCHEDULE.values())}, LoopedBFS, InterleavedZeroBubble",
                          path=path, key=key)
    schedule, vp = entry
    if _schedule_key(text) in ("loopedbfs", "interleavedzerobubble"):
        c.warn("W-UNMODELLED", f"{text} is priced as {schedule} (closest modelled schedule)")
    raw, lps_key = _find(data, "layers_per_stage")
    if lps_key:
        lps = to_int(raw, path, lps_key)
        if n_layers is None:
            c.warn("W-UNMODELLED", "pipeline_parallel_layers_per_stage needs the layer count; assumed 2 chunks")
        else:
            weights = _stage_weights(data, path)
            stages = math.ceil((n_layers + weights) / lps)
            if stages % pp:
                raise ConfigError(f"{n_layers} layers (+{weights} for embedding/output) at {lps} per stage make "
                                  f"{stages} stages, not a multiple of pipeline_parallel_degree {pp}",
                                  path=path, key=lps_key)
            per_rank = stages // pp
            if vp is not None and per_rank != vp:
                raise ConfigError(f"schedule {text} runs {vp} stage(s) per rank but "
                                  f"pipeline_parallel_layers_per_stage {lps} gives {per_rank}", path=path,
                                  key=lps_key)
            vp = per_rank
    if key and schedule != "1f1b":  # 1F1B is what an unset schedule means
        c.put("strategy.schedule", schedule, key, text)
    c.derive("strategy.vpp", vp or 2, "torchtitan looped schedules: 2 stages per rank" if vp is None
             else "stages per rank")
    c.derive("strategy.emb_out_in_offset", _stage_weights(data, path) > 0,
             "torchtitan splits layers counting the embedding and output as layers "
             "(pipeline_parallel_first/last_stage_less_layers)")


def _schedule_key(text: str) -> str:
    key = text.strip().lower()
    return key[len("schedule"):] if key.startswith("schedule") else key


def _stage_weights(data: dict[str, Any], path: str | None = None) -> int:
    """Layer positions the embedding and output count for (torchtitan's first/last_stage_less_layers, 1 each
    by default; the 2024-12 split counted layers only)."""
    if _schema(data) != "parallelism":
        return 0
    total = 0
    for name in ("first_less", "last_less"):
        raw, key = _find(data, name)
        total += 1 if key is None else to_int(raw, path or "", key, minimum=0)
    return total


def _read_recompute(c: Collector, data: dict[str, Any], n_layers: int | None) -> None:
    path = c.path
    raw, key = _find(data, "ac_mode")
    mode = str(raw).strip().lower() if key else "selective"
    option, opt_key = _find(data, "ac_option")
    option = "op" if opt_key is None else str(option).strip().lower()
    if option == "op":  # the per-op policy prices selective layers (torchtitan_op rule)
        c.put("strategy.selective_rule", "torchtitan_op", opt_key or "activation_checkpoint.selective_ac_option "
              "(default)", option)
    if not key:
        c.assume("strategy.recompute", "selective", "torchtitan default activation_checkpoint.mode")
    if mode == "none":
        c.put("strategy.recompute", "none", key, raw)
    elif mode == "full":
        c.put("strategy.recompute", "full", key, raw)
    elif mode == "memory_budget":
        budget, budget_key = _find(data, "ac_budget")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))):
            raise ConfigError(f"memory_budget must be a number between 0 and 1; got {budget!r}", path=path,
                              key=budget_key)
        full = budget is not None and budget <= 0
        c.put("strategy.recompute", "full" if full else "none", key, raw)
        c.warn("W-UNMODELLED", f"memory_budget activation checkpointing (budget {budget}) is not modelled; "
                               + ("priced as full recompute" if full else "priced as no recompute (upper bound)"))
    elif mode == "selective":
        if option == "op":
            c.put("strategy.recompute", "selective", key, raw)
        else:
            every = to_int(option, path, opt_key or "activation_checkpoint.selective_ac_option", minimum=1)
            c.put("strategy.recompute", "none", key, raw)
            if n_layers is None:
                c.warn("W-UNMODELLED", f"selective_ac_option {every} needs the layer count; priced as none")
                return
            ranges = [{"first": i, "count": 1, "option": "full"} for i in range(n_layers) if (i + 1) % every == 0]
            c.put("strategy.recompute_ranges", ranges, opt_key, option)
    else:
        raise ConfigError(f"activation_checkpoint.mode must be none, selective, full or memory_budget; got {raw!r}",
                          path=path, key=key)


def _read_widths(c: Collector, data: dict[str, Any]) -> None:
    raw, key = _find(data, "mp_param")
    if key:
        c.put("strategy.compute_bytes", dtype_bytes(raw, c.path, key), key, raw)
    raw, key = _find(data, "mp_reduce")
    if key:
        c.put("strategy.reduce_bytes", dtype_bytes(raw, c.path, key), key, raw)


def _read_options(c: Collector, data: dict[str, Any]) -> None:
    raw, key = _find(data, "opt_impl")
    if key:
        impl = str(raw).strip().lower()
        if impl == "fused_opt_states_bf16":
            c.put("options.optimizer_impl", "fused", key, raw)
            c.put("strategy.optimizer_state_bytes", 2, key, raw)
        elif impl in OPTIMIZER_IMPLS:
            c.put("options.optimizer_impl", OPTIMIZER_IMPLS[impl], key, raw)
        else:
            raise ConfigError(f"unknown optimizer implementation {raw!r}; expected fused, foreach or for-loop",
                              path=c.path, key=key)
    raw, key = _find(data, "opt_name")
    if key and str(raw).lower() not in ("adamw", "adam"):
        c.warn("W-UNMODELLED", f"optimizer {raw!r} is priced as AdamW (two fp32 states)")
    raw, key = _find(data, "compile")
    components = _find(data, "compile_components")[0]
    if key and raw is True and (not isinstance(components, list) or "model" in components):
        c.warn("W-UNMODELLED", "torch.compile of the model may fuse ops and save less; priced as eager PyTorch")


# ------------------------------------------------------------------------------------------- write
# Strategy fields this writer expresses (other changed fields are refused, R-FW)
WRITABLE = {"seq_length", "dp", "tp", "pp", "vpp", "cp", "ep", "etp", "d_rep", "d_sh", "micro_batch_size",
            "micro_batches", "n_acc", "sequence_parallel", "cp_algo", "ulysses_degree", "schedule",
            "emb_out_in_offset", "vocab_parallel_loss", "compute_bytes", "reduce_bytes", "recompute.default_mode",
            "recompute.ranges", "recompute.rule", "sharding.mode", "sharding.os", "sharding.reshard_after_forward",
            "sharding.reshard_head_unit"}
WIDTH_NAMES = {2: "bfloat16", 4: "float32"}
DELETE = "<delete>"  # view value: remove the key (the framework default applies)


def refuse(fmt: str, what: str, path: str | None = None) -> ConfigError:
    """The R-FW refusal: the format cannot express ``what``."""
    return ConfigError(f"[R-FW] a {fmt} file cannot express {what}; choose an expressible strategy or edit "
                       "the file by hand", path=path)


def changed_fields(old: Strategy, new: Strategy) -> dict[str, Any]:
    """``field`` or ``record.field`` -> new value, for every Strategy field that differs."""
    a, b = old.to_dict(), new.to_dict()
    out: dict[str, Any] = {}
    for key in b:
        if isinstance(b[key], dict):
            out.update({f"{key}.{k}": v for k, v in b[key].items() if a[key].get(k) != v})
        elif a[key] != b[key]:
            out[key] = b[key]
    return out


def original_strategy(source: SourceFile, parsed: ParsedConfig, reader: Any, data: Any) -> Strategy:
    """The strategy ``source`` itself states (``parsed`` may carry later edits), re-read with the device
    count of ``parsed`` (or none, for files that state theirs)."""
    from ..fields import REGISTRY, coerce
    from ..parsed import build_plan

    problem: ConfigError | None = None
    for devices in (parsed.strategy.world_size, None):
        try:
            reading = reader(source.text, source.path, data, devices)
        except ConfigError as exc:
            problem = problem or exc
            continue
        values = {k: v for k, v in parsed.values.items() if not k.startswith("strategy.")}
        values.update({k: v for k, v in reading.values.items() if k.startswith("strategy.")})
        values = {k: coerce(REGISTRY[k], v, source.path) if k in REGISTRY else v for k, v in values.items()}
        return build_plan(values, where=source.path).strategy
    raise ConfigError(f"cannot re-read the file to see what changed: {problem.bare_message if problem else ''}",
                      path=source.path)


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


def _context(data: dict[str, Any], parsed: ParsedConfig) -> _Context:
    rep, shard = _find(data, "dp_replicate")[0], _find(data, "dp_shard")
    sched = _find(data, "schedule")[0]
    return _Context(schema=_schema(data), rep_all=rep == -1, shard_all=shard[1] is None or shard[0] == -1,
                    had_global=(_find(data, "global_batch_size")[0] or -1) > 0,
                    had_lps=_find(data, "layers_per_stage")[1] is not None,
                    old_microbatches=_find(data, "pp_microbatches")[1] is not None or _schema(data) != "parallelism",
                    schedule_text=str(sched) if sched is not None else None,
                    n_layers=parsed.model.num_layers, weights=_stage_weights(data))


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
    if cp > 1 and (st.cp_algo != "ring" or (st.ulysses_degree or 1) > 1):
        raise refuse(FORMAT, f"context-parallel algorithm {st.cp_algo} (torchtitan runs ring attention)", path)
    b, m, n_acc = st.micro_batch_size, st.micro_batches, st.n_acc
    if pp == 1:
        lbs, steps = b, m * n_acc
    else:
        lbs, steps = b * m, n_acc
        v["pp_microbatches" if ctx.old_microbatches else "pp_microbatch_size"] = m if ctx.old_microbatches else b
        _view_schedule(v, st, ctx, path)
    v["local_batch_size"] = lbs
    v["global_batch_size"] = lbs * dp * steps if (ctx.had_global or steps > 1) else None
    v["reshard"] = _view_reshard(st, path)
    v["disable_loss_parallel"] = True if st.vocab_parallel_loss is False else None
    v["ac_mode"], v["ac_option"] = _view_recompute(st, ctx, path)
    for name, width in (("mp_param", st.compute_bytes), ("mp_reduce", st.reduce_bytes)):
        if width is not None and width not in WIDTH_NAMES:
            raise refuse(FORMAT, f"a {width}-byte mixed-precision dtype", path)
        v[name] = WIDTH_NAMES.get(width) if width is not None else None
    return v


def _view_schedule(v: dict[str, Any], st: Strategy, ctx: _Context, path: str) -> None:
    sched = st.schedule_name
    if sched not in WRITE_SCHEDULE:
        raise refuse(FORMAT, f"the {sched} schedule", path)
    original = SCHEDULES.get(_schedule_key(ctx.schedule_text)) if ctx.schedule_text else None
    if st.schedule is not None or st.vpp > 1 or ctx.schedule_text is not None:
        v["schedule"] = ctx.schedule_text if original and original[0] == sched else WRITE_SCHEDULE[sched]
    if ctx.schema != "parallelism":
        if st.emb_out_in_offset:
            raise refuse(FORMAT, "embedding/output counted as layers in the 2024-12 schema", path)
    elif not st.emb_out_in_offset:
        v["first_less"] = v["last_less"] = 0
    elif ctx.weights != 2:
        v["first_less"] = v["last_less"] = 1
    if sched != "interleaved" and not ctx.had_lps:
        return
    if sched == "interleaved" and st.vpp == 2 and not ctx.had_lps:
        return
    stages = st.pp * st.vpp
    total = ctx.n_layers + (2 if st.emb_out_in_offset else 0)
    lps = next((k for k in range(1, total + 1) if math.ceil(total / k) == stages), None)
    if lps is None and st.vpp == (1 if sched != "interleaved" else 2):
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


def _set_toml(doc: Any, data: dict[str, Any], schema: str, name: str, value: Any, path: str) -> None:
    import tomlkit

    locations = LOCATIONS[name]
    for section, key in locations:
        if isinstance(data.get(section), dict) and key in data[section]:
            break
    else:
        if schema != "parallelism" and name in NEW_ONLY:
            raise refuse(FORMAT, f"{name} in the 2024-12 schema (no such key)", path)
        section, key = locations[0] if schema == "parallelism" or len(locations) == 1 else locations[1]
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


def write(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """``source.text`` with only the keys defining ``strategy`` changed (tomlkit round trip: comments, order
    and quoting kept). Raises ConfigError [R-FW] for what a torchtitan TOML cannot express."""
    import tomlkit

    data = load_toml(source.text, source.path)
    old = original_strategy(source, parsed, read, data)
    extra = sorted(set(changed_fields(old, strategy)) - WRITABLE)
    if extra:
        raise refuse(FORMAT, ", ".join(f"strategy {k} = {changed_fields(old, strategy)[k]!r}" for k in extra),
                     source.path)
    ctx = _context(data, parsed)
    before, after = _view(old, ctx, source.path), _view(strategy, ctx, source.path)
    changes = {k: v for k, v in after.items() if v is not None and before.get(k) != v}
    if not changes:
        return source.text
    doc = tomlkit.parse(source.text)
    for name, value in changes.items():
        _set_toml(doc, data, ctx.schema, name, value, source.path)
    return tomlkit.dumps(doc)
