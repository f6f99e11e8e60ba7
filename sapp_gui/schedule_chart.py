"""The schedule timeline: one band per pipeline stage (stage 0 on top). The upper row of a band holds the
operations of one flush in time — forward, recompute, backward (input gradients) and weight-gradient blocks
per micro-batch and chunk — and the lower part the stage's activation memory over time (a step curve, each
stage scaled to its own peak, whose value the table lists), with the peak instant marked by a vermillion line
and dot.

The data come from ``estimator.timeline`` (``TimedOp`` start/end, in-flight units and memory after each
operation); a backward op is split into its recompute and backward parts with the step model's per-chunk
times, so the blocks add up to the op.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, QTimer
from PySide6.QtGui import QColor, QCursor, QFont, QFontMetrics
from PySide6.QtWidgets import QToolTip, QVBoxLayout, QWidget

from estimator.honest import sig
from estimator.result import Result
from estimator.timeline import Timeline
from estimator.units import GiB

from .chart_export import ExportableChart
from .language import translate
from .plot_style import bold_label, style_axes
from .style import MEMORY_LINE, OP_COLORS, PEAK_MARK

OPS_ROW = (0.08, 0.44)      # band-relative y range of the operations row (0 = top of the band)
MEM_ROW = (0.50, 0.94)      # … and of the memory curve (its baseline at the bottom)
MAX_LABELS = 400
MIN_LABEL_PX = 16


@dataclass(frozen=True)
class Block:
    stage: int
    kind: str       # F | R | B | W
    microbatch: int
    chunk: int
    start: float
    end: float
    op: int         # index of the TimedOp in its stage


@dataclass(frozen=True)
class StagePeak:
    stage: int
    max_inflight: int       # max over the flush of Σ in-flight units
    op: int                 # the first op after which memory is maximal
    time: float             # its end time (s)
    memory: float           # bytes: static + activations at that instant
    static: float
    activations: float


def blocks_of(timeline: Timeline, result: Result | None) -> list[Block]:
    """Every block to draw; a backward's recompute part comes first (the forward is re-run, then B)."""
    out: list[Block] = []
    for st in timeline.stages:
        times = result.step.stages[st.stage] if result is not None and result.step is not None else None
        for k, op in enumerate(st.ops):
            if op.kind == "B" and times is not None and times.chunk_Rc:
                rc = min(float(times.chunk_Rc[op.chunk]), op.end - op.start)
                if rc > 0:
                    out.append(Block(st.stage, "R", op.microbatch, op.chunk, op.start, op.start + rc, k))
                    out.append(Block(st.stage, "B", op.microbatch, op.chunk, op.start + rc, op.end, k))
                    continue
            out.append(Block(st.stage, op.kind, op.microbatch, op.chunk, op.start, op.end, k))
    return out


def peaks_of(timeline: Timeline) -> list[StagePeak]:
    out = []
    for st in timeline.stages:
        memory = [op.memory for op in st.ops]
        k = int(np.argmax(memory)) if memory else 0
        op = st.ops[k] if st.ops else None
        out.append(StagePeak(stage=st.stage, max_inflight=st.peak_inflight, op=k, time=op.end if op else 0.0,
                             memory=op.memory if op else st.static, static=st.static,
                             activations=op.activations if op else 0.0))
    return out


def _shade(color: str, chunk: int) -> QColor:
    c = QColor(color)
    return c.darker(100 + 28 * chunk) if chunk else c


