"""FLOPs per layer, micro-batch and device (docs/model.md#flops [T-FLOP]).

Forward: matmuls 2·T·(tp_mm/t + rep_mm) + 2·R·(g+1)·h·hff_exp/etp; attention core 2·T·a·κ·s·(dqk + dv)/t (linear
attention 6·T·n_lv·lin_d_k·lin_d_v/t); head 2·T·h·v_pad/t; embedding 0. Backward: the matmuls twice (an input-gradient
half B and a weight-gradient half W, W = 0 for frozen layers), the attention core × 2.5 with flash attention (it
recomputes the scores) or × 2.0 otherwise. Recompute: full → the forward again; selective → the forward FLOPs of the
recomputed ops. Every function takes Python numbers or numpy arrays for the degrees (docs/model.md#stage-assembly).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import params as P
from .activations import option_switches
from .arr import Num
from .kinds import attended_keys, extra_core_flops, has_mixer
from .layout import EMBEDDING, MTP, NOOP, OUTPUT, VISION, Item
from .records import at_once
from .resolve import Dims, Flags

if TYPE_CHECKING:
    from .features import Features

EMBEDDING_COPY = "embedding_copy"
VISION_EXTRAS = "vision_extras"


# ------------------------------------------------------------------------------------------ formulas
def matmul_flops(T: Num, tp_mm: float, rep_mm: float, t: Num) -> Num:
    """[T-FLOP.mm] 2·T·(tp_mm/t + rep_mm): rep_mm is computed redundantly on every TP rank."""
    return 2 * T * (tp_mm / t + rep_mm)


def expert_flops(R: Num, g: int, h: int, hff_exp: int, etp: Num) -> Num:
    """[T-FLOP.exp] 2·R·(g+1)·h·hff_exp/etp: routed experts on the device's R token copies."""
    return 2 * R * (g + 1) * h * hff_exp / etp


def attention_core_flops(T: Num, a: int, kappa: float, s: Num, dqk: int, dv: int, t: Num) -> Num:
    """[T-FLOP.attn] 2·T·a·κ·s·(dqk + dv)/t: scores Q·Kᵀ and the weighted sum P·V over key length s."""
    return 2 * T * a * kappa * s * (dqk + dv) / t


def linear_attention_flops(T: Num, n_lv: int, d_k: int, d_v: int, t: Num) -> Num:
    """[T-FLOP.lin] 6·T·n_lv·lin_d_k·lin_d_v/t (gated-delta state update and read-out)."""
    return 6 * T * n_lv * d_k * d_v / t


def head_flops(T: Num, h: int, v_pad: Num, t: Num) -> Num:
    """[T-FLOP.head] 2·T·h·v_pad/t for the output head and every MTP head."""
    return 2 * T * h * v_pad / t


def causal_factor(override: float | None, causal: bool, flash_attention: bool) -> float:
    """κ (DECISION D20): ``causal_factor`` when set, else 0.5 for causal flash attention, 1.0 otherwise (an unfused
    kernel computes the masked half too; compat mode)."""
    if override is not None:
        return float(override)
    return 0.5 if (causal and flash_attention) else 1.0


def attention_backward_factor(flash_attention: bool) -> float:
    """Backward/forward FLOP ratio of the attention core: 2.5 with flash attention (scores recomputed), else 2.0."""
    return 2.5 if flash_attention else 2.0


# ------------------------------------------------------------------------------------------ per row
@dataclass(frozen=True)
class RowFlops:
    """FLOPs of one layer row for one micro-batch (slice) on one device."""

    fwd_mm: Num = 0.0     # forward matmuls (linear layers, routed experts, heads)
    fwd_attn: Num = 0.0   # forward attention core (or linear-attention recurrence)
    bwd_mm: Num = 0.0     # input-gradient matmuls (B)
    bwd_attn: Num = 0.0   # attention core backward (B)
    wgrad_mm: Num = 0.0   # weight-gradient matmuls (W)
    rc: Num = 0.0         # recomputed forward FLOPs
    fwd_fp8: Num = 0.0    # the FP8 part of fwd_mm (FP8 linears; at the FP8 peak)
    bwd_fp8: Num = 0.0    # … of bwd_mm
    wgrad_fp8: Num = 0.0  # … of wgrad_mm
    rc_fp8: Num = 0.0     # … of rc
    rc_attn: Num = 0.0    # the attention core's part of rc (timed at the attention rate)
    duplicate: Num = 0.0  # FLOPs every TP rank repeats (a replicated head, D58): timed, not model FLOPs

    @property
    def fwd(self) -> Num:
        return self.fwd_mm + self.fwd_attn

    @property
    def bwd(self) -> Num:
        """The input-gradient half B (attention included)."""
        return self.bwd_mm + self.bwd_attn

    @property
    def model(self) -> Num:
        """Model FLOPs (MFU): forward + backward, recompute and repeated work excluded."""
        return self.fwd + self.bwd + self.wgrad_mm - self.duplicate

    @property
    def hardware(self) -> Num:
        return self.model + self.rc


