"""Memory options: sharding mode and shard size, recompute mode and per-stage counts, byte widths, flash
attention and optimizer swap."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from estimator.strategy import SHARDING_MODES

from ..document import Document
from .fields import BoolEditor, ChoiceEditor, CountsEditor, FieldForm, FieldRow, IntEditor

WIDTHS = [("framework default", None), ("4 B (fp32)", 4.0), ("2 B (bf16 / fp16)", 2.0), ("1 B (fp8)", 1.0)]
TRISTATE = [("framework default", None), ("on", True), ("off", False)]
SHARDING_HELP = {"none": "no sharding", "zero1": "optimizer states sharded", "zero2": "+ gradients",
                 "zero3": "+ parameters", "fsdp": "PyTorch FSDP2", "hsdp": "hybrid sharded DP",
                 "mf_op": "MindSpore parallel optimizer"}


class MemoryForm(FieldForm):
    def __init__(self, doc: Document, parent: QWidget | None = None) -> None:
        super().__init__(doc, parent)
        self.setObjectName("memoryForm")
        sharding = ChoiceEditor([(f"{m} — {SHARDING_HELP.get(m, '')}", m) for m in SHARDING_MODES])
        sharding.setObjectName("sharding")
        self.add_field(FieldRow("strategy.sharding", "&Sharding", sharding, "how optimizer states, gradients and "
                                                                            "parameters are sharded over DP"))
        shard = IntEditor(1, 1_000_000, optional=True)
        shard.setObjectName("shard_size")
        self.add_field(FieldRow("strategy.shard_size", "Shard size", shard,
                                "ranks one optimizer shard spans; default = the whole sharding domain"))
        mode = ChoiceEditor([("none", "none"), ("selective", "selective"), ("full", "full")])
        mode.setObjectName("recompute")
        self.add_field(FieldRow("strategy.recompute", "&Recompute", mode,
                                "default recompute mode of every layer",
                                to_changes=lambda v: self.doc.recompute_changes(mode=v),
                                read_value=lambda d: d.parsed.strategy.recompute.default_mode))
        counts = CountsEditor()
        counts.setObjectName("full_counts")
        self.add_field(FieldRow("strategy.full_counts", "Full-recompute layers", counts,
                                "layers per stage that recompute fully: one number for every stage or a list "
                                "with one per stage",
                                to_changes=lambda v: self.doc.recompute_changes(counts=v),
                                read_value=lambda d: d.parsed.strategy.recompute.full_counts))
        sel = CountsEditor()
        sel.setObjectName("sel_counts")
        self.add_field(FieldRow("strategy.sel_counts", "Selective layers", sel,
                                "layers per stage with selective recompute (one number or one per stage)"))
        for key, label, help_text in (
                ("strategy.param_bytes", "Parameter bytes", "bytes per stored parameter"),
                ("strategy.compute_bytes", "Compute bytes", "bytes per activation element in compute"),
                ("strategy.grad_bytes", "Gradient bytes", "bytes per gradient element"),
                ("strategy.optimizer_state_bytes", "Optimizer state bytes", "bytes per optimizer state element")):
            editor = ChoiceEditor(WIDTHS)
            editor.setObjectName(key.split(".")[1])
            self.add_field(FieldRow(key, label, editor, help_text))
        flash = ChoiceEditor(TRISTATE)
        flash.setObjectName("flash_attention")
        self.add_field(FieldRow("strategy.flash_attention", "Flash attention", flash,
                                "flash attention keeps no s×s score matrix"))
        swap = BoolEditor("to host memory")
        swap.setObjectName("swap_optimizer")
        self.add_field(FieldRow("strategy.swap_optimizer", "Swap", swap,
                                "optimizer states live on the host and are swapped in for the step"))
        times = IntEditor(1, 1024)
        times.setObjectName("swap_times")
        self.add_field(FieldRow("strategy.swap_times", "Swap slices", times,
                                "the optimizer step swaps states in this many slices"))

    @staticmethod
    def widths() -> list[tuple[str, Any]]:
        return list(WIDTHS)
