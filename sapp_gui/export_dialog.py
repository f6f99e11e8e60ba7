"""Export strategy: shows the unified diff of every file the writer changes, then writes them all or none
(``estimator.export.write_atomic``, keeping ``FILE.bak``), or saves them under other names (Save As); and the
flow around it (``ExportFlow``: the session's validated export prepared on a worker, reading the files again
afterwards) and the unsaved-edits prompt."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEventLoop, QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from estimator.errors import SappError
from estimator.export import write_atomic
from estimator.inputs import read_text
from estimator.parsed import ParsedConfig
from estimator.session import ExportPlan, ExportRefused, PlanSession, prepare_export, targets_for
from estimator.strategy import Strategy

from .language import said, translate
from .tasks import TaskOutcome, TaskRunner


def unified_diff(old: str, new: str, path: str) -> str:
    name = Path(path).name
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"{name} (file)", tofile=f"{name} (edited)", n=2)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def changed_line_count(diff: str) -> int:
    return sum(1 for line in diff.splitlines() if line.startswith(("+", "-")) and not line.startswith(("+++", "---")))


class DiffHighlighter(QSyntaxHighlighter):
    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.formats: dict[str, QTextCharFormat] = {}
        for prefix, fg, bg in (("+", "#0B5D1E", "#E6F4EA"), ("-", "#8A1C00", "#FCE8E6"), ("@", "#0050A0", None)):
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(fg))
            if bg:
                fmt.setBackground(QColor(bg))
            self.formats[prefix] = fmt

    def highlightBlock(self, text: str) -> None:
        if text.startswith(("+++", "---", "===")):
            fmt = QTextCharFormat()
            fmt.setFontWeight(QFont.Weight.Bold)
            self.setFormat(0, len(text), fmt)
        elif text[:1] in self.formats:
            self.setFormat(0, len(text), self.formats[text[:1]])


class ExportDialog(QDialog):
    written = Signal(list)  # the paths written (targets)

    def __init__(self, files: dict[str, str], originals: dict[str, str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("Export", "Export strategy"))
        self.setObjectName("exportDialog")
        self.resize(860, 560)
        self.files = dict(files)
        self.saved_as: dict[str, str] = {}
        self.originals = dict(originals)
        self.diffs = {path: unified_diff(originals.get(path, ""), text, path) for path, text in files.items()}
        count = sum(changed_line_count(d) for d in self.diffs.values())
        names = ", ".join(Path(p).name for p in files)
        self.summary = QLabel(translate("Export", "The edited strategy changes {0} line(s) in {1} file(s): {2}. "
                                                  "Writing keeps a copy of each file as FILE.bak.").format(
            count, len(files), names))
        self.summary.setWordWrap(True)
        self.warning = QLabel("")
        self.warning.setWordWrap(True)
        self.warning.setProperty("sappRole", "banner")
        changed_on_disk = [p for p in files if self._disk_text(p) not in (None, originals.get(p))]
        if changed_on_disk:
            self.warning.setText(translate("Export", "Changed on disk since it was opened (writing replaces those "
                                                     "changes): {0}").format(", ".join(changed_on_disk)))
        self.warning.setVisible(bool(changed_on_disk))
        self.view = QPlainTextEdit()
        self.view.setObjectName("diff")
        self.view.setReadOnly(True)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.view.setFont(mono)
        self.view.setPlainText(self.diff_text())
        self.highlighter = DiffHighlighter(self.view.document())
        self.status = QLabel("")
        self.status.setWordWrap(True)
        buttons = QDialogButtonBox()
        self.write_button = QPushButton(translate("Export", "&Write {0} file(s)").format(len(files)))
        self.write_button.setObjectName("write")
        self.write_button.setDefault(True)
        self.save_as_button = QPushButton(translate("Export", "Save &As…"))
        self.save_as_button.setObjectName("saveAs")
        buttons.addButton(self.write_button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(self.save_as_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.write_button.clicked.connect(self.write)
        self.save_as_button.clicked.connect(self.choose_save_as)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.warning)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.status)
        layout.addWidget(buttons)
        self.view.setFocus(Qt.FocusReason.OtherFocusReason)

    @staticmethod
    def _disk_text(path: str) -> str | None:
        try:
            return read_text(path)  # a FIFO or device in its place is not read (docs/limits.md)
        except SappError:
            return None

    def diff_text(self) -> str:
        parts = []
        for path, diff in self.diffs.items():
            parts.append(f"=== {path}\n" + (diff or translate("Export", "(no change)")))
        return "\n".join(parts)

    def write(self) -> bool:
        """Write every file in place (all or none); emits ``written``."""
        try:
            write_atomic(self.files, backup=True)
        except (SappError, OSError) as exc:
            self.status.setText(translate("Export", "Nothing was written: {0}").format(exc))
            return False
        self.written.emit(list(self.files))
        self.accept()
        return True

    def save_as(self, target: str) -> bool:
        """Write the new text(s) elsewhere: a file path (one changed file) or a directory (several)."""
        try:
            out = targets_for(self.files, target) if len(self.files) > 1 else \
                {str(target): next(iter(self.files.values()))}
            write_atomic(out, backup=True)
        except (SappError, OSError) as exc:
            self.status.setText(translate("Export", "Nothing was written: {0}").format(exc))
            return False
        self.saved_as = out
        self.written.emit(list(out))
        self.accept()
        return True

    def choose_save_as(self) -> None:
        if len(self.files) == 1:
            source = next(iter(self.files))
            suggestion = str(Path(source).with_name(Path(source).stem + ".edited" + Path(source).suffix))
            target, _ = QFileDialog.getSaveFileName(self, translate("Export", "Save edited config as"), suggestion)
        else:
            target = QFileDialog.getExistingDirectory(self, translate("Export", "Save edited configs into folder"))
        if target:
            self.save_as(target)


def _prepare(original: ParsedConfig, strategy: Strategy, edited: tuple[str, ...]) -> ExportPlan:
    return prepare_export(original, strategy, edited=edited)


class ExportFlow(QObject):
    """File ▸ Export strategy / Save strategy As: the session's validated export is prepared on a worker (the
    estimator's rules and the writers never run on the GUI thread), shown as a diff, written all or none; then
    the files are read again (``reopen``) with the edits an export does not write carried over."""

    def __init__(self, session: PlanSession, parent: QWidget, *, say: Callable[[str], None],
                 status: Callable[[str, int], None], reopen: Callable[[list[str] | None], None]) -> None:
        super().__init__(parent)
        self.session, self.parent_widget = session, parent
        self.say, self.status, self.reopen = say, status, reopen
        self.runner = TaskRunner(self, "export")
        self.dialog: ExportDialog | None = None
        self._preparing = False

    def start(self) -> ExportDialog | None:
        """Show the diff of what the export writes (non-modal); None when there is nothing to write or the
        strategy is refused (the banner says why)."""
        session = self.session
        if not session.loaded or session.original is None or self._preparing:
            return None
        outcome = self._prepare(session.original, session.parsed.strategy, session.export_edited())
        error = outcome.error
        if isinstance(error, ExportRefused):
            text = translate("Export", "Not exported: the strategy breaks the estimator's rules. {0}").format(
                error.cause)
            if error.edited:
                text += " " + translate("Export", "(Checked against the files' own {0}: edits of those are not written "
                                                  "by an export.)").format(", ".join(error.edited))
            self.say(text)
            return None
        if isinstance(error, SappError):
            self.say(translate("Export", "Export is not available for this config: {0}").format(said(error)))
            return None
        if error is not None:
            self.say(translate("Export", "Export failed: internal error in the writer ({0})").format(
                f"{type(error).__name__}: {error}"))
            return None
        plan: ExportPlan = outcome.value
        if not plan.files:
            self.status(translate("Export", "Nothing to export: the strategy is the one in the file"), 6000)
            return None
        dialog = ExportDialog(plan.files, plan.originals, self.parent_widget)
        dialog.written.connect(self._after_export)
        self.dialog = dialog
        dialog.open()
        return dialog

    def _prepare(self, original: ParsedConfig, strategy: Strategy, edited: tuple[str, ...]) -> TaskOutcome:
        """Run the export's preparation on the worker and wait for it with the event loop running."""
        loop = QEventLoop(self)
        got: list[TaskOutcome] = []

        def done(outcome: TaskOutcome) -> None:
            got.append(outcome)
            loop.quit()

        self._preparing = True
        self.runner.finished.connect(done)
        try:
            self.runner.submit(_prepare, original, strategy, edited)
            if not got:
                loop.exec()
        finally:
            self.runner.finished.disconnect(done)
            self._preparing = False
        return got[0]

    def save_as(self) -> None:
        dialog = self.start()
        if dialog is not None:
            dialog.choose_save_as()

    def _after_export(self, written: list[str]) -> None:
        dialog = self.dialog
        saved_as = dialog.saved_as if dialog is not None else {}
        self.status(translate("Export", "Wrote {0}").format(", ".join(written)), 8000)
        self.session.written(written)
        if saved_as:  # continue on the new file(s); the unchanged sources (a config.json) stay
            changed = set(dialog.files if dialog is not None else ())
            self.reopen([p for p in self.session.paths if p not in changed] + list(saved_as))
        else:
            self.reopen(None)

    def shutdown(self) -> None:
        self.runner.shutdown()


def ask_unsaved(parent: QWidget) -> str:
    """"export", "discard" or "cancel": what to do with edits not written to the config."""
    box = QMessageBox(QMessageBox.Icon.Question, translate("Export", "Unsaved edits"),
                      translate("Export", "The strategy has edits that are not written to the config."), parent=parent)
    export_button = box.addButton(translate("Export", "Export…"), QMessageBox.ButtonRole.AcceptRole)
    discard = box.addButton(translate("Export", "Discard"), QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    clicked = box.clickedButton()
    return "export" if clicked is export_button else "discard" if clicked is discard else "cancel"
