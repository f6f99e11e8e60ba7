"""A config changed on disk is offered for reload: the document's files are watched
(``QFileSystemWatcher``); when another program changes one, a bar over the tiles names it and offers Reload or
Ignore. Whether a file really differs is the library's answer (``PlanSession.changed_on_disk`` compares the
text on disk with the text read), so a save with the same text, or the app's own export (read back at once),
offers nothing.

Reload reads the files again through the session, as after an export: the undo history starts again, edits
an export does not write (model, device, options) are carried over and strategy edits are dropped — the bar
says so before the click when the forms hold edits.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from estimator.session import PlanSession, SessionEvent
from estimator.session.events import CHANGED, CLOSED, EXPORTED, OPENED

from .language import translate

CHECK_DELAY_MS = 300  # editors save in bursts (write, rename, chmod): look once they are done


class FileWatchBar(QWidget):
    reload_requested = Signal()

    def __init__(self, session: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("fileWatchBar")
        self.session = session
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(self._file_changed)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(CHECK_DELAY_MS)
        self._timer.timeout.connect(self.check)
        self.changed: tuple[str, ...] = ()
        self._ignored: tuple[str, ...] = ()
        self._exporting = False  # the app wrote the files: they are read back (OPENED) rather than offered
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setProperty("sappRole", "banner")
        self.reload_button = QPushButton()
        self.reload_button.setObjectName("reloadFromDisk")
        self.reload_button.clicked.connect(self.reload)
        self.ignore_button = QPushButton()
        self.ignore_button.setObjectName("ignoreDiskChange")
        self.ignore_button.clicked.connect(self.ignore)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.reload_button)
        row.addWidget(self.ignore_button)
        self.setVisible(False)
        self.retranslate()

    def retranslate(self) -> None:
        self.reload_button.setText(translate("FileWatch", "&Reload"))
        self.ignore_button.setText(translate("FileWatch", "Ignore"))
        self._show()

    def on_session(self, event: SessionEvent) -> None:
        if event.kind == EXPORTED:
            self._exporting = True
        elif event.kind == OPENED:
            self.changed, self._ignored, self._exporting = (), (), False
            self._watch(self.session.source_paths())
            self._show()
        elif event.kind == CLOSED:
            self.changed, self._ignored = (), ()
            self._watch(())
            self._show()
        elif event.kind == CHANGED and self.changed:
            self._show()  # whether the forms hold edits changes what a reload drops

    def _watch(self, paths: tuple[str, ...]) -> None:
        old = self.watcher.files()
        if old:
            self.watcher.removePaths(old)
        existing = [p for p in paths if Path(p).is_file()]
        if existing:
            self.watcher.addPaths(existing)

    def _file_changed(self, _path: str) -> None:
        self._timer.start()

    def check(self) -> None:
        """Ask the session which files differ now and offer the reload (or take the offer back)."""
        if not self.session.loaded or self._exporting:
            return
        # a save by rename replaces the file the watcher followed: watch the new one
        missing = [p for p in self.session.source_paths() if p not in self.watcher.files() and Path(p).is_file()]
        if missing:
            self.watcher.addPaths(missing)
        changed = self.session.changed_on_disk()
        self.changed = () if changed == self._ignored else changed
        if not changed:
            self._ignored = ()
        self._show()

    def _show(self) -> None:
        if not self.changed:
            self.setVisible(False)
            return
        names = ", ".join(Path(p).name for p in self.changed)
        text = translate("FileWatch", "{0} changed on disk.").format(names)
        if self.session.loaded and self.session.is_modified():
            text += " " + translate("FileWatch", "Reload drops the strategy edits in the forms and the undo "
                                                 "history.")
        else:
            text += " " + translate("FileWatch", "Reload reads it again (the undo history starts again).")
        self.label.setText(text)
        self.reload_button.setToolTip(translate("FileWatch", "Read the files again; edits an export does not write "
                                                             "(model, device, options) are carried over"))
        self.setVisible(True)

    def reload(self) -> None:
        self.changed = ()
        self.setVisible(False)
        self.reload_requested.emit()

    def ignore(self) -> None:
        """Keep the plan as read until the files change again."""
        self._ignored = self.changed
        self.changed = ()
        self.setVisible(False)
