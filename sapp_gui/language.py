"""The interface language: Qt translations compiled to ``sapp_gui/i18n/sapp_<code>.qm`` (Simplified Chinese
ships), chosen by the View ▸ Language setting or, when that is "system", from the system locale.

User-visible strings are marked with ``translate("Context", "text")`` (``QCoreApplication.translate``) or
``QT_TRANSLATE_NOOP`` for tables of labels, so that ``pyside6-lupdate`` finds them (see ``i18n_build.py``).
Switching the language at run time installs the translators and the window calls every panel's
``retranslate()``. The estimator's own messages (errors, warnings, assumptions, Explain headings) come from its
message catalogue (``estimator.messages``) and are shown in the same language through ``said``; numbers, units,
codes, keys and file paths stay as written.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator
from PySide6.QtGui import QFontDatabase

from estimator.errors import SappError
from estimator.messages import localize

from . import document
from .style import CATEGORY_LABELS

translate = QCoreApplication.translate
document.set_translator(lambda text: QCoreApplication.translate("Document", text), language=lambda: current())

SYSTEM = "system"
ENGLISH = "en"
CHINESE = "zh_CN"
# each language named in its own language (never translated)
LANGUAGES: dict[str, str] = {ENGLISH: "English", CHINESE: "简体中文"}
QM_PREFIX = "sapp_"

_installed: list[QTranslator] = []
_current = ENGLISH


def i18n_dir() -> Path:
    """Folder of the compiled translations (inside the package; PyInstaller puts it at the same place)."""
    return Path(__file__).resolve().with_name("i18n")


def qm_path(code: str) -> Path:
    return i18n_dir() / f"{QM_PREFIX}{code}.qm"


def available() -> list[str]:
    """Languages that can be shown: English and every shipped .qm."""
    return [ENGLISH, *(code for code in LANGUAGES if code != ENGLISH and qm_path(code).is_file())]


def system_language(locale: QLocale | None = None) -> str:
    """The shipped language closest to the system locale: Chinese of any script → zh_CN, else English.
    ``SAPP_LANG`` overrides the locale (e.g. ``SAPP_LANG=zh_CN``)."""
    override = os.environ.get("SAPP_LANG", "").strip()
    if override:
        return normalize(override)
    loc = locale or QLocale.system()
    if loc.language() == QLocale.Language.Chinese:
        return CHINESE
    return ENGLISH


def normalize(code: str | None) -> str:
    """"zh", "zh_CN", "zh-Hans", "chinese" → zh_CN; "system" stays; anything else → en."""
    text = (code or "").strip().replace("-", "_").lower()
    if text == SYSTEM:
        return SYSTEM
    if text.startswith("zh") or text.startswith("chinese"):
        return CHINESE
    return ENGLISH


def resolve(setting: str | None) -> str:
    """The language a setting stands for ("system" or unset → the system locale's)."""
    code = normalize(setting) if setting else SYSTEM
    return system_language() if code == SYSTEM else code


def current() -> str:
    return _current


def said(value: object) -> str:
    """What the estimator says (an error, a warning, an assumption, a catalogue message) in the interface
    language; plain text (e.g. an error of the operating system) as written."""
    return localize(value, _current)


def error_text(error: BaseException) -> str:
    """An error for a message line: the estimator's own in the interface language, any other with its type."""
    return said(error) if isinstance(error, SappError) else f"{type(error).__name__}: {error}"


def apply(code: str) -> bool:
    """Install the translators of ``code`` (English: none). Returns False when its .qm is missing (the
    interface then stays in English). Qt's own strings (standard buttons, file dialogs) follow when Qt ships
    their translation."""
    global _current
    app = QCoreApplication.instance()
    if app is None:
        raise RuntimeError("apply() needs a QApplication")
    for translator in _installed:
        app.removeTranslator(translator)
    _installed.clear()
    code = normalize(code)
    if code == SYSTEM:
        code = system_language()
    if code == ENGLISH:
        _current = ENGLISH
        return True
    ours = QTranslator(app)
    if not ours.load(str(qm_path(code))):
        _current = ENGLISH
        return False
    qt_dir = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
    for name in ("qtbase",):
        qt = QTranslator(app)
        if qt.load(f"{name}_{code}", qt_dir):
            app.installTranslator(qt)
            _installed.append(qt)
    app.installTranslator(ours)
    _installed.append(ours)
    _current = code
    return True


def has_font_for(code: str) -> bool:
    """Whether an installed font covers the language's script (CJK needs e.g. fonts-noto-cjk)."""
    if code != CHINESE:
        return True
    return bool(QFontDatabase.families(QFontDatabase.WritingSystem.SimplifiedChinese))


def category_label(category: str) -> str:
    """The translated name of one of the memory categories (English names: ``estimator.palette``)."""
    return translate("Category", CATEGORY_LABELS[category])
