"""PlanSession: one open plan and everything done to it — open, edits under the hold rules, undo/redo, the
estimate on screen and whether it still describes the plan, the pinned baseline, the compare set and the
validated export. The CLI (``sapp estimate --set``, ``export``, ``search --apply``, ``balance -o``) and the app
use the same session, so an edit or an export means the same thing in both.

A session is used from one thread (the app's GUI thread). What may take long — reading files
(``opening.read_plan``), pricing, preparing an export (``exporting.prepare_export``) — are pure functions the
caller may run elsewhere and hand back (``adopt``, ``record_estimate``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SappError
from ..fields import canonical_values
from ..hardware import Hardware, load_presets
from ..messages import ENGLISH, msg
from ..parsed import ParsedConfig
from ..result import Result
from ..strategy import Strategy
from . import edits
from .events import (
    CHANGED,
    CLOSED,
    COMPARED,
    ESTIMATE_FAILED,
    ESTIMATED,
    EXPORTED,
    HOLD,
    OPENED,
    PINNED,
    REJECTED,
    Listener,
    SessionEvent,
    Subscribers,
)
from .exporting import ExportPlan, prepare_export
from .history import History, PlanState
from .opening import Opened, OpenRequest, read_plan

if TYPE_CHECKING:  # keeping is the app's (what survives a restart): imported when asked, not by every sapp command
    from .keeping import KeptDocument, KeptPlan, KeptSearch

MAX_COMPARED = 6

# the freshness of what is on screen (``PlanSession.freshness``)
NOTHING = "nothing"    # no estimate of this document yet
CURRENT = "current"    # the shown estimate is of the plan the session holds
PENDING = "pending"    # the plan changed; its estimate has not arrived
FAILED = "failed"      # the plan cannot be priced
REJECTED_EDIT = "rejected"  # the last edit was refused: the forms hold a value the plan does not


@dataclass(frozen=True)
class Estimate:
    """A plan and its priced Result."""

    parsed: ParsedConfig
    result: Result
    elapsed: float = 0.0


@dataclass(frozen=True)
class Freshness:
    """Whether the shown estimate describes the current plan and, when not, why."""

    state: str
    reason: str = ""                 # the error of a failed estimate or a refused edit
    shown: Estimate | None = None    # what is on screen (may be of an older plan)
    error: BaseException | None = None  # that error itself (the app says it in its language)

    @property
    def stale(self) -> bool:
        """Something is on screen that does not describe the current plan."""
        return self.shown is not None and self.state != CURRENT


@dataclass(frozen=True)
class CompareEntry:
    key: int
    name: str
    plan: ParsedConfig | None
    result: Result | None = None
    error: str = ""
    source: OpenRequest | None = None   # the files the plan derives from (kept across a restart) …
    base: ParsedConfig | None = None    # … and the plan they state

    @property
    def pending(self) -> bool:
        return self.result is None and not self.error


class PlanSession:
    def __init__(self, preset_dirs: Sequence[str | Path] = (), *, hold: str = edits.HOLD_WORLD,
                 calibration: str | None = None) -> None:
        self.preset_dirs: tuple[Path, ...] = tuple(Path(p) for p in preset_dirs)
        self.calibration = calibration  # a profile name, "none", or None: the newest matching one
        self.hold = hold
        self.request: OpenRequest | None = None
        self.original: ParsedConfig | None = None
        self.history: History | None = None
        self.preset_problem = ""
        self.shown: Estimate | None = None
        self.failure: tuple[ParsedConfig, BaseException] | None = None
        self.rejected: edits.EditError | None = None
        self.pinned: Estimate | None = None
        self.compared: tuple[CompareEntry, ...] = ()
        self._compare_keys = 0
        self._subscribers = Subscribers()
        self._values: tuple[int, dict[str, Any]] | None = None
        self._original_values: dict[str, Any] = {}

    # ---------------------------------------------------------------------------------- events
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` after every change; returns the function that unsubscribes it."""
        return self._subscribers.add(listener)

    def _emit(self, kind: str, cause: str = "", error: BaseException | None = None, detail: Any = None) -> None:
        self._subscribers.emit(SessionEvent(kind, self, cause, error, detail))

    # ------------------------------------------------------------------------------------ open
    @property
    def loaded(self) -> bool:
        return self.history is not None

    @property
    def state(self) -> PlanState:
        if self.history is None:
            raise SappError(msg("core.config-open"))
        return self.history.current

    @property
    def parsed(self) -> ParsedConfig:
        return self.state.parsed

    @property
    def paths(self) -> tuple[str, ...]:
        return self.request.paths if self.request else ()

    @property
    def open_args(self) -> dict[str, Any]:
        return self.request.args if self.request else {}

    @property
    def title(self) -> str:
        return " + ".join(Path(p).name for p in self.paths)

    def request_for(self, paths: Sequence[str | Path], **kwargs: Any) -> OpenRequest:
        """An OpenRequest for ``paths`` with this session's user presets."""
        return OpenRequest.of(paths, preset_dirs=self.preset_dirs, calibration=self.calibration, **kwargs)

    def open(self, paths: Sequence[str | Path], *, framework: str | None = None, devices: int | None = None,
             model: str | Path | None = None, device: str | None = None,
             overrides: dict[str, Any] | None = None) -> ParsedConfig:
        """Read ``paths`` on this thread and make them the document (raises SappError naming file, key, fix)."""
        request = self.request_for(paths, framework=framework, devices=devices, model=model, device=device,
                                   overrides=overrides)
        self.adopt(read_plan(request))
        return self.parsed

    def adopt(self, opened: Opened) -> None:
        """Make a plan read elsewhere (``read_plan`` on a worker) the document; its ``carried`` edits (model,
        hardware and options edits an export does not write) are applied on top, not undoable."""
        base = PlanState(opened.parsed)
        if opened.carried:
            try:
                base = edits.propose(opened.parsed, opened.carried, hold=self.hold,
                                     presets=self._presets_for(opened.carried))
            except edits.EditError as exc:  # the files changed so that the edits no longer apply: say so
                base = PlanState(opened.parsed, (f"edits not carried over ({', '.join(opened.carried)}): {exc}",))
        self.request = opened.request
        self.original = opened.parsed
        self.history = History(PlanState(base.parsed, base.notes))
        self.preset_problem = opened.preset_problem
        self._original_values = self._values_of(opened.parsed)
        self._values = None
        self.shown, self.failure, self.rejected, self.pinned = None, None, None, None
        self._emit(OPENED)

    def close(self) -> None:
        self.request, self.original, self.history = None, None, None
        self.preset_problem = ""
        self._values, self._original_values = None, {}
        self.shown, self.failure, self.rejected, self.pinned = None, None, None, None
        self._emit(CLOSED)

    def reopen(self, paths: Sequence[str] | None = None) -> tuple[OpenRequest, dict[str, Any]]:
        """The request that reads the document's files again (after an export wrote them; ``paths`` when it
        wrote them elsewhere) and the edits to carry over (those an export does not write)."""
        if self.request is None:
            raise SappError(msg("core.config-open"))
        request = self.request if paths is None else self.request.with_paths(paths)
        return request, self.carried_edits()

    def reread(self, paths: Sequence[str] | None = None) -> ParsedConfig:
        """Read the files again on this thread, carrying over the edits an export does not write."""
        request, carried = self.reopen(paths)
        opened = read_plan(request)
        self.adopt(Opened(opened.request, opened.parsed, opened.preset_problem, carried))
        return self.parsed

    def source_paths(self) -> tuple[str, ...]:
        """The files the document was read from (a launch script's model.json too)."""
        if self.original is None:
            return ()
        return tuple(dict.fromkeys(source.path for source in self.original.sources))

    def changed_on_disk(self) -> tuple[str, ...]:
        """The document's files whose text on disk is no longer the text it was read from (a file removed or
        unreadable counts as changed): what a reload would read differently."""
        from ..inputs import read_text

        changed = []
        for source in self.original.sources if self.original is not None else ():
            try:
                if read_text(source.path) == source.text:
                    continue
            except (SappError, OSError):
                pass
            changed.append(source.path)
        return tuple(dict.fromkeys(changed))

    # ---------------------------------------------------------------------------------- values
    @staticmethod
    def _values_of(parsed: ParsedConfig) -> dict[str, Any]:
        out = canonical_values(parsed.model, parsed.strategy, parsed.options)
        out["hardware.device"] = parsed.hardware.id or parsed.hardware.name
        out["hardware.capacity"] = parsed.hardware.capacity
        out["strategy.world_size"] = parsed.strategy.world_size
        out["strategy.global_batch_size"] = parsed.strategy.global_batch_size
        return out

    def values(self) -> dict[str, Any]:
        """Every field's current canonical value (``section.field`` keys)."""
        parsed = self.parsed
        if self._values is None or self._values[0] != id(parsed):
            self._values = (id(parsed), self._values_of(parsed))
        return self._values[1]

    def value(self, key: str) -> Any:
        return self.values().get(edits.canonical_key(key))

    def original_value(self, key: str) -> Any:
        return self._original_values.get(edits.canonical_key(key))

    def mark(self, key: str) -> str | None:
        """"edited" (changed by the user), "derived" (changed by an edit rule) or None (as the files say)."""
        key = edits.canonical_key(key)
        if self.value(key) == self.original_value(key):
            return None
        prov = self.parsed.provenance.get(key)
        if prov is not None and prov.source in ("derived", "preset"):
            return "derived"
        return "edited"

    def is_modified(self) -> bool:
        if self.history is None or self.original is None:
            return False
        return self.parsed.values != self.original.values or self.parsed.hardware != self.original.hardware

    def edited_keys(self) -> list[str]:
        return [k for k in self.values() if self.mark(k) == "edited"]

    def carried_edits(self) -> dict[str, Any]:
        """Edited fields that an export does not write (model, hardware, options)."""
        return {k: self.value(k) for k in self.edited_keys() if not k.startswith("strategy.")}

    def presets(self) -> tuple[Hardware, ...]:
        """Shipped and user device presets (the shipped ones alone when the user's cannot be read)."""
        try:
            return load_presets(self.preset_dirs)
        except SappError:
            return load_presets(())

    # ----------------------------------------------------------------------------------- edits
    def propose(self, changes: dict[str, Any]) -> PlanState:
        """The state ``changes`` would make, without making it (raises EditError naming the fields)."""
        return edits.propose(self.parsed, changes, hold=self.hold, presets=self._presets_for(changes))

    def _presets_for(self, changes: dict[str, Any]) -> tuple[Hardware, ...]:
        """The presets, read only for a hardware edit (they are files: not on every keystroke)."""
        if any(edits.canonical_key(k).startswith("hardware.") for k in changes):
            return self.presets()
        return ()

    def apply(self, changes: dict[str, Any], label: str = "edit") -> PlanState | None:
        """Make the state ``changes`` lead to current (undoable). Returns it, or None when nothing changes (an
        invalid value typed back to the current one). A refused edit raises EditError and is remembered
        (``rejected``) until the next change, so that nothing on screen passes for its verdict."""
        try:
            state = self.propose(changes)
        except edits.EditError as exc:
            self.rejected = exc
            self._emit(REJECTED, error=exc, detail=dict(changes))
            raise
        current = self.parsed
        self.rejected = None
        if state.parsed.values == current.values and state.parsed.hardware == current.hardware:
            self._emit(CHANGED, "unchanged")
            return None
        return self.push(PlanState(state.parsed, state.notes, label, state.touched))

    def push(self, state: PlanState) -> PlanState:
        """Make ``state`` current as an undoable step."""
        assert self.history is not None
        self.history.push(state)
        self.rejected = None
        self._emit(CHANGED, "edit")
        return state

    def undo(self) -> PlanState:
        assert self.history is not None
        state = self.history.undo()
        self.rejected = None
        self._emit(CHANGED, "undo")
        return state

    def redo(self) -> PlanState:
        assert self.history is not None
        state = self.history.redo()
        self.rejected = None
        self._emit(CHANGED, "redo")
        return state

    def reset_to_file(self, label: str = "reset to file") -> PlanState | None:
        """Drop every edit, as one undoable step; None when there is nothing to drop."""
        if self.original is None or not self.is_modified():
            return None
        return self.push(PlanState(self.original, (), label))

    @property
    def can_undo(self) -> bool:
        return self.history is not None and self.history.can_undo

    @property
    def can_redo(self) -> bool:
        return self.history is not None and self.history.can_redo

    def set_hold(self, hold: str) -> None:
        if hold not in edits.HOLDS:
            raise SappError(msg("core.hold-must-one", HOLDS=', '.join(edits.HOLDS), hold=hold))
        if hold != self.hold:
            self.hold = hold
            self._emit(HOLD)

    def changes_to(self, strategy: Strategy, *, pin: Sequence[str] = ()) -> dict[str, Any]:
        return edits.changes_to(self.parsed.strategy, strategy, pin=pin)

    def recompute_changes(self, **kwargs: Any) -> dict[str, Any]:
        return edits.recompute_changes(self.parsed, **kwargs)

    def step_candidates(self, key: str) -> list[int] | None:
        return edits.step_candidates(self.parsed, key, self.hold)

    @staticmethod
    def error_fields(exc: BaseException, touched: Sequence[str] = (), language: str = ENGLISH) -> dict[str, str]:
        return edits.error_fields(exc, touched, language)

    # ------------------------------------------------------------------------------- estimates
    def record_estimate(self, parsed: ParsedConfig, result: Result | None = None,
                        error: BaseException | None = None, elapsed: float = 0.0) -> bool:
        """An estimate of ``parsed`` arrived (a Result, or the error that stopped it). Only the current plan's
        counts: returns False (and changes nothing) for any other."""
        if not self.loaded or parsed is not self.parsed:
            return False
        if error is not None:
            self.failure = (parsed, error)
            self._emit(ESTIMATE_FAILED, error=error)
            return True
        assert result is not None
        self.shown, self.failure = Estimate(parsed, result, elapsed), None
        self._emit(ESTIMATED)
        return True

    def freshness(self) -> Freshness:
        """Whether the shown estimate describes the current plan (see the module's states)."""
        shown = self.shown
        if not self.loaded:
            return Freshness(NOTHING)
        if self.rejected is not None:
            return Freshness(REJECTED_EDIT, str(self.rejected), shown, self.rejected)
        if self.failure is not None and self.failure[0] is self.parsed:
            return Freshness(FAILED, str(self.failure[1]), shown, self.failure[1])
        if shown is None:
            return Freshness(NOTHING if self.failure is None else PENDING)
        return Freshness(CURRENT if shown.parsed is self.parsed else PENDING, "", shown)

    @property
    def current_estimate(self) -> Estimate | None:
        """The shown estimate when it describes the current plan, else None."""
        return self.shown if self.freshness().state == CURRENT else None

    # -------------------------------------------------------------------------------- baseline
    def pin(self) -> Estimate | None:
        """Pin the current plan's estimate as the baseline later estimates are drawn beside (None when the
        shown estimate does not describe the current plan)."""
        estimate = self.current_estimate
        if estimate is not None:
            self.pinned = estimate
            self._emit(PINNED)
        return estimate

    def pin_kept(self, parsed: ParsedConfig, result: Result) -> bool:
        """Pin a baseline kept from an earlier run of the app (``keeping``), priced again; only while the
        document it was kept for is open and nothing else was pinned meanwhile (False otherwise)."""
        if not self.loaded or self.pinned is not None or self.original is None or \
                parsed.sources != self.original.sources:
            return False
        self.pinned = Estimate(parsed, result)
        self._emit(PINNED, "kept")
        return True

    def kept_document(self, search: KeptSearch | None = None) -> KeptDocument:
        """The open document's part of what survives a restart: its search space and pinned baseline."""
        if self.request is None or self.original is None:
            raise SappError(msg("core.config-open"))
        from .keeping import KeptDocument, keep_plan

        pinned = None
        if self.pinned is not None:
            pinned = keep_plan(self.request, self.original, self.pinned.parsed)
        return KeptDocument(self.request.paths, {k: v for k, v in self.request.args.items() if v is not None},
                            search, pinned)

    def kept_compare(self) -> list[KeptPlan]:
        """The compare set as kept plans (an entry whose files are unknown — a bare Result — cannot be)."""
        from .keeping import keep_plan

        return [keep_plan(e.source, e.base, e.plan, e.name) for e in self.compared
                if e.plan is not None and e.source is not None and e.base is not None]

    def unpin(self) -> None:
        if self.pinned is not None:
            self.pinned = None
            self._emit(PINNED)

    # ---------------------------------------------------------------------------------- compare
    def compare_add(self, name: str, plan: ParsedConfig | None, result: Result | None = None, *,
                    source: OpenRequest | None = None, base: ParsedConfig | None = None) -> CompareEntry:
        """Add a strategy to the compare set (with its Result, or a plan still to price: ``compare_priced``).
        ``source`` and ``base`` name the files the plan derives from and the plan they state; a plan of the
        open document's files needs neither."""
        if len(self.compared) >= MAX_COMPARED:
            raise SappError(msg("core.most-strategies-compared", MAX_COMPARED=MAX_COMPARED))
        if plan is None and result is None:
            raise SappError(msg("core.nothing-compare-neither"))
        if source is None and plan is not None and self.original is not None and \
                plan.sources == self.original.sources:
            source, base = self.request, self.original
        self._compare_keys += 1
        entry = CompareEntry(self._compare_keys, name, plan, result, source=source, base=base)
        self.compared = (*self.compared, entry)
        self._emit(COMPARED, "added", detail=entry)
        return entry

    def compare_priced(self, key: int, result: Result | None = None, error: str = "") -> None:
        """The price of a compare entry arrived (ignored when the entry was removed meanwhile)."""
        if not any(e.key == key for e in self.compared):
            return
        self.compared = tuple(replace(e, result=result, error=error) if e.key == key else e
                              for e in self.compared)
        self._emit(COMPARED, "priced")

    def compare_remove(self, key: int) -> None:
        self.compared = tuple(e for e in self.compared if e.key != key)
        self._emit(COMPARED, "removed")

    def compare_clear(self) -> None:
        self.compared = ()
        self._emit(COMPARED, "cleared")

    # ----------------------------------------------------------------------------------- export
    def export_edited(self) -> tuple[str, ...]:
        """The parts of the plan edited here that an export does not write (named in a refusal)."""
        carried = self.carried_edits() if self.loaded else {}
        return tuple(sorted({k.split(".", 1)[0] for k in carried}))

    def prepare_export(self, strategy: Strategy | None = None) -> ExportPlan:
        """The new texts of the source files with ``strategy`` (default: the current one), checked first:
        raises ExportRefused when the estimator's rules reject it for the plan the files will state."""
        if self.original is None:
            raise SappError(msg("core.config-open"))
        return prepare_export(self.original, strategy or self.parsed.strategy, edited=self.export_edited())

    def written(self, paths: Sequence[str]) -> None:
        """Files were written (the caller reads them again: ``reopen``)."""
        self._emit(EXPORTED, detail=tuple(paths))
