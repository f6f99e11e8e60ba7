"""Help ▸ User guide and Help ▸ Keyboard shortcuts (issue 12): one dialog with the user guide in the interface
language (``guide/<language>.md``: what each number means), the memory and time model with every formula id
(``docs/model.md``), the measured fidelity (``docs/fidelity.md``), and every keyboard shortcut — read from the
window's actions, so the list cannot drift from what the keys do."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from . import language
from .language import translate
from .style import QT_TRANSLATE_NOOP

GUIDE = Path(__file__).with_name("guide")
# keys that belong to a widget rather than to an action of the window (action, keys)
WIDGET_KEYS: tuple[tuple[str, str], ...] = (
    (QT_TRANSLATE_NOOP("Help", "Select the next / previous stage or category in a chart"), "← → ↑ ↓"),
    (QT_TRANSLATE_NOOP("Help", "Explain the selected bar segment"), "Enter"),
    (QT_TRANSLATE_NOOP("Help", "Copy a table (tab-separated) or a chart (image)"), "Ctrl+C"),
    (QT_TRANSLATE_NOOP("Help", "Step a degree field to its next valid value"), "↑ ↓"),
)


def docs_folder() -> Path | None:
    """The project's docs/ folder: beside the package in a checkout, inside the bundle of the packaged app."""
    for base in (Path(getattr(sys, "_MEIPASS", "")), Path(__file__).resolve().parents[1]):
        if str(base) and (base / "docs" / "model.md").is_file():
            return base / "docs"
    return None


def guide_text(code: str) -> str:
    """The user guide in ``code`` (a language code), English when there is no translation."""
    path = GUIDE / f"{code}.md"
    return (path if path.is_file() else GUIDE / "en.md").read_text(encoding="utf-8")


def shortcut_rows(actions: list[QAction]) -> list[tuple[str, str]]:
    """(what, keys) for every action with a shortcut, then the keys widgets handle themselves."""
    rows = []
    for action in actions:
        keys = [k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts()]
        if keys and action.text():
            rows.append((action.text().replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…"),
                         ", ".join(keys)))
    rows.sort(key=lambda row: row[0].lower())
    rows += [(translate("Help", what), keys) for what, keys in WIDGET_KEYS]
    return rows


class HelpDialog(QDialog):
    """The guide, the model, the fidelity page and the shortcuts, in tabs."""

    TABS = ("guide", "model", "fidelity", "shortcuts")

    def __init__(self, actions: list[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("helpDialog")
        self.resize(820, 640)
        self.tabs = QTabWidget()
        self.guide = self._browser("guideText")
        self.model = self._browser("modelText")
        self.fidelity = self._browser("fidelityText")
        self.shortcuts = QTableWidget(0, 2)
        self.shortcuts.setObjectName("shortcutTable")
        self.shortcuts.verticalHeader().setVisible(False)
        self.shortcuts.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.shortcuts.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for widget in (self.guide, self.model, self.fidelity, self.shortcuts):
            self.tabs.addTab(widget, "")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(buttons)
        self.actions_ = actions
        self.retranslate()

    @staticmethod
    def _browser(name: str) -> QTextBrowser:
        browser = QTextBrowser()
        browser.setObjectName(name)
        browser.setOpenExternalLinks(False)
        return browser

    def show_tab(self, name: str) -> None:
        self.tabs.setCurrentIndex(self.TABS.index(name))

    def retranslate(self) -> None:
        self.setWindowTitle(translate("Help", "SAPP Planner help"))
        for i, title in enumerate((translate("Help", "User guide"), translate("Help", "Model and formulas"),
                                   translate("Help", "Fidelity"), translate("Help", "Keyboard shortcuts"))):
            self.tabs.setTabText(i, title)
        self.guide.setMarkdown(guide_text(language.current()))
        docs = docs_folder()
        missing = translate("Help", "This page is in docs/{0} of the SAPP Planner sources; it is not in this "
                                    "installation.")
        for browser, name in ((self.model, "model.md"), (self.fidelity, "fidelity.md")):
            if docs is not None:
                browser.setMarkdown((docs / name).read_text(encoding="utf-8"))
            else:
                browser.setPlainText(missing.format(name))
        rows = shortcut_rows(self.actions_)
        self.shortcuts.setRowCount(len(rows))
        self.shortcuts.setHorizontalHeaderLabels([translate("Help", "Action"), translate("Help", "Keys")])
        for r, (what, keys) in enumerate(rows):
            self.shortcuts.setItem(r, 0, QTableWidgetItem(what))
            item = QTableWidgetItem(keys)
            item.setTextAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            self.shortcuts.setItem(r, 1, item)


__all__ = ["HelpDialog", "docs_folder", "guide_text", "shortcut_rows"]
