"""Step-time model (spec §7): compute and exposed communication per layer row, stage times per micro-batch
[§7.5], the pipeline formulas [T-PIPE] and the step total [§7.7] with its parts, tokens/s/device and MFU.

FLOPs live in ``flops`` (§7.1), collectives in ``comm`` (§7.3–§7.4). Overlap and efficiency knobs (§7.8) are
editable data: read from ``RunOptions`` when it carries the field (``overlap_tp``, … see ``KNOBS``), else the
module defaults below. Degrees may be numpy arrays (spec §8.8); the number of stages and chunks may not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import comm as C
from . import params as P
from .arr import Num, maximum, where
from .flops import (
    EMBEDDING_COPY,
    VISION_EXTRAS,
    FlopContext,
    RowFlops,
    attention_backward_factor,
    causal_factor,
    row_flops,
)
from .layout import EMBEDDING, MTP, NOOP, OUTPUT, VISION, build_layout, slot_index, slot_position
from .resolve import Resolved, dense_domain, resolve
from .stage import Row, StagePricer
from .static import gather_bytes, gather_trainable_bytes

if TYPE_CHECKING:
    from .hardware import Hardware
    from .model import ModelSpec
    from .options import RunOptions
    from .strategy import Strategy

# §7.8 defaults. None: the rule in ``knobs`` (o_tp per framework, o_cp per algorithm, o_ep per schedule).
KNOBS: dict[str, float | None] = {
    "overlap_tp": None,        # 0.5 MindFormers (upstream-validated), else 0.0 (frameworks.o_tp)
    "overlap_cp": None,        # 0.5 ring, 0.0 Ulysses and all-gather (exposed; hybrid: each part its own)
    "overlap_ep": None,        # 0.0; DualPipeV hides EP behind the overlapped pair (1.0)
    "overlap_pp": 0.0,
    "overlap_dp": 0.9,         # per-step gradient reduction / parameter gather (upstream)
    "overlap_fsdp": 0.8,       # per-micro-batch parameter gathers and gradient reduce-scatters
    "k_ew_fwd": 1.0,           # elementwise HBM traffic per stored activation byte, forward
    "k_ew_bwd": 2.0,           # … backward
    "pp_scatter_gather": 0.0,  # 1: p2p tensors split over TP ranks even without SP (Megatron-LM ≤ 2022 default)
}
COMM_KINDS = ("tp", "cp", "ep", "pp", "fsdp")
PARTS = ("fwd", "bwd", "recompute", "tp", "cp", "ep", "dp", "pp", "bubble", "optimizer")


@dataclass(frozen=True)
class Knobs:
    o_tp: float
    o_cp_ring: float
    o_cp_ulysses: float
    o_cp_allgather: float
    o_ep: float
    o_pp: float
    o_dp: float
    o_fsdp: float
    k_ew_fwd: float
    k_ew_bwd: float
    pp_scatter_gather: bool = False


def _option(r: Resolved, name: str) -> float | None:
    value = getattr(r.options, name, None)
    return KNOBS.get(name) if value is None else float(value)


def knobs(r: Resolved) -> Knobs:
    """The §7.8 overlaps and elementwise factors of a plan (RunOptions field > module default > rule)."""
    o_tp = _option(r, "overlap_tp")
    o_cp = _option(r, "overlap_cp")
    o_ep = _option(r, "overlap_ep")
    return Knobs(
        o_tp=r.fw.o_tp if o_tp is None else o_tp,
        o_cp_ring=0.5 if o_cp is None else o_cp, o_cp_ulysses=0.0 if o_cp is None else o_cp,
        o_cp_allgather=0.0 if o_cp is None else o_cp,
        o_ep=(1.0 if r.flags.schedule == "dualpipev" else 0.0) if o_ep is None else o_ep,
        o_pp=float(_option(r, "overlap_pp") or 0.0), o_dp=float(_option(r, "overlap_dp") or 0.0),
        o_fsdp=float(_option(r, "overlap_fsdp") or 0.0), k_ew_fwd=float(_option(r, "k_ew_fwd") or 0.0),
        k_ew_bwd=float(_option(r, "k_ew_bwd") or 0.0),
        pp_scatter_gather=bool(_option(r, "pp_scatter_gather")))


# ------------------------------------------------------------------------------------------ records
@dataclass(frozen=True)
class StageTimes:
    """Per micro-batch (per slice for Seq1F1B) times of one stage, seconds, exposed comm included [§7.5].
    ``chunk_B`` is the input-gradient half of each chunk, ``chunk_Rc`` its recompute (B^c of the V formulas is
    chunk_B + chunk_Rc). ``comm``: exposed comm per kind — tp, cp, ep, pp, fsdp per micro-batch, dp per step."""

    F: Num
    B: Num
    W: Num
    Rc: Num
    chunk_F: tuple[Num, ...]
    chunk_B: tuple[Num, ...]
    chunk_W: tuple[Num, ...]
    chunk_Rc: tuple[Num, ...] = ()
    comm: dict[str, Num] = field(default_factory=dict)
    compute: dict[str, Num] = field(default_factory=dict)  # fwd, bwd (B + W), recompute: compute only
    optimizer: Num = 0.0          # t_opt of the stage (per step)
    model_flops: Num = 0.0        # per micro-batch (slice) and device, recompute excluded
    hardware_flops: Num = 0.0     # … recompute included

    @property
    def S(self) -> Num:
        return self.F + self.B + self.W + self.Rc

    @property
    def Bk(self) -> Num:
        return self.B + self.W + self.Rc

    def parts(self) -> dict[str, Num]:
        """S split into compute and exposed comm: fwd, bwd, recompute, tp, cp, ep, pp, fsdp (sum = S)."""
        out = dict(self.compute)
        out.update({k: self.comm.get(k, 0.0) for k in COMM_KINDS})
        return out


@dataclass(frozen=True)
class StepTime:
    step_time_s: Num
    parts: dict[str, Num]    # PARTS, seconds; sum = step_time_s
    stages: tuple[StageTimes, ...]
    tokens_per_s_per_device: Num
    mfu: Num
    model_flops_per_step: Num
    hardware_flops_per_step: Num = 0.0
    pipeline_s: Num = 0.0    # T_pipe of one flush
    schedule: str = "1f1b"


# ------------------------------------------------------------------------------------------ context
class _Ctx:
    """Everything per plan that the row and stage times share (links, rates, knobs, FLOP context)."""

    def __init__(self, pricer: StagePricer) -> None:
        r = self.r = pricer.r
        self.pricer = pricer
        self.row_cache: dict[tuple, RowTime] = {}
        d, w, f, par, hw = r.dims, r.widths, r.flags, r.par, r.hardware
        self.k = knobs(r)
        self.rate_mm = hw.flops(w.c) * hw.eff_matmul
        feat = f.feat
        # FP8 GEMMs at the device's FP8 (MXFP8) peak; R-FP8-DEVICE refuses a device without one
        self.rate_fp8 = (hw.peak("mxfp8" if feat.fp8 == "mxfp8" else "fp8") or 0.0) * hw.eff_matmul \
            if feat.fp8_on else 0.0
        self.rate_hbm = hw.hbm_bandwidth * hw.eff_hbm
        kappa = causal_factor(r.options.causal_factor, f.causal, f.flash_attention)
        self.vision_dims = self._vision_dims()
        self.fc = FlopContext(dims=d, flags=f, T=pricer.T, R=pricer.R, s=par.s, t=par.t, etp=par.etp,
                              v_pad=pricer.vpad, kappa=kappa, bwd_attn=attention_backward_factor(f.flash_attention),
                              sel=pricer.acts.sel, vision_tokens=self._vision_tokens(), vision_seq=self._vision_seq())
        t, cp, u = par.t, par.cp, par.u
        self.tp = C.level_link(hw, t, 1)
        self.ring = C.level_link(hw, cp / u, t * u)
        self.uly = C.level_link(hw, u, t)
        self.ep = C.level_link(hw, par.ep, par.etp)
        self.etp = C.level_link(hw, par.etp, 1)
        self.pp = C.level_link(hw, par.p, t * cp * par.d)
        D = dense_domain(f, par)
        stride = t if f.span_cp else t * cp
        self.dp_domain = C.level_link(hw, D, stride)
        self.dp_shard = C.level_link(hw, par.os, stride)
        self.dp_replicas = C.level_link(hw, D / par.os, stride * par.os)
        self.edp_shard = C.level_link(hw, par.os_e, par.etp * par.ep)
        self.edp_replicas = C.level_link(hw, par.edp / par.os_e, par.etp * par.ep * par.os_e)
        self.edp_domain = C.level_link(hw, par.edp, par.etp * par.ep)
        T, bc = pricer.T, w.c
        self.M_h = bc * d.h * T
        self.M_kv = bc * d.n_kv * (d.dqk + d.dv) * T / t
        self.M_qkv = bc * (d.q_w + d.k_w + d.v_w) * T / t
        self.M_o = bc * d.o_w * T / t
        self.M_r = bc * d.h * pricer.R
        self.M_p = bc * d.h * T / (t if self.k.pp_scatter_gather else par.sp_div)

    def _vision_dims(self) -> tuple | None:
        vision = self.r.model.vision
        if vision is None:
            return None
        el = P.vision_layer(vision)
        heads = vision.num_attention_heads
        return (el.tp_mm, el.rep_mm, heads, vision.head_dim or vision.hidden_size // heads)

    def vision_extra_dims(self) -> tuple | None:
        vision = self.r.model.vision
        if vision is None:
            return None
        el = P.vision_extras(vision, self.r.dims.h)
        return (el.tp_mm, el.rep_mm, 1, 1)

    def _vision_seq(self) -> float:
        vision = self.r.model.vision
        if vision is None:
            return 0.0
        if vision.seq_length:
            return vision.seq_length
        if vision.num_position_embeddings:
            return vision.num_position_embeddings / vision.spatial_merge_size ** 2
        return 1024

    def _vision_tokens(self) -> Num:
        return self.r.par.b * self._vision_seq() / self.r.par.cp


# ------------------------------------------------------------------------------------------ rows
@dataclass(frozen=True)
class RowTime:
    """Compute seconds of one row (F, B, W, Rc) and its exposed comm per kind as (forward, backward, recompute)."""

    F: Num
    B: Num
    W: Num
    Rc: Num
    comm: dict[str, tuple[Num, Num, Num]]
    flops: RowFlops


def compute_time(flop: Num, rate: Num) -> Num:
    """[T-COMP.mm] t_mm = FLOPs/(peak_flops[β_c]·eff_matmul)."""
    return flop / rate


def elementwise_time(k_ew: float, act_bytes: Num, rate_hbm: Num) -> Num:
    """[T-COMP.ew] t_ew = k_ew·A(ℓ, none)/(hbm_Bps·eff_hbm)."""
    return k_ew * act_bytes / rate_hbm


def mm_time(ctx: _Ctx, flops: Num, fp8: Num) -> Num:
    """[T-COMP.mm] with FP8: (FLOPs − FP8 FLOPs)/(peak[β_c]·eff) + FP8 FLOPs/(peak[fp8 | mxfp8]·eff)."""
    if ctx.rate_fp8:
        return compute_time(flops - fp8, ctx.rate_mm) + compute_time(fp8, ctx.rate_fp8)
    return compute_time(flops, ctx.rate_mm)


def fp8_cast_time(ctx: _Ctx, row: Row) -> tuple[Num, Num]:
    """[T-COMP.fp8cast] HBM time of the quantisation kernels of a layer's FP8 linears, (forward, backward): each
    reads β_c and writes β_8 per copy. Transformer Engine quantises each input rowwise and columnwise in the
    forward and each output gradient both ways in the backward (weights are cast once per step, not priced);
    torchao casts the input once, again in the backward from the saved high-precision input, the output gradient
    both ways, and the weight in each pass unless it arrived in FP8 (float8 all-gather)."""
    r = ctx.r
    feat = r.flags.feat
    item = row.item
    kind = item.block if item.kind == MTP else item.kind
    if not feat.fp8_on or item.kind in (NOOP, EMBEDDING, OUTPUT, EMBEDDING_COPY, VISION, VISION_EXTRAS):
        return 0.0, 0.0
    d, par, bc, b8 = r.dims, r.par, r.widths.c, feat.fp8_act_bytes
    T = ctx.pricer.T
    inputs = grads = 0.0
    for n_in, n_out, placement in P.linear_modules(d, kind).values():
        split_in = placement == "row"
        inputs += n_in / (par.t if split_in else 1)
        grads += n_out / (1 if split_in or placement == "rep" else par.t)
    inputs, grads = T * inputs, T * grads
    if feat.fp8_experts and kind.endswith("moe"):
        R = ctx.pricer.R
        inputs = inputs + R * (d.h + d.hff_exp / par.etp)
        grads = grads + R * (d.g * d.hff_exp / par.etp + d.h)
    local = row.local
    weights = local.fp8 + local.fp8_expert
    if feat.fp8_impl == "te":
        fwd, bwd = inputs * (bc + 2 * b8), grads * (bc + 2 * b8)
    else:
        weight_cast = 0.0 if feat.fp8_param else weights * (bc + feat.fp8_weight_bytes)
        fwd = inputs * (bc + b8) + weight_cast
        bwd = inputs * (bc + b8) + grads * (bc + 2 * b8) + weight_cast
    return fwd / ctx.rate_hbm, bwd / ctx.rate_hbm


def dequantize_time(row: Row, ctx: _Ctx) -> Num:
    """[T-COMP.nf4] QLoRA dequantises its NF4 weights to β_c before each use (forward, input-gradient backward,
    recompute): (β_q + β_c)·E_q/(hbm_Bps·eff_hbm) per pass."""
    local = row.local
    if not local.base_frozen:
        return 0.0
    w = ctx.r.widths
    return (w.q + w.c) * (local.quantized + local.quantized_expert) / ctx.rate_hbm


def row_time(ctx: _Ctx, row: Row) -> RowTime:
    """A row's times; rows sharing a cost (same kind, block, option, head) share them (cached per plan)."""
    key = _row_key(row)
    got = ctx.row_cache.get(key)
    if got is None:
        got = ctx.row_cache[key] = _row_time(ctx, row)
    return got


