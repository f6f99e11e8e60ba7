"""pyqtgraph items the memory charts share, made cheap to repaint on every edit (docs/decisions.md P-GUI-PAINT):
a value grid drawn behind the bars, bars that keep their bounding rectangle, and axes that keep the pictures of
their last few scales."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPicture

# pyqtgraph has no public API for what the items below need; each private use is behind one function or method
# here, checked against this version (tests/gui/test_plot_items.py fails if one goes or stops being called).
PYQTGRAPH_CHECKED = "0.14.0"


def tick_settings(axis: pg.AxisItem) -> tuple[object, object, float]:
    """What ``setTicks``, ``setTickSpacing`` and ``setTickDensity`` set on an axis (no getters in pyqtgraph
    0.14.0: the private ``_tickLevels``, ``_tickSpacing``, ``_tickDensity``)."""
    return axis._tickLevels, axis._tickSpacing, axis._tickDensity


def place_line_label(label: pg.InfLineLabel, position: float, anchor: tuple[float, float]) -> None:
    """An ``InfiniteLine``'s label at ``position`` (0–1 along the line in the view) with the text ``anchor`` on
    either side of the view's centre. pyqtgraph 0.14.0 has no setter for the anchors (a constructor argument kept
    as ``anchors``, which ``updatePosition`` reads); set before ``setPosition`` so that its one placement uses them."""
    label.anchors = [anchor, anchor]
    label.setPosition(position)


class ValueGrid(pg.GraphicsObject):
    """Horizontal grid lines at the value axis's ticks, drawn behind the bars in opaque colours pre-blended with
    the plot's background: where no bar covers a line it looks as pyqtgraph's own grid (the axis's tick pen at
    ``alpha``) did, and bars hide it. pyqtgraph's grid is drawn by the axis item, over the bars, and makes that
    item as large as the plot: with its semi-transparent lines it re-rasterised on every range change (8–14 ms
    per chart per edit, docs/decisions.md P-GUI-PAINT). The lines are recomputed only when the range or the
    plot's height changes; a paint draws a few opaque lines."""

    def __init__(self, plot: pg.PlotWidget, axis_name: str = "left", alpha: float = 0.18) -> None:
        super().__init__()
        self._plot = plot
        self._axis = plot.getPlotItem().getAxis(axis_name)
        # the axis as it was with its grid: no tick marks (they would cross the bars) and only the labels
        # within its length (the grid made it as large as the plot, which dropped the two at its ends)
        self._axis.setStyle(tickLength=0, hideOverlappingLabels=True)
        self._alpha = min(255, max(0, int(alpha * 255)))  # as AxisItem.setGrid takes it
        self._lines: list[tuple[float, QPen]] = []
        self._key: tuple[object, ...] | None = None
        self._bounds: QRectF | None = None
        self.setZValue(-100)  # under every bar, the pinned baseline's included
        view = plot.getPlotItem().getViewBox()
        view.addItem(self, ignoreBounds=True)
        view.sigYRangeChanged.connect(self._refresh)
        view.sigResized.connect(self._refresh)

    def _refresh(self) -> None:
        """The lines for the axis's current ticks, as AxisItem.generateDrawSpecs shades its grid: level i at
        255/(i+1) × alpha, faded when the ticks crowd (0.05 × length / (ticks + 1) below 1)."""
        view = self._plot.getPlotItem().getViewBox()
        low, high = view.viewRange()[1]
        length = float(view.height()) + 2  # the axis's own length in pixels (its line overhangs by one each end)
        background = self._plot.backgroundBrush().color()
        foreground = self._axis.tickPen().color()
        key = (low, high, length, background.rgb(), foreground.rgb(), self._alpha)
        if key == self._key:
            return
        self._key = key
        lines: list[tuple[float, QPen]] = []
        if length > 0 and high > low:
            for i, (_spacing, values) in enumerate(self._axis.tickValues(low, high, length)):
                crowd = min(1.0, max(0.0, 0.05 * length / (len(values) + 1)))
                share = int(255 / (i + 1) * self._alpha / 255 * crowd) / 255
                pen = QPen(blend(background, foreground, share), 0)  # cosmetic: one device pixel
                lines += [(float(v), pen) for v in values if low <= v <= high]
        self._lines = lines
        self.update()

    def viewTransformChanged(self) -> None:
        self._bounds = None
        self.prepareGeometryChange()
        super().viewTransformChanged()

    def boundingRect(self) -> QRectF:
        if self._bounds is None:
            view = self.viewRect()
            self._bounds = QRectF() if view is None else QRectF(view)
        return self._bounds

    def paint(self, painter: QPainter, *_args: object) -> None:
        left, right = self.boundingRect().left(), self.boundingRect().right()
        for y, pen in self._lines:
            painter.setPen(pen)
            painter.drawLine(QLineF(left, y, right, y))


def blend(background: QColor, foreground: QColor, share: float) -> QColor:
    """``foreground`` at opacity ``share`` over ``background``, as one opaque colour."""
    return QColor(*(round(b + (f - b) * share) for b, f in zip(background.getRgb()[:3], foreground.getRgb()[:3],
                                                                strict=True)))


