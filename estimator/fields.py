"""Canonical field names (plan files, ``--set``, the JSON echo) and their typed coercion.

``model.*`` are ModelSpec fields; ``strategy.*`` are Strategy fields with RecomputePlan and ShardingSpec
written flat (``recompute``, ``sharding``, ``shard_size`` …); ``hardware.*`` are ``device`` and
``capacity`` plus the Hardware rates; ``options.*`` are RunOptions fields.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .hardware import Hardware
from .limits import MAX_LAYERS, VISION_BOUNDS, Bound, bound_of, check_list, check_number, short_repr
from .messages import msg, reason
from .model import LayerGroup, ModelSpec
from .nearest import suggest
from .options import RunOptions
from .strategy import (
    COMPILE_COMPONENTS,
    CP_ALGOS,
    FP8_RECIPES,
    LORA_TARGETS,
    LOSS_FUSIONS,
    MOE_ZERO_MEMORY,
    OFFLOAD_GROUPS,
    PEFT_METHODS,
    SCHEDULES,
    SELECTIVE_RULES,
    SHARDING_MODES,
    TRAINABLE_PARTS,
    OffloadLayers,
    RecomputePlan,
    RecomputeRange,
    ShardingSpec,
    Strategy,
    UbGemm,
)
from .units import parse_size

SECTIONS = ("model", "strategy", "hardware", "options")


@dataclass(frozen=True)
class FieldInfo:
    section: str
    name: str            # canonical flat name
    record: type         # the dataclass holding it
    attr: str            # attribute name on that record
    path: tuple[str, ...]  # attribute path from the section record (("recompute", "default_mode"))
    kind: Any            # the annotation

    @property
    def qualified(self) -> str:
        return f"{self.section}.{self.name}"


SIZE_FIELDS = {"hardware.capacity", "options.reserve", "options.margin", "options.budget_override",
               "options.max_device_memory", "options.comm_lib_per_group", "options.hccl_buffsize",
               "options.p2p_hccl_buffsize", "options.nccl_buffsize", "options.runtime_context",
               "options.nccl_nvls_chunksize"}

# flat strategy aliases for nested records
_STRATEGY_FLAT = {
    "recompute": ("recompute", "default_mode"),
    "full_counts": ("recompute", "full_counts"),
    "sel_counts": ("recompute", "sel_counts"),
    "comm_counts": ("recompute", "comm_counts"),
    "recompute_ranges": ("recompute", "ranges"),
    "allow_overlap": ("recompute", "allow_overlap"),
    "uniform_group": ("recompute", "uniform_group"),
    "recompute_switches": ("recompute", "switches"),
    "selective_rule": ("recompute", "rule"),
    "sharding": ("sharding", "mode"),
    "shard_size": ("sharding", "os"),
    "expert_shard_size": ("sharding", "os_e"),
    "span_cp": ("sharding", "span_cp"),
    "grad_shard": ("sharding", "grad_shard"),
    "keep_gathered_weights": ("sharding", "keep_gathered_weights"),
    "fp32_grad_partition": ("sharding", "fp32_grad_partition"),
    "fsdp_layout": ("sharding", "fsdp_layout"),
    "reshard_after_forward": ("sharding", "reshard_after_forward"),
    "reshard_head_unit": ("sharding", "reshard_head_unit"),
}
ALIASES = {
    "strategy.os": "strategy.shard_size", "strategy.os_e": "strategy.expert_shard_size",
    "strategy.ranges": "strategy.recompute_ranges", "strategy.switches": "strategy.recompute_switches",
    "strategy.rule": "strategy.selective_rule", "options.reserve_fixed": "options.reserve",
    "model.n_layers": "model.num_layers", "strategy.mbs": "strategy.micro_batch_size",
    "strategy.m": "strategy.micro_batches", "strategy.seq_len": "strategy.seq_length",
}
# the values a text field (or each member of a list field) may take
VERSION_FIELDS = {"options.nccl_version"}  # text only: a number would lose its trailing zeros
CHOICES: dict[str, tuple[str, ...]] = {
    "strategy.cp_algo": CP_ALGOS, "strategy.schedule": SCHEDULES, "strategy.sharding": SHARDING_MODES,
    "strategy.fp8": FP8_RECIPES, "strategy.compile": COMPILE_COMPONENTS, "strategy.loss_fusion": LOSS_FUSIONS,
    "strategy.peft": PEFT_METHODS, "strategy.lora_targets": LORA_TARGETS,
    "strategy.offload_activations": OFFLOAD_GROUPS, "strategy.offload_layers": OFFLOAD_GROUPS,
    "strategy.moe_zero_memory": MOE_ZERO_MEMORY, "strategy.trainable_parts": TRAINABLE_PARTS,
    "strategy.selective_rule": SELECTIVE_RULES,
    "strategy.offset_rule": ("broadcast", "split"), "strategy.fsdp_layout": ("torchtitan", "root"),
    "options.grad_persistence": ("persistent", "upstream_rule", "progressive"),
    "options.vpp_variant": ("megatron", "upstream_big", "upstream_less"),
    "options.comm_buffer_mode": ("transient_max", "upstream_sum"),
    "options.optimizer_impl": ("fused", "foreach", "forloop"),
}
HARDWARE_FIELDS = ("device", "capacity", "eff_matmul", "hbm_bandwidth", "eff_hbm", "host_link_bandwidth",
                   "eff_attention")


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build_registry() -> dict[str, FieldInfo]:
    reg: dict[str, FieldInfo] = {}
    model_hints = _hints(ModelSpec)
    for f in dataclasses.fields(ModelSpec):
        reg[f"model.{f.name}"] = FieldInfo("model", f.name, ModelSpec, f.name, (f.name,), model_hints[f.name])
    strat_hints = _hints(Strategy)
    for f in dataclasses.fields(Strategy):
        if f.name in ("recompute", "sharding"):
            continue
        reg[f"strategy.{f.name}"] = FieldInfo("strategy", f.name, Strategy, f.name, (f.name,), strat_hints[f.name])
    nested = {"recompute": RecomputePlan, "sharding": ShardingSpec}
    nested_hints = {sub: _hints(cls) for sub, cls in nested.items()}  # once a class: ~2 ms of every process
    for flat, (sub, attr) in _STRATEGY_FLAT.items():
        cls = nested[sub]
        reg[f"strategy.{flat}"] = FieldInfo("strategy", flat, cls, attr, (sub, attr), nested_hints[sub][attr])
    hw_hints = _hints(Hardware)
    for name in HARDWARE_FIELDS:
        kind = str if name == "device" else hw_hints[name]
        reg[f"hardware.{name}"] = FieldInfo("hardware", name, Hardware, name, (name,), kind)
    opt_hints = _hints(RunOptions)
    for f in dataclasses.fields(RunOptions):
        reg[f"options.{f.name}"] = FieldInfo("options", f.name, RunOptions, f.name, (f.name,), opt_hints[f.name])
    return reg


REGISTRY = _build_registry()


def lookup(qualified: str, where: str | None = None) -> FieldInfo:
    """The field for ``section.name``; unknown names get the nearest valid one in the message."""
    key = ALIASES.get(qualified, qualified)
    info = REGISTRY.get(key)
    if info is not None:
        return info
    section = qualified.split(".", 1)[0]
    if section not in SECTIONS:
        raise ConfigError(msg("fields.unknown-section-use", section=section, SECTIONS=', '.join(SECTIONS)),
                          path=where, key=qualified)
    candidates = [k for k in REGISTRY if k.startswith(section + ".")] + list(ALIASES)
    close = suggest(key, candidates, cutoff=0.5)
    hint = f"; did you mean '{close}'?" if close else f"; see the {section} fields in docs/plan-files.md"
    raise ConfigError(msg("fields.unknown-field", qualified=qualified, hint=hint), path=where, key=qualified)


# ---------------------------------------------------------------------------------------- coercion
def _bool(value: Any, key: str, where: str | None) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
        return value.strip().lower() in ("true", "yes", "on", "1")
    raise ConfigError(msg("fields.expected-true-false", value=value), path=where, key=key)


def _int(value: Any, key: str, where: str | None) -> int:
    if isinstance(value, bool):
        raise ConfigError(msg("fields.expected-integer-got", value=value), path=where, key=key)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ConfigError(msg("fields.expected-integer-got", value=value), path=where, key=key)


def _float(value: Any, key: str, where: str | None) -> float:
    if isinstance(value, bool):
        raise ConfigError(msg("fields.expected-number-got", value=value), path=where, key=key)
    try:
        return float(value) if isinstance(value, (int, float)) else float(str(value).strip())
    except (ValueError, OverflowError):
        raise ConfigError(msg("fields.expected-number-got-2", short_repr=short_repr(value)), path=where,
                          key=key) from None


def _counts(value: Any, key: str, where: str | None) -> Any:
    """Recompute counts / offsets: bool, int, list[int] or list[list[int]]."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            if isinstance(v, (list, tuple)):
                out.append(tuple(_int(x, key, where) for x in v))
            elif isinstance(v, bool):
                out.append(v)
            else:
                out.append(_int(v, key, where))
        return tuple(out)
    return _int(value, key, where)


