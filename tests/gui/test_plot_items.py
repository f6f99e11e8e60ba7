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
