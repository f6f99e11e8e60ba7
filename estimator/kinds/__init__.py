"""Layer kinds and slot overrides as data (issue 15): YAML files in the slot vocabulary of
``estimator/activations.py`` and the parameter classes of ``estimator/params.py``.

A **kind file** defines a body-layer kind on top of a shipped one (``base``: dense, moe, lin_dense, lin_moe):
slots it adds or replaces (bytes per token as a formula, division class, recompute switches, a condition),
slots it removes, parameters it adds by class, and the attention core's attended keys for the FLOPs. ``match``
says which layers of a model become this kind (HF ``layer_types`` entries and/or ``model_types``). An
**override** replaces one slot of one kind (or of every kind, ``kind: "*"``). Formulas are arithmetic over the
symbols of ``symbols()`` (estimator/kinds/expr.py); nothing is executed.

Shipped kinds live beside this file; the user's ``kinds/`` folder (estimator/userconfig.py) and plug-in folders
are registered with ``add_kinds_dir``. Every data kind and override in use is reported as an assumption naming
its file.

    name: swa_moe                 # ends with the base's FFN half (dense / moe); lin_ prefix iff the base has it
    base: moe
    description: sliding-window attention
    match: {layer_types: [sliding_attention], model_types: [gpt_oss]}
    symbols: {window: sliding_window}          # formula symbol -> ModelSpec field
    slots:
      - {id: a.scores, bytes: "b_sm * a * min(s, window)", class: tp, switches: [core], when: "not flash"}
    remove: [a.scores_cast]
    params:
      - {name: sinks, class: rep, elements: "a"}
    flops: {attended_keys: "min(s, window) * (1 - min(s, window) / (2 * s))"}
    overrides:                     # in any kind file, or a file of its own
      - {kind: dense, slot: a.scores, bytes: "4 * a * s"}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from ..data_cache import cached_files
from ..errors import ConfigError, ModelSpecError
from ..inputs import load_yaml, read_text
from ..messages import msg
from .expr import Formula, parse_formula

BASES = ("dense", "moe", "lin_dense", "lin_moe")
CLASSES = ("sp", "gsp", "tp", "rep", "v", "exp", "expt")
PARAM_CLASSES = ("tp", "rep", "exp")
SWITCHES = ("core", "head_cast", "dropout", "norm_out", "gather", "act", "qk_v", "mla_up", "moe_act", "mlp", "moe",
            "shared_experts")
KIND_KEYS = {"name", "base", "description", "match", "symbols", "slots", "remove", "params", "flops", "without",
             "tp_divides",
             # informational keys `sapp measure` writes beside the census
             "measured_layer", "transient_bytes_per_token", "parameters"}
FILE_KEYS = {"kind", "kinds", "overrides", "source"}


@dataclass(frozen=True)
class SlotSpec:
    id: str
    bytes: Formula | None
    cls: str | None
    switches: tuple[str, ...] | None
    when: Formula | None


@dataclass(frozen=True)
class ParamSpec:
    name: str
    cls: str
    elements: Formula
    matmul: bool = False  # weights of a linear layer: each token multiplies them (FLOPs 2·elements per token)


@dataclass(frozen=True)
class FlopSpec:
    """Forward FLOPs per token of work the base kind does not have (the indexer's scores, a state-space scan),
    timed with the attention core; class tp (split across TP ranks) or rep (every TP rank does all of it)."""

    name: str
    cls: str
    per_token: Formula


@dataclass(frozen=True)
class KindDef:
    name: str
    base: str
    description: str
    layer_types: tuple[str, ...]
    model_types: tuple[str, ...]
    symbols: tuple[tuple[str, str], ...]
    slots: tuple[SlotSpec, ...]
    remove: tuple[str, ...]
    params: tuple[ParamSpec, ...]
    attended_keys: Formula | None
    source: str
    origin: str  # "shipped", "user" or "plug-in NAME"
    core_flops: tuple[FlopSpec, ...] = ()
    without: tuple[str, ...] = ()  # "mixer": the base's token mixer is not in this kind (a state-space layer's)
    tp_divides: tuple[str, ...] = ()  # symbols (model fields) whose counts TP must divide (heads it splits)


@dataclass(frozen=True)
class SlotOverride:
    kind: str
    slot: SlotSpec
    source: str
    origin: str


# ------------------------------------------------------------------------------------------- loading
_DIRS: list[tuple[Path, str]] = []
_SHIPPED = Path(__file__).parent  # the shipped kind files (importlib.resources: the same folder, ~5 ms of imports)


def add_kinds_dir(folder: str | Path, origin: str = "user") -> None:
    """Also read kind files from ``folder`` (again, if it is registered). A folder whose files do not load raises
    ConfigError (naming the file and key) and is not registered, so one broken file cannot make every estimate
    fail."""
    entry = (Path(folder), origin)
    if entry not in _DIRS:
        _DIRS.append(entry)
    _changed()  # registering again reads the folder again (a file added or edited since)
    try:
        registry()
    except ConfigError:
        _DIRS.remove(entry)
        _changed()
        raise


def remove_kinds_dir(folder: str | Path) -> None:
    for entry in [e for e in _DIRS if e[0] == Path(folder)]:
        _DIRS.remove(entry)
    _changed()


_GENERATION = [0]


def _changed() -> None:
    """Forget the registry; caches of what is derived from it key on ``generation()``."""
    _GENERATION[0] += 1
    registry.cache_clear()


def generation() -> int:
    """Changes whenever the registered folders change (params.parameter_counts keys its cache on it)."""
    return _GENERATION[0]


def _documents() -> Iterable[tuple[Any, str, str]]:
    """(YAML document, where, origin) of every kind file: shipped first (kept on disk per content of the files,
    ``data_cache``), then registered folders in order."""
    files = sorted((e for e in _SHIPPED.iterdir() if e.name.endswith(".yaml")), key=lambda e: e.name)
    shipped = cached_files("kinds", files,
                           lambda path: load_yaml(path.read_text(encoding="utf-8"), f"estimator/kinds/{path.name}"))
    for path, data in zip(files, shipped, strict=True):
        yield data, f"estimator/kinds/{path.name}", "shipped"
    for folder, origin in _DIRS:
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            where = str(path)  # regular files only, bounded (docs/limits.md); a YAML error at its line and column
            yield load_yaml(read_text(path), where), where, origin


def _list(value: Any, where: str, key: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(msg("fields.expected-list-got", value=value), path=where, key=key)
    return value


def _strings(value: Any, where: str, key: str, allowed: tuple[str, ...] | None = None) -> tuple[str, ...]:
    items = _list(value, where, key)
    for item in items:
        if not isinstance(item, str) or (allowed is not None and item not in allowed):
            hint = f" (one of {', '.join(allowed)})" if allowed else ""
            raise ConfigError(msg("kinds.valid-here", item=item, hint=hint), path=where, key=key)
    return tuple(items)


def _slot(raw: Any, where: str, key: str, need_bytes: bool) -> SlotSpec:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise ConfigError(msg("kinds.slot-mapping-least"), path=where, key=key)
    unknown = set(raw) - {"id", "bytes", "class", "switches", "when", "kind", "slot"}
    if unknown:
        raise ConfigError(msg("kinds.unknown-slot-key", unknown=', '.join(sorted(map(str, unknown)))), path=where,
                          key=key)
    if need_bytes and "bytes" not in raw:
        raise ConfigError(msg("kinds.slot-needs-bytes", raw=raw['id']), path=where, key=key)
    cls = raw.get("class")
    if cls is not None and cls not in CLASSES:
        raise ConfigError(msg("kinds.class-one", cls=cls, CLASSES=', '.join(CLASSES)), path=where, key=f"{key}.class")
    switches = raw.get("switches")
    return SlotSpec(
        raw["id"], parse_formula(raw["bytes"], where) if "bytes" in raw else None, cls,
        None if switches is None else _strings(switches, where, f"{key}.switches", SWITCHES),
        parse_formula(raw["when"], where) if "when" in raw else None)


def _kind(raw: Any, where: str, origin: str, key: str) -> KindDef:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ConfigError(msg("kinds.layer-kind-mapping"), path=where, key=key)
    unknown = set(raw) - KIND_KEYS
    if unknown:
        raise ConfigError(msg("kinds.unknown-layer-kind", unknown=', '.join(sorted(map(str, unknown))),
                              KIND_KEYS=', '.join(sorted(KIND_KEYS))), path=where, key=key)
    name, base = raw["name"], raw.get("base")
    if base not in BASES:
        raise ConfigError(msg("kinds.base-one", base=base, BASES=', '.join(BASES)), path=where, key=f"{key}.base")
    ffn = "moe" if base.endswith("moe") else "dense"
    if not name.endswith(ffn) or name.startswith("lin_") != base.startswith("lin_") or name in BASES \
            or name in ("noop", "vision") or not name.replace("_", "").replace(".", "").replace("-", "").isalnum():
        raise ConfigError(msg("kinds.kind-name-must", name=name, ffn=ffn), path=where,
                          key=f"{key}.name")
    match = raw.get("match") or {}
    if not isinstance(match, dict) or set(match) - {"layer_types", "model_types"}:
        raise ConfigError(msg("kinds.match-takes-layer_types"), path=where, key=f"{key}.match")
    symbols = raw.get("symbols") or {}
    if not isinstance(symbols, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in symbols.items()):
        raise ConfigError(msg("kinds.symbols-maps-formula"), path=where, key=f"{key}.symbols")
    params = []
    for i, p in enumerate(_list(raw.get("params"), where, f"{key}.params")):
        if not isinstance(p, dict) or p.get("class") not in PARAM_CLASSES or "elements" not in p \
                or set(p) - {"name", "class", "elements", "matmul"} or not isinstance(p.get("matmul", False), bool):
            raise ConfigError(msg("kinds.parameter-entry-has", PARAM_CLASSES=', '.join(PARAM_CLASSES)), path=where,
                              key=f"{key}.params[{i}]")
        params.append(ParamSpec(str(p.get("name", f"param{i}")), p["class"], parse_formula(p["elements"], where),
                                p.get("matmul", False)))
    flops = raw.get("flops") or {}
    if not isinstance(flops, dict) or set(flops) - {"attended_keys", "core"}:
        raise ConfigError(msg("kinds.flops-takes-attended_keys"), path=where, key=f"{key}.flops")
    core = []
    for i, c in enumerate(_list(flops.get("core"), where, f"{key}.flops.core")):
        if not isinstance(c, dict) or c.get("class") not in ("tp", "rep") or "per_token" not in c \
                or set(c) - {"name", "class", "per_token"}:
            raise ConfigError(msg("kinds.core-flops-entry"), path=where, key=f"{key}.flops.core[{i}]")
        core.append(FlopSpec(str(c.get("name", f"core{i}")), c["class"], parse_formula(c["per_token"], where)))
    without = _strings(raw.get("without"), where, f"{key}.without", ("mixer",))
    tp_divides = _strings(raw.get("tp_divides"), where, f"{key}.tp_divides", tuple(symbols))
    slots = tuple(_slot(s, where, f"{key}.slots[{i}]", need_bytes=False)
                  for i, s in enumerate(_list(raw.get("slots"), where, f"{key}.slots")))
    return KindDef(name, base, str(raw.get("description", "")),
                   _strings(match.get("layer_types"), where, f"{key}.match.layer_types"),
                   _strings(match.get("model_types"), where, f"{key}.match.model_types"),
                   tuple(symbols.items()), slots, _strings(raw.get("remove"), where, f"{key}.remove"),
                   tuple(params), parse_formula(flops["attended_keys"], where) if "attended_keys" in flops else None,
                   where, origin, tuple(core), without, tp_divides)


def _load_file(text: str, where: str, origin: str) -> tuple[list[KindDef], list[SlotOverride]]:
    return _load_document(load_yaml(text, where), where, origin)  # bounded, a YAML error at its line and column


def _load_document(data: Any, where: str, origin: str) -> tuple[list[KindDef], list[SlotOverride]]:
    data = data or {}
    if not isinstance(data, dict) or not set(data) & {"kind", "kinds", "overrides"}:
        raise ConfigError(msg("kinds.layer-kind-file"), path=where)
    unknown = set(data) - FILE_KEYS
    if unknown:
        raise ConfigError(msg("kinds.unknown-key-s", unknown=', '.join(sorted(map(str, unknown)))), path=where)
    raws = ([data["kind"]] if "kind" in data else []) + _list(data.get("kinds"), where, "kinds")
    kinds = [_kind(raw, where, origin, f"kinds[{i}]") for i, raw in enumerate(raws)]
    overrides = []
    for i, raw in enumerate(_list(data.get("overrides"), where, "overrides")):
        key = f"overrides[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str) or not isinstance(raw.get("slot"), str):
            raise ConfigError(msg("kinds.override-names-kind"), path=where, key=key)
        spec = _slot({**raw, "id": raw["slot"]}, where, key, need_bytes=False)
        if spec.bytes is None and spec.cls is None and spec.switches is None:
            raise ConfigError(msg("kinds.override-changes-bytes"), path=where, key=key)
        overrides.append(SlotOverride(raw["kind"], spec, where, origin))
    return kinds, overrides


@dataclass(frozen=True)
class Registry:
    kinds: dict[str, KindDef]
    overrides: tuple[SlotOverride, ...]


@cache
def registry() -> Registry:
    kinds: dict[str, KindDef] = {}
    overrides: list[SlotOverride] = []
    for data, where, origin in _documents():
        found, more = _load_document(data, where, origin)
        for kind in found:
            kinds[kind.name] = kind  # a later folder (user, plug-in) replaces a kind of the same name
        overrides.extend(more)
    return Registry(kinds, tuple(overrides))


def get_kind(name: str) -> KindDef | None:
    return registry().kinds.get(name)


def known_kinds() -> tuple[str, ...]:
    return tuple(registry().kinds)


def kind_for_layer(base: str, layer_type: str | None, model_type: str | None) -> str:
    """The data kind a layer of shipped kind ``base`` becomes in a model of ``model_type`` whose HF
    ``layer_types`` entry is ``layer_type``: the most specific match (model type and layer type, then model
    type, then layer type); ``base`` when none matches."""
    best: tuple[int, str] | None = None
    for kind in registry().kinds.values():
        if kind.base != base or not (kind.layer_types or kind.model_types):
            continue
        if kind.layer_types and layer_type not in kind.layer_types:
            continue
        if kind.model_types and model_type not in kind.model_types:
            continue
        score = 2 * bool(kind.model_types) + bool(kind.layer_types)
        if best is None or score > best[0]:
            best = (score, kind.name)
    return best[1] if best else base


def claims_layer_type(layer_type: str, model_type: str | None) -> bool:
    """Whether a kind described as data prices layers of ``layer_type`` in a model of ``model_type``."""
    return any(kind_for_layer(base, layer_type, model_type) != base for base in BASES)


def base_of(kind: str) -> str:
    got = get_kind(kind)
    return got.base if got else kind


def inherited(kind: KindDef) -> dict[str, Any]:
    """What a kind file needs to restate ``kind`` on its root base besides slots (``sapp measure -o`` writes it for
    a measured data kind): its symbols, missing mixer, TP divisors, parameters and FLOPs, as the file spells them."""
    out: dict[str, Any] = {}
    if kind.symbols:
        out["symbols"] = dict(kind.symbols)
    if kind.without:
        out["without"] = list(kind.without)
    if kind.tp_divides:
        out["tp_divides"] = list(kind.tp_divides)
    if kind.params:
        out["params"] = [{"name": p.name, "class": p.cls, "elements": p.elements.text, **({"matmul": True}
                                                                                          if p.matmul else {})}
                         for p in kind.params]
    flops: dict[str, Any] = {}
    if kind.attended_keys is not None:
        flops["attended_keys"] = kind.attended_keys.text
    if kind.core_flops:
        flops["core"] = [{"name": c.name, "class": c.cls, "per_token": c.per_token.text} for c in kind.core_flops]
    if flops:
        out["flops"] = flops
    return out


def has_mixer(kind: str) -> bool:
    """Whether a layer of ``kind`` has its base's token mixer (attention, MLA or gated-delta linear attention):
    its parameters, slots (all but the mixer's input norm and the residual dropout) and FLOPs. A kind ``without:
    [mixer]`` brings its own (a Mamba-2 layer: estimator/kinds/mamba2.yaml)."""
    got = get_kind(kind)
    return got is None or "mixer" not in got.without


# ------------------------------------------------------------------------------------------- symbols
def model_symbols(model: Any, kinds: Iterable[str]) -> tuple[tuple[str, float], ...]:
    """Values of the symbols the data kinds in ``kinds`` declare, from the ModelSpec (Dims carries them)."""
    out: dict[str, float] = {}
    for name in dict.fromkeys(kinds):
        kind = get_kind(name)
        if kind is None:
            continue
        for symbol, field_name in kind.symbols:
            value = getattr(model, field_name, None)
            if isinstance(value, bool):
                value = float(value)  # a switch: 1 or 0 in a formula
            if not isinstance(value, (int, float)):
                raise ModelSpecError(msg("kinds.layer-kind-needs", name=name, source=kind.source, field_name=field_name,
                                         symbol=symbol))
            out[symbol] = float(value)
    return tuple(sorted(out.items()))


def tp_divisors(model: Any) -> tuple[tuple[str, int], ...]:
    """(model field, count) that TP must divide for the data kinds of ``model`` (their ``tp_divides``: the heads and
    groups a kind's own mixer splits across TP ranks, as Megatron asserts); a field the model lacks is left to the
    kind's symbol check, which refuses it by name."""
    out: dict[str, int] = {}
    for name in dict.fromkeys((*model.body_kinds(), *model.mtp_kinds())):
        kind = get_kind(name)
        for symbol in kind.tp_divides if kind else ():
            field_name = dict(kind.symbols)[symbol]
            value = getattr(model, field_name, None)
            if isinstance(value, int) and not isinstance(value, bool):
                out[field_name] = value
    return tuple(out.items())


def symbols(dims: Any, widths: Any = None, flags: Any = None, s: float | None = None) -> dict[str, Any]:
    """The names a formula may use: every Dims field (h, a, n_kv, dh, dv, dqk, hff, hff_exp, n_exp, n_chosen, …),
    q_w, k_w, v_w, o_w, the kind symbols, the widths as b_p, b_c, b_g, b_m, b_os, b_sm, b_dm, b_n, b_r, b_l,
    the flags flash, kv_repeat, fused_act, norm_stats, and s (the key length)."""
    out: dict[str, Any] = {k: v for k, v in vars(dims).items() if k != "kind_symbols"}
    out.update(q_w=dims.q_w, k_w=dims.k_w, v_w=dims.v_w, o_w=dims.o_w)
    out.update(dict(getattr(dims, "kind_symbols", ())))
    if widths is not None:
        out.update({f"b_{k}": v for k, v in vars(widths).items() if k != "n_os"})
    if flags is not None:
        out.update(flash=flags.flash_attention, kv_repeat=flags.kv_repeat, fused_act=flags.fused_act,
                   norm_stats=flags.norm_stats)
    if s is not None:
        out["s"] = s
    return out


# ------------------------------------------------------------------------------------------- slots
def _matches(override: SlotOverride, kind: str) -> bool:
    return override.kind in ("*", kind)


def apply_slots(kind: str, slots: tuple, dims: Any, widths: Any, flags: Any, s: float,
                make: Callable[..., Any]) -> tuple:
    """The slot table of ``kind``: the base kind's slots (``slots``), edited by the kind's file (a slot whose
    ``when`` is false is absent), then by the overrides that name it. ``make(id, bytes, cls, switches)``
    builds a new slot (activations.SlotDef)."""
    data = get_kind(kind)
    overrides = [o for o in registry().overrides if _matches(o, kind)]
    if data is None and not overrides:
        return slots
    names = symbols(dims, widths, flags, s)
    out = list(slots)
    if data is not None:
        out = [slot for slot in out if slot.id not in data.remove]
        for spec in data.slots:
            if spec.when is not None and not spec.when(names):
                out = [slot for slot in out if slot.id != spec.id]
            else:
                out = _edit(out, spec, names, kind, data.source, make)
    for override in overrides:
        if override.slot.when is None or override.slot.when(names):
            out = _edit(out, override.slot, names, kind, None, make)
    return tuple(out)


def _edit(out: list, spec: SlotSpec, names: dict[str, Any], kind: str, source: str | None,
          make: Callable[..., Any]) -> list:
    index = next((i for i, slot in enumerate(out) if slot.id == spec.id), None)
    if index is None:
        if spec.bytes is None or spec.cls is None:
            if source is not None:
                raise ConfigError(msg("kinds.slot-new-kind", id=spec.id, kind=kind), path=source)
            return out  # an override of a slot this kind does not have
        return [*out, make(spec.id, float(spec.bytes(names)), spec.cls, frozenset(spec.switches or ()))]
    old = out[index]
    new = replace(old, bytes=float(spec.bytes(names)) if spec.bytes is not None else old.bytes,
                  cls=spec.cls or old.cls,
                  switches=frozenset(spec.switches) if spec.switches is not None else old.switches)
    return [*out[:index], new, *out[index + 1:]]


def applied_overrides(kinds: Iterable[str]) -> list[tuple[str, SlotOverride]]:
    """(kind, override) for every override that names one of ``kinds``."""
    out = []
    for kind in dict.fromkeys(kinds):
        out.extend((kind, o) for o in registry().overrides if _matches(o, kind))
    return out


# ------------------------------------------------------------------------------------------- params, FLOPs
def extra_params(dims: Any, kind: str) -> dict[str, float]:
    """Parameter elements a data kind adds, by class (tp, rep, exp), and those of them that are matmul weights
    (tp_mm, rep_mm: each token multiplies them)."""
    data = get_kind(kind)
    out = dict.fromkeys((*PARAM_CLASSES, "tp_mm", "rep_mm"), 0.0)
    if data is None:
        return out
    names = symbols(dims)
    for p in data.params:
        elements = float(p.elements(names))
        out[p.cls] += elements
        if p.matmul and p.cls in ("tp", "rep"):
            out[f"{p.cls}_mm"] += elements
    return out


def extra_core_flops(kind: str, dims: Any, s: Any) -> tuple[Any, Any]:
    """Forward FLOPs per token a data kind's core adds: (split across TP, replicated on every TP rank)."""
    data = get_kind(kind)
    if data is None or not data.core_flops:
        return 0.0, 0.0
    names = symbols(dims, s=s)
    tp = sum((c.per_token(names) for c in data.core_flops if c.cls == "tp"), 0.0)
    rep = sum((c.per_token(names) for c in data.core_flops if c.cls == "rep"), 0.0)
    return tp, rep


def attended_keys(kind: str, dims: Any, s: Any) -> Any:
    """Keys each query attends in the attention core by the kind's formula; None: the shipped κ·s."""
    data = get_kind(kind)
    if data is None or data.attended_keys is None:
        return None
    return data.attended_keys(symbols(dims, s=s))


# ------------------------------------------------------------------------------------------- said out loud
def notes(kind: str) -> str:
    """For Explain: "; layer kind K described by FILE; slot S overridden by FILE" ("" for a shipped kind)."""
    out = ""
    data = get_kind(kind) if kind else None
    if data is not None:
        out += f"; layer kind {kind} described by {data.source}"
    for _, override in applied_overrides((kind,)) if kind else ():
        out += f"; slot {override.slot.id} overridden by {override.source}"
    return out


def data_kind_assumptions(kinds: Iterable[str]) -> list[Any]:
    """An assumption for every kind described as data and every slot override in use, naming its file."""
    from ..warnings import Assumption

    out = []
    used = tuple(dict.fromkeys(kinds))
    for name in used:
        data = get_kind(name)
        if data is not None:
            description = data.description.rstrip(": ")
            said = msg("kinds.described-by.description", source=data.source, origin=data.origin,
                       description=description) if description else \
                msg("kinds.described-by", source=data.source, origin=data.origin)
            out.append(Assumption(f"layer kind {name}", data.base, said))
    for name, override in applied_overrides(used):
        slot = override.slot
        value = slot.bytes.text if slot.bytes is not None else (slot.cls or ",".join(slot.switches or ()))
        out.append(Assumption(f"slot {slot.id} of {name}", value, msg("kinds.overridden", source=override.source)))
    return out
