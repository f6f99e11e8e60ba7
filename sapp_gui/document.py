"""The open document: the ParsedConfig read from the files, the current (edited) one, and the edit rules
the GUI adds on top of ``estimator.parsed.apply_changes`` (hardware presets, per-stage lists that no longer
fit a new pipeline depth, step values for the degree spin boxes, which field an estimator error belongs to).

No Qt imports: every rule here is unit-tested without a QApplication. The undo stack (``commands.py``)
stores whole ``DocState`` snapshots, which is cheap because ParsedConfig is immutable. The texts it makes
(tooltips, edit notes) go through ``tr``, which the GUI points at its Qt translations (``language.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estimator.errors import ConfigError, SappError
from estimator.fields import ALIASES, SIZE_FIELDS, canonical_values
from estimator.formats import parse
from estimator.formats.plan_writer import strategy_fields
from estimator.hardware import Hardware, find_preset, load_presets
from estimator.parsed import ParsedConfig, Provenance, apply_changes
from estimator.search.candidates import divisors
from estimator.strategy import Strategy
from estimator.units import fmt_gib, parse_size
from estimator.warnings import Assumption

from .style import QT_TRANSLATE_NOOP

_translator: Callable[[str], str] = str


def set_translator(fn: Callable[[str], str]) -> None:
    """Route the document's texts (context "Document") through ``fn`` (the GUI's translations)."""
    global _translator
    _translator = fn


def tr(text: str) -> str:
    return _translator(text)

HOLD_WORLD = "world"
HOLD_DP = "dp"
_KEEP = object()

# estimator rule / layout codes -> the fields the message is shown on (spec §4.5, §8.4)
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
_PER_STAGE_COUNTS = ("strategy.sel_counts", "strategy.comm_counts")


@dataclass(frozen=True)
class DocState:
    """One undoable state: the current plan and what the last edit adapted on its own."""

    parsed: ParsedConfig
    notes: tuple[str, ...] = ()


class FieldError(SappError):
    """An edit that cannot be applied; ``errors`` maps canonical field names to messages."""

    def __init__(self, errors: dict[str, str], message: str) -> None:
        self.errors = errors
        super().__init__(message)


def canonical_key(key: str) -> str:
    return ALIASES.get(key, key)




def _flat_ints(value: Any) -> list[int]:
    if isinstance(value, (list, tuple)):
        out: list[int] = []
        for v in value:
            out.extend(_flat_ints(v))
        return out
    if isinstance(value, bool) or value is None:
        return []
    return [int(value)]


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


class Document:
    """The plan being edited. ``open`` reads files; ``propose`` turns edits into a new ``DocState`` without
    changing the document; ``set_state`` makes a state current (the undo commands call it)."""

    def __init__(self, preset_dirs: Sequence[Path] = ()) -> None:
        self.preset_dirs: tuple[Path, ...] = tuple(Path(p) for p in preset_dirs)
        self.paths: tuple[str, ...] = ()
        self.open_args: dict[str, Any] = {}
        self.original: ParsedConfig | None = None
        self.state: DocState | None = None
        self.hold = HOLD_WORLD
        self._values_cache: tuple[int, dict[str, Any]] | None = None
        self._original_values: dict[str, Any] = {}
        self.preset_problem = ""  # why the user presets could not be used, if they could not

    # ------------------------------------------------------------------------------------ loading
    @property
    def loaded(self) -> bool:
        return self.state is not None

    @property
    def parsed(self) -> ParsedConfig:
        if self.state is None:
            raise SappError("no config is open")
        return self.state.parsed

    def open(self, paths: Sequence[str | Path], *, framework: str | None = None, devices: int | None = None,
             model: str | Path | None = None, device: str | None = None) -> ParsedConfig:
        """Read ``paths`` into a new document (raises SappError with the file, key and fix). ``device`` names a
        device preset for files that do not state their hardware (the CLI's ``--device``)."""
        paths = tuple(str(p) for p in paths)
        self.preset_problem = ""
        overrides = {"hardware.device": device} if device else None
        try:
            parsed = parse(list(paths), framework=framework, devices=devices, model=model,
                           preset_dirs=self.preset_dirs, overrides=overrides)
        except ConfigError as exc:  # a broken user preset must not make every config unreadable
            if not exc.path or not any(str(exc.path).startswith(str(d)) for d in self.preset_dirs):
                raise
            self.preset_problem = tr(QT_TRANSLATE_NOOP("Document", "user presets ignored: {0}")).format(exc)
            parsed = parse(list(paths), framework=framework, devices=devices, model=model, overrides=overrides)
        self.paths = paths
        self.open_args = {"framework": framework, "devices": devices, "model": model, "device": device}
        self.original = parsed
        self._original_values = self._values_of(parsed)
        self.state = DocState(parsed)
        self._values_cache = None
        return parsed

    def close(self) -> None:
        self.paths, self.open_args = (), {}
        self.original, self.state = None, None
        self._values_cache, self._original_values = None, {}

    def reread(self) -> ParsedConfig:
        """Parse the same files again (after export wrote them) and carry the non-strategy edits over."""
        carried = self.carried_edits()
        self.open(self.paths, **self.open_args)
        if carried:
            with contextlib.suppress(SappError):
                self.set_state(self.propose(carried))
        return self.parsed

    @property
    def title(self) -> str:
        if not self.paths:
            return ""
        names = [Path(p).name for p in self.paths]
        return " + ".join(names)

    def original_state(self) -> DocState:
        assert self.original is not None
        return DocState(self.original)

    def set_state(self, state: DocState) -> None:
        self.state = state
        self._values_cache = None

    # ------------------------------------------------------------------------------------- values
    @staticmethod
    def _values_of(parsed: ParsedConfig) -> dict[str, Any]:
        out = canonical_values(parsed.model, parsed.strategy, parsed.options)
        out["hardware.device"] = parsed.hardware.id or parsed.hardware.name
        out["hardware.capacity"] = parsed.hardware.capacity
        out["strategy.world_size"] = parsed.strategy.world_size
        out["strategy.global_batch_size"] = parsed.strategy.global_batch_size
        return out

    def values(self) -> dict[str, Any]:
        parsed = self.parsed
        if self._values_cache is None or self._values_cache[0] != id(parsed):
            self._values_cache = (id(parsed), self._values_of(parsed))
        return self._values_cache[1]

    def value(self, key: str) -> Any:
        return self.values().get(canonical_key(key))

    def original_value(self, key: str) -> Any:
        return self._original_values.get(canonical_key(key))

    def mark(self, key: str) -> str | None:
        """"edited" (changed by the user), "derived" (changed by an edit rule) or None."""
        key = canonical_key(key)
        if self.value(key) == self.original_value(key):
            return None
        prov = self.parsed.provenance.get(key)
        if prov is not None and prov.source in ("derived", "preset"):
            return "derived"
        return "edited"

    def describe(self, key: str, assumptions: dict[str, Assumption] | None = None) -> str:
        """Where the field's current value came from, for its tooltip."""
        key = canonical_key(key)
        prov = self.parsed.provenance.get(key)
        mark = self.mark(key)
        was = _show(self.original_value(key), key)
        if mark == "edited":
            return tr(QT_TRANSLATE_NOOP("Document", "edited here (the file gives {0})")).format(was)
        if mark == "derived" and prov is not None:
            return tr(QT_TRANSLATE_NOOP("Document", "{0} (was {1})")).format(prov.describe(), was)
        if prov is not None and prov.source not in ("edit", "derived"):
            return prov.describe()
        if prov is not None and self.original is not None and key in self.original.provenance:
            return self.original.provenance[key].describe()
        if assumptions and key in assumptions:
            a = assumptions[key]
            return tr(QT_TRANSLATE_NOOP("Document", "default: {0}")).format(a.source)
        if key.startswith("hardware.") and self.original is not None:
            return tr(QT_TRANSLATE_NOOP("Document", "device preset {0}")).format(
                self.parsed.hardware.id or self.parsed.hardware.name)
        return tr(QT_TRANSLATE_NOOP("Document", "default"))

    def is_modified(self) -> bool:
        if self.state is None or self.original is None:
            return False
        return self.parsed.values != self.original.values or self.parsed.hardware != self.original.hardware

    def edited_keys(self) -> list[str]:
        return [k for k in self.values() if self.mark(k) == "edited"]

    def carried_edits(self) -> dict[str, Any]:
        """Edited fields that export does not write (model, hardware, options)."""
        return {k: self.value(k) for k in self.edited_keys() if not k.startswith("strategy.")}

    # ------------------------------------------------------------------------------------- presets
    def presets(self) -> tuple[Hardware, ...]:
        try:
            return load_presets(self.preset_dirs)
        except SappError:
            return load_presets(())

    # --------------------------------------------------------------------------------------- edits
    def propose(self, changes: dict[str, Any]) -> DocState:
        """The state after ``changes`` ({"strategy.tp": 8, ...}); raises FieldError naming the fields."""
        current = self.parsed
        changes = {canonical_key(k): v for k, v in changes.items()}
        touched = list(changes)
        notes: list[str] = []
        hw_changes = {k: v for k, v in changes.items() if k.startswith("hardware.")}
        rest = {k: v for k, v in changes.items() if not k.startswith("hardware.")}
        if "strategy.pp" in rest or "strategy.vpp" in rest:
            rest = self._refit_per_stage(current, rest, notes)
        try:
            parsed = apply_changes(current, rest, hold=self.hold) if rest else current
            if hw_changes:
                parsed = self._apply_hardware(parsed, hw_changes)
        except ConfigError as exc:
            raise FieldError(self.error_fields(exc, touched), str(exc.bare_message)) from None
        refitted = [k for k in rest if k not in touched]
        if refitted:
            provenance = dict(parsed.provenance)
            for key in refitted:
                provenance[key] = Provenance("derived", key=f"refitted for pp {parsed.strategy.pp}")
            parsed = dataclasses.replace(parsed, provenance=provenance)
        return DocState(parsed, tuple(notes))

    def _apply_hardware(self, parsed: ParsedConfig, changes: dict[str, Any]) -> ParsedConfig:
        """Device presets are applied as Hardware records, so user presets work like shipped ones."""
        provenance = dict(parsed.provenance)
        hardware = parsed.hardware
        if "hardware.device" in changes:
            hardware = find_preset(str(changes["hardware.device"]), self.presets())
            provenance["hardware.device"] = Provenance("edit", raw=changes["hardware.device"])
            provenance["hardware.capacity"] = Provenance("preset", raw=hardware.id)
        if changes.get("hardware.capacity") is not None:
            try:
                capacity = parse_size(changes["hardware.capacity"])
            except ValueError as exc:
                raise ConfigError(str(exc), key="hardware.capacity") from None
            if capacity <= 0:
                raise ConfigError("the capacity must be positive", key="hardware.capacity")
            hardware = hardware.replace(capacity=capacity)
            provenance["hardware.capacity"] = Provenance("edit", raw=changes["hardware.capacity"])
        return dataclasses.replace(parsed, hardware=hardware, provenance=provenance)

    def _refit_per_stage(self, parsed: ParsedConfig, changes: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        """Per-stage lists written for the old pipeline (offset, partition, recompute counts) are refitted
        when pp or vpp changes: layouts become even and the recomputed layers are spread evenly."""
        st = parsed.strategy
        try:
            pp = int(changes.get("strategy.pp", st.pp))
            vpp = int(changes.get("strategy.vpp", st.vpp))
        except (TypeError, ValueError):
            return changes
        if (pp, vpp) == (st.pp, st.vpp) or pp <= 0 or vpp <= 0:
            return changes
        out = dict(changes)
        for key, attr in (("strategy.offset", "offset"), ("strategy.partition", "partition")):
            if _is_list(getattr(st, attr)) and key not in out:
                out[key] = None
                notes.append(tr(QT_TRANSLATE_NOOP("Document", "{0} was written for {1} stages; cleared (even layer "
                                                              "split over {2})")).format(attr, st.pp, pp))
        counts = st.recompute.full_counts
        if _is_list(counts) and "strategy.full_counts" not in out and "strategy.recompute" not in out:
            total = sum(_flat_ints(counts))
            per_slot = round(total / (pp * vpp))
            out.update(self.recompute_changes(counts=per_slot))
            notes.append(tr(QT_TRANSLATE_NOOP("Document", "full-recompute counts {0} were written for {1} stages; "
                                                          "now {2} per stage (the same {3} layers in total)")).format(
                list(_flat_ints(counts)), st.pp, per_slot, total))
        for key in _PER_STAGE_COUNTS:
            attr = key.split(".")[1]
            value = getattr(st.recompute, attr)
            if _is_list(value) and key not in out:
                total = sum(_flat_ints(value))
                out[key] = round(total / (pp * vpp))
                notes.append(tr(QT_TRANSLATE_NOOP("Document", "{0} refitted to {1} per stage")).format(attr, out[key]))
        return out

    def changes_to(self, strategy: Strategy, *, pin: Sequence[str] = ()) -> dict[str, Any]:
        """The edit (canonical ``strategy.*`` keys) that turns the current strategy into ``strategy``: every
        field whose canonical value differs (``estimator.formats.plan_writer.strategy_fields``), plus the
        fields in ``pin`` even when equal (a search result gives dp and the micro-batch count together with
        the degrees, so the hold rules must not re-derive them)."""
        before, after = strategy_fields(self.parsed.strategy), strategy_fields(strategy)
        changes = {f"strategy.{k}": v for k, v in after.items() if before.get(k) != v}
        for name in pin:
            changes[f"strategy.{name}"] = after[name]
        return changes

    def recompute_changes(self, *, mode: str | None = None, counts: Any = _KEEP) -> dict[str, Any]:
        """Edits that set the recompute mode and/or the per-stage full-recompute counts independently
        (a plan may hold counts in ``strategy.recompute`` itself)."""
        parsed = self.parsed
        plan = parsed.strategy.recompute
        raw = parsed.values.get("strategy.recompute")
        counts_in_mode_key = raw is not None and not isinstance(raw, (str, bool))
        new_counts = plan.full_counts if counts is _KEEP else counts
        out: dict[str, Any] = {"strategy.recompute": mode if mode is not None else plan.default_mode}
        if new_counts is not None or counts_in_mode_key or "strategy.full_counts" in parsed.values:
            out["strategy.full_counts"] = list(new_counts) if isinstance(new_counts, tuple) else new_counts
        return out

    # --------------------------------------------------------------------------------------- steps
    def step_candidates(self, key: str) -> list[int] | None:
        """Values the arrow keys step through, so that stepping keeps the held quantities integral;
        None means plain ±1."""
        key = canonical_key(key)
        parsed = self.parsed
        st = parsed.strategy
        world, batch = st.world_size, st.global_batch_size
        degrees = {"strategy.tp": st.tp, "strategy.pp": st.pp, "strategy.cp": st.cp}
        if key in degrees:
            if self.hold == HOLD_WORLD:
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

    # -------------------------------------------------------------------------------------- errors
    def error_fields(self, exc: BaseException, touched: Sequence[str] = ()) -> dict[str, str]:
        """Which fields show an error's message: the key a ConfigError names, the fields of each violated
        rule, and the fields the edit touched."""
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
                    add(field_key, f"[{v.code}] {v.message}")
        elif isinstance(exc, ConfigError):
            message = exc.bare_message
            if exc.key:
                add(exc.key, message)
            for key in touched:
                add(key, message)
        else:
            for key in touched:
                add(key, str(exc))
        return {k: "\n".join(v) for k, v in out.items()}


def _show(value: Any, key: str = "") -> str:
    if key in SIZE_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return fmt_gib(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if value is None:
        return tr(QT_TRANSLATE_NOOP("Document", "unset"))
    return repr(value) if isinstance(value, str) else str(value)
