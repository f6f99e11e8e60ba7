"""Warnings and assumptions attached to a result: what the user should know about the numbers.

Their texts come from the message catalogue (``estimator.messages``): built with ``msg(key, …)``, they keep the
``Message`` so the app can show them in its language; ``text``/``source`` and the JSON stay English."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .messages import ENGLISH, Message, Text, english, message_of, msg
from .records import IN_MEMORY, Record


@dataclass(frozen=True)
class EstimateWarning(Record):
    """A coded warning (e.g. W-REC-CLIP): legal input that is probably not what the user meant."""

    code: str
    text: Text
    catalogued: Message | None = field(default=None, compare=False, repr=False, metadata=IN_MEMORY)

    def __post_init__(self) -> None:
        if isinstance(self.text, Message):
            object.__setattr__(self, "catalogued", self.text)
            object.__setattr__(self, "text", english(self.text))

    def localized(self, language: str = ENGLISH) -> str:
        return f"[{self.code}] {self.catalogued.render(language) if self.catalogued else self.text}"

    def __str__(self) -> str:
        return f"[{self.code}] {self.text}"


@dataclass(frozen=True)
class Assumption(Record):
    """A value the estimator filled in because the input did not state it, and where it came from."""

    field: str
    value: Any
    source: Text
    catalogued: Message | None = field(default=None, compare=False, repr=False, metadata=IN_MEMORY)

    def __post_init__(self) -> None:
        if isinstance(self.source, Message):
            object.__setattr__(self, "catalogued", message_of(self.source))
            object.__setattr__(self, "source", english(self.source))

    def source_in(self, language: str = ENGLISH) -> str:
        """Where the value came from, in ``language``."""
        return self.catalogued.render(language) if self.catalogued else self.source

    def localized(self, language: str = ENGLISH) -> str:
        return msg("assumption.line", field=self.field, value=plain(self.value),
                   source=self.source_in(language)).render(language)

    def __str__(self) -> str:
        return self.localized(ENGLISH)


def plain(value: Any) -> str:
    """A value as a config would write it, never a Python repr: none, true/false, [1, 2], text unquoted."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(plain(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {plain(v)}" for k, v in value.items()) + "}"
    return str(value)