ZERO = RowFlops()


def flops_with(out: RowFlops, **changes: Num) -> RowFlops:
    """``replace(out, **changes)`` with the instance dict set at once (``records.at_once``: ``replace`` reads every
    field and runs the frozen dataclass's ``__init__``; every new plan's rows make these). ``flops_with(ZERO, …)``:
    ``RowFlops(…)``."""
    return at_once(RowFlops, **{**out.__dict__, **changes})


@dataclass(frozen=True)
class FlopContext:
    """What the per-row FLOPs need besides the row: dims, flags and the per-device token numbers."""

    dims: Dims
    flags: Flags
    T: Num            # tokens per device per micro-batch (slice)
    R: Num            # routed token copies per device per micro-batch
    s: Num            # key length (the full sequence)
    t: Num
    etp: Num
    v_pad: Num
    kappa: float
    bwd_attn: float   # attention backward factor
    sel: frozenset[str] = frozenset()  # switches a selective layer recomputes (docs/model.md#selective-recompute)
    vision_tokens: Num = 0.0
    vision_seq: Num = 0.0
    t_head: Num | None = None  # the head's TP split (D58); None: t
    # the body kinds' parameter elements, kept with the plan's activation table (P.kept_block); None: not kept
    elements: dict | None = field(default=None, compare=False, repr=False)


def _mixer_flops(c: FlopContext, kind: str) -> tuple[Num, Num]:
    """(matmul, core) forward FLOPs of a body layer of ``kind`` (mixer + FFN matmuls, attention core)."""
    d = c.dims
    el = P.kept_block(c.elements, d, kind)
    mm = matmul_flops(c.T, el.tp_mm, el.rep_mm, c.t)
    if kind.endswith("moe"):
        mm = mm + expert_flops(c.R, d.g, d.h, d.hff_exp, c.etp)
    if kind.startswith("lin_"):
        core = linear_attention_flops(c.T, d.n_lv, d.lin_d_k, d.lin_d_v, c.t)
    else:
        core = _core_flops(c, kind)
    return mm, core


def part_wgrad_flops(c: FlopContext, kind: str, parts: frozenset[str]) -> Num:
    """[T-FLOP.freeze] The weight-gradient FLOPs of a layer whose module groups ``parts`` alone train: those
    groups' matmuls (P.trainable_part), the routed experts' with the FFN."""
    d = c.dims
    el = P.trainable_part(d, kind, parts)
    out = matmul_flops(c.T, el.tp_mm, el.rep_mm, c.t)
    if kind.endswith("moe") and "mlp" in parts:
        out = out + expert_flops(c.R, d.g, d.h, d.hff_exp, c.etp)
    return out


def _core_flops(c: FlopContext, kind: str) -> Num:
    """The attention core over κ·s keys, or over the keys a kind described as data attends (estimator/kinds)."""
    d = c.dims
    keys = attended_keys(kind, d, c.s)
    if not has_mixer(kind):
        core = 0.0  # the kind's own mixer: its core FLOPs are its flops.core entries
    elif keys is None:
        core = attention_core_flops(c.T, d.a, c.kappa, c.s, d.dqk, d.dv, c.t)
    else:
        core = attention_core_flops(c.T, d.a, 1.0, keys, d.dqk, d.dv, c.t)
    split, replicated = extra_core_flops(kind, d, c.s)  # e.g. DSA's indexer scores (estimator/kinds/dsa.yaml)
    return core + c.T * split / c.t + c.T * replicated


