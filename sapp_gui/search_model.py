"""The table of a search's strategies: a Qt model over the ranked rows (and the Pareto rows that are not
ranked), sortable by the numbers (not the text) and filterable with small conditions such as
``tp>=4 pp=8 rec=full mfu>30`` or free text.

The rows are whatever ``estimator.search`` returned (top K plus the Pareto front, at most a few hundred),
never one per candidate, so the model stays small whatever the candidate count.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QBrush, QColor, QFont

from estimator.honest import versus_best
from estimator.search import RankedRow, SearchResult
from estimator.units import GiB

from .language import translate
from .style import PARETO, QT_TRANSLATE_NOOP

SORT_ROLE = Qt.ItemDataRole.UserRole + 1

Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class SearchRow:
    rank: int | None         # 1-based rank by step time among those that fit (None: Pareto-only row)
    row: RankedRow
    pareto: bool
    current: bool = False    # the plan as opened (always a row; its rank may be beyond the top K)
    best_step: float = 0.0   # the fastest step time that fits (the first ranked row's): "vs best" is against it

    @property
    def decisive_peak(self) -> float:
        return max(self.row.peak_bytes, self.row.optimizer_step_peak)


def rank_text(row: SearchRow) -> str:
    text = str(row.rank) if row.rank is not None else ("–" if row.current else "P")
    return text + "*" if row.current else text


# the words the sequence-parallel and recompute columns show, translated; the filter compares with what is shown,
# and takes the English word in any language (``sp=on rec=full`` is the same condition in the Chinese window as
# ``sp=开 rec=完全``)
SP_WORDS = {True: QT_TRANSLATE_NOOP("SearchTable", "on"), False: QT_TRANSLATE_NOOP("SearchTable", "off")}
REC_WORDS = {"none": QT_TRANSLATE_NOOP("SearchTable", "none"),
             "selective": QT_TRANSLATE_NOOP("SearchTable", "selective"),
             "full": QT_TRANSLATE_NOOP("SearchTable", "full"),
             "per-stage": QT_TRANSLATE_NOOP("SearchTable", "per-stage")}
WORD_COLUMNS = {"sp": tuple(SP_WORDS.values()), "rec": tuple(REC_WORDS.values())}


def sp_text(row: RankedRow) -> str:
    return translate("SearchTable", SP_WORDS[bool(row.strategy.sequence_parallel)])


def recompute_text(row: RankedRow) -> str:
    """The row's recompute in English (what identifies it: ``strategy_key``, exports)."""
    plan = row.strategy.recompute
    return "per-stage" if plan.full_counts is not None else plan.default_mode


def recompute_shown(row: RankedRow) -> str:
    word = recompute_text(row)
    return translate("SearchTable", REC_WORDS[word]) if word in REC_WORDS else word


# (key, header, tooltip, display(row) -> str, sort value(row) -> number/str)
Column = tuple[str, str, str, Callable[[SearchRow], str], Callable[[SearchRow], Any]]

