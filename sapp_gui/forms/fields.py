"""Field editors bound to canonical plan fields ("strategy.tp"), and the form base that shows, for every
field, where its value came from (tooltip), whether it was edited or derived (mark), and the validator's
message when an edit is invalid (red frame and the message under the field).

Editors commit on Enter, focus loss or an arrow step (never per keystroke), so one commit = one undo step.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from estimator.limits import bound_of
from estimator.reuse import Same
from estimator.session import PlanSession, canonical_key
from estimator.units import GiB
from estimator.warnings import Assumption

from ..document import describe
from ..language import translate

NONE_INT = -1  # spin boxes show their special-value text ("default") at the minimum


QT_INT_MAX = 2 ** 31 - 1  # a QSpinBox holds a C int


def field_maximum(key: str) -> int:
    """The largest value the estimator accepts for the integer field ``key`` (estimator/limits.py): a spin box
    for it reaches exactly that, so that no accepted value is clamped (every bound is below QT_INT_MAX)."""
    return int(min(bound_of(key, int).high, QT_INT_MAX))


class IntEditor(QSpinBox):
    """A whole number of the field ``key``, ranging from ``minimum`` to the estimator's bound for the field."""

    committed = Signal(object)

    def __init__(self, key: str, minimum: int = 1, *, optional: bool = False,
                 steps: Callable[[], list[int] | None] | None = None) -> None:
        super().__init__()
        self.key = key
        maximum = field_maximum(key)
        self.optional = optional
        self._steps = steps
        self.setKeyboardTracking(False)
        self.setAccelerated(True)
        self.setRange(minimum - 1 if optional else minimum, maximum)
        if optional:
            self.setSpecialValueText(translate("Forms", "default"))
        self.valueChanged.connect(lambda v: self.committed.emit(self.field_value()))

    def field_value(self) -> int | None:
        if self.optional and self.value() == self.minimum():
            return None
        return self.value()

    def set_field_value(self, value: Any, none_text: str = "") -> None:
        if self.optional:
            self.setSpecialValueText(none_text or translate("Forms", "default"))
        self.setValue(self.minimum() if value is None else int(value))

    def stepBy(self, steps: int) -> None:
        candidates = self._steps() if self._steps else None
        if not candidates:
            super().stepBy(steps)
            return
        value = self.value()
        for _ in range(abs(steps)):
            bigger = [c for c in candidates if c > value] if steps > 0 else [c for c in candidates if c < value]
            if not bigger:
                break
            value = min(bigger) if steps > 0 else max(bigger)
        if value != self.value():
            self.setValue(value)


class GiBEditor(QDoubleSpinBox):
    """A size in GiB (the field holds bytes); optional fields show "none" at 0."""

    committed = Signal(object)

    def __init__(self, *, optional: bool = False, maximum: float = 1e6) -> None:
        super().__init__()
        self.optional = optional
        self.setKeyboardTracking(False)
        self.setDecimals(2)
        self.setRange(0.0, maximum)
        self.setSuffix(" GiB")
        self.setSingleStep(1.0)
        if optional:
            self.setSpecialValueText(translate("Forms", "none"))
        self.valueChanged.connect(lambda v: self.committed.emit(self.field_value()))

    def field_value(self) -> float | None:
        if self.optional and self.value() == 0.0:
            return None
        return self.value() * GiB

    def set_field_value(self, value: Any, none_text: str = "") -> None:
        if self.optional:
            self.setSpecialValueText(translate("Forms", "none") if not none_text or none_text == "default"
                                     else none_text)
        self.setValue(0.0 if value is None else float(value) / GiB)


class ChoiceEditor(QComboBox):
    """A combo box over Python values. The values live in a Python list, never in Qt item data: PySide6 6.12
    drops a reference to None each time an invalid QVariant comes back as None (itemData/currentData), which
    crashes Python 3.11 after enough calls."""

    committed = Signal(object)

    def __init__(self, choices: list[tuple[str, Any]], context: str = "") -> None:
        super().__init__()
        self.context = context  # labels are translated in this context when set (QT_TRANSLATE_NOOP sources)
        # long labels must not widen the form beyond its dock: the popup still shows them in full
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(8)
        self._values: list[Any] = []
        self._labels: list[str] = []
        self.set_choices(choices)
        self.activated.connect(lambda i: self.committed.emit(self.value_at(i)))

    def set_choices(self, choices: list[tuple[str, Any]]) -> None:
        current = self.field_value()
        self.blockSignals(True)
        self.clear()
        self._values, self._labels = [], []
        for label, value in choices:
            self._append(label, value)
        index = self.find_value(current) if current is not None else -1
        if index >= 0:
            self.setCurrentIndex(index)
        self.blockSignals(False)

    def _append(self, label: str, value: Any) -> None:
        self._values.append(value)
        self._labels.append(label)
        self.addItem(self._shown_label(label))

    def _shown_label(self, label: str) -> str:
        return translate(self.context, label) if self.context else label

    def retranslate(self) -> None:
        for i, label in enumerate(self._labels):
            self.setItemText(i, self._shown_label(label))

    def value_at(self, index: int) -> Any:
        return self._values[index] if 0 <= index < len(self._values) else None

    def values(self) -> list[Any]:
        return list(self._values)

    def find_value(self, value: Any) -> int:
        return next((i for i, v in enumerate(self._values) if _same(v, value)), -1)

    def field_value(self) -> Any:
        return self.value_at(self.currentIndex())

    def set_field_value(self, value: Any, none_text: str | None = None) -> None:
        index = self.find_value(value)
        if index < 0:
            self._append(_show(value), value)
            index = len(self._values) - 1
        if value is None and none_text and none_text != translate("Forms", "default"):
            self.setItemText(index, none_text)  # "default (4 B)": what the default resolves to
        elif value is None:
            self.setItemText(index, self._shown_label(self._labels[index]))
        self.setCurrentIndex(index)


