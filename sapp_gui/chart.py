"""The stage chart: one stacked bar per pipeline stage against the device capacity and the budget.

The tensors the framework holds are stacked first, the device-level parts (library workspaces, allocator slack,
runtime context, communication libraries) on top; the allocator's low–high band is a whisker at the device peak,
and a dashed outline reaches the optimizer step where it is the stage's peak. Bars over budget get a vermillion
outline, the peak stage is labelled with its device peak, and a pinned baseline of the same pipeline depth is drawn
faded beside the current bars with the per-stage delta above each pair. A baseline of another depth is one line at
its plan's peak: its stage i holds other layers, so stage-by-stage bars would compare unlike stages.
"""

from __future__ import annotations

from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QWidget

from estimator.result import CATEGORIES, PEAK_FIELDS, Result
from estimator.session import SessionEvent
from estimator.session.events import CLOSED, ESTIMATE_FAILED, ESTIMATED, OPENED, PINNED
from estimator.units import GiB

from .bars import StackedBarChart, category_brush, device_scale, nice_ceil, outline_pen
from .language import category_label, translate
from .panel import plan_difference, plan_text, refused_text
from .plot_items import Bars, place_line_label
from .style import CAPACITY, CATEGORY_COLORS, OVER_BUDGET

PINNED_COLOR = "#6e6e6e"
WORD_JOINER = "\u2060"
DASHES = f"-{WORD_JOINER}&nbsp;-{WORD_JOINER}&nbsp;-"  # the budget's dashed line, one unbreakable mark

PAIR_OFFSET = 0.21
PAIR_WIDTH = 0.4


def nb(text: str) -> str:
    """Keep a legend entry on one line: no-break spaces, and in Chinese (which Qt breaks between any two
    characters, whatever the markup says) word joiners between the characters."""
    text = text.replace(" ", "&nbsp;")
    return text if text.isascii() else WORD_JOINER.join(text)


def entry(mark: str, label: str) -> str:
    """A legend entry: its mark and its label, never broken apart (Unicode allows a break before Chinese text
    after a no-break space, and before a no-break space after a hyphen)."""
    return f"{mark}{WORD_JOINER}&nbsp;{WORD_JOINER}{label}"


def category_legend_items(shown: tuple[str, ...] = CATEGORIES) -> list[str]:
    return [entry(f"<span style='color:{CATEGORY_COLORS[c]}; font-size:13pt'>■</span>", nb(category_label(c)))
            for c in reversed(CATEGORIES) if c in shown]


def legend_html(pinned: bool | str = False, lines: bool = True, shown: tuple[str, ...] = CATEGORIES,
                band: bool = False, optimizer_step: bool = False, pinned_line: bool = False) -> str:
    """The categories shown, the lines and markers drawn; ``pinned`` is the pinned baseline's description (or
    True), drawn as bars on the left of each stage or, with ``pinned_line``, as one line at its plan's peak."""
    items = category_legend_items(shown)
    if band:  # the whisker at the device peak: its low-high band (the allocator's, NCCL's NVLS buffers)
        name = translate("Charts", "device-peak band")
        items.append(entry("<b>⌶</b>", nb(name)))
    if lines:
        capacity, budget = nb(translate("Charts", "capacity")), nb(translate("Charts", "budget"))
        over = nb(translate("Charts", "over budget"))
        items.append(entry(f"<span style='color:{CAPACITY}'><b>———</b></span>", capacity))
        items.append(entry(f"<span style='color:{OVER_BUDGET}'><b>{DASHES}</b></span>", budget))
        items.append(entry(f"<span style='color:{OVER_BUDGET}; font-size:13pt'>□</span>", over))
    if optimizer_step:  # the dashed tick above a bar whose optimizer step goes higher than its training peak
        step = nb(translate("Charts", "optimizer-step peak"))
        items.append(entry(f"<span style='color:{OVER_BUDGET}'><b>┅</b></span>", step))
    if pinned:
        left = nb(translate("Charts", "pinned peak") if pinned_line else translate("Charts", "pinned (left)"))
        if isinstance(pinned, str):  # what the baseline is: a plan in words, never markup
            left += ": " + escape(pinned)
        mark = f"<span style='color:{PINNED_COLOR}'><b>·&nbsp;·&nbsp;·</b></span>" if pinned_line else \
            "<span style='color:#9a9a9a; font-size:13pt'>▥</span>"
        items.append(entry(mark, left))
    return "&nbsp;&nbsp; ".join(items)


