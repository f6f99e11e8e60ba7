"""The Balance tab: one button runs ``estimator.balance`` (layers per stage and per-stage recompute that
minimise the pipeline time within the budget) for the current strategy on a worker, then shows the before
(pale) and after bars per stage, the new offsets and recompute lists (also in the framework's own keys),
and applies the result to the forms as one undoable edit.

Plans the balancer cannot handle (torchtitan, vpp > 1, FSDP2, one stage) get its message, not a crash. The
balance runs in a child process, so Cancel (or closing the window) stops it at once.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from estimator.balance import BalanceResult, balance
from estimator.honest import Throughput
from estimator.parsed import ParsedConfig
from estimator.result import Result
from estimator.session import PlanSession, SessionEvent
from estimator.session.events import CHANGED, CLOSED, OPENED
from estimator.units import GiB

from .clipboard import install_table_copy
from .grouped_chart import ChartEntry, GroupedStageChart
from .language import error_text, translate
from .tasks import ProcessRunner, TaskOutcome


def stage_ms(result: Result) -> list[float]:
    """Forward + backward (+ recompute, weight gradients) per micro-batch of each stage, milliseconds."""
    if result.step is None:
        return [0.0] * len(result.stages)
    return [float(t.F + t.B + t.W + t.Rc) * 1e3 for t in result.step.stages]


def _run_balance(parsed: ParsedConfig, budget: float | None) -> BalanceResult:
    return balance(parsed, budget=budget)



def _seconds(shown: Throughput | None, value: float) -> str:
    """A time of this plan at its step's honest precision."""
    return shown.seconds(value) if shown is not None else f"{value:,.3g}"


def _layers(counts: tuple[int, ...]) -> str:
    """Layers of a stage; per chunk ("6+10") when it runs several."""
    return "+".join(map(str, counts)) if len(counts) > 1 else str(sum(counts))

