"""Export strategy: shows the unified diff of every file the writer changes, then writes them all or none
(``estimator.export.write_atomic``, keeping ``FILE.bak``), or saves them under other names (Save As); and the
main window's side of it (``ExportMixin``: starting an export, continuing after it, the unsaved-edits prompt)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
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
from estimator.session import ExportRefused, prepare_export

from .language import translate

if TYPE_CHECKING:
    from .main_window import MainWindow


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
            return Path(path).read_text(encoding="utf-8")
        except OSError:
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
        target_path = Path(target)
        if len(self.files) == 1:
            out = {str(target_path): next(iter(self.files.values()))}
        else:
            out = {str(target_path / Path(p).name): text for p, text in self.files.items()}
        try:
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


class ExportMixin:
    """MainWindow: File ▸ Export strategy / Save strategy As, and the prompt about unsaved edits."""

    def export_strategy(self: MainWindow) -> QWidget | None:  # type: ignore[misc]
        """Compute the writer's new texts and show them as a diff (non-modal); None when nothing to do."""
        if not self.doc.loaded or self.doc.original is None:
            return None
        try:
            files = prepare_export(self.doc.original, self.doc.parsed.strategy,
                                   edited=self.doc.export_edited()).files
        except ExportRefused as exc:
            text = translate("Export", "Not exported: the strategy breaks the estimator's rules. {0}").format(exc.cause)
            if exc.edited:
                text += " " + translate("Export", "(Checked against the files' own {0}: edits of those are not written "
                                                  "by an export.)").format(", ".join(exc.edited))
            self._show_banner(text)
            return None
        except SappError as exc:
            self._show_banner(translate("Export", "Export is not available for this config: {0}").format(exc))
            return None
        except Exception as exc:
            self._show_banner(translate("Export", "Export failed: internal error in the writer ({0})").format(
                f"{type(exc).__name__}: {exc}"))
            return None
        if not files:
            self.statusBar().showMessage(translate("Export", "Nothing to export: the strategy is the one in the file"),
                                         6000)
            return None
        originals = {s.path: s.text for s in self.doc.original.sources}
        dialog = ExportDialog(files, originals, self)
        dialog.written.connect(self._after_export)
        self.export_dialog = dialog
        dialog.open()
        return dialog

    def save_strategy_as(self: MainWindow) -> None:  # type: ignore[misc]
        dialog = self.export_strategy()
        if dialog is not None:
            dialog.choose_save_as()  # type: ignore[attr-defined]

    def _after_export(self: MainWindow, written: list[str]) -> None:  # type: ignore[misc]
        dialog = self.export_dialog
        saved_as = getattr(dialog, "saved_as", {}) if dialog is not None else {}
        self.statusBar().showMessage(translate("Export", "Wrote {0}").format(", ".join(written)), 8000)
        if saved_as:  # continue on the new file(s), the unchanged sources (config.json) stay
            changed = set(getattr(dialog, "files", {}))
            paths = [p for p in self.doc.paths if p not in changed] + list(saved_as)
            carried = self.doc.carried_edits()
            self.doc.state = self.doc.original_state()  # the edits are in the new files: no prompt
            if self.open_paths(paths, **self.doc.open_args) and carried:
                self.edit(carried, translate("Export", "carried edits"))
                self.undo_stack.clear()
            return
        self.doc.reread()
        self.undo_stack.clear()
        self._refresh_document()
        self.runner.request(self.doc.parsed)

    def ask_unsaved(self: MainWindow) -> str:  # type: ignore[misc]
        """"export", "discard" or "cancel" (tests replace this)."""
        box = QMessageBox(QMessageBox.Icon.Question, translate("Export", "Unsaved edits"),
                          translate("Export", "The strategy has edits that are not written to the config."),
                          parent=self)
        export_button = box.addButton(translate("Export", "Export…"), QMessageBox.ButtonRole.AcceptRole)
        discard = box.addButton(translate("Export", "Discard"), QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        clicked = box.clickedButton()
        return "export" if clicked is export_button else "discard" if clicked is discard else "cancel"

    def confirm_discard(self: MainWindow) -> bool:  # type: ignore[misc]
        if not self.doc.loaded or not self.doc.is_modified():
            return True
        answer = self.ask_unsaved()
        if answer == "export":
            dialog = self.export_strategy()
            return dialog is not None and bool(dialog.exec())  # type: ignore[attr-defined]
        return answer == "discard"