def _row_key(row: Row) -> tuple:
    item = row.item
    return (item.kind, item.block, item.option, item.group, item.keeps_input, id(row.cost))


def _row_time(ctx: _Ctx, row: Row) -> RowTime:
    k, item = ctx.k, row.item
    kind = item.kind
    vision = kind in (VISION, VISION_EXTRAS)
    flops = row_flops(ctx.fc, item, frozen=bool(row.local.frozen),
                      vision_dims=ctx.vision_extra_dims() if kind == VISION_EXTRAS else ctx.vision_dims) \
        if vision else row_flops(ctx.fc, item, frozen=bool(row.local.frozen))
    backward = not (vision and row.local.frozen)
    a_none = row.act_none
    if item.option == "none":
        rc_bytes: Num = 0.0
    elif item.option == "full":
        rc_bytes = a_none
    else:
        rc_bytes = a_none - row.act
    nf4 = dequantize_time(row, ctx)
    cast_f, cast_b = fp8_cast_time(ctx, row)
    F = mm_time(ctx, flops.fwd, flops.fwd_fp8) + elementwise_time(k.k_ew_fwd, a_none, ctx.rate_hbm) + nf4 + cast_f
    B = mm_time(ctx, flops.bwd, flops.bwd_fp8) + (
        elementwise_time(k.k_ew_bwd, a_none, ctx.rate_hbm) + nf4 + cast_b if backward else 0.0)
    W = mm_time(ctx, flops.wgrad_mm, flops.wgrad_fp8)
    Rc = mm_time(ctx, flops.rc, flops.rc_fp8) + elementwise_time(k.k_ew_fwd, rc_bytes, ctx.rate_hbm) + \
        (nf4 + cast_f if item.option == "full" else 0.0)
    return RowTime(F=F, B=B, W=W, Rc=Rc, comm=_row_comm(ctx, row, backward), flops=flops)


