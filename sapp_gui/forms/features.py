"""What real runs turn on (issue 11), each a plan field with its provenance, undo and export like every other
form: the FP8 recipe, torch.compile and the loss kernel, communication overlaps (async TP, the distributed
optimizer's overlaps, CP load balance), LoRA/QLoRA, and offload/swap to host memory. The context-parallel
algorithm (CP communication type) is on the Parallel form beside the CP degree; the optimizer swap on Memory."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from estimator.session import PlanSession
from estimator.strategy import (
    FP8_RECIPES,
    LOSS_FUSIONS,
    MOE_ZERO_MEMORY,
    OFFLOAD_GROUPS,
    PEFT_METHODS,
    TRAINABLE_PARTS,
)

from ..language import translate
from ..style import QT_TRANSLATE_NOOP
from .fields import BoolEditor, ChoiceEditor, FieldForm, FieldRow, IntEditor, TextEditor

CONTEXT = "FeaturesForm"
TRISTATE = [(QT_TRANSLATE_NOOP("FeaturesForm", "framework default"), None),
            (QT_TRANSLATE_NOOP("FeaturesForm", "on"), True), (QT_TRANSLATE_NOOP("FeaturesForm", "off"), False)]
FP8_LABELS = {"none": QT_TRANSLATE_NOOP("FeaturesForm", "none — bf16 matmuls"),
              "tensorwise": QT_TRANSLATE_NOOP("FeaturesForm", "tensorwise — dynamic per-tensor scales"),
              "delayed": QT_TRANSLATE_NOOP("FeaturesForm", "delayed — amax history (Transformer Engine)"),
              "rowwise": QT_TRANSLATE_NOOP("FeaturesForm", "rowwise — per-row scales (torchao)"),
              "blockwise": QT_TRANSLATE_NOOP("FeaturesForm", "blockwise — 128-element blocks"),
              "mxfp8": QT_TRANSLATE_NOOP("FeaturesForm", "mxfp8 — 32-element blocks (Blackwell)")}
COMPILE_CHOICES = [(QT_TRANSLATE_NOOP("FeaturesForm", "off (eager)"), ()),
                   (QT_TRANSLATE_NOOP("FeaturesForm", "the model"), ("model",)),
                   (QT_TRANSLATE_NOOP("FeaturesForm", "the model and the loss"), ("model", "loss"))]
LOSS_LABELS = {"none": QT_TRANSLATE_NOOP("FeaturesForm", "unfused"),
               "fused": QT_TRANSLATE_NOOP("FeaturesForm", "fused cross-entropy"),
               "chunked": QT_TRANSLATE_NOOP("FeaturesForm", "chunked (no full logits)")}
ZERO_MEMORY_LABELS = {"disable": QT_TRANSLATE_NOOP("FeaturesForm", "off"),
                      "level0": QT_TRANSLATE_NOOP("FeaturesForm", "level0 — expert input and activation rebuilt"),
                      "level1": QT_TRANSLATE_NOOP("FeaturesForm", "level1 — also the fc1 outputs rebuilt")}
PEFT_LABELS = {"none": QT_TRANSLATE_NOOP("FeaturesForm", "none — no adapters"),
               "lora": QT_TRANSLATE_NOOP("FeaturesForm", "LoRA"),
               "qlora": QT_TRANSLATE_NOOP("FeaturesForm", "QLoRA — 4-bit NF4 base")}


class ListEditor(TextEditor):
    """A tuple of names as comma-separated text (``q, v``); the session checks the names and says which one is
    not known under the field."""

    def __init__(self, placeholder: str, *, context: str | None = None, **params: str) -> None:
        super().__init__()
        self._placeholder = (placeholder, context, params)  # with a context: a source text, retranslated
        self.retranslate()

    def retranslate(self) -> None:
        text, context, params = self._placeholder
        self.setPlaceholderText(translate(context, text).format(**params) if context else text)

    def set_field_value(self, value: Any, none_text: str = "") -> None:
        super().set_field_value(", ".join(str(v) for v in value) if isinstance(value, (tuple, list)) else value,
                                none_text)

    def field_value(self) -> Any:
        return tuple(p.strip() for p in self.text().replace(";", ",").split(",") if p.strip())

    def _finish(self) -> None:
        if self.text().strip() != self._shown.strip():
            self.committed.emit(self.field_value())


class LayerListEditor(ListEditor):
    """Model-order layer indices as text (``-2, -1``: the last two); empty: None (the field's "every layer").
    Text that is not whole numbers goes to the estimator as typed, which says what is wrong under the field."""

    def field_value(self) -> Any:
        parts = [p.strip() for p in self.text().strip().strip("[]").replace(";", ",").split(",") if p.strip()]
        if not parts:
            return None
        try:
            return tuple(int(p) for p in parts)
        except ValueError:
            return self.text()


class GroupLayersEditor(ListEditor):
    """Per offload group, the layers that offload it: ``self_attention: 0, 1; mlp: 4`` (empty: every layer of
    every group). Text that does not have that shape goes to the estimator as typed, which says what is wrong."""

    def set_field_value(self, value: Any, none_text: str = "") -> None:
        shown = "; ".join(f"{item.group}: {', '.join(str(i) for i in item.layers)}" for item in value) \
            if isinstance(value, (tuple, list)) else value
        TextEditor.set_field_value(self, shown, none_text)

    def field_value(self) -> Any:
        text = self.text().strip()
        if not text:
            return ()
        groups: dict[str, list[int]] = {}
        for entry in (e.strip() for e in text.split(";") if e.strip()):
            group, sep, layers = entry.partition(":")
            try:
                groups[group.strip()] = [int(p) for p in layers.split(",") if p.strip()]
            except ValueError:
                return text
            if not sep:
                return text
        return groups


class FeaturesForm(FieldForm):
    def __init__(self, doc: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(doc, parent)
        self.setObjectName("featuresForm")

        def field(key: str, label: str, editor: QWidget, help_text: str) -> None:
            editor.setObjectName(key.split(".")[1])
            self.add_field(FieldRow(key, label, editor, help_text, context=CONTEXT))

        field("strategy.fp8", QT_TRANSLATE_NOOP("FeaturesForm", "FP8 &recipe"),
              ChoiceEditor([(FP8_LABELS.get(r, r), r) for r in FP8_RECIPES], context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "FP8 linear layers: what they save, their scales, and the "
                                                "device's FP8 peak in the step time (refused on a device "
                                                "without FP8)"))
        field("strategy.fp8_param", QT_TRANSLATE_NOOP("FeaturesForm", "FP8 weights"),
              BoolEditor(QT_TRANSLATE_NOOP("FeaturesForm", "in FP8"), CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "torchtitan enable_fsdp_float8_all_gather, Megatron "
                                                "--fp8-param-gather"))
        field("strategy.fp8_experts", QT_TRANSLATE_NOOP("FeaturesForm", "FP8 experts"),
              ChoiceEditor(TRISTATE, context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "the MoE experts' matmuls in FP8 too"))
        field("strategy.fp8_amax_history", QT_TRANSLATE_NOOP("FeaturesForm", "Amax history"),
              IntEditor("strategy.fp8_amax_history", optional=True),
              QT_TRANSLATE_NOOP("FeaturesForm", "delayed scaling: amax values kept per FP8 tensor"))
        field("strategy.compile", QT_TRANSLATE_NOOP("FeaturesForm", "torch.&compile"),
              ChoiceEditor(COMPILE_CHOICES, context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "fused elementwise chains recompute their outputs instead of "
                                                "saving them; the compiled loss never holds fp32 logits"))
        field("strategy.loss_fusion", QT_TRANSLATE_NOOP("FeaturesForm", "Loss kernel"),
              ChoiceEditor([(QT_TRANSLATE_NOOP("FeaturesForm", "framework default"), None),
                            *((LOSS_LABELS.get(x, x), x) for x in LOSS_FUSIONS)], context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "how the cross-entropy holds the logits"))
        field("strategy.async_tp", QT_TRANSLATE_NOOP("FeaturesForm", "&Async TP"),
              BoolEditor(QT_TRANSLATE_NOOP("FeaturesForm", "overlapped"), CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "TP communication overlapped with the matmuls: torchtitan "
                                                "enable_async_tensor_parallel, Megatron --tp-comm-overlap, "
                                                "MindSpeed MC2"))
        field("strategy.overlap_grad_reduce", QT_TRANSLATE_NOOP("FeaturesForm", "Overlap grad reduce"),
              ChoiceEditor(TRISTATE, context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "DP gradient reduction bucket by bucket under the backward"))
        field("strategy.overlap_param_gather", QT_TRANSLATE_NOOP("FeaturesForm", "Overlap param gather"),
              ChoiceEditor(TRISTATE, context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "the distributed optimizer's parameter gather under the next "
                                                "forward"))
        field("strategy.cp_load_balance", QT_TRANSLATE_NOOP("FeaturesForm", "CP load balance"),
              ChoiceEditor(TRISTATE, context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "causal masks: chunks reordered so every CP rank attends alike "
                                                "(off: the critical rank waits)"))
        field("strategy.peft", QT_TRANSLATE_NOOP("FeaturesForm", "&Fine-tuning"),
              ChoiceEditor([(PEFT_LABELS.get(x, x), x) for x in PEFT_METHODS], context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "frozen base weights carry no gradients and no optimizer states"))
        field("strategy.lora_rank", QT_TRANSLATE_NOOP("FeaturesForm", "LoRA rank"),
              IntEditor("strategy.lora_rank", minimum=0),
              QT_TRANSLATE_NOOP("FeaturesForm", "rank r of every adapter"))
        field("strategy.lora_targets", QT_TRANSLATE_NOOP("FeaturesForm", "LoRA targets"),
              ListEditor(QT_TRANSLATE_NOOP("FeaturesForm", "e.g. q, k, v, o"), context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "adapted modules: q k v qkv o gate up fc1 down (MLA: q_a q_b "
                                                "kv_a kv_b)"))
        field("strategy.qlora_double_quant", QT_TRANSLATE_NOOP("FeaturesForm", "Double quantisation"),
              BoolEditor(QT_TRANSLATE_NOOP("FeaturesForm", "on"), CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "QLoRA's quantisation constants quantised again (NF4 base "
                                                "weights: 0.5 B per parameter plus the constants)"))
        field("strategy.trainable_layers", QT_TRANSLATE_NOOP("FeaturesForm", "Trainable layers"),
              LayerListEditor(QT_TRANSLATE_NOOP("FeaturesForm", "every layer — e.g. -2, -1 for the last two"),
                              context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "freeze fine-tuning: the layers whose weights train (model order, "
                                                "negative from the last; LLaMA-Factory freeze_trainable_layers); "
                                                "the others keep no gradients or optimizer states"))
        field("strategy.trainable_parts", QT_TRANSLATE_NOOP("FeaturesForm", "Trainable parts"),
              ListEditor(QT_TRANSLATE_NOOP("FeaturesForm", "all — e.g. {parts}"), context=CONTEXT,
                         parts=", ".join(TRAINABLE_PARTS)),
              QT_TRANSLATE_NOOP("FeaturesForm", "the module groups of the trainable layers that train "
                                                "(LLaMA-Factory freeze_trainable_modules); empty: all"))
        field("strategy.offload_activations", QT_TRANSLATE_NOOP("FeaturesForm", "&Offload activations"),
              ListEditor(", ".join(OFFLOAD_GROUPS)),
              QT_TRANSLATE_NOOP("FeaturesForm", "module groups whose saved activations go to host memory "
                                                "(MindSpeed --swap-attention, MindFormers swap_config, Megatron "
                                                "activation offloading); copies over the host link"))
        field("strategy.offload_layers", QT_TRANSLATE_NOOP("FeaturesForm", "Offload layers"),
              GroupLayersEditor(QT_TRANSLATE_NOOP("FeaturesForm", "every layer — e.g. self_attention: 0, 1; mlp: 4"),
                                context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "per offload group, the model-order layers that offload it "
                                                "(MindFormers swap_config layers lists); a group not named "
                                                "offloads in every layer"))
        field("strategy.moe_zero_memory", QT_TRANSLATE_NOOP("FeaturesForm", "MoE zero memory"),
              ChoiceEditor([(ZERO_MEMORY_LABELS.get(x, x), x) for x in MOE_ZERO_MEMORY], context=CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "MindSpeed --moe-zero-memory: the experts' dispatched input and "
                                                "activation output freed after the forward, rebuilt in the "
                                                "backward (one more dispatch all-to-all)"))
        field("strategy.moe_zero_memory_layers", QT_TRANSLATE_NOOP("FeaturesForm", "Zero memory level1 layers"),
              IntEditor("strategy.moe_zero_memory_layers", minimum=0, optional=True),
              QT_TRANSLATE_NOOP("FeaturesForm", "MindSpeed --moe-zero-memory-num-layers: level1 (which also frees "
                                                "the experts' fc1 outputs) on that many layers of each stage, "
                                                "level0 on the others; empty: every layer"))
        field("strategy.mla_zero_memory", QT_TRANSLATE_NOOP("FeaturesForm", "MLA zero memory"),
              BoolEditor(QT_TRANSLATE_NOOP("FeaturesForm", "recompute the attention"), CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "MindSpeed-LLM --mla-zero-memory: an MLA attention keeps only its "
                                                "input; its internals and output are rebuilt in the backward"))
        field("strategy.offload_optimizer", QT_TRANSLATE_NOOP("FeaturesForm", "Offload optimizer"),
              BoolEditor(QT_TRANSLATE_NOOP("FeaturesForm", "on the host"), CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "optimizer states and the step on the host: DeepSpeed "
                                                "offload_optimizer, FSDP2 CPUOffloadPolicy"))
        field("strategy.offload_params", QT_TRANSLATE_NOOP("FeaturesForm", "Offload parameters"),
              BoolEditor(QT_TRANSLATE_NOOP("FeaturesForm", "on the host"), CONTEXT),
              QT_TRANSLATE_NOOP("FeaturesForm", "parameters and gradients on the host, shards copied in before "
                                                "each gather (FSDP2 CPUOffloadPolicy, DeepSpeed offload_param)"))


__all__ = ["FeaturesForm", "GroupLayersEditor", "LayerListEditor", "ListEditor"]
