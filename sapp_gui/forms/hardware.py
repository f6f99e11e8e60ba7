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
from ..language import translate
from ..presets import save_preset, user_preset_ids
from ..style import QT_TRANSLATE_NOOP
from .fields import ChoiceEditor, FieldForm, FieldRow, GiBEditor


class HardwareForm(FieldForm):
    preset_saved = Signal(str)  # id of the new user preset

    def __init__(self, doc: Document, presets_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(doc, parent)
        self.setObjectName("hardwareForm")
        self.presets_dir = presets_dir
        self.device = ChoiceEditor([])
        self.device.setObjectName("device")
        ctx = "HardwareForm"
        self.add_field(FieldRow("hardware.device", QT_TRANSLATE_NOOP("HardwareForm", "De&vice"), self.device,
                                QT_TRANSLATE_NOOP("HardwareForm", "device preset: capacity, interconnect and rates"),
                                context=ctx))
        capacity = GiBEditor()
        capacity.setObjectName("capacity")
        self.add_field(FieldRow("hardware.capacity", QT_TRANSLATE_NOOP("HardwareForm", "&Capacity"), capacity,
                                QT_TRANSLATE_NOOP("HardwareForm", "device memory"), context=ctx))
        reserve = GiBEditor()
        reserve.setSingleStep(0.25)
        reserve.setObjectName("reserve")
        self.add_field(FieldRow("options.reserve", QT_TRANSLATE_NOOP("HardwareForm", "&Reserve"), reserve,
                                QT_TRANSLATE_NOOP("HardwareForm", "fixed per-device reserve (runtime, allocator)"),
                                context=ctx))
        margin = GiBEditor()
        margin.setSingleStep(0.5)
        margin.setObjectName("margin")
        self.add_field(FieldRow("options.margin", QT_TRANSLATE_NOOP("HardwareForm", "&Margin"), margin,
                                QT_TRANSLATE_NOOP("HardwareForm", "safety margin taken off the budget"), context=ctx))
        limit = GiBEditor(optional=True)
        limit.setObjectName("max_device_memory")
        self.add_field(FieldRow("options.max_device_memory", QT_TRANSLATE_NOOP("HardwareForm", "Framework limit"),
                                limit, QT_TRANSLATE_NOOP("HardwareForm", "the framework's own memory limit (e.g. "
                                                                         "MindFormers max_device_memory)"),
                                context=ctx))
        self.budget_label = QLabel("–")
        self.budget_label.setObjectName("budget")
        self.budget_caption = QLabel()
        self.layout_.addRow(self.budget_caption, self.budget_label)
        save_box = QWidget()
        row = QHBoxLayout(save_box)
        row.setContentsMargins(0, 0, 0, 0)
        self.preset_name = QLineEdit()
        self.preset_name.setObjectName("preset_name")
        self.save_button = QPushButton()
        self.save_button.setObjectName("save_preset")
        self.save_button.clicked.connect(self.save_current_as_preset)
        self.preset_name.returnPressed.connect(self.save_current_as_preset)
        row.addWidget(self.preset_name, 1)
        row.addWidget(self.save_button)
        self.preset_caption = QLabel()
        self.layout_.addRow(self.preset_caption, save_box)
        self.save_status = QLabel("")
        self.save_status.setWordWrap(True)
        self.save_status.setProperty("sappRole", "note")
        self.layout_.addRow("", self.save_status)
        self._result: Result | None = None
        self.retranslate_static()

    def retranslate_static(self) -> None:
        self.preset_name.setPlaceholderText(translate("HardwareForm", "name, e.g. A2-62G"))
        self.preset_name.setAccessibleName(translate("HardwareForm", "New preset name"))
        self.save_button.setText(translate("HardwareForm", "Save &preset"))
        self.save_button.setToolTip(translate("HardwareForm", "Save the current device and capacity as a user preset "
                                                              "in "
                                                      "{0}").format(self.presets_dir))
        self.budget_caption.setText(translate("HardwareForm", "Budget:"))
        self.preset_caption.setText(translate("HardwareForm", "New preset:"))

    def retranslate(self, assumptions: dict[str, Assumption]) -> None:
        self.retranslate_static()
        self.refresh_presets()
        super().retranslate(assumptions)
        self.set_result(self._result)

    def refresh_presets(self) -> None:
        user = user_preset_ids(self.presets_dir)
        choices = []
        for preset in self.doc.presets():
            tag = "  " + translate("HardwareForm", "(user)") if (preset.id or "").lower() in user else ""
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
        self._result = result
        if result is None:
            self.budget_label.setText("–")
            return
        self.budget_label.setText(translate("HardwareForm", "{0} GiB of {1} GiB capacity").format(
            f"{result.budget / GiB:,.2f}", f"{result.capacity / GiB:,.2f}"))

    def save_current_as_preset(self) -> Path | None:
        name = self.preset_name.text().strip()
        if not self.doc.loaded:
            return None
        if not name:
            self.save_status.setText(translate("HardwareForm", "Type a name for the preset first."))
            return None
        try:
            path = save_preset(self.presets_dir, self.doc.parsed.hardware, name,
                               f"{name} (from {self.doc.parsed.hardware.name})")
        except (SappError, OSError) as exc:
            self.save_status.setText(translate("HardwareForm", "Not saved: {0}").format(exc))
            return None
        self.save_status.setText(translate("HardwareForm", "Saved {0}").format(path))
        self.preset_name.clear()
        self.refresh_presets()
        self.preset_saved.emit(name)
        return path