def _row_comm(ctx: _Ctx, row: Row, backward: bool) -> dict[str, tuple[Num, Num, Num]]:
    """Exposed TP / CP / EP comm of a row: (forward, backward, recompute) [§7.4, §7.5]."""
    r, k, item = ctx.r, ctx.k, row.item
    par, f = r.par, r.flags
    kind = item.kind
    out: dict[str, tuple[Num, Num, Num]] = {}
    if kind in (NOOP, EMBEDDING_COPY, VISION_EXTRAS):
        return out
    full = item.option == "full"
    exp_tp = 1 - k.o_tp
    if kind == EMBEDDING:
        if f.vocab_emb_dp:  # a replicated table looks tokens up locally
            return out
        fwd, bwd = C.tp_embedding(ctx.M_h, ctx.tp, par.sp)
        out["tp"] = (exp_tp * fwd, exp_tp * bwd, 0.0)
        return out
    if kind == OUTPUT:
        fwd, bwd = C.tp_head(ctx.M_h, ctx.tp, par.sp)
        out["tp"] = (exp_tp * fwd, exp_tp * bwd, 0.0)
        return out
    if kind == VISION:
        vision = r.model.vision
        assert vision is not None
        M_v = r.widths.c * vision.hidden_size * ctx.fc.vision_tokens
        fwd, bwd = C.tp_layer(M_v, ctx.tp, par.sp, 0.0)
        out["tp"] = (exp_tp * fwd, exp_tp * bwd if backward else 0.0, 0.0)
        return out
    block = item.block if kind == MTP else kind
    regathers = 0.0 if ctx.pricer.acts.gathered(item.option) else 2.0
    fwd, bwd = C.tp_layer(ctx.M_h, ctx.tp, par.sp, regathers)
    if kind == MTP:
        hf, hb = C.tp_head(ctx.M_h, ctx.tp, par.sp)
        fwd, bwd = fwd + hf, bwd + hb
    out["tp"] = (exp_tp * fwd, exp_tp * bwd, exp_tp * fwd if full else 0.0)
    if not block.startswith("lin_"):
        cp_f: Num = 0.0
        cp_b: Num = 0.0
        if f.cp_algo in ("ring", "hybrid"):
            rf, rb = C.cp_ring(ctx.M_kv, ctx.ring)
            cp_f, cp_b = cp_f + (1 - k.o_cp_ring) * rf, cp_b + (1 - k.o_cp_ring) * rb
        if f.cp_algo in ("ulysses", "hybrid"):
            uf, ub = C.cp_ulysses(ctx.M_qkv, ctx.M_o, ctx.uly)
            cp_f, cp_b = cp_f + (1 - k.o_cp_ulysses) * uf, cp_b + (1 - k.o_cp_ulysses) * ub
        if f.cp_algo == "allgather":
            af, ab = C.cp_allgather(ctx.M_kv, ctx.ring)
            cp_f, cp_b = cp_f + (1 - k.o_cp_allgather) * af, cp_b + (1 - k.o_cp_allgather) * ab
        out["cp"] = (cp_f, cp_b, cp_f if full else 0.0)
    if block.endswith("moe"):
        ef, eb = C.ep_layer(ctx.M_r, ctx.ep, ctx.etp)
        exp_ep = 1 - k.o_ep
        out["ep"] = (exp_ep * ef, exp_ep * eb, exp_ep * ef if full else 0.0)
    return out


