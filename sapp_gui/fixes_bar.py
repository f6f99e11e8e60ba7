"""'Does not fit' offers the nearest fixes in one click (issue 12): under the tiles while the plan on screen does
not fit, a button lists the nearest plans that fit on the same devices and global batch (``estimator.fixes``,
fewest changed settings first, each with its peak and step time); choosing one applies it as one undoable edit.
The fixes are found by the search on a worker thread (about a second), never on the GUI thread."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QMenu, QPushButton, QWidget

from estimator.fixes import Fix, nearest_fixes
from estimator.parsed import ParsedConfig
from estimator.session import PlanSession, SessionEvent
from estimator.session.events import CHANGED, CLOSED, ESTIMATE_FAILED, ESTIMATED, OPENED, REJECTED
from estimator.units import GiB

from .language import current, error_text, translate
from .tasks import TaskOutcome, TaskRunner


def find_fixes(parsed: ParsedConfig) -> list[Fix]:
    """``nearest_fixes`` for the worker (a module-level function: the runner may pickle it)."""
    return nearest_fixes(parsed, limit=5)


def fix_text(fix: Fix) -> str:
    return translate("Fixes", "{0} — peak {1} GiB, step {2} s").format(
        fix.summary_in(current()), f"{fix.peak_bytes / GiB:,.2f}", fix.step.with_band())


class FixesBar(QFrame):
    """Shown while the estimate on screen does not fit; ``apply_requested(changes, undo text)``."""

    apply_requested = Signal(dict, str)

    def __init__(self, session: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("fixesBar")
        self.session = session
        self.fixes: list[Fix] = []
        self.searched: ParsedConfig | None = None
        self.runner = TaskRunner(self, "fixes")
        self.runner.finished.connect(self._on_found)
        self.button = QPushButton()
        self.button.setObjectName("nearestFixes")
        self.button.clicked.connect(self.find)
        self.menu = QMenu(self)
        self.menu.setObjectName("fixesMenu")
        self.status = QLabel("")
        self.status.setProperty("sappRole", "note")
        self.status.setWordWrap(True)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.button)
        row.addWidget(self.status, 1)
        self.setVisible(False)
        self.retranslate()

    def retranslate(self) -> None:
        self.button.setText(translate("Fixes", "Nearest fixes…"))
        self.button.setToolTip(translate("Fixes", "The nearest plans that fit on the same devices and global "
                                                  "batch, fewest changed settings first (one click applies one)"))

    # ------------------------------------------------------------------------------------ session
    def on_session(self, event: SessionEvent) -> None:
        if event.kind in (OPENED, CLOSED, CHANGED, REJECTED, ESTIMATE_FAILED):
            self.runner.discard()
            self.fixes, self.searched = [], None
            self.status.setText("")
            if event.kind != CHANGED:
                self.setVisible(False)
        elif event.kind == ESTIMATED and event.session.shown is not None:
            self.setVisible(not event.session.shown.result.fits)

    # ------------------------------------------------------------------------------------ actions
    def find(self) -> int | None:
        """Look for the fixes of the plan on screen (on the worker); the menu opens when they arrive."""
        if not self.session.loaded:
            return None
        self.searched = self.session.parsed
        self.status.setText(translate("Fixes", "Looking for the nearest plans that fit…"))
        self.button.setEnabled(False)
        return self.runner.submit(find_fixes, self.searched, tag=self.searched)

    def _on_found(self, outcome: TaskOutcome) -> None:
        self.button.setEnabled(True)
        if outcome.tag is not self.session.parsed:
            return  # the plan changed meanwhile
        if outcome.error is not None:
            error = outcome.error
            self.status.setText(translate("Fixes", "No fixes: {0}").format(
                error_text(error)))
            return
        self.fixes = list(outcome.value)
        if not self.fixes:
            self.status.setText(translate("Fixes", "No plan of tensor × pipeline degree × recompute fits these "
                                                   "devices and this global batch: more devices (or a smaller "
                                                   "global batch) are needed."))
            return
        self.status.setText(translate("Fixes", "{0} plans fit; choose one to apply it (undoable).").format(
            len(self.fixes)))
        self.menu.clear()
        for k, fix in enumerate(self.fixes):
            action = self.menu.addAction(fix_text(fix))
            action.setData(k)
            action.triggered.connect(lambda _checked=False, k=k: self.apply(k))
        if self.isVisible():
            self.menu.popup(self.button.mapToGlobal(self.button.rect().bottomLeft()))

    def apply(self, k: int) -> None:
        fix = self.fixes[k]
        self.menu.hide()
        self.apply_requested.emit(dict(fix.changes), translate("Fixes", "Apply fix: {0}").format(
            fix.summary_in(current())))

    def shutdown(self) -> None:
        self.runner.shutdown()


__all__ = ["FixesBar", "find_fixes", "fix_text"]
