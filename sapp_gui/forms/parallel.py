"""Parallelism: DP, TP, PP, VPP, CP (+ algorithm), EP, ETP, SP, micro-batch size and count, with the derived
device count and global batch, and the lock that says what an edit of TP/PP/CP holds fixed."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QRadioButton, QWidget

from estimator.session import HOLD_DP, HOLD_WORLD, PlanSession
from estimator.strategy import CP_ALGOS, SCHEDULES
from estimator.warnings import Assumption

from ..language import translate
from ..style import QT_TRANSLATE_NOOP
from .fields import BoolEditor, ChoiceEditor, FieldForm, FieldRow, IntEditor

CONTEXT = "ParallelForm"


class ParallelForm(FieldForm):
    hold_changed = Signal(str)

    def __init__(self, doc: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(doc, parent)
        self.setObjectName("parallelForm")

        def degree(key: str, label: str, help_text: str, optional: bool = False) -> FieldRow:
            editor = IntEditor(key, 1, optional=optional, steps=lambda: self._steps(key))
            editor.setObjectName(key.split(".")[1])
            return self.add_field(FieldRow(key, label, editor, help_text, context=CONTEXT))

        hold_box = QWidget()
        hold_layout = QHBoxLayout(hold_box)
        hold_layout.setContentsMargins(0, 0, 0, 0)
        self.hold_world = QRadioButton()
        self.hold_dp = QRadioButton()
        self.hold_group = QButtonGroup(self)
        self.hold_group.addButton(self.hold_world)
        self.hold_group.addButton(self.hold_dp)
        self.hold_world.setChecked(True)
        hold_layout.addWidget(self.hold_world)
        hold_layout.addWidget(self.hold_dp)
        hold_layout.addStretch(1)
        self.hold_world.toggled.connect(self._hold_toggled)
        self.hold_label = QLabel()
        self.layout_.addRow(self.hold_label, hold_box)

        degree("strategy.dp", QT_TRANSLATE_NOOP("ParallelForm", "&DP"),
               QT_TRANSLATE_NOOP("ParallelForm", "data-parallel degree; editing it changes the device count and "
                                                 "re-derives the micro-batch count (global batch fixed)"))
        degree("strategy.tp", QT_TRANSLATE_NOOP("ParallelForm", "&TP"),
               QT_TRANSLATE_NOOP("ParallelForm", "tensor-parallel degree"))
        degree("strategy.pp", QT_TRANSLATE_NOOP("ParallelForm", "&PP"),
               QT_TRANSLATE_NOOP("ParallelForm", "pipeline stages; per-stage lists written for the old depth are "
                                                 "refitted"))
        degree("strategy.vpp", QT_TRANSLATE_NOOP("ParallelForm", "&VPP"),
               QT_TRANSLATE_NOOP("ParallelForm", "virtual pipeline chunks per stage (interleaved schedule)"))
        degree("strategy.cp", QT_TRANSLATE_NOOP("ParallelForm", "&CP"),
               QT_TRANSLATE_NOOP("ParallelForm", "context-parallel degree"))
        algo = ChoiceEditor([(a, a) for a in CP_ALGOS])
        algo.setObjectName("cp_algo")
        self.add_field(FieldRow("strategy.cp_algo", QT_TRANSLATE_NOOP("ParallelForm", "CP algorithm"), algo,
                                QT_TRANSLATE_NOOP("ParallelForm", "ring, ulysses or hybrid"), context=CONTEXT))
        degree("strategy.ep", QT_TRANSLATE_NOOP("ParallelForm", "&EP"),
               QT_TRANSLATE_NOOP("ParallelForm", "expert-parallel degree (MoE)"))
        degree("strategy.etp", QT_TRANSLATE_NOOP("ParallelForm", "ETP"),
               QT_TRANSLATE_NOOP("ParallelForm", "expert tensor-parallel degree; default = the framework's rule"),
               optional=True)
        sp = BoolEditor(QT_TRANSLATE_NOOP("ParallelForm", "sequence parallel"), CONTEXT)
        sp.setObjectName("sequence_parallel")
        self.add_field(FieldRow("strategy.sequence_parallel", QT_TRANSLATE_NOOP("ParallelForm", "SP"), sp,
                                QT_TRANSLATE_NOOP("ParallelForm", "sequence parallelism with TP"), context=CONTEXT))
        degree("strategy.micro_batch_size", QT_TRANSLATE_NOOP("ParallelForm", "&Micro-batch size"),
               QT_TRANSLATE_NOOP("ParallelForm", "sequences per micro-batch; the micro-batch count follows (global "
                                                 "batch fixed)"))
        degree("strategy.micro_batches", QT_TRANSLATE_NOOP("ParallelForm", "Micro-&batches"),
               QT_TRANSLATE_NOOP("ParallelForm", "micro-batches per step and pipeline; editing it changes the "
                                                 "global batch"))
        seq = IntEditor("strategy.seq_length")
        seq.setSingleStep(1024)
        seq.setObjectName("seq_length")
        self.add_field(FieldRow("strategy.seq_length", QT_TRANSLATE_NOOP("ParallelForm", "Sequence length"), seq,
                                QT_TRANSLATE_NOOP("ParallelForm", "tokens per sequence"), context=CONTEXT))
        schedule = ChoiceEditor([(QT_TRANSLATE_NOOP("ParallelForm", "default (1F1B / interleaved)"), None),
                                 *((s, s) for s in SCHEDULES)], context=CONTEXT)
        schedule.setObjectName("schedule")
        self.add_field(FieldRow("strategy.schedule", QT_TRANSLATE_NOOP("ParallelForm", "Schedule"), schedule,
                                QT_TRANSLATE_NOOP("ParallelForm", "pipeline schedule"), context=CONTEXT))
        self.devices_label = QLabel("–")
        self.devices_label.setObjectName("devices")
        self.batch_label = QLabel("–")
        self.batch_label.setObjectName("global_batch")
        for label in (self.devices_label, self.batch_label):
            label.setWordWrap(True)
        self.devices_caption, self.batch_caption = QLabel(), QLabel()
        self.layout_.addRow(self.devices_caption, self.devices_label)
        self.layout_.addRow(self.batch_caption, self.batch_label)
        self.retranslate_static()

    def retranslate_static(self) -> None:
        self.hold_world.setText(translate("ParallelForm", "&device count"))
        self.hold_dp.setText(translate("ParallelForm", "D&P"))
        self.hold_world.setToolTip(translate("ParallelForm", "Editing TP, PP or CP re-derives DP so that the device "
                                                             "count stays "
                                              "fixed (the global batch stays fixed too: micro-batches follow DP)."))
        self.hold_dp.setToolTip(translate("ParallelForm", "Editing TP, PP or CP keeps DP; the device count follows."))
        self.hold_label.setText(translate("ParallelForm", "Hold fixed:"))
        self.devices_caption.setText(translate("ParallelForm", "Devices:"))
        self.batch_caption.setText(translate("ParallelForm", "Global batch:"))

    def retranslate(self, assumptions: dict[str, Assumption]) -> None:
        self.retranslate_static()
        super().retranslate(assumptions)

    def _steps(self, key: str) -> list[int] | None:
        return self.doc.step_candidates(key) if self.doc.loaded else None

    def _hold_toggled(self, world: bool) -> None:
        self.doc.set_hold(HOLD_WORLD if world else HOLD_DP)
        self.hold_changed.emit(self.doc.hold)

    def refresh(self, assumptions: dict[str, Assumption]) -> None:
        super().refresh(assumptions)
        st = self.doc.parsed.strategy
        self.hold_world.blockSignals(True)
        self.hold_world.setChecked(self.doc.hold == HOLD_WORLD)
        self.hold_dp.setChecked(self.doc.hold == HOLD_DP)
        self.hold_world.blockSignals(False)
        changed = "  ● " + translate("ParallelForm", "changed")
        world_mark = changed if self.doc.mark("strategy.world_size") else ""
        nb = "\u00a0"
        self.devices_label.setText(f"{st.world_size:,} = dp{nb}{st.dp} × tp{nb}{st.tp} × pp{nb}{st.pp} × "
                                   f"cp{nb}{st.cp}" + world_mark)
        batch_mark = changed if self.doc.mark("strategy.global_batch_size") else ""
        self.batch_label.setText(f"{st.global_batch_size:,} = mbs{nb}{st.micro_batch_size} × dp{nb}{st.dp} × "
                                 f"m{nb}{st.micro_batches}" + (f" × {st.n_acc}" if st.n_acc > 1 else "") + batch_mark)
        self.devices_label.setToolTip(translate("ParallelForm", "derived; was {0} in the file").format(
            self.doc.original_value("strategy.world_size")))
        self.batch_label.setToolTip(translate("ParallelForm", "derived; was {0} in the file").format(
            self.doc.original_value("strategy.global_batch_size")))