# ------------------------------------------------------------------------------------------ stages
def pp_sends(r: Resolved, stage: int, chunk: int) -> tuple[int, int]:
    """(forward, backward) hand-overs of a chunk that leave the stage (V schedules turn on the last stage)."""
    sched, p, vp = r.flags.schedule, r.par.p, r.par.vp
    q = slot_index(sched, p, vp, stage, chunk)
    n = p * vp
    fwd = int(q < n - 1 and slot_position(sched, p, vp, q + 1)[0] != stage)
    bwd = int(q > 0 and slot_position(sched, p, vp, q - 1)[0] != stage)
    return fwd, bwd


def stage_times(ctx: _Ctx, stage: int, rows: Sequence[Row]) -> StageTimes:
    """[§7.5] F_i, B_i, W_i, Rc_i and their chunk values; DP comm per step and t_opt."""
    r, k = ctx.r, ctx.k
    vp = r.par.vp
    cF: list[Num] = [0.0] * vp
    cB: list[Num] = [0.0] * vp
    cW: list[Num] = [0.0] * vp
    cR: list[Num] = [0.0] * vp
    comm = dict.fromkeys(COMM_KINDS, 0.0)
    comp = {"fwd": 0.0, "bwd": 0.0, "recompute": 0.0}
    model_flops: Num = 0.0
    hw_flops: Num = 0.0
    for row in rows:
        rt = row_time(ctx, row)
        j = row.chunk
        cF[j] = cF[j] + rt.F
        cB[j] = cB[j] + rt.B
        cW[j] = cW[j] + rt.W
        cR[j] = cR[j] + rt.Rc
        comp["fwd"] = comp["fwd"] + rt.F
        comp["bwd"] = comp["bwd"] + rt.B + rt.W
        comp["recompute"] = comp["recompute"] + rt.Rc
        for kind, (f, b, rc) in rt.comm.items():
            cF[j] = cF[j] + f
            cB[j] = cB[j] + b
            cR[j] = cR[j] + rc
            comm[kind] = comm[kind] + f + b + rc
        model_flops = model_flops + rt.flops.model
        hw_flops = hw_flops + rt.flops.hardware
    exp_pp = 1 - k.o_pp
    for j in range(vp):
        n_fwd, n_bwd = pp_sends(r, stage, j)
        send = exp_pp * C.pp_boundary(ctx.M_p, ctx.pp)
        cF[j] = cF[j] + n_fwd * send
        cB[j] = cB[j] + n_bwd * send
        comm["pp"] = comm["pp"] + (n_fwd + n_bwd) * send
    dp = _dp(ctx, rows)
    fs_f, fs_b = (1 - k.o_fsdp) * dp.per_mb_fwd, (1 - k.o_fsdp) * dp.per_mb_bwd
    if vp:  # per-micro-batch parameter gathers and reduce-scatters ride with the first chunk's passes
        cF[0] = cF[0] + fs_f
        cB[0] = cB[0] + fs_b
    comm["fsdp"] = fs_f + fs_b
    comm["dp"] = (1 - k.o_dp) * dp.per_step
    return StageTimes(F=sum(cF), B=sum(cB), W=sum(cW), Rc=sum(cR), chunk_F=tuple(cF), chunk_B=tuple(cB),
                      chunk_W=tuple(cW), chunk_Rc=tuple(cR), comm=comm, compute=comp,
                      optimizer=optimizer_time(ctx, rows), model_flops=model_flops, hardware_flops=hw_flops)


