"""Help ▸ User guide in the interface language and Help ▸ Keyboard shortcuts read from the window's actions
(issue 12)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QAction, QKeySequence

# the dialog is raised over the window: the offscreen platform says it cannot raise windows
pytestmark = pytest.mark.qt_log_ignore("does not support raise")


def test_user_guide_in_english_and_chinese(qtbot, window) -> None:
    from sapp_gui import language

    window.actions_.named["user_guide"].trigger()
    dialog = window.help_dialog
    assert dialog.isVisible() and dialog.tabs.currentIndex() == 0
    assert "The tiles" in dialog.guide.toPlainText() and "Headroom" in dialog.guide.toPlainText()
    assert "Symbols" in dialog.model.toPlainText()  # docs/model.md: the formulas' glossary
    assert "fidelity" in dialog.fidelity.toPlainText().lower()
    window.set_language("zh_CN")
    assert language.current() == "zh_CN"
    window.actions_.named["user_guide"].trigger()
    assert "概览卡片" in dialog.guide.toPlainText() and dialog.tabs.tabText(0) != "User guide"


def test_keyboard_shortcuts_list_every_action_with_keys(qtbot, window) -> None:
    window.actions_.named["shortcuts"].trigger()
    dialog = window.help_dialog
    assert dialog.tabs.currentIndex() == 3
    table = dialog.shortcuts
    rows = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
    for action in window.findChildren(QAction):
        if action.shortcut().isEmpty() or not action.text():
            continue
        name = action.text().replace("&", "").rstrip("…")
        assert name in rows, name
        assert rows[name].startswith(action.shortcut().toString(QKeySequence.SequenceFormat.NativeText))
    assert rows["Side panels"] == "F9" and "Ctrl+C" in rows.values()


def test_no_two_actions_share_a_shortcut(window) -> None:
    """Qt disables both actions of an ambiguous shortcut without a word."""
    seen: dict[str, str] = {}
    for action in window.findChildren(QAction):
        for key in action.shortcuts():
            text = key.toString()
            assert text not in seen, f"{text}: {seen.get(text)} and {action.text()}"
            seen[text] = action.text()
