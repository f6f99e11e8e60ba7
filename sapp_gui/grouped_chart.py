"""Stacked per-stage bars of several strategies, grouped per stage (compare view, balance before/after).

Stage i of every strategy that has a stage i stands side by side around x = i, in the order the strategies
were given; a stage only one strategy has is drawn alone, centred. Each bar carries its strategy's tag
above it (A, B, …) unless the strategy is drawn ``faded`` (the "before" of a balance), which is drawn with
pale colours and a dashed outline like the pinned baseline of the stage chart.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QWidget

from estimator.result import CATEGORIES, Result
from estimator.units import GiB

from .bars import StackedBarChart, category_brush, outline_pen
from .chart import legend_html
from .language import translate

GROUP_WIDTH = 0.84
FADED_ALPHA = 80


def aligned_groups(stage_counts: list[int]) -> list[list[tuple[int, int]]]:
    """(strategy, stage) pairs per group: with equal depths group i holds stage i of each; otherwise group g is
    stage g of the shallowest pipeline and every other stage joins the group its middle falls in."""
    slots = min(stage_counts) if len(set(stage_counts)) > 1 else max(stage_counts, default=0)
    groups: list[list[tuple[int, int]]] = [[] for _ in range(slots)]
    for k, n in enumerate(stage_counts):
        for i in range(n):
            groups[min(slots - 1, (2 * i + 1) * slots // (2 * n))].append((k, i))
    return groups


@dataclass(frozen=True)
class ChartEntry:
    tag: str          # short mark above the bars ("A")
    name: str         # long name (legend, hover)
    result: Result
    faded: bool = False
    detail: str = ""  # the plan in words (hover)


class GroupedStageChart(StackedBarChart):
    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(title, translate("Charts", "Pipeline stage"), parent)
        self._title_source = title
        self.legend = QLabel(legend_html())
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.header_layout.insertWidget(1, self.legend)
        self.add_limit_lines(1.4, 0.5, 2.5)
        self.tag_items: list[pg.TextItem] = []
        self.tags_drawn = False
        self.entries: list[ChartEntry] = []
        self.bar_entry = np.zeros(0, dtype=int)   # which entry each drawn bar belongs to
        self.bar_stage = np.zeros(0, dtype=int)   # and which of its stages

    # -------------------------------------------------------------------------------------- data
    @staticmethod
    def layout(stage_counts: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """Bar positions for strategies with ``stage_counts`` stages: (x, entry, stage, width).

        With equal depths stage i of every strategy stands side by side around x = i. With different depths the
        bars are aligned by the layers they hold: group g is stage g of the shallowest pipeline, and stage i
        of a pipeline of n stages joins the group its middle falls in (pp 8 beside pp 4: stages 2g and 2g + 1
        under stage g), in strategy then stage order."""
        if not stage_counts:
            return np.zeros(0), np.zeros(0, dtype=int), np.zeros(0, dtype=int), GROUP_WIDTH
        groups = aligned_groups(stage_counts)
        width = GROUP_WIDTH / max((len(members) for members in groups), default=1)
        xs, entries, stages = [], [], []
        for g, members in enumerate(groups):
            for j, (k, i) in enumerate(members):
                xs.append(g + (j - (len(members) - 1) / 2) * width)
                entries.append(k)
                stages.append(i)
        return np.array(xs, dtype=float), np.array(entries, dtype=int), np.array(stages, dtype=int), width

    @property
    def aligned_by_depth(self) -> bool:
        """The strategies have different pipeline depths (bars grouped by the layers they hold)."""
        return len({len(e.result.stages) for e in self.entries}) > 1

    def set_entries(self, entries: list[ChartEntry]) -> None:
        self.entries = list(entries)
        x, entry, stage, width = self.layout([len(e.result.stages) for e in entries])
        self.bar_entry, self.bar_stage = entry, stage
        stack = np.array([[entries[k].result.stages[i].bytes_by_category[c] for c in CATEGORIES]
                          for k, i in zip(entry, stage, strict=True)], dtype=float).reshape(len(x), len(CATEGORIES))
        self.set_stack(x, stack, width * 0.92)
        self._style_faded(entry)
        totals = stack.sum(axis=1)
        opt = np.array([entries[k].result.stages[i].optimizer_step_peak for k, i in zip(entry, stage, strict=True)])
        budgets = np.array([entries[k].result.budget for k in entry])
        over = (np.maximum(totals, opt) > budgets) if len(x) else np.zeros(0, dtype=bool)
        self.over_item.setOpts(x=x[over], height=totals[over] / GiB, y0=np.zeros(int(over.sum())), width=self.width)
        self._draw_lines()
        slots = len(aligned_groups([len(e.result.stages) for e in entries])) if entries else 0
        self.set_ticks([str(i) for i in range(slots)], px_per_label=22)
        self._axis_title()
        tops = [totals.max(initial=0.0)] + [max(e.result.capacity, e.result.budget) for e in entries]
        self.set_y_top(max(tops) / GiB * 1.12 if entries else 1.0)
        pad = max(0.0, (3 - slots) / 2)
        self.plot.getPlotItem().setXRange(-0.6 - pad, max(slots, 1) - 0.4 + pad, padding=0)
        self._draw_tags(x, totals, entry)
        self.legend.setText(self._legend())

    def _style_faded(self, entry: np.ndarray) -> None:
        faded = [self.entries[k].faded for k in entry]
        if not any(faded):
            for cat in CATEGORIES:
                self.bars[cat].setOpts(brushes=None, pens=None, brush=category_brush(cat),
                                       pen=pg.mkPen("#ffffff", width=0.8))
            return
        solid_pen, faded_pen = pg.mkPen("#ffffff", width=0.8), outline_pen("#8a8a8a", 0.8, dashed=True)
        for cat in CATEGORIES:
            brushes = [category_brush(cat, FADED_ALPHA if f else 255) for f in faded]
            self.bars[cat].setOpts(brushes=brushes, pens=[faded_pen if f else solid_pen for f in faded])

    def _draw_tags(self, x: np.ndarray, totals: np.ndarray, entry: np.ndarray) -> None:
        item = self.plot.getPlotItem()
        for label in self.tag_items:
            item.removeItem(label)
        self.tag_items = []
        self.tags_drawn = False
        if sum(1 for e in self.entries if not e.faded) < 2:
            return  # one solid strategy (balance "after"): the legend says which is which
        (x_lo, x_hi), _ = self.plot.getPlotItem().getViewBox().viewRange()
        bar_px = self.width * max(self.plot.width() - 60, 100) / max(x_hi - x_lo, 1.0)
        if bar_px < (18 if self.aligned_by_depth else 11):
            return  # too narrow for a letter each: the legend gives the order within a stage
        font = QFont(self.font())
        font.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.85))
        font.setBold(True)
        by_depth = self.aligned_by_depth  # each bar says which stage it is: the groups mix depths
        for xi, top, k, i in zip(x, totals, entry, self.bar_stage, strict=True):
            e = self.entries[k]
            if e.faded:
                continue
            label = pg.TextItem(f"{e.tag}{i}" if by_depth else e.tag, color="#222222", anchor=(0.5, 1.0))
            label.setFont(font)
            label.setPos(float(xi), float(top / GiB))
            item.addItem(label)
            self.tag_items.append(label)
        self.tags_drawn = True

    def _draw_lines(self) -> None:
        capacities = {round(e.result.capacity) for e in self.entries}
        budgets = {round(e.result.budget) for e in self.entries}
        shared = len(capacities) == 1 and len(budgets) == 1
        self.capacity_line.setVisible(shared)
        self.budget_line.setVisible(shared)
        if not shared:
            return
        self.show_limits(self.entries[0].result.capacity, self.entries[0].result.budget)

    def _legend(self) -> str:
        html = legend_html(lines=self.capacity_line.isVisible())
        faded = [e for e in self.entries if e.faded]
        solid = [e for e in self.entries if not e.faded]
        names = []
        pale, full = translate("Charts", "pale"), translate("Charts", "solid")
        for e in faded:
            names.append(f"<span style='color:#8a8a8a'>▥ {pale}</span> = {escape(e.name)}")
        for e in solid:  # names are file names: text, never markup
            names.append(f"<b>{e.tag}</b> = {escape(e.name)}" if len(solid) > 1 else f"▮ {full} = {escape(e.name)}")
        if self.aligned_by_depth:
            depths = ", ".join(f"{e.tag}: pp {len(e.result.stages)}" for e in self.entries)
            names.append(translate("Charts", "different pipeline depths ({0}): each group holds the same layers, "
                                             "the stages of deeper pipelines side by side ({1}0, {1}1, …)")
                         .format(depths, max(self.entries, key=lambda e: len(e.result.stages)).tag))
        elif len(solid) > 1 and not self.tags_drawn:
            order = " ".join(e.tag for e in solid)
            names.append(translate("Charts", "(in each stage from left to right: {0})").format(order))
        return html + ("<br>" + "&nbsp;&nbsp; ".join(names) if names else "")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.plot and event.type() == QEvent.Type.Resize and self.entries:
            QTimer.singleShot(0, self._redraw_tags)  # after the view box has its new size
        return super().eventFilter(watched, event)

    def _redraw_tags(self) -> None:
        if self.entries and len(self.x) == len(self.bar_entry):
            self._draw_tags(self.x, self.totals(), self.bar_entry)
            self.legend.setText(self._legend())

    def clear(self) -> None:
        self.set_entries([])

    def _axis_title(self) -> str:
        """The x axis: stages, or with different depths the stages of the shallowest pipeline."""
        if self.aligned_by_depth:
            shallow = min(self.entries, key=lambda e: len(e.result.stages))
            text = translate("Charts", "Pipeline stage of {0} (pp {1}); deeper pipelines' stages under the one "
                                       "holding their layers").format(shallow.tag, len(shallow.result.stages))
        else:
            text = translate("Charts", "Pipeline stage")
        self.set_labels(self._title_source, text)
        return text

    def retranslate(self, title: str) -> None:
        self._title_source = title
        self.set_entries(self.entries)

    # ----------------------------------------------------------------------------------- queries
    def data(self) -> dict[str, object]:
        """What is drawn (tests): per bar its strategy, stage, position and per-category GiB."""
        return {"x": self.x.copy(), "entry": self.bar_entry.copy(), "stage": self.bar_stage.copy(),
                "width": self.width, "totals_gib": self.totals() / GiB,
                "by_category_gib": {c: self.heights(c).copy() for c in CATEGORIES},
                "tags": [item.textItem.toPlainText() for item in self.tag_items]}

    def hover_html(self, index: int, category: str) -> str:
        e = self.entries[int(self.bar_entry[index])]
        stage = int(self.bar_stage[index])
        head = translate("Charts", "{0} · stage {1}").format(f"{e.tag} ({e.name})", stage)
        if e.detail:
            head += "<br>" + escape(e.detail)
        return self.breakdown_html(index, category, head)

    def csv_rows(self) -> list[list[object]]:
        rows: list[list[object]] = [["strategy", "stage", *(f"{c} (GiB)" for c in CATEGORIES), "total (GiB)"]]
        for i, row in enumerate(self.stack):
            e = self.entries[int(self.bar_entry[i])]
            rows.append([f"{e.tag}: {e.name}", int(self.bar_stage[i]), *(round(v / GiB, 4) for v in row),
                         round(row.sum() / GiB, 4)])
        return rows