def _dp(ctx: _Ctx, rows: Sequence[Row]) -> C.DPTimes:
    """[T-COMM.dp] dense part on D and expert part on D_e from the stage's local elements."""
    r = ctx.r
    w, f = r.widths, r.flags
    trainable_d = sum(row.local.trainable_dense for row in rows)
    trainable_e = sum(row.local.trainable_expert for row in rows)
    gathered_d = sum(gather_bytes(row.local, f, w.c, 1, 0) for row in rows)
    gathered_e = sum(gather_bytes(row.local, f, w.c, 0, 1) for row in rows)
    params_d = sum(gather_trainable_bytes(row.local, f, w.p, 1, 0) for row in rows)
    params_e = sum(gather_trainable_bytes(row.local, f, w.p, 0, 1) for row in rows)
    mode = f.sharding_mode
    reshard = True if mode == "zero3" else f.reshard_after_forward
    sync = True if mode == "zero3" else f.fsdp_sync
    dense = C.dp_times(mode, w.g * trainable_d, params_d, gathered_d, ctx.dp_shard, ctx.dp_replicas,
                       keep_gathered=f.keep_gathered, reshard=reshard, sync_every_mb=sync,
                       reduce_domain=ctx.dp_domain)
    if not r.dims.moe:  # no expert parameters: no expert-data-parallel collectives at all
        return dense
    expert = C.dp_times(mode, w.g * trainable_e, params_e, gathered_e, ctx.edp_shard, ctx.edp_replicas,
                        keep_gathered=f.keep_gathered, reshard=reshard, sync_every_mb=sync,
                        reduce_domain=ctx.edp_domain)
    return C.DPTimes(dense.per_step + expert.per_step, dense.per_mb_fwd + expert.per_mb_fwd,
                     dense.per_mb_bwd + expert.per_mb_bwd)