class StageChart(StackedBarChart):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(translate("Charts", "Memory per pipeline stage"), translate("Charts", "Pipeline stage"),
                         parent)
        self.setObjectName("stageChart")
        self.legend = QLabel(legend_html())
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setAccessibleName(translate("Charts", "Chart legend"))
        self.header_layout.insertWidget(1, self.legend)
        item = self.plot.getPlotItem()
        self.add_limit_lines(1.6, 0.7, 3)
        self.opt_item = Bars(x=np.zeros(0), height=np.zeros(0), width=0.7, brush=None,
                                        pen=outline_pen(OVER_BUDGET, 2.0, dashed=True))
        self.opt_item.setZValue(18)
        item.addItem(self.opt_item)
        # the device peak's low–high band (the caching allocator's behaviour varies with the order of frees)
        self.band_item = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), top=np.zeros(0), bottom=np.zeros(0),
                                         beam=0.25, pen=pg.mkPen("#222222", width=1.4 * device_scale()))
        self.band_item.setZValue(19)
        item.addItem(self.band_item)
        self.pinned_bars: dict[str, Bars] = {}
        for cat in CATEGORIES:
            bar = Bars(x=np.zeros(0), height=np.zeros(0), width=PAIR_WIDTH,
                                  brush=category_brush(cat, 85), pen=outline_pen("#8a8a8a", 0.8, dashed=True))
            bar.setZValue(-1)
            self.pinned_bars[cat] = bar
            item.addItem(bar)
        # a pinned baseline of another pipeline depth: its plan's peak, one line across the stages
        self.pinned_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(PINNED_COLOR, width=1.6 * device_scale(),
                                                                 style=Qt.PenStyle.DotLine),
                                           label="", labelOpts={"position": 0.015, "color": PINNED_COLOR,
                                                                "anchors": [(0, 1.25), (0, 1.25)],
                                                                "fill": (255, 255, 255, 210)})
        self.pinned_line.setZValue(14)
        self.pinned_line.setVisible(False)
        item.addItem(self.pinned_line)
        self.peak_label = pg.TextItem(anchor=(0.5, 1.0), fill=(255, 255, 255, 200))  # no line strikes through it
        self.peak_label.setZValue(25)
        item.addItem(self.peak_label)
        self._peak_html = ""
        self.delta_labels: list[pg.TextItem] = []
        self.opt_shown = False
        self._peak_top = 0.0
        self._base_top = 1.0  # the scale the bars and lines need (GiB); declutter may raise it for the peak label
        # a resize places the labels at once (a timer placed them a turn later: a second paint, on every edit
        # that shows or hides the fixes bar or a caption above the charts)
        item.getViewBox().sigResized.connect(self.declutter)
        self.result: Result | None = None
        self.pinned: Result | None = None
        self.pinned_text = ""   # the pinned baseline's plan in words (the legend's tooltip)
        self.pinned_diff = ""   # what differs from the plan on screen (the legend)
        self.shown: tuple[str, ...] = CATEGORIES

    # -------------------------------------------------------------------------------------- data
    def on_session(self, event: SessionEvent) -> None:
        """The session's estimate on screen (beside the pinned baseline); nothing for a new document, and the
        reason instead of bars when the plan cannot be priced and no earlier estimate is on screen (one that is
        stays, greyed by the StaleFrame around the charts)."""
        session = event.session
        if event.kind in (OPENED, CLOSED):
            self.clear()
        elif event.kind == ESTIMATE_FAILED and session.shown is None and event.error is not None:
            self.clear(refused_text(event.error))
        elif event.kind in (ESTIMATED, PINNED) and session.shown is not None:
            pinned = session.pinned.parsed if session.pinned else None
            self.pinned_text = plan_text(pinned) if pinned is not None else ""
            self.pinned_diff = plan_difference(pinned, session.shown.parsed) if pinned is not None else ""
            self.set_result(session.shown.result, session.pinned.result if session.pinned else None)

    def clear(self, message: str = "") -> None:
        """No bars (a new document until its first estimate, none open, or a plan that cannot be priced):
        ``message`` says why (by default: the estimate is on its way)."""
        self.result, self.pinned = None, None
        empty = {"x": np.zeros(0), "height": np.zeros(0), "y0": np.zeros(0)}
        self.over_item.setOpts(**empty)
        self.opt_item.setOpts(**empty)
        self.band_item.setData(x=np.zeros(0), y=np.zeros(0), top=np.zeros(0), bottom=np.zeros(0))
        self._draw_pinned(None, 0)
        self._set_peak_html("")
        self.capacity_line.setVisible(False)
        self.budget_line.setVisible(False)
        self.shown = CATEGORIES
        self.legend.setText(legend_html(False))
        self.show_empty(message or translate("Charts", "Estimating…"))

    def set_result(self, result: Result, pinned: Result | None = None) -> None:
        self.result, self.pinned = result, pinned
        n = len(result.stages)
        stack = np.array([[s.bytes_by_category[c] for c in CATEGORIES] for s in result.stages], dtype=float)
        base = np.arange(n, dtype=float)
        paired = pinned is not None and len(pinned.stages) == n  # stage i of another depth holds other layers
        x = base + PAIR_OFFSET if paired else base
        width = PAIR_WIDTH if paired else 0.7
        self.set_stack(x, stack, width)
        totals = stack.sum(axis=1)
        device = np.array([s.device_peak for s in result.stages], dtype=float)
        low = np.array([s.device_peak_low for s in result.stages], dtype=float)
        high = np.array([s.device_peak_high for s in result.stages], dtype=float)
        over = np.array([result.over(s) for s in result.stages], dtype=bool)
        self.over_item.setOpts(x=x[over], height=device[over] / GiB, y0=np.zeros(int(over.sum())), width=width)
        opt_shown = device > totals * (1 + 1e-9)  # the optimizer step is the stage's peak
        self.opt_item.setOpts(x=x[opt_shown], height=np.zeros(int(opt_shown.sum())), y0=device[opt_shown] / GiB,
                              width=width)
        banded = high - low > 1e-3 * GiB
        self.band_item.setData(x=x[banded], y=device[banded] / GiB, top=(high - device)[banded] / GiB,
                               bottom=(device - low)[banded] / GiB, beam=width * 0.35)
        self._draw_pinned(pinned, n)
        self._draw_lines(result)
        peak = result.peak_stage
        verdict_color = OVER_BUDGET if over[peak] else "#111111"
        peak_text = translate("Charts", "peak {0} GiB").format(f"{device[peak] / GiB:,.2f}")
        self._set_peak_html(f"<div style='color:{verdict_color}; font-weight:bold'>{peak_text}</div>")
        # anchored on the bar's inner edge so that the label never runs off the plot at either end; above the
        # optimizer-step tick when that is higher, so the tick does not strike through it
        top = float(high[peak] / GiB)
        if peak < n / 2:
            self.peak_label.setAnchor((0.0, 1.0))
            self.peak_label.setPos(float(x[peak] - width / 2), top)
        else:
            self.peak_label.setAnchor((1.0, 1.0))
            self.peak_label.setPos(float(x[peak] + width / 2), top)
        self._peak_top = top
        labels = [str(i) for i in range(n)]
        self.set_ticks(labels, px_per_label=22)
        self.opt_shown = bool(opt_shown.any())
        self.shown = tuple(c for k, c in enumerate(CATEGORIES) if stack[:, k].any())
        self.legend.setText(self._legend())
        tops = [high.max(initial=0.0), result.capacity, result.budget]
        if pinned is not None:
            tops.append(max(s.device_peak for s in pinned.stages))
        item = self.plot.getPlotItem()
        self._base_top = max(tops) / GiB * 1.1
        self.set_y_top(self._base_top)
        slots = n
        pad = max(0.0, (4 - slots) / 2)  # one or two stages: keep the bars bar-shaped
        right = 0.0
        if paired:  # room for the line labels right of the last pair, clear of the delta labels
            per_slot = max(self.plot.width(), 300) / (slots + 1)
            right = min(float(slots), 150 / per_slot)
        item.setXRange(-0.6 - pad, slots - 0.4 + pad + right, padding=0)
        # the labels placed before the paint, not after it (which painted every edit twice); a resize still
        # declutters through the timer
        self.view.prepareForPaint()
        self.declutter()

    def _set_peak_html(self, html: str) -> None:
        """The peak label's text, laid out again only when it changes (most edits keep the peak's words)."""
        if html != self._peak_html:
            self._peak_html = html
            self.peak_label.setHtml(html)

    def _legend(self) -> str:
        """The legend; the pinned baseline is named by what differs from the plan on screen (its whole plan is
        the legend's tooltip)."""
        pinned: bool | str = False
        self.legend.setToolTip("")
        if self.pinned is not None:
            pinned = self.pinned_diff or (translate("Charts", "same degrees, sequence and batch")
                                          if self.pinned_text else True)
            if self.other_depth:
                pinned = f"{pinned if isinstance(pinned, str) else ''} — " + translate(
                    "Charts", "another pipeline depth: stages not comparable")
            if self.pinned_text:
                self.legend.setToolTip(translate("Charts", "Pinned baseline: {0}").format(self.pinned_text))
        stages = self.result.stages if self.result is not None else ()
        return legend_html(pinned, shown=self.shown, optimizer_step=self.opt_shown,
                           band=any(s.device_peak_high - s.device_peak_low > 1e-3 * GiB for s in stages),
                           pinned_line=self.other_depth)

    @property
    def other_depth(self) -> bool:
        """A pinned baseline of another pipeline depth (drawn as its plan's peak line, not stage by stage)."""
        return self.pinned is not None and self.result is not None and \
            len(self.pinned.stages) != len(self.result.stages)

    def _draw_pinned(self, pinned: Result | None, n: int) -> None:
        for label in self.delta_labels:
            self.plot.getPlotItem().removeItem(label)
        self.delta_labels = []
        m = len(pinned.stages) if pinned is not None else 0
        self.pinned_line.setVisible(pinned is not None and m != n)
        if pinned is None or m != n:
            for bar in self.pinned_bars.values():
                if len(bar.opts["x"]):  # already empty on most edits (no baseline pinned): left as it is
                    bar.setOpts(x=np.zeros(0), height=np.zeros(0), y0=np.zeros(0))
            if pinned is not None:  # another depth: the plan-level peak only
                peak = max(s.device_peak for s in pinned.stages)
                self.pinned_line.setPos(peak / GiB)
                self.pinned_line.label.setVisible(True)  # a hidden label ignores its new text (declutter decides)
                self.pinned_line.label.setFormat(translate("Charts", "pinned peak {0} GiB (pp {1})").format(
                    f"{peak / GiB:,.2f}", m))
            return
        stack = np.array([[s.bytes_by_category[c] for c in CATEGORIES] for s in pinned.stages], dtype=float) / GiB
        x = np.arange(m, dtype=float) - PAIR_OFFSET
        bottom = np.zeros(m)
        for k, cat in enumerate(CATEGORIES):
            self.pinned_bars[cat].setOpts(x=x, height=stack[:, k], y0=bottom.copy(), width=PAIR_WIDTH)
            bottom += stack[:, k]
        assert self.result is not None
        current = np.array([s.device_peak for s in self.result.stages], dtype=float) / GiB
        before = np.array([s.device_peak for s in pinned.stages], dtype=float) / GiB
        narrow = self.plot.width() / max(n, m, 1) < 75  # two short lines instead of one long one
        font = QFont(self.font())
        font.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.8))
        for i in range(n):
            delta = current[i] - before[i]
            color = OVER_BUDGET if delta > 0.005 else ("#00795A" if delta < -0.005 else "#555555")
            text = f"{delta:+.2f}<br>GiB" if narrow else f"{delta:+.2f} GiB"
            label = pg.TextItem(html=f"<div style='color:{color}; text-align:center'>{text}</div>", anchor=(0.5, 1))
            label.setFont(font)
            label.setPos(float(i), float(max(current[i], before[i], bottom[i])))
            self.plot.getPlotItem().addItem(label)
            self.delta_labels.append(label)

    def declutter(self) -> None:
        """Labels never collide: the peak label moves above a pinned delta it would cover, and a capacity or
        budget label that would cover another label or run off the plot tries the plot's left end, then the
        other side of its line, and steps out of the way when nothing fits (the legend names the lines)."""
        if self.result is None:
            return
        view = self.plot.getPlotItem().getViewBox()
        inside = view.sceneBoundingRect()
        # the scale is solved from the bars' own top each time (never stepped from the current range), so that
        # running again on every resize changes nothing, and a view too short for the label (while the window
        # is laid out) never inflates it; the lift over the deltas depends on the scale, hence the few rounds
        top = self._base_top
        for _ in range(4):
            self.set_y_top(top)
            view.updateMatrix()  # pyqtgraph defers it to the next paint: the labels' rects must be of this scale
            peak_rect = self._place_peak_label(view)
            need, height = peak_rect.height() + 4, inside.height()
            label_y = float(self.peak_label.pos().y())
            wanted = self._base_top
            if 0 < need < 0.6 * height and label_y > 0:  # a short chart: room for the peak label, shown whole
                wanted = max(wanted, label_y / (1 - need / height))
            if nice_ceil(wanted) == nice_ceil(top):
                break
            top = wanted
        taken = [peak_rect, *(label.sceneBoundingRect() for label in self.delta_labels)]
        for line, above in ((self.capacity_line, True), (self.budget_line, False), (self.pinned_line, True)):
            label = line.label
            if not line.isVisible():
                label.setVisible(False)  # placed when its line shows again (this runs after every change)
                continue
            if not label.isVisible():
                label.setVisible(True)  # a shown label takes its current text (hidden, it ignored it)
            sides = (1.25, -0.25) if above else (-0.25, 1.25)  # its own side of the line first
            for anchor in sides:
                for position, side in ((0.985, 1), (0.015, 0)):
                    place_line_label(label, position, (side, anchor))
                    rect = label.sceneBoundingRect()
                    if inside.contains(rect) and not any(rect.intersects(other) for other in taken):
                        break
                else:
                    continue
                break
            else:
                label.setVisible(False)
            if label.isVisible():
                taken.append(label.sceneBoundingRect())

    def _place_peak_label(self, view: pg.ViewBox) -> QRectF:
        """The peak label on its bar, lifted above a pinned delta it would cover; returns where it is."""
        self.peak_label.setPos(self.peak_label.pos().x(), self._peak_top)
        peak_rect = self.peak_label.sceneBoundingRect()
        below = [label.sceneBoundingRect() for label in self.delta_labels]
        below = [r for r in below if r.left() < peak_rect.right() and r.right() > peak_rect.left()]
        if below and peak_rect.bottom() > min(r.top() for r in below):
            lift = (peak_rect.bottom() - min(r.top() for r in below) + 2) * view.viewPixelSize()[1]
            self.peak_label.setPos(self.peak_label.pos().x(), self._peak_top + lift)
            peak_rect = self.peak_label.sceneBoundingRect()
        return peak_rect

    def _draw_lines(self, result: Result) -> None:
        self.show_limits(result.capacity, result.budget)

    def retranslate(self) -> None:
        self.set_labels(translate("Charts", "Memory per pipeline stage"), translate("Charts", "Pipeline stage"))
        self.legend.setAccessibleName(translate("Charts", "Chart legend"))
        self.legend.setText(self._legend())
        if self.result is not None:
            self.set_result(self.result, self.pinned)

    # ----------------------------------------------------------------------------------- queries
    def data(self) -> dict[str, object]:
        """What is drawn, for tests and the benchmark: per-category heights and totals in GiB."""
        return {"stages": len(self.x), "x": self.x.copy(), "totals_gib": self.totals() / GiB,
                "by_category_gib": {c: self.heights(c).copy() for c in CATEGORIES},
                "over_budget": np.asarray(self.over_item.opts["x"]).copy(),
                "pinned_stages": len(self.pinned_bars[CATEGORIES[0]].opts["x"]),
                "pinned_peak_gib": float(self.pinned_line.value()) if self.pinned_line.isVisible() else None,
                "deltas": [item.textItem.toPlainText().replace("\n", " ").replace("\u2028", " ")
                           for item in self.delta_labels],
                "peak_label": self.peak_label.textItem.toPlainText(),
                "band_x": np.asarray(self.band_item.opts["x"] if self.band_item.opts["x"] is not None else []).copy(),
                "optimizer_step_x": np.asarray(self.opt_item.opts["x"]).copy()}

    def hover_html(self, index: int, category: str) -> str:
        assert self.result is not None
        stage = self.result.stages[index]
        budget = self.result.budget
        total = f"{stage.device_peak / GiB:,.2f}"
        title = (translate("Charts", "Stage {0}: {1} GiB ({2}% of the {3} GiB budget)").format(
            index, total, f"{100 * stage.device_peak / budget:.1f}", f"{budget / GiB:,.2f}") if budget else
            translate("Charts", "Stage {0}: {1} GiB").format(index, total))
        html = self.breakdown_html(index, category, title)
        html += "<br>" + translate("Charts", "optimizer-step peak {0} GiB").format(
            f"{stage.optimizer_step_peak / GiB:,.2f}")
        html += "<br>" + translate(
            "Charts", "tensor peak {0} GiB (max allocated) · allocator peak {1} GiB (max reserved) · device peak {2} "
                      "GiB ({3}–{4})").format(*(f"{v / GiB:,.2f}" for v in (
                          stage.tensor_peak, stage.allocator_peak, stage.device_peak, stage.device_peak_low,
                          stage.device_peak_high)))
        if self.pinned is not None and len(self.pinned.stages) == len(self.result.stages):
            delta = stage.device_peak - self.pinned.stages[index].device_peak
            html += "<br>" + translate("Charts", "vs pinned: {0} GiB").format(f"{delta / GiB:+,.2f}")
        return html

    def csv_rows(self) -> list[list[object]]:
        rows = [["stage", *(f"{c} (GiB)" for c in CATEGORIES), "total (GiB)", "optimizer-step peak (GiB)",
                 *(f"{name} (GiB)" for name in PEAK_FIELDS), "budget (GiB)", "capacity (GiB)", "fits"]]
        if self.result is None:
            return rows
        r = self.result
        for s in r.stages:
            rows.append([s.index, *(round(s.bytes_by_category[c] / GiB, 4) for c in CATEGORIES),
                         round(s.total / GiB, 4), round(s.optimizer_step_peak / GiB, 4),
                         *(round(getattr(s, name) / GiB, 4) for name in PEAK_FIELDS), round(r.budget / GiB, 4),
                         round(r.capacity / GiB, 4), not r.over(s)])
        return rows
