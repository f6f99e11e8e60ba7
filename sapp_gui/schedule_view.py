"""The Schedule tab: the current strategy's pipeline schedule as a timeline per stage with each stage's memory
beneath it and the peak instant marked (``schedule_chart``), a table of every stage's peak (micro-batches in
flight, when, how much) and the step-time breakdown.

The timeline is simulated on the tab's worker for the plan of the estimate on screen, only while the tab is
shown (a hidden tab just remembers that it is out of date).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from estimator.estimate import estimate
from estimator.parsed import ParsedConfig
from estimator.result import Result
from estimator.session import SessionEvent
from estimator.session.events import CLOSED, ESTIMATED, OPENED
from estimator.timeline import Timeline, estimate_timeline
from estimator.units import GiB

from .language import error_text, translate
from .schedule_chart import ScheduleChart
from .style import MEMORY_LINE, OP_COLORS, PEAK_MARK
from .summary import part_name
from .tasks import TaskOutcome, TaskRunner

BAND_PX = 34  # minimum height of one stage's band; more stages scroll


def simulate(parsed: ParsedConfig) -> tuple[Timeline, Result]:
    """The timeline of one flush and the estimate it belongs to (stage totals, step parts)."""
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    timeline = estimate_timeline(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    return timeline, result


def legend_html() -> str:
    items = [(OP_COLORS["F"], "■", translate("Schedule", "forward")),
             (OP_COLORS["R"], "■", translate("Schedule", "recompute")),
             (OP_COLORS["B"], "■", translate("Schedule", "backward")),
             (OP_COLORS["W"], "■", translate("Schedule", "weight gradients")),
             (MEMORY_LINE, "▁▃▅", translate("Schedule", "activation memory, per-stage scale")),
             (PEAK_MARK, "┆●", translate("Schedule", "peak instant"))]
    return "&nbsp;&nbsp; ".join(f"<span style='color:{c}; font-size:12pt'>{mark}</span>&nbsp;{text}"
                                for c, mark, text in items) + \
        "<br><span style='color:#555'>" + translate("Schedule", "Numbers on blocks are micro-batches; darker "
                                                                "blocks are "
                                                        "later chunks. Scroll the wheel over the chart to zoom in "
                                                        "time.") + "</span>"


class ScheduleView(QWidget):
    drawn = Signal(object)   # Timeline on the chart

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scheduleView")
        self.simulate_fn = simulate
        self.runner = TaskRunner(self, "schedule")
        self.runner.finished.connect(self._on_done)
        self.parsed: ParsedConfig | None = None     # the plan to show
        self.shown: ParsedConfig | None = None      # the plan on the chart
        self.timeline: Timeline | None = None
        self.result: Result | None = None
        self.legend = QLabel(legend_html())
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setProperty("sappRole", "note")
        self.chart = ScheduleChart()
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.chart)
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.stages = QTableWidget(0, 6)
        self.stages.setObjectName("schedulePeaks")
        self.parts = QTableWidget(0, 3)
        self.parts.setObjectName("stepParts")
        for table in (self.stages, self.parts):
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.verticalHeader().setVisible(False)
            table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 5)
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
            table.horizontalHeader().setStretchLastSection(True)
        tables = QHBoxLayout()
        tables.setContentsMargins(0, 0, 0, 0)
        tables.addWidget(self.stages, 3)
        tables.addWidget(self.parts, 2)
        bottom = QWidget()
        bottom.setLayout(tables)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(self.scroll)
        self.splitter.addWidget(bottom)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.legend)
        layout.addWidget(self.message)
        layout.addWidget(self.splitter, 1)
        self.retranslate()

    def retranslate(self) -> None:
        self.legend.setText(legend_html())
        self.stages.setHorizontalHeaderLabels([
            translate("Schedule", "Stage"), translate("Schedule", "In flight"), translate("Schedule", "Peak at (s)"),
            translate("Schedule", "Peak GiB"), translate("Schedule", "Activations GiB"),
            translate("Schedule", "Stage total GiB")])
        tips = {1: translate("Schedule", "the most micro-batches in flight at once (the estimator's in-flight "
                                         "profile)"),
                3: translate("Schedule", "parameters, gradients, optimizer states and activations at the peak "
                                         "instant"),
                5: translate("Schedule", "the stage's bar in the Memory tab: adds communication buffers, working "
                                         "memory and the reserve")}
        for column, tip in tips.items():
            self.stages.horizontalHeaderItem(column).setToolTip(tip)
        self.parts.setHorizontalHeaderLabels([translate("Schedule", "Step-time part"), translate("Schedule", "Seconds"),
                                              translate("Schedule", "Share")])
        self.chart.retranslate()
        self._fill_tables()
        if self.parsed is None:
            self.message.setText(translate("Schedule", "Open a config to see its pipeline schedule."))

    # ------------------------------------------------------------------------------------ updates
    def on_session(self, event: SessionEvent) -> None:
        """The timeline of the plan whose estimate is on screen (nothing for a new document until then)."""
        if event.kind in (OPENED, CLOSED):
            self.set_plan(None)
        elif event.kind == ESTIMATED and event.session.shown is not None:
            self.set_plan(event.session.shown.parsed)

    def set_plan(self, parsed: ParsedConfig | None) -> None:
        """The plan on screen changed; simulate it now if the tab is visible, else when it is shown."""
        self.parsed = parsed
        if parsed is None:
            self.runner.discard()
            return
        if self.isVisible():
            self.refresh()

    def refresh(self) -> int | None:
        if self.parsed is None or self.parsed is self.shown:
            return None
        self.message.setText(translate("Schedule", "Simulating the schedule…"))
        return self.runner.submit(self.simulate_fn, self.parsed, tag=self.parsed)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()

    def _on_done(self, outcome: TaskOutcome) -> None:
        self.shown = outcome.tag
        if outcome.error is not None:
            error = outcome.error
            text = error_text(error)
            self.message.setText(translate("Schedule", "No timeline for this plan: {0}").format(text))
            return
        self.timeline, self.result = outcome.value
        self.chart.setMinimumHeight(BAND_PX * len(self.timeline.stages) + 90)
        self.chart.set_timeline(self.timeline, self.result)
        self.message.setText("")
        self._fill_tables()
        self.drawn.emit(self.timeline)

    def _fill_tables(self) -> None:
        result, peaks = self.result, self.chart.peaks
        if result is None or not peaks:
            self.stages.setRowCount(0)
            self.parts.setRowCount(0)
            return
        top = max(range(len(peaks)), key=lambda i: peaks[i].memory)
        shown = result.throughput  # times at the step's honest precision (estimator.honest)
        seconds = shown.seconds if shown is not None else (lambda v: f"{v:,.3g}")
        self.stages.setRowCount(len(peaks))
        for i, p in enumerate(peaks):
            total = result.stages[i].total / GiB if i < len(result.stages) else 0.0
            cells = [str(p.stage), str(p.max_inflight), seconds(p.time), f"{p.memory / GiB:,.2f}",
                     f"{p.activations / GiB:,.2f}", f"{total:,.2f}"]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if i == top:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.stages.setItem(i, j, item)
        step = result.step_time_s or 0.0
        parts = [(k, v) for k, v in sorted(result.parts.items(), key=lambda kv: -kv[1]) if v > 0]
        self.parts.setRowCount(len(parts) + 1)
        rows = [(part_name(k), seconds(v), f"{100 * v / step:.1f}%" if step else "") for k, v in parts]
        rows.append((translate("Schedule", "step time"), shown.step.with_band() if shown is not None else "", "100%"))
        for i, cells in enumerate(rows):
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if i == len(rows) - 1:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.parts.setItem(i, j, item)

    def data(self) -> dict[str, Any]:
        return self.chart.data()

    def shutdown(self) -> None:
        self.runner.shutdown()
