"""The left-hand forms (Parallelism, Memory, Features, Hardware, Model) as one tabbed panel: a view of the plan session
(``on_session``) that emits ``edited`` when the user changes a field."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QScrollArea, QTabWidget, QWidget

from estimator.result import Result
from estimator.session import PlanSession, SessionEvent
from estimator.session.events import (
    CHANGED,
    CLOSED,
    ESTIMATE_FAILED,
    ESTIMATED,
    HOLD,
    OPENED,
    REJECTED,
)
from estimator.warnings import Assumption

from ..language import current, translate
from .features import FeaturesForm
from .fields import FieldForm, FieldRow
from .hardware import HardwareForm
from .memory import MemoryForm
from .model import ModelForm
from .parallel import ParallelForm


class FormsPanel(QTabWidget):
    edited = Signal(dict, str)  # changes, undo text

    def __init__(self, doc: PlanSession, presets_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("forms")
        self.doc = doc
        self.parallel = ParallelForm(doc)
        self.memory = MemoryForm(doc)
        self.features = FeaturesForm(doc)
        self.hardware = HardwareForm(doc, presets_dir)
        self.model = ModelForm(doc)
        self.forms: tuple[FieldForm, ...] = (self.parallel, self.memory, self.features, self.hardware, self.model)
        for form in self.forms:
            scroll = QScrollArea()
            scroll.setWidget(form)
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)  # a narrow panel scrolls
            self.addTab(scroll, "")
            form.edited.connect(self.edited)
        self.setEnabled(False)
        self.assumptions: dict[str, Assumption] = {}  # defaults the estimator filled in, for "default (…)"
        self._tab_titles()

    def on_session(self, event: SessionEvent) -> None:
        """Values, marks and errors of the plan in the forms."""
        session = event.session
        kind = event.kind
        if kind in (OPENED, CLOSED):
            self.assumptions = {}
            if kind == OPENED:
                self.hardware.refresh_presets()
            self.refresh(self.assumptions)
            self.set_errors({})
        elif kind in (CHANGED, HOLD):
            self.refresh(self.assumptions)
            self.set_errors({})
        elif kind == REJECTED:
            self.set_errors(_errors_of(event.error))
        elif kind == ESTIMATE_FAILED and event.error is not None:
            self.set_errors(session.error_fields(event.error, list(session.state.touched), current()))
        elif kind == ESTIMATED and session.shown is not None:
            shown = session.shown
            self.set_result(shown.result)
            self.set_errors(_errors_of(session.rejected))
            assumptions = {a.field: a for a in (*shown.parsed.assumptions, *shown.result.assumptions)}
            if assumptions != self.assumptions:
                self.assumptions = assumptions
                self.refresh(assumptions)

    def _tab_titles(self) -> None:
        for i, title in enumerate((translate("Forms", "&Parallel"), translate("Forms", "&Memory"),
                                   translate("Forms", "&Features"), translate("Forms", "&Hardware"),
                                   translate("Forms", "Mo&del"))):
            self.setTabText(i, title)

    def retranslate(self, assumptions: dict[str, Assumption]) -> None:
        self._tab_titles()
        for form in self.forms:
            form.retranslate(assumptions)

    def refresh(self, assumptions: dict[str, Assumption]) -> None:
        self.setEnabled(self.doc.loaded)
        if not self.doc.loaded:
            return
        for form in self.forms:
            form.refresh(assumptions)

    def set_errors(self, errors: dict[str, str]) -> None:
        for form in self.forms:
            form.set_errors(errors)

    def set_result(self, result: Result | None) -> None:
        self.hardware.set_result(result)

    def row(self, key: str) -> FieldRow:
        for form in self.forms:
            if key in form.rows:
                return form.rows[key]
        raise KeyError(key)

    def show_field(self, key: str) -> None:
        """Bring the tab holding ``key`` to the front and focus its editor."""
        for index, form in enumerate(self.forms):
            if key in form.rows:
                self.setCurrentIndex(index)
                form.rows[key].editor.setFocus()
                return

    def error_keys(self) -> list[str]:
        return [k for form in self.forms for k, row in form.rows.items() if row.error.isVisible()
                or bool(row.error.text())]


def _errors_of(error: BaseException | None) -> dict[str, str]:
    """The per-field messages of a refused edit, in the interface language."""
    errors_in = getattr(error, "errors_in", None)
    return errors_in(current()) if errors_in is not None else getattr(error, "errors", {})


__all__ = ["FieldRow", "FormsPanel"]
