"""Editing config text in place: span replacements applied together, so that every character a writer does not
mean to change (comments, quoting, layout) stays as the user wrote it."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ConfigError
from ..messages import msg


def apply_edits(text: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """``text`` with every (start, end, new) edit applied; spans are positions in the original text. Raises
    ValueError when two edits overlap (applying both would garble the text)."""
    out = text
    last = len(out) + 1
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        if end > last:
            raise ValueError("overlapping edits")
        out = out[:start] + new + out[end:]
        last = start
    return out


class Editor:
    """Span replacements on a script or JSON text, applied together (overlaps are refused)."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.edits: list[tuple[int, int, str]] = []

    def replace(self, span: tuple[int, int], new: str) -> None:
        self.edits.append((span[0], span[1], new))

    def apply(self) -> str:
        try:
            # the same edit asked for twice is made once; dict.fromkeys keeps the order (a set would make the
            # order of several insertions at one place depend on PYTHONHASHSEED)
            return apply_edits(self.text, list(dict.fromkeys(self.edits)))
        except ValueError:
            raise ConfigError(msg("text_edits.two-edits-script"), path=self.path) \
                from None
