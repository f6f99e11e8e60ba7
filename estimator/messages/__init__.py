"""Text for the user, in every language the app speaks: a ``Message`` is a catalogue key and its parameters,
rendered from the message catalogue (``estimator/messages/*.yaml``: each key with its English and Simplified
Chinese template). The estimator stays English by default — ``str(message)`` and every ``text`` field, the CLI
and the JSON are English — and an interface in another language renders the same message in it.

Adding a message is one step: write the key with both templates into the catalogue file of its area and pass
``msg("KEY", name=value, …)`` where the text goes — ``EstimateWarning(code, msg(…))``,
``Assumption(field, value, msg(…))``, ``ConfigError(msg(…), path=…)``, ``Violation(code, msg(…))``, Explain's
``Quantity(msg(…), …)``. A key is a warning or rule code (``W-REC-CLIP``), or the code and a variant
(``W-REC-CLIP.chunk``) when one code says several things. Templates use ``str.format`` fields named like the
parameters (``{stage}``, ``{size:,}``); a parameter may itself be a ``Message`` (rendered in the same language),
a ``Listing`` or a list holding Messages (joined: ", " in English, "、" in Chinese) or an error or warning (said
in the same language). ``tests/test_messages.py`` reads every ``msg`` call of the source and fails on a key
missing from the catalogue, a parameter a template does not name (or the reverse), and on text handed to those
constructors without a catalogue key, and on an entry without its ``zh_CN`` template (which the app would show
in English, never as a key or a marker).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

ENGLISH = "en"
CHINESE = "zh_CN"
LANGUAGES = (ENGLISH, CHINESE)
LIST_SEPARATOR = {ENGLISH: ", ", CHINESE: "、"}
CATALOGUE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Message:
    """A catalogue key and its parameters; ``str()`` is the English text."""

    key: str
    params: tuple[tuple[str, Any], ...] = ()

    def render(self, language: str = ENGLISH) -> str:
        entry = catalogue().get(self.key)
        if entry is None:  # tests/test_messages.py keeps this from happening; never lose the words if it does
            return f"{self.key} {dict(self.params)}" if self.params else self.key
        template = entry.get(language) or entry[ENGLISH]
        # an estimate says the same things again and again (its warnings, each stage's peak instant): a text
        # whose parameters are plain values is kept, keyed by its template, language and typed parameters
        key = _plain_key(self.params)
        if key is not None:
            got = _RENDERED.get((template, language, key))
            if got is not None:
                return got
        try:
            text = _Formatter(language).vformat(template, (), dict(self.params))
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            if language != ENGLISH:
                return self.render(ENGLISH)
            return f"{template} {dict(self.params)}"
        if key is not None:
            if len(_RENDERED) >= RENDERED_KEPT:
                _RENDERED.clear()
            _RENDERED[(template, language, key)] = text
        return text

    def localized(self, language: str) -> str:
        return self.render(language)

    def __str__(self) -> str:
        return self.render(ENGLISH)


class Listing(tuple):
    """Items said as one list: ", " between them in English, "、" in Chinese, each item in the language."""


RENDERED_KEPT = 4096
_RENDERED: dict[tuple, str] = {}
_PLAIN = (str, int, bool, type(None))


def _plain_key(params: tuple[tuple[str, Any], ...]) -> tuple | None:
    """The parameters as a key that tells apart every value that renders differently (1, 1.0 and True are equal
    in Python, 0.0 and -0.0 too): each value with its exact type, floats by their bits, nested messages and
    tuples by their own keys; None when a value is of another kind (a list, an error, a numpy number, …)."""
    out = []
    for name, value in params:
        kind = type(value)
        if kind in _PLAIN:
            out.append((name, kind, value))
        elif kind is float:
            out.append((name, kind, value.hex()))
        elif kind is Message:
            inner = _plain_key(value.params)
            if inner is None:
                return None
            out.append((name, kind, value.key, inner))
        elif kind is tuple or kind is Listing:
            inner = _plain_key(tuple(("", v) for v in value))
            if inner is None:
                return None
            out.append((name, kind, inner))
        else:
            return None
    return tuple(out)


def msg(key: str, /, **params: Any) -> Message:
    """The message ``key`` of the catalogue with its parameters."""
    return Message(key, tuple(params.items()))


def joined(messages: list[Message] | tuple[Message, ...], separator: str = "list.semicolons") -> Message:
    """Several messages as one, separated by "; " (Chinese: "；"), or one a line (``separator="list.lines"``)."""
    first, *rest = messages
    return first if not rest else Message(separator, (("first", first), ("rest", joined(rest, separator))))


Text = str | Message
"""Where the estimator takes text for the user: a ``Message`` (always, in the estimator's own code) or a plain
string (text from outside, e.g. a record read back from JSON)."""


@runtime_checkable
class Localizable(Protocol):
    def localized(self, language: str) -> str: ...


def _localizable(value: object) -> bool:
    """``isinstance(value, Localizable)`` as the runtime protocol check decides it (the method is there and not
    None), without its cost: messages render several fields each, and an estimate renders dozens."""
    return getattr(value, "localized", None) is not None


def localize(value: object, language: str = ENGLISH) -> str:
    """``value`` (a Message, a warning, an assumption, a violation, an error, or a string) in ``language``."""
    if _localizable(value):
        return value.localized(language)
    return str(value)


def english(text: Text) -> str:
    return text.render(ENGLISH) if isinstance(text, Message) else str(text)


def message_of(text: Text) -> Message | None:
    return text if isinstance(text, Message) else None


def reason(exc: BaseException) -> Text:
    """What an exception says: the catalogue message it was raised with (``ValueError(msg(…))``), else its text."""
    first = exc.args[0] if exc.args else None
    return first if isinstance(first, Message) else str(exc)


@cache
def catalogue() -> Mapping[str, Mapping[str, str]]:
    """Every key of every catalogue file: ``{key: {language: template}}`` (a key in two files is an error). Read on
    the first rendered message (``sapp --version`` and ``--help`` never need it), and kept on disk per content of
    the files (``data_cache``): every CLI run and app worker renders one, and parsing ~90 files costs ~25 ms."""
    from ..data_cache import cached

    files = catalogue_files()
    return cached("messages", files, lambda: _read_catalogue(files), _is_catalogue)


def _read_catalogue(files: list[Path]) -> dict[str, dict[str, str]]:
    import yaml  # libyaml's parser where PyYAML has it (PyYAML's pure-Python one took ~0.15 s for these files);
    # not yamlio's bounded loader: these are the package's own files, and yamlio's bounds speak through messages

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: dict[str, dict[str, str]] = {}
    for path in files:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}
        for key, entry in data.items():
            if key in out:
                raise ValueError(f"{path.name}: message {key} is already in another catalogue file")
            out[str(key)] = {str(lang): str(text) for lang, text in entry.items()}
    return out


def _is_catalogue(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(entry, dict) and
        all(isinstance(lang, str) and isinstance(text, str) for lang, text in entry.items())
        for key, entry in value.items())


def catalogue_files() -> list[Path]:
    return sorted(CATALOGUE_DIR.glob("*.yaml"))


def fields(template: str) -> set[str]:
    """The parameter names a template uses."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}


class _Formatter(string.Formatter):
    """``str.format`` that renders Message parameters (and lists of them) in the message's language; so does a
    parameter that can say itself in a language (an error, a warning)."""

    def __init__(self, language: str) -> None:
        self.language = language

    def format_field(self, value: Any, format_spec: str) -> str:
        if _localizable(value):
            value = value.localized(self.language)
        elif isinstance(value, Listing) or (isinstance(value, list | tuple) and
                                            any(isinstance(v, Message) for v in value)):
            value = LIST_SEPARATOR.get(self.language, ", ").join(localize(v, self.language) for v in value)
        return super().format_field(value, format_spec)


__all__ = ["CHINESE", "ENGLISH", "LANGUAGES", "Listing", "Message", "Text", "catalogue", "english", "fields", "joined",
           "localize", "message_of", "msg", "reason"]
