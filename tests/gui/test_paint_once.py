"""Issue 14, paint cost: an edit repaints each chart once. The labels of the stage chart are placed before the
paint (they were placed by a timer after it, which painted every edit twice) and the new ranges reach the axes
before the paint (pyqtgraph applies them while painting, which asked for a second paint of the layer chart)."""

from __future__ import annotations

from collections import Counter

from gui_helpers import edit_and_wait, open_and_wait


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
    qtbot.wait(200)
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
