"""The Compare tab: two or more strategies side by side — the current plan, the pinned baseline, search rows,
other files — as per-stage stacked bars grouped per stage, and a table of the differences per category (at
each strategy's peak stage) and in step time, each column against the first strategy (A).

Strategies that arrive without a Result (a file, a Pareto row the search did not re-estimate) are priced on
the tab's own worker; the bars and the table wait for them.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.parsed import ParsedConfig
from estimator.result import CATEGORIES, Result
from estimator.session import MAX_COMPARED, CompareEntry, OpenRequest, PlanSession, SessionEvent
from estimator.session.events import COMPARED, OPENED
from estimator.units import GiB

from .clipboard import install_table_copy
from .grouped_chart import ChartEntry, GroupedStageChart
from .language import category_label, error_text, said, translate
from .panel import plan_text
from .style import FITS, OVER_BUDGET
from .tasks import TaskOutcome, TaskRunner
from .worker import OpenOutcome, OpenRunner

TAGS = string.ascii_uppercase


def _estimate_all(plans: list[tuple[int, ParsedConfig]]) -> dict[int, Result | SappError]:
    """Price compare entries (by their session key) on the worker; an error is the entry's message."""
    out: dict[int, Result | SappError] = {}
    for key, plan in plans:
        try:
            out[key] = estimate(plan.model, plan.strategy, plan.hardware, plan.options)
        except SappError as exc:
            out[key] = exc  # said in the app's language
    return out


# the rows of the difference table: key, how to read the number from a Result, decimals
def _at_peak(result: Result, category: str) -> float:
    return result.stages[result.peak_stage].bytes_by_category[category] / GiB


HONEST = {"step": "step", "tokens": "tokens", "mfu": "mfu"}  # row key → Throughput figure


def honest_cell(key: str, result: Result, reference: Result | None, difference: float) -> tuple[str, int]:
    """The text of a step / tokens / MFU cell and its decimal places: the figure with its band, or (against a
    reference) the difference at the reference figure's decimal places."""
    shown = (reference or result).throughput
    if shown is None:
        return "–", 0
    figure = getattr(shown, HONEST[key])
    if reference is not None:
        return figure.delta(difference / figure.scale), figure.places
    return (figure.with_band() if key == "step" else figure.text), figure.places


ROWS: list[tuple[str, Any, int | None]] = [
    ("peak", lambda r: r.peak_bytes / GiB, 2),
    ("peak_stage", lambda r: r.peak_stage, 0),
    ("stages", lambda r: len(r.stages), 0),
    *((f"cat:{c}", lambda r, c=c: _at_peak(r, c), 2) for c in CATEGORIES),
    ("headroom", lambda r: r.headroom / GiB, 2),
    # decimals None: at the precision the step band allows (estimator.honest), read from Result.throughput
    ("step", lambda r: r.step_time_s, None),
    ("tokens", lambda r: r.tokens_per_s_per_device, None),
    ("mfu", lambda r: (r.mfu or 0.0) * 100, None),
    ("devices", lambda r: r.world_size, 0),
]


