"""What survives a restart of the app, through the library's ``estimator.session.keeping``: per document the
search space and the pinned baseline, and the compare set, kept in the user config folder (``session.json``).

Reopening a document restores its search space at once and its pinned baseline once priced again (on a
worker: it is rebuilt from the files and re-estimated, never shown from a stored number); the compare set of
the last run joins the first document opened, each entry re-read from its files on a worker. What cannot be
restored, and files that changed since, are said in the status bar and the warnings list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.hardware import load_presets
from estimator.messages import Message
from estimator.parsed import ParsedConfig
from estimator.session import PlanSession, SessionEvent
from estimator.session.events import CLOSED, COMPARED, OPENED, PINNED
from estimator.session.keeping import (
    KeptPlan,
    Rebuilt,
    document_key,
    load_kept,
    read_kept,
    rebuild_plan,
    save_kept,
)

from .language import error_text, said, translate
from .tasks import TaskOutcome, TaskRunner

SAVE_DELAY_MS = 400


def _price_kept(kept: KeptPlan, base: ParsedConfig,
                preset_dirs: tuple[Path, ...]) -> tuple[ParsedConfig, Any, tuple[Message, ...]]:
    """The kept baseline on top of the document's plan, priced (a worker's job)."""
    try:
        presets = load_presets(preset_dirs)
    except SappError:
        presets = load_presets(())
    parsed, notes = rebuild_plan(kept, base, presets)
    return parsed, estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options), notes


def _read_all(plans: tuple[KeptPlan, ...],
              preset_dirs: tuple[Path, ...]) -> list[tuple[KeptPlan, Rebuilt | SappError]]:
    out: list[tuple[KeptPlan, Rebuilt | SappError]] = []
    for kept in plans:
        try:
            out.append((kept, read_kept(kept, preset_dirs)))
        except SappError as exc:  # said in the interface language once back on the GUI thread
            out.append((kept, exc))
    return out


class SessionKeeper(QObject):
    """Writes the kept state after every change and restores it when a document opens. ``flush`` (subscribed
    before the panels) keeps the outgoing document's search space before a new document resets the editor."""

    restored = Signal(str)   # what was restored or could not be, for the status bar ("" when nothing was)

    def __init__(self, session: PlanSession, search_space: Any, parent: QObject | None = None,
                 path: Path | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.path = path
        self._space_of = search_space   # () -> the SearchSpaceEditor, or None when the Search tab is not built
        self.kept, self.problem = load_kept(path)
        self.notes: list[str] = [said(self.problem)] if self.problem else []
        self._doc: tuple[str, ...] | None = None   # the document whose state is written
        self._compare_pending = bool(self.kept.compare)
        self._restoring = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SAVE_DELAY_MS)
        self._timer.timeout.connect(self.save)
        self.pin_runner = TaskRunner(self, "kept-pin")
        self.pin_runner.finished.connect(self._pinned_priced)
        self.compare_runner = TaskRunner(self, "kept-compare")
        self.compare_runner.finished.connect(self._compare_read)

    # ----------------------------------------------------------------------------------- writing
    def flush(self, event: SessionEvent) -> None:
        """Before the views: a new document or a close ends the current one's state (written now)."""
        if event.kind in (OPENED, CLOSED) and self._timer.isActive():
            self._timer.stop()
            self.save()

    def schedule(self) -> None:
        if not self._restoring:
            self._timer.start()

    def save(self) -> None:
        """Write the current document's state and the compare set (only what changed)."""
        kept = self.kept
        if self.session.loaded and self._doc == document_key(self.session.paths):
            editor = self._space_of()
            search = editor.kept() if editor is not None else None
            previous = kept.document(self.session.paths)
            if search is None and previous is not None:
                search = previous.search
            kept = kept.with_document(self.session.kept_document(search))
        if not self._compare_pending:  # the last run's set is not dropped before it is back
            kept = kept.with_compare(self.session.kept_compare())
        if kept == self.kept:
            return
        try:
            save_kept(kept, self.path)
        except SappError as exc:
            self.restored.emit(said(exc))
            return
        self.kept = kept

    # --------------------------------------------------------------------------------- restoring
    def on_session(self, event: SessionEvent) -> None:
        kind = event.kind
        if kind == OPENED:
            self._doc = document_key(self.session.paths)
            self.pin_runner.discard()
            doc = self.kept.document(self.session.paths)
            if doc is not None and doc.search is not None:
                self.restore_search()
            if doc is not None and doc.pinned is not None and self.session.original is not None:
                self.pin_runner.submit(_price_kept, doc.pinned, self.session.original, self.session.preset_dirs)
            if self._compare_pending:
                self.compare_runner.submit(_read_all, self.kept.compare, self.session.preset_dirs)
            self.schedule()
        elif kind == CLOSED:
            self._doc = None
            self.pin_runner.discard()
        elif kind == PINNED or (kind == COMPARED and event.cause in ("added", "removed", "cleared")):
            self.schedule()

    def restore_search(self) -> None:
        """Show the open document's kept search space in the editor (called again when the tab is built)."""
        editor = self._space_of()
        doc = self.kept.document(self.session.paths) if self.session.loaded else None
        if editor is None or doc is None or doc.search is None:
            return
        self._restoring = True
        try:
            problems = editor.restore(doc.search)
        finally:
            self._restoring = False
        if problems:
            self._say(translate("Keeper", "Search space of the last session: {0}").format("; ".join(problems)))

    def _pinned_priced(self, outcome: TaskOutcome) -> None:
        if outcome.error is not None:
            self._say(translate("Keeper", "The pinned baseline of the last session is not restored: {0}")
                      .format(error_text(outcome.error)))
            return
        parsed, result, notes = outcome.value
        if self.session.pin_kept(parsed, result):
            text = translate("Keeper", "Pinned baseline of the last session restored (priced again)")
            self._say(" — ".join([text, *(said(note) for note in notes)]))

    def _compare_read(self, outcome: TaskOutcome) -> None:
        self._compare_pending = False
        if outcome.error is not None:
            self._say(translate("Keeper", "The compare set of the last session is not restored: {0}")
                      .format(error_text(outcome.error)))
            return
        problems, notes = [], []
        known = {e.name for e in self.session.compared}
        for kept, got in outcome.value:
            if isinstance(got, SappError):
                problems.append(said(got))
            elif kept.name not in known:
                try:
                    self.session.compare_add(kept.name, got.parsed, source=got.request, base=got.base)
                except SappError as exc:  # the set is full
                    problems.append(f"{kept.name}: {said(exc)}")
                notes.extend(got.notes)
        added = len(outcome.value) - len(problems)
        text = translate("Keeper", "{0} compared strategies of the last session restored").format(added)
        if problems:
            text += "; " + translate("Keeper", "not restored: {0}").format("; ".join(problems))
        self._say(" — ".join([text, *(said(note) for note in notes)]))

    def _say(self, text: str) -> None:
        self.notes.append(text)
        self.restored.emit(text)

    def shutdown(self) -> None:
        if self._timer.isActive():
            self._timer.stop()
            self.save()
        self.pin_runner.shutdown()
        self.compare_runner.shutdown()
