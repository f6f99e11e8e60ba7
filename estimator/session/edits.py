"""What an edit does, for every front end (``sapp … --set``, ``search --apply``, ``balance -o``, the app):
the hold rules and per-stage rescaling of ``estimator.parsed.apply_changes``, device presets applied as
Hardware records (so user presets work like shipped ones), the edit that turns one strategy into another,
the values a degree field steps through, and which field an error belongs to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError, SappError, Violation
from ..fields import ALIASES
from ..hardware import Hardware, find_preset
from ..messages import ENGLISH, Text, localize, msg, reason
from ..parsed import ParsedConfig, Provenance, apply_changes
from ..strategy import Strategy
from ..units import parse_size
from .history import PlanState

HOLD_WORLD = "world"   # a new tp/pp/cp re-derives dp: the device count stays
HOLD_DP = "dp"         # dp stays: the device count follows
HOLDS = (HOLD_WORLD, HOLD_DP)
_KEEP = object()

# estimator rule / layout codes -> the fields the message belongs to (docs/model.md#layout, docs/model.md#search)
CODE_FIELDS: dict[str, tuple[str, ...]] = {
    "R-CP-SEQ": ("strategy.cp", "strategy.seq_length"),
    "R-CP-SP": ("strategy.cp", "strategy.sequence_parallel"),
    "R-CP-ULY": ("strategy.cp", "strategy.cp_algo"),
    "R-DPV-MB": ("strategy.micro_batches", "strategy.schedule"),
    "R-EP-DENSE": ("strategy.ep",),
    "R-EP-EXP": ("strategy.ep",),
    "R-EP-LAYOUT": ("strategy.ep", "strategy.etp"),
    "R-ETP-FFN": ("strategy.etp",),
    "R-MB-PP": ("strategy.micro_batches", "strategy.pp"),
    "R-MOE-SP": ("strategy.sequence_parallel", "strategy.ep"),
    "R-OS-DIV": ("strategy.shard_size",),
    "R-PP-LAYERS": ("strategy.pp",),
    "R-SP-SEQ": ("strategy.sequence_parallel", "strategy.seq_length"),
    "R-SP-T1": ("strategy.sequence_parallel", "strategy.tp"),
    "R-TP-FFN": ("strategy.tp",),
    "R-TP-HEADS": ("strategy.tp",),
    "R-TP-KIND": ("strategy.tp",),
    "R-TP-KV": ("strategy.tp",),
    "R-VPP-DIV": ("strategy.vpp",),
    "R-VPP-MB": ("strategy.vpp", "strategy.micro_batches"),
    "R-VPP-SCHED": ("strategy.vpp", "strategy.schedule"),
    "E-OFF": ("strategy.pp",),
    "E-PART": ("strategy.pp",),
    "E-REC": ("strategy.recompute", "strategy.full_counts"),
    "E-RANGE": ("strategy.recompute",),
    "E-VPP": ("strategy.vpp",),
    "E-ZBV": ("strategy.vpp", "strategy.schedule"),
}
_TOKEN_FIELDS = {"TP": "strategy.tp", "PP": "strategy.pp", "CP": "strategy.cp", "EP": "strategy.ep",
                 "ETP": "strategy.etp", "VPP": "strategy.vpp", "SP": "strategy.sequence_parallel",
                 "MB": "strategy.micro_batches", "OS": "strategy.shard_size", "DP": "strategy.dp"}
_PER_STAGE_LISTS = ("offset", "partition", "full_counts", "sel_counts", "comm_counts")


class EditError(SappError):
    """An edit that cannot be applied; ``errors`` maps canonical field names to messages."""

    def __init__(self, errors: dict[str, str], message: str, cause: BaseException | None = None,
                 touched: Sequence[str] = ()) -> None:
        self.errors = errors
        self.cause = cause
        self.touched = tuple(touched)
        super().__init__(message)

    def errors_in(self, language: str) -> dict[str, str]:
        """``errors`` said in ``language``."""
        return error_fields(self.cause, self.touched, language) if self.cause is not None else self.errors


def canonical_key(key: str) -> str:
    return ALIASES.get(key, key)


# ---------------------------------------------------------------------------------------- proposing
def propose(current: ParsedConfig, changes: dict[str, Any], *, hold: str = HOLD_WORLD,
            presets: Sequence[Hardware] = ()) -> PlanState:
    """The state after ``changes`` ({"strategy.tp": 8, ...}); raises EditError naming the fields. Strategy,
    model and options edits follow ``apply_changes`` (hold rules, per-stage lists rescaled for a new pp/vpp);
    a device edit takes the preset's capacity unless the capacity is edited too."""
    if hold not in HOLDS:
        raise ValueError(f"hold must be one of {HOLDS}, not {hold!r}")
    changes = {canonical_key(k): v for k, v in changes.items()}
    touched = list(changes)
    hw_changes = {k: v for k, v in changes.items() if k.startswith("hardware.")}
    rest = {k: v for k, v in changes.items() if not k.startswith("hardware.")}
    try:
        parsed = apply_changes(current, rest, hold=hold) if rest else current
        if hw_changes:
            parsed = apply_hardware(parsed, hw_changes, presets)
    except SappError as exc:
        raise EditError(error_fields(exc, touched), str(getattr(exc, "bare_message", exc)), exc, touched) from None
    return PlanState(parsed, layout_notes(current.strategy, parsed.strategy), touched=tuple(touched))


