"""The look every chart of the app shares: bold titles and axes with readable tick labels."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QGraphicsItem, QLabel, QWidget


def bold_label(text: str = "") -> QLabel:
    label = QLabel(text)
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    return label


def style_axes(item: Any, widget: QWidget) -> None:
    """Left and bottom axes of a pyqtgraph PlotItem: ticks a little smaller than ``widget``'s font, dark text,
    no SI prefixes (GiB and seconds are the units), and a pixmap cache — replaying the axis picture re-rasterises
    every tick label on each repaint, the cache redraws it only when its ticks or range change."""
    tick_font = QFont(widget.font())
    tick_font.setPointSizeF(max(7.5, widget.font().pointSizeF() * 0.9))
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setStyle(tickFont=tick_font)
        axis.setTextPen("#222222")
        axis.enableAutoSIPrefix(False)
        axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
