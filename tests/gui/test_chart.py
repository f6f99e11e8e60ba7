"""The charts: capacity/budget lines, hover breakdown, click → per-layer bars and Explain, keyboard
selection, pinned baseline, PNG/SVG/CSV export, fixed distinct colours."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from gui_helpers import edit_and_wait, open_and_wait
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from estimator.result import CATEGORIES
from estimator.units import GiB
from sapp_gui.style import CATEGORY_COLORS

# the offscreen platform warns when a tooltip window is raised
pytestmark = pytest.mark.qt_log_ignore("does not support raise", extend=True)


def test_lines_peak_and_over_budget(qtbot, window, dsv3_plan: Path) -> None:
    result = open_and_wait(qtbot, window, [dsv3_plan])
    chart = window.chart
    assert chart.capacity_line.value() == result.capacity / GiB
    assert chart.budget_line.value() == result.budget / GiB
    assert "GiB" in chart.capacity_line.label.format and "budget 58.00 GiB" in chart.budget_line.label.format
    assert chart.data()["peak_label"] == f"peak {result.peak_bytes / GiB:,.2f} GiB"
    assert len(chart.data()["over_budget"]) == 0
    # a tighter framework limit: every stage whose allocator peak (MindSpore's planned pool: the tensors, the
    # optimizer step included) is over the pool is outlined, the verdict flips
    result = edit_and_wait(qtbot, window, lambda: window.edit({"options.max_device_memory": 21 * GiB}, "limit"))
    assert result.budget == result.framework_limit == 21 * GiB
    over = [s.index for s in result.stages
            if max(s.total, s.optimizer_step_peak) - s.bytes_by_category["runtime_context"]
            - s.bytes_by_category["comm_library"] - s.bytes_by_category["reserve"] > result.budget]
    assert over and list(chart.data()["over_budget"]) == over
    assert window.summary.verdict.value.text() == "Does not fit"


def test_hover_shows_the_breakdown(qtbot, window, dsv3_plan: Path) -> None:
    result = open_and_wait(qtbot, window, [dsv3_plan])
    chart = window.chart
    hit = chart.hit(0, result.stages[0].bytes_by_category["parameters"] / GiB / 2)
    assert hit == (0, "parameters")
    assert chart.hit(0.5, 1.0) is None  # between bars
    html = chart.hover_html(0, "activations")
    stage = result.stages[0]
    assert f"{stage.total / GiB:,.2f} GiB" in html
    share = 100 * stage.bytes_by_category["activations"] / stage.total
    assert f"{share:4.1f}%" in html and "Activations" in html
    chart._on_mouse_moved(chart.scene_pos_of(3, "gradients"))
    assert chart.hover_index == 3


def test_click_opens_layers_and_explain(qtbot, window, dsv3_plan: Path) -> None:
    result = open_and_wait(qtbot, window, [dsv3_plan])
    chart = window.chart
    pos = chart.widget_pos_of(5, "activations")
    with qtbot.waitSignal(chart.segment_clicked, timeout=5000) as blocker:
        qtbot.mouseClick(chart.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert blocker.args == [5, "activations"]
    layers = window.layer_chart
    assert layers.stage is not None and layers.stage.index == 5
    assert len(layers.x) == len(result.stages[5].layers)
    qtbot.waitUntil(lambda: window.explain.quantity is not None, timeout=20000)
    q = window.explain.quantity
    assert q.label == "activations"
    assert abs(q.value - result.stages[5].bytes_by_category["activations"]) < 1
    assert "Stage 5" in window.explain.heading.text()
    assert window.explain.tree.topLevelItemCount() == 1
    # a layer segment: the Explain trace of that layer's activations, with its formula substituted
    row = next(i for i, r in enumerate(result.stages[5].layers) if r.bytes[3] > 0)
    layers.select(row, "activations")
    qtbot.waitUntil(lambda: window.explain.quantity is not q, timeout=20000)
    leaf = window.explain.quantity
    assert leaf.formula_id in ("A-LAYER", "A-FULL")
    assert "=" in window.explain.formula.text() and leaf.template.split()[0] in window.explain.formula.text()
    assert "activations" in window.explain.text() or leaf.label in window.explain.text()


def test_keyboard_selection_in_the_chart(qtbot, window, dsv3_plan: Path) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    window.focus_chart()
    plot = window.chart.plot
    qtbot.keyClick(plot, Qt.Key.Key_Right)
    qtbot.keyClick(plot, Qt.Key.Key_Right)
    qtbot.keyClick(plot, Qt.Key.Key_Up)
    assert window.chart.selected == (2, "gradients")
    assert window.layer_chart.stage.index == 2


def test_pinned_baseline_shows_deltas(qtbot, window, dsv3_plan: Path) -> None:
    base = open_and_wait(qtbot, window, [dsv3_plan])
    window.pin_baseline()
    result = edit_and_wait(qtbot, window, lambda: window.edit({"strategy.tp": 8}, "tp 8"))
    data = window.chart.data()
    assert data["pinned_stages"] == 16 and len(data["deltas"]) == 16
    delta0 = (result.stages[0].total - base.stages[0].total) / GiB
    assert data["deltas"][0] == f"{delta0:+.2f} GiB"
    np.testing.assert_allclose(data["x"], np.arange(16) + 0.21)  # current bars beside the pinned ones
    assert "vs pinned" in window.summary.peak.sub.text()
    window.clear_baseline()
    assert window.chart.data()["pinned_stages"] == 0 and window.chart.data()["deltas"] == []


def test_exports(qtbot, window, dsv3_plan: Path, tmp_path: Path) -> None:
    result = open_and_wait(qtbot, window, [dsv3_plan])
    png, svg, csv_path = tmp_path / "c.png", tmp_path / "c.svg", tmp_path / "c.csv"
    png.write_bytes(b"an older image")  # replaced atomically, kept as c.png.bak
    window.chart.export_png(png)
    assert (tmp_path / "c.png.bak").read_bytes() == b"an older image"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp file left
    window.chart.export_svg(svg)
    window.chart.export_csv(csv_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    text = svg.read_text()
    assert "<svg" in text and "Memory per device" in text
    rows = list(csv.reader(csv_path.open()))
    assert rows[0][0] == "stage" and rows[0][1] == "parameters (GiB)" and len(rows) == 17
    assert float(rows[1][rows[0].index("total (GiB)")]) == round(result.stages[0].total / GiB, 4)
    assert float(rows[1][rows[0].index("device_peak (GiB)")]) == round(result.stages[0].device_peak / GiB, 4)
    window.layer_chart.export_csv(tmp_path / "layers.csv")
    assert len(list(csv.reader((tmp_path / "layers.csv").open()))) == len(result.stages[result.peak_stage].layers) + 1


def test_category_colours_are_fixed_and_distinct(qtbot, window, dsv3_plan: Path) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    colours = [QColor(window.chart.bars[c].opts["brush"]).name() for c in CATEGORIES]
    assert colours == [QColor(CATEGORY_COLORS[c]).name() for c in CATEGORIES]
    rgb = [QColor(c) for c in colours]
    for i in range(len(rgb)):
        for j in range(i + 1, len(rgb)):
            a, b = rgb[i], rgb[j]
            distance = abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue())
            assert distance > 90, (CATEGORIES[i], CATEGORIES[j])
    assert "Memory per device (GiB)" in window.chart.plot.getPlotItem().getAxis("left").labelText