def apply_hardware(parsed: ParsedConfig, changes: dict[str, Any], presets: Sequence[Hardware]) -> ParsedConfig:
    """Device presets are applied as Hardware records, so user presets work like shipped ones."""
    provenance = dict(parsed.provenance)
    hardware = parsed.hardware
    if "hardware.device" in changes:
        hardware = find_preset(str(changes["hardware.device"]), tuple(presets))
        provenance["hardware.device"] = Provenance("edit", raw=changes["hardware.device"])
        provenance["hardware.capacity"] = Provenance("preset", raw=hardware.id)
    if changes.get("hardware.capacity") is not None:
        try:
            capacity = parse_size(changes["hardware.capacity"])
        except ValueError as exc:
            raise ConfigError(reason(exc), key="hardware.capacity") from None
        if capacity <= 0:
            raise ConfigError(msg("edits.capacity-must-positive"), key="hardware.capacity")
        hardware = hardware.replace(capacity=capacity)
        provenance["hardware.capacity"] = Provenance("edit", raw=changes["hardware.capacity"])
    return dataclasses.replace(parsed, hardware=hardware, provenance=provenance)


def layout_notes(before: Strategy, after: Strategy) -> tuple[Text, ...]:
    """What a new pipeline depth did to the per-stage lists written for the old one (one line per list)."""
    if (before.pp, before.vpp) == (after.pp, after.vpp):
        return ()
    notes = []
    for name in _PER_STAGE_LISTS:
        old = _list_of(before, name)
        new = _list_of(after, name)
        if old is not None and old != new:
            notes.append(msg("edits.list-rescaled", name=name, old=_show(old), p=before.pp, vp=before.vpp,
                             new=_show(new), p_new=after.pp, vp_new=after.vpp))
    return tuple(notes)


def _list_of(strategy: Strategy, name: str) -> Any:
    value = getattr(strategy.recompute, name) if name.endswith("_counts") else getattr(strategy, name)
    return value if isinstance(value, tuple) else None


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return "unset" if value is None else str(value)


# ------------------------------------------------------------------------------- edits from strategies
def changes_to(current: Strategy, strategy: Strategy, *, pin: Sequence[str] = ()) -> dict[str, Any]:
    """The edit (canonical ``strategy.*`` keys) that turns ``current`` into ``strategy``: every field whose
    canonical value differs (``strategy_fields``), plus the fields in ``pin`` even when equal (a search result
    gives dp and the micro-batch count together with the degrees, so the hold rules must not re-derive them)."""
    from ..formats.plan_writer import strategy_fields  # ruamel: only when a strategy is turned into an edit

    before, after = strategy_fields(current), strategy_fields(strategy)
    changes = {f"strategy.{k}": v for k, v in after.items() if before.get(k) != v}
    for name in pin:
        changes[f"strategy.{name}"] = after[name]
    return changes


def recompute_changes(parsed: ParsedConfig, *, mode: str | None = None, counts: Any = _KEEP) -> dict[str, Any]:
    """Edits that set the recompute mode and/or the per-stage full-recompute counts independently
    (a plan may hold counts in ``strategy.recompute`` itself)."""
    plan = parsed.strategy.recompute
    raw = parsed.values.get("strategy.recompute")
    counts_in_mode_key = raw is not None and not isinstance(raw, (str, bool))
    new_counts = plan.full_counts if counts is _KEEP else counts
    out: dict[str, Any] = {"strategy.recompute": mode if mode is not None else plan.default_mode}
    if new_counts is not None or counts_in_mode_key or "strategy.full_counts" in parsed.values:
        out["strategy.full_counts"] = list(new_counts) if isinstance(new_counts, tuple) else new_counts
    return out


def step_candidates(parsed: ParsedConfig, key: str, hold: str = HOLD_WORLD) -> list[int] | None:
    """Values a degree field steps through so that the held quantities stay integral; None means plain ±1."""
    from ..search.candidates import divisors

    key = canonical_key(key)
    st = parsed.strategy
    world, batch = st.world_size, st.global_batch_size
    degrees = {"strategy.tp": st.tp, "strategy.pp": st.pp, "strategy.cp": st.cp}
    if key in degrees:
        if hold == HOLD_WORLD:
            others = 1
            for k, v in degrees.items():
                if k != key:
                    others *= v
            return divisors(world // others) if world % others == 0 else None
        return sorted({1 << i for i in range(11)} | {degrees[key]})
    if key == "strategy.dp":
        return divisors(batch // (st.micro_batch_size * st.n_acc))
    if key == "strategy.micro_batch_size":
        return divisors(batch // (st.dp * st.n_acc))
    if key == "strategy.ep" and parsed.model.num_experts:
        return divisors(parsed.model.num_experts)
    return None


# ----------------------------------------------------------------------------------------- errors
def error_fields(exc: BaseException, touched: Sequence[str] = (), language: str = ENGLISH) -> dict[str, str]:
    """Which fields show an error's message (in ``language``): the key a ConfigError names, the fields of each
    violated rule, and the fields the edit touched."""
    out: dict[str, list[str]] = {}

    def add(key: str, message: str) -> None:
        messages = out.setdefault(canonical_key(key), [])
        if message not in messages:
            messages.append(message)

    violations = getattr(exc, "violations", None)
    if violations:
        for v in violations:
            fields = CODE_FIELDS.get(v.code) or CODE_FIELDS.get("-".join(v.code.split("-")[:2]))
            if not fields:
                fields = tuple(_TOKEN_FIELDS[t] for t in v.code.split("-")[1:] if t in _TOKEN_FIELDS)
            for field_key in fields or touched:
                add(field_key, v.localized(language) if isinstance(v, Violation) else f"[{v.code}] {v.message}")
    elif isinstance(exc, ConfigError):
        message = exc.bare_in(language)
        if exc.key:
            add(exc.key, message)
        for key in touched:
            add(key, message)
    else:
        for key in touched:
            add(key, localize(exc, language))
    return {k: "\n".join(v) for k, v in out.items()}
