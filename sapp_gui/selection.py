"""What is selected in the charts and what that shows: a click on a stage segment opens the stage's
per-layer bars and the segment's Explain trace; a click on a layer segment shows that layer's trace; a click on
the host-memory tile shows how the host figure is made (always of the result on screen). Traces are priced on
demand on the worker (once per drawn result) and kept while the bars stay the same."""

from __future__ import annotations

from PySide6.QtCore import QObject

from estimator.host import host_explain
from estimator.parsed import ParsedConfig
from estimator.result import Result
from estimator.session import SessionEvent
from estimator.session.events import CLOSED, ESTIMATE_FAILED, ESTIMATED, OPENED

from .chart import StageChart
from .explain_view import ExplainView, find_trace
from .language import category_label, said, translate
from .layer_chart import LayerChart, row_title
from .worker import EstimateRunner, Outcome


def hint() -> str:
    return translate("Selection", "Click a bar segment (or select one with the arrow keys in the chart) to see how "
                                  "its number is computed.")


class SelectionController(QObject):
    def __init__(self, chart: StageChart, layer_chart: LayerChart, explain: ExplainView,
                 runner: EstimateRunner) -> None:
        super().__init__(chart)
        self.chart, self.layer_chart, self.explain, self.runner = chart, layer_chart, explain, runner
        self.result: Result | None = None
        self.parsed: ParsedConfig | None = None
        self.generation = -1
        self.explained: Outcome | None = None
        self.selection: tuple[int, str, int | None] | None = None  # stage, category, layer row
        self.host_shown = False  # the Explain panel shows the host-memory figure
        chart.segment_clicked.connect(self._on_stage_segment)
        layer_chart.segment_clicked.connect(self._on_layer_segment)
        runner.explain_finished.connect(self._on_explain)

    def on_session(self, event: SessionEvent) -> None:
        """A new document starts with no selection; a new estimate keeps the selection where it still exists."""
        if event.kind in (OPENED, CLOSED):
            self.reset()
        elif event.kind == ESTIMATE_FAILED and event.session.shown is None and event.error is not None:
            self.reset(translate("Selection", "No layers to show: the plan cannot be priced (the reason is above)."))
        elif event.kind == ESTIMATED and event.session.shown is not None:
            shown = event.session.shown
            self.set_result(shown.result, shown.parsed, self.runner.generation)

    def reset(self, why: str = "") -> None:
        """No result: no selection, no layers (``why``: the chart's message)."""
        self.result, self.parsed, self.explained, self.selection = None, None, None, None
        self.host_shown = False
        self.generation = -1
        self.layer_chart.clear(why)
        self.explain.show_message(hint())

    def _chunks(self) -> int:
        return max(1, self.parsed.strategy.vpp) if self.parsed is not None else 1

    def set_result(self, result: Result, parsed: ParsedConfig, generation: int) -> None:
        """New bars: keep the selection where it still exists, else show the peak stage's layers."""
        self.result, self.parsed, self.generation, self.explained = result, parsed, generation, None
        if self.host_shown:
            self.layer_chart.set_stage(result.stages[result.peak_stage], self._chunks())
            self.show_host()
            return
        if self.selection is None or self.selection[0] >= len(result.stages):
            if self.selection is not None:
                self.selection = None
                self.chart.clear_selection()
                self.explain.show_message(hint())
            self.layer_chart.set_stage(result.stages[result.peak_stage], self._chunks())
            return
        stage, category, row = self.selection
        self.layer_chart.set_stage(result.stages[stage], self._chunks())
        self.chart.select(stage, category, emit=False)
        if row is not None and row >= len(result.stages[stage].layers):
            row = None
        self.selection = (stage, category, row)
        self._show()

    def show_host(self) -> None:
        """[H-NODE] the host-memory figure of the result on screen in Explain (a hint when nothing is offloaded)."""
        if self.result is None:
            return
        host = self.result.host
        self.selection, self.host_shown = None, True
        self.chart.clear_selection()
        if host is None or not host.used:
            self.explain.show_message(translate("Selection", "Nothing is kept in host memory: no offload or swap."))
            return
        self.explain.show_quantity(host_explain(host), translate("Selection", "Host memory per node"))

    def _on_stage_segment(self, stage: int, category: str) -> None:
        if self.result is None:
            return
        self.host_shown = False
        self.selection = (stage, category, None)
        self.layer_chart.clear_selection()
        self.layer_chart.set_stage(self.result.stages[stage], self._chunks())
        self._show()

    def _on_layer_segment(self, row: int, category: str) -> None:
        stage = self.layer_chart.stage
        if stage is None:
            return
        self.host_shown = False
        self.selection = (stage.index, category, row)
        self._show()

    def _show(self) -> None:
        if self.selection is None or self.result is None or self.parsed is None:
            return
        stage, category, row = self.selection
        explained = self.explained
        if explained is None or explained.result is None:
            self.explain.show_message(translate("Selection", "Computing the trace of stage {0}, {1}…").format(
                stage, category_label(category)))
            self.runner.request_explain(self.parsed, self.generation)
            return
        stage_result = explained.result.stages[stage]
        total = stage_result.explain
        if total is None:
            self.explain.show_message(translate("Selection", "No trace for this stage."))
            return
        node, note = find_trace(total, category, stage_result, row)
        stage_word = translate("Selection", "Stage {0}").format(stage)
        title = f"{stage_word} · {category_label(category)}"
        if row is not None:
            title = f"{stage_word} · {row_title(stage_result.layers[row])} · {category_label(category)}"
        if note:
            title += f" <span style='font-weight:normal; color:#555'>({note})</span>"
        self.explain.show_quantity(node, title)

    def retranslate(self) -> None:
        if self.host_shown:
            self.show_host()
        elif self.selection is None:
            self.explain.show_message(hint())
        else:
            self._show()

    def _on_explain(self, outcome: Outcome) -> None:
        if outcome.generation != self.generation:
            return  # the trace of bars no longer drawn
        if outcome.error is not None or outcome.result is None:
            self.explain.show_message(translate("Selection", "No trace: {0}").format(said(outcome.error)))
            return
        self.explained = outcome
        self._show()
