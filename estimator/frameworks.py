"""Per-framework semantics and defaults (docs/model.md#frameworks): widths (docs/model.md#byte-widths-per-framework),
implementation flags (docs/model.md#slot-table), the loss working set (docs/model.md#working-overhead).

``options.framework`` selects one of these; every field the plan leaves unset is taken from here and
reported as an assumption. Conditional defaults (they depend on the strategy) are methods.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .messages import msg
from .options import FRAMEWORKS


@dataclass(frozen=True)
class FrameworkDefaults:
    name: str
    title: str
    default_device: str
    param_bytes: float
    compute_bytes: float
    grad_bytes: float | None  # None: same as param_bytes
    master_bytes: float
    softmax_bytes: float
    reduce_bytes: float | None  # None: same as grad_bytes
    optimizer_impl: str
    fused_gated_act: bool
    fused_gated_act_experts: bool
    kv_repeat_with_fa: bool
    kv_repeat_without_fa: bool
    selective_rule: str
    saves_gathered_input: bool  # SP norm outputs saved all-gathered (MindSpore, DTensor) vs sharded (Megatron)
    megatron_vocab_padding: bool
    loss_working: str  # which D45 loss working set applies: megatron | pytorch | mindformers
    o_tp: float
    fsdp_native: bool  # PyTorch FSDP2 (priced by instants, docs/model.md#fsdp2)
    # transformers' eager RMSNorm (LlamaRMSNorm & co.): autograd keeps the fp32 upcast of its input and the
    # normalised copy before the weight, not a fused kernel's input + rstd (docs/fidelity.md §7b, measured)
    eager_norm: bool = False

    def grad_persistence(self, sharding_mode: str) -> str:
        if self.name == "mindformers":
            return "upstream_rule"
        if self.fsdp_native and sharding_mode in ("fsdp", "hsdp"):
            return "progressive"
        return "persistent"

    def kv_repeat(self, flash_attention: bool) -> bool:
        return self.kv_repeat_with_fa if flash_attention else self.kv_repeat_without_fa

    def vocab_parallel_loss(self, tp: int) -> bool:
        if self.name in ("megatron", "mindspeed", "mindformers"):
            return True
        return tp > 1

    def default_etp(self, tp: int, ep: int, dp: int, cp: int) -> int:
        if self.name in ("megatron", "mindspeed"):
            return tp
        if self.name == "mindformers":
            return tp if ep <= dp * cp else 1
        return 1

    def loss_widths(self, compute_bytes: float, loss_bytes: float, kernel: str = "none",
                    vocab_parallel: bool = False) -> tuple[float, float]:
        """(w_b, w_f): bytes per logit of the loss working set beyond the saved softmax (DECISION D45), for the
        resolved loss ``kernel`` (``Features.loss_fusion``) and a loss split over the vocabulary (t_V > 1) or not.

        [W-LOSS.fused] a fused kernel makes the logits' gradient at β_c. [W-LOSS.megatron_fused] Megatron's
        ``--cross-entropy-loss-fusion`` (native) keeps the unfused loss' fp32 softmax and wraps its steps in
        ``jit_fuser`` (torch.compile from torch 2.2): inductor lowers the backward's
        ``grad_2d[arange, target] -= update`` on a view of its input as a clone and a scatter (a view of a graph
        input is never reinplaced), so the saved softmax, that fp32 clone and the bf16 gradient are live together
        (w_b = β_l + β_c). [W-LOSS.parallel] torchtitan's loss parallel runs DTensor's decomposition
        (torch/distributed/tensor/parallel/loss.py): its backward ``(grad_input + exp(x))·grad_output`` with
        ``grad_input = zeros_like(x)`` holds the saved log-softmax, grad_input, the sum and the product
        (w_b = 3·β_l), its ``_log_softmax`` the caller's β_c logits, the fp32 copy, ``shifted`` and
        ``exp(shifted)`` or ``result`` (w_f = β_c + 2·β_l)."""
        if kernel == "fused":
            return compute_bytes, compute_bytes
        if kernel == "megatron_fused":
            return loss_bytes + compute_bytes, compute_bytes
        if self.loss_working == "megatron":
            return compute_bytes, compute_bytes
        if self.loss_working == "pytorch":
            if vocab_parallel and self.name == "torchtitan":
                return 3 * loss_bytes, compute_bytes + 2 * loss_bytes
            return 2 * loss_bytes, compute_bytes + loss_bytes
        return loss_bytes + compute_bytes, compute_bytes

    def fused_loss(self) -> str:
        """The loss kernel ``strategy.loss_fusion: fused`` runs here (``Features.loss_fusion``). Megatron's
        ``--cross-entropy-loss-fusion`` (``--cross-entropy-fusion-impl native``, the default) fuses the kernels of
        the vocab-parallel cross-entropy, not its memory: ``calculate_logits_max`` makes the fp32 copy, the softmax
        is built in it in place and saved, the backward builds the gradient in it and casts it to bf16
        (megatron/core/fusions/fused_cross_entropy.py): 'megatron_fused', whose steps torch.compile runs; MindSpeed
        replaces ``jit_fuser`` by a no-op, which leaves the unfused loss' memory ('none'); elsewhere a fused kernel
        keeps the β_c logits and a log-sum-exp ('fused')."""
        return {"megatron": "megatron_fused", "mindspeed": "none"}.get(self.name, "fused")

    def keep_weight_casts(self, param_bytes: float, compute_bytes: float, sharding_mode: str) -> bool:
        return self.name == "mindformers" and param_bytes > compute_bytes and sharding_mode != "mf_op"


_MEGATRON = FrameworkDefaults(
    name="megatron", title="Megatron-LM", default_device="H100-80G",
    param_bytes=2, compute_bytes=2, grad_bytes=4, master_bytes=4, softmax_bytes=2, reduce_bytes=None,
    optimizer_impl="fused", fused_gated_act=True, fused_gated_act_experts=True,
    kv_repeat_with_fa=False, kv_repeat_without_fa=True, selective_rule="megatron",
    saves_gathered_input=False, megatron_vocab_padding=True, loss_working="megatron", o_tp=0.0,
    fsdp_native=False)

_TABLE = {
    "mindformers": FrameworkDefaults(
        name="mindformers", title="MindFormers", default_device="A2",
        param_bytes=4, compute_bytes=2, grad_bytes=None, master_bytes=0, softmax_bytes=4, reduce_bytes=None,
        optimizer_impl="fused", fused_gated_act=False, fused_gated_act_experts=True,
        kv_repeat_with_fa=False, kv_repeat_without_fa=True, selective_rule="mindformers",
        saves_gathered_input=True, megatron_vocab_padding=False, loss_working="mindformers", o_tp=0.5,
        fsdp_native=False),
    "megatron": _MEGATRON,
    # MindSpeed-LLM runs Megatron-core on Ascend: Megatron's defaults, an Ascend device by default
    "mindspeed": replace(_MEGATRON, name="mindspeed", title="MindSpeed-LLM", default_device="A2"),
    "torchtitan": FrameworkDefaults(
        name="torchtitan", title="torchtitan", default_device="H100-80G",
        param_bytes=4, compute_bytes=2, grad_bytes=4, master_bytes=0, softmax_bytes=4, reduce_bytes=4,
        optimizer_impl="fused", fused_gated_act=False, fused_gated_act_experts=False,
        kv_repeat_with_fa=False, kv_repeat_without_fa=False, selective_rule="torchtitan_op",
        saves_gathered_input=True, megatron_vocab_padding=False, loss_working="pytorch", o_tp=0.0,
        fsdp_native=True),
    "hyperparallel": FrameworkDefaults(
        name="hyperparallel", title="HyperParallel", default_device="A2",
        param_bytes=4, compute_bytes=2, grad_bytes=None, master_bytes=0, softmax_bytes=4, reduce_bytes=None,
        optimizer_impl="foreach", fused_gated_act=False, fused_gated_act_experts=False,
        kv_repeat_with_fa=True, kv_repeat_without_fa=True, selective_rule="hyperparallel",
        saves_gathered_input=True, megatron_vocab_padding=False, loss_working="pytorch", o_tp=0.0,
        fsdp_native=True),
    # the Hugging Face Trainer (LLaMA-Factory, accelerate) with DeepSpeed ZeRO or DDP: eager PyTorch modules
    # (unfused SwiGLU, SDPA repeating K/V for GQA), bf16 weights with fp32 masters in DeepSpeed's optimizer
    "hf_trainer": FrameworkDefaults(
        name="hf_trainer", title="Hugging Face Trainer (DeepSpeed)", default_device="H100-80G",
        param_bytes=2, compute_bytes=2, grad_bytes=2, master_bytes=4, softmax_bytes=2, reduce_bytes=None,
        optimizer_impl="fused", fused_gated_act=False, fused_gated_act_experts=False,
        kv_repeat_with_fa=True, kv_repeat_without_fa=True, selective_rule="megatron",
        saves_gathered_input=True, megatron_vocab_padding=False, loss_working="pytorch", o_tp=0.0,
        fsdp_native=False, eager_norm=True),
}

assert set(_TABLE) == set(FRAMEWORKS)


def framework_defaults(name: str) -> FrameworkDefaults:
    from .errors import ConfigError

    key = (name or "").strip().lower()
    if key not in _TABLE:
        raise ConfigError(msg("frameworks.unknown-framework-options", name=name, FRAMEWORKS=', '.join(FRAMEWORKS)),
                          key="options.framework")
    return _TABLE[key]
