"""Hardware ▸ Calibrate from log… (and a log dropped on the window): fit the device-level memory terms and the
matmul efficiency that the logs of a run of the plan in the forms determine (``estimator.calibrate``, on a
worker), show what was fitted and from which lines, what the logs cannot determine, and every stage before →
after against the measurement; Save writes the profile atomically beside the user's device presets and reads
the plan again so that it applies (with provenance in the notes and the device figures).

A log of another plan (other degrees, other model) is refused with the reason, and nothing is written.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from estimator.calibrate import Calibration, calibrate, looks_like_log, read_logs, save
from estimator.calibrate.profile import check_name
from estimator.errors import SappError
from estimator.parsed import ParsedConfig
from estimator.units import GiB

from .language import said, translate
from .style import ERROR, FITS, QT_TRANSLATE_NOOP
from .tasks import TaskOutcome, TaskRunner

if TYPE_CHECKING:
    from .main_window import MainWindow

TERM_NAMES = {
    "allocator_slack_factor": QT_TRANSLATE_NOOP("Calibrate", "allocator slack × (measured / modelled)"),
    "allocator_slack_fraction": QT_TRANSLATE_NOOP("Calibrate", "allocator slack, fraction of the tensor peak"),
    "comm_library_factor": QT_TRANSLATE_NOOP("Calibrate", "HCCL buffers × (measured / documented)"),
    "runtime_context": QT_TRANSLATE_NOOP("Calibrate", "runtime context"),
    "eff_matmul": QT_TRANSLATE_NOOP("Calibrate", "matmul efficiency"),
}


def fit_logs(parsed: ParsedConfig, paths: list[str], name: str | None) -> Calibration:
    """The worker's job: read the logs, refuse another plan's, fit (nothing is written)."""
    return calibrate(parsed, read_logs(paths), name or None)


def _gib(value: float | None) -> str:
    return "–" if value is None else f"{value / GiB:,.2f}"


def _against(model: float, measured: float | None) -> str:
    text = _gib(model)
    return text if not measured else f"{text} ({model / measured - 1:+.1%})"


class CalibrateDialog(QDialog):
    def __init__(self, window: MainWindow, logs: list[str] | None = None) -> None:
        super().__init__(window)
        self.setObjectName("calibrateDialog")
        self.window_ = window
        self.parsed: ParsedConfig = window.doc.parsed
        self.folder = window.presets_dir.parent / "calibrations"
        self.calibration: Calibration | None = None
        self.saved: Path | None = None
        self.runner = TaskRunner(self, "calibrate")
        self.runner.finished.connect(self._on_fitted)

        p = self.parsed
        self.intro = QLabel()
        self.intro.setWordWrap(True)
        self.logs = QListWidget()
        self.logs.setObjectName("calibrateLogs")
        self.logs.setMaximumHeight(80)
        self.logs.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.add_button = QPushButton()
        self.add_button.setObjectName("calibrateAdd")
        self.add_button.clicked.connect(self.choose_logs)
        self.remove_button = QPushButton()
        self.remove_button.clicked.connect(self._remove_selected)
        buttons_col = QVBoxLayout()
        buttons_col.addWidget(self.add_button)
        buttons_col.addWidget(self.remove_button)
        buttons_col.addStretch(1)
        logs_row = QHBoxLayout()
        logs_row.addWidget(self.logs, 1)
        logs_row.addLayout(buttons_col)
        self.name = QLineEdit()
        self.name.setObjectName("calibrateName")
        form = QFormLayout()
        self.logs_label, self.name_label = QLabel(), QLabel()
        form.addRow(self.logs_label, self._wrap(logs_row))
        form.addRow(self.name_label, self.name)

        self.status = QLabel()
        self.status.setObjectName("calibrateStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.terms = QTableWidget(0, 3)
        self.terms.setObjectName("calibrateTerms")
        self.stages = QTableWidget(0, 6)
        self.stages.setObjectName("calibrateStages")
        for table in (self.terms, self.stages):
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.verticalHeader().setVisible(False)
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # the log lines a term came from wrap in their column; the before → after columns share the rest
        self.terms.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.terms.setWordWrap(True)
        for col in (4, 5):
            self.stages.horizontalHeader().setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        self.missing = QLabel()
        self.missing.setObjectName("calibrateMissing")
        self.missing.setWordWrap(True)
        self.step = QLabel()
        self.step.setWordWrap(True)

        self.buttons = QDialogButtonBox()
        self.save_button = self.buttons.addButton("", QDialogButtonBox.ButtonRole.AcceptRole)
        self.save_button.setObjectName("calibrateSave")
        self.save_button.setEnabled(False)
        self.close_button = self.buttons.addButton("", QDialogButtonBox.ButtonRole.RejectRole)
        self.buttons.accepted.connect(self.save_and_apply)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addLayout(form)
        layout.addWidget(self.status)
        self.terms_label, self.stages_label = QLabel(), QLabel()
        layout.addWidget(self.terms_label)
        layout.addWidget(self.terms, 2)
        layout.addWidget(self.missing)
        layout.addWidget(self.stages_label)
        layout.addWidget(self.stages, 3)
        layout.addWidget(self.step)
        layout.addWidget(self.buttons)
        self.resize(min(960, max(640, window.width() - 80)), min(720, max(480, window.height() - 80)))
        self._plan_line = f"{p.model.name} · {p.options.framework} · {p.hardware.name}"
        self.retranslate()
        if logs:
            self.add_logs(logs)

    @staticmethod
    def _wrap(layout: QHBoxLayout) -> QWidget:
        box = QWidget()
        layout.setContentsMargins(0, 0, 0, 0)
        box.setLayout(layout)
        return box

    def retranslate(self) -> None:
        self.setWindowTitle(translate("Calibrate", "Calibrate from log"))
        self.intro.setText(translate(
            "Calibrate", "Fit the device-level memory (allocator slack, runtime context, HCCL buffers) and the "
                         "matmul efficiency from the logs of a run of the plan in the forms ({0}). A log of "
                         "another plan is refused.").format(self._plan_line))
        self.logs_label.setText(translate("Calibrate", "Logs:"))
        self.name_label.setText(translate("Calibrate", "Profile name:"))
        self.add_button.setText(translate("Calibrate", "Add logs…"))
        self.remove_button.setText(translate("Calibrate", "Remove"))
        self.terms_label.setText(translate("Calibrate", "Fitted terms"))
        self.stages_label.setText(translate("Calibrate", "Every stage, before → after (GiB; error against the "
                                                         "log)"))
        self.terms.setHorizontalHeaderLabels([translate("Calibrate", "term"), translate("Calibrate", "value"),
                                              translate("Calibrate", "from")])
        self.stages.setHorizontalHeaderLabels([
            translate("Calibrate", "stage"), translate("Calibrate", "log: max allocated"),
            translate("Calibrate", "log: max reserved"), translate("Calibrate", "log: device"),
            translate("Calibrate", "allocator peak before → after"),
            translate("Calibrate", "device peak before → after")])
        self.save_button.setText(translate("Calibrate", "Save and apply"))
        self.close_button.setText(translate("Calibrate", "Close"))
        if self.calibration is not None:
            self._show(self.calibration)

    # ------------------------------------------------------------------------------------------ logs
    def paths(self) -> list[str]:
        return [self.logs.item(i).text() for i in range(self.logs.count())]

    def add_logs(self, paths: list[str]) -> None:
        known = set(self.paths())
        for path in paths:
            if path not in known:
                self.logs.addItem(path)
        self.fit()

    def choose_logs(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, translate("Calibrate", "Logs of a run of this plan"), "",
                                                translate("Calibrate", "Logs (*.log *.txt *.out *.json);;All files "
                                                                       "(*)"))
        if paths:
            self.add_logs(paths)

    def _remove_selected(self) -> None:
        for item in self.logs.selectedItems():
            self.logs.takeItem(self.logs.row(item))
        self.fit()

    # ------------------------------------------------------------------------------------------- fit
    def fit(self) -> None:
        """Fit again on the worker (a newer request supersedes a running one)."""
        self.calibration = None
        self.save_button.setEnabled(False)
        paths = self.paths()
        if not paths:
            self._clear(translate("Calibrate", "Add the logs of a run of this plan (Megatron/MindSpeed, torchtitan, "
                                               "CANN plog, MindSpore, memory_stats JSON)."))
            return
        self._clear(translate("Calibrate", "Reading {0} log(s)…").format(len(paths)))
        self.runner.submit(fit_logs, self.parsed, paths, self.name.text().strip())

    def _clear(self, message: str, error: bool = False) -> None:
        self.status.setText(message)
        self.status.setStyleSheet(f"color: {ERROR};" if error else "")
        self.terms.setRowCount(0)
        self.stages.setRowCount(0)
        self.missing.clear()
        self.step.clear()

    def _on_fitted(self, outcome: TaskOutcome) -> None:
        if outcome.error is not None:
            if isinstance(outcome.error, SappError):
                text = str(outcome.error)
            else:
                text = translate("Calibrate", "internal error: {0}").format(
                    f"{type(outcome.error).__name__}: {outcome.error}")
            self._clear(translate("Calibrate", "Not calibrated: {0}").format(text), error=True)
            return
        self.calibration = outcome.value
        self._show(outcome.value)

    def _show(self, cal: Calibration) -> None:
        p = cal.profile
        if not self.name.text().strip():
            self.name.setPlaceholderText(p.name)
        self.status.setStyleSheet(f"color: {FITS};" if p.terms else f"color: {ERROR};")
        self.status.setText(translate("Calibrate", "{0} term(s) fitted from {1} log(s) of {2} on {3}.").format(
            len(p.terms), len(p.logs), p.framework, p.device) if p.terms else
            translate("Calibrate", "The logs determine none of the terms; nothing to save."))
        self.terms.setRowCount(len(p.terms))
        for row, (key, term) in enumerate(p.terms.items()):
            value = f"{term.value / GiB:,.2f} GiB" if key == "runtime_context" else f"{term.value:.4g}"
            for col, text in enumerate((translate("Calibrate", TERM_NAMES.get(key, key)), value, said(term.source))):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.terms.setItem(row, col, item)
        self.terms.resizeRowsToContents()
        rows = sum(self.terms.rowHeight(r) for r in range(self.terms.rowCount()))
        self.terms.setMinimumHeight(min(260, self.terms.horizontalHeader().height() + rows + 6))
        self.missing.setText(translate("Calibrate", "Not determined: {0}").format(
            "; ".join(said(why) for why in p.not_determined))
                             if p.not_determined else "")
        self.stages.setRowCount(len(cal.stages))
        for row, s in enumerate(cal.stages):
            allocator = (_against(s.before.allocator_peak, s.allocator), _against(s.after.allocator_peak, s.allocator))
            device = (_against(s.before.device_peak, s.device), _against(s.after.device_peak, s.device))
            cells = (str(s.stage), _gib(s.tensor), _gib(s.allocator), _gib(s.device), " → ".join(allocator),
                     " → ".join(device))
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.stages.setItem(row, col, item)
        if cal.step_measured is not None and cal.step_before is not None and cal.step_after is not None:
            measured = cal.step_measured
            self.step.setText(translate("Calibrate", "Step time: log {0} s; estimate {1} s ({2}) → {3} s ({4})").format(
                f"{measured:.3g}", f"{cal.step_before:.3g}", f"{cal.step_before / measured - 1:+.1%}",
                f"{cal.step_after:.3g}", f"{cal.step_after / measured - 1:+.1%}"))
        else:
            self.step.clear()
        self.save_button.setEnabled(bool(p.terms))

    # ------------------------------------------------------------------------------------------ save
    def save_and_apply(self) -> None:
        """Write the profile (atomically, under the name given) and read the plan again so that it applies."""
        cal = self.calibration
        if cal is None:
            return
        try:
            name = check_name(self.name.text().strip() or cal.profile.name)
            self.saved = save(replace(cal, profile=replace(cal.profile, name=name)), self.folder)
        except (SappError, OSError) as exc:
            self._clear(translate("Calibrate", "Not saved: {0}").format(exc), error=True)
            self.save_button.setEnabled(False)
            return
        self.window_.opener.reopen(None)
        self.accept()

    def done(self, result: int) -> None:
        self.runner.shutdown(timeout_s=5.0)
        super().done(result)


def open_calibration(window: MainWindow, logs: list[str] | None = None) -> CalibrateDialog | None:
    """Hardware ▸ Calibrate from log… (``logs`` from a drop); needs the run's config open first."""
    if not window.doc.loaded:
        window.statusBar().showMessage(translate("Calibrate", "Open the config of the run first, then calibrate "
                                                              "from its logs."), 8000)
        return None
    dialog = CalibrateDialog(window, logs)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog


def dropped_logs(paths: list[str]) -> list[str]:
    """The dropped files that are logs (the rest are configs to open)."""
    return [p for p in paths if looks_like_log(p)]


__all__ = ["CalibrateDialog", "dropped_logs", "fit_logs", "open_calibration"]
