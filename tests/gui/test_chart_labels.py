"""Chart labels that never collide (issue 12): the per-layer axis of an interleaved plan thins its ticks to what
fits, a long chart title wraps instead of widening the window, the capacity and budget lines widen with the screen
scale and their labels sit clear of them."""

from __future__ import annotations

import itertools

from gui_helpers import MF_QWEN3, open_and_wait
from PySide6.QtGui import QFontMetrics


def test_per_layer_ticks_of_an_interleaved_plan_do_not_overlap(qtbot, window) -> None:
    open_and_wait(qtbot, window, [MF_QWEN3])  # pp 4 × vpp 2: labels like d26·S+C c0
    chart = window.layer_chart
    qtbot.waitUntil(lambda: chart.stage is not None, timeout=10000)
    ticks = chart._ticks
    assert len(ticks) >= 2
    axis = chart.plot.getPlotItem().getAxis("bottom")
    metrics = QFontMetrics(axis.style.get("tickFont") or chart.font())
    view = chart.plot.getPlotItem().getViewBox()
    (x0, x1), width = view.viewRange()[0], view.width()
    px_per_unit = width / (x1 - x0)
    for (a, text_a), (b, text_b) in itertools.pairwise(ticks):
        room = (b - a) * px_per_unit
        assert room >= (metrics.horizontalAdvance(text_a) + metrics.horizontalAdvance(text_b)) / 2, (text_a, text_b)


def test_a_long_title_wraps_instead_of_widening_the_window(qtbot, window) -> None:
    open_and_wait(qtbot, window, [MF_QWEN3])
    before = window.minimumSizeHint().width()
    window.layer_chart.title.setText("Stage 3, per layer " + "very long peak point text " * 20)
    assert window.layer_chart.title.wordWrap()
    assert window.minimumSizeHint().width() <= before


def test_limit_lines_follow_the_screen_scale(qtbot, window) -> None:
    from sapp_gui.bars import device_scale

    open_and_wait(qtbot, window, [MF_QWEN3])
    assert window.chart.capacity_line.pen.widthF() == 1.6 * device_scale()
    assert window.chart.budget_line.pen.widthF() == 1.6 * device_scale()
    # the labels are anchored beside their line, not across it
    assert window.chart.capacity_line.label.anchors[0][1] > 1 and window.chart.budget_line.label.anchors[0][1] < 0
