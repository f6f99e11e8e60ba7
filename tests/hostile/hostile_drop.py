"""A drop onto the app's window, run as a hostile-harness case (``"kind": "call", "call":
"hostile_drop:drop_files"``) so that it runs under the harness' memory and time limits: the window is built
off-screen, the files are dropped on it (drag-enter + drop events, as a user's drop), and the event loop runs
until the estimate is drawn or the open fails. The message the window shows goes to stderr; the status is 0 when
an estimate was drawn, 1 when the open failed with a message, 3 when neither happened within ``seconds`` while the
window kept answering, and 4 when the window stopped answering (a frozen event loop)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gui"))


def drop_files(*paths: str, seconds: float = 15.0) -> int:
    from PySide6.QtWidgets import QApplication
    from test_open import drop

    from sapp_gui.main_window import MainWindow
    from sapp_gui.settings import Settings

    app = QApplication.instance() or QApplication(["sapp-hostile"])
    folder = Path(tempfile.mkdtemp(prefix="sapp-drop-"))
    window = MainWindow(Settings.at(folder / "settings.ini"), presets_dir=folder / "presets")
    window.ask_unsaved = lambda: "discard"
    window.resize(1024, 640)
    window.show()
    outcome: dict[str, object] = {}
    window.open_failed.connect(lambda message: outcome.setdefault("failed", message))
    window.estimate_drawn.connect(lambda result: outcome.setdefault("drawn", result))
    try:
        assert drop(window, [Path(p) for p in paths]) == (True, True), "the window refused the drop"
        started, last = time.monotonic(), time.monotonic()
        longest = 0.0
        while not outcome and time.monotonic() - started < seconds:
            app.processEvents()
            now = time.monotonic()
            longest, last = max(longest, now - last), now
            time.sleep(0.01)
        if longest > 2.0:  # the window did not answer for more than 2 s
            print(f"the event loop was blocked for {longest:.1f} s", file=sys.stderr)
            return 4
        if "failed" in outcome:
            print(outcome["failed"], file=sys.stderr)
            return 1
        return 0 if "drawn" in outcome else 3
    finally:
        window.shutdown_workers()
        window.close()