def optimizer_time(ctx: _Ctx, rows: Sequence[Row]) -> Num:
    """[T-OPT] t_opt = 2·(parameter + gradient + optimizer bytes of the stage)/(hbm_Bps·eff_hbm), + the states over
    the host link with ``swap_optimizer``."""
    params = sum(row.static.parameters for row in rows)
    grads = sum(row.static.gradients for row in rows)
    states = sum(row.static.optimizer_states for row in rows)
    out = 2 * (params + grads + states) / ctx.rate_hbm
    if ctx.r.flags.swap_optimizer:
        out = out + states / ctx.r.hardware.host_link_bandwidth
    return out


# ------------------------------------------------------------------------------------------ pipeline (§7.6)
def _max(values: Sequence[Num]) -> Num:
    out = values[0]
    for v in values[1:]:
        out = maximum(out, v)
    return out


def pipe_1f1b(S: Sequence[Num], m: Num) -> Num:
    """[T-PIPE.1f1b] Σ_i S_i + (m − 1)·S_max (p = 1: m·S_0)."""
    return sum(S) + (m - 1) * _max(S)


def pipe_interleaved(S: Sequence[Num], m: Num, vp: Num) -> Num:
    """[T-PIPE.interleaved] Σ_i S_i/vp + (m·vp − 1)·S_max/vp."""
    return sum(S) / vp + (m * vp - 1) * _max(S) / vp


