"""What the app says about the session's values: where a field's value came from (its tooltip) and the texts
of the document (a user preset that could not be read). The rules themselves — edits, hold rules, undo, the
estimate's freshness, export — are the library's ``estimator.session``; nothing here decides anything.

No Qt imports: the texts go through ``tr``, which the GUI points at its Qt translations (``language.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from estimator.fields import SIZE_FIELDS
from estimator.messages import ENGLISH
from estimator.session import PlanSession, canonical_key
from estimator.units import fmt_gib
from estimator.warnings import Assumption, plain

from .style import QT_TRANSLATE_NOOP

_translator: Callable[[str], str] = str


def _english() -> str:
    return ENGLISH


_language: Callable[[], str] = _english  # the interface language (the app sets it)


def set_translator(fn: Callable[[str], str], language: Callable[[], str] | None = None) -> None:
    """Route the document's texts (context "Document") through ``fn`` (the GUI's translations); ``language``
    names the interface language the estimator's own messages are said in."""
    global _translator, _language
    _translator = fn
    if language is not None:
        _language = language


def tr(text: str) -> str:
    return _translator(text)


def describe(session: PlanSession, key: str, assumptions: dict[str, Assumption] | None = None) -> str:
    """Where the field's current value came from, for its tooltip."""
    key = canonical_key(key)
    parsed = session.parsed
    prov = parsed.provenance.get(key)
    mark = session.mark(key)
    was = _show(session.original_value(key), key)
    if mark == "edited":
        return tr(QT_TRANSLATE_NOOP("Document", "edited here (the file gives {0})")).format(was)
    if mark == "derived" and prov is not None:
        return tr(QT_TRANSLATE_NOOP("Document", "{0} (was {1})")).format(prov.describe(), was)
    if prov is not None and prov.source not in ("edit", "derived"):
        return prov.describe()
    original = session.original
    if prov is not None and original is not None and key in original.provenance:
        return original.provenance[key].describe()
    if assumptions and key in assumptions:
        return tr(QT_TRANSLATE_NOOP("Document", "default: {0}")).format(assumptions[key].source_in(_language()))
    if key.startswith("hardware.") and original is not None:
        return tr(QT_TRANSLATE_NOOP("Document", "device preset {0}")).format(parsed.hardware.id or parsed.hardware.name)
    return tr(QT_TRANSLATE_NOOP("Document", "default"))


def preset_problem(session: PlanSession) -> str:
    """Why the user presets were ignored while opening, or ""."""
    if not session.preset_problem:
        return ""
    return tr(QT_TRANSLATE_NOOP("Document", "user presets ignored: {0}")).format(session.preset_problem)


def _show(value: Any, key: str = "") -> str:
    if key in SIZE_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return fmt_gib(value)
    if value is None:
        return tr(QT_TRANSLATE_NOOP("Document", "unset"))
    return plain(value)  # as a config writes it: never a Python repr
