"""Chart labels that never collide (issue 12): the per-layer axis of an interleaved plan thins its ticks to what
fits, a long chart title wraps instead of widening the window, the capacity and budget lines widen with the screen
scale and their labels sit clear of them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
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


def _visible_rects(chart):
    rects = [("peak", chart.peak_label.sceneBoundingRect())]
    rects += [(f"delta{k}", label.sceneBoundingRect()) for k, label in enumerate(chart.delta_labels)]
    for name, line in (("capacity", chart.capacity_line), ("budget", chart.budget_line)):
        if line.isVisible() and line.label.isVisible():
            rects.append((name, line.label.sceneBoundingRect()))
    return rects


def _no_overlaps(chart) -> None:
    rects = _visible_rects(chart)
    for i, (a, ra) in enumerate(rects):
        for b, rb in rects[i + 1:]:
            assert not ra.intersects(rb), f"{a} and {b} labels overlap"


def test_pinned_deltas_and_the_peak_label_do_not_collide(qtbot, window) -> None:
    from gui_helpers import edit_and_wait

    open_and_wait(qtbot, window, [MF_QWEN3])
    window.pin_baseline()
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.recompute": "full"}, "full recompute"))
    chart = window.chart
    qtbot.waitUntil(lambda: len(chart.delta_labels) == 4, timeout=10000)
    chart.declutter()
    _no_overlaps(chart)
    for size in ((1024, 640), (1366, 768)):
        window.resize(*size)
        qtbot.wait(100)
        chart.declutter()
        _no_overlaps(chart)


def test_the_search_mini_chart_keeps_its_labels_apart(qtbot, window) -> None:
    from gui_helpers import run_search

    window.resize(1024, 640)
    open_and_wait(qtbot, window, [MF_QWEN3])
    run_search(qtbot, window, {"tp": "auto", "pp": "auto"})
    chart = window.workspace_tabs.search.stage_chart
    qtbot.waitUntil(lambda: chart.result is not None, timeout=20000)
    chart.declutter()
    _no_overlaps(chart)


def test_the_optimizer_step_marker_is_in_the_legend_and_under_the_peak_label(qtbot, window) -> None:
    import dataclasses

    result = open_and_wait(qtbot, window, [MF_QWEN3])
    chart = window.chart
    assert "optimizer-step" not in chart.legend.text()
    peak = result.peak_stage
    stages = tuple(dataclasses.replace(s, optimizer_step_peak=s.total * 1.2) if s.index == peak else s
                   for s in result.stages)
    chart.set_result(dataclasses.replace(result, stages=stages))
    assert "optimizer-step&nbsp;peak" in chart.legend.text()
    view = chart.plot.getPlotItem().getViewBox()
    tick_y = view.mapViewToScene(chart.peak_label.pos()).y()
    assert chart.peak_label.pos().y() >= stages[peak].optimizer_step_peak / 2**30 - 1e-9
    assert chart.peak_label.sceneBoundingRect().bottom() <= tick_y + 1


def test_the_pinned_baseline_describes_itself_and_other_depths_draw_only_their_peak(qtbot, window,
                                                                                     dense_plan) -> None:
    """Issue 12: the pinned baseline says what it is (degrees, sequence length, global batch, devices); beside a
    plan of another pipeline depth, stage i holds other layers, so neither its stages nor per-stage deltas are
    drawn — one line at its plan's peak — and the legend says why."""
    from gui_helpers import edit_and_wait

    open_and_wait(qtbot, window, [dense_plan])
    window.pin_baseline()
    chart = window.chart
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.tp": 8}))
    legend = chart.legend.text().replace("&nbsp;", " ")
    assert "pinned (left): dp 4 · tp 4 · m 16" in legend  # what differs from the plan on screen (tp 8, dp 2)
    assert chart.legend.toolTip() == ("Pinned baseline: dp 4 · tp 4 · pp 4 · mbs 1 · rec selective · seq 4,096 · "
                                      "global batch 64 · 64 × A2")  # and the whole plan
    assert len(chart.data()["deltas"]) == 4 and chart.data()["pinned_peak_gib"] is None  # same depth: per stage
    pinned_peak = max(s.device_peak for s in window.doc.pinned.result.stages) / 2**30
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.pp": 8}))
    data = chart.data()
    assert data["deltas"] == [] and data["pinned_stages"] == 0  # no stage of pp 4 beside a stage of pp 8
    assert data["pinned_peak_gib"] == pytest.approx(pinned_peak)
    np.testing.assert_allclose(data["x"], np.arange(8))  # the bars alone, centred on their stages
    legend = chart.legend.text().replace("&nbsp;", " ")
    assert "pinned peak: dp 4 · tp 4 · pp 4 · m 16 — another pipeline depth: stages not comparable" in legend
    assert chart.pinned_line.label.toPlainText() == f"pinned peak {pinned_peak:,.2f} GiB (pp 4)"


def test_a_short_stage_chart_keeps_its_scale_and_lines(qtbot) -> None:
    """A stage chart squeezed short (a 1024×640 window, a dragged splitter, the layout of a window not shown
    yet): the scale rises only as far as the peak label needs — it went to 3,000 GiB for 41 GiB bars, hiding
    the bars and the capacity and budget lines, and never came back — and running the label placement again
    (every resize) leaves it where it is."""
    from gui_helpers import EXAMPLES
    from PySide6.QtWidgets import QApplication

    from estimator import estimate
    from estimator.formats import parse
    from sapp_gui.chart import StageChart

    plan = parse([str(EXAMPLES / "mindformers_llama3_70b.yaml")])
    result = estimate(plan.model, plan.strategy, plan.hardware, plan.options)
    chart = StageChart()
    qtbot.addWidget(chart)
    chart.resize(700, 400)
    chart.show()
    qtbot.waitExposed(chart)
    chart.set_result(result)
    view = chart.plot.getPlotItem().getViewBox()
    gib = 2**30
    for height in (120, 95, 90, 85):  # squeezed: little or no room for the peak label above the bars
        chart.resize(700, height)
        for _ in range(3):
            QApplication.processEvents()
            chart.declutter()
    chart.resize(700, 400)
    qtbot.wait(200)  # the label placement runs after the layout settles
    top = view.viewRange()[1][1]
    assert max(result.capacity, result.budget) / gib < top <= 2.5 * max(result.capacity, result.peak_bytes) / gib
    for _ in range(3):
        chart.declutter()
    assert view.viewRange()[1][1] == top
    assert chart.capacity_line.isVisible() and chart.budget_line.isVisible()
    assert view.sceneBoundingRect().contains(chart.peak_label.sceneBoundingRect())
