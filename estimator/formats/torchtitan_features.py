"""The issue-11 keys of a torchtitan TOML — float8/MX converters, torch.compile, async TP, the context-parallel
rotate method, FSDP2 CPU offload — read into ``strategy.*``. Kept apart from the reader so each feature's keys live
in one place; ``FEATURE_LOCATIONS`` are their (section, key) places, both schemas."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .common import dig
from .support import Collector

FEATURE_LOCATIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    "float8_legacy": (("float8", "enable_float8_linear"),),
    "float8_recipe": (("quantize", "linear", "float8", "recipe_name"), ("float8", "recipe_name")),
    "float8_all_gather": (("quantize", "linear", "float8", "enable_fsdp_float8_all_gather"),
                          ("float8", "enable_fsdp_float8_all_gather")),
    "float8_filter": (("quantize", "linear", "float8", "filter_fqns"), ("float8", "filter_fqns")),
    "float8_moe": (("quantize", "grouped_mm", "float8", "fqns"), ("float8", "moe_fqns_prototype")),
    "mx_recipe": (("quantize", "linear", "mx", "recipe_name"), ("mx", "recipe_name")),
    "mx_moe": (("quantize", "grouped_mm", "mx", "fqns"),),
    "cp_rotate": (("parallelism", "context_parallel_rotate_method"),),
    "async_tp": (("parallelism", "enable_async_tensor_parallel"), ("experimental", "enable_async_tensor_parallel"),
                 ("compile", "enable_async_tensor_parallel")),
    "cpu_offload": (("training", "enable_cpu_offload"),),
}
FLOAT8_RECIPES = {None: "tensorwise", "tensorwise": "tensorwise", "rowwise": "rowwise",
                  "rowwise_with_gw_hp": "rowwise"}
# modules torchtitan's float8 filter may name that the estimator prices in bf16 anyway (the head, MoE routers)
BF16_ANYWAY = ("output", "router", "gate", "router.gate")


def find(data: dict[str, Any], name: str) -> tuple[Any, str | None]:
    """(value, 'dotted.key') of the first place of ``name`` present in the file."""
    for keys in FEATURE_LOCATIONS[name]:
        value = dig(data, *keys)
        if value is not None:
            return value, ".".join(keys)
    return None, None


def read_features(c: Collector, data: dict[str, Any]) -> None:
    _float8(c, data)
    raw, key = find(data, "async_tp")
    if key and raw is True:
        c.put("strategy.async_tp", True, key, raw)
    raw, key = find(data, "cp_rotate")
    if key:
        _cp_rotate(c, raw, key)
    raw, key = find(data, "cpu_offload")
    if key and raw is True:
        c.put("strategy.offload_params", True, key, raw)
        c.put("strategy.offload_optimizer", True, key, raw)


def converters(data: dict[str, Any]) -> list[str]:
    value = dig(data, "model", "converters") or []
    return [str(x).lower() for x in (value if isinstance(value, list) else [value])]


def _float8(c: Collector, data: dict[str, Any]) -> None:
    """``model.converters`` turns the converters on (float8 / quantize.linear.float8, mx / quantize.linear.mx,
    quantize.grouped_mm.*); their sections only configure them. The 2024-12 schema used
    ``float8.enable_float8_linear``."""
    names = converters(data)
    linear8 = any("float8" in n and "grouped" not in n for n in names) or find(data, "float8_legacy")[0] is True
    mx = any(n == "mx" or n.endswith("linear.mx") for n in names)
    grouped = [n for n in names if "grouped_mm" in n]
    if linear8 and mx:
        raise ConfigError("model.converters turns on both float8 and MX linears; torchtitan applies one",
                          path=c.path, key="model.converters")
    if not (linear8 or mx):
        if grouped:
            c.warn("W-UNMODELLED", "FP8 grouped GEMMs for the experts without FP8 linears are not modelled; priced "
                                   "in bf16")
        return
    where = "model.converters" if names else "float8.enable_float8_linear"
    if mx:
        raw, key = find(data, "mx_recipe")
        if raw is not None and not str(raw).startswith("mxfp8"):
            raise ConfigError(f"MX recipe {raw!r}: only MXFP8 is modelled", path=c.path, key=key)
        c.put("strategy.fp8", "mxfp8", key or where, raw or "mx")
    else:
        raw, key = find(data, "float8_recipe")
        if raw not in FLOAT8_RECIPES:
            raise ConfigError(f"float8 recipe_name {raw!r}: expected tensorwise, rowwise or rowwise_with_gw_hp",
                              path=c.path, key=key)
        recipe = FLOAT8_RECIPES[raw]
        if key:
            c.put("strategy.fp8", recipe, key, raw)
        else:
            c.put("strategy.fp8", recipe, where, "float8 (dynamic tensorwise scaling)")
        raw, key = find(data, "float8_all_gather")
        if key:
            c.put("strategy.fp8_param", bool(raw), key, raw)
        raw, key = find(data, "float8_filter")
        skipped = [str(x) for x in (raw or []) if str(x) not in BF16_ANYWAY]
        if skipped:
            c.warn("W-UNMODELLED", f"{key} {', '.join(skipped)}: these linears stay in bf16 in the run but are priced "
                                   "in FP8")
    moe, key = find(data, "mx_moe" if mx else "float8_moe")
    experts = bool(grouped) or bool(moe)
    c.put("strategy.fp8_experts", experts, key or where, moe if moe is not None else names)


def _cp_rotate(c: Collector, raw: Any, key: str) -> None:
    """PyTorch context parallelism all-gathers K/V (torchtitan's default rotate method) or passes them round a
    ring of all-to-all exchanges."""
    method = str(raw).strip().lower()
    if method not in ("allgather", "alltoall"):
        raise ConfigError(f"context_parallel_rotate_method must be allgather or alltoall; got {raw!r}", path=c.path,
                          key=key)
    c.put("strategy.cp_algo", "allgather" if method == "allgather" else "ring", key, raw)
