"""The centre of the window as tabs — Memory (the stage and layer charts), Search, Compare, Balance, Schedule —
and what is done with them: showing a tab, running a search or a balance, sending strategies to Compare and
running a tab's analysis for ``--screenshot --tab``. Every panel is a view of the plan session
(``panel.attach``); the tabs hand the window only edits to apply (``apply_requested``) and messages
(``status``)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEventLoop, QTimer, Signal
from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from estimator.parsed import ParsedConfig
from estimator.result import Result
from estimator.session import PlanSession, SessionEvent
from estimator.session.events import ESTIMATED

from .balance_view import BalanceView
from .compact import scrolling
from .compare_view import CompareView
from .language import translate
from .panel import StaleFrame, attach, catch_up
from .schedule_view import ScheduleView
from .search_panel import SearchPanel

TAB_NAMES = ("memory", "search", "compare", "balance", "schedule")


class WorkspaceTabs(QTabWidget):
    """Memory plus the analysis tabs. The analysis panels are built when first needed (shown, or used through
    ``search`` / ``compare`` / ``balance`` / ``schedule``), the rest in idle time after the first chart, so
    they do not delay the first chart at start; a panel built late catches up with the session."""

    panel_created = Signal(str, QWidget)
    apply_requested = Signal(dict, str)   # an edit from a panel (search row, balance), with its undo text
    status = Signal(str, int)             # a message for the status bar, and for how long (ms)

    def __init__(self, session: PlanSession, memory_page: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("workspaceTabs")
        self.setDocumentMode(True)
        self.session = session
        self._warmed_up = False
        self.memory = memory_page
        self._panels: dict[str, QWidget] = {}
        self._hosts: dict[str, QWidget] = {}
        self._frames: list[StaleFrame] = []
        self.addTab(scrolling(memory_page, "memoryScroll"), "")  # a banner above it must not grow the window
        for name in TAB_NAMES[1:]:
            host = QWidget()
            host.setObjectName(f"{name}Tab")
            layout = QVBoxLayout(host)
            layout.setContentsMargins(0, 0, 0, 0)
            self._hosts[name] = host
            self.addTab(scrolling(host, f"{name}Scroll"), "")  # scrolls on a small window (issue 12)
        self.currentChanged.connect(lambda index: self.panel(TAB_NAMES[index]) if index > 0 else None)
        attach(session, self)
        self.retranslate()

    # ------------------------------------------------------------------------------------ panels
    def panel(self, name: str) -> QWidget:
        """The panel of an analysis tab, built on first use (and brought up to date with the session)."""
        got = self._panels.get(name)
        if got is not None:
            return got
        session = self.session
        panel: QWidget = {"search": lambda: SearchPanel(session), "compare": lambda: CompareView(session),
                          "balance": lambda: BalanceView(session), "schedule": ScheduleView}[name]()
        self._panels[name] = panel
        if name == "schedule":  # the timeline of the estimate on screen: greyed with it when it is stale
            frame = StaleFrame(session, panel)
            self._frames.append(frame)
            self._hosts[name].layout().addWidget(frame)
        else:
            self._hosts[name].layout().addWidget(panel)
        attach(session, panel)  # type: ignore[arg-type]
        catch_up(session, panel)  # type: ignore[arg-type]
        if name == "search":
            panel.apply_requested.connect(self.apply_requested)  # type: ignore[attr-defined]
            panel.compare_requested.connect(self._compare_from_search)  # type: ignore[attr-defined]
            panel.status.connect(lambda text: self.status.emit(text, 8000))  # type: ignore[attr-defined]
        elif name == "balance":
            panel.apply_requested.connect(self.apply_requested)  # type: ignore[attr-defined]
        elif name == "compare":
            panel.add_current_requested.connect(self.compare_current)  # type: ignore[attr-defined]
            panel.add_pinned_requested.connect(self.compare_pinned)  # type: ignore[attr-defined]
        self.panel_created.emit(name, panel)
        return panel

    def built(self, name: str) -> QWidget | None:
        """The panel of an analysis tab if it was built (None otherwise; nothing is built)."""
        return self._panels.get(name)

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
        """The tab's page: the scroll area around an analysis panel's host, the memory page itself."""
        return self.widget(TAB_NAMES.index(name))

    def show_tab(self, name: str) -> QWidget:
        page = self.page(name)
        self.setCurrentWidget(page)
        return page

    def retranslate(self) -> None:
        for i, text in enumerate((translate("Workspace", "Memory"), translate("Workspace", "Search"),
                                  translate("Workspace", "Compare"),
                                  translate("Workspace", "Balance"), translate("Workspace", "Schedule"))):
            self.setTabText(i, text)
        for panel in self._built():
            panel.retranslate()  # type: ignore[attr-defined]
        for frame in self._frames:
            frame.retranslate()

    def on_session(self, event: SessionEvent) -> None:
        if event.kind == ESTIMATED and not self._warmed_up:
            from . import jobs

            QTimer.singleShot(100, self, self.build_all)  # the other tabs, once this chart is painted
            # the search/balance worker processes fork from a server that has the estimator loaded; started a
            # second after the first chart so that its imports do not compete with the cold start on a small
            # machine (a search started sooner starts the server itself)
            QTimer.singleShot(1000, self, jobs.warm_up)
            self._warmed_up = True

    def shutdown(self) -> None:
        for panel in self._built():
            panel.shutdown()  # type: ignore[attr-defined]

    # ----------------------------------------------------------------------------------- actions
    def run_search(self) -> int | None:
        self.show_tab("search")
        return self.search.run()

    def run_balance(self) -> int | None:
        self.show_tab("balance")
        return self.balance.run()

    def compare_current(self) -> bool:
        """Add the plan in the forms with its estimate (only when the estimate on screen is of that plan)."""
        estimate = self.session.current_estimate if self.session.loaded else None
        if estimate is None:
            self.status.emit(translate("Workspace", "Nothing estimated for the plan in the forms to compare yet"),
                             5000)
            return False
        added = self.compare.add(translate("Workspace", "Current"), estimate.parsed, estimate.result)
        if added:
            self.show_tab("compare")
        return added

    def compare_pinned(self) -> bool:
        pinned = self.session.pinned
        if pinned is None:
            self.status.emit(translate("Workspace", "Pin a baseline first (Edit ▸ Pin baseline)"), 5000)
            return False
        return self.compare.add(translate("Workspace", "Pinned baseline"), pinned.parsed, pinned.result)

    def _compare_from_search(self, name: str, plan: ParsedConfig, result: Result | None) -> None:
        if self.compare.add(name, plan, result):
            self.status.emit(translate("Workspace", "{0} added to Compare").format(name), 5000)

    def run_tab(self, name: str, timeout_s: float = 60.0) -> str:
        """Show a tab with its analysis done (``--screenshot --tab``); returns a problem, or "" when drawn."""
        loop = QEventLoop()
        problem: list[str] = []
        start: Any = None
        if name == "search":
            self.search.results_shown.connect(loop.quit)
            self.search.status.connect(lambda text: (problem.append(text), loop.quit()))
            start = self.run_search
        elif name == "balance":
            self.balance.balanced.connect(loop.quit)
            self.balance.failed.connect(lambda text: (problem.append(text), loop.quit()))
            start = self.run_balance
        elif name == "schedule":
            view = self.schedule
            if view.timeline is not None and view.shown is view.parsed:
                self.show_tab(name)  # already drawn for the plan on screen
                return ""
            view.drawn.connect(loop.quit)
            start = lambda: self.show_tab("schedule")  # noqa: E731 — drawn when shown
        elif name == "compare":
            self.compare_current()
            self.compare.compared.connect(loop.quit)
            start = lambda: self.compare.add(translate("Workspace", "File as written"),  # noqa: E731
                                             self.session.original)
        else:
            self.show_tab(name)
            return ""
        timer = QTimer()
        timer.setSingleShot(True)
        timer.timeout.connect(lambda: (problem.append(f"nothing after {timeout_s:.0f} s"), loop.quit()))
        timer.start(int(timeout_s * 1000))
        started = start()
        if started is None and name == "search":
            return self.search.summary.text() or "the search did not start"
        if started is False and name == "compare":  # e.g. the view is full: its message says so
            self.show_tab(name)
            return self.compare.message.text() or "nothing was added to compare"
        loop.exec()
        self.show_tab(name)
        return problem[0] if problem else ""