class Bars(pg.BarGraphItem):
    """pyqtgraph's bars, keeping their bounding rectangle until the bars change (``setOpts``: positions, heights,
    pens) or the view's transform does (the rectangle is padded by half a pen width in pixels). pyqtgraph
    recomputes it, a device transform each time, on every one of the ~180 calls per edit."""

    def __init__(self, **opts: Any) -> None:
        self._bounds: QRectF | None = None
        super().__init__(**opts)

    def setOpts(self, **opts: Any) -> None:
        self._bounds = None
        super().setOpts(**opts)

    def viewTransformChanged(self) -> None:
        self.prepareGeometryChange()  # the pixel padding changes with the scale (the scene indexes the rectangle)
        self._bounds = None
        super().viewTransformChanged()

    def boundingRect(self) -> QRectF:
        if self._bounds is None:
            self._bounds = super().boundingRect()
        return self._bounds


class ScaleAxis(pg.AxisItem):
    """pyqtgraph's axis, repainted only when what it draws changes, and keeping the pictures of its last
    ``PICTURES`` scales. pyqtgraph throws its picture away on every range signal, the same range included, and
    drawing one (ticks and labels measured one by one) costs ~1 ms; a memory chart's scale is one of a few
    round tops (``bars.nice_ceil``), so what-if edits move between a handful of pictures. A picture is kept under
    everything ``generateDrawSpecs`` and ``drawPicture`` read (``_picture_key``: range, geometry, device
    transform, explicit ticks, tick spacing and density, scale, log mode, style, pens, font), compared by value;
    with it is kept the tick-label size it reported (``_updateMaxTextSize``), replayed so that the axis sizes
    itself as a fresh drawing would."""

    PICTURES = 8

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pictures: OrderedDict[tuple[object, ...], tuple[QPicture, float | None]] = OrderedDict()
        self._text_size: float | None = None
        super().__init__(*args, **kwargs)

    def setRange(self, mn: float, mx: float) -> None:
        if getattr(self, "range", None) == [mn, mx]:
            return  # the same range: pyqtgraph would throw the picture away and repaint it unchanged
        super().setRange(mn, mx)

    def _updateMaxTextSize(self, x: float) -> None:
        """pyqtgraph's (0.14.0) private hook through which ``generateDrawSpecs`` reports the tick labels' largest
        size and the axis resizes itself (no public equivalent: ``setWidth``/``setHeight`` fix the size)."""
        self._text_size = x  # what the drawing just measured (kept with its picture)
        super()._updateMaxTextSize(x)

    def _picture_key(self) -> tuple[object, ...] | None:
        if self.grid is not False:
            return None  # a grid reads the linked view's rectangle: not kept
        geometry = self.geometry()
        t = self.deviceTransform_()  # as mapToDevice reads it (None before the view is shown)
        if t is None:
            return None
        style = tuple((name, freeze(value)) for name, value in sorted(self.style.items()))
        levels, spacing, density = tick_settings(self)
        return (tuple(self.range), geometry.x(), geometry.y(), geometry.width(), geometry.height(),
                t.m11(), t.m12(), t.m13(), t.m21(), t.m22(), t.m23(), t.m31(), t.m32(), t.m33(),
                freeze(levels), freeze(spacing), density, self.scale,
                self.autoSIPrefixScale, self.logMode, style, freeze(self.pen()), freeze(self.tickPen()),
                freeze(self.textPen()), self.orientation)

    def paint(self, p: QPainter, opt: Any, widget: Any) -> None:
        if self.picture is not None:
            super().paint(p, opt, widget)
            return
        key = self._picture_key()
        kept = self._pictures.get(key) if key is not None else None
        if kept is not None:
            self._pictures.move_to_end(key)  # type: ignore[arg-type]
            picture, text_size = kept
            if text_size is not None:
                super()._updateMaxTextSize(text_size)  # as the drawing did (it may resize the axis)
            self.picture = picture
        else:
            self._text_size = None
            super().paint(p, opt, widget)  # draws self.picture, then plays it
            if key is not None and self.picture is not None:
                self._pictures[key] = (self.picture, self._text_size)
                while len(self._pictures) > self.PICTURES:
                    self._pictures.popitem(last=False)
            return
        self.picture.play(p)


def freeze(value: Any) -> object:
    """A comparable, hashable stand-in for a value an axis reads (lists, pens, colours and fonts by value)."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, freeze(v)) for k, v in sorted(value.items()))
    if isinstance(value, QPen):
        return ("pen", value.color().rgba(), value.widthF(), value.style(), value.capStyle(), value.joinStyle(),
                value.isCosmetic(), value.brush().style(), tuple(value.dashPattern()))
    if isinstance(value, QColor):
        return ("color", value.rgba())
    if isinstance(value, QFont):
        return ("font", value.toString())
    if isinstance(value, float | int | str | bool) or value is None:
        return (type(value).__name__, value)
    return ("other", repr(value))
