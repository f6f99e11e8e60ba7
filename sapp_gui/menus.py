"""Actions, menus and the toolbar of the main window (kept apart so main_window.py stays about behaviour).

Texts are set in ``retranslate_menus`` (also called when the interface language changes), never in
``build_menus``, so that every visible text of a menu follows the language.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenu, QToolBar

from . import language
from .language import translate
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
    report: QAction
    compare_current: QAction
    menus: dict[str, QMenu] = field(default_factory=dict)
    named: dict[str, QAction] = field(default_factory=dict)
    language_actions: dict[str, QAction] = field(default_factory=dict)
    toolbar: QToolBar | None = None


def _action(window: MainWindow, name: str, slot: Callable[..., object],
            shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None) -> QAction:
    action = QAction(window)
    action.setObjectName(name)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    action.triggered.connect(slot)  # type: ignore[arg-type]
    return action


def build_menus(window: MainWindow) -> Actions:
    bar = window.menuBar()
    menus = {name: QMenu(bar) for name in ("file", "recent", "examples", "chart", "edit", "analysis", "hardware",
                                            "view", "language", "help")}
    for name, menu in menus.items():
        menu.setObjectName(f"{name}Menu")
    named: dict[str, QAction] = {}

    def act(name: str, slot: Callable[..., object], shortcut: object = None) -> QAction:
        named[name] = _action(window, name, slot, shortcut)  # type: ignore[arg-type]
        return named[name]

    file_menu = menus["file"]
    bar.addMenu(file_menu)
    file_menu.addAction(act("open", window.open_dialog, QKeySequence.StandardKey.Open))
    file_menu.addMenu(menus["recent"])
    file_menu.addMenu(menus["examples"])
    menus["examples"].aboutToShow.connect(lambda: fill_examples_menu(window, menus["examples"]))
    file_menu.addSeparator()
    file_menu.addAction(act("export", window.export_strategy, "Ctrl+E"))
    file_menu.addAction(act("save_as", window.save_strategy_as, QKeySequence.StandardKey.SaveAs))
    file_menu.addAction(act("report", window.export_report, "Ctrl+Shift+E"))
    file_menu.addMenu(menus["chart"])
    menus["chart"].aboutToShow.connect(lambda: fill_chart_menu(window, menus["chart"]))
    file_menu.addSeparator()
    file_menu.addAction(act("close", window.close_document, QKeySequence.StandardKey.Close))
    file_menu.addAction(act("quit", window.close, QKeySequence.StandardKey.Quit))

    edit_menu = menus["edit"]
    bar.addMenu(edit_menu)
    stack = window.undo_stack
    undo = _action(window, "undo", stack.undo, "Ctrl+Z")
    redo = _action(window, "redo", stack.redo)
    redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
    undo.setEnabled(stack.canUndo())
    redo.setEnabled(stack.canRedo())
    stack.canUndoChanged.connect(undo.setEnabled)
    stack.canRedoChanged.connect(redo.setEnabled)
    edit_menu.addAction(undo)
    edit_menu.addAction(redo)
    edit_menu.addSeparator()
    edit_menu.addAction(act("reset", window.reset_to_file, "Ctrl+Shift+R"))
    edit_menu.addSeparator()
    edit_menu.addAction(act("pin", window.pin_baseline, "Ctrl+B"))
    edit_menu.addAction(act("unpin", window.clear_baseline, "Ctrl+Shift+B"))

    analysis = menus["analysis"]
    bar.addMenu(analysis)
    for name, tab, key in (("show_memory", "memory", "Ctrl+5"), ("show_search", "search", "Ctrl+6"),
                           ("show_compare", "compare", "Ctrl+7"), ("show_balance", "balance", "Ctrl+8"),
                           ("show_schedule", "schedule", "Ctrl+9")):
        analysis.addAction(act(name, lambda _=False, t=tab: window.show_tab(t), key))
    analysis.addSeparator()
    analysis.addAction(act("run_search", window.run_search, "F5"))
    analysis.addAction(act("run_balance", window.run_balance))
    analysis.addAction(act("compare_current", window.compare_current, "Ctrl+Shift+C"))

    hardware = menus["hardware"]
    bar.addMenu(hardware)
    hardware.addAction(act("calibrate", lambda _=False: window.calibrate_from_log()))

    view_menu = menus["view"]
    bar.addMenu(view_menu)
    for name, key, slot in (("focus_forms", "Ctrl+1", window.focus_forms),
                            ("focus_chart", "Ctrl+2", window.focus_chart),
                            ("focus_layers", "Ctrl+3", window.focus_layer_chart),
                            ("focus_explain", "Ctrl+4", window.focus_explain)):
        view_menu.addAction(act(name, slot, key))
    view_menu.addSeparator()
    for dock in window.docks:
        view_menu.addAction(dock.toggleViewAction())
    view_menu.addAction(window.side_panels.action)
    view_menu.addAction(act("reset_layout", window.reset_layout))
    view_menu.addSeparator()
    view_menu.addMenu(menus["language"])
    group = QActionGroup(window)
    group.setExclusive(True)
    language_actions: dict[str, QAction] = {}
    for code in (language.SYSTEM, *language.LANGUAGES):
        action = QAction(window)
        action.setObjectName(f"language_{code}")
        action.setCheckable(True)
        action.triggered.connect(lambda _=False, c=code: window.set_language(c))
        group.addAction(action)
        menus["language"].addAction(action)
        language_actions[code] = action

    help_menu = menus["help"]
    bar.addMenu(help_menu)
    help_menu.addAction(act("user_guide", lambda: show_help(window, "guide"), QKeySequence.StandardKey.HelpContents))
    help_menu.addAction(act("shortcuts", lambda: show_help(window, "shortcuts"), "Ctrl+/"))
    help_menu.addSeparator()
    help_menu.addAction(act("about", window.about))

    toolbar = QToolBar(window)
    toolbar.setObjectName("mainToolbar")
    for action in (named["open"], named["export"], undo, redo, named["reset"], named["pin"]):
        toolbar.addAction(action)
    window.addToolBar(toolbar)
    actions = Actions(open=named["open"], export=named["export"], save_as=named["save_as"], close=named["close"],
                      quit=named["quit"], undo=undo, redo=redo, reset=named["reset"], pin=named["pin"],
                      unpin=named["unpin"], recent_menu=menus["recent"], chart_menu=menus["chart"],
                      report=named["report"], compare_current=named["compare_current"], menus=menus, named=named,
                      language_actions=language_actions, toolbar=toolbar)
    stack.undoTextChanged.connect(lambda text: _set_undo_text(actions.undo, text, redo=False))
    stack.redoTextChanged.connect(lambda text: _set_undo_text(actions.redo, text, redo=True))
    retranslate_menus(window, actions)
    return actions


def _set_undo_text(action: QAction, command: str, redo: bool) -> None:
    """"Undo TP → 8" / "Redo …": the command's own text after the translated verb."""
    if redo:
        text = translate("Menus", "&Redo {0}").format(command) if command else translate("Menus", "&Redo")
    else:
        text = translate("Menus", "&Undo {0}").format(command) if command else translate("Menus", "&Undo")
    with contextlib.suppress(RuntimeError):  # the stack clears itself while the window is being destroyed
        action.setText(text)


