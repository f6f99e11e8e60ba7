"""The result tabs of the Search panel: the table of strategies that fit (sortable by the numbers, filtered by
conditions or text, the Pareto front alone on request, exports) and the refusals by rule with an example
each. ``current_changed(source row)`` reports the selection in ``rows`` order (the model's)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QItemSelectionModel, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from estimator.search import SearchResult

from .clipboard import install_table_copy
from .language import said, translate
from .search_model import COLUMN_KEYS, SearchFilterProxy, SearchRow, SearchTableModel

WORD_FLOOR_EM = 4  # a column of words (recompute mode, schedule) narrows to about four letters, then elides
WORDS = {"rec", "schedule"}
# the strategy's own columns: one whose value is the same in every row is named once above the table instead
DIMENSION_COLUMNS = ("dp", "tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "m", "sp", "rec", "schedule")


class SearchResultsTabs(QTabWidget):
    current_changed = Signal(int)     # source row of the table's current row
    export_requested = Signal(str)    # "csv" | "json"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("searchResultTabs")
        self.rows: list[SearchRow] = []
        self.model = SearchTableModel(self)
        self.proxy = SearchFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        install_table_copy(self.table)
        self.table.setObjectName("searchTable")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setMinimumSectionSize(self.fontMetrics().horizontalAdvance("0") * 2)
        self.table.horizontalHeader().setTextElideMode(Qt.TextElideMode.ElideRight)  # a narrowed column's header
        self.table.viewport().installEventFilter(self)  # the columns follow the table's width (fit_columns)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._on_current(cur))
        self.filter = QLineEdit()
        self.filter.setObjectName("searchFilter")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.apply_filter)
        self.pareto_only = QCheckBox()
        self.pareto_only.setObjectName("paretoOnly")
        self.pareto_only.toggled.connect(self.apply_filter)
        self.filter_label = QLabel()
        self.filter_label.setBuddy(self.filter)
        self.shown_label = QLabel("")
        self.shown_label.setProperty("sappRole", "note")
        self.export_button = QToolButton()
        self.export_button.setObjectName("exportSearch")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.export_button.setEnabled(False)
        menu = QMenu(self.export_button)
        self.export_csv_action = menu.addAction("", lambda: self.export_requested.emit("csv"))
        self.export_json_action = menu.addAction("", lambda: self.export_requested.emit("json"))
        self.export_button.setMenu(menu)
        filter_row = QHBoxLayout()
        for widget, stretch in ((self.filter_label, 0), (self.filter, 1), (self.pareto_only, 0),
                                (self.shown_label, 0), (self.export_button, 0)):
            filter_row.addWidget(widget, stretch)
        table_page = QWidget()
        table_box = QVBoxLayout(table_page)
        table_box.setContentsMargins(0, 4, 0, 0)
        self.same_label = QLabel("")
        self.same_label.setObjectName("searchSameInEveryRow")
        self.same_label.setProperty("sappRole", "note")
        self.same_label.setWordWrap(True)
        self.same_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.same_label.setVisible(False)
        table_box.addLayout(filter_row)
        table_box.addWidget(self.same_label)
        table_box.addWidget(self.table, 1)
        self.refused = QTableWidget(0, 3)
        install_table_copy(self.refused)
        self.refused.setObjectName("refusals")
        self.refused.verticalHeader().setVisible(False)
        self.refused.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.refused.setWordWrap(True)
        header = self.refused.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.addTab(table_page, "")
        self.addTab(self.refused, "")
        self.result: SearchResult | None = None
        self.retranslate()

    def retranslate(self) -> None:
        self.filter_label.setText(translate("SearchPanel", "&Filter:"))
        self.filter.setPlaceholderText(translate("SearchPanel", "e.g. tp>=4 pp=8 rec=full mfu>30, or any text"))
        self.pareto_only.setText(translate("SearchPanel", "Pareto front only"))
        self.export_button.setText(translate("SearchPanel", "Export"))
        self.export_csv_action.setText(translate("SearchPanel", "Table as CSV…"))
        self.export_json_action.setText(translate("SearchPanel", "Result as JSON…"))
        self.refused.setHorizontalHeaderLabels([translate("SearchPanel", "Rule"),
                                                translate("SearchPanel", "Candidates"),
                                                translate("SearchPanel", "Example")])
        self.model.retranslate()
        self._tab_titles()
        self.apply_filter()
        self._show_same_columns()  # the headers' widths changed

    def set_result(self, result: SearchResult | None, rows: list[SearchRow]) -> None:
        """Show a search's rows (in the current sort order and filter) and its refusals."""
        self.result, self.rows = result, list(rows)
        self.model.set_rows(self.rows)
        header = self.table.horizontalHeader()
        self.table.sortByColumn(header.sortIndicatorSection(), header.sortIndicatorOrder())
        self.apply_filter()
        self._show_same_columns()
        items = sorted(result.refusals.items(), key=lambda kv: -kv[1]) if result is not None else []
        self.refused.setRowCount(len(items))
        for i, (code, count) in enumerate(items):
            example = said(result.examples.get(code, "")) if result is not None else ""
            for j, text in enumerate((code, f"{count:,}", example)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if j == 1:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.refused.setItem(i, j, item)
        self.refused.resizeRowsToContents()
        self.export_button.setEnabled(result is not None)
        self._tab_titles()

    def _show_same_columns(self) -> None:
        """A strategy column whose value is the same in every row of the result (a dimension the search kept
        fixed) is hidden and named once above the table, with its value; the filter still matches it."""
        header = self.table.horizontalHeader()
        same = []
        for column, key in enumerate(COLUMN_KEYS):
            values = {self.model.data(self.model.index(r, column)) for r in range(self.model.rowCount())} \
                if key in DIMENSION_COLUMNS and len(self.rows) > 1 else set()
            hide = len(values) == 1
            header.setSectionHidden(column, hide)
            if hide:
                name = self.model.headerData(column, Qt.Orientation.Horizontal)
                same.append(f"{name} {values.pop()}")
        self.same_label.setText(translate("SearchPanel", "Same in every row: {0}").format(" · ".join(same))
                                if same else "")
        self.same_label.setVisible(bool(same))
        self.fit_columns()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self.fit_columns()
        return super().eventFilter(watched, event)

    def fit_columns(self) -> None:
        """Every column as wide as its header and cells ask when the table has the room; otherwise the table fits
        its width (issue 12: no sideways scrolling at 1024×640): each column keeps the least it can show — a
        number or a mark its cells (a cut number would read as another number), a column of words about four
        letters (it elides; each cell's tooltip has its text) — then two letters of each header from the left
        (the columns that matter most come first; a header elides, its tooltip says what the column is), then
        the rest in proportion to what each still asks. The step time shows its value without the band (kept in
        the tooltip) when the band would cost a header its letters. Only what still does not fit scrolls."""
        header = self.table.horizontalHeader()
        room = self.table.viewport().width()
        for band in (True, False):
            self.model.set_step_band(band)
            shown, natural, least, named = self._column_widths()
            if sum(named) <= room:
                break
        widths = list(least)
        left = room - sum(widths)
        for k, wanted in enumerate(named):
            given = max(0, min(wanted - widths[k], left))
            widths[k] += given
            left -= given
        asked = [wanted - width for wanted, width in zip(natural, widths, strict=True)]
        if left > 0 and sum(asked) > 0:
            share, total = min(left, sum(asked)), sum(asked)
            widths = [width + more * share // total for width, more in zip(widths, asked, strict=True)]
        for column, width in zip(shown, widths, strict=True):
            if header.sectionSize(column) != width:
                header.resizeSection(column, width)

    def _column_widths(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """The shown columns and, for each, the width it asks for, the least it takes and the least that keeps
        two letters of its header (fit_columns)."""
        header = self.table.horizontalHeader()
        metrics = self.table.fontMetrics()
        word_floor = metrics.horizontalAdvance("m") * WORD_FLOOR_EM
        # two letters, the ellipsis and the section's margins
        two_letters = metrics.horizontalAdvance("MM…") + 2 * metrics.horizontalAdvance("0")
        shown = [c for c in range(len(COLUMN_KEYS)) if not header.isSectionHidden(c)]
        natural, least, named = [], [], []
        for column in shown:
            cells = self.table.sizeHintForColumn(column)  # -1 without rows
            wanted = max(cells, header.sectionSizeHint(column))
            floor = min(wanted, word_floor if COLUMN_KEYS[column] in WORDS else max(cells, 0))
            natural.append(wanted)
            least.append(floor)
            named.append(max(floor, min(wanted, two_letters)))
        return shown, natural, least, named

    def _tab_titles(self) -> None:
        if self.result is None:
            self.setTabText(0, translate("SearchPanel", "Strategies that fit"))
            self.setTabText(1, translate("SearchPanel", "Refused"))
            return
        refused = sum(self.result.refusals.values())
        self.setTabText(0, translate("SearchPanel", "Fastest {0} of {1} that fit").format(
            f"{len(self.result.ranked):,}", f"{self.result.fitting:,}"))
        self.setTabText(1, translate("SearchPanel", "Refused ({0})").format(f"{refused:,}"))

    def apply_filter(self, *_args: object) -> None:
        self.proxy.set_filter(self.filter.text(), self.pareto_only.isChecked())
        self.shown_label.setText(translate("SearchPanel", "{0} of {1} shown").format(self.proxy.rowCount(),
                                                                                      len(self.rows)))

    def visible_rows(self) -> list[int]:
        """Source row indices in the table's current (sorted, filtered) order."""
        return [self.proxy.mapToSource(self.proxy.index(r, 0)).row() for r in range(self.proxy.rowCount())]

    def select(self, source_row: int) -> None:
        """Make ``rows[source_row]`` the current row (showing every row again if the filter hides it)."""
        index = self.proxy.mapFromSource(self.model.index(source_row, 0))
        if not index.isValid():
            self.filter.clear()
            self.pareto_only.setChecked(False)
            index = self.proxy.mapFromSource(self.model.index(source_row, 0))
        self.table.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.table.scrollTo(index)

    def _on_current(self, index: Any) -> None:
        if index.isValid():
            self.current_changed.emit(self.proxy.mapToSource(index).row())
