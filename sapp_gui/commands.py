"""The Edit menu's QUndoStack as a thin adapter over the session's own history (``estimator.session``): every
edit the session makes current becomes one command whose undo and redo just move the session's index, so
the menu texts, the toolbar and the shortcuts keep Qt's behaviour while the states live in the library."""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand, QUndoStack

from estimator.session import PlanSession, SessionEvent
from estimator.session.events import CHANGED, CLOSED, OPENED


class SessionStep(QUndoCommand):
    """One step of the session's history. The session has already made it when it is pushed, so the first
    ``redo`` (which QUndoStack.push calls) does nothing."""

    def __init__(self, session: PlanSession, text: str) -> None:
        super().__init__(text)
        self.session = session
        self._pushed = False

    def redo(self) -> None:
        if self._pushed:
            self.session.redo()
        self._pushed = True

    def undo(self) -> None:
        self.session.undo()


class UndoAdapter:
    """Mirrors the session's history onto ``stack``: a new state pushes a step; a new document clears it."""

    def __init__(self, session: PlanSession, stack: QUndoStack) -> None:
        self.session, self.stack = session, stack
        session.subscribe(self.on_session)

    def on_session(self, event: SessionEvent) -> None:
        if event.kind == CHANGED and event.cause == "edit":
            self.stack.push(SessionStep(self.session, self.session.state.label))
        elif event.kind in (OPENED, CLOSED):
            self.stack.clear()
