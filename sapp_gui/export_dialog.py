"""Export strategy: shows the unified diff of every file the writer changes, then writes them all or none
(``estimator.export.write_atomic``, keeping ``FILE.bak``), or saves them under other names (Save As)."""

from __future__ import annotations

import difflib
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from estimator.errors import SappError
from estimator.export import write_atomic


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
        self.setWindowTitle("Export strategy")
        self.setObjectName("exportDialog")
        self.resize(860, 560)
        self.files = dict(files)
        self.saved_as: dict[str, str] = {}
        self.originals = dict(originals)
        self.diffs = {path: unified_diff(originals.get(path, ""), text, path) for path, text in files.items()}
        count = sum(changed_line_count(d) for d in self.diffs.values())
        names = ", ".join(Path(p).name for p in files)
        self.summary = QLabel(f"The edited strategy changes {count} line(s) in {len(files)} file(s): {names}. "
                              "Writing keeps a copy of each file as FILE.bak.")
        self.summary.setWordWrap(True)
        self.warning = QLabel("")
        self.warning.setWordWrap(True)
        self.warning.setProperty("sappRole", "banner")
        changed_on_disk = [p for p in files if self._disk_text(p) not in (None, originals.get(p))]
        if changed_on_disk:
            self.warning.setText("Changed on disk since it was opened (writing replaces those changes): "
                                 + ", ".join(changed_on_disk))
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
        self.write_button = QPushButton(f"&Write {len(files)} file(s)")
        self.write_button.setObjectName("write")
        self.write_button.setDefault(True)
        self.save_as_button = QPushButton("Save &As…")
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
            parts.append(f"=== {path}\n{diff or '(no change)'}")
        return "\n".join(parts)

    def write(self) -> bool:
        """Write every file in place (all or none); emits ``written``."""
        try:
            write_atomic(self.files, backup=True)
        except (SappError, OSError) as exc:
            self.status.setText(f"Nothing was written: {exc}")
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
            self.status.setText(f"Nothing was written: {exc}")
            return False
        self.saved_as = out
        self.written.emit(list(out))
        self.accept()
        return True

    def choose_save_as(self) -> None:
        if len(self.files) == 1:
            source = next(iter(self.files))
            suggestion = str(Path(source).with_name(Path(source).stem + ".edited" + Path(source).suffix))
            target, _ = QFileDialog.getSaveFileName(self, "Save edited config as", suggestion)
        else:
            target = QFileDialog.getExistingDirectory(self, "Save edited configs into folder")
        if target:
            self.save_as(target)
