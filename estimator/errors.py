"""The project's own error types. Everything the estimator raises for bad input derives from SappError,
so callers (CLI, GUI) can show the message instead of a traceback. Messages come from the catalogue
(``estimator.messages``): ``str(error)`` is English, ``error.localized(language)`` the same in the app's
language."""

from __future__ import annotations

from dataclasses import dataclass, field

from .messages import ENGLISH, Message, Text, english, msg

MAX_MESSAGE_CHARS = 4000
"""An error message shown to the user is at most 4,000 characters (a value quoted in it may be huge)."""


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` shortened to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 60]} … [{len(text):,} characters in all, shortened]"


def clip_middle(text: str, limit: int = 400) -> str:
    """``text`` (a path or key in a message) shortened in the middle, so that a path of 6,000 characters leaves
    room for what the message says about it."""
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}…{text[-(limit // 2):]}"


class SappError(Exception):
    """Base class: the message is meant for the user and names what to fix (clipped to MAX_MESSAGE_CHARS).
    The first argument is a catalogue ``Message`` (or, for text from outside, a string)."""

    def __init__(self, *args: object) -> None:
        self.catalogued: Message | None = args[0] if args and isinstance(args[0], Message) else None
        super().__init__(*(clip(english(a)) if isinstance(a, str | Message) else a for a in args))

    def localized(self, language: str = ENGLISH) -> str:
        """The message in ``language`` (English: ``str(self)``)."""
        if self.catalogued is None:
            return Exception.__str__(self)
        return clip(self.catalogued.render(language))

    def __reduce__(self) -> tuple:  # keeps the message when sent between processes
        return _rebuild, (type(self), self.__dict__, self.args)


def _rebuild(cls: type[SappError], state: dict, args: tuple) -> SappError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class ModelSpecError(SappError):
    """The model description is incomplete or inconsistent."""


class ConfigError(SappError):
    """A configuration file (or plan file, or override) cannot be read.

    ``path``, ``key``, ``line`` and ``column`` locate the problem when known.
    """

    def __init__(self, message: Text, *, path: str | None = None, key: str | None = None,
                 line: int | None = None, column: int | None = None) -> None:
        self.path = path
        self.key = key
        self.line = line
        self.column = column
        self.bare_message = clip(english(message))
        self.bare = message  # the message without its place, to be said in another language (``bare_in``)
        place = clip_middle(str(path)) if path else ""
        if place and line is not None:
            place += f":{line}" + (f":{column}" if column is not None else "")
        located = message
        key = clip_middle(key) if key else key
        if place and key:
            located = msg("error.at-path-key", path=place, key=key, message=message)
        elif place or key:
            located = msg("error.at-path", path=place, message=message) if place else \
                msg("error.at-key", key=key, message=message)
        # text from outside (not a catalogue message) stays plain: it has no other language
        super().__init__(located if isinstance(message, Message) else english(located))

    def bare_in(self, language: str = ENGLISH) -> str:
        """The message without its place (file, key), in ``language``."""
        return clip(self.bare.render(language)) if isinstance(self.bare, Message) else self.bare_message


@dataclass(frozen=True)
class Violation:
    """One violated rule: a stable code (docs/model.md#layout, docs/model.md#search) and its message."""

    code: str
    message: Text
    catalogued: Message | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.message, Message):
            object.__setattr__(self, "catalogued", self.message)
            object.__setattr__(self, "message", english(self.message))

    def localized(self, language: str = ENGLISH) -> str:
        text = self.catalogued.render(language) if self.catalogued else self.message
        return f"[{self.code}] {text}"

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class LayoutError(SappError):
    """The layer partition cannot be built (docs/model.md#layout). ``path`` and ``key`` name the config value it is
    about when known (``located``)."""

    def __init__(self, code: str, message: Text, *, path: str | None = None, key: str | None = None) -> None:
        self.code = code
        self.path, self.key = path, key
        self.violations = (Violation(code, message),)
        coded = msg("error.coded", code=code, message=message)
        if path and key:
            coded = msg("error.at-path-key", path=clip_middle(path), key=clip_middle(key), message=coded)
        super().__init__(coded)

    def located(self, path: str, key: str) -> LayoutError:
        """The same error naming the file and key of the value it is about."""
        violation = self.violations[0]
        return LayoutError(self.code, violation.catalogued or violation.message, path=path, key=key)


class StrategyError(SappError):
    """The strategy is impossible; lists every violated rule with its code."""

    def __init__(self, violations: list[Violation] | tuple[Violation, ...]) -> None:
        self.violations = tuple(violations)
        count = len(self.violations)
        super().__init__(msg("E-STRATEGY.one") if count == 1 else msg("E-STRATEGY.many", count=count))

    def __str__(self) -> str:
        return self.localized(ENGLISH)

    def localized(self, language: str = ENGLISH) -> str:
        lines = "".join(f"\n  {v.localized(language)}" for v in self.violations)
        return clip(super().localized(language) + lines)

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(v.code for v in self.violations)
