"""What real runs turn on (issue 11), resolved per plan: FP8/MXFP8 matmuls, torch.compile and the loss kernel,
async TP and overlapped data-parallel reductions, LoRA/QLoRA, offload and swap to host memory.

``Strategy`` states what the user's config says (``None``: the framework's default); ``resolve_features`` turns
that into the settings the formulas read, recording every default it fills in as an assumption.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .frameworks import FrameworkDefaults
from .strategy import Strategy
from .warnings import Assumption, EstimateWarning

# bytes per element of an FP8 tensor with its scales (tensorwise/delayed/rowwise: one scale per tensor or row,
# negligible; blockwise: an fp32 scale per 1×128 activation tile and per 128×128 weight block, DeepSeek-V3 §3.3;
# MXFP8: an E8M0 byte per 32 elements, OCP MX v1.0)
FP8_ACT_BYTES = {"tensorwise": 1.0, "delayed": 1.0, "rowwise": 1.0, "blockwise": 1.0 + 4 / 128, "mxfp8": 1.0 + 1 / 32}
FP8_WEIGHT_BYTES = {"tensorwise": 1.0, "delayed": 1.0, "rowwise": 1.0, "blockwise": 1.0 + 4 / (128 * 128),
                    "mxfp8": 1.0 + 1 / 32}
FP8_FRAMEWORKS = ("megatron", "mindspeed", "torchtitan")
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
    loss_fusion: str = "none"         # none | fused | chunked
    async_tp: bool = False
    overlap_grad_reduce: bool | None = None   # None: the overlap_dp knob decides
    overlap_param_gather: bool | None = None
    cp_load_balance: bool = True
    peft: str = "none"
    lora_rank: int = 0
    lora_targets: frozenset[str] = field(default_factory=frozenset)
    lora_dropout: float = 0.0
    qlora_double_quant: bool = True
    offload_groups: frozenset[str] = field(default_factory=frozenset)
    offload_optimizer: bool = False
    offload_params: bool = False

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
                "Transformer Engine runs the experts' grouped GEMMs in FP8" if fp8_experts else
                "torchtitan quantizes experts only when [quantize.grouped_mm.float8] names them"))
        elif st.fp8_experts is not None:
            fp8_experts = st.fp8_experts
        if fp8 == "delayed":
            if st.fp8_amax_history is None:
                assumptions.append(Assumption("strategy.fp8_amax_history", 1, "Megatron's --fp8-amax-history-len"))
            else:
                amax = st.fp8_amax_history
    compile_model = "model" in st.compile
    if st.loss_fusion is not None:
        fusion = st.loss_fusion
    else:
        fusion = "fused" if "loss" in st.compile else "none"
    balance = True if st.cp_load_balance is None else st.cp_load_balance
    return Features(
        fp8=fp8, fp8_impl=impl, fp8_param=st.fp8_param and fp8 != "none", fp8_experts=fp8_experts,
        fp8_amax_history=amax, compile_model=compile_model, loss_fusion=fusion, async_tp=st.async_tp,
        overlap_grad_reduce=st.overlap_grad_reduce, overlap_param_gather=st.overlap_param_gather,
        cp_load_balance=balance, peft=st.peft or "none", lora_rank=st.lora_rank,
        lora_targets=frozenset(st.lora_targets), lora_dropout=st.lora_dropout,
        qlora_double_quant=st.qlora_double_quant, offload_groups=frozenset(st.offload_activations),
        offload_optimizer=st.offload_optimizer, offload_params=st.offload_params)


def fp8_problem(recipe: str | None, framework: str, peak_flops: tuple[tuple[str, float], ...], device: str) -> str:
    """Why an FP8 recipe cannot run here ('' when it can): the device has no FP8 (MXFP8) matmul peak — Ascend
    A2/A3 and A100 have none — or the framework's FP8 path is not modelled."""
    if recipe in (None, "none"):
        return ""
    table = dict(peak_flops)
    need = "mxfp8" if recipe == "mxfp8" else "fp8"
    if not table.get(need):
        return f"{device} has no {need.upper()} matmuls (no peak_flops.{need} in its preset)"
    if framework not in FP8_FRAMEWORKS:
        return f"FP8 training in {framework} is not modelled (only {', '.join(FP8_FRAMEWORKS)})"
    return ""


def unpriced_warnings(st: Strategy) -> list[EstimateWarning]:
    """Features a plan states that the estimator does not price yet: said out loud, never silently dropped."""
    out = []
    for on, text in ((st.fp8 not in (None, "none"), f"FP8 recipe {st.fp8!r}"),
                     (bool(st.compile), f"torch.compile of {', '.join(st.compile)}"),
                     (st.loss_fusion not in (None, "none"), f"loss fusion {st.loss_fusion!r}"),
                     (st.async_tp, "async tensor parallelism"),
                     (st.overlap_grad_reduce is not None, "overlap_grad_reduce"),
                     (st.overlap_param_gather is not None, "overlap_param_gather"),
                     (st.cp_load_balance is False, "context parallelism without load balancing"),
                     (st.peft not in (None, "none"), f"PEFT {st.peft!r}"),
                     (bool(st.offload_activations), "activation offload"),
                     (st.offload_optimizer, "optimizer offload"), (st.offload_params, "parameter offload")):
        if on:
            out.append(EstimateWarning("W-UNMODELLED", f"{text} is read but not priced yet: priced without it"))
    return out


__all__ = ["FP8_ACT_BYTES", "FP8_FRAMEWORKS", "FP8_WEIGHT_BYTES", "Features", "fp8_problem", "nf4_bytes",
           "resolve_features", "unpriced_warnings"]
