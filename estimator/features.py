"""What real runs turn on (issue 11), resolved per plan: FP8/MXFP8 matmuls, torch.compile and the loss kernel,
async TP and overlapped data-parallel reductions, LoRA/QLoRA, offload and swap to host memory.

``Strategy`` states what the user's config says (``None``: the framework's default); ``resolve_features`` turns
that into the settings the formulas read, recording every default it fills in as an assumption.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .frameworks import FrameworkDefaults
from .messages import Text, msg
from .strategy import Strategy
from .warnings import Assumption, EstimateWarning

# bytes per element of an FP8 tensor with its scales (tensorwise/delayed/rowwise: one scale per tensor or row,
# negligible; blockwise: an fp32 scale per 1×128 activation tile and per 128×128 weight block, DeepSeek-V3 §3.3;
# MXFP8: an E8M0 byte per 32 elements, OCP MX v1.0)
FP8_ACT_BYTES = {"tensorwise": 1.0, "delayed": 1.0, "rowwise": 1.0, "blockwise": 1.0 + 4 / 128, "mxfp8": 1.0 + 1 / 32}
FP8_WEIGHT_BYTES = {"tensorwise": 1.0, "delayed": 1.0, "rowwise": 1.0, "blockwise": 1.0 + 4 / (128 * 128),
                    "mxfp8": 1.0 + 1 / 32}
FP8_FRAMEWORKS = ("megatron", "mindspeed", "torchtitan")
# LoRA target module names as frameworks write them -> canonical targets (strategy.LORA_TARGETS): Megatron/mcore
# (MindSpeed-LLM, Megatron-Bridge), Hugging Face PEFT (LLaMA-Factory), MindFormers (legacy llama, DeepSeek)
LORA_MODULE_NAMES = {
    "linear_qkv": "qkv", "linear_proj": "o", "linear_fc1": "fc1", "linear_fc2": "down",
    "linear_q_proj": "q", "linear_q_down_proj": "q_a", "linear_q_up_proj": "q_b",
    "linear_kv_down_proj": "kv_a", "linear_kv_up_proj": "kv_b",
    "q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "gate_proj": "gate", "up_proj": "up",
    "down_proj": "down", "qkv_proj": "qkv", "gate_up_proj": "fc1", "query_key_value": "qkv",
    "q_a_proj": "q_a", "q_b_proj": "q_b", "kv_a_proj_with_mqa": "kv_a", "kv_b_proj": "kv_b",
    "wq": "q", "wk": "k", "wv": "v", "wo": "o", "w1": "gate", "w3": "up", "w2": "down", "w_qkv": "qkv",
    "w_gate_hidden": "fc1", "q2l_proj": "q_a", "l2q_proj": "q_b", "kv2l": "kv_a", "lkv2kv": "kv_b",
}
# canonical target -> the Megatron module name a launch script writes
MEGATRON_LORA_NAMES = {"qkv": "linear_qkv", "o": "linear_proj", "fc1": "linear_fc1", "down": "linear_fc2",
                       "q": "linear_q_proj", "q_a": "linear_q_down_proj", "q_b": "linear_q_up_proj",
                       "kv_a": "linear_kv_down_proj", "kv_b": "linear_kv_up_proj"}


def lora_targets_of(names: list[str] | tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """(canonical targets, names not known) of module names as a framework writes them (a dotted path or a
    regular expression keeps its last identifier: ``model.layers.*.self_attn.q_proj`` → q)."""
    targets: list[str] = []
    unknown: list[str] = []
    for name in names:
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(name))
        target = LORA_MODULE_NAMES.get(words[-1]) if words else None
        if target is None:
            unknown.append(str(name))
        elif target not in targets:
            targets.append(target)
    return tuple(targets), unknown


# NF4 (QLoRA, Dettmers et al. 2023 §3): 4-bit codes, an absmax per 64-element block; double quantisation stores
# those absmax values as 8-bit codes with an fp32 constant per 256 blocks
NF4_BLOCK = 64
NF4_DQ_BLOCK = 256


@dataclass(frozen=True)
class Features:
    fp8: str = "none"                 # recipe (FP8_RECIPES)
    fp8_impl: str = "te"              # te: Transformer Engine (Megatron family); torchao: Float8Linear (torchtitan)
    fp8_param: bool = False           # FP8 weights stored (te) or all-gathered (torchao FSDP2)
    fp8_experts: bool = False         # routed experts' grouped GEMMs in FP8
    fp8_amax_history: int = 1         # delayed scaling: amax history length
    compile_model: bool = False
    loss_fusion: str = "none"         # none | fused | chunked | megatron_fused (FrameworkDefaults.fused_loss)
    async_tp: bool = False
    overlap_grad_reduce: bool | None = None   # None: the overlap_dp knob decides
    overlap_param_gather: bool | None = None
    cp_load_balance: bool = True
    peft: str = "none"
    lora_rank: int = 0
    lora_targets: frozenset[str] = field(default_factory=frozenset)
    lora_dropout: float = 0.0
    qlora_double_quant: bool = True
    frozen_inputs_freed: bool = True  # a frozen linear keeps no input (TE, PyTorch autograd) vs Megatron's local
    offload_groups: frozenset[str] = field(default_factory=frozenset)
    offload_optimizer: bool = False
    offload_params: bool = False
    moe_zero_memory: str = "disable"  # MindSpeed --moe-zero-memory: disable | level0 | level1 (ZERO_MEMORY_SLOTS)
    mla_zero_memory: bool = False     # MindSpeed-LLM --mla-zero-memory (MLA_ZERO_MEMORY_SLOTS)
    # freeze fine-tuning [A-FREEZE]: the body layers that train (None: every layer), their training module groups
    # (empty: all), and whether activation checkpointing skips layers without trainable weights
    trainable_layers: frozenset[int] | None = None
    trainable_parts: frozenset[str] = field(default_factory=frozenset)
    checkpoint_trainable_only: bool = False

    @property
    def fp8_on(self) -> bool:
        return self.fp8 != "none"

    @property
    def lora(self) -> bool:
        """LoRA adapters on a frozen base (QLoRA included)."""
        return self.peft in ("lora", "qlora")

    @property
    def fp8_act_bytes(self) -> float:
        return FP8_ACT_BYTES.get(self.fp8, 1.0)

    @property
    def fp8_weight_bytes(self) -> float:
        return FP8_WEIGHT_BYTES.get(self.fp8, 1.0)


def nf4_bytes(double_quant: bool) -> float:
    """[P-NF4] Bytes per quantised base weight: 0.5 for the 4-bit code plus the quantisation constants — an fp32
    absmax per 64 weights (4/64), or with double quantisation an 8-bit absmax per 64 weights and an fp32 constant
    per 256 blocks (1/64 + 4/(64·256)); QLoRA §3: 0.5 → 0.127 bits of constants per parameter."""
    if double_quant:
        return 0.5 + 1 / NF4_BLOCK + 4 / (NF4_BLOCK * NF4_DQ_BLOCK)
    return 0.5 + 4 / NF4_BLOCK


def resolve_features(st: Strategy, fw: FrameworkDefaults, moe: bool, assumptions: list[Assumption]) -> Features:
    """The plan's feature settings, framework defaults filled in (each recorded in ``assumptions``)."""
    fp8 = st.fp8 or "none"
    impl = "torchao" if fw.fsdp_native else "te"
    fp8_experts = False
    amax = 1
    if fp8 != "none":
        if st.fp8_experts is None:
            fp8_experts = impl == "te" and moe
        if st.fp8_experts is None and moe:
            assumptions.append(Assumption(
                "strategy.fp8_experts", fp8_experts,
                msg("features.transformer-engine-runs") if fp8_experts else
                msg("features.torchtitan-quantizes-experts")))
        elif st.fp8_experts is not None:
            fp8_experts = st.fp8_experts
        if fp8 == "delayed":
            if st.fp8_amax_history is None:
                assumptions.append(Assumption("strategy.fp8_amax_history", 1, msg("features.megatron-s-fp8")))
            else:
                amax = st.fp8_amax_history
    compile_model = "model" in st.compile
    if st.loss_fusion is not None:
        fusion = st.loss_fusion
    else:
        fusion = "fused" if "loss" in st.compile else "none"
    if fusion == "fused":
        fusion = fw.fused_loss()
    balance = True if st.cp_load_balance is None else st.cp_load_balance
    return Features(
        fp8=fp8, fp8_impl=impl, fp8_param=st.fp8_param and fp8 != "none", fp8_experts=fp8_experts,
        fp8_amax_history=amax, compile_model=compile_model, loss_fusion=fusion, async_tp=st.async_tp,
        overlap_grad_reduce=st.overlap_grad_reduce, overlap_param_gather=st.overlap_param_gather,
        cp_load_balance=balance, peft=st.peft or "none", lora_rank=st.lora_rank,
        lora_targets=frozenset(st.lora_targets), lora_dropout=st.lora_dropout,
        qlora_double_quant=st.qlora_double_quant, frozen_inputs_freed=fw.name != "mindspeed",
        offload_groups=frozenset(st.offload_activations),
        offload_optimizer=st.offload_optimizer, offload_params=st.offload_params,
        moe_zero_memory=st.moe_zero_memory if st.moe_zero_memory in ("level0", "level1") else "disable",
        mla_zero_memory=st.mla_zero_memory,
        trainable_layers=None if st.trainable_layers is None else frozenset(st.trainable_layers),
        trainable_parts=frozenset(st.trainable_parts), checkpoint_trainable_only=st.checkpoint_trainable_only)