def _undo_texts(window: MainWindow, actions: Actions) -> None:
    _set_undo_text(actions.undo, window.undo_stack.undoText(), redo=False)
    _set_undo_text(actions.redo, window.undo_stack.redoText(), redo=True)


def _texts() -> dict[str, tuple[str, str]]:
    """Action name -> (text, status tip)."""
    return {
        "open": (translate("Menus", "&Open…"),
                 translate("Menus", "Open a config (or several files that make one plan)")),
        "export": (translate("Menus", "&Export strategy…"),
                   translate("Menus", "Write the edited strategy back into the config, after showing the diff")),
        "save_as": (translate("Menus", "Save strategy &As…"),
                    translate("Menus", "Write the edited config under another name")),
        "report": (translate("Menus", "Export &report…"),
                   translate("Menus", "A shareable HTML or Markdown report: summary, per-stage table, charts, "
                                      "assumptions")),
        "close": (translate("Menus", "&Close config"), ""),
        "quit": (translate("Menus", "&Quit"), ""),
        "reset": (translate("Menus", "Re&set to file"), translate("Menus", "Drop every edit (undoable)")),
        "pin": (translate("Menus", "&Pin baseline"),
                translate("Menus", "Keep the current bars and draw later estimates beside them")),
        "unpin": (translate("Menus", "Clear pinned baseline"), ""),
        "show_memory": (translate("Menus", "&Memory per stage"), ""),
        "show_search": (translate("Menus", "&Search strategies"), ""),
        "show_compare": (translate("Menus", "&Compare strategies"), ""),
        "show_balance": (translate("Menus", "&Balance pipeline"), ""),
        "show_schedule": (translate("Menus", "Sc&hedule timeline"), ""),
        "run_search": (translate("Menus", "&Run search"),
                       translate("Menus", "Search the strategy space set in the Search tab")),
        "run_balance": (translate("Menus", "Run &balancer"),
                        translate("Menus", "Choose layers and recompute per stage for the current strategy")),
        "compare_current": (translate("Menus", "&Add current strategy to compare"), ""),
        "calibrate": (translate("Menus", "&Calibrate from log…"),
                      translate("Menus", "Fit the device-level memory and the matmul efficiency from the logs of a "
                                         "run of this plan (or drop the logs on the window)")),
        "focus_forms": (translate("Menus", "Focus &forms"), ""),
        "focus_chart": (translate("Menus", "Focus stage &chart"), ""),
        "focus_layers": (translate("Menus", "Focus &layer chart"), ""),
        "focus_explain": (translate("Menus", "Focus &explain"), ""),
        "reset_layout": (translate("Menus", "Reset &layout"), ""),
        "user_guide": (translate("Menus", "&User guide"),
                       translate("Menus", "What each number means, the model's formulas and its measured fidelity")),
        "shortcuts": (translate("Menus", "&Keyboard shortcuts"), ""),
        "about": (translate("Menus", "&About SAPP Planner"), ""),
    }