class ScheduleChart(ExportableChart, QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scheduleChart")
        self.title = bold_label()
        self.plot = pg.PlotWidget()
        item = self.plot.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.showGrid(x=True, y=False, alpha=0.15)
        self.view = item.getViewBox()
        self.view.setMouseEnabled(x=True, y=False)  # wheel zooms the time axis; the labels follow
        style_axes(item, self)
        self.op_items: dict[str, pg.BarGraphItem] = {}
        for kind in ("F", "R", "B", "W"):
            bar = pg.BarGraphItem(x0=np.zeros(0), x1=np.zeros(0), y0=np.zeros(0), height=np.zeros(0),
                                  brush=QColor(OP_COLORS[kind]), pen=pg.mkPen("#ffffff", width=0.6))
            self.op_items[kind] = bar
            item.addItem(bar)
        self.memory_items: list[pg.PlotDataItem] = []
        self.peak_lines = pg.PlotDataItem(pen=pg.mkPen(PEAK_MARK, width=1.3, style=Qt.PenStyle.DashLine),
                                          connect="pairs")
        self.peak_dots = pg.ScatterPlotItem(size=7, pen=pg.mkPen("#ffffff", width=0.8), brush=pg.mkBrush(PEAK_MARK))
        for it in (self.peak_lines, self.peak_dots):
            it.setZValue(10)
            item.addItem(it)
        self.labels: list[pg.TextItem] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.plot, 1)
        self.timeline: Timeline | None = None
        self.result: Result | None = None
        self.blocks: list[Block] = []
        self.peaks: list[StagePeak] = []
        self._label_timer = QTimer(self)
        self._label_timer.setSingleShot(True)
        self._label_timer.setInterval(60)
        self._label_timer.timeout.connect(self._draw_labels)
        self.view.sigXRangeChanged.connect(lambda *_: self._label_timer.start())
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.enable_export_menu(self.plot)
        self.retranslate()

    def retranslate(self) -> None:
        self.plot.getPlotItem().setLabel("bottom", translate("Schedule", "Time within one pipeline flush (s)"))
        if self.timeline is None:
            self.title.setText(translate("Schedule", "Pipeline schedule"))
        else:
            self._set_title()
            self._set_ticks()

    def export_title(self) -> str:
        return self.title.text()

    # -------------------------------------------------------------------------------------- geometry
    def band_top(self, stage: int) -> float:
        assert self.timeline is not None
        return float(len(self.timeline.stages) - stage)

    def _y(self, stage: int, frac: float) -> float:
        return self.band_top(stage) - frac

    # ------------------------------------------------------------------------------------------ data
    def set_timeline(self, timeline: Timeline, result: Result | None) -> None:
        self.timeline, self.result = timeline, result
        self.blocks = blocks_of(timeline, result)
        self.peaks = peaks_of(timeline)
        n = len(timeline.stages)
        for kind, bar in self.op_items.items():
            mine = [b for b in self.blocks if b.kind == kind]
            x0 = np.array([b.start for b in mine], dtype=float)
            x1 = np.array([b.end for b in mine], dtype=float)
            y0 = np.array([self._y(b.stage, OPS_ROW[1]) for b in mine], dtype=float)
            brushes = [_shade(OP_COLORS[kind], b.chunk) for b in mine]
            bar.setOpts(x0=x0, x1=x1, y0=y0, height=np.full(len(mine), OPS_ROW[1] - OPS_ROW[0]),
                        brushes=brushes if any(b.chunk for b in mine) else None, brush=QColor(OP_COLORS[kind]))
        self._draw_memory()
        self._set_ticks()
        self._set_title()
        item = self.plot.getPlotItem()
        end = timeline.makespan or 1.0
        item.setYRange(0.0, float(n), padding=0.0)
        item.setXRange(0.0, end * 1.01, padding=0.0)
        self.view.setLimits(xMin=-0.02 * end, xMax=end * 1.05, minXRange=end / 500)
        self._draw_labels()

    def _draw_memory(self) -> None:
        assert self.timeline is not None
        item = self.plot.getPlotItem()
        for curve in self.memory_items:
            item.removeItem(curve)
        self.memory_items = []
        lines_x, lines_y, dots_x, dots_y = [], [], [], []
        span = MEM_ROW[1] - MEM_ROW[0]
        end = self.timeline.makespan
        for st, peak in zip(self.timeline.stages, self.peaks, strict=True):
            base = self._y(st.stage, MEM_ROW[1])
            scale = max(st.peak_activations, 1.0)  # each stage to its own peak: the shape is what matters here
            xs, ys = [0.0], [0.0]  # a step curve: the activations change when an operation ends
            for op in st.ops:
                xs += [op.end, op.end]
                ys += [ys[-1], op.activations]
            xs.append(max(end, xs[-1]))
            ys.append(ys[-1])
            y = base + np.array(ys) / scale * span
            curve = pg.PlotDataItem(np.array(xs), y, pen=pg.mkPen(MEMORY_LINE, width=1.1), fillLevel=base,
                                    brush=pg.mkBrush(120, 120, 120, 60))
            curve.setZValue(5)
            item.addItem(curve)
            self.memory_items.append(curve)
            lines_x += [peak.time, peak.time]
            lines_y += [self._y(st.stage, OPS_ROW[0]), base]
            dots_x.append(peak.time)
            dots_y.append(base + peak.activations / scale * span)
        self.peak_lines.setData(np.array(lines_x), np.array(lines_y))
        self.peak_dots.setData(dots_x, dots_y)

    def _set_ticks(self) -> None:
        assert self.timeline is not None
        ticks = [(self.band_top(st.stage) - 0.5, translate("Schedule", "stage {0}").format(st.stage))
                 for st in self.timeline.stages]
        axis = self.plot.getPlotItem().getAxis("left")
        axis.setTicks([ticks, []])
        # a fixed width that holds the longest label (the axis would widen only after its first paint)
        metrics = QFontMetrics(axis.style.get("tickFont") or self.font())
        axis.setWidth(max(metrics.horizontalAdvance(text) for _y, text in ticks) + 14 if ticks else 40)

    def _set_title(self) -> None:
        assert self.timeline is not None
        n = len(self.timeline.stages)
        m = max((op.microbatch for st in self.timeline.stages for op in st.ops), default=-1) + 1
        shown = self.result.throughput if self.result is not None else None  # the step's honest precision
        flush = shown.seconds(self.timeline.makespan) if shown is not None else f"{self.timeline.makespan:,.3g}"
        self.title.setText(translate("Schedule", "{0} schedule: {1} stages, {2} micro-batches, one flush {3} s")
                           .format(self.timeline.schedule, n, m, flush))

    def _draw_labels(self) -> None:
        """Micro-batch numbers on blocks wide enough to hold them (redrawn when zooming)."""
        item = self.plot.getPlotItem()
        for label in self.labels:
            item.removeItem(label)
        self.labels = []
        if not self.blocks:
            return
        (x_lo, x_hi), _ = self.view.viewRange()
        px_per_s = max(self.view.width(), 1.0) / max(x_hi - x_lo, 1e-12)
        font = QFont(self.font())
        font.setPointSizeF(max(6.5, self.font().pointSizeF() * 0.72))
        shown = [b for b in self.blocks if b.kind in ("F", "B") and b.end > x_lo and b.start < x_hi
                 and (b.end - b.start) * px_per_s >= MIN_LABEL_PX]
        if len(shown) > MAX_LABELS:
            return
        for b in shown:
            label = pg.TextItem(str(b.microbatch), color="#ffffff" if b.kind == "B" else "#1a1a1a",
                                anchor=(0.5, 0.5))
            label.setFont(font)
            label.setPos((b.start + b.end) / 2, self._y(b.stage, (OPS_ROW[0] + OPS_ROW[1]) / 2))
            label.setZValue(12)
            item.addItem(label)
            self.labels.append(label)

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)  # type: ignore[arg-type]
        self._label_timer.start()

    # ----------------------------------------------------------------------------------------- hover
    def block_at(self, x: float, y: float) -> Block | None:
        if self.timeline is None:
            return None
        n = len(self.timeline.stages)
        stage = int(np.floor(n - y))
        frac = (n - stage) - y
        if not 0 <= stage < n or not OPS_ROW[0] <= frac <= OPS_ROW[1]:
            return None
        return next((b for b in self.blocks if b.stage == stage and b.start <= x <= b.end), None)

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        if self.timeline is None:
            return
        p = self.view.mapSceneToView(scene_pos)
        block = self.block_at(p.x(), p.y())
        if block is None:
            QToolTip.hideText()
            return
        QToolTip.showText(QCursor.pos(), self.block_html(block), self.plot)

    def block_html(self, b: Block) -> str:
        assert self.timeline is not None
        kinds = {"F": translate("Schedule", "forward"), "R": translate("Schedule", "recompute"),
                 "B": translate("Schedule", "backward"), "W": translate("Schedule", "weight gradients")}
        op = self.timeline.stages[b.stage].ops[b.op]
        head = translate("Schedule", "Stage {0}: {1} of micro-batch {2}, chunk {3}").format(b.stage, kinds[b.kind],
                                                                                    b.microbatch, b.chunk)
        # at the step's honest precision (estimator.honest); the block's length to as many significant digits
        digits = self.result.throughput.step.digits if self.result is not None and self.result.throughput else 3
        lines = [f"<b>{head}</b>",
                 translate("Schedule", "{0} – {1} s ({2} ms)").format(sig(b.start, digits), sig(b.end, digits),
                                                                      sig((b.end - b.start) * 1e3, digits)),
                 translate("Schedule", "after it: {0} micro-batch(es) in flight {1}, memory {2} GiB").format(
                     sum(op.inflight), list(op.inflight), f"{op.memory / GiB:,.2f}")]
        peak = self.peaks[b.stage]
        if peak.op == b.op:
            lines.append(f"<span style='color:{PEAK_MARK}'><b>" + translate("Schedule", "the stage's peak instant") +
                         "</b></span>")
        return "<br>".join(lines)

    # --------------------------------------------------------------------------------------- queries
    def data(self) -> dict[str, object]:
        return {"stages": len(self.peaks), "blocks": len(self.blocks),
                "kinds": sorted({b.kind for b in self.blocks}),
                "max_inflight": [p.max_inflight for p in self.peaks],
                "peak_time": [p.time for p in self.peaks], "peak_memory": [p.memory for p in self.peaks],
                "peak_op": [p.op for p in self.peaks],
                "marker_x": list(np.asarray(self.peak_dots.getData()[0], dtype=float)),
                "labels": len(self.labels)}

    def csv_rows(self) -> list[list[object]]:
        rows: list[list[object]] = [["stage", "kind", "microbatch", "chunk", "start (s)", "end (s)",
                                     "in flight after", "memory after (GiB)"]]
        if self.timeline is None:
            return rows
        for b in self.blocks:
            op = self.timeline.stages[b.stage].ops[b.op]
            rows.append([b.stage, b.kind, b.microbatch, b.chunk, round(b.start, 6), round(b.end, 6),
                         sum(op.inflight), round(op.memory / GiB, 4)])
        return rows
