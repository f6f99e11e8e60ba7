"""Undo and redo as a list of immutable plan states: every edit pushes the state it made, undo and redo only
move an index, so a state can be shared with whoever drew it (a ParsedConfig never changes)."""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import Text
from ..parsed import ParsedConfig


@dataclass(frozen=True)
class PlanState:
    """One undoable state: the plan, what the edit that made it adapted on its own (``notes``: offsets rescaled
    for a new pipeline depth, …), what made it (``label``, the undo text) and the fields that edit set
    (``touched``: an error of the plan is shown on them too)."""

    parsed: ParsedConfig
    notes: tuple[Text, ...] = ()
    label: str = ""
    touched: tuple[str, ...] = ()


class History:
    """States from the file's (index 0) to the newest; ``index`` is the current one. A push after an undo drops
    the states that could have been redone, as every editor does."""

    def __init__(self, base: PlanState) -> None:
        self.states: list[PlanState] = [base]
        self.index = 0

    @property
    def current(self) -> PlanState:
        return self.states[self.index]

    def push(self, state: PlanState) -> None:
        del self.states[self.index + 1:]
        self.states.append(state)
        self.index += 1

    @property
    def can_undo(self) -> bool:
        return self.index > 0

    @property
    def can_redo(self) -> bool:
        return self.index + 1 < len(self.states)

    def undo(self) -> PlanState:
        if not self.can_undo:
            raise IndexError("nothing to undo")
        self.index -= 1
        return self.current

    def redo(self) -> PlanState:
        if not self.can_redo:
            raise IndexError("nothing to redo")
        self.index += 1
        return self.current

    @property
    def undo_label(self) -> str:
        """What undo takes back (the current state's label)."""
        return self.current.label if self.can_undo else ""

    @property
    def redo_label(self) -> str:
        return self.states[self.index + 1].label if self.can_redo else ""

    def __len__(self) -> int:
        """Edits on the stack (the base state is not one)."""
        return len(self.states) - 1
