"""The main window: forms on the left; in the centre the summary tiles over tabs (Memory: stage chart + layer
chart; Search, Compare, Balance, Schedule — see workspace.py); Explain and the warnings/assumptions list on the
right.

The plan lives in the library's session (``estimator.session.PlanSession``): the window reads files and
prices plans on workers and hands the outcomes to the session; every view follows the session's events
(``panel.attach``), so nothing here passes results to views by hand. Edits are the session's undoable states
(the QUndoStack mirrors them, ``commands.py``); what no longer describes the forms is greyed
(``panel.StaleFrame``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, Qt, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QIcon, QUndoStack
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from estimator.errors import SappError
from estimator.result import Result
from estimator.session import EditError, PlanSession, SessionEvent
from estimator.session.events import (
    CHANGED,
    CLOSED,
    ESTIMATE_FAILED,
    ESTIMATED,
    HOLD,
    OPENED,
    PINNED,
    REJECTED,
)
from estimator.units import GiB

from . import language, report_export
from .calibrate_dialog import CalibrateDialog, dropped_logs, open_calibration
from .chart import StageChart
from .commands import UndoAdapter
from .compact import FORMS_MIN_WIDTH, NARROW_SCREEN, SIDE_MIN_WIDTH, SidePanels
from .estimate_time import EstimateTimeLabel
from .explain_view import ExplainView
from .export_dialog import ExportDialog, ExportFlow, ask_unsaved
from .file_watch import FileWatchBar
from .fixes_bar import FixesBar
from .forms import FormsPanel
from .keeper import SessionKeeper
from .language import said, translate
from .layer_chart import LayerChart
from .menus import build_menus, check_language, fill_recent_menu, retranslate_menus
from .opening import OpenFlow, bounded, dropped_paths, is_file_path
from .panel import StaleFrame, attach
from .presets import register_user_profiles, user_presets_dir
from .resources import icon_path
from .search_space import SearchSpaceEditor
from .selection import SelectionController
from .settings import Settings
from .start_page import StartPage
from .summary import NotesList, SummaryPanel
from .worker import EstimateFn, EstimateRunner, Outcome
from .workspace import WorkspaceTabs

DEFAULT_SIZE = (1400, 900)


class MainWindow(QMainWindow):
    estimate_drawn = Signal(object)   # Result now on the chart
    estimate_failed = Signal(object)  # the error of the current plan (the chart, greyed, keeps the last estimate)
    document_opened = Signal()
    open_failed = Signal(str)         # the message shown for files that could not be opened

    def __init__(self, settings: Settings | None = None, *, presets_dir: Path | None = None,
                 examples_dir: Path | None = None, estimate_fn: EstimateFn | None = None,
                 interface_language: str | None = None, session_file: Path | None = None) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.settings = settings or Settings()
        # the language is installed before any text is set (``interface_language`` overrides the setting once)
        language.apply(language.resolve(interface_language or self.settings.language()))
        self.presets_dir = presets_dir or user_presets_dir()
        self.examples_dir = examples_dir
        self.doc = PlanSession(preset_dirs=(self.presets_dir,), hold=self.settings.hold())
        self.profile_problem = register_user_profiles(self.presets_dir.parent / "profiles")
        self.runner = EstimateRunner(self, estimate_fn=estimate_fn)
        self.runner.finished.connect(self._on_estimate)
        self.opener = OpenFlow(self.doc, self.settings, self)
        self.opener.failed.connect(self._open_failed)
        self.opener.recent_changed.connect(self._refresh_recent)
        # first subscriber: a new plan is sent to the worker before the views redraw (inside the debounce)
        self.doc.subscribe(self._request_estimate)
        # what survives a restart (search space, pinned baseline, compare set): the outgoing document's state
        # is written before the views reset for a new one
        self.keeper = SessionKeeper(self.doc, self._search_space, self, path=session_file)
        self.doc.subscribe(self.keeper.flush)
        self.undo_stack = QUndoStack(self)
        self.undo_adapter = UndoAdapter(self.doc, self.undo_stack)
        self.exports = ExportFlow(self.doc, self, say=self._show_banner, reopen=self.opener.reopen,
                                  status=lambda text, ms: self.statusBar().showMessage(text, ms))
        self._docks_parked = False
        self._dock_visible: dict[QDockWidget, bool] = {}
        self._build()
        self.actions_ = build_menus(self)
        check_language(self.actions_, self.settings.language())
        attach(self.doc, self)  # last: the views have drawn when the window's signals go out
        attach(self.doc, self.keeper)  # after the search panel's reset: the kept space is shown over it
        self.keeper.restored.connect(lambda text: self.statusBar().showMessage(text, 12000))
        self.workspace_tabs.panel_created.connect(self._panel_created)
        self._refresh_recent()
        self._update_actions()
        self._restore_layout()
        icon = icon_path()
        if icon is not None:
            self.setWindowIcon(QIcon(str(icon)))

    # ------------------------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.setWindowTitle("SAPP Planner[*]")
        self.start_page = StartPage(self.examples_dir)
        self.start_page.open_requested.connect(lambda paths, args: self.open_paths(paths, **args))
        self.start_page.open_dialog_requested.connect(self.open_dialog)
        self.banner = QLabel()
        self.banner.setObjectName("banner")
        self.banner.setProperty("sappRole", "banner")
        self.banner.setWordWrap(True)
        self.banner.setVisible(False)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.file_watch = FileWatchBar(self.doc)  # a config changed on disk: offered for reload
        self.file_watch.reload_requested.connect(self.reload_from_disk)
        self.summary = SummaryPanel()
        self.summary_frame = StaleFrame(self.doc, self.summary)
        self.fixes_bar = FixesBar(self.doc)  # "does not fit": the nearest plans that fit, one click each
        self.fixes_bar.apply_requested.connect(self.edit)
        self.chart = StageChart()
        self.layer_chart = LayerChart()
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("chartSplitter")
        self.splitter.addWidget(self.chart)
        self.splitter.addWidget(self.layer_chart)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.charts_frame = StaleFrame(self.doc, self.splitter, caption=False)  # the summary's caption says why
        self.workspace_tabs = WorkspaceTabs(self.doc, self.charts_frame)
        self.workspace_tabs.apply_requested.connect(self.edit)
        self.workspace_tabs.status.connect(lambda text, ms: self.statusBar().showMessage(text, ms))
        self.workspace = QWidget()
        box = QVBoxLayout(self.workspace)
        box.setContentsMargins(6, 6, 6, 6)
        box.addWidget(self.banner)
        box.addWidget(self.file_watch)
        box.addWidget(self.summary_frame)
        box.addWidget(self.fixes_bar)
        box.addWidget(self.workspace_tabs, 1)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.start_page)
        self.stack.addWidget(self.workspace)
        self.setCentralWidget(self.stack)

        self.forms = FormsPanel(self.doc, self.presets_dir)
        self.forms.edited.connect(self.edit)
        self.forms.hardware.preset_saved.connect(self._on_preset_saved)
        self.explain = ExplainView()
        self.explain_frame = StaleFrame(self.doc, self.explain)
        self.selection = SelectionController(self.chart, self.layer_chart, self.explain, self.runner)
        self.summary.host.clicked.connect(self.selection.show_host)  # its Explain: how the host figure is made
        self.notes = NotesList()
        self.notes.extra_errors = tuple(p for p in (self.profile_problem, self.keeper.problem) if p)
        for view in (self.summary, self.chart, self.selection, self.forms, self.notes, self.fixes_bar,
                     self.file_watch):
            attach(self.doc, view)
        self.forms_dock = self._dock("formsDock", self.forms, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.explain_dock = self._dock("explainDock", self.explain_frame, Qt.DockWidgetArea.RightDockWidgetArea)
        self.notes_dock = self._dock("notesDock", self.notes, Qt.DockWidgetArea.RightDockWidgetArea)
        self.docks = (self.forms_dock, self.explain_dock, self.notes_dock)
        self.side_panels = SidePanels(self, self.docks, (self.explain_dock, self.notes_dock))
        self._dock_titles()
        self.statusBar().addPermanentWidget(self.opener.box)  # permanent: a temporary message must not hide Cancel
        self.time_label = EstimateTimeLabel()
        self.statusBar().addPermanentWidget(self.time_label)
        self._default_state = QByteArray()
        for widget in self.findChildren(QWidget):
            widget.setAcceptDrops(False)
        self.setAcceptDrops(True)

    def _dock(self, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        return dock

    def _dock_titles(self) -> None:
        self.forms_dock.setWindowTitle(translate("MainWindow", "Strategy"))
        self.explain_dock.setWindowTitle(translate("MainWindow", "Explain"))
        self.notes_dock.setWindowTitle(translate("MainWindow", "Warnings && assumptions"))
        self.opener.retranslate()

    def retranslate(self) -> None:
        """Every visible text again, in the language now installed (View ▸ Language)."""
        self._dock_titles()
        retranslate_menus(self, self.actions_)
        self.start_page.retranslate()
        self.forms.retranslate(self.forms.assumptions)
        self.summary.retranslate()
        self.fixes_bar.retranslate()
        self.file_watch.retranslate()
        self.chart.retranslate()
        self.layer_chart.retranslate()
        self.explain.retranslate()
        self.selection.retranslate()
        self.notes.retranslate()
        self.workspace_tabs.retranslate()
        for frame in (self.summary_frame, self.charts_frame, self.explain_frame):
            frame.retranslate()
        self.side_panels.retranslate()
        self._set_title()
        self.time_label.retranslate()

    def _restore_layout(self) -> None:
        self.resize(*DEFAULT_SIZE)
        self._default_docks()
        geometry, state = self.settings.geometry(), self.settings.window_state()
        if geometry is not None:
            self.restoreGeometry(geometry)
        self._layout_restored = state is not None and self.restoreState(state)
        self.side_panels.auto = not self._layout_restored
        self._show_start_page()

    def _show_start_page(self) -> None:
        """The start page uses the whole window: the docks (empty without a config) step aside."""
        if not self._docks_parked:
            self._dock_visible = {dock: not dock.isHidden() for dock in self.docks}
            for dock in self.docks:
                dock.hide()
            self._docks_parked = True
        self.stack.setCurrentWidget(self.start_page)

    def _show_workspace(self) -> None:
        self.stack.setCurrentWidget(self.workspace)
        if self._docks_parked and self.side_panels.expanded:
            for dock in self.docks:
                dock.setVisible(self._dock_visible.get(dock, True))
            self._docks_parked = False

    def _default_docks(self) -> None:
        widths = [340, 310] if self.width() >= NARROW_SCREEN else [FORMS_MIN_WIDTH, SIDE_MIN_WIDTH]
        self.resizeDocks([self.forms_dock, self.explain_dock], widths, Qt.Orientation.Horizontal)
        self.resizeDocks([self.explain_dock, self.notes_dock], [560, 300], Qt.Orientation.Vertical)

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if not self._layout_restored and not self._default_state.size():
            self._default_docks()  # dock sizes only take once the window has its size
            self._default_state = self.saveState()

    def reset_layout(self) -> None:
        for dock in self.docks:
            dock.setVisible(True)
        if self._default_state.size():
            self.restoreState(self._default_state)
        self._default_docks()

    # ------------------------------------------------------------------------------------- session
    @property
    def result(self) -> Result | None:
        """The estimate on screen (it may be of an earlier plan: ``doc.freshness()`` says)."""
        return self.doc.shown.result if self.doc.shown is not None else None

    @property
    def pinned(self) -> Result | None:
        return self.doc.pinned.result if self.doc.pinned is not None else None

    def _request_estimate(self, event: SessionEvent) -> None:
        if event.kind == OPENED:
            self.runner.request_now(self.doc.parsed)
        elif event.kind == CHANGED and event.cause != "unchanged":
            self.runner.request(self.doc.parsed)
        elif event.kind == CLOSED:
            self.runner.cancel()

    def _on_estimate(self, outcome: Outcome) -> None:
        self.doc.record_estimate(outcome.parsed, outcome.result, outcome.error, outcome.elapsed)

    def on_session(self, event: SessionEvent) -> None:
        """The window's own part: banner, title, actions, time, signals."""
        kind = event.kind
        if kind == OPENED:
            self.banner.setVisible(False)
            self.start_page.show_message("")
            self._show_workspace()
            self.time_label.clear_time()
            self.document_opened.emit()
            self.statusBar().showMessage(translate("MainWindow", "Opened {0}").format(self.doc.title), 4000)
        elif kind == CLOSED:
            self._show_start_page()
        elif kind == CHANGED:
            self.banner.setVisible(False)
        elif kind == REJECTED:
            message = bounded(translate("MainWindow", "Not applied: {0}").format(event.error))
            self._show_banner(message)
            self.statusBar().showMessage(message, 8000)
        elif kind == ESTIMATED and self.doc.shown is not None:
            self.banner.setVisible(False)
            self.time_label.show_elapsed(self.doc.shown.elapsed)
            self.estimate_drawn.emit(self.doc.shown.result)
        elif kind == ESTIMATE_FAILED and event.error is not None:
            self._estimate_failed(event.error)
        elif kind == HOLD:
            self.settings.set_hold(self.doc.hold)
        if kind in (OPENED, CLOSED, CHANGED, PINNED):
            self._set_title()
            self.setWindowModified(self.doc.is_modified())
            self._update_actions()

    def _estimate_failed(self, error: BaseException) -> None:
        message = said(error) if isinstance(error, SappError) else \
            translate("MainWindow", "internal error: {0}").format(f"{type(error).__name__}: {error}")
        kept = "" if self.doc.shown is None else \
            translate("MainWindow", "The chart still shows the last valid estimate, greyed: it is not of this plan.")
        head = translate("MainWindow", "This combination cannot be priced.")
        self._show_banner(bounded(f"{head} {message} {kept}".strip()))
        self.time_label.show_failed()
        self.estimate_failed.emit(error)

    # -------------------------------------------------------------------------------------- open
    def open_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, translate("MainWindow", "Open config(s)"), self.settings.last_dir(),
            translate("MainWindow", "Configs (*.yaml *.yml *.json *.toml *.sh);;All files (*)"))
        if paths:
            self.settings.set_last_dir(str(Path(paths[0]).parent))
            self.open_paths(paths)

    def open_paths(self, paths: list[str], **kwargs: Any) -> bool:
        """Start reading ``paths`` as one plan on a worker (the window stays live; Cancel stops waiting);
        ``document_opened`` or ``open_failed`` follows. False when the user kept the unsaved edits."""
        if self.doc.loaded and not self.confirm_discard():
            return False
        self.opener.read(self.doc.request_for(paths, **kwargs), remember=kwargs)
        return True

    def cancel_open(self) -> None:
        """Stop waiting for the files being read (the reader is abandoned; the open document stays)."""
        if self.opener.cancel():
            self.statusBar().showMessage(translate("MainWindow", "Opening cancelled"), 5000)

    def _open_failed(self, message: str, retry: tuple[list[str], dict] | None = None) -> None:
        self.statusBar().showMessage(message, 10000)
        if self.doc.loaded and retry is None:
            self._show_banner(message)
        else:
            if self.stack.currentWidget() is not self.start_page:
                self._show_start_page()
            self.start_page.show_message(message, retry)
        self.open_failed.emit(message)

    def reload_from_disk(self) -> None:
        """Read the document's files again (on a worker; the session carries over what an export would)."""
        if self.doc.loaded:
            self.opener.reopen(None)
            self.statusBar().showMessage(translate("MainWindow", "Reloading {0} from disk…").format(self.doc.title),
                                         5000)

    def close_document(self) -> None:
        if self.doc.loaded and not self.confirm_discard():
            return
        self.opener.cancel()
        self.doc.close()

    def _refresh_recent(self) -> None:
        entries = self.settings.recent()
        self.start_page.set_recent(entries)
        actions = getattr(self, "actions_", None)
        if actions is not None:
            fill_recent_menu(self, actions.recent_menu, entries)

    def open_recent(self, paths: list[str], args: dict | None = None) -> bool:
        missing = [p for p in paths if not is_file_path(p)]
        if missing:
            self.settings.remove_recent(paths)
            self._refresh_recent()
            self._open_failed(translate("MainWindow", "No longer there: {0} (removed from the recent list)").format(
                ", ".join(missing)))
            return False
        return self.open_paths(paths, **(args or {}))

    # --------------------------------------------------------------------------------- drag/drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if dropped_paths(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: Any) -> None:
        self.dragEnterEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        paths = dropped_paths(event)
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        logs = dropped_logs(paths)  # logs of a run calibrate the open plan; other files open
        if logs and len(logs) == len(paths):
            self.calibrate_from_log(logs)
        else:
            self.open_paths(paths)

    def calibrate_from_log(self, logs: list[str] | None = None) -> CalibrateDialog | None:
        """Hardware ▸ Calibrate from log… (or logs dropped on the window)."""
        return open_calibration(self, logs or None)

    # ------------------------------------------------------------------------------------- edits
    def edit(self, changes: dict[str, Any], text: str = "edit") -> bool:
        """Apply a form edit as an undoable session state; a refused one is shown on its fields."""
        if not self.doc.loaded:
            return False
        try:
            self.doc.apply(changes, text)
        except EditError:
            return False
        return True

    def _set_title(self) -> None:
        self.setWindowTitle(f"{self.doc.title} — SAPP Planner[*]" if self.doc.loaded else "SAPP Planner[*]")

    def reset_to_file(self) -> None:
        if self.doc.loaded:
            self.doc.reset_to_file(translate("MainWindow", "Reset to file"))

    def _on_preset_saved(self, preset_id: str) -> None:
        self.edit({"hardware.device": preset_id}, translate("MainWindow", "Device → {0}").format(preset_id))

    def _update_actions(self) -> None:
        acts = getattr(self, "actions_", None)
        if acts is None:
            return
        loaded = self.doc.loaded
        for action in (acts.export, acts.save_as, acts.close, acts.pin, acts.reset, acts.report,
                       acts.compare_current, acts.named["run_search"], acts.named["run_balance"]):
            action.setEnabled(loaded)
        acts.unpin.setEnabled(self.doc.pinned is not None)

    def _show_banner(self, text: str) -> None:
        self.banner.setText(text)
        self.banner.setVisible(True)

    # -------------------------------------------------------------------------------- baseline
    def pin_baseline(self) -> None:
        pinned = self.doc.pin()
        if pinned is None:
            self.statusBar().showMessage(translate("MainWindow", "Nothing to pin: the numbers on screen are not of "
                                                                 "the plan in the forms"), 5000)
            return
        self.statusBar().showMessage(translate("MainWindow", "Pinned: peak {0} GiB; later estimates are drawn beside "
                                                             "it").format(f"{pinned.result.peak_bytes / GiB:,.2f}"),
                                     5000)

    def clear_baseline(self) -> None:
        self.doc.unpin()

    # ---------------------------------------------------------------------------------- tabs
    def _search_space(self) -> SearchSpaceEditor | None:
        panel = self.workspace_tabs.built("search")
        return panel.space if panel is not None else None  # type: ignore[attr-defined]

    def _panel_created(self, name: str, panel: QWidget) -> None:
        if name == "search":
            panel.space.changed.connect(self.keeper.schedule)  # type: ignore[attr-defined]
            self.keeper.restore_search()

    def show_tab(self, name: str) -> QWidget:
        return self.workspace_tabs.show_tab(name)

    def run_search(self) -> int | None:
        return self.workspace_tabs.run_search()

    def run_balance(self) -> int | None:
        return self.workspace_tabs.run_balance()

    def compare_current(self) -> bool:
        return self.workspace_tabs.compare_current()

    def compare_pinned(self) -> bool:
        return self.workspace_tabs.compare_pinned()

    def run_tab(self, name: str, timeout_s: float = 60.0) -> str:
        return self.workspace_tabs.run_tab(name, timeout_s)

    def exportable_charts(self) -> list[tuple[str, Any]]:
        tabs = self.workspace_tabs
        return [(translate("Workspace", "Stage chart"), self.chart),
                (translate("Workspace", "Layer chart"), self.layer_chart),
                (translate("Workspace", "Pareto chart (search)"), tabs.search.pareto),
                (translate("Workspace", "Selected strategy's stages (search)"), tabs.search.stage_chart),
                (translate("Workspace", "Compare chart"), tabs.compare.chart),
                (translate("Workspace", "Balance chart"), tabs.balance.chart),
                (translate("Workspace", "Schedule timeline"), tabs.schedule.chart)]

    # -------------------------------------------------------------------------------- exports
    def export_strategy(self) -> ExportDialog | None:
        """The diff of what the export writes (non-modal); None when nothing is written (the banner or the
        status bar says why)."""
        return self.exports.start()

    def save_strategy_as(self) -> None:
        self.exports.save_as()

    @property
    def export_dialog(self) -> ExportDialog | None:
        return self.exports.dialog

    def export_report(self, path: str | Path | None = None) -> list[str]:
        """Write the report of the plan in the forms (asks where when ``path`` is None); only when the estimate
        on screen is of that plan."""
        return report_export.export_from(self, path)

    def ask_unsaved(self) -> str:
        """"export", "discard" or "cancel" (tests replace this)."""
        return ask_unsaved(self)

    def confirm_discard(self) -> bool:
        if not self.doc.loaded or not self.doc.is_modified():
            return True
        answer = self.ask_unsaved()
        if answer == "export":
            dialog = self.export_strategy()
            return dialog is not None and bool(dialog.exec())
        return answer == "discard"

    # ----------------------------------------------------------------------------------- language
    def set_language(self, setting: str) -> bool:
        """Switch the interface language now ("system", "en", "zh_CN") and remember the choice."""
        code = language.resolve(setting)
        ok = language.apply(code)
        self.settings.set_language(setting)
        self.retranslate()
        check_language(self.actions_, setting)
        if not ok:
            self.statusBar().showMessage(translate("Workspace", "No translation for {0} is installed").format(code),
                                         8000)
        elif not language.has_font_for(language.current()):
            # in English on purpose: without the font a Chinese message would show as boxes
            self.statusBar().showMessage("No font for Chinese is installed: install fonts-noto-cjk (or "
                                         "fonts-wqy-microhei)", 15000)
        return ok

    # ------------------------------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.confirm_discard():
            event.ignore()
            return
        if self._docks_parked:  # save the layout the user had, not the start page's
            for dock in self.docks:
                dock.setVisible(self._dock_visible.get(dock, True))
        self.settings.save_window(self.saveGeometry(), self.saveState())
        self.shutdown_workers()
        event.accept()

    def shutdown_workers(self) -> None:
        """Stop and join every worker (reading, estimates, export, search, balance, compare, schedule)."""
        self.opener.shutdown()
        self.runner.shutdown()
        self.exports.shutdown()
        self.workspace_tabs.shutdown()
        self.fixes_bar.shutdown()
        self.keeper.shutdown()

    # ----------------------------------------------------------------------------- keyboard
    def focus_forms(self) -> None:
        self.forms_dock.show()
        self.forms.currentWidget().setFocus()
        self.forms.setFocus()

    def focus_chart(self) -> None:
        self.chart.plot.setFocus()

    def focus_layer_chart(self) -> None:
        self.layer_chart.plot.setFocus()

    def focus_explain(self) -> None:
        self.explain_dock.show()
        self.explain.tree.setFocus()

    def about(self) -> None:
        from .menus import show_about

        show_about(self)