def pipe_gpipe(F: Sequence[Num], Bk: Sequence[Num], m: Num) -> Num:
    """[T-PIPE.gpipe] Σ_i F_i + (m − 1)·max F + Σ_i Bk_i + (m − 1)·max Bk."""
    return sum(F) + (m - 1) * _max(F) + sum(Bk) + (m - 1) * _max(Bk)


def pipe_seq1f1b(S_slice: Sequence[Num], m: Num, n_s: Num) -> Num:
    """[T-PIPE.seq1f1b] Σ_i S_i/n_s + (m·n_s − 1)·S_max/n_s with S_i per micro-batch, i.e. per-slice values
    s_i = S_i/n_s: Σ_i s_i + (m·n_s − 1)·s_max."""
    return sum(S_slice) + (m * n_s - 1) * _max(S_slice)


def pipe_zbv(S_max: Num, m: Num, p: Num, Fc: Num, Bc: Num, Wc: Num) -> Num:
    """[T-PIPE.zbv] m·S_max + (p − 1)·max(0, F^c + B^c − 2·W^c) (ZB-H2 class)."""
    return m * S_max + (p - 1) * maximum(0.0, Fc + Bc - 2 * Wc)


def pipe_dualpipev(S_max: Num, m: Num, p: Num, Fc: Num, Bc: Num, Wc: Num) -> Num:
    """[T-PIPE.dualpipev] m·S_max + (p − 1)·max(0, FB^c + Bf^c − 3·W^c), Bf^c = B^c + W^c, FB^c = F^c + Bf^c (the
    overlapped pair; EP comm hidden through o_ep) — the DualPipe table with PP = 2p stages (D38)."""
    Bf = Bc + Wc
    FB = Fc + Bf
    return m * S_max + (p - 1) * maximum(0.0, FB + Bf - 3 * Wc)


def _select(S: Sequence[Num], values: Sequence[Num]) -> Num:
    """values[argmax S] (ties to the earliest stage), elementwise for arrays."""
    best, out = S[0], values[0]
    for s, v in zip(S[1:], values[1:], strict=True):
        take = s > best
        best = where(take, s, best)
        out = where(take, v, out)
    return out


def pipeline_time(schedule: str, stages: Sequence[StageTimes], m: Num, vp: Num, n_s: Num) -> Num:
    """[T-PIPE] One flush of the pipeline (stage values per micro-batch; per slice for sliced schedules)."""
    S = [st.S for st in stages]
    p = len(stages)
    if schedule == "1f1b":
        return pipe_1f1b(S, m)
    if schedule == "interleaved":
        return pipe_interleaved(S, m, vp)
    if schedule == "seqsmartvpp":
        return pipe_interleaved(S, m * n_s, vp)
    if schedule == "gpipe":
        return pipe_gpipe([st.F for st in stages], [st.Bk for st in stages], m)
    if schedule == "seq1f1b":
        return pipe_seq1f1b(S, m, n_s)
    S_max = _max(S)
    # chunk values of the slowest stage: the chunk with the largest F^c + B^c − 2·W^c (resp. the DualPipeV term)
    best: Num = None
    for j in range(len(stages[0].chunk_F)):
        Fc = _select(S, [st.chunk_F[j] for st in stages])
        Bc = _select(S, [st.chunk_B[j] + (st.chunk_Rc[j] if st.chunk_Rc else 0.0) for st in stages])
        Wc = _select(S, [st.chunk_W[j] for st in stages])
        value = pipe_zbv(S_max, m, p, Fc, Bc, Wc) if schedule == "zbv" else pipe_dualpipev(S_max, m, p, Fc, Bc, Wc)
        best = value if best is None else maximum(best, value)
    return best


