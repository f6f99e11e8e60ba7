"""'Does not fit' offers the nearest fixes in one click (issue 12)."""

from __future__ import annotations

import pytest
from gui_helpers import MF_DSV3, edit_and_wait, open_and_wait


# the menu pops up under the button: the offscreen platform says it cannot grab the keyboard or raise it
@pytest.mark.qt_log_ignore("grabbing the keyboard", "does not support raise")
def test_does_not_fit_offers_the_nearest_fixes_and_one_click_applies_one(qtbot, window) -> None:
    open_and_wait(qtbot, window, [MF_DSV3])
    bar = window.fixes_bar
    assert bar.isHidden()  # it fits
    result = edit_and_wait(qtbot, window, lambda: window.edit({"strategy.recompute": "none"}, "no recompute"))
    assert not result.fits and bar.isVisible()
    with qtbot.waitSignal(bar.runner.finished, timeout=60000):
        bar.button.click()
    assert bar.fixes and len(bar.menu.actions()) == len(bar.fixes)
    first = bar.fixes[0]
    assert first.summary.startswith("recompute none → full")
    fixed = edit_and_wait(qtbot, window, lambda: bar.menu.actions()[0].trigger())
    assert fixed.fits and fixed.step_time_s == first.step_time_s
    assert bar.isHidden()
    assert window.undo_stack.count() == 2  # the fix is one undoable edit
    undone = edit_and_wait(qtbot, window, window.undo_stack.undo)
    assert not undone.fits


def test_fixes_of_an_older_plan_are_dropped(qtbot, window) -> None:
    open_and_wait(qtbot, window, [MF_DSV3])
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.recompute": "none"}, "no recompute"))
    bar = window.fixes_bar
    bar.find()
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.tp": 8}, "tp 8"))
    qtbot.wait(300)
    assert bar.fixes == []  # the request was for the plan before the edit


@pytest.mark.qt_log_ignore("grabbing the keyboard", "does not support raise")
def test_the_fixes_speak_the_apps_language(qtbot, window) -> None:
    window.set_language("zh_CN")
    open_and_wait(qtbot, window, [MF_DSV3])
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.recompute": "none"}, "no recompute"))
    bar = window.fixes_bar
    with qtbot.waitSignal(bar.runner.finished, timeout=60000):
        bar.button.click()
    texts = [action.text() for action in bar.menu.actions()]
    assert texts and texts[0].startswith("重计算 none → full") and not any("recompute" in t for t in texts)
    edit_and_wait(qtbot, window, lambda: bar.menu.actions()[0].trigger())
    assert window.undo_stack.text(window.undo_stack.index() - 1).endswith("重计算 none → full")