class BalanceView(QWidget):
    apply_requested = Signal(dict, str)
    balanced = Signal(object)      # BalanceResult shown
    failed = Signal(str)

    def __init__(self, doc: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("balanceView")
        self.doc = doc
        self.balance_fn = _run_balance
        self.runner = ProcessRunner(self, "balance")  # a child process: Cancel stops it at once
        self.runner.finished.connect(self._on_done)
        self.result: BalanceResult | None = None
        self.balanced_plan: ParsedConfig | None = None
        self.running = False
        self._build()
        self.retranslate()
        self._update()

    def _build(self) -> None:
        self.run_button = QPushButton()
        self.run_button.setObjectName("runBalance")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton()
        self.cancel_button.setObjectName("cancelBalance")
        self.cancel_button.clicked.connect(self.cancel)
        self.budget = QDoubleSpinBox()
        self.budget.setObjectName("balanceBudget")
        self.budget.setRange(0.0, 1e6)
        self.budget.setDecimals(2)
        self.budget.setSuffix(" GiB")
        self.budget_label = QLabel()
        self.budget_label.setBuddy(self.budget)
        self.apply_button = QPushButton()
        self.apply_button.setObjectName("applyBalance")
        self.apply_button.clicked.connect(self.apply)
        top = QHBoxLayout()
        top.addWidget(self.run_button)
        top.addWidget(self.cancel_button)
        top.addSpacing(12)
        top.addWidget(self.budget_label)
        top.addWidget(self.budget)
        top.addStretch(1)
        top.addWidget(self.apply_button)
        self.message = QLabel("")
        self.message.setObjectName("balanceMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.chart = GroupedStageChart("")
        self.chart.setObjectName("balanceChart")
        self.table = QTableWidget(0, 8)
        install_table_copy(self.table)
        self.table.setObjectName("balanceTable")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.snippets = QPlainTextEdit()
        self.snippets.setObjectName("balanceSnippets")
        self.snippets.setReadOnly(True)
        self.snippets.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        mono.setPointSizeF(self.font().pointSizeF() * 0.92)
        self.snippets.setFont(mono)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 5)
        self.details = QTabWidget()
        self.details.setObjectName("balanceDetails")
        self.details.addTab(self.table, "")
        self.details.addTab(self.snippets, "")
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.chart)
        splitter.addWidget(self.details)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        self.splitter = splitter
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addWidget(splitter, 1)

    def retranslate(self) -> None:
        self.run_button.setText(translate("Balance", "&Balance pipeline"))
        self.run_button.setToolTip(translate("Balance", "Choose the layers per stage and the per-stage recompute that "
                                                "minimise the pipeline time within the budget (exact)"))
        self.cancel_button.setText(translate("Balance", "Cancel"))
        self.budget_label.setText(translate("Balance", "B&udget:"))
        self.budget.setSpecialValueText(translate("Balance", "the plan's"))
        self.budget.setToolTip(translate("Balance", "memory budget per device for the balance; the plan's budget "
                                                    "unless set"))
        self.apply_button.setText(translate("Balance", "&Apply to forms"))
        self.apply_button.setToolTip(translate("Balance", "Put the new layer split and recompute lists into the forms "
                                                  "(one undoable edit)"))
        self.table.setHorizontalHeaderLabels([
            translate("Balance", "Stage"), translate("Balance", "Layers"), translate("Balance", "Offset"),
            translate("Balance", "Recompute full / sel. / comm"), translate("Balance", "GiB before"),
            translate("Balance", "GiB after"),
            translate("Balance", "ms before"), translate("Balance", "ms after")])
        self.chart.retranslate(translate("Balance", "Memory per stage: before (pale) and after the balance"))
        self.details.setTabText(0, translate("Balance", "Per stage"))
        self.details.setTabText(1, translate("Balance", "In the config's own keys"))
        self._show()

    # ------------------------------------------------------------------------------------ running
    def run(self) -> int | None:
        if not self.doc.loaded:
            return None
        plan = self.doc.parsed
        budget = self.budget.value() * GiB if self.budget.value() > 0 else None
        self.message.setText(translate("Balance", "Balancing {0} stages… (an exact search; large plans take a "
                                                  "while)").format(plan.strategy.pp))
        self.message.setProperty("sappRole", "note")
        self._repolish()
        generation = self.runner.submit(self.balance_fn, plan, budget, tag=plan)
        self._update(running=True)
        return generation

    def cancel(self) -> None:
        self.runner.discard()
        self.message.setText(translate("Balance", "Cancelled."))
        self._update(running=False)

    def _on_done(self, outcome: TaskOutcome) -> None:
        if outcome.error is not None:
            error = outcome.error
            text = error_text(error)
            self.result, self.balanced_plan = None, None
            self.message.setText(translate("Balance", "Cannot balance this plan: {0}").format(text))
            self.message.setProperty("sappRole", "banner")
            self._repolish()
            self._show()
            self._update(running=False)
            self.failed.emit(text)
            return
        self.result, self.balanced_plan = outcome.value, outcome.tag
        self._show()
        self._update(running=False)
        self.balanced.emit(self.result)

    def _repolish(self) -> None:
        self.message.style().unpolish(self.message)
        self.message.style().polish(self.message)

    # ------------------------------------------------------------------------------------ display
    def _show(self) -> None:
        res = self.result
        if res is None:
            self.chart.clear()
            self.table.setRowCount(0)
            self.snippets.setPlainText("")
            return
        self.chart.set_entries([ChartEntry("", translate("Balance", "before"), res.before, faded=True),
                                ChartEntry("", translate("Balance", "after"), res.after)])
        before_ms, after_ms = stage_ms(res.before), stage_ms(res.after)
        rows = len(res.after.stages)
        self.table.setRowCount(rows)
        for i in range(rows):
            sb, sa = res.before.stages[i], res.after.stages[i]
            cells = [str(i), f"{_layers(sb.layers_per_chunk)} → {_layers(sa.layers_per_chunk)}", f"{res.offsets[i]:+d}",
                     f"{res.recompute['full'][i]} / {res.recompute['selective'][i]} / {res.recompute['comm'][i]}",
                     f"{sb.total / GiB:,.2f}", f"{sa.total / GiB:,.2f}", f"{before_ms[i]:,.1f}", f"{after_ms[i]:,.1f}"]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(i, j, item)
        lines = [f"{key}: {value}" for key, value in res.snippets.items()]
        lines += [f"# {note}" for note in res.notes]
        self.snippets.setPlainText("\n".join(lines))
        gain = (res.objective_before - res.objective_after) / res.objective_before * 100 if res.objective_before \
            else 0.0
        # times at the honest precision of each plan's band; the gain is a ratio of two plans on one device,
        # known better than either (estimator.honest)
        before, after = res.before.throughput, res.after.throughput
        text = translate("Balance", "Pipeline time objective {0} → {1} ({2}% faster); peak {3} → {4} GiB; "
                                    "step time {5} → "
                            "{6} s; {7}, {8} s.").format(
            _seconds(before, res.objective_before), _seconds(after, res.objective_after), f"{gain:.1f}",
            f"{res.before.peak_bytes / GiB:,.2f}", f"{res.after.peak_bytes / GiB:,.2f}",
            *(shown.step.with_band() if shown is not None else "–" for shown in (before, after)),
            translate("Balance", "exact") if res.exact else translate("Balance", "approximate for this schedule"),
            f"{res.seconds:.1f}")
        if self.applied:
            text += " " + translate("Balance", "Applied to the forms (Edit ▸ Undo takes it back).")
        elif self.stale:
            text += " " + translate("Balance", "The strategy changed since: run the balancer again to apply.")
        self.message.setText(text)
        self.message.setProperty("sappRole", "note")
        self._repolish()

    @property
    def stale(self) -> bool:
        return self.balanced_plan is not None and (not self.doc.loaded or self.doc.parsed is not self.balanced_plan)

    @property
    def applied(self) -> bool:
        """The forms hold the balanced strategy."""
        return self.result is not None and self.doc.loaded and not self.doc.changes_to(self.result.strategy)

    def _update(self, running: bool | None = None) -> None:
        if running is not None:
            self.running = running
        running = self.running
        self.run_button.setEnabled(self.doc.loaded and not running)
        self.cancel_button.setEnabled(running)
        self.apply_button.setEnabled(self.result is not None and not self.stale and not self.applied and not running)

    def on_session(self, event: SessionEvent) -> None:
        """A new (or no) document forgets the balance; an edit may make it stale."""
        if event.kind in (OPENED, CLOSED):
            self.on_plan_changed(reset=True)
        elif event.kind == CHANGED:
            self.on_plan_changed()

    def on_plan_changed(self, reset: bool = False) -> None:
        if reset:
            self.runner.discard()
            self.running = False
            self.result, self.balanced_plan = None, None
            self.message.setText(translate("Balance", "Balance the pipeline of the current strategy: layers per "
                                                      "stage and recompute per stage."))
            self._show()
        elif self.result is not None:
            self._show()
        self._update()

    # ------------------------------------------------------------------------------------ applying
    def changes(self) -> dict[str, Any]:
        assert self.result is not None and self.doc.loaded
        return self.doc.changes_to(self.result.strategy)

    def apply(self) -> None:
        if self.result is None or self.stale:
            return
        self.apply_requested.emit(self.changes(), translate("Balance", "Balance pipeline"))

    def data(self) -> dict[str, Any]:
        """Before/after numbers as shown (tests)."""
        res = self.result
        if res is None:
            return {}
        chart = self.chart.data()
        return {"chart": chart, "offsets": [self.table.item(i, 2).text() for i in range(self.table.rowCount())],
                "recompute": [self.table.item(i, 3).text() for i in range(self.table.rowCount())],
                "snippets": self.snippets.toPlainText()}

    def shutdown(self) -> None:
        self.runner.shutdown()
