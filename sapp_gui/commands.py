"""QUndoCommand adapters over the Qt-free Document: each command swaps two immutable DocState snapshots."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QUndoCommand

from .document import DocState


class StateCommand(QUndoCommand):
    """Redo applies ``after``, undo applies ``before`` (through the window's ``apply`` callback, which
    refreshes the forms and requests a new estimate)."""

    def __init__(self, apply: Callable[[DocState], None], before: DocState, after: DocState, text: str) -> None:
        super().__init__(text)
        self._apply = apply
        self.before = before
        self.after = after

    def redo(self) -> None:
        self._apply(self.after)

    def undo(self) -> None:
        self._apply(self.before)
