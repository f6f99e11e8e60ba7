"""Actions, menus and the toolbar of the main window (kept apart so main_window.py stays about behaviour)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QToolBar

from .resources import load_examples

if TYPE_CHECKING:
    from .main_window import MainWindow


@dataclass
class Actions:
    open: QAction
    export: QAction
    save_as: QAction
    close: QAction
    quit: QAction
    undo: QAction
    redo: QAction
    reset: QAction
    pin: QAction
    unpin: QAction
    recent_menu: QMenu
    chart_menu: QMenu


def _action(window: MainWindow, text: str, slot: object, shortcut: QKeySequence | str | None = None,
            tip: str = "") -> QAction:
    action = QAction(text, window)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    if tip:
        action.setStatusTip(tip)
        action.setToolTip(tip)
    action.triggered.connect(slot)  # type: ignore[arg-type]
    return action


def build_menus(window: MainWindow) -> Actions:
    bar = window.menuBar()
    file_menu = bar.addMenu("&File")
    open_action = _action(window, "&Open…", window.open_dialog, QKeySequence.StandardKey.Open,
                          "Open a config (or several files that make one plan)")
    file_menu.addAction(open_action)
    recent_menu = file_menu.addMenu("Open &Recent")
    recent_menu.setObjectName("recentMenu")
    examples_menu = file_menu.addMenu("Open E&xample")
    examples_menu.aboutToShow.connect(lambda: fill_examples_menu(window, examples_menu))
    file_menu.addSeparator()
    export_action = _action(window, "&Export strategy…", window.export_strategy, "Ctrl+E",
                            "Write the edited strategy back into the config, after showing the diff")
    save_as_action = _action(window, "Save strategy &As…", window.save_strategy_as, QKeySequence.StandardKey.SaveAs,
                             "Write the edited config under another name")
    file_menu.addAction(export_action)
    file_menu.addAction(save_as_action)
    chart_menu = file_menu.addMenu("Export &chart")
    chart_menu.addAction("Stage chart as PNG…", lambda: window.chart.ask_export("png"))
    chart_menu.addAction("Stage chart as SVG…", lambda: window.chart.ask_export("svg"))
    chart_menu.addAction("Stage numbers as CSV…", lambda: window.chart.ask_export("csv"))
    chart_menu.addAction("Layer chart as PNG…", lambda: window.layer_chart.ask_export("png"))
    chart_menu.addAction("Layer numbers as CSV…", lambda: window.layer_chart.ask_export("csv"))
    file_menu.addSeparator()
    close_action = _action(window, "&Close config", window.close_document, QKeySequence.StandardKey.Close)
    quit_action = _action(window, "&Quit", window.close, QKeySequence.StandardKey.Quit)
    file_menu.addAction(close_action)
    file_menu.addAction(quit_action)

    edit_menu = bar.addMenu("&Edit")
    undo = window.undo_stack.createUndoAction(window, "&Undo")
    undo.setShortcut(QKeySequence("Ctrl+Z"))
    redo = window.undo_stack.createRedoAction(window, "&Redo")
    redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
    edit_menu.addAction(undo)
    edit_menu.addAction(redo)
    edit_menu.addSeparator()
    reset = _action(window, "Re&set to file", window.reset_to_file, "Ctrl+Shift+R",
                    "Drop every edit (undoable)")
    edit_menu.addAction(reset)
    edit_menu.addSeparator()
    pin = _action(window, "&Pin baseline", window.pin_baseline, "Ctrl+B",
                  "Keep the current bars and draw later estimates beside them")
    unpin = _action(window, "Clear pinned baseline", window.clear_baseline, "Ctrl+Shift+B")
    edit_menu.addAction(pin)
    edit_menu.addAction(unpin)

    view_menu = bar.addMenu("&View")
    for text, key, slot in (("Focus &forms", "Ctrl+1", window.focus_forms),
                            ("Focus stage &chart", "Ctrl+2", window.focus_chart),
                            ("Focus &layer chart", "Ctrl+3", window.focus_layer_chart),
                            ("Focus &explain", "Ctrl+4", window.focus_explain)):
        view_menu.addAction(_action(window, text, slot, key))
    view_menu.addSeparator()
    for dock in window.docks:
        view_menu.addAction(dock.toggleViewAction())
    view_menu.addAction(_action(window, "Reset &layout", window.reset_layout))

    help_menu = bar.addMenu("&Help")
    help_menu.addAction(_action(window, "&About SAPP Planner", window.about))

    toolbar = QToolBar("Main", window)
    toolbar.setObjectName("mainToolbar")
    for action in (open_action, export_action, undo, redo, reset, pin):
        toolbar.addAction(action)
    window.addToolBar(toolbar)
    return Actions(open=open_action, export=export_action, save_as=save_as_action, close=close_action,
                   quit=quit_action, undo=undo, redo=redo, reset=reset, pin=pin, unpin=unpin,
                   recent_menu=recent_menu, chart_menu=chart_menu)


def fill_recent_menu(window: MainWindow, menu: QMenu, entries: list[tuple[list[str], dict]]) -> None:
    menu.clear()
    for i, (paths, args) in enumerate(entries):
        names = " + ".join(Path(p).name for p in paths)
        action = menu.addAction(f"&{i + 1} {names}" if i < 9 else names)
        action.setToolTip("\n".join(paths))
        action.triggered.connect(lambda _=False, p=paths, a=args: window.open_recent(p, a))
    menu.setEnabled(bool(entries))
    if entries:
        menu.addSeparator()
        menu.addAction("Clear list", lambda: (window.settings.clear_recent(), window._refresh_recent()))


def fill_examples_menu(window: MainWindow, menu: QMenu) -> None:
    menu.clear()
    for example in load_examples(window.examples_dir):
        menu.addAction(example.title, lambda e=example: window.open_paths([str(p) for p in e.paths],
                                                                          **e.open_args()))
