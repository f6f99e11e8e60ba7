"""The memory charts' own pyqtgraph items (docs/decisions.md P-GUI-PAINT): the value grid behind the bars, opaque
and pre-blended so that it looks as the axis's translucent grid did where no bar covers it, and bars that keep
their bounding rectangle without it going stale."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def chart(qtbot):
    from sapp_gui.bars import StackedBarChart

    chart = StackedBarChart("test", "x")
    qtbot.addWidget(chart)
    chart.resize(600, 400)
    chart.show()
    qtbot.waitExposed(chart)
    stack = np.zeros((3, 11))
    stack[:, 0] = [10e9, 20e9, 35e9]
    chart.set_stack(np.arange(3.0), stack)
    chart.set_y_top(40)
    return chart


def _pixel(image, x: int, y: int) -> tuple[int, int, int]:
    from PySide6.QtGui import QColor

    color = QColor(image.pixel(x, y))
    return color.red(), color.green(), color.blue()


def test_the_grid_lines_sit_at_the_axis_ticks_in_the_translucent_grids_colour(chart) -> None:
    from sapp_gui.plot_items import blend

    item = chart.plot.getPlotItem()
    axis = item.getAxis("left")
    assert axis.grid is False  # the axis draws no grid of its own (it would cross the bars)
    low, high = chart.view.viewRange()[1]
    levels = axis.tickValues(low, high, chart.view.height() + 2)
    expected = sorted(v for _s, values in levels for v in values if low <= v <= high)
    assert sorted(y for y, _pen in chart.grid._lines) == expected
    assert chart.grid.zValue() < min(bar.zValue() for bar in chart.bars.values())
    white = chart.plot.backgroundBrush().color()
    major = blend(white, axis.tickPen().color(), int(0.18 * 255) / 255)
    assert major.alpha() == 255
    y_major = levels[0][1][1]
    pens = {y: pen for y, pen in chart.grid._lines}
    assert pens[y_major].color() == major
    assert pens[y_major].color().name() == "#d8d8d8"  # #222222 at alpha 45/255 over white

    # on screen: the line where no bar covers it (between bars 0 and 1), the bar's colour where bar 2 does
    from estimator.result import CATEGORIES
    from sapp_gui.bars import category_brush

    image = chart.plot.grab().toImage()
    gap_x, row = _widget_point(chart, 0.5, y_major)
    bar_x, _ = _widget_point(chart, 2.0, y_major)
    assert major.getRgb()[:3] in [_pixel(image, gap_x, r) for r in range(row - 1, row + 2)]
    assert all(_pixel(image, bar_x, r) == category_brush(CATEGORIES[0]).getRgb()[:3] for r in range(row - 1, row + 2))


def _widget_point(chart, x: float, y: float) -> tuple[int, int]:
    from PySide6.QtCore import QPointF

    point = chart.plot.mapFromScene(chart.view.mapViewToScene(QPointF(x, y)))
    return point.x(), point.y()


def test_the_grid_follows_the_range(chart) -> None:
    chart.set_y_top(400)
    chart.plot.grab()
    assert max(y for y, _pen in chart.grid._lines) > 100


def test_bars_keep_their_bounding_rectangle_until_the_bars_or_the_scale_change(chart) -> None:
    import pyqtgraph as pg

    bar = chart.bars[next(iter(chart.bars))]

    def fresh():
        return pg.BarGraphItem.boundingRect(bar)

    assert bar.boundingRect() == fresh()
    assert bar.boundingRect() is bar.boundingRect()  # kept, not recomputed
    stack = chart.stack.copy()
    stack[2, 0] = 80e9
    chart.set_stack(chart.x, stack)
    assert bar.boundingRect() == fresh() and bar.boundingRect().bottom() >= 80e9 / 2**30
    before = bar.boundingRect()
    chart.set_y_top(400)  # a pixel is now ten times as many GiB: the pen's padding grows
    chart.plot.grab()
    assert bar.boundingRect() == fresh() != before


def test_pyqtgraphs_private_axis_api_is_still_there_and_read(chart) -> None:
    """plot_items' private pyqtgraph uses (PYQTGRAPH_CHECKED): the text-size hook generateDrawSpecs calls, and the
    tick settings without getters. Fails if pyqtgraph renames or stops calling them (the axis would then keep a
    stale size or a picture of other ticks)."""
    import pyqtgraph as pg

    from sapp_gui.plot_items import ScaleAxis, tick_settings

    axis = chart.plot.getPlotItem().getAxis("left")
    assert isinstance(axis, ScaleAxis) and "_updateMaxTextSize" in vars(pg.AxisItem)
    axis._pictures.clear()
    axis.picture, axis._text_size = None, None
    axis.update()
    chart.plot.grab()
    assert axis._text_size is not None  # the drawing reported its tick labels' size through the hook

    fresh = pg.AxisItem("left")
    assert tick_settings(fresh) == (None, None, 1.0)
    ticks = [[(1.0, "one")], [(0.5, "half")]]
    fresh.setTicks(ticks)
    fresh.setTickSpacing(5.0, 1.0)
    fresh.setTickDensity(2.0)
    assert tick_settings(fresh) == (ticks, [(5.0, 0.0), (1.0, 0.0)], 2.0)


def test_a_line_label_is_placed_at_the_position_and_anchor_asked(qtbot) -> None:
    """place_line_label (pyqtgraph's InfLineLabel has no anchors setter): the label goes to either end of the line
    and either side of it as asked, which it would not if pyqtgraph stopped reading ``anchors``."""
    import pyqtgraph as pg

    from sapp_gui.plot_items import place_line_label

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    plot.show()
    qtbot.waitExposed(plot)
    plot.setXRange(0, 10, padding=0)
    plot.setYRange(0, 10, padding=0)
    line = pg.InfiniteLine(pos=5, angle=0, label="capacity")
    plot.addItem(line)
    plot.getPlotItem().getViewBox().updateMatrix()
    line_y = plot.getPlotItem().getViewBox().mapViewToScene(pg.Point(0, 5)).y()
    rects = {}
    for position, side in ((0.985, 1), (0.015, 0)):
        for anchor in (1.25, -0.25):
            place_line_label(line.label, position, (side, anchor))
            rects[position, anchor] = line.label.sceneBoundingRect()
    view = plot.getPlotItem().getViewBox().sceneBoundingRect()
    assert rects[0.985, 1.25].bottom() < line_y < rects[0.985, -0.25].top()  # above, then below the line
    assert rects[0.015, 1.25].bottom() < line_y < rects[0.015, -0.25].top()
    assert rects[0.985, 1.25].right() <= view.right() + 1 and rects[0.985, 1.25].left() > view.center().x()
    assert rects[0.015, 1.25].left() >= view.left() - 1 and rects[0.015, 1.25].right() < view.center().x()
