"""ParsedConfig: what the readers produce — the four records, where every value came from, and the source
files (kept for writing a strategy back) — plus the edit rule ``apply_changes`` that ``estimator.session`` applies
for every front end (``--set``, the app, search and balance results).

Readers fill a flat ``{"section.field": value}`` mapping with a Provenance per key; ``build_plan`` turns it
into records. Edits keep the device count N and the global batch G fixed (docs/model.md#inputs-and-outputs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, LayoutError, SappError
from .fields import REGISTRY, coerce, lookup, recompute_value
from .frameworks import framework_defaults
from .hardware import Hardware, find_preset, load_presets
from .limits import check_totals
from .messages import msg
from .model import LayerGroup, ModelSpec, VisionSpec
from .options import FRAMEWORKS, RunOptions
from .strategy import RecomputePlan, ShardingSpec, Strategy
from .warnings import Assumption, EstimateWarning, plain


@dataclass(frozen=True)
class Provenance:
    """Where a value came from: ``source`` is file | default | preset | edit | derived."""

    source: str
    path: str | None = None
    key: str | None = None
    raw: Any = None

    def describe(self) -> str:
        if self.source == "file":
            return f"{self.path}: {self.key}" + (f" = {plain(self.raw)}" if self.raw is not None else "")
        if self.source == "preset":
            return f"device preset {self.raw}"
        if self.source == "derived":
            return f"derived: {self.key}"
        return self.source + (f" ({self.key})" if self.key else "")


@dataclass(frozen=True)
class SourceFile:
    path: str
    format: str   # plan | hf_config | mindformers | mindspeed_script | mindspeed_model | torchtitan | hyperparallel
    role: str     # model | strategy | both
    text: str = ""


@dataclass(frozen=True)
class ParsedConfig:
    model: ModelSpec
    strategy: Strategy
    hardware: Hardware
    options: RunOptions
    provenance: dict[str, Provenance] = field(default_factory=dict)
    warnings: tuple[EstimateWarning, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    sources: tuple[SourceFile, ...] = ()
    values: dict[str, Any] = field(default_factory=dict)  # the flat values the records were built from
    file_strategy: Strategy | None = None  # the strategy as the source files state it (before edits)

    @property
    def framework(self) -> str:
        return self.options.framework

    @property
    def baseline_strategy(self) -> Strategy:
        """What the source files say; writers compare against it to touch only what changed."""
        return self.file_strategy or self.strategy

    def describe(self, qualified: str) -> str:
        prov = self.provenance.get(qualified)
        return prov.describe() if prov else "default"

    def locate(self, error: BaseException) -> BaseException:
        """``error`` naming the file and key of the value it is about, when it is a layout error about a value read
        from a file (the offsets, the layer list, the chunks): the CLI and the app say where to fix it."""
        if not isinstance(error, LayoutError) or error.path:
            return error
        field = next((f for prefix, f in _LAYOUT_FIELDS if error.code.startswith(prefix)), None)
        if field == "strategy.offset" and self.strategy.partition is not None:
            field = "strategy.partition"
        prov = self.provenance.get(field or "")
        if prov is None or prov.source != "file" or not prov.path or not prov.key:
            return error
        return error.located(prov.path, prov.key)


# the strategy field a layout error is about, by its code
_LAYOUT_FIELDS = (("E-OFF-", "strategy.offset"), ("E-PART-", "strategy.partition"), ("E-VPP-", "strategy.vpp"),
                  ("E-ZBV-", "strategy.vpp"))


# --------------------------------------------------------------------------------------- building
_NESTED_MODEL = {"vision": VisionSpec, "layers": LayerGroup}


def _model_from(values: dict[str, Any], where: str | None) -> ModelSpec:
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if not key.startswith("model."):
            continue
        name = key.split(".", 1)[1]
        if name == "vision" and isinstance(value, dict):
            try:
                value = VisionSpec.from_dict(value)
            except (KeyError, TypeError) as exc:
                raise ConfigError(msg("parsed.bad-vision-tower", exc=exc), path=where, key=key) from None
        elif name == "layers" and isinstance(value, (list, tuple)):
            try:
                value = tuple(LayerGroup.from_dict(v) if isinstance(v, dict) else v for v in value)
            except (KeyError, TypeError) as exc:
                raise ConfigError(msg("parsed.bad-layer-group", exc=exc), path=where, key=key) from None
        kwargs[name] = value
    missing = [n for n in ("hidden_size", "num_layers", "num_attention_heads", "vocab_size") if kwargs.get(n) is None]
    if missing:
        raise ConfigError(msg("parsed.model-missing", fields=", ".join(f"model.{n}" for n in missing)),
                          path=where, key=f"model.{missing[0]}")
    return ModelSpec(**kwargs)


def _strategy_from(values: dict[str, Any], where: str | None) -> Strategy:
    top: dict[str, Any] = {}
    rec: dict[str, Any] = {}
    shard: dict[str, Any] = {}
    for key, value in values.items():
        if not key.startswith("strategy."):
            continue
        info = REGISTRY[key]
        if info.name == "recompute":
            attr, converted = recompute_value(value, where)
            rec[attr] = converted
        elif info.path[0] == "recompute":
            rec[info.attr] = value
        elif info.path[0] == "sharding":
            shard[info.attr] = value
        else:
            top[info.attr] = value
    if top.get("seq_length") is None:
        raise ConfigError(msg("parsed.strategy-missing-strategy"),
                          path=where, key="strategy.seq_length")
    return Strategy(recompute=RecomputePlan(**rec), sharding=ShardingSpec(**shard), **top)


def _options_from(values: dict[str, Any]) -> RunOptions:
    kwargs = {key.split(".", 1)[1]: v for key, v in values.items() if key.startswith("options.")}
    return RunOptions(**kwargs)


def _hardware_from(values: dict[str, Any], framework: str, provenance: dict[str, Provenance],
                   assumptions: list[Assumption], preset_dirs: tuple = ()) -> Hardware:
    device = values.get("hardware.device")
    presets = load_presets(preset_dirs)
    if device is None:
        device = framework_defaults(framework).default_device
        assumptions.append(Assumption("hardware.device", device, msg("parsed.usual-device", framework=framework)))
        provenance.setdefault("hardware.device", Provenance("default", key=f"{framework} usual device"))
    hw = find_preset(str(device), presets)
    changes = {k.split(".", 1)[1]: v for k, v in values.items()
               if k.startswith("hardware.") and k != "hardware.device" and v is not None}
    if "capacity" not in changes:
        provenance.setdefault("hardware.capacity", Provenance("preset", raw=hw.id))
    return hw.replace(**changes) if changes else hw


def build_plan(values: dict[str, Any], provenance: dict[str, Provenance] | None = None, *,
               where: str | None = None, warnings: tuple[EstimateWarning, ...] = (),
               sources: tuple[SourceFile, ...] = (), preset_dirs: tuple = ()) -> ParsedConfig:
    """Records from flat canonical values (already coerced)."""
    provenance = dict(provenance or {})
    framework = values.get("options.framework")
    if not framework:
        raise ConfigError(msg("parsed.options-framework-required", FRAMEWORKS=', '.join(FRAMEWORKS)), path=where,
                          key="options.framework")
    framework_defaults(str(framework))  # validates the name
    assumptions: list[Assumption] = []
    try:
        model = _model_from(values, where)
        strategy = _strategy_from(values, where)
        options = _options_from(values)
        check_totals(strategy, where)
    except TypeError as exc:  # a value of the wrong shape reached a record
        raise ConfigError(msg("parsed.invalid-value", exc=exc), path=where) from None
    hardware = _hardware_from(values, str(framework), provenance, assumptions, preset_dirs)
    return ParsedConfig(model=model, strategy=strategy, hardware=hardware, options=options, provenance=provenance,
                        warnings=tuple(warnings), assumptions=tuple(assumptions), sources=tuple(sources),
                        values=dict(values))


def set_value(values: dict[str, Any], qualified: str, raw: Any, where: str | None = None) -> str:
    """Coerce ``raw`` for ``qualified`` into ``values``; returns the canonical key."""
    info = lookup(qualified, where)
    values[info.qualified] = coerce(info, raw, where)
    return info.qualified


# ------------------------------------------------------------------------------------------- edits
def apply_changes(parsed: ParsedConfig, changes: dict[str, Any], *, hold: str = "world") -> ParsedConfig:
    """Apply ``{"section.field": value}`` edits keeping the device count N and global batch G fixed.

    A new tp, pp or cp re-derives dp = N/(tp·pp·cp); a new dp or micro_batch_size re-derives
    micro_batches = G/(dp·micro_batch_size·n_acc). With ``hold="dp"`` dp stays and N follows. A non-integer
    result is an error naming both fields.
    """
    values = dict(parsed.values)
    provenance = dict(parsed.provenance)
    st = parsed.strategy
    world, batch = st.world_size, st.global_batch_size
    touched: list[str] = []
    for qualified, raw in changes.items():
        key = set_value(values, qualified, raw)
        provenance[key] = Provenance("edit", raw=raw)
        touched.append(key)
        _check_positive(key, values[key])
    get = values.get
    if "strategy.tp" in touched and "strategy.sequence_parallel" not in touched and \
            values.get("options.framework") == "torchtitan":
        values["strategy.sequence_parallel"] = int(get("strategy.tp") or 1) > 1  # torchtitan TP is always SP
    tp, pp, cp = (int(get(f"strategy.{k}") or 1) for k in ("tp", "pp", "cp"))
    if any(k in touched for k in ("strategy.tp", "strategy.pp", "strategy.cp")) and \
            "strategy.dp" not in touched and hold == "world":
        if world % (tp * pp * cp):
            changed = next(k for k in touched if k in ("strategy.tp", "strategy.pp", "strategy.cp"))
            raise ConfigError(msg("parsed.makes-strategy-dp", changed=changed, world=world, tp=tp, pp=pp, cp=cp,
                                  value=world / (tp * pp * cp)),
                              key=changed)
        values["strategy.dp"] = world // (tp * pp * cp)
        provenance["strategy.dp"] = Provenance("derived", key=f"N/(tp·pp·cp) = {world}/{tp * pp * cp}")
        _drop_hsdp_split(values)
    dp = int(get("strategy.dp") or 1)
    dp_changed = dp != int(parsed.values.get("strategy.dp") or 1)
    batch_keys = ("strategy.micro_batch_size", "strategy.n_acc")
    if "strategy.micro_batches" not in touched and (dp_changed or any(k in touched for k in batch_keys)):
        mbs = int(get("strategy.micro_batch_size") or 1)
        n_acc = int(get("strategy.n_acc") or 1)
        if batch % (dp * mbs * n_acc):
            cause = next((k for k in touched if k in ("strategy.dp", "strategy.micro_batch_size", "strategy.n_acc")),
                         "strategy.dp")
            raise ConfigError(msg("parsed.makes-strategy-micro_batches", cause=cause, batch=batch, dp=dp, mbs=mbs,
                                  n_acc=n_acc, value=batch / (dp * mbs * n_acc)), key=cause)
        values["strategy.micro_batches"] = batch // (dp * mbs * n_acc)
        provenance["strategy.micro_batches"] = Provenance("derived", key=f"G/(dp·mbs·n_acc) = {batch}/"
                                                                        f"{dp * mbs * n_acc}")
    warnings = [w for w in parsed.warnings if w.code != "W-LAYOUT-RESCALED"]  # said again when it happens again
    layout_keys = ("strategy.offset", "strategy.partition", "strategy.recompute", "strategy.full_counts",
                   "strategy.sel_counts", "strategy.comm_counts")
    if any(k in touched for k in ("strategy.pp", "strategy.vpp")) and not any(k in touched for k in layout_keys):
        _rescale_lists(parsed, values, provenance, warnings)
    rebuilt = build_plan(values, provenance, warnings=tuple(warnings), sources=parsed.sources)
    kept = tuple(a for a in parsed.assumptions if a.field not in touched)
    return dataclasses.replace(rebuilt, hardware=_keep_hardware(parsed, rebuilt, touched), assumptions=kept,
                               file_strategy=parsed.baseline_strategy)


def _rescale_lists(parsed: ParsedConfig, values: dict[str, Any], provenance: dict[str, Provenance],
                   warnings: list[EstimateWarning]) -> None:
    """New PP/VPP: map the user's offsets/partition and per-stage recompute counts proportionally
    (docs/model.md#rescaling)."""
    from .estimate import layout_inputs
    from .layout import build_layout
    from .rescale import rescale
    from .resolve import resolve

    st = parsed.strategy
    p_new, vp_new = int(values.get("strategy.pp") or 1), int(values.get("strategy.vpp") or 1)
    vision = values.get("strategy.vision_partition") == st.vision_partition and \
        _rescale_vision(st.vision_partition, p_new, values, provenance)  # (unless edited along with pp)
    lists = {"strategy.offset": st.offset, "strategy.partition": st.partition,
             "strategy.recompute": st.recompute.full_counts if isinstance(st.recompute.full_counts, tuple) else None,
             "strategy.sel_counts": st.recompute.sel_counts if isinstance(st.recompute.sel_counts, tuple) else None,
             "strategy.comm_counts": st.recompute.comm_counts if isinstance(st.recompute.comm_counts, tuple) else None}
    if all(v is None for v in lists.values()):
        if vision:
            mapped = list(values["strategy.vision_partition"])
            warnings.append(EstimateWarning("W-LAYOUT-RESCALED", msg("W-LAYOUT-RESCALED", p_new=p_new, mapped=mapped)))
        return
    try:
        layout = build_layout(layout_inputs(resolve(parsed.model, st, parsed.hardware, parsed.options)))
    except SappError:
        return  # the old layout was already invalid: nothing sensible to rescale from
    new = rescale(st, layout, p_new, vp_new)
    # per-stage full-recompute counts live in strategy.recompute or strategy.full_counts, as the plan wrote them
    counts_key = "strategy.full_counts" if "strategy.full_counts" in values else "strategy.recompute"
    for key, value in (("strategy.offset", new.offset), ("strategy.partition", new.partition),
                       (counts_key, new.recompute.full_counts if lists["strategy.recompute"] else None),
                       ("strategy.sel_counts", new.recompute.sel_counts if lists["strategy.sel_counts"] else None),
                       ("strategy.comm_counts", new.recompute.comm_counts if lists["strategy.comm_counts"] else None)):
        if lists["strategy.recompute" if key == counts_key else key] is not None:
            values[key] = value
            provenance[key] = Provenance("derived", key=f"rescaled to pp {p_new} × vpp {vp_new}")
    said = msg("W-LAYOUT-RESCALED.layers-vision", p=p_new, vp=vp_new) if vision else \
        msg("W-LAYOUT-RESCALED.layers", p=p_new, vp=vp_new)
    warnings.append(EstimateWarning("W-LAYOUT-RESCALED", said))


def _rescale_vision(partition: tuple[int, ...] | None, p_new: int, values: dict[str, Any],
                    provenance: dict[str, Provenance]) -> bool:
    """A vision tower's layers per stage follow a new pipeline degree (a tower on the first stages stays
    there), as the search maps them; without this a MindSpeed-MM plan refused its own pp edit (E-PART-SUM)."""
    from .rescale import rescale_vision

    if partition is None or len(partition) == p_new:
        return False
    values["strategy.vision_partition"] = rescale_vision(partition, p_new)
    provenance["strategy.vision_partition"] = Provenance("derived", key=f"vision layers rescaled to pp {p_new}")
    return True


_POSITIVE = ("strategy.tp", "strategy.pp", "strategy.cp", "strategy.dp", "strategy.vpp", "strategy.ep",
             "strategy.etp", "strategy.micro_batch_size", "strategy.micro_batches", "strategy.n_acc")


def _check_positive(key: str, value: Any) -> None:
    """Degrees and batch counts are whole numbers ≥ 1: an edit to 0 or below is refused here, by name, before
    any rule divides by it."""
    if key in _POSITIVE and value is not None and not isinstance(value, bool) and isinstance(value, int) \
            and value < 1:
        raise ConfigError(msg("parsed.must-least", key=key, value=value), key=key)


def _drop_hsdp_split(values: dict[str, Any]) -> None:
    """A re-derived dp invalidates an explicit d_rep × d_sh split; keep d_rep when it still divides."""
    dp = values.get("strategy.dp") or 1
    d_rep = values.get("strategy.d_rep")
    if d_rep and dp % d_rep == 0:
        values["strategy.d_sh"] = dp // d_rep
    else:
        values.pop("strategy.d_rep", None)
        values.pop("strategy.d_sh", None)


def _keep_hardware(old: ParsedConfig, new: ParsedConfig, touched: list[str]) -> Hardware:
    """Hardware edited outside ``values`` (e.g. a user preset object) survives unrelated edits."""
    if any(k.startswith("hardware.") for k in touched):
        return new.hardware
    return old.hardware