def _matmul_sequence(d: Dims, kind: str) -> list[tuple[float, bool]]:
    """(weight elements, TP-divided) of the matmuls of a layer in forward order (torchtitan_op numbering, D43)."""
    seq: list[tuple[float, bool]] = []
    if not kind.startswith("lin_") and has_mixer(kind):
        h, a = d.h, d.a
        if d.mla:
            if d.dc_q > 0:
                seq += [(h * d.dc_q, False), (d.dc_q * a * d.dqk, True)]
            else:
                seq.append((h * a * d.dqk, True))
            seq += [(h * (d.dc_kv + d.dhr), False), (d.dc_kv * a * (d.dh + d.dv), True), (a * d.dv * h, True)]
        else:
            seq += [(h * d.q_w, True), (h * d.k_w, True), (h * d.v_w, True), (d.o_w * h, True)]
    if kind.endswith("moe"):
        seq.append((d.h * d.n_exp, False))
        if d.hff_sh:
            seq.append((d.h * d.hff_sh, True))
            if d.g > 1:
                seq.append(((d.g - 1) * d.h * d.hff_sh, True))
            seq.append((d.h * d.hff_sh, True))
    else:
        seq.append((d.h * d.hff, True))
        if d.g > 1:
            seq.append(((d.g - 1) * d.h * d.hff, True))
        seq.append((d.h * d.hff, True))
    return seq


def selective_flops(c: FlopContext, kind: str, option: str) -> Num:
    """Forward FLOPs a selective / comm / both layer recomputes: core → the attention core; mla_up → the MLA
    up-projections; qk_v → the q/k/v projections (the linear-attention state); mlp → the dense MLP; moe → the
    router, shared and routed experts; shared_experts → the shared experts; torchtitan_op → its even matmuls."""
    d = c.dims
    if option in ("selective", "both") and c.flags.rule == "torchtitan_op":
        seq = _matmul_sequence(d, kind)
        out: Num = 0.0
        for k, (elements, tp) in enumerate(seq, start=1):
            if k % 2 == 0:
                out = out + 2 * c.T * elements / (c.t if tp else 1)
        return out
    off = option_switches(option, c.sel)
    out = 0.0
    if not has_mixer(kind):
        off = off - {"core", "mla_up", "qk_v"}  # switches of the base's mixer, which this kind has not
    linear = kind.startswith("lin_")
    if "core" in off and not linear:
        out = out + _core_flops(c, kind)
    if "mla_up" in off and d.mla and not linear:
        q_up = d.dc_q * d.a * d.dqk if d.dc_q > 0 else 0
        out = out + 2 * c.T * (q_up + d.dc_kv * d.a * (d.dh + d.dv)) / c.t
    moe = kind.endswith("moe")
    if "mlp" in off and not moe:  # the dense MLP (Megatron --recompute-modules mlp)
        out = out + matmul_flops(c.T, (d.g + 1) * d.h * d.hff, 0, c.t)
    if moe and off & {"moe", "shared_experts"}:  # the shared experts, alone or within the MoE layer
        out = out + matmul_flops(c.T, (d.g + 1) * d.h * d.hff_sh, 0, c.t)
    if moe and "moe" in off:  # the router and the routed experts
        out = out + matmul_flops(c.T, 0, d.h * d.n_exp, c.t) + expert_flops(c.R, d.g, d.h, d.hff_exp, c.etp)
    if "qk_v" in off:
        if linear:
            out = out + matmul_flops(c.T, P.linear_attention(d).tp_mm, 0, c.t) + \
                linear_attention_flops(c.T, d.n_lv, d.lin_d_k, d.lin_d_v, c.t)
        elif not d.mla:
            out = out + 2 * c.T * d.h * (d.q_w + d.k_w + d.v_w) / c.t
    return out


def _assemble(fwd_mm: Num, fwd_core: Num, c: FlopContext, frozen: bool, rc: Num, backward: bool = True,
              rc_attn: Num = 0.0) -> RowFlops:
    if not backward:
        return flops_with(ZERO, fwd_mm=fwd_mm, fwd_attn=fwd_core, rc_attn=rc_attn)
    return flops_with(ZERO, fwd_mm=fwd_mm, fwd_attn=fwd_core, bwd_mm=fwd_mm, bwd_attn=c.bwd_attn * fwd_core,
                      wgrad_mm=0.0 if frozen else fwd_mm, rc=rc, rc_attn=rc_attn)


