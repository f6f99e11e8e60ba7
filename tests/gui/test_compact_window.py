"""A window a laptop user can live in (issue 12): 1024×640 and 1366×768 fit, the side panels collapse and come
back, the analysis tabs scroll instead of setting the window's minimum, and the search table keeps Peak and Step
in view."""

from __future__ import annotations

import pytest
from gui_helpers import MF_DSV3, open_and_wait, run_search


@pytest.mark.parametrize("size", [(1024, 640), (1366, 768)])
def test_the_window_fits_a_small_screen(qtbot, window, size) -> None:
    open_and_wait(qtbot, window, [MF_DSV3])
    for tab in ("memory", "search", "compare", "balance", "schedule"):
        window.show_tab(tab)
        qtbot.wait(50)
        hint = window.minimumSizeHint()
        assert hint.width() <= size[0] and hint.height() <= size[1], (tab, hint)
    window.resize(*size)
    qtbot.wait(100)
    assert (window.width(), window.height()) == size
    if size[1] < 800:  # short: Explain and Warnings share one tabbed panel
        assert window.tabifiedDockWidgets(window.explain_dock) == [window.notes_dock]


def test_side_panels_collapse_and_come_back(qtbot, window) -> None:
    open_and_wait(qtbot, window, [MF_DSV3])
    window.notes_dock.hide()
    panels = window.side_panels
    central = window.centralWidget().width()
    panels.action.trigger()
    assert all(dock.isHidden() for dock in window.docks)
    qtbot.wait(50)
    assert window.centralWidget().width() > central
    panels.action.trigger()
    assert not window.forms_dock.isHidden() and not window.explain_dock.isHidden()
    assert window.notes_dock.isHidden()  # what was hidden before stays hidden
    assert panels.action.shortcut().toString() == "F9"


def test_search_table_keeps_peak_and_step_in_view(qtbot, window) -> None:
    window.resize(1024, 640)
    open_and_wait(qtbot, window, [MF_DSV3])
    run_search(qtbot, window, {"tp": "auto", "pp": "auto", "rec": "auto"})
    table = window.workspace_tabs.search.results.table
    header = table.horizontalHeader()
    width = table.viewport().width()
    from sapp_gui.search_model import COLUMN_KEYS

    for key in ("peak", "step"):
        column = COLUMN_KEYS.index(key)
        left = header.sectionViewportPosition(column)
        assert left >= 0 and left + header.sectionSize(column) <= width, key


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_the_search_tab_fits_1024x640_without_sideways_scrolling(qtbot, window, lang) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QScrollArea

    from sapp_gui.search_model import COLUMN_KEYS

    open_and_wait(qtbot, window, [MF_DSV3])
    if lang != "en":
        window.actions_.language_actions[lang].trigger()
    run_search(qtbot, window, {"tp": "auto", "pp": "auto", "rec": "auto"})
    panel = window.workspace_tabs.search
    wide_columns = panel.space.grid.columnCount()
    window.resize(1024, 640)
    for _ in range(5):
        QApplication.processEvents()
    qtbot.wait(50)
    # the tab itself: the search space's dimensions reflow into fewer columns instead of widening it
    assert window.findChild(QScrollArea, "searchScroll").horizontalScrollBar().maximum() == 0
    assert panel.space._arrangement[0] < 4 <= wide_columns
    # the table: the dimensions the search kept fixed are named once above it, the rest fit its width
    table = panel.table
    assert table.horizontalScrollBar().maximum() == 0
    header = table.horizontalHeader()
    fixed = [k for k in ("vpp", "cp", "ep", "mbs", "sp", "schedule") if header.isSectionHidden(COLUMN_KEYS.index(k))]
    assert fixed == ["vpp", "cp", "ep", "mbs", "sp", "schedule"]
    assert panel.results.same_label.isVisible() and "EP 8" in panel.results.same_label.text()
    assert not any(header.isSectionHidden(COLUMN_KEYS.index(k)) for k in ("tp", "pp", "rec", "peak", "step"))
    # the step time without its band; the cell's tooltip keeps it
    step = COLUMN_KEYS.index("step")
    index = panel.proxy.index(0, step)
    row = panel.rows[panel.proxy.mapToSource(index).row()]
    assert index.data() == row.row.throughput.step.text
    assert row.row.throughput.step.with_band() in index.data(Qt.ItemDataRole.ToolTipRole)
    # on a wide window every column has its full width and the band comes back
    window.resize(1600, 1000)
    for _ in range(5):
        QApplication.processEvents()
    assert panel.space._arrangement[0] == 4
    assert index.data() == row.row.throughput.step.with_band()
    assert all(header.sectionSize(c) >= table.sizeHintForColumn(c) for c in range(len(COLUMN_KEYS))
               if not header.isSectionHidden(c))