def coerce(info: FieldInfo, value: Any, where: str | None = None) -> Any:
    """Convert a YAML/JSON/CLI value to the field's type within its bounds (estimator/limits.py) and choices,
    or raise ConfigError naming the key and the rule."""
    return _within_bounds(info, _convert(info, value, where), where)


COUNT_ATTRS = ("offset", "partition", "full_counts", "sel_counts", "comm_counts", "offload_counts")


def _within_bounds(info: FieldInfo, value: Any, where: str | None) -> Any:
    key = info.qualified
    if value is None or isinstance(value, bool | str):
        return value
    if info.attr in COUNT_ATTRS or key == "strategy.recompute":
        check_list(value, path=where, key=key)
    elif info.attr == "ranges":
        for item in value:
            check_number(item.first, Bound(0, MAX_LAYERS, "a first layer"), path=where, key=key)
            check_number(item.count, Bound(0, MAX_LAYERS, "a layer count"), path=where, key=key)
    elif info.attr == "offload_layers":
        for item in value:
            check_list(item.layers, path=where, key=key, bound=Bound(0, MAX_LAYERS, "a layer index"))
    elif key == "model.layers":
        total = sum(int(g["count"] if isinstance(g, dict) else g.count) for g in value
                    if isinstance(g, dict | LayerGroup))
        check_number(total, Bound(0, 2 * MAX_LAYERS, "the layers of all groups"), path=where, key=key)
    elif key == "model.vision" and isinstance(value, dict):
        for name, bound in VISION_BOUNDS.items():
            item = value.get(name)
            if isinstance(item, int | float) and not isinstance(item, bool):
                check_number(item, bound, path=where, key=f"{key}.{name}")
    elif isinstance(value, tuple):
        check_list(value, path=where, key=key, bound=Bound(0, MAX_LAYERS, "a layer index")
                   if key == "strategy.noop_layers" else Bound(-MAX_LAYERS, MAX_LAYERS, "a layer index")
                   if key == "strategy.trainable_layers" else Bound(-(1 << 40), 1 << 40, "an entry"))
    elif isinstance(value, int | float):
        check_number(value, bound_of(key, int if isinstance(value, int) else float), path=where, key=key)
    return value


