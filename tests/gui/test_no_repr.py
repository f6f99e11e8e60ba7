"""Issue 12: Python reprs never reach the user ("in flight (2,)", "['full', 'none']", "None", object reprs).
Every text the window shows — labels, buttons, fields, tooltips, lists, trees, tables, the charts' legends and
the Explain tree — is read after opening plans with per-stage lists and interleaving, editing, pinning,
searching and comparing, and none may look like a repr."""

from __future__ import annotations

import html
import re

from gui_helpers import DSV3_PLAN, MF_QWEN3, edit_and_wait, open_and_wait, run_search
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QLabel,
    QLineEdit,
    QTreeWidget,
    QWidget,
)

REPR = [
    re.compile(r"\(\d+,\)"),                       # a one-element tuple
    re.compile(r"\((-?\d+(\.\d+)?, )+-?\d+(\.\d+)?\)"),  # a tuple of numbers
    re.compile(r"\[\s*'[^']*'(, '[^']*')*\]"),        # a list of strings
    re.compile(r"\bNone\b"),
    re.compile(r"<[\w.]+ object at 0x"),
    re.compile(r"\b(np\.float64|array\(|dict_keys|Decimal\()"),
    re.compile(r"\b[A-Z][A-Za-z]+\((\w+=)"),           # a dataclass repr: Strategy(seq_length=…
]


def _texts(root: QWidget) -> list[tuple[str, str]]:
    """(where, text) for every text a user can read in ``root``."""
    out: list[tuple[str, str]] = []
    for w in [root, *root.findChildren(QWidget)]:
        name = w.objectName() or type(w).__name__
        if w.toolTip():
            out.append((f"{name} tooltip", w.toolTip()))
        if isinstance(w, (QLabel, QAbstractButton, QLineEdit)):
            out.append((name, w.text()))
        elif isinstance(w, QComboBox):
            out.extend((name, w.itemText(i)) for i in range(w.count()))
        if isinstance(w, QTreeWidget):
            stack = [w.topLevelItem(i) for i in range(w.topLevelItemCount())]
            while stack:
                item = stack.pop()
                out.extend((name, item.text(c)) for c in range(item.columnCount()))
                out.extend((f"{name} tooltip", item.toolTip(c)) for c in range(item.columnCount()))
                stack.extend(item.child(i) for i in range(item.childCount()))
        elif isinstance(w, QAbstractItemView) and w.model() is not None:
            model = w.model()
            try:
                columns, rows = model.columnCount(QModelIndex()), model.rowCount(QModelIndex())
            except TypeError:  # a list widget's model: one column
                columns, rows = 1, model.rowCount()
            for r in range(min(rows, 200)):
                for c in range(columns):
                    index = model.index(r, c)
                    for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                        value = model.data(index, role)
                        if value is not None:
                            out.append((name, str(value)))
            for c in range(columns):
                value = model.headerData(c, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole)
                if value is not None:
                    out.append((f"{name} header", str(value)))
    return out


QUOTED = re.compile(r"(?<![A-Za-z])'[\w.-]+'(?![A-Za-z])")  # a quoted string: 'selective' (outside HTML tags)


def _looks_like_repr(text: str) -> bool:
    return any(p.search(text) for p in REPR) or bool(QUOTED.search(html.unescape(re.sub(r"<[^>]*>", " ", text))))


def _reprs(root: QWidget) -> list[tuple[str, str]]:
    return [(where, text) for where, text in _texts(root) if _looks_like_repr(text)]


def test_no_python_repr_reaches_the_user(qtbot, window, tmp_path) -> None:
    import shutil

    dsv3 = tmp_path / DSV3_PLAN.name
    shutil.copy(DSV3_PLAN, dsv3)
    open_and_wait(qtbot, window, [MF_QWEN3])  # interleaved (vpp 2): per-layer labels, chunk names
    # the Explain tree of a stage's segments
    for category in ("activations", "parameters", "optimizer_states", "communication_buffers"):
        window.selection._on_stage_segment(0, category)
        qtbot.waitUntil(lambda: window.explain.tree.topLevelItemCount() > 0, timeout=20000)
        found = _reprs(window)
        assert found == [], found[:10]
    open_and_wait(qtbot, window, [dsv3])  # per-stage offsets and recompute lists
    window.pin_baseline()
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.pp": 8}))  # the lists rescaled (notes)
    edit_and_wait(qtbot, window, lambda: window.edit({"hardware.device": "A3"}))  # "the file gives A2"
    run_search(qtbot, window, {"tp": ("list", "2,4"), "pp": ("list", "8,16"), "rec": "fixed"})
    assert window.compare_current()
    assert window.compare_pinned()
    compare = window.workspace_tabs.compare
    qtbot.waitUntil(lambda: not compare.pending, timeout=30000)
    window.show_tab("compare")
    found = _reprs(window)
    assert found == [], found[:10]
