"""Opening configs: a simulated drop (one file, several files), the start page, bad files, device count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gui_helpers import EXAMPLES
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication


def drop(widget, paths: list[Path] | None = None, text: str | None = None) -> tuple[bool, bool]:
    """Send DragEnter + Drop with the given files."""
    mime = QMimeData()
    if paths is not None:
        mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    if text is not None:
        mime.setText(text)
    pos = QPointF(widget.rect().center())
    args = (Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    try:
        enter = QDragEnterEvent(pos, *args)  # PySide6 ≥ 6.12 (the QPoint overload is deprecated there)
    except TypeError:
        enter = QDragEnterEvent(pos.toPoint(), *args)  # PySide6 6.11
    QApplication.sendEvent(widget, enter)
    if not enter.isAccepted():
        return False, False
    event = QDropEvent(pos, *args)
    QApplication.sendEvent(widget, event)
    return True, event.isAccepted()


def test_drop_opens_and_draws(qtbot, window, dsv3_plan: Path) -> None:
    assert window.stack.currentWidget() is window.start_page
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000) as blocker:
        assert drop(window, [dsv3_plan]) == (True, True)
    result = blocker.args[0]
    assert window.stack.currentWidget() is window.workspace
    data = window.chart.data()
    assert data["stages"] == 16
    np.testing.assert_allclose(data["totals_gib"], [s.total / 2**30 for s in result.stages])
    assert data["peak_label"] == f"peak {result.peak_bytes / 2**30:,.2f} GiB"  # the device peak (issue 10)
    assert data["peak_label"].startswith("peak 39.")
    assert window.summary.verdict.value.text() == "Fits"
    assert window.forms.row("strategy.tp").editor.value() == 4
    assert "deepseek_v3_671b.plan.yaml" in window.forms.row("strategy.tp").editor.toolTip()
    assert "DeepSeek" in window.windowTitle() or dsv3_plan.name in window.windowTitle()


def test_drop_of_several_files_makes_one_plan(qtbot, window) -> None:
    script = EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh"
    model = EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json"
    if not (script.is_file() and model.is_file()):
        pytest.skip("the MindSpeed-MM example pair is not in resources/examples")
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        assert drop(window, [script, model]) == (True, True)
    assert window.doc.paths == (str(script), str(model))
    assert window.chart.data()["stages"] == window.doc.parsed.strategy.pp


def test_text_drag_is_refused(window) -> None:
    assert drop(window, text="not a file") == (False, False)


def test_bad_file_shows_the_message_not_a_crash(qtbot, window, tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("strategy: [unclosed\n")
    with qtbot.waitSignal(window.open_failed, timeout=20000):
        assert window.open_paths([str(bad)])  # read on a worker: the failure arrives as a signal
    assert window.start_page.message.isVisible()
    assert "broken.yaml" in window.start_page.message.text()
    assert window.stack.currentWidget() is window.start_page


def test_start_page_lists_examples_and_opens_one(qtbot, window) -> None:
    items = window.start_page.examples
    titles = [items.item(i).text() for i in range(items.count())]
    assert any("DeepSeek-V3 671B — plan file" in t for t in titles)
    index = next(i for i, t in enumerate(titles) if "plan file" in t)
    items.setCurrentRow(index)
    items.setFocus()
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        qtbot.keyClick(items, Qt.Key.Key_Return)
    assert window.doc.parsed.model.name == "DeepSeek-V3-671B"


def test_device_count_is_asked_when_the_format_does_not_state_it(qtbot, window) -> None:
    toml = EXAMPLES / "torchtitan_llama3_8b_longctx_cp.toml"
    if not toml.is_file():
        pytest.skip("no torchtitan example")
    with qtbot.waitSignal(window.open_failed, timeout=20000):
        assert window.open_paths([str(toml)])
    page = window.start_page
    assert not page.retry_box.isHidden()
    page.devices.setValue(8)
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        qtbot.mouseClick(page.retry_button, Qt.MouseButton.LeftButton)
    assert window.doc.parsed.strategy.world_size == 8
    assert window.settings.recent()[0][1] == {"devices": 8}


def test_drop_anywhere_on_the_window(qtbot, window, dsv3_plan: Path, dense_plan: Path) -> None:
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        assert drop(window, [dsv3_plan]) == (True, True)
    # onto the chart, a form field and the explain panel: the drop reaches the window and opens the file
    targets = (window.chart.plot.viewport(), window.forms.row("strategy.tp").editor, window.explain.tree)
    for target, path in zip(targets, (dense_plan, dsv3_plan, dense_plan), strict=True):
        with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
            assert drop(target, [path]) == (True, True)
        assert window.doc.paths == (str(path),)
