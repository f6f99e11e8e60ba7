"""The project's own error types. Everything the estimator raises for bad input derives from SappError,
so callers (CLI, GUI) can show the message instead of a traceback."""

from __future__ import annotations

from dataclasses import dataclass

MAX_MESSAGE_CHARS = 4000
"""An error message shown to the user is at most 4,000 characters (a value quoted in it may be huge)."""


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` shortened to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 60]} … [{len(text):,} characters in all, shortened]"


class SappError(Exception):
    """Base class: the message is meant for the user and names what to fix (clipped to MAX_MESSAGE_CHARS)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(clip(a) if isinstance(a, str) else a for a in args))


class ModelSpecError(SappError):
    """The model description is incomplete or inconsistent."""


class ConfigError(SappError):
    """A configuration file (or plan file, or override) cannot be read.

    ``path``, ``key``, ``line`` and ``column`` locate the problem when known.
    """

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None,
                 line: int | None = None, column: int | None = None) -> None:
        self.path = path
        self.key = key
        self.line = line
        self.column = column
        self.bare_message = clip(message)
        where = []
        if path:
            loc = str(path)
            if line is not None:
                loc += f":{line}"
                if column is not None:
                    loc += f":{column}"
            where.append(loc)
        if key:
            where.append(f"key '{key}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


@dataclass(frozen=True)
class Violation:
    """One violated rule: a stable code (docs/model.md#layout, docs/model.md#search) and its message."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class LayoutError(SappError):
    """The layer partition cannot be built (docs/model.md#layout)."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.violations = (Violation(code, message),)
        super().__init__(f"[{code}] {message}")


class StrategyError(SappError):
    """The strategy is impossible; lists every violated rule with its code."""

    def __init__(self, violations: list[Violation] | tuple[Violation, ...]) -> None:
        self.violations = tuple(violations)
        lines = "\n".join(f"  {v}" for v in self.violations)
        noun = "rule" if len(self.violations) == 1 else "rules"
        super().__init__(f"the strategy violates {len(self.violations)} {noun}:\n{lines}")

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(v.code for v in self.violations)
