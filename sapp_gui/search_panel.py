"""The Search tab: edit the search space, run ``estimator.search`` on a worker (progress bar, Cancel), and
explore the result — the ranked table (sortable, filterable), the refusals by rule with an example each, the
Pareto scatter (a click selects the strategy) and the selected strategy's per-stage bars. "Apply" turns the
selected strategy into one undoable form edit; "Compare" sends it to the Compare tab.

The panel never prices anything on the GUI thread: the search runs in a child process (``search_runner``,
so Cancel and a new run stop it at once and it never competes with the window for the GIL), and a Pareto row
that the search did not re-estimate (only the top K are) is estimated on ``row_runner`` when selected.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.parsed import ParsedConfig
from estimator.result import Result
from estimator.search import SearchResult
from estimator.session import PlanSession, SessionEvent
from estimator.session.events import CHANGED, CLOSED, OPENED
from estimator.units import GiB

from . import jobs
from .chart import StageChart
from .language import error_text, translate
from .pareto_chart import ParetoChart
from .search_export import ask_search_path, write_search
from .search_model import SearchRow, build_rows
from .search_space import SearchSpaceEditor
from .search_table import SearchResultsTabs
from .style import QT_TRANSLATE_NOOP
from .tasks import ProcessRunner, TaskOutcome, TaskRunner

PHASES = {"enumerate": QT_TRANSLATE_NOOP("SearchPanel", "enumerating candidates"),
          "filter": QT_TRANSLATE_NOOP("SearchPanel", "checking the rules"),
          "price": QT_TRANSLATE_NOOP("SearchPanel", "pricing survivors"),
          "rank": QT_TRANSLATE_NOOP("SearchPanel", "ranking")}


def _estimate_strategy(parsed: ParsedConfig, strategy: Any) -> Result:
    return estimate(parsed.model, strategy, parsed.hardware, parsed.options)


COMPACT_HEIGHT = 520  # below this panel height a finished search folds the space editor away


def current_sentence(result: SearchResult) -> str:
    """Where the plan as opened stands against a search (its row is marked * in the table)."""
    current = result.current
    if current is None:
        return translate("SearchPanel", "The plan as opened cannot be estimated, so it is not among the rows.")
    peak = max(current.row.peak_bytes, current.row.optimizer_step_peak) / GiB
    host = current.row.result.host if current.row.result is not None else None
    if not current.fits and host is not None and host.fits is False and peak * GiB <= result.budget:  # R-HOST
        return translate("SearchPanel", "The plan as opened (*) does not fit the node's host RAM: {0} GiB per "
                                        "node of {1} GiB.").format(f"{host.per_node / GiB:,.1f}",
                                                                   f"{(host.ram_per_node or 0) / GiB:,.0f}")
    if not current.fits:
        return translate("SearchPanel", "The plan as opened (*) does not fit: peak {0} GiB.").format(f"{peak:,.2f}")
    return translate("SearchPanel", "The plan as opened (*) ranks {0} of {1}: step {2}, peak {3} GiB.").format(
        f"{current.rank:,}", f"{result.fitting:,}", current.row.throughput.step.with_band(" s"), f"{peak:,.2f}")


class SearchPanel(QWidget):
    apply_requested = Signal(dict, str)     # form changes, undo text
    compare_requested = Signal(str, object, object)  # name, plan (ParsedConfig with the strategy), Result | None
    results_shown = Signal(object)          # SearchResult now in the table
    row_shown = Signal(object)              # Result drawn for the selected row
    status = Signal(str)

    def __init__(self, doc: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("searchPanel")
        self.doc = doc
        self.search_fn = jobs.search_job  # runs in the worker process (must be a module-level function)
        self.search_runner = ProcessRunner(self, "search")  # a process: it never starves the GUI thread
        self.row_runner = TaskRunner(self, "search-row")
        self.search_runner.finished.connect(self._on_search_done)
        self.search_runner.progress.connect(self._on_progress)
        self.row_runner.finished.connect(self._on_row_estimated)
        self.result: SearchResult | None = None
        self.searched: ParsedConfig | None = None     # the plan the result was searched on
        self.interrupted: SearchResult | None = None  # a newer search cancelled while this result stays shown
        self.rows: list[SearchRow] = []
        self.current_row = -1
        self.started_at = 0.0
        self.first_results_s: float | None = None
        self._sized = False
        self._build()
        self.retranslate()
        self._set_running(False)

    # ------------------------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.space = SearchSpaceEditor(self.doc)
        self.space_box = QGroupBox()
        QVBoxLayout(self.space_box).addWidget(self.space)
        self.run_button = QPushButton()
        self.run_button.setObjectName("runSearch")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton()
        self.cancel_button.setObjectName("cancelSearch")
        self.cancel_button.clicked.connect(self.cancel)
        self.progress = QProgressBar()
        self.progress.setObjectName("searchProgress")
        self.progress.setTextVisible(True)
        self.phase = QLabel("")
        self.phase.setProperty("sappRole", "note")
        # starting a search must not re-lay the tab out: a relayout resizes every chart (Python code on the GUI
        # thread) while the worker holds the GIL, which stalls the window; so the running widgets keep their
        # space when hidden and the status lines have a fixed height
        policy = self.progress.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.progress.setSizePolicy(policy)
        # the phase takes the room the row has (its text never re-lays the row out) and wraps onto a second line
        # on a narrow window, where the row would otherwise be wider than the tab (issue 12)
        self.progress.setMinimumWidth(self.fontMetrics().horizontalAdvance("m") * 5)
        self.phase.setWordWrap(True)
        self.phase.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.phase.setMinimumWidth(self.fontMetrics().horizontalAdvance("m") * 6)
        self.phase.setFixedHeight(self.fontMetrics().lineSpacing() * 2)
        self.space_toggle = QToolButton()
        self.space_toggle.setObjectName("toggleSearchSpace")
        self.space_toggle.setCheckable(True)
        self.space_toggle.setAutoRaise(True)
        self.space_toggle.toggled.connect(self._toggle_space)
        run_row = QHBoxLayout()
        run_row.addWidget(self.run_button)
        run_row.addWidget(self.cancel_button)
        run_row.addWidget(self.progress, 3)
        run_row.addWidget(self.phase, 2)
        run_row.addWidget(self.space_toggle)
        self.summary = QLabel("")
        self.summary.setObjectName("searchSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setFixedHeight(self.fontMetrics().lineSpacing() * 2 + 4)
        self.summary.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)

        self.results = SearchResultsTabs()
        self.results.current_changed.connect(self._show_row)
        self.results.export_requested.connect(self.ask_export)
        # the parts tests and the window use directly
        self.model, self.proxy, self.table = self.results.model, self.results.proxy, self.results.table
        self.filter, self.pareto_only, self.refused = self.results.filter, self.results.pareto_only, \
            self.results.refused
        self.result_tabs = self.results

        self.pareto = ParetoChart()
        self.pareto.point_clicked.connect(self.select_row)
        self.stage_chart = StageChart()
        self.stage_chart.setObjectName("searchStageChart")
        self.stage_chart.legend.setVisible(False)
        for plot in (self.pareto.plot, self.stage_chart.plot):
            plot.setMinimumHeight(90)
        self.table.setMinimumHeight(70)
        self.apply_button = QPushButton()
        self.apply_button.setObjectName("applySearchRow")
        self.apply_button.clicked.connect(self.apply_selected)
        self.compare_button = QPushButton()
        self.compare_button.setObjectName("compareSearchRow")
        self.compare_button.clicked.connect(self.compare_selected)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.compare_button)
        buttons.addWidget(self.apply_button)
        right = QWidget()
        right_box = QVBoxLayout(right)
        right_box.setContentsMargins(0, 0, 0, 0)
        right_box.addWidget(self.stage_chart, 1)
        right_box.addLayout(buttons)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.pareto)
        bottom.addWidget(right)
        bottom.setStretchFactor(0, 1)
        bottom.setStretchFactor(1, 1)
        top = QWidget()
        top_box = QVBoxLayout(top)
        top_box.setContentsMargins(0, 0, 0, 0)
        top_box.addWidget(self.space_box)
        top_box.addLayout(run_row)
        top_box.addWidget(self.summary)
        # three panes the user can resize: the space, the table, the charts
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("searchSplitter")
        self.splitter.setChildrenCollapsible(False)
        for k, pane in enumerate((top, self.result_tabs, bottom)):
            self.splitter.addWidget(pane)
            self.splitter.setStretchFactor(k, 0 if k == 0 else 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter, 1)

    def retranslate(self) -> None:
        self.space_box.setTitle(translate("SearchPanel", "Search space (device count and global batch fixed)"))
        self.space.retranslate()
        self.run_button.setText(translate("SearchPanel", "&Run search"))
        self.cancel_button.setText(translate("SearchPanel", "Cancel"))
        self.results.retranslate()
        self.apply_button.setText(translate("SearchPanel", "&Apply to forms"))
        self.apply_button.setToolTip(translate("SearchPanel", "Put the selected strategy into the forms (one "
                                                              "undoable edit)"))
        self.compare_button.setText(translate("SearchPanel", "Add to co&mpare"))
        self._toggle_space(self.space_toggle.isChecked())
        self.model.retranslate()
        self.pareto.retranslate()
        self.stage_chart.retranslate()
        self._show_summary()
        self._show_selected_title()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._sized:  # the table and the charts share what the space editor leaves
            self._sized = True
            top = self.splitter.widget(0).sizeHint().height()
            rest = max(self.splitter.height() - top, 200)
            self.splitter.setSizes([top, int(rest * 0.48), rest - int(rest * 0.48)])

    def _toggle_space(self, hidden: bool) -> None:
        self.space_box.setVisible(not hidden)
        self.space_toggle.setText(translate("SearchPanel", "Show search space ▾") if hidden
                                  else translate("SearchPanel", "Hide search space ▴"))
        if self._sized:  # the pane above the results follows what it now shows; the table and charts get the rest
            sizes = self.splitter.sizes()
            top = self.splitter.widget(0).sizeHint().height()
            rest = max(sum(sizes) - top, 0)
            self.splitter.setSizes([top, int(rest * 0.48), rest - int(rest * 0.48)])

    # ------------------------------------------------------------------------------------- running
    def on_session(self, event: SessionEvent) -> None:
        """A new document resets the space and forgets the result; an edit updates the space's plan values."""
        if event.kind == OPENED:
            self.on_plan_changed(event.session.parsed, reset=True)
        elif event.kind == CHANGED:
            self.on_plan_changed(event.session.parsed)
        elif event.kind == CLOSED:
            self.search_runner.discard()

    def on_plan_changed(self, parsed: ParsedConfig, reset: bool = False) -> None:
        self.space.load(parsed, reset=reset)
        if reset:
            self.search_runner.discard()
            self.row_runner.discard()
            self._set_running(False)
            self.result, self.searched, self.rows, self.interrupted = None, None, [], None
            self.results.set_result(None, [])
            self.pareto.clear()
            self.stage_chart.setVisible(False)
            self.summary.setText(translate("SearchPanel", "Choose what to vary, then Run search."))
            self._update_buttons()

    def run(self) -> int | None:
        """Start a search of the current plan with the space in the editor; None when the space is invalid."""
        if not self.doc.loaded:
            return None
        try:
            space, plan = self.space.space(self.doc.parsed)
        except SappError as exc:
            self.summary.setText(translate("SearchPanel", "Not started: {0}").format(exc))
            return None
        self.started_at = time.perf_counter()
        self.first_results_s = None
        self._set_running(True)
        self.progress.setRange(0, 0)
        self.phase.setText(translate("SearchPanel", PHASES["enumerate"]))
        self.summary.setText(translate("SearchPanel", "Searching {0} on {1} devices, global batch {2}…").format(
            self.space.describe(), f"{space.devices:,}", f"{space.global_batch:,}"))
        return self.search_runner.submit(self.search_fn, plan, space, controls=True, tag=plan)

    def cancel(self) -> None:
        if self.search_runner.busy:
            self.search_runner.cancel()
            self.phase.setText(translate("SearchPanel", "cancelling…"))
            self.cancel_button.setEnabled(False)

    def _set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.progress.setVisible(running)
        if not running:
            self.phase.setText("")

    def _on_progress(self, done: int, total: int, phase: str) -> None:
        name = PHASES.get(phase)
        self.phase.setText(translate("SearchPanel", name) if name else phase)
        if phase == "price" and total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(done)
            self.progress.setFormat(translate("SearchPanel", "%v of %m priced"))
        else:
            self.progress.setRange(0, 0)

    def _on_search_done(self, outcome: TaskOutcome) -> None:
        self._set_running(False)
        if outcome.error is not None:
            error = outcome.error
            text = error_text(error)
            self.summary.setText(translate("SearchPanel", "The search failed: {0}").format(text))
            self.status.emit(self.summary.text())
            return
        result: SearchResult = outcome.value
        if result.cancelled and self.result is not None and not self.result.cancelled:
            # keep the previous complete search on screen; say how far the cancelled one got
            self.interrupted = result
            self._show_summary()
            self.results_shown.emit(result)
            return
        self.interrupted = None
        self.result, self.searched = result, outcome.tag
        self.rows = build_rows(result)
        if self.height() < COMPACT_HEIGHT:  # a short window: the results take the room the space editor had
            self.space_toggle.setChecked(True)
        self.results.set_result(result, self.rows)
        self.pareto.set_rows(self.rows, result.budget)
        self._show_summary()
        self.first_results_s = time.perf_counter() - self.started_at
        if self.rows:
            self.select_row(0)
        else:
            self.current_row = -1
            self.stage_chart.setVisible(False)
            self._update_buttons()
        self.results_shown.emit(result)

    # ------------------------------------------------------------------------------------- display
    def _show_summary(self) -> None:
        """Counts of the search on screen (the same numbers as the table's tab), where the plan as opened
        stands, and whether a newer search was cancelled."""
        result = self.result
        if result is None:
            return
        text = translate("SearchPanel", "{0} candidates, {1} refused by the rules, {2} priced, {3} fit the {4} GiB "
                                        "budget "
                                "({5} s).").format(
            f"{result.candidates:,}", f"{result.candidates - result.survivors:,}", f"{result.survivors:,}",
            f"{result.fitting:,}", f"{result.budget / GiB:,.2f}", f"{result.seconds:.2f}")
        if result.cancelled:
            text = "<b style='color:#B8420A'>" + translate("SearchPanel", "Cancelled after {0} of {1} priced: "
                                                                          "partial result.").format(
                f"{result.priced:,}", f"{result.survivors:,}") + "</b> " + \
                translate("SearchPanel", "Only the candidates priced before Cancel are ranked.") + " " + text
        elif self.interrupted is not None:
            text = "<b style='color:#B8420A'>" + translate("SearchPanel", "The new search was cancelled after {0} of "
                                                                          "{1} priced;").format(
                f"{self.interrupted.priced:,}", f"{self.interrupted.survivors:,}") + "</b> " + translate(
                "SearchPanel", "the previous complete search is still shown.") + " " + text
        text += " " + current_sentence(result)
        if self.searched is not None and self.doc.loaded and self.searched.values != self.doc.parsed.values:
            text += " " + translate("SearchPanel", "(The plan changed since this search ran.)")
        self.summary.setText(text)

    # ----------------------------------------------------------------------------------- selection
    def visible_rows(self) -> list[int]:
        """Source row indices in the table's current (sorted, filtered) order."""
        return self.results.visible_rows()

    def select_row(self, source_row: int) -> None:
        """Select a strategy (from the scatter, or programmatically) by its index in ``rows``."""
        if not 0 <= source_row < len(self.rows):
            return
        self.results.select(source_row)
        if self.current_row != source_row:
            self._show_row(source_row)

    def _show_row(self, source_row: int) -> None:
        self.current_row = source_row
        self.pareto.select(source_row)
        self._update_buttons()
        row = self.rows[source_row]
        self._show_selected_title()
        if row.row.result is not None:
            self._draw_row(row.row.result)
        elif self.searched is not None:  # the bars of the row selected before are not this row's
            self.stage_chart.clear(translate("SearchPanel", "Estimating the selected strategy…"))
            self.row_runner.submit(_estimate_strategy, self.searched, row.row.strategy, tag=source_row)

    def _on_row_estimated(self, outcome: TaskOutcome) -> None:
        if outcome.tag != self.current_row or outcome.value is None:
            if outcome.error is not None and outcome.tag == self.current_row:
                self.stage_chart.clear(translate("SearchPanel", "Cannot estimate it: {0}").format(
                    error_text(outcome.error)))
            return
        row = self.rows[outcome.tag]
        row.row.result = outcome.value  # keep it: selecting the row again draws at once
        self._draw_row(outcome.value)

    def _draw_row(self, result: Result) -> None:
        self.stage_chart.setVisible(True)
        self.stage_chart.set_result(result)
        self._show_selected_title()
        self.row_shown.emit(result)

    def _show_selected_title(self) -> None:
        if not 0 <= self.current_row < len(self.rows):
            return
        row = self.rows[self.current_row]
        st = row.row.strategy
        name = self.row_name(row)
        self.stage_chart.title.setText(translate("SearchPanel", "{0}: dp {1} × tp {2} × pp {3}, step {4}").format(
            name, st.dp, st.tp, st.pp, row.row.throughput.step.with_band(" s")))

    @staticmethod
    def row_name(row: SearchRow) -> str:
        return translate("SearchPanel", "Search #{0}").format(row.rank) if row.rank is not None else \
            translate("SearchPanel", "Search Pareto point")

    def _update_buttons(self) -> None:
        self.results.export_button.setEnabled(self.result is not None)
        ok = 0 <= self.current_row < len(self.rows) and self.doc.loaded
        self.apply_button.setEnabled(ok and not self.rows[self.current_row].current)  # it is the plan already
        self.compare_button.setEnabled(ok)

    # ------------------------------------------------------------------------------------- actions
    def changes_for(self, source_row: int) -> dict[str, Any]:
        """The form edit that turns the current plan into the strategy of ``rows[source_row]``."""
        row = self.rows[source_row].row
        current = self.doc.parsed
        # degrees given together: the hold rules must not re-derive dp or the micro-batch count
        changes = self.doc.changes_to(row.strategy, pin=("dp", "micro_batches"))
        if self.searched is not None and self.searched.hardware != current.hardware:
            changes["hardware.device"] = self.searched.hardware.id or self.searched.hardware.name
        return changes

    def apply_selected(self) -> None:
        if not 0 <= self.current_row < len(self.rows) or not self.doc.loaded:
            return
        row = self.rows[self.current_row]
        self.apply_requested.emit(self.changes_for(self.current_row),
                                  translate("SearchPanel", "Apply {0}").format(self.row_name(row)))

    def compare_selected(self) -> None:
        if not 0 <= self.current_row < len(self.rows) or self.searched is None:
            return
        row = self.rows[self.current_row]
        plan = dataclasses.replace(self.searched, strategy=row.row.strategy)
        self.compare_requested.emit(self.row_name(row), plan, row.row.result)

    # -------------------------------------------------------------------------------------- export
    def export(self, path: str | Path, kind: str) -> None:
        if self.result is None:
            raise SappError("no search result to export")
        write_search(self.result, path, kind)

    def export_csv(self, path: str | Path) -> None:
        self.export(path, "csv")

    def export_json(self, path: str | Path) -> None:
        self.export(path, "json")

    def ask_export(self, kind: str) -> str | None:
        path = ask_search_path(self, kind) if self.result is not None else None
        if path:
            try:
                self.export(path, kind)
            except SappError as exc:
                QMessageBox.warning(self, translate("SearchPanel", "Export the search result"), str(exc))
                return None
            self.status.emit(translate("SearchPanel", "Wrote {0}").format(path))
        return path

    def shutdown(self) -> None:
        self.search_runner.shutdown()
        self.row_runner.shutdown()
