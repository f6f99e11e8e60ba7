"""The issue-11 keys of a torchtitan TOML — float8/MX converters, torch.compile, async TP, the context-parallel
rotate method, FSDP2 CPU offload — read into ``strategy.*``. Kept apart from the reader so each feature's keys live
in one place; ``FEATURE_LOCATIONS`` are their (section, key) places, both schemas."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..messages import msg
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
        raise ConfigError(msg("torchtitan_features.model-converters-turns"),
                          path=c.path, key="model.converters")
    if not (linear8 or mx):
        if grouped:
            c.warn("W-UNMODELLED", msg("W-UNMODELLED.fp8-grouped-gemms"))
        return
    where = "model.converters" if names else "float8.enable_float8_linear"
    if mx:
        raw, key = find(data, "mx_recipe")
        if raw is not None and not str(raw).startswith("mxfp8"):
            raise ConfigError(msg("torchtitan_features.mx-recipe-only", raw=raw), path=c.path, key=key)
        c.put("strategy.fp8", "mxfp8", key or where, raw or "mx")
    else:
        raw, key = find(data, "float8_recipe")
        if raw not in FLOAT8_RECIPES:
            raise ConfigError(msg("torchtitan_features.float8-recipe_name-expected", raw=raw),
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
            c.warn("W-UNMODELLED", msg("W-UNMODELLED.these-linears-stay", key=key, skipped=', '.join(skipped)))
    moe, key = find(data, "mx_moe" if mx else "float8_moe")
    experts = bool(grouped) or bool(moe)
    c.put("strategy.fp8_experts", experts, key or where, moe if moe is not None else names)


def _cp_rotate(c: Collector, raw: Any, key: str) -> None:
    """PyTorch context parallelism all-gathers K/V (torchtitan's default rotate method) or passes them round a
    ring of all-to-all exchanges."""
    method = str(raw).strip().lower()
    if method not in ("allgather", "alltoall"):
        raise ConfigError(msg("torchtitan_features.context_parallel_rotate_method-must-allgather", raw=raw),
                          path=c.path,
                          key=key)
    c.put("strategy.cp_algo", "allgather" if method == "allgather" else "ring", key, raw)


# ------------------------------------------------------------------------------------------ writing
WRITE_FLOAT8 = {"tensorwise": "tensorwise", "rowwise": "rowwise"}


def write_float8(doc: Any, data: dict[str, Any], old: Any, new: Any, path: str) -> None:
    """Turn the float8/MX linear converter on, off or to another recipe in ``doc`` (a tomlkit document of
    ``data``): ``model.converters`` (or the 2024-12 ``float8.enable_float8_linear``), the recipe name and the
    FP8 all-gather of FSDP weights, each in the section the file already uses. Refuses (R-FW) what torchtitan
    cannot run: delayed or blockwise scaling, a changed amax history, experts set apart."""
    from .support import refusal

    if (old.fp8, old.fp8_param) == (new.fp8, new.fp8_param):
        return
    recipe = new.fp8 or "none"
    if recipe not in (*WRITE_FLOAT8, "mxfp8", "none"):
        raise refusal(f"FP8 recipe {recipe} (torchtitan's float8 converter scales tensorwise or rowwise; MX runs "
                      "mxfp8)", path)
    if new.fp8_param and recipe == "mxfp8":
        raise refusal(f"FP8 weights with recipe {recipe} (torchtitan gathers float8 weights for its float8 "
                      "converter only)", path)
    names = converters(data)
    legacy = find(data, "float8_legacy")[1] is not None and not names
    if legacy:
        if recipe not in ("none", "tensorwise"):
            raise refusal(f"FP8 recipe {recipe} in the 2024-12 schema (float8.enable_float8_linear is tensorwise)",
                          path)
        _set(doc, ("float8", "enable_float8_linear"), recipe != "none")
    else:
        _converters(doc, data, recipe)
    if recipe == "none":
        return
    quantize = "quantize" in data or any(n.startswith("quantize.") for n in names)
    if recipe == "mxfp8":
        return  # MX's default recipe is mxfp8 (the reader refuses any other)
    section = ("quantize", "linear", "float8") if quantize else ("float8",)  # where a new key goes
    for name, value, needed in (("float8_recipe", WRITE_FLOAT8[recipe], recipe != "tensorwise"),
                                ("float8_all_gather", bool(new.fp8_param), bool(new.fp8_param))):
        key = find(data, name)[1]
        if key or needed:  # a key the file states is kept up to date; a default is not written
            _set(doc, tuple(key.split(".")) if key else (*section, FEATURE_LOCATIONS[name][0][-1]), value)


def _converters(doc: Any, data: dict[str, Any], recipe: str) -> None:
    """``model.converters`` without its linear float8/MX entries, plus the new one (grouped-GEMM converters and
    others kept in place)."""
    import tomlkit

    names = [str(x) for x in (dig(data, "model", "converters") or [])]
    mx = recipe == "mxfp8"
    same = [n for n in names if _linear_converter(n) and _is_mx(n) == mx]  # the file's own name for it
    kept = [n for n in names if not _linear_converter(n) or (recipe != "none" and n in same[:1])]
    quantize = "quantize" in data or any(n.lower().startswith("quantize.") for n in names)
    if recipe != "none" and not same:
        kept.append(("quantize.linear.mx" if quantize else "mx") if mx else
                    ("quantize.linear.float8" if quantize else "float8"))
    if kept == names:
        return
    if "model" not in doc:
        doc.add("model", tomlkit.table())
    array = tomlkit.array()
    array.extend(kept)
    doc["model"]["converters"] = array


def _linear_converter(name: str) -> bool:
    n = name.lower()
    return ("float8" in n and "grouped" not in n) or _is_mx(n)


def _is_mx(name: str) -> bool:
    n = name.lower()
    return n == "mx" or n.endswith("linear.mx")


def _set(doc: Any, keys: tuple[str, ...], value: Any) -> None:
    import tomlkit

    table = doc
    for k in keys[:-1]:
        if k not in table:
            table.add(k, tomlkit.table())
        table = table[k]
    table[keys[-1]] = value