def retranslate_menus(window: MainWindow, actions: Actions) -> None:
    titles = {"file": translate("Menus", "&File"), "recent": translate("Menus", "Open &Recent"),
              "examples": translate("Menus", "Open E&xample"), "chart": translate("Menus", "Export &chart"),
              "edit": translate("Menus", "&Edit"), "analysis": translate("Menus", "&Analysis"),
              "hardware": translate("Menus", "&Hardware"),
              "view": translate("Menus", "&View"),
              "language": translate("Menus", "&Language"), "help": translate("Menus", "&Help")}
    for name, menu in actions.menus.items():
        menu.setTitle(titles[name])
    for name, (text, tip) in _texts().items():
        action = actions.named[name]
        action.setText(text)
        action.setStatusTip(tip)
        action.setToolTip(tip or text.replace("&", "").rstrip("…"))
    _undo_texts(window, actions)
    names = dict(language.LANGUAGES)
    names[language.SYSTEM] = translate("Menus", "System default")
    for code, action in actions.language_actions.items():
        action.setText(names[code])
    if actions.toolbar is not None:
        actions.toolbar.setWindowTitle(translate("Menus", "Main"))
    fill_recent_menu(window, actions.recent_menu, window.settings.recent())


def check_language(actions: Actions, setting: str) -> None:
    action = actions.language_actions.get(setting) or actions.language_actions[language.SYSTEM]
    action.setChecked(True)


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
        menu.addAction(translate("Menus", "Clear list"),
                       lambda: (window.settings.clear_recent(), window._refresh_recent()))


def fill_examples_menu(window: MainWindow, menu: QMenu) -> None:
    menu.clear()
    for example in load_examples(window.examples_dir, language.current()):
        menu.addAction(example.title, lambda e=example: window.open_paths([str(p) for p in e.paths],
                                                                          **e.open_args()))


def fill_chart_menu(window: MainWindow, menu: QMenu) -> None:
    """Every chart of the window as PNG/SVG (and the numbers behind it), plus the search table."""
    menu.clear()
    for title, chart in window.exportable_charts():
        sub = menu.addMenu(title)
        sub.addAction(translate("Menus", "As PNG…"), lambda c=chart: c.ask_export("png"))
        sub.addAction(translate("Menus", "As SVG…"), lambda c=chart: c.ask_export("svg"))
        if hasattr(chart, "export_csv"):
            sub.addAction(translate("Menus", "Numbers as CSV…"), lambda c=chart: c.ask_export("csv"))
    menu.addSeparator()
    search = window.workspace_tabs.search
    csv_action = menu.addAction(translate("Menus", "Search table as CSV…"), lambda: search.ask_export("csv"))
    json_action = menu.addAction(translate("Menus", "Search result as JSON…"), lambda: search.ask_export("json"))
    for action in (csv_action, json_action):
        action.setEnabled(search.result is not None)


def show_help(window: MainWindow, tab: str) -> None:
    """The help dialog (one per window, not modal) at ``tab``: the guide or the keyboard shortcuts."""
    from .help import HelpDialog

    dialog = getattr(window, "help_dialog", None)
    if dialog is None:
        dialog = HelpDialog(window.findChildren(QAction), window)
        window.help_dialog = dialog  # type: ignore[attr-defined]
    else:
        dialog.retranslate()  # the language or the actions may have changed since
    dialog.show_tab(tab)
    dialog.show()
    dialog.raise_()


def show_about(window: MainWindow) -> None:
    from PySide6.QtWidgets import QMessageBox

    from estimator import __version__

    QMessageBox.about(window, translate("MainWindow", "About SAPP Planner"),
                      f"SAPP Planner {__version__}\n" + translate(
                          "MainWindow", "Per-stage memory, step time and strategy search for LLM training plans on "
                                        "NPU/GPU clusters."))