COLUMNS: list[Column] = [
    ("rank", QT_TRANSLATE_NOOP("SearchTable", "#"),
     QT_TRANSLATE_NOOP("SearchTable", "rank by step time among the strategies that fit (P: on the Pareto front "
                                      "only; *: the plan as opened, –* when it does not fit)"),
     lambda r: rank_text(r), lambda r: r.rank if r.rank is not None else 10**9),
    # peak and step first: they stay in view however narrow the table (issue 12)
    ("peak", QT_TRANSLATE_NOOP("SearchTable", "Peak GiB"),
     QT_TRANSLATE_NOOP("SearchTable", "peak memory per device, the optimizer step included"),
     lambda r: f"{r.decisive_peak / GiB:,.2f}", lambda r: r.decisive_peak),
    # step time, tokens/s and MFU at the precision the row's efficiency band allows (estimator.honest)
    ("step", QT_TRANSLATE_NOOP("SearchTable", "Step s"),
     QT_TRANSLATE_NOOP("SearchTable", "step time, seconds, with the low–high band the device's efficiency ranges "
                                      "give; sorted by the full value"),
     lambda r: r.row.throughput.step.with_band(), lambda r: r.row.step_time_s),
    ("vs", QT_TRANSLATE_NOOP("SearchTable", "vs best"),
     QT_TRANSLATE_NOOP("SearchTable", "step time against the fastest strategy that fits, in per cent, with the "
                                      "decimals that tell rows apart where their step times round alike (the "
                                      "plans share the device's efficiencies, so their ratio is known better "
                                      "than either step time)"),
     lambda r: versus_best(r.row.step_time_s, r.best_step) if r.best_step else "–", lambda r: vs_percent(r)),
    ("dp", "DP", QT_TRANSLATE_NOOP("SearchTable", "data-parallel degree"),
     lambda r: str(r.row.strategy.dp), lambda r: r.row.strategy.dp),
    ("tp", "TP", QT_TRANSLATE_NOOP("SearchTable", "tensor-parallel degree"),
     lambda r: str(r.row.strategy.tp), lambda r: r.row.strategy.tp),
    ("pp", "PP", QT_TRANSLATE_NOOP("SearchTable", "pipeline stages"),
     lambda r: str(r.row.strategy.pp), lambda r: r.row.strategy.pp),
    ("vpp", "VPP", QT_TRANSLATE_NOOP("SearchTable", "virtual pipeline chunks per stage"),
     lambda r: str(r.row.strategy.vpp), lambda r: r.row.strategy.vpp),
    ("cp", "CP", QT_TRANSLATE_NOOP("SearchTable", "context-parallel degree"),
     lambda r: str(r.row.strategy.cp), lambda r: r.row.strategy.cp),
    ("ep", "EP", QT_TRANSLATE_NOOP("SearchTable", "expert-parallel degree"),
     lambda r: str(r.row.strategy.ep), lambda r: r.row.strategy.ep),
    ("etp", "ETP", QT_TRANSLATE_NOOP("SearchTable", "expert tensor-parallel degree"),
     lambda r: str(r.row.etp), lambda r: r.row.etp),
    ("mbs", "MBS", QT_TRANSLATE_NOOP("SearchTable", "micro-batch size"),
     lambda r: str(r.row.strategy.micro_batch_size), lambda r: r.row.strategy.micro_batch_size),
    ("m", "M", QT_TRANSLATE_NOOP("SearchTable", "micro-batches per step"),
     lambda r: str(r.row.strategy.micro_batches), lambda r: r.row.strategy.micro_batches),
    ("sp", "SP", QT_TRANSLATE_NOOP("SearchTable", "sequence parallel"),
     lambda r: sp_text(r.row), lambda r: int(r.row.strategy.sequence_parallel)),
    ("rec", QT_TRANSLATE_NOOP("SearchTable", "Recompute"), QT_TRANSLATE_NOOP("SearchTable", "recompute mode"),
     lambda r: recompute_shown(r.row), lambda r: recompute_shown(r.row)),
    ("schedule", QT_TRANSLATE_NOOP("SearchTable", "Schedule"), QT_TRANSLATE_NOOP("SearchTable", "pipeline schedule"),
     lambda r: r.row.strategy.schedule_name, lambda r: r.row.strategy.schedule_name),
    ("stage", QT_TRANSLATE_NOOP("SearchTable", "Stage"), QT_TRANSLATE_NOOP("SearchTable", "the peak stage"),
     lambda r: str(r.row.peak_stage), lambda r: r.row.peak_stage),
    ("tok", QT_TRANSLATE_NOOP("SearchTable", "Tok/s/dev"),
     QT_TRANSLATE_NOOP("SearchTable", "tokens per second per device"),
     lambda r: r.row.throughput.tokens.text, lambda r: r.row.tokens_per_s_per_device),
    ("mfu", "MFU %", QT_TRANSLATE_NOOP("SearchTable", "model FLOPs utilisation against the device's dense BF16 "
                                                      "peak (FP8 matmuls run above it: an FP8 plan can pass 100 %)"),
     lambda r: r.row.throughput.mfu.text, lambda r: r.row.mfu * 100),
    ("headroom", QT_TRANSLATE_NOOP("SearchTable", "Headroom GiB"),
     QT_TRANSLATE_NOOP("SearchTable", "budget minus the peak"),
     lambda r: f"{r.row.headroom / GiB:,.2f}", lambda r: r.row.headroom),
    ("pareto", QT_TRANSLATE_NOOP("SearchTable", "Pareto"),
     QT_TRANSLATE_NOOP("SearchTable", "on the Pareto front of step time vs peak memory"),
     lambda r: "●" if r.pareto else "", lambda r: int(r.pareto)),
]
COLUMN_KEYS = [c[0] for c in COLUMNS]
NUMERIC = {"rank", "dp", "tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "m", "peak", "stage", "step", "vs", "tok",
           "mfu", "headroom"}