def _convert(info: FieldInfo, value: Any, where: str | None) -> Any:
    key = info.qualified
    if info.qualified in SIZE_FIELDS:
        if value is None:
            return None
        try:
            return parse_size(value)
        except ValueError as exc:
            raise ConfigError(reason(exc), path=where, key=key) from None
    if info.name == "recompute" and info.section == "strategy":
        return value  # handled by apply_field: a mode or per-stage counts
    kind = info.kind
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    optional = (origin in (typing.Union, types.UnionType)) and type(None) in args
    if value is None:
        if optional or info.path[-1] in ("offset", "partition") or kind is typing.Any:
            return None
        raise ConfigError(msg("fields.value-required-got"), path=where, key=key)
    if optional:
        rest = [a for a in args if a is not type(None)]
        kind = rest[0] if len(rest) == 1 else kind
        origin = typing.get_origin(kind)
        args = typing.get_args(kind)  # the element type of an optional tuple (tuple[int, ...] | None)
    if info.attr in COUNT_ATTRS:
        return _counts(value, key, where)
    if info.attr == "ranges":
        if not isinstance(value, (list, tuple)):
            raise ConfigError(msg("fields.expected-list-ranges"), path=where, key=key)
        try:
            return tuple(RecomputeRange.from_dict(dict(v)) if not isinstance(v, RecomputeRange) else v
                         for v in value)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(msg("fields.bad-recompute-range", exc=exc), path=where, key=key) from None
    if info.attr == "offload_layers":
        return _offload_layers(value, key, where)
    if info.attr == "tp_comm_overlap_cfg":
        return _ub_settings(value, key, where)
    if kind is bool:
        return _bool(value, key, where)
    if kind is int:
        return _int(value, key, where)
    if kind is float:
        return _float(value, key, where)
    if kind is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(msg("fields.expected-string-got", value=value), path=where, key=key)
        if key in VERSION_FIELDS and not isinstance(value, str):  # YAML reads 2.20 as the number 2.2
            raise ConfigError(msg("fields.version-as-text", value=value), path=where, key=key)
        return _choice(str(value), key, where)
    if origin is tuple:
        if isinstance(value, str):
            value = [x.strip() for x in value.split(",") if x.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(msg("fields.expected-list-got", value=value), path=where, key=key)
        inner = args[0] if args else typing.Any
        if inner is int:
            return tuple(_int(v, key, where) for v in value)
        if inner is str:
            return tuple(_choice(str(v), key, where) for v in value)
        return tuple(value)
    return value


def _offload_layers(value: Any, key: str, where: str | None) -> tuple[OffloadLayers, ...]:
    """``strategy.offload_layers``: ``{group: [layer, …]}`` or a list of ``{group, layers}`` records."""
    if isinstance(value, dict):
        value = [{"group": g, "layers": ids} for g, ids in value.items()]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(msg("fields.expected-offload-layers", value=short_repr(value)), path=where, key=key)
    out = []
    for item in value:
        if not isinstance(item, OffloadLayers):
            if not isinstance(item, dict) or set(item) != {"group", "layers"} or \
                    not isinstance(item["layers"], (list, tuple)):
                raise ConfigError(msg("fields.expected-offload-layers", value=short_repr(item)), path=where,
                                  key=key)
            item = OffloadLayers(_choice(str(item["group"]), key, where),
                                 tuple(sorted({_int(v, key, where) for v in item["layers"]})))
        out.append(item)
    return tuple(out)


UB_METHOD_NAMES = ("ring_exchange", "pipeline", "bulk", "external")


def _ub_settings(value: Any, key: str, where: str | None) -> tuple[UbGemm, ...]:
    """``strategy.tp_comm_overlap_cfg``: ``{gemm: {method, is_reduce_scatter, fp8_buf}}`` (the YAML's shape) or a
    list of ``{name, method, is_reduce_scatter, fp8_buf}`` records."""
    if isinstance(value, dict):
        value = [{"name": name, **(dict(v) if isinstance(v, dict) else {})} for name, v in value.items()]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(msg("fields.expected-ub-settings", value=short_repr(value)), path=where, key=key)
    out = []
    for item in value:
        if not isinstance(item, UbGemm):
            if not isinstance(item, dict) or not set(item) <= {"name", "method", "is_reduce_scatter", "fp8_buf"} \
                    or "name" not in item:
                raise ConfigError(msg("fields.expected-ub-settings", value=short_repr(item)), path=where, key=key)
            method = item.get("method")
            if method is not None and method not in UB_METHOD_NAMES:
                raise ConfigError(msg("fields.one", value=method, allowed=", ".join(UB_METHOD_NAMES), hint=""),
                                  path=where, key=key)
            item = UbGemm(str(item["name"]), method,
                          *(None if item.get(k) is None else _bool(item[k], key, where)
                            for k in ("is_reduce_scatter", "fp8_buf")))
        out.append(item)
    return tuple(out)


def _choice(value: str, key: str, where: str | None) -> str:
    """``value`` when ``key`` takes any text or ``value`` is one of its choices; else a ConfigError naming the
    nearest choice."""
    allowed = CHOICES.get(key)
    if allowed is None or value in allowed:
        return value
    close = suggest(value, allowed, cutoff=0.5)
    hint = f"; did you mean {close!r}?" if close else ""
    raise ConfigError(msg("fields.one", value=value, allowed=', '.join(allowed), hint=hint), path=where, key=key)


RECOMPUTE_MODES = ("none", "selective", "full")


def recompute_value(value: Any, where: str | None) -> tuple[str, Any]:
    """``strategy.recompute`` takes a mode (none|selective|full) or per-stage full-recompute counts."""
    if isinstance(value, str):
        mode = value.strip().lower()
        if mode in RECOMPUTE_MODES:
            return "default_mode", mode
        raise ConfigError(msg("fields.recompute-must-none", value=value),
                          path=where, key="strategy.recompute")
    if value is None or value is False:
        return "default_mode", "none"
    if value is True:
        return "default_mode", "full"
    return "full_counts", _counts(value, "strategy.recompute", where)


def canonical_values(model: ModelSpec, strategy: Strategy, options: RunOptions) -> dict[str, Any]:
    """Flat ``section.name -> value`` of everything a plan can state (for echo and diffs)."""
    out: dict[str, Any] = {}
    for key, info in REGISTRY.items():
        if info.section == "model":
            out[key] = getattr(model, info.attr)
        elif info.section == "strategy":
            obj: Any = strategy
            for part in info.path:
                obj = getattr(obj, part)
            out[key] = obj
        elif info.section == "options":
            out[key] = getattr(options, info.attr)
    return out
