"""Export strategy: the diff is shown first, then the files are written (and read back the same); Save As;
formats without a writer are reported, not raised; the unsaved-edits prompt on close."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gui_helpers import EXAMPLES, edit_and_wait, open_and_wait, type_into
from PySide6.QtCore import Qt

from estimator.formats import parse


def test_export_round_trip_with_diff(qtbot, window, dsv3_plan: Path) -> None:
    original_text = dsv3_plan.read_text()
    open_and_wait(qtbot, window, [dsv3_plan])
    edit_and_wait(qtbot, window, lambda: type_into(qtbot, window.forms.row("strategy.tp").editor, "8"))
    dialog = window.export_strategy()
    assert dialog is not None and dialog.isVisible()
    diff = dialog.view.toPlainText()
    assert "-  tp: 4" in diff and "+  tp: 8" in diff
    assert "-  dp: 16" in diff and "+  dp: 8" in diff
    assert "+  micro_batches: 64" in diff
    assert dsv3_plan.read_text() == original_text  # nothing written before the user says so
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        qtbot.mouseClick(dialog.write_button, Qt.MouseButton.LeftButton)
    assert Path(str(dsv3_plan) + ".bak").read_text() == original_text
    reread = parse([dsv3_plan]).strategy
    assert (reread.tp, reread.dp, reread.micro_batches) == (8, 8, 64)
    assert "# DeepSeek-V3 671B" in dsv3_plan.read_text()  # comments kept
    # the window now treats the written file as the baseline
    assert not window.doc.is_modified() and not window.isWindowModified()
    assert window.undo_stack.count() == 0
    assert window.forms.row("strategy.tp").mark is None


def test_save_as_another_path(qtbot, window, dsv3_plan: Path, tmp_path: Path) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.tp": 2}, "tp 2"))
    dialog = window.export_strategy()
    target = tmp_path / "out" / "edited.plan.yaml"
    target.parent.mkdir()
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        assert dialog.save_as(str(target))
    assert parse([target]).strategy.tp == 2
    assert parse([dsv3_plan]).strategy.tp == 4  # the source is untouched
    assert window.doc.paths == (str(target),)
    assert window.doc.parsed.strategy.tp == 2 and not window.doc.is_modified()


def test_export_of_a_framework_config(qtbot, window, tmp_path: Path) -> None:
    source = EXAMPLES / "mindformers_llama3_70b.yaml"
    if not source.is_file():
        pytest.skip("no MindFormers example")
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    open_and_wait(qtbot, window, [copy])
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.tp": 4}, "tp 4"))
    dialog = window.export_strategy()
    if dialog is None:  # the writer is not there (yet): the window says so instead of raising
        assert window.banner.isVisibleTo(window) and "Export" in window.banner.text()
        return
    assert "model_parallel: 4" in dialog.view.toPlainText()
    dialog.reject()


def test_nothing_to_export_without_edits(qtbot, window, dsv3_plan: Path) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    assert window.export_strategy() is None


def test_close_prompts_for_unsaved_edits(qtbot, window, dsv3_plan: Path) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.tp": 8}, "tp 8"))
    asked = []
    window.ask_unsaved = lambda: asked.append(1) or "cancel"
    assert window.close() is False and window.isVisible()
    window.ask_unsaved = lambda: asked.append(2) or "discard"
    assert window.close() is True
    assert asked == [1, 2]


def test_an_invalid_plan_is_never_exported(qtbot, window, dsv3_plan: Path) -> None:
    """ep 3 is accepted as an edit (the chart says it cannot be priced) but the export refuses it by rule, as
    ``sapp export --set strategy.ep=3`` does; nothing is written."""
    text = dsv3_plan.read_text()
    open_and_wait(qtbot, window, [dsv3_plan])
    with qtbot.waitSignal(window.estimate_failed, timeout=20000):
        window.edit({"strategy.ep": 3}, "ep 3")
    assert window.doc.parsed.strategy.ep == 3
    assert window.export_strategy() is None
    assert window.banner.isVisibleTo(window)
    assert "Not exported" in window.banner.text() and "R-EP-EXP" in window.banner.text()
    assert dsv3_plan.read_text() == text and not Path(f"{dsv3_plan}.bak").exists()
