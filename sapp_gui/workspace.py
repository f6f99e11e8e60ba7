"""The centre of the window as tabs — Memory (the stage and layer charts), Search, Compare, Balance,
Schedule — and the main window's behaviour around them (kept out of main_window.py): showing a tab, running
a search or a balance from the menu, sending strategies to Compare, applying a panel's strategy to the forms
(through the window's undoable edit path), exporting the report, and switching the interface language.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from estimator.errors import SappError
from estimator.parsed import ParsedConfig
from estimator.result import Result

from . import language, report_export
from .balance_view import BalanceView
from .compare_view import CompareView
from .document import Document
from .language import translate
from .schedule_view import ScheduleView
from .search_panel import SearchPanel

if TYPE_CHECKING:
    from .main_window import MainWindow

TAB_NAMES = ("memory", "search", "compare", "balance", "schedule")


class WorkspaceTabs(QTabWidget):
    """Memory plus the analysis tabs. The analysis panels are built when first needed (shown, or used through
    ``search`` / ``compare`` / ``balance`` / ``schedule``), the rest in idle time after the first chart, so
    they do not delay the first chart at start; a panel built late catches up with the document."""

    panel_created = Signal(str, QWidget)

    def __init__(self, doc: Document, memory_page: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("workspaceTabs")
        self.setDocumentMode(True)
        self.doc = doc
        self._warmed_up = False
        self.memory = memory_page
        self._panels: dict[str, QWidget] = {}
        self._hosts: dict[str, QWidget] = {}
        self._open_args: dict[str, Any] = {}
        self._estimated: ParsedConfig | None = None  # the plan of the chart on screen (the schedule's)
        self.addTab(memory_page, "")
        for name in TAB_NAMES[1:]:
            host = QWidget()
            host.setObjectName(f"{name}Tab")
            layout = QVBoxLayout(host)
            layout.setContentsMargins(0, 0, 0, 0)
            self._hosts[name] = host
            self.addTab(host, "")
        self.currentChanged.connect(lambda index: self.panel(TAB_NAMES[index]) if index > 0 else None)
        self.retranslate()

    # ------------------------------------------------------------------------------------ panels
    def panel(self, name: str) -> QWidget:
        """The panel of an analysis tab, built on first use."""
        got = self._panels.get(name)
        if got is not None:
            return got
        doc = self.doc
        panel: QWidget = {"search": lambda: SearchPanel(doc), "compare": CompareView,
                          "balance": lambda: BalanceView(doc), "schedule": ScheduleView}[name]()
        self._panels[name] = panel
        self._hosts[name].layout().addWidget(panel)
        # catch up with the document
        if name == "search" and doc.loaded:
            panel.on_plan_changed(doc.parsed, reset=True)  # type: ignore[attr-defined]
        elif name == "balance":
            panel.on_plan_changed(reset=True)  # type: ignore[attr-defined]
        elif name == "compare":
            panel.open_args = dict(self._open_args)  # type: ignore[attr-defined]
        elif name == "schedule":
            panel.set_plan(self._estimated)  # type: ignore[attr-defined]
        self.panel_created.emit(name, panel)
        return panel

    def _built(self) -> list[QWidget]:
        return list(self._panels.values())

    def build_all(self) -> None:
        """Build the panels not built yet, one per event-loop turn (idle time after the first chart)."""
        missing = [name for name in TAB_NAMES[1:] if name not in self._panels]
        if missing:
            self.panel(missing[0])
            if len(missing) > 1:
                QTimer.singleShot(0, self, self.build_all)

    @property
    def search(self) -> SearchPanel:
        return self.panel("search")  # type: ignore[return-value]

    @property
    def compare(self) -> CompareView:
        return self.panel("compare")  # type: ignore[return-value]

    @property
    def balance(self) -> BalanceView:
        return self.panel("balance")  # type: ignore[return-value]

    @property
    def schedule(self) -> ScheduleView:
        return self.panel("schedule")  # type: ignore[return-value]

    def page(self, name: str) -> QWidget:
        return self.widget(TAB_NAMES.index(name))

    def retranslate(self) -> None:
        for i, text in enumerate((translate("Workspace", "Memory"), translate("Workspace", "Search"),
                                  translate("Workspace", "Compare"),
                                  translate("Workspace", "Balance"), translate("Workspace", "Schedule"))):
            self.setTabText(i, text)
        for panel in self._built():
            panel.retranslate()  # type: ignore[attr-defined]

    # ------------------------------------------------------------------------------- document events
    def on_document_opened(self, parsed: ParsedConfig, open_args: dict[str, Any]) -> None:
        self._open_args = {k: v for k, v in open_args.items() if k in ("devices", "device") and v}
        self._estimated = None
        built = self._panels
        if "search" in built:
            self.search.on_plan_changed(parsed, reset=True)
        if "balance" in built:
            self.balance.on_plan_changed(reset=True)
        if "compare" in built:
            self.compare.open_args = dict(self._open_args)
        if "schedule" in built:
            self.schedule.set_plan(None)

    def on_document_closed(self) -> None:
        self._estimated = None
        built = self._panels
        if "search" in built:
            self.search.search_runner.discard()
        if "balance" in built:
            self.balance.on_plan_changed(reset=True)
        if "schedule" in built:
            self.schedule.set_plan(None)

    def on_plan_changed(self, parsed: ParsedConfig) -> None:
        if "search" in self._panels:
            self.search.on_plan_changed(parsed)
        if "balance" in self._panels:
            self.balance.on_plan_changed()

    def on_estimate(self, parsed: ParsedConfig, result: Result) -> None:
        self._estimated = parsed
        if not self._warmed_up:
            from . import jobs

            QTimer.singleShot(100, self, self.build_all)  # the other tabs, once this chart is painted

            # the search/balance worker processes fork from a server that has the estimator loaded; started a
            # second after the first chart so that its imports do not compete with the cold start on a small
            # machine (a search started sooner starts the server itself)
            QTimer.singleShot(1000, self, jobs.warm_up)
            self._warmed_up = True
        if "schedule" in self._panels:
            self.schedule.set_plan(parsed)

    def shutdown(self) -> None:
        for panel in self._built():
            panel.shutdown()  # type: ignore[attr-defined]


class WorkspaceMixin:
    """MainWindow behaviour for the analysis tabs, the report and the language (needs the window's
    ``doc``, ``result``, ``pinned``, ``edit``, ``settings``, ``statusBar`` and ``workspace_tabs``)."""

    def _connect_workspace(self: MainWindow) -> None:  # type: ignore[misc]
        tabs = self.workspace_tabs
        for name, panel in tabs._panels.items():  # built before this ran
            self._connect_panel(name, panel)
        tabs.panel_created.connect(self._connect_panel)

    def _connect_panel(self: MainWindow, name: str, panel: Any) -> None:  # type: ignore[misc]
        if name == "search":
            panel.apply_requested.connect(self.edit)
            panel.compare_requested.connect(self._compare_from_search)
            panel.status.connect(lambda text: self.statusBar().showMessage(text, 8000))
        elif name == "balance":
            panel.apply_requested.connect(self.edit)
        elif name == "compare":
            panel.add_current_requested.connect(self.compare_current)
            panel.add_pinned_requested.connect(self.compare_pinned)

    def show_tab(self: MainWindow, name: str) -> QWidget:  # type: ignore[misc]
        page = self.workspace_tabs.page(name)
        self.workspace_tabs.setCurrentWidget(page)
        return page

    def run_search(self: MainWindow) -> int | None:  # type: ignore[misc]
        self.show_tab("search")
        return self.workspace_tabs.search.run()

    def run_balance(self: MainWindow) -> int | None:  # type: ignore[misc]
        self.show_tab("balance")
        return self.workspace_tabs.balance.run()

    def compare_current(self: MainWindow) -> bool:  # type: ignore[misc]
        if self.result is None or not self.doc.loaded:
            self.statusBar().showMessage(translate("Workspace", "Nothing estimated to compare yet"), 5000)
            return False
        parsed = self.doc.parsed
        name = translate("Workspace", "Current")
        added = self.workspace_tabs.compare.add(name, parsed, self.result)
        if added:
            self.show_tab("compare")
        return added

    def compare_pinned(self: MainWindow) -> bool:  # type: ignore[misc]
        if self.pinned is None:
            self.statusBar().showMessage(translate("Workspace", "Pin a baseline first (Edit ▸ Pin baseline)"), 5000)
            return False
        return self.workspace_tabs.compare.add(translate("Workspace", "Pinned baseline"), None, self.pinned)

    def _compare_from_search(self: MainWindow, name: str, plan: ParsedConfig, result: Result | None) -> None:  # type: ignore[misc]
        if self.workspace_tabs.compare.add(name, plan, result):
            self.statusBar().showMessage(translate("Workspace", "{0} added to Compare").format(name), 5000)

    def exportable_charts(self: MainWindow) -> list[tuple[str, Any]]:  # type: ignore[misc]
        tabs = self.workspace_tabs
        return [(translate("Workspace", "Stage chart"), self.chart),
                (translate("Workspace", "Layer chart"), self.layer_chart),
                (translate("Workspace", "Pareto chart (search)"), tabs.search.pareto),
                (translate("Workspace", "Selected strategy's stages (search)"), tabs.search.stage_chart),
                (translate("Workspace", "Compare chart"), tabs.compare.chart),
                (translate("Workspace", "Balance chart"), tabs.balance.chart),
                (translate("Workspace", "Schedule timeline"), tabs.schedule.chart)]

    def export_report(self: MainWindow, path: str | Path | None = None) -> list[str]:  # type: ignore[misc]
        """Write the report of the plan on screen (asks where when ``path`` is None)."""
        if not self.doc.loaded or self.result is None:
            self.statusBar().showMessage(translate("Workspace", "Nothing estimated to report yet"), 5000)
            return []
        parsed = self.doc.parsed
        if path is None:
            chosen = report_export.ask_path(self, report_export.suggested_name(parsed, self.settings.last_dir()))
            if chosen is None:
                return []
            path = chosen
        try:
            written = report_export.write(parsed, self.result, path)
        except SappError as exc:
            self._show_banner(translate("Workspace", "Report not written: {0}").format(exc))
            return []
        self.statusBar().showMessage(translate("Workspace", "Wrote {0}").format(", ".join(written)), 8000)
        return written

    def run_tab(self: MainWindow, name: str, timeout_s: float = 60.0) -> str:  # type: ignore[misc]
        """Show a tab with its analysis done (``--screenshot --tab``); returns a problem, or "" when drawn."""
        from PySide6.QtCore import QEventLoop, QTimer

        tabs = self.workspace_tabs
        loop = QEventLoop()
        problem: list[str] = []
        start: Any = None
        if name == "search":
            tabs.search.results_shown.connect(loop.quit)
            tabs.search.status.connect(lambda text: (problem.append(text), loop.quit()))
            start = self.run_search
        elif name == "balance":
            tabs.balance.balanced.connect(loop.quit)
            tabs.balance.failed.connect(lambda text: (problem.append(text), loop.quit()))
            start = self.run_balance
        elif name == "schedule":
            view = tabs.schedule
            if view.timeline is not None and view.shown is view.parsed:
                self.show_tab(name)  # already drawn for the plan on screen
                return ""
            view.drawn.connect(loop.quit)
            start = lambda: self.show_tab("schedule")  # noqa: E731 — drawn when shown
        elif name == "compare":
            self.compare_current()
            tabs.compare.compared.connect(loop.quit)
            start = lambda: tabs.compare.add(translate("Workspace", "File as written"),  # noqa: E731
                                             self.doc.original)
        else:
            self.show_tab(name)
            return ""
        timer = QTimer()
        timer.setSingleShot(True)
        timer.timeout.connect(lambda: (problem.append(f"nothing after {timeout_s:.0f} s"), loop.quit()))
        timer.start(int(timeout_s * 1000))
        started = start()
        if started is None and name == "search":
            return tabs.search.summary.text() or "the search did not start"
        if started is False and name == "compare":  # e.g. the view is full: its message says so
            self.show_tab(name)
            return tabs.compare.message.text() or "nothing was added to compare"
        loop.exec()
        self.show_tab(name)
        return problem[0] if problem else ""

    # ----------------------------------------------------------------------------------- language
    def set_language(self: MainWindow, setting: str) -> bool:  # type: ignore[misc]
        """Switch the interface language now ("system", "en", "zh_CN") and remember the choice."""
        code = language.resolve(setting)
        ok = language.apply(code)
        self.settings.set_language(setting)
        self.retranslate()
        from .menus import check_language

        check_language(self.actions_, setting)
        if not ok:
            self.statusBar().showMessage(translate("Workspace", "No translation for {0} is installed").format(code),
                                         8000)
        elif not language.has_font_for(language.current()):
            # in English on purpose: without the font a Chinese message would show as boxes
            self.statusBar().showMessage("No font for Chinese is installed: install fonts-noto-cjk (or "
                                         "fonts-wqy-microhei)", 15000)
        return ok
