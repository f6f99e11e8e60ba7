"""What a session tells its subscribers: plain callbacks taking one ``SessionEvent`` (no Qt; the app's panels,
a test or a script subscribe the same way). Events are emitted after the session's state has changed, on the
thread that changed it (the app's GUI thread)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

OPENED = "opened"                    # a new document (the history, shown estimate and pinned baseline reset)
CLOSED = "closed"
CHANGED = "changed"                  # the current plan changed (cause: edit, undo, redo, reset, unchanged)
REJECTED = "rejected"                # an edit was refused; the plan did not change (``error`` says why)
ESTIMATED = "estimated"              # the current plan's estimate arrived
ESTIMATE_FAILED = "estimate_failed"  # the current plan cannot be priced (``error``)
PINNED = "pinned"                    # the pinned baseline was set or cleared
COMPARED = "compared"                # the compare set changed
EXPORTED = "exported"                # files were written (``detail``: the paths)
HOLD = "hold"                        # what an edit of a degree holds fixed changed

KINDS = (OPENED, CLOSED, CHANGED, REJECTED, ESTIMATED, ESTIMATE_FAILED, PINNED, COMPARED, EXPORTED, HOLD)


@dataclass(frozen=True)
class SessionEvent:
    kind: str
    session: Any                       # the PlanSession (read its state; do not change it from a callback)
    cause: str = ""
    error: BaseException | None = None
    detail: Any = None


Listener = Callable[[SessionEvent], None]


class Subscribers:
    """An ordered list of callbacks; ``add`` returns the function that removes the callback again."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def add(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)
        return remove

    def emit(self, event: SessionEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    def __len__(self) -> int:
        return len(self._listeners)