def row_flops(c: FlopContext, item: Item, frozen: bool = False, vision_dims: tuple | None = None) -> RowFlops:
    """[T-FLOP] FLOPs of one row (one micro-batch or slice, one device)."""
    kind = item.kind
    if kind in (EMBEDDING, EMBEDDING_COPY, NOOP):
        return ZERO
    if kind == OUTPUT:
        out = _assemble(head_flops(c.T, c.dims.h, c.v_pad, _t_head(c)), 0.0, c, frozen, 0.0)
        return _repeated_head(out, c, 2 if frozen else 3)
    if kind in (VISION, VISION_EXTRAS):
        return _vision_flops(c, kind, frozen, vision_dims)
    block = item.block if kind == MTP else kind
    mm, core = _mixer_flops(c, block)
    if kind == MTP:
        d = c.dims
        mm = mm + matmul_flops(c.T, 2 * d.h * d.h, 0, c.t) + head_flops(c.T, d.h, c.v_pad, _t_head(c))
    adapters = lora_flops(c, block)
    eight = fp8_flops(c, block)
    if item.option == "full":
        rc = mm + adapters + core
    elif item.option == "none":
        rc = 0.0
    else:
        rc = selective_flops(c, block, item.option)
    mla_mm, mla_core = mla_zero_memory_flops(c, item, block)
    rc = rc + zero_memory_flops(c, item) + mla_mm + mla_core
    rc8 = eight if item.option == "full" else 0.0
    rc_core = core if item.option == "full" else (
        0.0 if item.option == "none" else recomputed_core(c, block, item.option)) + mla_core
    if c.flags.feat.lora:
        # [T-FLOP.lora] a frozen base computes its input gradients only; the adapters train
        out = RowFlops(fwd_mm=mm + adapters, fwd_attn=core, bwd_mm=mm + adapters, bwd_attn=c.bwd_attn * core,
                       wgrad_mm=0.0 if frozen else adapters, rc=rc, fwd_fp8=eight, bwd_fp8=eight, rc_fp8=rc8,
                       rc_attn=rc_core)
        return _repeated_head(out, c, 2) if kind == MTP else out
    out = _assemble(mm, core, c, frozen, rc, rc_attn=rc_core)
    if kind == MTP:
        out = _repeated_head(out, c, 2 if frozen else 3)
    if not c.flags.feat.fp8_on:
        return out
    return flops_with(out, fwd_fp8=eight, bwd_fp8=eight, wgrad_fp8=0.0 if frozen else eight, rc_fp8=rc8)


def moe_zero_level(feat: Features, item: Item) -> str:
    """The --moe-zero-memory level of a row: its own (``Item.zero``), else the plan's; disable off MoE rows."""
    block = item.block if item.kind == MTP else item.kind
    if not block.endswith("moe"):
        return "disable"
    return feat.moe_zero_memory if item.zero is None else item.zero


def moe_zero_memory_on(feat: Features, item: Item) -> bool:
    """Whether --moe-zero-memory frees anything of this MoE row."""
    return moe_zero_level(feat, item) in ("level0", "level1")


def zero_memory_flops(c: FlopContext, item: Item) -> Num:
    """[T-FLOP.zero_memory] MindSpeed's --moe-zero-memory level1 rebuilds the routed and shared experts' fc1
    outputs with a second fc1 matmul in the backward: 2·R·g·h·hff_exp/etp + 2·T·g·h·hff_sh/t (level0 rebuilds
    only the activation function's output, no matmul)."""
    if moe_zero_level(c.flags.feat, item) != "level1" or item.option == "full":
        return 0.0
    d = c.dims
    return 2 * c.R * d.g * d.h * d.hff_exp / c.etp + matmul_flops(c.T, d.g * d.h * d.hff_sh, 0, c.t)


