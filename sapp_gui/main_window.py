"""The main window: forms on the left; in the centre the summary tiles over tabs (Memory: stage chart + layer
chart; Search, Compare, Balance, Schedule — see workspace.py); Explain and the warnings/assumptions list on the
right. Edits become undoable DocState swaps; every state change requests a debounced estimate on the worker;
results of older states are dropped by the runner."""

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
from estimator.units import GiB

from . import language
from .chart import StageChart
from .commands import StateCommand
from .document import DocState, Document, FieldError
from .explain_view import ExplainView
from .export_dialog import ExportMixin
from .forms import FormsPanel
from .language import translate
from .layer_chart import LayerChart
from .menus import build_menus, check_language, fill_recent_menu, retranslate_menus
from .presets import register_user_profiles, user_presets_dir
from .resources import icon_path
from .selection import SelectionController
from .settings import Settings
from .start_page import StartPage
from .summary import NotesList, SummaryPanel
from .worker import EstimateFn, EstimateRunner, Outcome
from .workspace import WorkspaceMixin, WorkspaceTabs

DEFAULT_SIZE = (1400, 900)


class MainWindow(WorkspaceMixin, ExportMixin, QMainWindow):
    estimate_drawn = Signal(object)   # Result now on the chart
    estimate_failed = Signal(object)  # the error of the current state (the chart keeps the last valid result)
    document_opened = Signal()

    def __init__(self, settings: Settings | None = None, *, presets_dir: Path | None = None,
                 examples_dir: Path | None = None, estimate_fn: EstimateFn | None = None,
                 interface_language: str | None = None) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.settings = settings or Settings()
        # the language is installed before any text is set (``interface_language`` overrides the setting once)
        language.apply(language.resolve(interface_language or self.settings.language()))
        self.presets_dir = presets_dir or user_presets_dir()
        self.examples_dir = examples_dir
        self.doc = Document(preset_dirs=(self.presets_dir,))
        self.profile_problem = register_user_profiles(self.presets_dir.parent / "profiles")
        self.doc.hold = self.settings.hold()
        self.runner = EstimateRunner(self, estimate_fn=estimate_fn)
        self.runner.finished.connect(self._on_estimate)
        self.undo_stack = QUndoStack(self)
        self.result: Result | None = None
        self.pinned: Result | None = None
        self.field_errors: dict[str, str] = {}
        self.last_touched: list[str] = []
        self.last_error: BaseException | None = None
        self.assumptions: dict[str, Any] = {}
        self.export_dialog: QWidget | None = None
        self._docks_parked = False
        self._dock_visible: dict[QDockWidget, bool] = {}
        self._build()
        self.actions_ = build_menus(self)
        check_language(self.actions_, self.settings.language())
        self._connect_workspace()
        self._refresh_recent()
        self._update_actions()
        self._restore_layout()
        self._time_text = ""
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
        self.summary = SummaryPanel()
        self.chart = StageChart()
        self.layer_chart = LayerChart()
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("chartSplitter")
        self.splitter.addWidget(self.chart)
        self.splitter.addWidget(self.layer_chart)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.workspace_tabs = WorkspaceTabs(self.doc, self.splitter)
        self.workspace = QWidget()
        box = QVBoxLayout(self.workspace)
        box.setContentsMargins(6, 6, 6, 6)
        box.addWidget(self.banner)
        box.addWidget(self.summary)
        box.addWidget(self.workspace_tabs, 1)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.start_page)
        self.stack.addWidget(self.workspace)
        self.setCentralWidget(self.stack)

        self.forms = FormsPanel(self.doc, self.presets_dir)
        self.forms.edited.connect(self.edit)
        self.forms.parallel.hold_changed.connect(self.settings.set_hold)
        self.forms.hardware.preset_saved.connect(self._on_preset_saved)
        self.explain = ExplainView()
        self.selection = SelectionController(self.chart, self.layer_chart, self.explain, self.runner)
        self.notes = NotesList()
        self.forms.setMinimumWidth(320)
        self.explain.setMinimumWidth(270)
        self.notes.setMinimumWidth(270)
        self.forms_dock = self._dock("formsDock", self.forms, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.explain_dock = self._dock("explainDock", self.explain, Qt.DockWidgetArea.RightDockWidgetArea)
        self.notes_dock = self._dock("notesDock", self.notes, Qt.DockWidgetArea.RightDockWidgetArea)
        self.docks = (self.forms_dock, self.explain_dock, self.notes_dock)
        self._dock_titles()
        self.time_label = QLabel("")
        self.time_label.setObjectName("estimateTime")
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

    def retranslate(self) -> None:
        """Every visible text again, in the language now installed (View ▸ Language)."""
        self._dock_titles()
        retranslate_menus(self, self.actions_)
        self.start_page.retranslate()
        self.forms.retranslate(self.assumptions)
        self.summary.retranslate()
        self.chart.retranslate()
        self.layer_chart.retranslate()
        self.explain.retranslate()
        self.selection.retranslate()
        self.notes.retranslate()
        self.workspace_tabs.retranslate()
        self._set_title()
        self._show_time()

    def _restore_layout(self) -> None:
        self.resize(*DEFAULT_SIZE)
        self._default_docks()
        geometry, state = self.settings.geometry(), self.settings.window_state()
        if geometry is not None:
            self.restoreGeometry(geometry)
        self._layout_restored = state is not None and self.restoreState(state)
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
        if self._docks_parked:
            for dock in self.docks:
                dock.setVisible(self._dock_visible.get(dock, True))
            self._docks_parked = False

    def _default_docks(self) -> None:
        self.resizeDocks([self.forms_dock, self.explain_dock], [340, 310], Qt.Orientation.Horizontal)
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

    # -------------------------------------------------------------------------------------- open
    def open_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, translate("MainWindow", "Open config(s)"), self.settings.last_dir(),
            translate("MainWindow", "Configs (*.yaml *.yml *.json *.toml *.sh);;All files (*)"))
        if paths:
            self.settings.set_last_dir(str(Path(paths[0]).parent))
            self.open_paths(paths)

    def open_paths(self, paths: list[str], **kwargs: Any) -> bool:
        """Open one plan from ``paths``; errors go to the start page / banner, never to a dialog."""
        if self.doc.loaded and not self.confirm_discard():
            return False
        try:
            self.doc.open(paths, **kwargs)
        except SappError as exc:
            needs_devices = "--devices" in str(exc)
            names = ", ".join(Path(p).name for p in paths)
            self._open_failed(translate("MainWindow", "Cannot open {0}: {1}").format(names, exc),
                              (list(paths), dict(kwargs)) if needs_devices else None)
            return False
        except Exception as exc:
            names = ", ".join(Path(p).name for p in paths)
            self._open_failed(translate("MainWindow", "Cannot open {0}: internal error in the reader ({1})").format(
                names, f"{type(exc).__name__}: {exc}"))
            return False
        self.settings.add_recent(list(paths), kwargs)
        self._refresh_recent()
        self.undo_stack.clear()
        self.result, self.pinned = None, None
        self.selection.reset()
        self.field_errors, self.last_touched, self.last_error = {}, [], None
        self.assumptions = {}
        self.summary.clear()
        self.banner.setVisible(False)
        self.start_page.show_message("")
        self._show_workspace()
        self.forms.hardware.refresh_presets()
        self._refresh_document()
        self.workspace_tabs.on_document_opened(self.doc.parsed, self.doc.open_args)
        self.runner.request_now(self.doc.parsed)
        self.document_opened.emit()
        self.statusBar().showMessage(translate("MainWindow", "Opened {0}").format(self.doc.title), 4000)
        return True

    def _open_failed(self, message: str, retry: tuple[list[str], dict] | None = None) -> None:
        self.statusBar().showMessage(message, 10000)
        if self.doc.loaded and retry is None:
            self._show_banner(message)
        else:
            if self.stack.currentWidget() is not self.start_page:
                self._show_start_page()
            self.start_page.show_message(message, retry)

    def close_document(self) -> None:
        if self.doc.loaded and not self.confirm_discard():
            return
        self.runner.cancel()
        self.doc.close()
        self.forms.refresh({})
        self.undo_stack.clear()
        self.result = None
        self.workspace_tabs.on_document_closed()
        self._show_start_page()
        self._set_title()
        self.setWindowModified(False)
        self._update_actions()

    def _refresh_recent(self) -> None:
        entries = self.settings.recent()
        self.start_page.set_recent(entries)
        actions = getattr(self, "actions_", None)
        if actions is not None:
            fill_recent_menu(self, actions.recent_menu, entries)

    def open_recent(self, paths: list[str], args: dict | None = None) -> bool:
        missing = [p for p in paths if not Path(p).is_file()]
        if missing:
            self.settings.remove_recent(paths)
            self._refresh_recent()
            self._open_failed(translate("MainWindow", "No longer there: {0} (removed from the recent list)").format(
                ", ".join(missing)))
            return False
        return self.open_paths(paths, **(args or {}))

    # --------------------------------------------------------------------------------- drag/drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        mime = event.mimeData()
        if mime.hasUrls() and any(url.isLocalFile() for url in mime.urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: Any) -> None:
        self.dragEnterEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        self.open_paths(paths)

    # ------------------------------------------------------------------------------------- edits
    def edit(self, changes: dict[str, Any], text: str = "edit") -> bool:
        """Apply a form edit: an undoable state change, or the validator's message on the field."""
        if not self.doc.loaded:
            return False
        self.last_touched = list(changes)
        try:
            state = self.doc.propose(changes)
        except FieldError as exc:
            self.field_errors = exc.errors
            self.forms.set_errors(self.field_errors)
            message = translate("MainWindow", "Not applied: {0}").format(exc)
            self._show_banner(message)
            self.statusBar().showMessage(message, 8000)
            return False
        current = self.doc.parsed
        if state.parsed.values == current.values and state.parsed.hardware == current.hardware:
            self._refresh_document()  # an invalid value typed back to the current one: clear the marks
            return True
        self.undo_stack.push(StateCommand(self._apply_state, self.doc.state, state, text))  # type: ignore[arg-type]
        return True

    def _apply_state(self, state: DocState) -> None:
        self.doc.set_state(state)
        self.runner.request(state.parsed)  # first: the forms refresh inside the debounce window
        self._refresh_document()
        self.workspace_tabs.on_plan_changed(state.parsed)

    def _refresh_document(self) -> None:
        self.field_errors = {}
        self.banner.setVisible(False)
        self.forms.refresh(self.assumptions)
        self.forms.set_errors({})
        self._set_title()
        self.setWindowModified(self.doc.is_modified())
        self._update_notes()
        self._update_actions()

    def _set_title(self) -> None:
        self.setWindowTitle(f"{self.doc.title} — SAPP Planner[*]" if self.doc.loaded else "SAPP Planner[*]")

    def reset_to_file(self) -> None:
        if not self.doc.loaded or not self.doc.is_modified():
            return
        self.undo_stack.push(StateCommand(self._apply_state, self.doc.state, self.doc.original_state(),  # type: ignore[arg-type]
                                          translate("MainWindow", "Reset to file")))

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
        acts.unpin.setEnabled(self.pinned is not None)

    # --------------------------------------------------------------------------------- estimates
    def _on_estimate(self, outcome: Outcome) -> None:
        if outcome.error is not None:
            self._estimate_failed(outcome)
            return
        result = outcome.result
        assert result is not None
        self.result, self.last_error = result, None
        self.chart.set_result(result, self.pinned)
        self.summary.set_result(outcome.parsed, result, self.pinned)
        self.forms.set_result(result)
        self.banner.setVisible(False)
        self.forms.set_errors(self.field_errors)
        self._time_text = f"{outcome.elapsed * 1000:.0f}"
        self._show_time()
        self.selection.set_result(result, outcome.parsed, outcome.generation)
        self.workspace_tabs.on_estimate(outcome.parsed, result)
        self.estimate_drawn.emit(result)
        assumptions = {a.field: a for a in (*outcome.parsed.assumptions, *result.assumptions)}
        if assumptions != self.assumptions:
            self.assumptions = assumptions
            self.forms.refresh(assumptions)
        self._update_notes()

    def _estimate_failed(self, outcome: Outcome) -> None:
        error = outcome.error
        assert error is not None
        self.last_error = error
        message = str(error) if isinstance(error, SappError) else \
            translate("MainWindow", "internal error: {0}").format(f"{type(error).__name__}: {error}")
        self.field_errors = self.doc.error_fields(error, self.last_touched)
        self.forms.set_errors(self.field_errors)
        kept = translate("MainWindow", "The chart still shows the last valid estimate.") if self.result is not None \
            else ""
        head = translate("MainWindow", "This combination cannot be priced.")
        self._show_banner(f"{head} {message} {kept}".strip())
        self._time_text = "failed"
        self._show_time()
        self._update_notes()
        self.estimate_failed.emit(error)

    def _show_time(self) -> None:
        if not self._time_text:
            self.time_label.setText("")
        elif self._time_text == "failed":
            self.time_label.setText(translate("MainWindow", "estimate failed"))
        else:
            self.time_label.setText(translate("MainWindow", "estimate {0} ms").format(self._time_text))

    def _show_banner(self, text: str) -> None:
        self.banner.setText(text)
        self.banner.setVisible(True)

    def _update_notes(self) -> None:
        if not self.doc.loaded:
            self.notes.set_notes()
            return
        parsed = self.doc.parsed
        result = self.result
        errors = [str(self.last_error)] if self.last_error is not None else []
        if self.doc.preset_problem:
            errors.append(self.doc.preset_problem)
        if self.profile_problem:
            errors.append(self.profile_problem)
        self.notes.set_notes(warnings=(*parsed.warnings, *(result.warnings if result else ())),
                             assumptions=(*parsed.assumptions, *(result.assumptions if result else ())),
                             edits=self.doc.state.notes if self.doc.state else (), errors=errors)

    # -------------------------------------------------------------------------------- baseline
    def pin_baseline(self) -> None:
        if self.result is None:
            return
        self.pinned = self.result
        self.chart.set_result(self.result, self.pinned)
        self.summary.set_result(self.doc.parsed, self.result, self.pinned)
        self.statusBar().showMessage(translate("MainWindow", "Pinned: peak {0} GiB; later estimates are drawn beside "
                                                             "it").format(f"{self.result.peak_bytes / GiB:,.2f}"), 5000)
        self._update_actions()

    def clear_baseline(self) -> None:
        self.pinned = None
        if self.result is not None:
            self.chart.set_result(self.result)
            self.summary.set_result(self.doc.parsed, self.result)
        self._update_actions()

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
        """Stop and join every worker (estimates, search, balance, compare, schedule)."""
        self.runner.shutdown()
        self.workspace_tabs.shutdown()

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