# ------------------------------------------------------------------------------------------ step (§7.7)
def step_time(pricer: StagePricer, rows_per_stage: list[list[Row]]) -> StepTime:
    """[T-STEP] T_step = n_acc·T_pipe + max_i (1 − o_dp)·t_dp,i + max_i t_opt,i, with its parts (sum = T_step),
    tokens/s/device = G·s/(T_step·N) and MFU = model FLOPs per step/(T_step·N·peak)."""
    ctx = _Ctx(pricer)
    r = ctx.r
    par, sched = r.par, r.flags.schedule
    # stages holding the same rows (in cost terms) that send the same pipeline hand-overs take the same time:
    # price each such stage once (most middle stages of a uniform stack)
    seen: dict[tuple, StageTimes] = {}
    timed = []
    for i, rows in enumerate(rows_per_stage):
        key = (tuple((_row_key(row), row.chunk) for row in rows), tuple(pp_sends(r, i, j) for j in range(par.vp)))
        got = seen.get(key)
        if got is None:
            got = seen[key] = stage_times(ctx, i, rows)
        timed.append(got)
    stages = tuple(timed)
    units = par.m * par.n_s  # micro-batches (slices) per flush
    t_pipe = pipeline_time(sched, stages, par.m, par.vp, par.n_s)
    S = [st.S for st in stages]
    dp_step = _max([st.comm["dp"] for st in stages])
    t_opt = _max([st.optimizer for st in stages])
    total = par.n_acc * t_pipe + dp_step + t_opt
    reps = par.n_acc * units
    parts: dict[str, Num] = {}
    for name in ("fwd", "bwd", "recompute", "tp", "cp", "ep", "pp"):
        parts[name] = reps * _select(S, [st.parts()[name] for st in stages])
    parts["dp"] = dp_step + reps * _select(S, [st.comm["fsdp"] for st in stages])
    parts["bubble"] = par.n_acc * t_pipe - reps * _max(S)
    parts["optimizer"] = t_opt
    parts = {k: parts[k] for k in PARTS}
    world = par.world
    replicas = par.d * par.t * par.cp
    model = reps * replicas * sum(st.model_flops for st in stages)
    hardware = reps * replicas * sum(st.hardware_flops for st in stages)
    peak = r.hardware.flops(r.widths.c)
    tokens = par.b * par.d * par.m * par.n_acc * par.s
    return StepTime(step_time_s=total, parts=parts, stages=stages, tokens_per_s_per_device=tokens / (total * world),
                    mfu=model / (total * world * peak) if peak else 0.0, model_flops_per_step=model,
                    hardware_flops_per_step=hardware, pipeline_s=t_pipe, schedule=sched)


def estimate_step_time(model: ModelSpec, strategy: Strategy, hardware: Hardware,
                       options: RunOptions | None = None) -> StepTime:
    """Convenience: resolve, lay out, price the rows and time the step (no memory verdict, no validation)."""
    from .estimate import layout_inputs, stage_rows
    from .options import RunOptions

    r = resolve(model, strategy, hardware, options or RunOptions())
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    return step_time(pricer, [stage_rows(pricer, i) for i in range(r.par.p)])


__all__ = ["COMM_KINDS", "KNOBS", "PARTS", "Knobs", "StageTimes", "StepTime", "compute_time", "elementwise_time",
           "estimate_step_time", "knobs", "pipe_1f1b", "pipe_dualpipev", "pipe_gpipe", "pipe_interleaved",
           "pipe_seq1f1b", "pipe_zbv", "pipeline_time", "pp_sends", "row_time", "stage_times", "step_time"]