def mla_zero_memory_flops(c: FlopContext, item: Item, kind: str) -> tuple[Num, Num]:
    """[T-FLOP.mla_zero_memory] (matmul, core) FLOPs MindSpeed-LLM's --mla-zero-memory reruns in the backward: the
    MLA attention from its input up to linear_proj — the latent down-projections (replicated), the up-projections
    (column-parallel) and the attention core."""
    d = c.dims
    if not (c.flags.feat.mla_zero_memory and d.mla) or item.option == "full" or kind.startswith("lin_") or \
            not has_mixer(kind):
        return 0.0, 0.0
    tp_mm = rep_mm = 0.0
    for name, (k, n, placement) in P.linear_modules(d, kind).items():
        if name in ("o", "fc1", "down"):
            continue
        if placement == "rep":
            rep_mm += k * n
        else:
            tp_mm += k * n
    return matmul_flops(c.T, tp_mm, rep_mm, c.t), attention_core_flops(c.T, d.a, c.kappa, c.s, d.dqk, d.dv, c.t)


def recomputed_core(c: FlopContext, kind: str, option: str) -> Num:
    """The attention core FLOPs a selective layer recomputes (the ``core`` switch; never under torchtitan_op)."""
    if kind.startswith("lin_") or not has_mixer(kind) or (
            option in ("selective", "both") and c.flags.rule == "torchtitan_op"):
        return 0.0
    if "core" not in option_switches(option, c.sel):
        return 0.0
    d = c.dims
    return attention_core_flops(c.T, d.a, c.kappa, c.s, d.dqk, d.dv, c.t)


def _t_head(c: FlopContext) -> Num:
    return c.t if c.t_head is None else c.t_head


def _repeated_head(out: RowFlops, c: FlopContext, passes: int) -> RowFlops:
    """A head split over fewer ranks than t (D58) repeats the difference on every TP rank, in each of its
    ``passes`` (forward, input gradient, weight gradient): timed, but not model FLOPs."""
    if c.t_head is None:
        return out
    extra = head_flops(c.T, c.dims.h, c.v_pad, c.t_head) - head_flops(c.T, c.dims.h, c.v_pad, c.t)
    return flops_with(out, duplicate=passes * extra)


def fp8_flops(c: FlopContext, kind: str) -> Num:
    """[T-FLOP.fp8] Forward FLOPs of a body layer's FP8 linears, 2·T·(tp/t + rep) over ``params.fp8_linear``,
    plus the routed experts' when they run FP8 (0 without an FP8 recipe)."""
    feat = c.flags.feat
    if not feat.fp8_on or kind == "noop":
        return 0.0
    el = P.fp8_linear(c.dims, kind)
    out = matmul_flops(c.T, el.tp_mm, el.rep_mm, c.t)
    if feat.fp8_experts and kind.endswith("moe"):
        d = c.dims
        out = out + expert_flops(c.R, d.g, d.h, d.hff_exp, c.etp)
    return out


def lora_flops(c: FlopContext, kind: str) -> Num:
    """[T-FLOP.lora] 2·T·(tp/t + rep) over the adapter elements of a body layer: x·A then (x·A)·B per adapted
    module, the replicated halves computed on every TP rank (0 without LoRA)."""
    feat = c.flags.feat
    if not feat.lora:
        return 0.0
    el = P.lora_adapters(c.dims, kind, feat.lora_targets, feat.lora_rank)
    return matmul_flops(c.T, el.tp_mm, el.rep_mm, c.t)


def _vision_flops(c: FlopContext, kind: str, frozen: bool, vision_dims: tuple | None) -> RowFlops:
    """A vision layer at T_v tokens with the vision dims (bidirectional attention, κ = 1); the patch embedding and
    merger (``vision_extras``) as their replicated matmuls at T_v tokens. A frozen module runs forward only."""
    if vision_dims is None:
        return ZERO
    tp_mm, rep_mm, heads, head_dim = vision_dims
    T_v = c.vision_tokens
    mm = matmul_flops(T_v, tp_mm, rep_mm, c.t)
    core = 0.0 if kind == VISION_EXTRAS else attention_core_flops(T_v, heads, 1.0, c.vision_seq, head_dim, head_dim,
                                                                 c.t)
    return _assemble(mm, core, c, frozen, 0.0, backward=not frozen)


__all__ = ["FlopContext", "RowFlops", "attention_backward_factor", "attention_core_flops", "causal_factor",
           "expert_flops", "flops_with", "fp8_flops", "head_flops", "linear_attention_flops", "lora_flops",
           "matmul_flops", "row_flops", "selective_flops"]