class CompareView(QWidget):
    """The session's compare set (``PlanSession.compared``) drawn and tabulated; entries without a Result are
    priced here and handed back to the session."""

    compared = Signal()           # bars and table redrawn with every entry priced
    add_current_requested = Signal()
    add_pinned_requested = Signal()
    status = Signal(str)

    def __init__(self, session: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("compareView")
        self.session = session
        self.runner = TaskRunner(self, "compare")
        self.runner.finished.connect(self._on_estimated)
        self.reader = OpenRunner(self)  # other files are read off the GUI thread too
        self.reader.finished.connect(self._on_read)
        self.open_args: dict[str, Any] = {}
        self._build()
        self.retranslate()
        self.refresh()
        self._estimate_missing()  # entries added before the tab was built (a restored compare set)

    @property
    def entries(self) -> list[CompareEntry]:
        return list(self.session.compared)

    def on_session(self, event: SessionEvent) -> None:
        if event.kind == OPENED:
            self.open_args = {k: v for k, v in event.session.open_args.items() if k in ("devices", "device") and v}
        elif event.kind == COMPARED:
            if event.cause == "added":
                self._estimate_missing()
            self.refresh()

    def _build(self) -> None:
        self.add_current = QPushButton()
        self.add_current.setObjectName("compareAddCurrent")
        self.add_current.clicked.connect(self.add_current_requested)
        self.add_pinned = QPushButton()
        self.add_pinned.setObjectName("compareAddPinned")
        self.add_pinned.clicked.connect(self.add_pinned_requested)
        self.add_file = QPushButton()
        self.add_file.setObjectName("compareAddFile")
        self.add_file.clicked.connect(self.ask_files)
        self.remove = QPushButton()
        self.remove.setObjectName("compareRemove")
        self.remove.clicked.connect(self.remove_selected)
        self.clear_button = QPushButton()
        self.clear_button.setObjectName("compareClear")
        self.clear_button.clicked.connect(self.clear)
        buttons = QHBoxLayout()
        for button in (self.add_current, self.add_pinned, self.add_file, self.remove, self.clear_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.list = QListWidget()
        self.list.setObjectName("compareList")
        self.list.setMaximumHeight(self.fontMetrics().height() * 3 + 16)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setProperty("sappRole", "note")
        self.chart = GroupedStageChart("")
        self.chart.setObjectName("compareChart")
        self.table = QTableWidget(0, 0)
        install_table_copy(self.table)
        self.table.setObjectName("compareTable")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 5)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table_caption = QLabel()
        self.table_caption.setProperty("sappRole", "note")
        self.table_caption.setWordWrap(True)
        table_page = QWidget()
        table_box = QVBoxLayout(table_page)
        table_box.setContentsMargins(0, 0, 0, 0)
        table_box.setSpacing(2)
        table_box.addWidget(self.table_caption)
        table_box.addWidget(self.table, 1)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.chart)
        splitter.addWidget(table_page)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        self.splitter = splitter
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.list)
        layout.addWidget(self.message)
        layout.addWidget(splitter, 1)

    def retranslate(self) -> None:
        self.add_current.setText(translate("Compare", "Add &current"))
        self.add_current.setToolTip(translate("Compare", "The strategy in the forms, as estimated now"))
        self.add_pinned.setText(translate("Compare", "Add &pinned"))
        self.add_pinned.setToolTip(translate("Compare", "The pinned baseline (Edit ▸ Pin baseline)"))
        self.add_file.setText(translate("Compare", "Add &file…"))
        self.add_file.setToolTip(translate("Compare", "Another config, estimated as it is written"))
        self.remove.setText(translate("Compare", "&Remove"))
        self.clear_button.setText(translate("Compare", "C&lear"))
        self.chart.retranslate(translate("Compare", "Memory per stage, grouped per stage"))
        self.table_caption.setText(translate("Compare", "Each column against A. Category rows: GiB at each "
                                                        "strategy's peak "
                                                "stage; green is better, vermillion worse."))
        self.refresh()

    # ------------------------------------------------------------------------------------ entries
    def add(self, name: str, plan: ParsedConfig | None, result: Result | None = None, *,
            source: OpenRequest | None = None, base: ParsedConfig | None = None) -> bool:
        """Add a strategy (with its Result, or a plan to estimate; ``source`` and ``base``: the files it comes
        from when not the open document's); False when the view is full."""
        if len(self.session.compared) >= MAX_COMPARED:
            self.message.setText(translate("Compare", "At most {0} strategies are compared; remove one first.")
                                 .format(MAX_COMPARED))
            return False
        if plan is None and result is None:
            return False
        self.session.compare_add(name, plan, result, source=source, base=base)
        return True

    def add_files(self, paths: list[str], **open_args: Any) -> bool:
        """Read a config on a worker thread (as File ▸ Open does); it joins the set once read (``status`` says
        why when it cannot be). False when nothing was started."""
        if not paths:
            return False
        args = {k: v for k, v in {**self.open_args, **open_args}.items() if v}
        self.reader.submit(self.session.request_for(paths, **args))
        self.message.setText(translate("Compare", "Reading {0}…").format(", ".join(Path(p).name for p in paths)))
        return True

    def _on_read(self, outcome: OpenOutcome) -> None:
        names = [Path(p).name for p in outcome.request.paths]
        if outcome.opened is None:
            error = outcome.error
            text = error_text(error)
            self.message.setText(translate("Compare", "Cannot add {0}: {1}").format(", ".join(names), text))
            self.status.emit(self.message.text())
            return
        self.message.setText("")
        self.add(" + ".join(names), outcome.opened.parsed, source=outcome.request, base=outcome.opened.parsed)

    def ask_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, translate("Compare", "Add config(s) to compare"), "",
                                                translate("Compare", "Configs (*.yaml *.yml *.json *.toml *.sh);;"
                                                                     "All files (*)"))
        if paths:
            self.add_files(paths)

    def remove_selected(self) -> None:
        row = self.list.currentRow()
        entries = self.entries
        if 0 <= row < len(entries):
            self.session.compare_remove(entries[row].key)

    def clear(self) -> None:
        self.runner.discard()
        self.reader.cancel()
        self.message.setText("")
        self.session.compare_clear()

    def _estimate_missing(self) -> None:
        missing = [(e.key, e.plan) for e in self.entries if e.pending and e.plan is not None]
        if missing:
            self.runner.submit(_estimate_all, missing)

    def _on_estimated(self, outcome: TaskOutcome) -> None:
        if outcome.error is not None:
            self.message.setText(error_text(outcome.error))
            return
        for key, value in outcome.value.items():
            if isinstance(value, Result):
                self.session.compare_priced(key, result=value)
            else:
                self.session.compare_priced(key, error=said(value))

    @property
    def pending(self) -> bool:
        return any(e.pending for e in self.entries)

    # ------------------------------------------------------------------------------------ display
    def refresh(self) -> None:
        self.list.clear()
        entries = self.entries
        for k, entry in enumerate(entries):
            text = f"{TAGS[k]} — {entry.name}"
            if entry.plan is not None:  # what the entry is: degrees, sequence length, global batch, devices
                text += f" — {plan_text(entry.plan)}"
            if entry.error:
                text += "  — " + translate("Compare", "cannot be estimated: {0}").format(entry.error)
            elif entry.result is None:
                text += "  — " + translate("Compare", "estimating…")
            item = QListWidgetItem(text)
            item.setToolTip(text)
            self.list.addItem(item)
        self.remove.setEnabled(bool(self.entries))
        self.clear_button.setEnabled(bool(self.entries))
        ready = [(k, e) for k, e in enumerate(self.entries) if e.result is not None]
        if len(self.entries) < 2:
            self.message.setText(translate("Compare", "Add two or more strategies: the current one, the pinned "
                                                      "baseline, rows of a search (Add to compare) or other "
                                                      "files."))
        elif not self.pending:
            self.message.setText("")
        self.chart.set_entries([ChartEntry(TAGS[k], e.name, e.result,  # type: ignore[arg-type]
                                           detail=plan_text(e.plan) if e.plan is not None else "")
                                for k, e in ready])
        self._fill_table(ready)
        if ready and not self.pending:
            self.compared.emit()

    def row_names(self) -> dict[str, str]:
        names = {"peak": translate("Compare", "Peak GiB"), "peak_stage": translate("Compare", "Peak stage"),
                 "stages": translate("Compare", "Stages"), "headroom": translate("Compare", "Headroom GiB"),
                 "step": translate("Compare", "Step time s"), "tokens": translate("Compare", "Tokens/s per device"),
                 "mfu": translate("Compare", "MFU %"), "devices": translate("Compare", "Devices")}
        for c in CATEGORIES:
            names[f"cat:{c}"] = translate("Compare", "{0} GiB").format(category_label(c))
        return names

    def _fill_table(self, ready: list[tuple[int, CompareEntry]]) -> None:
        columns: list[tuple[str, int, int | None]] = []  # header, entry index, reference (for Δ)
        for n, (k, _e) in enumerate(ready):
            columns.append((TAGS[k], k, None))
            if n > 0:
                columns.append((f"{TAGS[k]} − {TAGS[ready[0][0]]}", k, ready[0][0]))
        self.table.clear()
        self.table.setColumnCount(len(columns))
        self.table.setRowCount(len(ROWS) if ready else 0)
        self.table.setHorizontalHeaderLabels([c[0] for c in columns])
        names = self.row_names()
        self.table.setVerticalHeaderLabels([names[key] for key, _f, _d in ROWS] if ready else [])
        self.values: dict[tuple[str, str], float] = {}
        for i, (key, read, decimals) in enumerate(ROWS if ready else []):
            for j, (header, k, ref) in enumerate(columns):
                result = self.entries[k].result
                assert result is not None
                value = float(read(result))
                if ref is not None:
                    other = self.entries[ref].result
                    assert other is not None
                    value -= float(read(other))
                self.values[(key, header)] = value
                if decimals is None:
                    text, places = honest_cell(key, result, self.entries[ref].result if ref is not None else None,
                                               value)
                else:
                    places = decimals
                    text = f"{value:+,.{decimals}f}" if ref is not None else f"{value:,.{decimals}f}"
                if ref is not None and key == "peak_stage":
                    text = ""  # the difference of two stage indices means nothing
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                lower_better = key in ("peak", "step") or key.startswith("cat:")
                higher_better = key in ("headroom", "tokens", "mfu")
                if ref is not None and abs(value) > 10 ** -(places + 1) and (lower_better or higher_better):
                    better = value < 0 if lower_better else value > 0
                    item.setForeground(QBrush(QColor(FITS if better else OVER_BUDGET)))
                self.table.setItem(i, j, item)

    def data(self) -> dict[str, Any]:
        """What the tab shows (tests): the chart data and the table's numbers by (row key, column header)."""
        return {"chart": self.chart.data(), "table": dict(getattr(self, "values", {})),
                "tags": [TAGS[k] for k, e in enumerate(self.entries) if e.result is not None]}

    def shutdown(self) -> None:
        self.runner.shutdown()
        self.reader.shutdown()
