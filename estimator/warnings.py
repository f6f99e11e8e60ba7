"""Warnings and assumptions attached to a result: what the user should know about the numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .records import Record


@dataclass(frozen=True)
class EstimateWarning(Record):
    """A coded warning (e.g. W-REC-CLIP): legal input that is probably not what the user meant."""

    code: str
    text: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.text}"


@dataclass(frozen=True)
class Assumption(Record):
    """A value the estimator filled in because the input did not state it, and where it came from."""

    field: str
    value: Any
    source: str

    def __str__(self) -> str:
        return f"{self.field} = {self.value!r} ({self.source})"
