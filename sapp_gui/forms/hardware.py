"""Hardware: device preset (shipped and user presets), capacity, reserve, margin and the framework's memory
limit, the resulting budget, and "save as user preset"."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from estimator.errors import SappError
from estimator.result import Result
from estimator.units import GiB
from estimator.warnings import Assumption

from ..document import Document
from ..presets import save_preset, user_preset_ids
from .fields import ChoiceEditor, FieldForm, FieldRow, GiBEditor


class HardwareForm(FieldForm):
    preset_saved = Signal(str)  # id of the new user preset

    def __init__(self, doc: Document, presets_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(doc, parent)
        self.setObjectName("hardwareForm")
        self.presets_dir = presets_dir
        self.device = ChoiceEditor([])
        self.device.setObjectName("device")
        self.add_field(FieldRow("hardware.device", "De&vice", self.device,
                                "device preset: capacity, interconnect and rates"))
        capacity = GiBEditor()
        capacity.setObjectName("capacity")
        self.add_field(FieldRow("hardware.capacity", "&Capacity", capacity, "device memory"))
        reserve = GiBEditor()
        reserve.setSingleStep(0.25)
        reserve.setObjectName("reserve")
        self.add_field(FieldRow("options.reserve", "&Reserve", reserve,
                                "fixed per-device reserve (runtime, allocator)"))
        margin = GiBEditor()
        margin.setSingleStep(0.5)
        margin.setObjectName("margin")
        self.add_field(FieldRow("options.margin", "&Margin", margin, "safety margin taken off the budget"))
        limit = GiBEditor(optional=True)
        limit.setObjectName("max_device_memory")
        self.add_field(FieldRow("options.max_device_memory", "Framework limit", limit,
                                "the framework's own memory limit (e.g. MindFormers max_device_memory)"))
        self.budget_label = QLabel("–")
        self.budget_label.setObjectName("budget")
        self.layout_.addRow("Budget:", self.budget_label)
        save_box = QWidget()
        row = QHBoxLayout(save_box)
        row.setContentsMargins(0, 0, 0, 0)
        self.preset_name = QLineEdit()
        self.preset_name.setObjectName("preset_name")
        self.preset_name.setPlaceholderText("name, e.g. A2-62G")
        self.preset_name.setAccessibleName("New preset name")
        self.save_button = QPushButton("Save &preset")
        self.save_button.setObjectName("save_preset")
        self.save_button.setToolTip(f"Save the current device and capacity as a user preset in {presets_dir}")
        self.save_button.clicked.connect(self.save_current_as_preset)
        self.preset_name.returnPressed.connect(self.save_current_as_preset)
        row.addWidget(self.preset_name, 1)
        row.addWidget(self.save_button)
        self.layout_.addRow("New preset:", save_box)
        self.save_status = QLabel("")
        self.save_status.setWordWrap(True)
        self.save_status.setProperty("sappRole", "note")
        self.layout_.addRow("", self.save_status)

    def refresh_presets(self) -> None:
        user = user_preset_ids(self.presets_dir)
        choices = []
        for preset in self.doc.presets():
            tag = "  (user)" if (preset.id or "").lower() in user else ""
            choices.append((f"{preset.id} — {preset.name}{tag}", preset.id))
        if self.doc.loaded:
            hw = self.doc.parsed.hardware
            if hw.id not in [c[1] for c in choices]:
                choices.append((f"{hw.id or hw.name} — {hw.name}", hw.id or hw.name))
        self.device.set_choices(choices)

    def refresh(self, assumptions: dict[str, Assumption]) -> None:
        if self.device.count() == 0:
            self.refresh_presets()
        super().refresh(assumptions)

    def set_result(self, result: Result | None) -> None:
        if result is None:
            self.budget_label.setText("–")
            return
        self.budget_label.setText(f"{result.budget / GiB:,.2f} GiB of {result.capacity / GiB:,.2f} GiB capacity")

    def save_current_as_preset(self) -> Path | None:
        name = self.preset_name.text().strip()
        if not self.doc.loaded:
            return None
        if not name:
            self.save_status.setText("Type a name for the preset first.")
            return None
        try:
            path = save_preset(self.presets_dir, self.doc.parsed.hardware, name,
                               f"{name} (from {self.doc.parsed.hardware.name})")
        except (SappError, OSError) as exc:
            self.save_status.setText(f"Not saved: {exc}")
            return None
        self.save_status.setText(f"Saved {path}")
        self.preset_name.clear()
        self.refresh_presets()
        self.preset_saved.emit(name)
        return path
