"""Hardware: device preset (shipped and user presets), capacity, reserve, margin and the framework's memory
limit, the resulting budget, and "save as user preset"."""

from __future__ import annotations

import html
import math
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from estimator.errors import SappError
from estimator.hardware import Hardware, runtime_of
from estimator.hardware_figures import Figure, device_figures
from estimator.result import Result
from estimator.session import PlanSession
from estimator.units import GiB
from estimator.warnings import Assumption

from ..language import translate
from ..presets import save_preset, user_preset_ids
from ..style import QT_TRANSLATE_NOOP
from .fields import ChoiceEditor, FieldForm, FieldRow, GiBEditor


class HardwareForm(FieldForm):
    preset_saved = Signal(str)  # id of the new user preset

    def __init__(self, doc: PlanSession, presets_dir: Path, parent: QWidget | None = None) -> None:
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
        # every device figure with its source (vendor document, public measurement, provisional, ...)
        self.figures_caption = QLabel()
        self.figures_label = QLabel("–")
        self.figures_label.setObjectName("device_figures")
        self.figures_label.setWordWrap(True)
        self.figures_label.setTextFormat(Qt.TextFormat.RichText)
        self.figures_label.setOpenExternalLinks(True)
        self.figures_label.setProperty("sappRole", "note")
        self.layout_.addRow(self.figures_caption, self.figures_label)
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
        self._figures_of: tuple[Hardware, str] | None = None  # the device and framework the figures are of
        self.retranslate_static()

    def retranslate_static(self) -> None:
        self.preset_name.setPlaceholderText(translate("HardwareForm", "name, e.g. A2-62G"))
        self.preset_name.setAccessibleName(translate("HardwareForm", "New preset name"))
        self.save_button.setText(translate("HardwareForm", "Save &preset"))
        self.save_button.setToolTip(translate("HardwareForm", "Save the current device and capacity as a user preset "
                                                              "in "
                                                      "{0}").format(self.presets_dir))
        self.budget_caption.setText(translate("HardwareForm", "Budget:"))
        self.figures_caption.setText(translate("HardwareForm", "Figures:"))
        self.preset_caption.setText(translate("HardwareForm", "New preset:"))

    def retranslate(self, assumptions: dict[str, Assumption]) -> None:
        self.retranslate_static()
        self._figures_of = None  # said again in the new language
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
        self.show_figures()

    @staticmethod
    def _figure_label(fig: Figure, hw: Hardware) -> str:
        """The figure's name in the interface language (the estimator's labels are English)."""
        head, _, rest = fig.path.partition(".")
        fixed = {"capacity": translate("HardwareForm", "device memory"),
                 "hbm_bandwidth": translate("HardwareForm", "HBM bandwidth"),
                 "host_link_bandwidth": translate("HardwareForm", "host link"),
                 "host_ram_per_node": translate("HardwareForm", "host RAM per node"),
                 "eff_matmul": translate("HardwareForm", "matmul efficiency"),
                 "eff_hbm": translate("HardwareForm", "HBM efficiency")}
        if head in fixed:
            return fixed[head]
        if head == "peak_flops":
            return translate("HardwareForm", "peak {0}").format(rest)
        if head == "runtime_context":
            return translate("HardwareForm", "{0} runtime context").format(rest)
        if head == "workspaces":
            return translate("HardwareForm", "{0} library workspaces").format(rest)
        if head.startswith("levels["):
            level = hw.levels[int(head[7:-1])]
            if math.isinf(level.devices):
                return translate("HardwareForm", "{0} (beyond)").format(level.name)
            return translate("HardwareForm", "{0} (up to {1} devices)").format(level.name, int(level.devices))
        return fig.label

    def show_figures(self) -> None:
        """One line per device figure: value and where it comes from; provisional ones stand out, and the
        tooltip names each document. Written again only for another device or framework (an edit of the
        strategy keeps the plan's device object)."""
        if not self.doc.loaded:
            self._figures_of = None
            self.figures_label.setText("–")
            return
        parsed = self.doc.parsed
        shown = self._figures_of
        if shown is not None and shown[0] is parsed.hardware and shown[1] == parsed.options.framework:
            return
        self._figures_of = (parsed.hardware, parsed.options.framework)
        kinds = {"vendor": translate("HardwareForm", "vendor document"),
                 "measured": translate("HardwareForm", "public measurement"),
                 "derived": translate("HardwareForm", "derived"),
                 "calibrated": translate("HardwareForm", "calibrated"),
                 "user": translate("HardwareForm", "edited"),
                 "provisional": translate("HardwareForm", "provisional")}
        lines, tips = [], []
        for fig in device_figures(parsed.hardware, runtime_of(parsed.options.framework)):
            kind = kinds.get(fig.source.kind, fig.source.kind)
            value = fig.text
            if fig.per_device:
                value = translate("HardwareForm", "{0} per device").format(value)
            if fig.band is not None:
                value = translate("HardwareForm", "{0} (band {1}–{2})").format(value, f"{fig.band[0]:.2f}",
                                                                             f"{fig.band[1]:.2f}")
            text = f"{html.escape(self._figure_label(fig, parsed.hardware))}: {html.escape(value)} — "
            if fig.source.kind == "provisional":
                text += f"<b>{html.escape(kind)}</b>"
            elif fig.source.url:
                text += f"<a href='{html.escape(fig.source.url)}'>{html.escape(kind)}</a>"
            else:
                text += html.escape(kind)
            lines.append(text)
            tips.append(f"{fig.label}: {fig.source.label}" + (f" ({fig.source.url})" if fig.source.url else ""))
        self.figures_label.setText("<br>".join(lines))
        self.figures_label.setToolTip("\n".join(tips))

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
