"""File ▸ Open, a drop, a recent entry or an example: the files are read on a worker (``worker.OpenRunner``)
while the window stays live, with "Reading …" and a Cancel button in the status bar; a plan read is handed to
the session (``adopt``), a failure comes back as the message to show (with the retry the start page offers
when only the device count is missing)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from estimator.errors import SappError
from estimator.session import OpenRequest, PlanSession

from .language import said, translate
from .settings import Settings
from .worker import OpenOutcome, OpenRunner

MESSAGE_LIMIT = 2000  # characters of an error shown in the window (the rest is elided: a file may hold anything)


def dropped_paths(event: Any) -> list[str]:
    """The local files a drag carries (a drop of anything else is not for the window)."""
    mime = event.mimeData()
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile()] if mime.hasUrls() else []


def is_file_path(path: str) -> bool:
    """Whether a recent entry's path is still a file (a path no file system takes, from a hand-edited settings
    file, is not)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def bounded(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit:,} more characters)"


class OpenFlow(QObject):
    failed = Signal(str, object)   # the message, and (paths, open arguments) to retry with a device count, or None
    recent_changed = Signal()

    def __init__(self, session: PlanSession, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session, self.settings = session, settings
        self.runner = OpenRunner(self)
        self.runner.finished.connect(self._on_read)
        self.box = QWidget()
        self.box.setObjectName("opening")
        row = QHBoxLayout(self.box)
        row.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel("")
        self.cancel_button = QPushButton()
        self.cancel_button.setObjectName("cancelOpen")
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.label)
        row.addWidget(self.cancel_button)
        self.box.setVisible(False)
        self.retranslate()

    def retranslate(self) -> None:
        self.cancel_button.setText(translate("MainWindow", "Cancel"))

    def read(self, request: OpenRequest, carried: dict[str, Any] | None = None,
             remember: dict[str, Any] | None = None) -> None:
        """Read ``request`` on the worker; ``carried`` edits are applied once it is adopted; ``remember`` (the
        open arguments the user gave) puts it in the recent list when it opens."""
        names = ", ".join(Path(p).name for p in request.paths)
        self.runner.submit(request, tag=(carried or {}, remember))
        self.label.setText(translate("MainWindow", "Reading {0}…").format(names))
        self.box.setVisible(True)

    def reopen(self, paths: list[str] | None) -> None:
        """Read the document's files again after an export (or the files it saved elsewhere: ``paths``)."""
        request, carried = self.session.reopen(paths)
        self.read(request, carried, remember={} if paths is not None else None)

    def cancel(self) -> bool:
        """Stop waiting for the files being read (the reader is abandoned; the open document stays)."""
        if not self.runner.busy:
            return False
        self.runner.cancel()
        self.box.setVisible(False)
        return True

    def _on_read(self, outcome: OpenOutcome) -> None:
        self.box.setVisible(False)
        carried, remember = outcome.tag
        request = outcome.request
        if outcome.opened is None:
            self._failed(request, outcome.error, remember)
            return
        if remember is not None:
            self.settings.add_recent(list(request.paths), remember)
            self.recent_changed.emit()
        self.session.adopt(dataclasses.replace(outcome.opened, carried=carried) if carried else outcome.opened)

    def _failed(self, request: OpenRequest, error: BaseException | None, kwargs: dict[str, Any] | None) -> None:
        names = ", ".join(Path(p).name for p in request.paths)
        retry = None
        if isinstance(error, SappError):
            message = translate("MainWindow", "Cannot open {0}: {1}").format(names, said(error))
            if "--devices" in str(error):
                retry = (list(request.paths), dict(kwargs or {}))
        else:
            message = translate("MainWindow", "Cannot open {0}: internal error in the reader ({1})").format(
                names, f"{type(error).__name__}: {error}")
        if self.session.loaded and retry is None:
            message += " " + translate("MainWindow", "{0} stays open.").format(self.session.title)
        self.failed.emit(bounded(message), retry)

    def shutdown(self) -> None:
        self.runner.shutdown()
