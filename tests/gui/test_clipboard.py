"""Copy to the clipboard wherever a user reads numbers (issue 12): tables as TSV with headers, charts as PNG, the
tiles as caption–value–detail lines."""

from __future__ import annotations

import pytest
from gui_helpers import MF_QWEN3, open_and_wait, run_search
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication


def clipboard_text() -> str:
    return QGuiApplication.clipboard().text()


def test_tiles_copy_as_tab_separated_lines(qtbot, window) -> None:
    result = open_and_wait(qtbot, window, [MF_QWEN3])
    text = window.summary.tiles_tsv()
    lines = text.splitlines()
    assert lines[0].split("\t")[:2] == ["Verdict", "Fits"]
    assert any(line.startswith("Peak\t") and f"{result.peak_bytes / 2**30:,.2f} GiB" in line for line in lines)


def test_search_table_copies_as_tsv_with_ctrl_c(qtbot, window) -> None:
    open_and_wait(qtbot, window, [MF_QWEN3])
    run_search(qtbot, window, {"tp": "auto", "pp": "auto"})
    table = window.workspace_tabs.search.results.table
    table.setFocus()
    QGuiApplication.clipboard().clear()
    qtbot.keyClick(table, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    lines = clipboard_text().splitlines()
    assert lines[0].split("\t")[:3] == ["#", "Peak GiB", "Step s"]
    assert len(lines) == 1 + table.model().rowCount()
    assert all(len(line.split("\t")) == len(lines[0].split("\t")) for line in lines)


@pytest.mark.parametrize("chart", ["chart", "layer_chart"])
def test_charts_copy_as_png_and_their_numbers_as_tsv(qtbot, window, chart) -> None:
    open_and_wait(qtbot, window, [MF_QWEN3])
    widget = getattr(window, chart)
    QGuiApplication.clipboard().clear()
    widget.plot.setFocus()
    qtbot.keyClick(widget.plot, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    image = QGuiApplication.clipboard().image()
    assert not image.isNull() and image.width() >= widget.size().width() * 0.9
    widget.copy_tsv()
    lines = clipboard_text().splitlines()
    assert len(lines) == len(widget.csv_rows()) and "\t" in lines[0]
