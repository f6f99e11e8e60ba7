"""Entry point: ``sapp gui [FILE...] [--screenshot OUT.png [--size WxH]]`` and ``python -m sapp_gui``.

Qt is imported only after the arguments are read, so that ``--help`` and the no-display check work
without it. With ``--screenshot`` the window is rendered offscreen once the first estimate is drawn (or the
start page, without files), saved as PNG, and the process exits: 0 when the estimate was drawn, 1 when
the files could not be read or priced (the PNG then shows the message).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

EXIT_USAGE = 2
DEFAULT_SCREENSHOT_SIZE = (1400, 900)
SCREENSHOT_TIMEOUT_S = 60.0
FORM_TABS = ("parallel", "memory", "features", "hardware", "model")  # forms.FormsPanel order

NO_DISPLAY_MESSAGE = ("sapp gui: no display found (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot "
                      "be shown. Use --screenshot OUT.png to render it offscreen to a PNG, e.g.\n"
                      "  sapp gui CONFIG --screenshot out.png --size 1400x900\n"
                      "or set QT_QPA_PLATFORM (e.g. offscreen or vnc) to choose a Qt platform yourself.")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("paths", nargs="*", metavar="FILE", help="config file(s) making one plan")
    parser.add_argument("--model", metavar="FILE", help="a config.json whose model dimensions win")
    parser.add_argument("--devices", type=int, metavar="N", help="device count, for formats that do not state it")
    parser.add_argument("--framework", metavar="NAME", help="read the files as this framework's format")
    parser.add_argument("--device", metavar="PRESET",
                        help="device preset for files that do not name their hardware (A2, A3, H100-80G, ...)")
    parser.add_argument("--screenshot", metavar="OUT.png",
                        help="render the window offscreen once the first estimate is drawn, save it, exit")
    parser.add_argument("--size", metavar="WxH", help="window size for --screenshot (default 1400x900)")
    parser.add_argument("--tab", choices=("memory", "search", "compare", "balance", "schedule"),
                        help="with --screenshot: the tab to show, its analysis run first (search: the default "
                             "space; balance: the balancer; compare: current vs pinned file; schedule: the timeline)")
    parser.add_argument("--form", choices=FORM_TABS,
                        help="with --screenshot: the form tab to show (default: parallel)")
    parser.add_argument("--language", metavar="CODE", choices=("system", "en", "zh_CN"),
                        help="interface language: en, zh_CN (Simplified Chinese) or system (default: the View ▸ "
                             "Language setting)")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sapp gui", description="SAPP Planner desktop app.")
    return add_arguments(parser)


def parse_size(text: str | None) -> tuple[int, int]:
    if not text:
        return DEFAULT_SCREENSHOT_SIZE
    try:
        w, h = (int(v) for v in text.lower().replace("×", "x").split("x"))
    except ValueError:
        raise ValueError(f"--size {text!r}: expected WIDTHxHEIGHT, e.g. 1400x900") from None
    if not (200 <= w <= 10000 and 200 <= h <= 10000):
        raise ValueError(f"--size {text!r}: width and height must be between 200 and 10000 pixels")
    return w, h


def has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM"))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Run from parsed arguments (``sapp gui`` hands its namespace over here)."""
    started = time.perf_counter()
    screenshot = getattr(args, "screenshot", None)
    try:
        size = parse_size(getattr(args, "size", None))
    except ValueError as exc:
        print(f"sapp gui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "size", None) and not screenshot:
        print("sapp gui: error: --size goes with --screenshot", file=sys.stderr)
        return EXIT_USAGE
    if not screenshot and not has_display():
        print(NO_DISPLAY_MESSAGE, file=sys.stderr)
        return EXIT_USAGE
    if screenshot and not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    open_args = {"framework": getattr(args, "framework", None), "devices": getattr(args, "devices", None),
                 "model": getattr(args, "model", None), "device": getattr(args, "device", None)}
    paths = [str(p) for p in getattr(args, "paths", [])]
    try:
        for module in ("PySide6.QtWidgets", "pyqtgraph"):
            importlib.import_module(module)
    except ImportError as exc:
        print(f"sapp gui: error: the desktop app needs PySide6 and pyqtgraph ({exc}); install the gui extra: "
              "pip install -e '.[gui]' (or scripts/bootstrap.sh)", file=sys.stderr)
        return 1
    app = make_app()
    interface_language = getattr(args, "language", None)
    if screenshot:
        return take_screenshot(app, paths, Path(screenshot), size, open_args, started, interface_language,
                               getattr(args, "tab", None), getattr(args, "form", None))
    from .main_window import MainWindow

    window = MainWindow(interface_language=interface_language)
    window.show()
    if paths:
        window.open_paths(paths, **open_args)
    return int(app.exec())


def make_app() -> object:
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QApplication

    from .resources import icon_path
    from .settings import APPLICATION, ORGANIZATION
    from .style import APP_STYLESHEET

    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setStyle("Fusion")
    app.setStyleSheet(APP_STYLESHEET)
    app.setDesktopFileName("sapp-planner")
    icon = icon_path()
    if icon is not None:
        from PySide6.QtGui import QIcon

        app.setWindowIcon(QIcon(str(icon)))
    return app


def take_screenshot(app: object, paths: list[str], out: Path, size: tuple[int, int], open_args: dict,
                    started: float, interface_language: str | None = None, tab: str | None = None,
                    form: str | None = None) -> int:
    """Show the window offscreen, wait for the first estimate (or failure), save a PNG, return the status."""
    import tempfile

    from PySide6.QtCore import QEventLoop, QTimer

    from .main_window import MainWindow
    from .settings import Settings

    with tempfile.TemporaryDirectory(prefix="sapp-gui-") as tmp:
        # a fresh layout, no recent-files noise
        window = MainWindow(Settings.at(Path(tmp) / "settings.ini"), interface_language=interface_language,
                            session_file=Path(tmp) / "session.json")  # never the user's last session
        window.resize(*size)
        window.show()
        outcome: dict[str, object] = {}
        loop = QEventLoop()
        window.estimate_drawn.connect(lambda r: (outcome.setdefault("result", r), loop.quit()))
        window.estimate_failed.connect(lambda e: (outcome.setdefault("error", e), loop.quit()))
        window.open_failed.connect(lambda m: (outcome.setdefault("open_error", m), loop.quit()))
        if paths:
            window.open_paths(paths, **open_args)
            timer = QTimer()
            timer.setSingleShot(True)
            timer.timeout.connect(loop.quit)
            timer.start(int(SCREENSHOT_TIMEOUT_S * 1000))
            loop.exec()
        first_chart = time.perf_counter() - started
        if tab and "result" in outcome:
            problem = window.run_tab(tab, SCREENSHOT_TIMEOUT_S)
            if problem:
                outcome.pop("result")
                outcome["error"] = f"{tab}: {problem}"
        if form:
            window.forms.setCurrentIndex(FORM_TABS.index(form))
        for _ in range(3):
            app.processEvents()  # type: ignore[attr-defined]
        out.parent.mkdir(parents=True, exist_ok=True)
        saved = window.grab().save(str(out), "PNG")
        window.shutdown_workers()
        window.close()
        if not saved:
            print(f"sapp gui: error: cannot write {out}", file=sys.stderr)
            return 1
        if "open_error" in outcome:
            print(f"sapp gui: {outcome['open_error']}", file=sys.stderr)
            return 1
        if paths and "result" not in outcome:
            problem = outcome.get("error") or f"no estimate within {SCREENSHOT_TIMEOUT_S:.0f} s"
            print(f"sapp gui: error: {problem}", file=sys.stderr)
            return 1
        print(f"wrote {out} ({size[0]}x{size[1]}; first chart after {first_chart:.2f} s)")
        return 0


if __name__ == "__main__":
    sys.exit(main())
