"""Memory options: sharding mode and shard size, recompute mode and per-stage counts, byte widths, flash
attention and optimizer swap."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from estimator.session import PlanSession
from estimator.strategy import SHARDING_MODES

from ..style import QT_TRANSLATE_NOOP
from .fields import BoolEditor, ChoiceEditor, CountsEditor, FieldForm, FieldRow, IntEditor

CONTEXT = "MemoryForm"
WIDTHS = [(QT_TRANSLATE_NOOP("MemoryForm", "framework default"), None), ("4 B (fp32)", 4.0),
          ("2 B (bf16 / fp16)", 2.0), ("1 B (fp8)", 1.0)]
TRISTATE = [(QT_TRANSLATE_NOOP("MemoryForm", "framework default"), None), (QT_TRANSLATE_NOOP("MemoryForm", "on"), True),
            (QT_TRANSLATE_NOOP("MemoryForm", "off"), False)]
SHARDING_LABELS = {"none": QT_TRANSLATE_NOOP("MemoryForm", "none — no sharding"),
                   "zero1": QT_TRANSLATE_NOOP("MemoryForm", "zero1 — optimizer states sharded"),
                   "zero2": QT_TRANSLATE_NOOP("MemoryForm", "zero2 — + gradients"),
                   "zero3": QT_TRANSLATE_NOOP("MemoryForm", "zero3 — + parameters"),
                   "fsdp": QT_TRANSLATE_NOOP("MemoryForm", "fsdp — PyTorch FSDP2"),
                   "hsdp": QT_TRANSLATE_NOOP("MemoryForm", "hsdp — hybrid sharded DP"),
                   "mf_op": QT_TRANSLATE_NOOP("MemoryForm", "mf_op — MindSpore parallel optimizer")}
RECOMPUTE_MODES = [(QT_TRANSLATE_NOOP("MemoryForm", "none"), "none"),
                   (QT_TRANSLATE_NOOP("MemoryForm", "selective"), "selective"),
                   (QT_TRANSLATE_NOOP("MemoryForm", "full"), "full")]


class MemoryForm(FieldForm):
    def __init__(self, doc: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(doc, parent)
        self.setObjectName("memoryForm")
        sharding = ChoiceEditor([(SHARDING_LABELS.get(m, m), m) for m in SHARDING_MODES], context=CONTEXT)
        sharding.setObjectName("sharding")
        self.add_field(FieldRow("strategy.sharding", QT_TRANSLATE_NOOP("MemoryForm", "&Sharding"), sharding,
                                QT_TRANSLATE_NOOP("MemoryForm", "how optimizer states, gradients and parameters are "
                                                                "sharded over DP"), context=CONTEXT))
        shard = IntEditor("strategy.shard_size", optional=True)
        shard.setObjectName("shard_size")
        self.add_field(FieldRow("strategy.shard_size", QT_TRANSLATE_NOOP("MemoryForm", "Shard size"), shard,
                                QT_TRANSLATE_NOOP("MemoryForm", "ranks one optimizer shard spans; default = the "
                                                                "whole sharding domain"), context=CONTEXT))
        mode = ChoiceEditor(RECOMPUTE_MODES, context=CONTEXT)
        mode.setObjectName("recompute")
        self.add_field(FieldRow("strategy.recompute", QT_TRANSLATE_NOOP("MemoryForm", "&Recompute"), mode,
                                QT_TRANSLATE_NOOP("MemoryForm", "default recompute mode of every layer"),
                                to_changes=lambda v: self.doc.recompute_changes(mode=v),
                                read_value=lambda d: d.parsed.strategy.recompute.default_mode, context=CONTEXT))
        counts = CountsEditor()
        counts.setObjectName("full_counts")
        self.add_field(FieldRow("strategy.full_counts", QT_TRANSLATE_NOOP("MemoryForm", "Full-recompute layers"),
                                counts,
                                QT_TRANSLATE_NOOP("MemoryForm", "layers per stage that recompute fully: one number "
                                                                "for every stage or a list with one per stage"),
                                to_changes=lambda v: self.doc.recompute_changes(counts=v),
                                read_value=lambda d: d.parsed.strategy.recompute.full_counts, context=CONTEXT))
        sel = CountsEditor()
        sel.setObjectName("sel_counts")
        self.add_field(FieldRow("strategy.sel_counts", QT_TRANSLATE_NOOP("MemoryForm", "Selective layers"), sel,
                                QT_TRANSLATE_NOOP("MemoryForm", "layers per stage with selective recompute (one "
                                                                "number or one per stage)"), context=CONTEXT))
        for key, label, help_text in (
                ("strategy.param_bytes", QT_TRANSLATE_NOOP("MemoryForm", "Parameter bytes"),
                 QT_TRANSLATE_NOOP("MemoryForm", "bytes per stored parameter")),
                ("strategy.compute_bytes", QT_TRANSLATE_NOOP("MemoryForm", "Compute bytes"),
                 QT_TRANSLATE_NOOP("MemoryForm", "bytes per activation element in compute")),
                ("strategy.grad_bytes", QT_TRANSLATE_NOOP("MemoryForm", "Gradient bytes"),
                 QT_TRANSLATE_NOOP("MemoryForm", "bytes per gradient element")),
                ("strategy.optimizer_state_bytes", QT_TRANSLATE_NOOP("MemoryForm", "Optimizer state bytes"),
                 QT_TRANSLATE_NOOP("MemoryForm", "bytes per optimizer state element"))):
            editor = ChoiceEditor(WIDTHS, context=CONTEXT)
            editor.setObjectName(key.split(".")[1])
            self.add_field(FieldRow(key, label, editor, help_text, context=CONTEXT))
        flash = ChoiceEditor(TRISTATE, context=CONTEXT)
        flash.setObjectName("flash_attention")
        self.add_field(FieldRow("strategy.flash_attention", QT_TRANSLATE_NOOP("MemoryForm", "Flash attention"), flash,
                                QT_TRANSLATE_NOOP("MemoryForm", "flash attention keeps no s×s score matrix"),
                                context=CONTEXT))
        swap = BoolEditor(QT_TRANSLATE_NOOP("MemoryForm", "to host memory"), CONTEXT)
        swap.setObjectName("swap_optimizer")
        self.add_field(FieldRow("strategy.swap_optimizer", QT_TRANSLATE_NOOP("MemoryForm", "Swap"), swap,
                                QT_TRANSLATE_NOOP("MemoryForm", "optimizer states live on the host and are swapped "
                                                                "in for the step"), context=CONTEXT))
        times = IntEditor("strategy.swap_times")
        times.setObjectName("swap_times")
        self.add_field(FieldRow("strategy.swap_times", QT_TRANSLATE_NOOP("MemoryForm", "Swap slices"), times,
                                QT_TRANSLATE_NOOP("MemoryForm", "the optimizer step swaps states in this many slices"),
                                context=CONTEXT))

    @staticmethod
    def widths() -> list[tuple[str, Any]]:
        return list(WIDTHS)
