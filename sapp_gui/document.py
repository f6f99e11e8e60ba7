"""The open document: the ParsedConfig read from the files, the current (edited) one, and the edit rules
the GUI adds on top of ``estimator.parsed.apply_changes`` (hardware presets, per-stage lists that no longer
fit a new pipeline depth, step values for the degree spin boxes, which field an estimator error belongs to).

No Qt imports: every rule here is unit-tested without a QApplication. The undo stack (``commands.py``)
stores whole ``DocState`` snapshots, which is cheap because ParsedConfig is immutable. The texts it makes
(tooltips, edit notes) go through ``tr``, which the GUI points at its Qt translations (``language.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estimator.errors import ConfigError, SappError
from estimator.fields import SIZE_FIELDS, canonical_values
from estimator.formats import parse
from estimator.hardware import Hardware, load_presets
from estimator.parsed import ParsedConfig
from estimator.search.candidates import divisors  # noqa: F401  (re-exported for tests)
from estimator.session import edits
from estimator.session.edits import HOLD_DP, HOLD_WORLD, canonical_key  # noqa: F401
from estimator.session.edits import EditError as FieldError  # noqa: F401
from estimator.strategy import Strategy
from estimator.units import fmt_gib
from estimator.warnings import Assumption

from .style import QT_TRANSLATE_NOOP

_translator: Callable[[str], str] = str


def set_translator(fn: Callable[[str], str]) -> None:
    """Route the document's texts (context "Document") through ``fn`` (the GUI's translations)."""
    global _translator
    _translator = fn


def tr(text: str) -> str:
    return _translator(text)

_KEEP = object()

@dataclass(frozen=True)
class DocState:
    """One undoable state: the current plan and what the last edit adapted on its own."""

    parsed: ParsedConfig
    notes: tuple[str, ...] = ()


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

    def export_edited(self) -> tuple[str, ...]:
        """The parts of the plan edited here that an export does not write (named in a refusal)."""
        return tuple(sorted({k.split(".", 1)[0] for k in self.carried_edits()})) if self.loaded else ()

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
        """The state after ``changes`` ({"strategy.tp": 8, ...}); raises FieldError naming the fields. The rules
        are the library's (``estimator.session.edits.propose``), the same as ``sapp … --set``."""
        state = edits.propose(self.parsed, changes, hold=self.hold, presets=self.presets())
        return DocState(state.parsed, state.notes)

    def changes_to(self, strategy: Strategy, *, pin: Sequence[str] = ()) -> dict[str, Any]:
        return edits.changes_to(self.parsed.strategy, strategy, pin=pin)

    def recompute_changes(self, *, mode: str | None = None, counts: Any = _KEEP) -> dict[str, Any]:
        return edits.recompute_changes(self.parsed, mode=mode) if counts is _KEEP else \
            edits.recompute_changes(self.parsed, mode=mode, counts=counts)

    def step_candidates(self, key: str) -> list[int] | None:
        return edits.step_candidates(self.parsed, key, self.hold)

    @staticmethod
    def error_fields(exc: BaseException, touched: Sequence[str] = ()) -> dict[str, str]:
        return edits.error_fields(exc, touched)


def _show(value: Any, key: str = "") -> str:
    if key in SIZE_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return fmt_gib(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if value is None:
        return tr(QT_TRANSLATE_NOOP("Document", "unset"))
    return repr(value) if isinstance(value, str) else str(value)
