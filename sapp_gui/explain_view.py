"""The Explain panel: the trace of the selected bar segment — its formula, the values substituted, and the
children it sums or maximises over (estimator ``Quantity`` trees)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QGuiApplication
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from estimator.explain import Quantity
from estimator.result import CATEGORIES, StageResult
from estimator.units import fmt_bytes

from .language import category_label, current, translate

MAX_DEPTH = 8


def find_trace(total: Quantity, category: str, stage: StageResult, row: int | None) -> tuple[Quantity, str]:
    """The trace to show for a selected segment, and a note when it is a coarser one than asked for: the
    layer's leaf, else the category's node, else the node the category is folded into (FSDP2 prices
    gradients, activations, buffers and working together as a maximum over instants), else the stage. A device
    row that shares its category with another (async TP's symmetric memory beside the communication library) is
    its own node of the stage trace."""
    kind = stage.layers[row].kind if row is not None and 0 <= row < len(stage.layers) else None
    own = category_node(total, kind) if kind is not None and kind != category else None
    if own is not None:
        return own, ""
    node = category_node(total, category)
    if node is not None:
        if row is None:
            return node, ""
        leaf = layer_node(total, category, stage, row)
        if leaf is not None:
            return leaf, ""
        return node, translate("Explain", "no per-layer trace for this category: the stage's value is shown")
    folded = next((c for c in total.children if c.op == "max" or "dynamic" in c.label), None)
    if folded is not None:
        return folded, translate("Explain", "{0} is priced inside this maximum").format(category_label(category))
    return total, translate("Explain", "{0} has no separate trace: the stage total is shown").format(
        category_label(category))


def category_node(total: Quantity, category: str) -> Quantity | None:
    """The child of a stage trace (``stage i total``) for one of the categories."""
    return next((c for c in total.children if c.label == category), None)


def layer_node(total: Quantity, category: str, stage: StageResult, row_index: int) -> Quantity | None:
    """The leaf of ``category`` for row ``row_index`` of the stage's per-layer table: the category node has
    one child per row whose value in that category is not zero, in row order."""
    node = category_node(total, category)
    if node is None:
        return None
    k = CATEGORIES.index(category)
    nonzero = [i for i, row in enumerate(stage.layers) if row.bytes[k]]
    if row_index not in nonzero:
        return None
    position = nonzero.index(row_index)
    return node.children[position] if position < len(node.children) else None


def format_value(q: Quantity) -> str:
    if q.unit == "B":
        return fmt_bytes(q.value)
    unit = translate("Explain", "elements") if q.unit == "elements" else q.unit
    return f"{q.number()} {unit}"


class ExplainView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("explainView")
        self.heading = QLabel(translate("Explain", "Select a bar segment to see how its number is computed."))
        self.heading.setWordWrap(True)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(2)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.formula = QLabel()
        self.formula.setWordWrap(True)
        self.formula.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        mono.setPointSizeF(self.font().pointSizeF() * 0.92)
        self.formula.setFont(mono)
        self.copy_button = QPushButton()
        self.copy_button.setEnabled(False)
        self.copy_button.clicked.connect(self.copy)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.heading)
        layout.addWidget(self.formula)
        layout.addWidget(self.tree, 1)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.copy_button)
        layout.addLayout(row)
        self.quantity: Quantity | None = None
        self.tree.currentItemChanged.connect(self._on_current)
        self._quantities: list[Quantity] = []
        self.retranslate()

    def retranslate(self) -> None:
        self.tree.setHeaderLabels([translate("Explain", "Quantity"), translate("Explain", "Value")])
        self.tree.setAccessibleName(translate("Explain", "Explain trace"))
        self.copy_button.setText(translate("Explain", "Copy as text"))

    def show_message(self, text: str) -> None:
        self.quantity = None
        self.heading.setText(text)
        self.formula.clear()
        self.tree.clear()
        self._quantities.clear()
        self.copy_button.setEnabled(False)

    def show_quantity(self, quantity: Quantity, title: str) -> None:
        self.quantity = quantity
        self.heading.setText(f"<b>{title}</b> = {format_value(quantity)}")
        self.tree.clear()
        self._quantities.clear()
        root = self._add(None, quantity, 0)
        self.tree.addTopLevelItem(root)
        root.setExpanded(True)
        for i in range(root.childCount()):
            if root.childCount() <= 12:
                root.child(i).setExpanded(True)
        self.tree.setCurrentItem(root)
        self._describe(quantity)
        self.copy_button.setEnabled(True)

    def _add(self, parent: QTreeWidgetItem | None, q: Quantity, depth: int) -> QTreeWidgetItem:
        label, note = q.localized("label", current()), q.localized("note", current())
        item = QTreeWidgetItem([label, format_value(q)])
        tip = [label + (f"  ({note})" if note else "")]
        if q.op == "formula" and q.template:
            tip += [f"= {q.template}", f"= {q.substituted()}"] if q.substituted() != q.template else [f"= {q.template}"]
        elif q.op in ("sum", "max"):
            tip.append(translate("Explain", "sum of the rows below") if q.op == "sum"
                       else translate("Explain", "largest of the rows below"))
        item.setToolTip(0, "\n".join(tip))
        item.setToolTip(1, "\n".join(tip))
        item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        item.setData(0, Qt.ItemDataRole.UserRole, len(self._quantities))
        self._quantities.append(q)
        if depth < MAX_DEPTH:
            for child in q.children:
                item.addChild(self._add(item, child, depth + 1))
        return item

    def _on_current(self, current: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None) -> None:
        index = current.data(0, Qt.ItemDataRole.UserRole) if current is not None else None
        if isinstance(index, int) and 0 <= index < len(self._quantities):
            self._describe(self._quantities[index])

    def _describe(self, q: Quantity) -> None:
        note = q.localized("note", current())
        lines = [f"{q.localized('label', current())} = {format_value(q)}" +
                 (f"   [{q.formula_id}]" if q.formula_id else "")]
        if note and q.op == "formula":
            lines.append(f"  ({note})")
        if q.template and q.op == "formula":
            lines.append(f"  = {q.template}")
            sub = q.substituted()
            if sub and sub != q.template:
                lines.append(f"  = {sub}")
        elif q.op in ("sum", "max") and q.children:
            text = translate("Explain", "sum of {0} children") if q.op == "sum" else \
                translate("Explain", "maximum of {0} children")
            lines.append("  = " + text.format(len(q.children)) + (f" ({note})" if note else ""))
        self.formula.setText("\n".join(lines))

    def text(self) -> str:
        """The trace as indented text (what Copy puts on the clipboard)."""
        if self.quantity is None:
            return self.heading.text()
        return self.quantity.render(max_depth=MAX_DEPTH, language=current())

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text())
