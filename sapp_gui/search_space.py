"""The search space editor: device count, global batch, device preset, how many to rank, and per dimension
whether it stays as in the plan (fixed), takes a list of values, or is searched within its bounds (auto).
``space()`` turns the widgets into an ``estimator.search.SearchSpace`` (errors name the dimension)."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QSize, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QLayout, QLineEdit, QSpinBox, QWidget

from estimator.errors import ConfigError
from estimator.hardware import Hardware, find_preset
from estimator.limits import MAX_DEVICES, MAX_GLOBAL_BATCH
from estimator.parsed import ParsedConfig
from estimator.search import Dim, SearchSpace, parse_dims
from estimator.search.space import DIMENSIONS
from estimator.session import PlanSession
from estimator.session.keeping import KeptSearch

from .language import translate
from .style import QT_TRANSLATE_NOOP

FIXED, LIST, AUTO = "fixed", "list", "auto"
DERIVED_DIMS = ("dp", "mb")  # derived from the device count / global batch unless listed
DEFAULT_AUTO = ("tp", "pp", "rec")
# the order of the grid (the estimator's DIMENSIONS, dp and mb last as they are usually derived)
ORDER = ("tp", "pp", "cp", "ep", "etp", "vpp", "mbs", "os", "sp", "rec", "dp", "mb")
MAX_COLUMNS = 4  # dimensions per row on a wide window; fewer, down to one, as the window narrows
LABELS = {"tp": "TP", "pp": "PP", "cp": "CP", "ep": "EP", "etp": "ETP", "vpp": "VPP", "mbs": "MBS", "os": "OS",
          "sp": "SP", "rec": QT_TRANSLATE_NOOP("SearchSpace", "Rec"), "dp": "DP", "mb": "M"}
MODE_NAMES = {FIXED: QT_TRANSLATE_NOOP("SearchSpace", "fixed"), LIST: QT_TRANSLATE_NOOP("SearchSpace", "list"),
              AUTO: QT_TRANSLATE_NOOP("SearchSpace", "auto"), "derived": QT_TRANSLATE_NOOP("SearchSpace", "derived")}


def current_text(parsed: ParsedConfig, name: str) -> str:
    """What "fixed" keeps: the plan's value of a dimension."""
    st = parsed.strategy
    default = translate("SearchSpace", "default")
    values = {"dp": st.dp, "tp": st.tp, "pp": st.pp, "cp": st.cp, "ep": st.ep, "etp": st.etp or default,
              "vpp": st.vpp, "mb": st.micro_batches, "mbs": st.micro_batch_size,
              "os": st.sharding.os or default,
              "sp": translate("SearchSpace", "on") if st.sequence_parallel else translate("SearchSpace", "off"),
              "rec": st.recompute.default_mode if st.recompute.full_counts is None
              else translate("SearchSpace", "per-stage")}
    return str(values[name])


class DimEditor(QWidget):
    changed = Signal()

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.setObjectName(f"dim_{name}")
        self.label = QLabel()
        self.mode = QComboBox()
        self.mode.setObjectName(f"mode_{name}")
        self.modes = ("derived", LIST) if name in DERIVED_DIMS else (FIXED, LIST, AUTO)
        for _ in self.modes:
            self.mode.addItem("")
        self.values = QLineEdit()
        self.values.setObjectName(f"values_{name}")
        self.values.setMinimumWidth(44)
        self.mode.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        layout.addWidget(self.label)
        layout.addWidget(self.mode)
        layout.addWidget(self.values, 1)
        self.label.setBuddy(self.mode)
        self._plan_text = ""
        self._list_text = ""
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self.values.textEdited.connect(lambda _t: self.changed.emit())
        self.retranslate()

    def retranslate(self) -> None:
        label = LABELS[self.name]
        self.label.setText(translate("SearchSpace", label) if self.name == "rec" else label)
        self.label.setToolTip(DIMENSIONS[self.name])
        for i, mode in enumerate(self.modes):
            self.mode.setItemText(i, translate("SearchSpace", MODE_NAMES[mode]))
        self.values.setPlaceholderText(translate("SearchSpace", "none,selective,full") if self.name == "rec"
                                       else translate("SearchSpace", "e.g. 1,2,4,8"))

    @property
    def current_mode(self) -> str:
        return self.modes[self.mode.currentIndex()]

    def set_mode(self, mode: str) -> None:
        self.mode.setCurrentIndex(self.modes.index(mode) if mode in self.modes else 0)
        self._mode_changed()

    def set_plan_value(self, text: str) -> None:
        self._plan_text = text
        self._mode_changed()

    def _mode_changed(self, *_args: object) -> None:
        mode = self.current_mode
        if self.values.isEnabled() and not self.values.isReadOnly():
            self._list_text = self.values.text()
        editable = mode == LIST
        self.values.setReadOnly(not editable)
        self.values.setEnabled(mode != AUTO)
        if mode == LIST:
            self.values.setText(self._list_text or self._plan_text)
        elif mode == AUTO:
            self.values.setText(translate("SearchSpace", "auto"))
        else:
            self.values.setText(self._plan_text)
        self.changed.emit()

    def dim(self) -> Dim | None:
        """None: the plan's value (or derived); raises ConfigError for a bad list."""
        mode = self.current_mode
        if mode == AUTO:
            return Dim(auto=True)
        if mode == LIST:
            text = self.values.text().strip().replace(" ", "")
            return parse_dims([f"{self.name}={text}"])[self.name]
        return None