class BoolEditor(QCheckBox):
    committed = Signal(object)

    def __init__(self, text: str = "", context: str = "") -> None:
        super().__init__(translate(context, text) if context and text else text)
        self.source_text, self.context = text, context
        self.toggled.connect(lambda on: self.committed.emit(bool(on)))

    def retranslate(self) -> None:
        if self.context and self.source_text:
            self.setText(translate(self.context, self.source_text))

    def field_value(self) -> bool:
        return self.isChecked()

    def set_field_value(self, value: Any, none_text: str = "") -> None:
        self.setChecked(bool(value))


class CountsEditor(QLineEdit):
    """Per-stage counts as text: ``3, 4, 4, 0`` (one per stage), ``4`` (every stage) or empty (none)."""

    committed = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.setPlaceholderText(translate("Forms", "e.g. 4 or 3, 4, 4, 0"))
        self._shown = ""
        self.editingFinished.connect(self._finish)

    def _finish(self) -> None:
        if self.text().strip() == self._shown.strip():
            return
        self.committed.emit(self.field_value())

    def field_value(self) -> Any:
        text = self.text().strip().strip("[]")
        if not text:
            return None
        parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
        try:
            numbers = [int(p) for p in parts]
        except ValueError:
            return text  # the estimator's coercion reports the error on the field
        return numbers[0] if len(numbers) == 1 and "," not in text else numbers

    def set_field_value(self, value: Any, none_text: str = "") -> None:
        self._shown = _show(value) if value is not None else ""
        self.setText(self._shown)
        self.setCursorPosition(0)


