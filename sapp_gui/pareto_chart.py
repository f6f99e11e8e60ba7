"""The Pareto scatter of a search: step time (y) against peak memory per device (x) for every strategy in
the table; the non-dominated front drawn as a staircase; the budget as a vertical line; clicking a point
selects that strategy (``point_clicked(row index)``), and the selected one is ringed."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from estimator.units import GiB

from .bars import outline_pen
from .chart_export import ExportableChart
from .language import translate
from .plot_style import bold_label, style_axes
from .search_model import SearchRow
from .style import MUTED, OVER_BUDGET, PARETO, SELECTION


class ParetoChart(ExportableChart, QWidget):
    point_clicked = Signal(int)  # index into the rows given to set_rows

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("paretoChart")
        self.title = bold_label()
        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(150)
        item = self.plot.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.showGrid(x=True, y=True, alpha=0.18)
        item.getViewBox().setMouseEnabled(False, False)
        style_axes(item, self)
        self.others = pg.ScatterPlotItem(size=8, pen=pg.mkPen(MUTED, width=1), brush=pg.mkBrush(230, 230, 230, 255))
        self.front_line = pg.PlotDataItem(pen=pg.mkPen(PARETO, width=1.5, style=Qt.PenStyle.DashLine))
        self.front = pg.ScatterPlotItem(size=10, pen=pg.mkPen("#ffffff", width=1), brush=pg.mkBrush(PARETO))
        self.selected_item = pg.ScatterPlotItem(size=18, pen=pg.mkPen(SELECTION, width=2.2), brush=None)
        self.budget_line = pg.InfiniteLine(angle=90, pen=outline_pen(OVER_BUDGET, 1.4, dashed=True), label="",
                                           labelOpts={"position": 0.96, "color": OVER_BUDGET,
                                                      "anchors": [(1, 0), (1, 0)], "fill": (255, 255, 255, 210)})
        for z, it in enumerate((self.budget_line, self.others, self.front_line, self.front, self.selected_item)):
            it.setZValue(z)
            item.addItem(it)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        self.enable_export_menu(self.plot)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.plot, 1)
        self.rows: list[SearchRow] = []
        self.selected = -1
        self.budget = 0.0
        self.retranslate()

    def retranslate(self) -> None:
        self.title.setText(translate("Pareto", "Step time vs peak memory"))
        item = self.plot.getPlotItem()
        item.setLabel("left", translate("Pareto", "Step time (s)"))
        item.setLabel("bottom", translate("Pareto", "Peak memory per device (GiB)"))
        self.budget_line.label.setFormat(translate("Pareto", "budget {0} GiB").format(f"{self.budget / GiB:,.1f}"))

    def export_title(self) -> str:
        return self.title.text()

    # -------------------------------------------------------------------------------------- data
    def set_rows(self, rows: list[SearchRow], budget: float) -> None:
        self.rows, self.budget, self.selected = list(rows), budget, -1
        x = np.array([r.decisive_peak / GiB for r in rows], dtype=float)
        y = np.array([r.row.step_time_s for r in rows], dtype=float)
        on = np.array([r.pareto for r in rows], dtype=bool)
        idx = np.arange(len(rows))
        self.others.setData(x=x[~on], y=y[~on], data=idx[~on])
        self.front.setData(x=x[on], y=y[on], data=idx[on])
        order = np.argsort(x[on])
        fx, fy = x[on][order], y[on][order]
        if len(fx):  # staircase: a front point dominates everything up and to its right
            sx = np.repeat(fx, 2)[1:]
            sy = np.repeat(fy, 2)[:-1]
            self.front_line.setData(sx, sy)
        else:
            self.front_line.setData([], [])
        self.selected_item.setData([], [])
        self.budget_line.setPos(budget / GiB)
        self.retranslate()
        if len(rows):
            lo_x, hi_x = min(x.min(), budget / GiB), max(x.max(), budget / GiB)
            span_x = max(hi_x - lo_x, 1.0)
            span_y = max(float(y.max() - y.min()), 0.05 * float(y.max()) or 1.0)
            item = self.plot.getPlotItem()
            item.setXRange(lo_x - 0.06 * span_x, hi_x + 0.1 * span_x, padding=0)
            item.setYRange(float(y.min()) - 0.08 * span_y, float(y.max()) + 0.08 * span_y, padding=0)

    def clear(self) -> None:
        self.set_rows([], self.budget)

    def select(self, index: int) -> None:
        self.selected = index
        if 0 <= index < len(self.rows):
            r = self.rows[index]
            self.selected_item.setData([r.decisive_peak / GiB], [r.row.step_time_s])
        else:
            self.selected_item.setData([], [])

    def point_at(self, scene_pos: QPointF, radius_px: float = 9.0) -> int:
        """The row whose point is nearest to ``scene_pos`` within ``radius_px`` pixels, else -1."""
        if not self.rows:
            return -1
        view = self.plot.getPlotItem().getViewBox()
        best, best_d = -1, radius_px
        for k, r in enumerate(self.rows):
            p = view.mapViewToScene(QPointF(r.decisive_peak / GiB, r.row.step_time_s))
            d = ((p.x() - scene_pos.x()) ** 2 + (p.y() - scene_pos.y()) ** 2) ** 0.5
            if d <= best_d:
                best, best_d = k, d
        return best

    def _on_click(self, event: object) -> None:
        if event.button() != Qt.MouseButton.LeftButton:  # type: ignore[attr-defined]
            return
        k = self.point_at(event.scenePos())  # type: ignore[attr-defined]
        if k >= 0:
            self.point_clicked.emit(k)

    # ----------------------------------------------------------------------------------- queries
    def point_scene_pos(self, index: int) -> QPointF:
        """Scene position of row ``index``'s point (tests click there)."""
        r = self.rows[index]
        return self.plot.getPlotItem().getViewBox().mapViewToScene(QPointF(r.decisive_peak / GiB, r.row.step_time_s))

    def data(self) -> dict[str, object]:
        return {"points": len(self.rows), "front": int(sum(r.pareto for r in self.rows)), "selected": self.selected,
                "x_gib": [r.decisive_peak / GiB for r in self.rows], "y_s": [r.row.step_time_s for r in self.rows]}

    def csv_rows(self) -> list[list[object]]:
        rows: list[list[object]] = [["rank", "peak (GiB)", "step time (s)", "pareto"]]
        for r in self.rows:
            rows.append([r.rank if r.rank is not None else "P", round(r.decisive_peak / GiB, 4),
                         round(r.row.step_time_s, 6), r.pareto])
        return rows
