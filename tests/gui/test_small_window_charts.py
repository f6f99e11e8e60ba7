"""A 1024×640 window shows its forms and charts whole (issues 11 and 14): the Strategy panel's fields stay inside
the panel, the axis titles are not cut, the per-layer chart labels every stage-level row that holds memory (the
async-TP symmetric memory among them); and a plan that cannot be priced shows why instead of empty axes."""

from __future__ import annotations

import itertools

import pytest
from gui_helpers import DENSE_PLAN, EXAMPLES, open_and_wait
from PySide6.QtGui import QFontMetricsF

from sapp_gui import language

TT_ASYNC = (EXAMPLES / "torchtitan_llama3_70b.toml").read_text(encoding="utf-8").replace(
    "enable_async_tensor_parallel = false", "enable_async_tensor_parallel = true")
SIZES = [(1024, 640), (1600, 1000)]


@pytest.fixture
def async_tp(tmp_path):
    path = tmp_path / "async_tp.toml"
    assert "enable_async_tensor_parallel = true" in TT_ASYNC
    path.write_text(TT_ASYNC, encoding="utf-8")
    return path


def _open_at(qtbot, window, size, lang, paths, **kwargs):
    if lang != "en" and not language.has_font_for(lang):
        pytest.skip("no CJK font installed (fonts-noto-cjk or fonts-wqy-microhei)")
    window.set_language(lang)
    window.resize(*size)
    result = open_and_wait(qtbot, window, paths, **kwargs)
    qtbot.wait(100)  # the layout settles, the charts place their ticks for the new width
    return result


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
@pytest.mark.parametrize("size", SIZES)
def test_the_strategy_forms_stay_inside_their_panel(qtbot, window, async_tp, size, lang) -> None:
    _open_at(qtbot, window, size, lang, [async_tp], devices=256)
    forms = window.forms
    for index, form in enumerate(forms.forms):
        forms.setCurrentIndex(index)
        qtbot.wait(20)
        viewport = forms.widget(index).viewport().width()
        assert form.minimumSizeHint().width() <= viewport, (type(form).__name__, viewport)
        assert form.width() <= viewport  # no horizontal scrolling: every field is inside the panel


def _label_fits(axis, length: float) -> bool:
    return QFontMetricsF(axis.label.font()).horizontalAdvance(axis.labelText) <= length


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
@pytest.mark.parametrize("size", SIZES)
def test_axis_titles_are_whole(qtbot, window, async_tp, size, lang) -> None:
    _open_at(qtbot, window, size, lang, [async_tp], devices=256)
    for chart in (window.chart, window.layer_chart):
        item = chart.plot.getPlotItem()
        left, bottom = item.getAxis("left"), item.getAxis("bottom")
        assert _label_fits(left, left.height()), (chart.objectName(), left.labelText, left.height())
        assert _label_fits(bottom, bottom.width()), (chart.objectName(), bottom.labelText, bottom.width())
    if size == (1600, 1000):  # room for the full titles
        assert "GiB" in window.chart.plot.getPlotItem().getAxis("left").labelText
        assert window.chart.plot.getPlotItem().getAxis("left").labelText != "GiB"
        assert window.layer_chart.plot.getPlotItem().getAxis("bottom").labelText == window.layer_chart.axis_text()[0]


@pytest.mark.parametrize("size", SIZES)
def test_every_stage_level_row_with_memory_has_its_tick(qtbot, window, async_tp, size) -> None:
    from sapp_gui.layer_chart import STAGE_LEVEL, row_label

    _open_at(qtbot, window, size, "en", [async_tp], devices=256)
    chart = window.layer_chart
    rows = chart.stage.layers
    wanted = [row_label(r) for r in rows if r.kind in STAGE_LEVEL and r.total > 0]
    assert "symm" in wanted  # async TP's symmetric memory
    texts = [text.strip() for _x, text in chart._ticks]
    assert all(label in texts for label in wanted), (wanted, texts)
    # the axis draws them: a tick label that would stick out of the axis is dropped by pyqtgraph
    axis = chart.plot.getPlotItem().getAxis("bottom")
    view = chart.plot.getPlotItem().getViewBox()
    (x0, x1), width = view.viewRange()[0], view.width()
    px = width / (x1 - x0)
    metrics = QFontMetricsF(axis.style.get("tickFont") or chart.font())
    for at, text in chart._ticks:
        half = metrics.horizontalAdvance(text.strip()) / 2
        assert (at - x0) * px >= half - 1 and (x1 - at) * px >= half - 1, text
    # two labels on one line never overlap (stage-level labels alternate between two lines)
    for line in (False, True):
        ticks = [(at, text.strip()) for at, text in chart._ticks if text.startswith("\n") == line]
        for (a, ta), (b, tb) in itertools.pairwise(ticks):
            room = (b - a) * px
            assert room >= (metrics.horizontalAdvance(ta) + metrics.horizontalAdvance(tb)) / 2, (ta, tb, room)


def test_a_layer_segment_of_a_spaced_row_is_hit_where_it_is_drawn(qtbot, window, async_tp) -> None:
    _open_at(qtbot, window, (1024, 640), "en", [async_tp], devices=256)
    chart = window.layer_chart
    index = next(i for i, r in enumerate(chart.stage.layers) if r.kind == "comm_library")
    category = next(c for c, v in chart.stage.layers[index].by_category().items() if v > 0)
    point = chart.scene_pos_of(index, category)
    view_point = chart.view.mapSceneToView(point)
    assert chart.hit(view_point.x(), view_point.y()) == (index, category)
    assert chart.widths[index] > 0.72  # a stage-level bar is as wide for its slot as a layer's


def test_a_plan_that_cannot_be_priced_shows_why_instead_of_axes(qtbot, window, tmp_path) -> None:
    path = tmp_path / "tp3.plan.yaml"
    path.write_text(DENSE_PLAN.replace("tp: 4", "tp: 3"), encoding="utf-8")
    window.resize(1024, 640)
    with qtbot.waitSignal(window.estimate_failed, timeout=20000):
        assert window.open_paths([str(path)])
    qtbot.wait(50)
    chart, layers = window.chart, window.layer_chart
    assert chart.is_empty and layers.is_empty
    assert not chart.plot.isVisible() and not layers.plot.isVisible()  # no axes autoscaled to nothing
    assert "cannot be priced" in chart.empty.text() and "R-TP-HEADS" in chart.empty.text()
    assert "cannot be priced" in layers.empty.text()
    assert window.height() == 640 and window.minimumSizeHint().height() <= 640
    # a plan that can be priced brings the bars back
    window.forms.parallel.hold_dp.setChecked(True)  # dp stays 4, the device count follows
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        assert window.edit({"strategy.tp": 4}, "tp 4")
    assert not chart.is_empty and chart.plot.isVisible()
    assert not layers.is_empty and layers.plot.isVisible()


def test_a_refused_edit_keeps_the_last_bars_greyed_not_as_current(qtbot, window, dense_plan) -> None:
    window.resize(1024, 640)
    open_and_wait(qtbot, window, [dense_plan])
    window.forms.parallel.hold_dp.setChecked(True)
    with qtbot.waitSignal(window.estimate_failed, timeout=20000):
        assert window.edit({"strategy.tp": 3}, "tp 3")
    qtbot.wait(50)
    assert not window.chart.is_empty  # the last plan that could be priced, greyed with the reason
    assert window.charts_frame.stale and window.summary_frame.caption.isVisible()
    assert window.minimumSizeHint().height() <= 640