class SearchSpaceEditor(QWidget):
    changed = Signal()

    def __init__(self, doc: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("searchSpace")
        self.doc = doc
        self.devices = QSpinBox()
        self.devices.setObjectName("search_devices")
        self.devices.setRange(1, MAX_DEVICES)
        self.global_batch = QSpinBox()
        self.global_batch.setObjectName("search_global_batch")
        self.global_batch.setRange(1, MAX_GLOBAL_BATCH)
        self.device = QComboBox()
        self.device.setObjectName("search_device")
        self.top_k = QSpinBox()
        self.top_k.setObjectName("search_top")
        self.top_k.setRange(1, 1000)
        self.top_k.setValue(50)
        self.device.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.device.setMinimumContentsLength(12)
        self.captions = [QLabel() for _ in range(4)]
        self.pairs = list(zip(self.captions, (self.devices, self.global_batch, self.device, self.top_k), strict=True))
        for caption, widget in self.pairs:
            caption.setBuddy(widget)
        self.top = QGridLayout()
        self.top.setContentsMargins(0, 0, 0, 0)
        self.top.setHorizontalSpacing(6)
        self.dims = {name: DimEditor(name) for name in ORDER}
        for editor in self.dims.values():
            editor.changed.connect(self.changed)
        self.grid = QGridLayout()
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(10)
        self.grid.setVerticalSpacing(3)
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setVerticalSpacing(4)
        layout.addLayout(self.top, 0, 0)
        layout.addLayout(self.grid, 1, 0)
        # the rows reflow with the width (resizeEvent), so the layout must not pin the widest arrangement as
        # the editor's minimum: minimumSizeHint says how narrow it can go (issue 12: no sideways scrolling)
        layout.setSizeConstraint(QLayout.SizeConstraint.SetNoConstraint)
        self._arrangement = (0, 0)
        self._arrange(MAX_COLUMNS, 2)
        for name in DEFAULT_AUTO:
            self.dims[name].set_mode(AUTO)
        self._preset_ids: list[str] = []
        self._plan_values = (self.devices.value(), self.global_batch.value())
        self.retranslate()

    def retranslate(self) -> None:
        for caption, text in zip(self.captions, (translate("SearchSpace", "&Devices:"),
                                                 translate("SearchSpace", "&Global batch:"),
                                                 translate("SearchSpace", "Device pre&set:"),
                                                 translate("SearchSpace", "&Rank top:")), strict=True):
            caption.setText(text)
        self.devices.setToolTip(translate("SearchSpace", "device count N, fixed for every candidate"))
        self.global_batch.setToolTip(translate("SearchSpace", "global batch G in sequences, fixed for every "
                                                              "candidate"))
        self.top_k.setToolTip(translate("SearchSpace", "how many of the fastest strategies that fit are listed "
                                                       "(the Pareto front is always added)"))
        for editor in self.dims.values():
            editor.retranslate()

    # ------------------------------------------------------------------------------------ layout
    def _arrange(self, columns: int, pairs: int) -> None:
        """``columns`` dimensions per row and ``pairs`` of the top fields (caption and box) per row."""
        if (columns, pairs) == self._arrangement:
            return
        self._arrangement = (columns, pairs)
        for caption, widget in self.pairs:
            self.top.removeWidget(caption)
            self.top.removeWidget(widget)
        for k, (caption, widget) in enumerate(self.pairs):
            self.top.addWidget(caption, k // pairs, 2 * (k % pairs))
            self.top.addWidget(widget, k // pairs, 2 * (k % pairs) + 1)
        self.top.setColumnStretch(1, 2)
        self.top.setColumnStretch(3, 1 if pairs > 1 else 0)
        for editor in self.dims.values():
            self.grid.removeWidget(editor)
        for k, name in enumerate(ORDER):
            self.grid.addWidget(self.dims[name], k // columns, k % columns)
        for col in range(MAX_COLUMNS):
            self.grid.setColumnStretch(col, 1 if col < columns else 0)
        self.updateGeometry()

    def _widths(self) -> tuple[int, int]:
        """The narrowest a dimension's cell and a top field (caption and box) can be."""
        cell = max(editor.minimumSizeHint().width() for editor in self.dims.values())
        pair = max(caption.minimumSizeHint().width() + widget.minimumSizeHint().width() + self.top.horizontalSpacing()
                   for caption, widget in self.pairs)
        return cell, pair

    def resizeEvent(self, event: QResizeEvent) -> None:
        width = event.size().width()
        cell, pair = self._widths()
        gap = self.grid.horizontalSpacing()
        columns = max(1, min(MAX_COLUMNS, (width + gap) // (cell + gap)))
        pairs = 2 if width >= 2 * pair + self.top.horizontalSpacing() else 1
        self._arrange(columns, pairs)
        super().resizeEvent(event)

    def minimumSizeHint(self) -> QSize:
        """One dimension and one top field per row at the narrowest (the rows reflow)."""
        cell, pair = self._widths()
        return QSize(max(cell, pair), self.layout().totalMinimumSize().height())

    def sizeHint(self) -> QSize:
        return QSize(max(self.minimumSizeHint().width(), self.layout().totalSizeHint().width()),
                     self.layout().totalSizeHint().height())

    def load(self, parsed: ParsedConfig, reset: bool = False) -> None:
        """Show the plan's values (a new document resets device count, batch and preset too)."""
        st = parsed.strategy
        # follow the plan unless the user typed other values for this search
        if reset or self.devices.value() == self._plan_values[0]:
            self.devices.setValue(st.world_size)
        if reset or self.global_batch.value() == self._plan_values[1]:
            self.global_batch.setValue(st.global_batch_size)
        self._plan_values = (st.world_size, st.global_batch_size)
        presets = self.doc.presets()
        current = parsed.hardware.id or parsed.hardware.name
        ids = [p.id for p in presets]
        if current not in ids:
            ids.append(current)
        if reset or ids != self._preset_ids:
            chosen = current if reset or not self._preset_ids else self._preset_ids[self.device.currentIndex()]
            self._preset_ids = ids
            self.device.blockSignals(True)
            self.device.clear()
            names = {p.id: p.name for p in presets}
            for pid in ids:
                self.device.addItem(f"{pid} — {names.get(pid, parsed.hardware.name)}")
            self.device.setCurrentIndex(ids.index(chosen) if chosen in ids else ids.index(current))
            self.device.blockSignals(False)
        for name, editor in self.dims.items():
            editor.set_plan_value(current_text(parsed, name))

    def set_dims(self, modes: dict[str, str | tuple[str, str]]) -> None:
        """Set modes, e.g. ``{"tp": "auto", "pp": ("list", "4,8,16"), "rec": "fixed"}`` (tests, benchmark)."""
        for name, mode in modes.items():
            editor = self.dims[name]
            if isinstance(mode, tuple):
                editor.set_mode(mode[0])
                editor.values.setText(mode[1])
            else:
                editor.set_mode(mode)

    def kept(self) -> KeptSearch:
        """The editor's state, to be kept across a restart (``estimator.session.keeping``)."""
        return KeptSearch(self.devices.value(), self.global_batch.value(), self.device_id(), self.top_k.value(),
                          {name: (e.current_mode, e.values.text().strip() if e.current_mode == LIST else "")
                           for name, e in self.dims.items()})

    def restore(self, kept: KeptSearch) -> list[str]:
        """Show a kept state; returns what could not be shown (a device preset that is gone)."""
        problems = []
        self.devices.setValue(kept.devices)
        self.global_batch.setValue(kept.global_batch)
        self.top_k.setValue(kept.top_k)
        if kept.device in self._preset_ids:
            self.device.setCurrentIndex(self._preset_ids.index(kept.device))
        elif kept.device:
            problems.append(translate("SearchSpace", "device preset {0} is not installed").format(kept.device))
        for name, (mode, text) in kept.dims.items():
            editor = self.dims.get(name)
            if editor is None:
                continue
            editor.set_mode(mode)
            if mode == LIST:
                editor.values.setText(text)
                editor.changed.emit()
        return problems

    def device_id(self) -> str:
        return self._preset_ids[self.device.currentIndex()] if self._preset_ids else ""

    def hardware(self, parsed: ParsedConfig) -> Hardware:
        chosen = self.device_id()
        if not chosen or chosen == (parsed.hardware.id or parsed.hardware.name):
            return parsed.hardware
        return find_preset(chosen, self.doc.presets())

    def space(self, parsed: ParsedConfig) -> tuple[SearchSpace, ParsedConfig]:
        """The SearchSpace and the plan it runs on (with the chosen device); ConfigError on a bad entry."""
        dims: dict[str, Dim] = {}
        for name, editor in self.dims.items():
            try:
                dim = editor.dim()
            except ConfigError as exc:
                raise ConfigError(translate("SearchSpace", "{0}: {1}").format(LABELS[name], exc.bare_message)) \
                    from None
            if dim is not None:
                dims[name] = dim
        space = SearchSpace(devices=self.devices.value(), global_batch=self.global_batch.value(), dims=dims,
                            top_k=self.top_k.value())
        hardware = self.hardware(parsed)
        plan = parsed if hardware is parsed.hardware else dataclasses.replace(parsed, hardware=hardware)
        return space, plan

    def describe(self) -> str:
        """One line: which dimensions vary and how (the status line after a run)."""
        parts = []
        for name, editor in self.dims.items():
            mode = editor.current_mode
            if mode == AUTO:
                parts.append(f"{name}=auto")
            elif mode == LIST:
                parts.append(f"{name}={editor.values.text().strip()}")
        return " ".join(parts) or translate("SearchSpace", "the plan's own degrees only")