class TextEditor(QLineEdit):
    committed = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self._shown = ""
        self.editingFinished.connect(self._finish)

    def _finish(self) -> None:
        if self.text() != self._shown:
            self.committed.emit(self.text())

    def field_value(self) -> str:
        return self.text()

    def set_field_value(self, value: Any, none_text: str = "") -> None:
        self._shown = "" if value is None else str(value)
        self.setText(self._shown)
        self.setCursorPosition(0)


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps None, booleans and numbers apart (True == 1.0 in Python)."""
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _show(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return ", ".join(_show(v) if not isinstance(v, (tuple, list)) else "[" + _show(v) + "]" for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def _repolish(widget: QWidget) -> None:
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)
    widget.update()


class FieldRow:
    """One field: label, editor and the error line under it. ``label`` and ``help_text`` are source texts
    (marked with QT_TRANSLATE_NOOP in ``context``), translated whenever they are shown."""

    def __init__(self, key: str, label: str, editor: QWidget, help_text: str = "",
                 to_changes: Callable[[Any], dict[str, Any]] | None = None,
                 read_value: Callable[[PlanSession], Any] | None = None, context: str = "Forms") -> None:
        self.key, self.editor = key, editor
        self.label_source, self.help_source, self.context = label, help_text, context
        self.to_changes = to_changes or (lambda value: {key: value})
        self.read_value = read_value or (lambda doc: doc.value(key))
        label = self.label_text
        self.label = QLabel(label)
        self.label.setBuddy(editor)
        self.error = QLabel()
        self.error.setProperty("sappRole", "fieldError")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.setTextFormat(Qt.TextFormat.PlainText)  # messages quote values from the file
        self.container = QWidget()
        box = QVBoxLayout(self.container)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(1)
        box.addWidget(editor)
        box.addWidget(self.error)
        editor.setAccessibleName(label.replace("&", ""))
        editor.setProperty("sappInvalid", False)
        self.mark: str | None = None
        self._shown: tuple[Any, str] | None = None
        self._tip = ""
        self._inputs: tuple[Any, ...] | None = None  # what the last refresh showed the row from

    @property
    def label_text(self) -> str:
        return translate(self.context, self.label_source) if self.label_source else ""

    @property
    def help(self) -> str:
        return translate(self.context, self.help_source) if self.help_source else ""

    def retranslate(self) -> None:
        """Labels and tooltips again (the next ``refresh`` redraws them)."""
        self.label.setText(self.label_text)
        self.editor.setAccessibleName(self.label_text.replace("&", ""))
        self.mark = "?"  # forces the label (with its mark) to be set again
        self._shown = None
        self._tip = ""
        self._inputs = None
        if hasattr(self.editor, "retranslate"):
            self.editor.retranslate()  # type: ignore[attr-defined]

    def refresh(self, doc: PlanSession, assumptions: dict[str, Assumption]) -> None:
        """Show the document's value, mark and provenance; widgets are touched only where something changed
        (repolishing every editor on every edit would dominate the edit → chart latency). A row whose inputs
        are those of its last refresh — value, mark, provenance, assumption, the document's files, no error
        shown — is left as it is: an edit changes a few of a form's ~70 fields."""
        value = self.read_value(doc)
        inputs = self._inputs_of(doc, value, assumptions)
        if inputs == self._inputs and not self.error.text():
            return
        self._inputs = inputs
        none_text = translate("Forms", "default")
        if value is None and self.key in assumptions:
            unit = " B" if self.key.endswith("_bytes") else ""
            none_text = translate("Forms", "default ({0})").format(f"{_show(assumptions[self.key].value)}{unit}")
        if (value, none_text) != self._shown or self.error.text():
            self.editor.blockSignals(True)
            try:
                self.editor.set_field_value(value, none_text)  # type: ignore[attr-defined]
            finally:
                self.editor.blockSignals(False)
            self._shown = (value, none_text)
        mark = doc.mark(self.key)
        if mark != self.mark:
            self.mark = mark
            self.label.setText(("● " if mark == "edited" else "◆ " if mark == "derived" else "") + self.label_text)
            font = self.label.font()
            font.setBold(mark is not None)
            self.label.setFont(font)
            self.editor.setProperty("sappEdited", mark == "edited")
            self.editor.setProperty("sappDerived", mark == "derived")
            _repolish(self.editor)
        text = self.label_text.replace("&", "")
        tip = f"<b>{text}</b> <span style='color:#666'>({self.key})</span>"
        if self.help:
            tip += f"<br>{self.help}"
        value_from = translate("Forms", "Value from:")
        tip += f"<br><i>{value_from}</i> {html.escape(describe(doc, self.key, assumptions))}"  # file text
        if self.error.text():
            tip += f"<br><span style='color:#B8420A'>{html.escape(self.error.text())}</span>"
        if tip != self._tip:
            self._tip = tip
            self.editor.setToolTip(tip)
            self.label.setToolTip(tip)

    def _inputs_of(self, doc: PlanSession, value: Any, assumptions: dict[str, Assumption]) -> tuple[Any, ...]:
        """Everything ``refresh`` shows the row from (``describe`` included), compared by value and type."""
        prov = doc.parsed.provenance.get(canonical_key(self.key))
        hardware = doc.parsed.hardware.id or doc.parsed.hardware.name if self.key.startswith("hardware.") else None
        return (type(value), value, doc.mark(self.key), prov.describe() if prov is not None else None,
                assumptions.get(self.key), hardware, Same(doc.original))

    def set_error(self, message: str | None) -> None:
        message = message or ""
        if message == self.error.text():
            return
        self.error.setText(message)
        self.error.setVisible(bool(message))
        self.editor.setProperty("sappInvalid", bool(message))
        _repolish(self.editor)
        self._shown = None  # the editor may show a rejected value: show the document's again next refresh
        self._inputs = None


class FieldForm(QWidget):
    """A QFormLayout of FieldRows; emits ``edited(changes)`` with canonical keys."""

    edited = Signal(dict, str)  # changes, description for the undo stack

    def __init__(self, doc: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.rows: dict[str, FieldRow] = {}
        self.layout_ = QFormLayout(self)
        self.layout_.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # a narrow panel (a 1024-px window) puts a field under its label rather than past the panel's edge
        self.layout_.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.layout_.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        self.layout_.setContentsMargins(6, 6, 6, 6)
        self.layout_.setVerticalSpacing(4)

    def add_field(self, row: FieldRow) -> FieldRow:
        self.rows[row.key] = row
        self.layout_.addRow(row.label, row.container)
        row.editor.committed.connect(lambda value, r=row: self._commit(r, value))  # type: ignore[attr-defined]
        return row

    def _commit(self, row: FieldRow, value: Any) -> None:
        if not self.doc.loaded:
            return
        if value == row.read_value(self.doc) and not row.error.isVisible():
            return
        shown = _show(value) if not isinstance(value, float) or row.key not in _SIZE_KEYS else f"{value / GiB:.2f} GiB"
        shown = shown or translate("Forms", "default")
        self.edited.emit(row.to_changes(value), f"{row.label_text.replace('&', '')} → {shown}")

    def refresh(self, assumptions: dict[str, Assumption]) -> None:
        for row in self.rows.values():
            row.refresh(self.doc, assumptions)

    def retranslate(self, assumptions: dict[str, Assumption]) -> None:
        for row in self.rows.values():
            row.retranslate()
        if self.doc.loaded:
            self.refresh(assumptions)

    def set_errors(self, errors: dict[str, str]) -> None:
        for key, row in self.rows.items():
            row.set_error(errors.get(key))

    def row(self, key: str) -> FieldRow:
        return self.rows[key]


_SIZE_KEYS = {"hardware.capacity", "options.reserve", "options.margin", "options.max_device_memory"}