def fp8_problem(recipe: str | None, framework: str, peak_flops: tuple[tuple[str, float], ...],
                device: str) -> Text:
    """Why an FP8 recipe cannot run here ('' when it can): the device has no FP8 (MXFP8) matmul peak — Ascend
    A2/A3 and A100 have none — or the framework's FP8 path is not modelled."""
    if recipe in (None, "none"):
        return ""
    table = dict(peak_flops)
    need = "mxfp8" if recipe == "mxfp8" else "fp8"
    if not table.get(need):
        return msg("R-FP8-DEVICE.device", device=device, upper=need.upper(), need=need)
    if framework not in FP8_FRAMEWORKS:
        return msg("R-FP8-DEVICE.framework", framework=framework, known=", ".join(FP8_FRAMEWORKS))
    return ""


def peft_problem(st: Strategy) -> Text:
    """Why a PEFT plan cannot be priced ('' when it can): adapters need a rank and target modules; adapters and
    a freeze fine-tuning's layer choice are two methods (LLaMA-Factory's finetuning_type is one or the other)."""
    if st.peft in (None, "none"):
        return ""
    if st.trainable_layers is not None:
        return msg("R-PEFT.freeze", peft=st.peft)
    if st.lora_rank < 1:
        return msg("R-PEFT.rank", peft=st.peft, rank=st.lora_rank)
    if not st.lora_targets:
        return msg("R-PEFT.targets", peft=st.peft)
    if not 0 <= st.lora_dropout < 1:
        return msg("R-PEFT.dropout", dropout=st.lora_dropout)
    return ""


def unpriced_warnings(st: Strategy, fsdp2: bool = False) -> list[EstimateWarning]:
    """What a plan states that the estimator prices only in part: said out loud, never silently dropped."""
    out = []
    if st.offload_optimizer or st.offload_params:
        out.append(EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.optimizer-step-host")))
    if fsdp2 and st.trainable_layers is not None:
        out.append(EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.freeze-fsdp2")))
    return out


__all__ = ["FP8_ACT_BYTES", "FP8_FRAMEWORKS", "FP8_WEIGHT_BYTES", "LORA_MODULE_NAMES", "MEGATRON_LORA_NAMES",
           "Features", "fp8_problem", "lora_targets_of", "nf4_bytes", "peft_problem", "resolve_features",
           "unpriced_warnings"]