def vs_percent(row: SearchRow) -> float:
    """The step time against the fastest that fits, in per cent (sorting and ``vs<5`` filters)."""
    return (row.row.step_time_s / row.best_step - 1) * 100 if row.best_step else float("inf")


def strategy_key(row: RankedRow) -> tuple[Any, ...]:
    """Identity of a strategy inside one search (ranked and Pareto lists share objects' values)."""
    st = row.strategy
    return (st.dp, st.tp, st.pp, st.vpp, st.cp, st.ep, row.etp, st.micro_batch_size, st.micro_batches,
            st.sequence_parallel, recompute_text(row), st.schedule_name, row.shard_size, round(row.step_time_s, 9),
            round(row.peak_bytes))


def build_rows(result: SearchResult) -> list[SearchRow]:
    """Ranked rows first (by step time) with the plan as opened among them (marked), then the Pareto rows that
    did not make the top K."""
    pareto_keys = {strategy_key(r) for r in result.pareto}
    best = result.ranked[0].step_time_s if result.ranked else 0.0
    current = result.current
    here = current.ranked_index if current is not None else None
    rows = [SearchRow(k + 1, r, strategy_key(r) in pareto_keys, current=k == here, best_step=best)
            for k, r in enumerate(result.ranked)]
    if current is not None and here is None:
        at = current.rank - 1 if current.rank is not None and current.rank <= len(rows) else len(rows)
        rows.insert(at, SearchRow(current.rank, current.row, strategy_key(current.row) in pareto_keys,
                                  current=True, best_step=best))
    ranked_keys = {strategy_key(r) for r in result.ranked}
    rows += [SearchRow(None, r, True, best_step=best) for r in result.pareto if strategy_key(r) not in ranked_keys]
    return rows


class SearchTableModel(QAbstractTableModel):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[SearchRow] = []
        self.step_band = True  # the step column shows its low–high band; a narrow table shows the value alone

    def set_step_band(self, shown: bool) -> None:
        """Show the step time's band in its column, or (a table too narrow for it) the value alone; the band
        stays in the cell's tooltip."""
        if shown != self.step_band:
            self.step_band = shown
            column = COLUMN_KEYS.index("step")
            self.dataChanged.emit(self.index(0, column), self.index(max(len(self.rows) - 1, 0), column),
                                  [Qt.ItemDataRole.DisplayRole])

    def set_rows(self, rows: list[SearchRow]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 — Qt's signature
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        key, _header, _tip, show, sort = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return row.row.throughput.step.text if key == "step" and not self.step_band else show(row)
        if role == SORT_ROLE:
            return sort(row)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int((Qt.AlignmentFlag.AlignRight if key in NUMERIC else Qt.AlignmentFlag.AlignHCenter)
                       | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and key == "pareto":
            return QBrush(QColor(PARETO))
        if row.current and role == Qt.ItemDataRole.FontRole:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole:  # the whole text of a cell a narrow column elides
            text = f"{translate('SearchTable', COLUMNS[index.column()][1])}: {show(row)}"
            if row.current:
                text += "\n" + translate("SearchTable", "The plan as opened, priced with its own layout and recompute")
            return text
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        _key, header, tip, _show, _sort = COLUMNS[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return translate("SearchTable", header)
        if role == Qt.ItemDataRole.ToolTipRole:
            return translate("SearchTable", tip)
        return None

    def retranslate(self) -> None:
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(COLUMNS) - 1)
        if self.rows:  # the words a cell shows (the SP column's on/off) follow the language
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.rows) - 1, len(COLUMNS) - 1),
                                  [Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole])


