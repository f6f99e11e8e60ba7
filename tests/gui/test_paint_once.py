"""Issue 14, paint cost: an edit repaints each chart once. The labels of the stage chart are placed before the
paint (they were placed by a timer after it, which painted every edit twice) and the new ranges reach the axes
before the paint (pyqtgraph applies them while painting, which asked for a second paint of the layer chart)."""

from __future__ import annotations

from collections import Counter

from gui_helpers import edit_and_wait, open_and_wait


def settled(qtbot, window) -> None:
    """Build the analysis tabs now (the window builds them in idle time after the first chart, which re-lays out
    and repaints the window: on a loaded machine that lands inside the edits counted here) and let it settle."""
    from sapp_gui.workspace import TAB_NAMES

    for name in TAB_NAMES[1:]:
        window.workspace_tabs.panel(name)
    qtbot.wait(200)


def test_an_edit_paints_each_chart_once(qtbot, window, dsv3_plan) -> None:
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    painted: Counter[str] = Counter()

    class Count(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                painted[watched.objectName()] += 1
            return False

    open_and_wait(qtbot, window, [dsv3_plan])
    settled(qtbot, window)
    counter = Count()
    for name, chart in (("stage", window.chart), ("layer", window.layer_chart)):
        chart.plot.viewport().setObjectName(name)
        chart.plot.viewport().installEventFilter(counter)
    for changes in ({"strategy.tp": 8}, {"strategy.recompute": "full"}, {"strategy.tp": 2}):
        painted.clear()
        edit_and_wait(qtbot, window, lambda c=changes: window.edit(dict(c), "edit"))
        for _ in range(3):
            QApplication.processEvents()
        assert painted["stage"] == 1 and painted["layer"] == 1, (changes, painted)
        # what that one paint shows is final: the labels are already where declutter puts them
        before = window.chart.peak_label.pos()
        window.chart.declutter()
        assert window.chart.peak_label.pos() == before


def test_an_edit_repaints_only_what_changed(qtbot, window, dsv3_plan) -> None:
    """A recompute edit changes the tiles' numbers and the charts, nothing in the docks: the Explain and forms
    docks do not repaint, each tile's label paints at most once (the tiles were selectable text, which laid
    itself out again after a paint and repainted them twice more), and the status bar's estimate time keeps its
    size (its new width re-laid the whole window out and repainted it)."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication, QWidget

    painted: Counter[str] = Counter()
    resized: list[str] = []
    docks = {window.explain_dock: "explain", window.forms_dock: "forms"}
    tiles = {label: f"{card.objectName()}.{i}" for card in window.summary.cards
             for i, label in enumerate((card.caption, card.value, card.sub))}

    class Count(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if isinstance(watched, QWidget) and event.type() == QEvent.Type.Paint:
                if watched in tiles:
                    painted[tiles[watched]] += 1
                widget = watched
                while widget is not None and widget not in docks:
                    widget = widget.parentWidget()
                if widget is not None:
                    painted[docks[widget]] += 1
            elif event.type() == QEvent.Type.Resize and watched is window.time_label:
                resized.append("estimateTime")
            return False

    open_and_wait(qtbot, window, [dsv3_plan])
    window.explain_dock.show()
    settled(qtbot, window)
    counter = Count()
    QApplication.instance().installEventFilter(counter)
    try:
        for changes in ({"strategy.recompute": "full"}, {"strategy.recompute": "none"},
                        {"strategy.recompute": "full"}):
            painted.clear()
            resized.clear()
            edit_and_wait(qtbot, window, lambda c=changes: window.edit(dict(c), "edit"))
            qtbot.wait(50)
            assert painted["explain"] == 0 and painted["forms"] == 0, (changes, painted)
            assert all(painted[name] <= 1 for name in tiles.values()), (changes, painted)
            assert sum(painted[name] for name in tiles.values()) > 0  # the tiles did show the new numbers
            assert not resized, window.time_label.text()
            assert window.time_label.text().endswith("ms")
    finally:
        QApplication.instance().removeEventFilter(counter)
