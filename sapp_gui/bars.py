"""A stacked bar chart of the memory categories (pyqtgraph), shared by the stage chart and the
per-layer chart: stacking, hit testing (which bar and which category is under a point), hover tooltips,
selection (mouse and keyboard), and export of the chart as PNG, SVG or CSV.

Heights are drawn in GiB; the data kept for hit tests and exports is in bytes (``stack``: bars × 7).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, Qt, Signal
from PySide6.QtGui import QColor, QCursor, QFontMetricsF, QKeySequence, QPen
from PySide6.QtWidgets import QLabel, QSizePolicy, QStackedWidget, QToolTip, QVBoxLayout, QWidget

from estimator.result import CATEGORIES
from estimator.units import GiB

from .chart_export import ExportableChart
from .language import category_label, translate
from .plot_items import Bars, ScaleAxis, ValueGrid
from .plot_style import bold_label, style_axes
from .style import CAPACITY, CATEGORY_COLORS, OVER_BUDGET, SELECTION

pg.setConfigOptions(antialias=False, background="w", foreground="#222222")  # bars are axis-aligned: crisp and faster


def category_brush(category: str, alpha: int = 255) -> QColor:
    color = QColor(CATEGORY_COLORS[category])
    color.setAlpha(alpha)
    return color


class StackedBarChart(ExportableChart, QWidget):
    """Bars × categories, stacked bottom-up in CATEGORIES order."""

    segment_clicked = Signal(int, str)  # bar index, category
    hovered = Signal(int)               # bar index under the mouse (-1: none)

    def __init__(self, title: str, x_label: str | tuple[str, ...], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = bold_label(title)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)  # a long title (the peak point) wraps instead of widening the window
        self.plot = pg.PlotWidget(axisItems={"left": ScaleAxis("left"), "bottom": ScaleAxis("bottom")})
        self.plot.setMinimumHeight(120)  # two charts and the tiles fit a 640-px window
        self.plot.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.plot.setAccessibleName(title)
        item = self.plot.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.getViewBox().setMouseEnabled(False, False)
        self.grid = ValueGrid(self.plot)  # behind the bars, opaque (not the axis's grid: see ValueGrid)
        self._axis_texts: dict[str, tuple[str, ...]] = {}
        self._axis_shown: dict[str, str] = {}
        style_axes(item, self)
        self.view = item.getViewBox()
        self.bars: dict[str, Bars] = {}
        for cat in CATEGORIES:
            bar = Bars(x=np.zeros(0), height=np.zeros(0), width=0.7, brush=category_brush(cat),
                                  pen=pg.mkPen("#ffffff", width=0.8), name=cat)
            self.bars[cat] = bar
            item.addItem(bar)
        self.selection_item = Bars(x=np.zeros(0), height=np.zeros(0), width=0.7, brush=None,
                                              pen=pg.mkPen(SELECTION, width=2.5))
        self.selection_item.setZValue(20)
        item.addItem(self.selection_item)
        self.x = np.zeros(0)
        self.width = 0.7
        self.widths = np.zeros(0)  # per bar (the layer chart's stage-level rows are wider)
        self.stack = np.zeros((0, len(CATEGORIES)))
        self.selected: tuple[int, str] | None = None
        self.hover_index = -1
        self._ticks: list[tuple[float, str]] = []
        self._tick_request: tuple[list[str], int, int | None] = ([], 40, None)
        self._y_top = 0.0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        self.header_layout = layout
        # no numbers to draw (before the first estimate, or when the plan cannot be priced): a message where the
        # plot would be, never empty axes autoscaled to nothing
        self.empty = QLabel()
        self.empty.setObjectName("chartEmpty")
        self.empty.setProperty("sappRole", "chartEmpty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.empty.setTextFormat(Qt.TextFormat.PlainText)  # the estimator's messages quote the user's values
        self.empty.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.empty.setMinimumHeight(self.plot.minimumHeight())
        self.empty.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)  # a long reason wraps
        self.plot_area = QStackedWidget()
        self.plot_area.addWidget(self.plot)
        self.plot_area.addWidget(self.empty)
        layout.addWidget(self.plot_area, 1)
        scene = self.plot.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)
        self.plot.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.plot.customContextMenuRequested.connect(self._context_menu)
        self.plot.installEventFilter(self)
        self.view.sigResized.connect(self.fit_axis_labels)
        self.set_axis_texts(y_label_texts(), x_label)

    # ------------------------------------------------------------------------------ capacity and budget
    def add_limit_lines(self, line_width: float, over_width: float, over_pen_width: float) -> None:
        """The capacity and budget lines, and the outline drawn around bars over the budget."""
        item = self.plot.getPlotItem()
        # pens are cosmetic (device pixels): widen them with the screen's scale so that the lines stay as
        # visible at 2× as at 1×; the labels sit clear of their line (their backing box would cut it)
        line_width *= device_scale()
        self.capacity_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(CAPACITY, width=line_width), label="",
                                             labelOpts={"position": 0.985, "color": CAPACITY,
                                                        "anchors": [(1, 1.25), (1, 1.25)],
                                                        "fill": (255, 255, 255, 210)})
        self.budget_line = pg.InfiniteLine(angle=0, pen=outline_pen(OVER_BUDGET, line_width, dashed=True), label="",
                                           labelOpts={"position": 0.985, "color": OVER_BUDGET,
                                                      "anchors": [(1, -0.25), (1, -0.25)],
                                                      "fill": (255, 255, 255, 210)})
        for line in (self.capacity_line, self.budget_line):
            line.setZValue(15)
            item.addItem(line)
        self.over_item = Bars(x=np.zeros(0), height=np.zeros(0), width=over_width, brush=None,
                                         pen=pg.mkPen(OVER_BUDGET, width=over_pen_width * device_scale()))
        self.over_item.setZValue(18)
        item.addItem(self.over_item)

    def show_limits(self, capacity: float, budget: float) -> None:
        """Place and label the lines; one line when the budget is the capacity."""
        self.capacity_line.setVisible(True)
        self.capacity_line.setPos(capacity / GiB)
        self.budget_line.setPos(budget / GiB)
        same = abs(capacity - budget) < 0.005 * GiB
        self.budget_line.setVisible(not same)
        cap = f"{capacity / GiB:,.2f}"
        for line in (self.capacity_line, self.budget_line):
            if line.label.isVisible() != line.isVisible():  # setVisible(True) lays the text out again
                line.label.setVisible(line.isVisible())  # a hidden label ignores its new text (declutter decides)
        self.capacity_line.label.setFormat(translate("Charts", "capacity = budget {0} GiB").format(cap) if same else
                                           translate("Charts", "capacity {0} GiB").format(cap))
        self.budget_line.label.setFormat(translate("Charts", "budget {0} GiB").format(f"{budget / GiB:,.2f}"))

    def set_labels(self, title: str, x_label: str | tuple[str, ...]) -> None:
        """Title and axis names (again after a language change)."""
        self.title.setText(title)
        self.plot.setAccessibleName(title)
        self.set_axis_texts(y_label_texts(), x_label)

    def set_axis_texts(self, left: tuple[str, ...], bottom: str | tuple[str, ...]) -> None:
        """The axis titles, each a tuple from the longest to the shortest: the longest that fits is shown."""
        self._axis_texts = {"left": left, "bottom": (bottom,) if isinstance(bottom, str) else bottom}
        self.fit_axis_labels()

    def fit_axis_labels(self) -> None:
        """Each axis shows the longest of its titles that fits along it (a short chart on a 640-px window would
        cut "Memory per device (GiB)" at both ends)."""
        item = self.plot.getPlotItem()
        for side, texts in self._axis_texts.items():
            axis = item.getAxis(side)
            length = axis.height() if side == "left" else axis.width()
            metrics = QFontMetricsF(axis.label.font())
            text = next((t for t in texts if metrics.horizontalAdvance(t) + 8 <= length), texts[-1])
            if self._axis_shown.get(side) != text:
                self._axis_shown[side] = text
                item.setLabel(side, text)

    # ------------------------------------------------------------------------------------ data
    def show_empty(self, message: str) -> None:
        """No bars: ``message`` (why there is nothing to draw) where the plot was."""
        self.set_stack(np.zeros(0), np.zeros((0, len(CATEGORIES))))
        self.empty.setText(message)
        self.plot_area.setCurrentWidget(self.empty)

    @property
    def is_empty(self) -> bool:
        return self.plot_area.currentWidget() is self.empty

    def set_stack(self, x: np.ndarray, stack: np.ndarray, width: float | np.ndarray = 0.7) -> None:
        """Draw ``stack`` (bars × categories, bytes) at positions ``x``, ``width`` wide (one or one per bar)."""
        self.x = np.asarray(x, dtype=float)
        self.stack = np.asarray(stack, dtype=float).reshape(len(self.x), len(CATEGORIES))
        self.widths = np.broadcast_to(np.asarray(width, dtype=float), self.x.shape).copy()
        self.width = float(width) if np.isscalar(width) else float(self.widths.min(initial=0.7))
        if len(self.x):
            self.plot_area.setCurrentWidget(self.plot)
        gib = self.stack / GiB
        bottom = np.zeros(len(self.x))
        for k, cat in enumerate(CATEGORIES):
            self.bars[cat].setOpts(x=self.x, height=gib[:, k], y0=bottom.copy(), width=width)
            bottom += gib[:, k]
        if self.selected is not None and self.selected[0] >= len(self.x):
            self.selected = None
        self._draw_selection()

    def heights(self, category: str) -> np.ndarray:
        """Drawn heights of one category, GiB per bar."""
        return np.asarray(self.bars[category].opts["height"], dtype=float)

    def totals(self) -> np.ndarray:
        return self.stack.sum(axis=1)

    def set_ticks(self, labels: list[str], max_labels: int = 40, px_per_label: int | None = None) -> None:
        """Category ticks, thinned to ``max_labels`` (or to one per ``px_per_label`` pixels of plot width, again
        on every resize); the axis is only redrawn when they change (what-if edits rarely change them)."""
        self._tick_request = (list(labels), max_labels, px_per_label)
        if px_per_label:
            max_labels = max(2, min(max_labels, int(self.plot.width() // px_per_label)))
        step = max(1, int(np.ceil(len(labels) / max_labels)))
        ticks = [(float(i), text) for i, text in enumerate(labels) if i % step == 0]
        if ticks != self._ticks:
            self._ticks = ticks
            self.plot.getPlotItem().getAxis("bottom").setTicks([ticks, []])

    def set_y_top(self, top_gib: float) -> None:
        """A round upper bound, so that the scale stays put while edits move the bars."""
        top = nice_ceil(max(top_gib, 0.01))
        if top != self._y_top:
            self._y_top = top
            self.plot.getPlotItem().setYRange(0, top, padding=0)

    # --------------------------------------------------------------------------------- hit test
    def hit(self, xv: float, yv: float) -> tuple[int, str] | None:
        """The (bar, category) drawn at view coordinates (xv GiB-space)."""
        if not len(self.x):
            return None
        i = int(np.argmin(np.abs(self.x - xv)))
        if abs(self.x[i] - xv) > self.widths[i] / 2:
            return None
        y = yv * GiB
        bottom = 0.0
        for k, cat in enumerate(CATEGORIES):
            top = bottom + self.stack[i, k]
            if bottom <= y < top and self.stack[i, k] > 0:
                return i, cat
            bottom = top
        return None

    def scene_pos_of(self, index: int, category: str) -> QPointF:
        """Scene coordinates of the middle of a segment (tests click there)."""
        k = CATEGORIES.index(category)
        bottom = self.stack[index, :k].sum()
        mid = (bottom + self.stack[index, k] / 2) / GiB
        return self.view.mapViewToScene(QPointF(float(self.x[index]), float(mid)))

    def widget_pos_of(self, index: int, category: str) -> QPoint:
        return self.plot.mapFromScene(self.scene_pos_of(index, category))

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        point = self.view.mapSceneToView(scene_pos)
        hit = self.hit(point.x(), point.y())
        index = hit[0] if hit else -1
        if index != self.hover_index:
            self.hover_index = index
            self.hovered.emit(index)
        if hit:
            QToolTip.showText(QCursor.pos(), self.hover_html(hit[0], hit[1]), self.plot)
        else:
            QToolTip.hideText()

    def _on_mouse_clicked(self, event: object) -> None:
        if event.button() != Qt.MouseButton.LeftButton:  # type: ignore[attr-defined]
            return
        point = self.view.mapSceneToView(event.scenePos())  # type: ignore[attr-defined]
        hit = self.hit(point.x(), point.y())
        if hit:
            self.select(*hit)

    def select(self, index: int, category: str, emit: bool = True) -> None:
        self.selected = (index, category)
        self._draw_selection()
        if emit:
            self.segment_clicked.emit(index, category)

    def clear_selection(self) -> None:
        self.selected = None
        self._draw_selection()

    def _draw_selection(self) -> None:
        if self.selected is None or not len(self.x):
            self.selection_item.setOpts(x=np.zeros(0), height=np.zeros(0), y0=np.zeros(0))
            return
        i, cat = self.selected
        k = CATEGORIES.index(cat)
        bottom = self.stack[i, :k].sum() / GiB
        self.selection_item.setOpts(x=np.array([self.x[i]]), height=np.array([self.stack[i, k] / GiB]),
                                    y0=np.array([bottom]), width=float(self.widths[i]))

    def hover_html(self, index: int, category: str) -> str:
        """Tooltip text for a bar: every category in GiB and % of the bar (subclasses add a title)."""
        return self.breakdown_html(index, category)

    def breakdown_html(self, index: int, category: str | None = None, title: str = "") -> str:
        row = self.stack[index]
        total = row.sum()
        lines = [f"<b>{title}</b>" if title else "", "<table cellspacing='0' cellpadding='1'>"]
        for k in range(len(CATEGORIES) - 1, -1, -1):
            cat = CATEGORIES[k]
            share = 100.0 * row[k] / total if total else 0.0
            weight = ("<b>", "</b>") if cat == category else ("", "")
            lines.append(f"<tr><td><span style='color:{CATEGORY_COLORS[cat]}'>■</span> {weight[0]}"
                         f"{category_label(cat)}{weight[1]}</td><td align='right'>&nbsp;{row[k] / GiB:,.2f} GiB"
                         f"</td><td align='right'>&nbsp;{share:4.1f}%</td></tr>")
        total_word = translate("Charts", "Total")
        lines.append(f"<tr><td><b>{total_word}</b></td><td align='right'>&nbsp;<b>{total / GiB:,.2f} GiB</b></td>"
                     "<td></td></tr></table>")
        return "".join(lines)

    # --------------------------------------------------------------------------------- keyboard
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.plot and event.type() == QEvent.Type.Resize and self._tick_request[2]:
            self.set_ticks(*self._tick_request)
        if watched is self.plot and event.type() == QEvent.Type.KeyPress and \
                event.matches(QKeySequence.StandardKey.Copy):  # type: ignore[attr-defined]
            self.copy_png()
            return True
        if watched is self.plot and event.type() == QEvent.Type.KeyPress and len(self.x):
            key = event.key()  # type: ignore[attr-defined]
            i, cat = self.selected or (0, CATEGORIES[0])
            k = CATEGORIES.index(cat)
            if key == Qt.Key.Key_Right:
                i = min(i + 1, len(self.x) - 1)
            elif key == Qt.Key.Key_Left:
                i = max(i - 1, 0)
            elif key == Qt.Key.Key_Up:
                k = min(k + 1, len(CATEGORIES) - 1)
            elif key == Qt.Key.Key_Down:
                k = max(k - 1, 0)
            elif key not in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
                return False
            self.select(i, CATEGORIES[k])
            return True
        return super().eventFilter(watched, event)

    # ----------------------------------------------------------------------------------- export
    def csv_rows(self) -> list[list[object]]:
        """Header + one row per bar, GiB with 4 decimals (subclasses name the bars)."""
        head = ["bar", *(f"{c} (GiB)" for c in CATEGORIES), "total (GiB)"]
        rows: list[list[object]] = [head]
        for i, row in enumerate(self.stack):
            rows.append([i, *(round(v / GiB, 4) for v in row), round(row.sum() / GiB, 4)])
        return rows

    def export_title(self) -> str:
        return self.title.text()

    def _context_menu(self, pos: QPoint) -> None:
        menu = self.export_menu(self)
        menu.exec(self.plot.mapToGlobal(pos))


def y_label_texts() -> tuple[str, ...]:
    """The memory axis's title, long to short."""
    return (translate("Charts", "Memory per device (GiB)"), translate("Charts", "GiB per device"), "GiB")


def nice_ceil(value: float) -> float:
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k that is ≥ value."""
    magnitude = 10 ** np.floor(np.log10(value))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if value <= m * magnitude * (1 + 1e-9):
            return float(m * magnitude)
    return float(10 * magnitude)


def device_scale() -> float:
    """Device pixels per logical pixel of the primary screen (2 on a 2× display), 1 without a screen."""
    from PySide6.QtGui import QGuiApplication

    screen = QGuiApplication.primaryScreen()
    return float(screen.devicePixelRatio()) if screen is not None else 1.0


def outline_pen(color: str, width: float = 2.5, dashed: bool = False) -> QPen:
    pen = pg.mkPen(color, width=width)
    if dashed:
        pen.setStyle(Qt.PenStyle.DashLine)
    return pen