# ------------------------------------------------------------------------------------------ filtering
_OPS: dict[str, Callable[[Any, Any], bool]] = {"<=": operator.le, ">=": operator.ge, "!=": operator.ne,
                                               "==": operator.eq, "=": operator.eq, "<": operator.lt,
                                               ">": operator.gt}
_COND = re.compile(r"^([a-z_/%]+)\s*(<=|>=|!=|==|=|<|>)\s*([^\s]+)$")
_ALIASES = {"vs_best": "vs", "recompute": "rec", "mb": "m", "peakgib": "peak", "step_s": "step", "steps": "step",
            "tokens": "tok", "tok/s": "tok", "mfu%": "mfu", "sched": "schedule", "#": "rank"}


def parse_filter(text: str) -> tuple[list[tuple[str, Callable[[Any, Any], bool], Any]], list[str]]:
    """Conditions ``key op value`` (on the column keys) and the remaining free-text words."""
    conditions, words = [], []
    spaced = re.sub(r"\s*(<=|>=|!=|==|=|<|>)\s*", r"\1", text.strip().lower())
    for token in spaced.replace(",", " ").split():
        match = _COND.match(token)
        if not match:
            words.append(token)
            continue
        key, op, raw = match.groups()
        key = _ALIASES.get(key, key)
        if key not in COLUMN_KEYS:
            words.append(token)
            continue
        value: Any = raw
        if key in NUMERIC:
            try:
                value = float(raw)
            except ValueError:
                words.append(token)
                continue
        conditions.append((key, _OPS[op], value))
    return conditions, words


def _shown_word(key: str, value: Any) -> Any:
    """A condition's value as the column shows it: an English word of a word column in the current language."""
    if key not in WORD_COLUMNS:
        return value
    return {w: translate("SearchTable", w).lower() for w in WORD_COLUMNS[key]}.get(value, value)


class SearchFilterProxy(QSortFilterProxyModel):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.conditions: list[tuple[str, Callable[[Any, Any], bool], Any]] = []
        self.words: list[str] = []
        self.pareto_only = False

    def set_filter(self, text: str, pareto_only: bool = False) -> None:
        self.beginFilterChange()
        conditions, self.words = parse_filter(text)
        # the English word means what is shown in any language (translated once here, not per row: a language
        # change filters again through ``set_filter``)
        self.conditions = [(key, op, _shown_word(key, value)) for key, op, value in conditions]
        self.pareto_only = pareto_only
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        model = self.sourceModel()
        if not isinstance(model, SearchTableModel) or source_row >= len(model.rows):
            return True
        row = model.rows[source_row]
        if self.pareto_only and not row.pareto:
            return False
        for key, op, value in self.conditions:
            k = COLUMN_KEYS.index(key)
            have = COLUMNS[k][4](row) if key in NUMERIC else COLUMNS[k][3](row).lower()
            if key == "mfu" or key == "peak" or key == "headroom":
                have = float(COLUMNS[k][3](row).replace(",", ""))  # what is shown: mfu in %, GiB
            if not op(have, value):
                return False
        if self.words:
            text = " ".join(f"{key}={COLUMNS[k][3](row)}".lower() for k, key in enumerate(COLUMN_KEYS))
            return all(word in text for word in self.words)
        return True
