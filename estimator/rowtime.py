"""Row-level times of the step-time model (docs/model.md#step-time): per layer row its compute (F, B, W, Rc)
and exposed TP / CP / EP communication, from the FLOPs (``flops``), the collectives (``comm``) and the overlap and
efficiency knobs. Stages are assembled from these in ``steptime``.

Overlap and efficiency knobs are editable data: read from ``RunOptions`` when it carries the field
(``overlap_tp``, … see ``KNOBS``), else the module defaults below. Degrees may be numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from . import comm as C
from . import params as P
from .activations import option_switches
from .arr import Num, maximum, minimum, where
from .flops import (
    EMBEDDING_COPY,
    VISION_EXTRAS,
    FlopContext,
    RowFlops,
    attention_backward_factor,
    causal_factor,
    flops_with,
    moe_zero_memory_on,
    part_wgrad_flops,
    row_flops,
)
from .layout import EMBEDDING, MTP, NOOP, OUTPUT, VISION
from .records import at_once
from .resolve import Resolved, dense_domain
from .stage import device_entry

if TYPE_CHECKING:
    from .stage import Row, RowCost, StagePricer

# Defaults (docs/model.md#knobs). None: the rule in ``knobs`` (o_tp per framework, o_cp per algorithm, o_ep per
# schedule).
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
COMM_KINDS = ("tp", "cp", "ep", "pp", "fsdp", "host")


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
    """The overlaps and elementwise factors of a plan (docs/model.md#knobs) (RunOptions field > module default >
    rule)."""
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


_KNOBS: dict = {}  # per run options (by the object, held in the entry) and what else ``knobs`` reads: the knobs


def kept_knobs(r: Resolved) -> Knobs:
    """``knobs(r)``, kept per what it reads (the run options — by the object: a frozen record, which every edit
    of a plan session keeps —, the framework's o_tp, the schedule, the module defaults ``KNOBS``): every new
    plan's time context asks."""
    options = r.options
    key = (id(options), r.fw.o_tp, r.flags.schedule, *KNOBS.values())
    got = _KNOBS.get(key)
    if got is None or got[0] is not options:
        if len(_KNOBS) >= 64:
            _KNOBS.clear()
        got = _KNOBS[key] = (options, knobs(r))
    return got[1]  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------------ context
_DEVICES: dict = {}  # per device record (``stage.device_entry``): its dense peak per width, links per group and degrees


class TimeContext:
    """Everything per plan that the row and stage times share (links, rates, knobs, FLOP context)."""

    def __init__(self, pricer: StagePricer, like: TimeContext | None = None, r: Resolved | None = None) -> None:
        """``like``: a context of the same rows on another device (``r``, or ``pricer.r``, differs from its only
        in the device) — what reads no device is taken from it, the rates and links are made for this one. The
        context's device is ``r``'s (default ``pricer.r``'s): what the pricer keeps reads no device."""
        r = self.r = pricer.r if r is None else r
        self.pricer = pricer
        d, w, f, par = r.dims, r.widths, r.flags, r.par
        if like is not None:
            self.flops_cache = like.flops_cache
            self.k, self.attn_imbalance = like.k, like.attn_imbalance
            self.vision_dims, self.fc = like.vision_dims, like.fc
            self.M_h, self.M_kv, self.M_qkv, self.M_o, self.M_r, self.M_p = \
                like.M_h, like.M_kv, like.M_qkv, like.M_o, like.M_r, like.M_p
            self._on_device()
            return
        # FLOPs do not depend on the device: the band's step times (estimate.step_band) reuse the plan's
        self.flops_cache: dict[tuple, tuple] = pricer.book.costs.flops
        self.k = kept_knobs(r)
        kappa = causal_factor(r.options.causal_factor, f.causal, f.flash_attention)
        # the critical rank's share of a causal mask when context parallelism splits the sequence without load
        # balancing
        self.attn_imbalance = cp_causal_imbalance(par.cp, kappa, f.causal and not f.feat.cp_load_balance)
        self.vision_dims = self._vision_dims()
        self.fc = at_once(  # FlopContext(…), every field given: its instance dict set at once
            FlopContext, dims=d, flags=f, T=pricer.T, R=pricer.R, s=par.s, t=par.t, etp=par.etp, v_pad=pricer.vpad,
            kappa=kappa, bwd_attn=attention_backward_factor(f.flash_attention), sel=pricer.acts.sel,
            vision_tokens=self._vision_tokens(), vision_seq=self._vision_seq(), t_head=pricer.t_h,
            elements=pricer.acts.elements)
        t, T, bc = par.t, pricer.T, w.c
        self.M_h = bc * d.h * T
        self.M_kv = bc * d.n_kv * (d.dqk + d.dv) * T / t
        self.M_qkv = bc * (d.q_w + d.k_w + d.v_w) * T / t
        self.M_o = bc * d.o_w * T / t
        self.M_r = bc * d.h * pricer.R
        self.M_p = bc * d.h * T / (t if self.k.pp_scatter_gather else par.sp_div)
        self._on_device()

    def _on_device(self) -> None:
        """The rates and links of the context's device, and its kept row times."""
        r = self.r
        w, f, par, hw = r.widths, r.flags, r.par, r.hardware
        # row times are kept with the row costs (per row, per device)
        self.row_cache: dict[tuple, tuple[RowCost, RowTime, RowSums]] = device_entry(self.pricer.book.costs.times,
                                                                                     hw, dict)
        kept = device_entry(_DEVICES, hw, dict)
        peak = C.kept_entry(kept, ("flops", w.c), lambda: hw.flops(w.c))
        self.rate_mm = peak * hw.eff_matmul
        feat = f.feat
        # FP8 GEMMs at the device's FP8 (MXFP8) peak; R-FP8-DEVICE refuses a device without one
        self.rate_fp8 = (hw.peak("mxfp8" if feat.fp8 == "mxfp8" else "fp8") or 0.0) * hw.eff_matmul \
            if feat.fp8_on else 0.0
        self.rate_hbm = hw.hbm_bandwidth * hw.eff_hbm
        # attention kernels at their own efficiency where the preset states one
        self.rate_attn = peak * (hw.eff_attention if hw.eff_attention is not None else hw.eff_matmul)
        t, cp, u = par.t, par.cp, par.u
        D = dense_domain(f, par)
        stride = t if f.span_cp else t * cp
        self.tp, self.ring, self.uly, self.ep, self.etp, self.pp, self.dp_domain, self.dp_shard, self.dp_replicas, \
            self.edp_shard, self.edp_replicas, self.edp_domain = C.plan_links(
                kept, hw, t, cp, u, par.ep, par.etp, par.p, par.d, D, stride, par.os, par.os_e, par.edp)
        self.dp_kept: dict | None = None  # dptime.stage_dp's table of this context's DP times (made on first use)
        self.comms: dict = {}  # the rows' exposed comm on this device per ``comm_recipe`` key (``row_comm``)
        # one exposed pipeline hand-over (every stage's sends, ``steptime.stage_times``)
        self.pp_send = (1 - self.k.o_pp) * C.pp_boundary(self.M_p, self.pp)

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
class RowTime(NamedTuple):
    """Compute seconds of one row (F, B, W, Rc) and its exposed comm per kind as (forward, backward, recompute)
    (a NamedTuple: three devices make one per row of every new plan)."""

    F: Num
    B: Num
    W: Num
    Rc: Num
    comm: dict[str, tuple[Num, Num, Num]]
    flops: RowFlops


def mm_time(ctx: TimeContext, flops: Num, fp8: Num) -> Num:
    """[T-COMP.mm] t_mm = FLOPs/(peak_flops[β_c]·eff_matmul); with FP8: (FLOPs − FP8 FLOPs)/(peak[β_c]·eff) +
    FP8 FLOPs/(peak[fp8 | mxfp8]·eff) (``ctx.rate_mm``, ``ctx.rate_fp8``: peak·eff of the context's device)."""
    fp8_rate = ctx.rate_fp8
    if fp8_rate:
        return (flops - fp8) / ctx.rate_mm + fp8 / fp8_rate
    return flops / ctx.rate_mm


def cp_causal_imbalance(cp: Num, kappa: float, unbalanced: bool) -> Num:
    """[T-COMP.cp_causal] Context parallelism over contiguous chunks of a causal sequence: rank r's queries see
    r + ½ of the cp key blocks, so the last rank does (cp − ½)/cp of the full attention against the κ = ½ a
    balanced split (Megatron/TE and PyTorch's head-tail chunks, the default) gives every rank — its attention
    takes (cp − ½)/(cp·κ) times longer; 1 when balanced, not causal, or cp = 1."""
    if not unbalanced:
        return 1.0
    return where(cp > 1, (cp - 0.5) / (cp * kappa), 1.0)


def fp8_cast_bytes(ctx: TimeContext, row: Row) -> tuple[Num, Num] | None:
    """[T-COMP.fp8cast] HBM bytes of the quantisation kernels of a layer's FP8 linears, (forward, backward): each
    reads β_c and writes β_8 per copy. Transformer Engine quantises each input rowwise and columnwise in the
    forward and each output gradient both ways in the backward (weights are cast once per step, not priced);
    torchao casts the input once, again in the backward from the saved high-precision input, the output gradient
    both ways, and the weight in each pass unless it arrived in FP8 (float8 all-gather). None where nothing is
    cast (``_row_time`` divides them by the device's hbm_Bps·eff_hbm)."""
    r = ctx.r
    feat = r.flags.feat
    if not feat.fp8_on:
        return None
    item = row.item
    kind = item.block if item.kind == MTP else item.kind
    if item.kind in (NOOP, EMBEDDING, OUTPUT, EMBEDDING_COPY, VISION, VISION_EXTRAS):
        return None
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
    return fwd, bwd


def dequantize_bytes(row: Row, ctx: TimeContext) -> Num | None:
    """[T-COMP.nf4] QLoRA dequantises its NF4 weights to β_c before each use (forward, input-gradient backward,
    recompute): (β_q + β_c)·E_q bytes per pass (``_row_time`` divides them by hbm_Bps·eff_hbm); None without NF4
    weights."""
    local = row.local
    if not local.base_frozen:
        return None
    w = ctx.r.widths
    return (w.q + w.c) * (local.quantized + local.quantized_expert)


def row_time(ctx: TimeContext, row: Row, key: tuple | None = None) -> RowTime:
    """A row's times; rows sharing a cost (same kind, block, option, head) share them (kept with the row costs
    per device, with the cost they were timed for). ``key``: the row's ``row_key`` when the caller keeps it."""
    return timed_row(ctx, row, row_key(row) if key is None else key)[1]


class RowSums(NamedTuple):
    """A row's times as a chunk sums them (``chunktime.chunk_times``): F, B, Rc with the row's exposed comm folded
    in (its kinds summed in their order from 0.0), W, compute alone (F, B + W, Rc) and per comm kind forward +
    backward + recompute (0.0 for a kind the row has none of: a chunk's sum from 0.0 is then the sum over the
    rows that have it)."""

    F: Num
    B: Num
    W: Num
    Rc: Num
    fwd: Num
    bwd: Num
    recompute: Num
    tp: Num
    cp: Num
    ep: Num
    host: Num


def row_sums(rt: RowTime) -> RowSums:
    f_ = b_ = rc_ = 0.0
    kinds: dict[str, Num] = {"tp": 0.0, "cp": 0.0, "ep": 0.0, "host": 0.0}
    for kind, (cf, cb, crc) in rt.comm.items():
        f_, b_, rc_ = f_ + cf, b_ + cb, rc_ + crc
        kinds[kind] = cf + cb + crc
    return RowSums(rt.F + f_, rt.B + b_, rt.W, rt.Rc + rc_, rt.F, rt.B + rt.W, rt.Rc, kinds["tp"], kinds["cp"],
                   kinds["ep"], kinds["host"])


def timed_row(ctx: TimeContext, row: Row, key: tuple) -> tuple[RowCost, RowTime, RowSums]:
    """The kept entry of a row's times: (the cost they were timed for, ``RowTime``, ``RowSums``)."""
    got = ctx.row_cache.get(key)
    if got is None or got[0] is not row.cost:
        rt = _row_time(ctx, row, key)
        got = ctx.row_cache[key] = (row.cost, rt, row_sums(rt))
    return got


def row_key(row: Row) -> tuple:
    """What the kept FLOPs and times of a row are found by (the cost by identity; the entry holds it)."""
    item = row.item
    return (item.kind, item.block, item.option, item.group, item.keeps_input, id(row.cost))


def kept_flops(ctx: TimeContext, row: Row, key: tuple | None = None) -> RowFlops:
    """The row's FLOPs, kept with the row costs (for every device: they read none) with the cost they were
    counted for; ``key`` as for ``row_time``."""
    if key is None:
        key = row_key(row)
    got = ctx.flops_cache.get(key)
    if got is not None and got[0] is row.cost:
        return got[1]
    item = row.item
    if item.kind in (VISION, VISION_EXTRAS):
        flops = row_flops(ctx.fc, item, frozen=bool(row.local.frozen),
                          vision_dims=ctx.vision_extra_dims() if item.kind == VISION_EXTRAS else ctx.vision_dims)
    else:
        flops = row_flops(ctx.fc, item, frozen=bool(row.local.frozen))
    if item.grad == "off":  # [T-FLOP.freeze] no graph: the layer runs its forward only
        flops = RowFlops(fwd_mm=flops.fwd_mm, fwd_attn=flops.fwd_attn, fwd_fp8=flops.fwd_fp8)
    elif row.local.partial:
        block = item.block if item.kind == MTP else item.kind
        share = part_wgrad_flops(ctx.fc, block, ctx.r.flags.feat.trainable_parts)
        flops = flops_with(flops, wgrad_mm=share, wgrad_fp8=minimum(flops.wgrad_fp8, share))
    ctx.flops_cache[key] = (row.cost, flops)
    return flops


class RowWork(NamedTuple):
    """What a row's times read apart from the device (kept with its FLOPs for every device, ``row_work``): its
    FLOPs and, per pass (forward, backward, recompute), what the device's rates divide — the attention-core FLOPs
    times the critical rank's causal imbalance [T-COMP.attn] (t_attn = that/(peak[β_c]·eff_attention), eff_matmul
    where the preset states none) and the elementwise HBM bytes k_ew·A(ℓ, none) [T-COMP.ew] (t_ew =
    that/(hbm_Bps·eff_hbm); the recompute's the bytes it re-creates) — with the NF4
    dequantisation and FP8 cast bytes (None: none), the zero-memory rebuild's bytes k_ew·A (None: none) and the
    offloaded bytes."""

    flops: RowFlops
    backward: bool          # the row has a backward pass (not a frozen vision tower, not grad off)
    full: bool              # fully recomputed
    attn: tuple[Num, Num, Num]
    ew: tuple[Num, Num, Num]
    nf4: Num | None
    cast: tuple[Num, Num] | None
    rebuilt: Num | None
    zero_ep: bool           # the backward re-dispatches the tokens (zero-memory MoE)
    offload: Num
    comm: tuple[tuple[str, tuple, str], ...]  # ``comm_recipe``


def row_work(ctx: TimeContext, row: Row, key: tuple) -> RowWork:
    """The row's ``RowWork``, kept with its FLOPs (the band's ends take the plan's device's)."""
    got = ctx.flops_cache.get(key)
    if got is not None and got[0] is row.cost and len(got) == 3:
        return got[2]  # type: ignore[no-any-return]
    k, item = ctx.k, row.item
    backward = not (item.kind in (VISION, VISION_EXTRAS) and row.local.frozen) and item.grad != "off"
    flops = kept_flops(ctx, row, key)
    a_none = row.act_none
    if item.option == "none":
        rc_bytes: Num = 0.0
    elif item.option == "full":
        rc_bytes = a_none
    else:
        rc_bytes = a_none - row.act
    imbalance = ctx.attn_imbalance
    rebuilt = row.cost.rebuilt
    work = RowWork(
        flops, backward, item.option == "full",
        (flops.fwd_attn * imbalance, flops.bwd_attn * imbalance, flops.rc_attn * imbalance),
        (k.k_ew_fwd * a_none, k.k_ew_bwd * a_none, k.k_ew_fwd * rc_bytes),
        dequantize_bytes(row, ctx), fp8_cast_bytes(ctx, row), k.k_ew_fwd * rebuilt if rebuilt else None,
        bool(rebuilt and moe_zero_memory_on(ctx.r.flags.feat, item)), row.cost.offload,
        comm_recipe(ctx, row, backward))
    ctx.flops_cache[key] = (row.cost, flops, work)
    return work


def _row_time(ctx: TimeContext, row: Row, key: tuple) -> RowTime:
    """The row's ``RowWork`` on the context's device: FLOPs at the matmul rates [T-COMP.mm], attention FLOPs at the
    attention rate [T-COMP.attn], HBM bytes at hbm_Bps·eff_hbm [T-COMP.ew], each pass's terms added in one order."""
    w = row_work(ctx, row, key)
    flops = w.flops
    hbm, attn = ctx.rate_hbm, ctx.rate_attn
    a_f, a_b, a_rc = w.attn
    e_f, e_b, e_rc = w.ew
    nf4 = 0.0 if w.nf4 is None else w.nf4 / hbm
    cast_f, cast_b = (0.0, 0.0) if w.cast is None else (w.cast[0] / hbm, w.cast[1] / hbm)
    F = mm_time(ctx, flops.fwd_mm, flops.fwd_fp8) + a_f / attn + e_f / hbm + nf4 + cast_f
    B = mm_time(ctx, flops.bwd_mm, flops.bwd_fp8) + a_b / attn + (e_b / hbm + nf4 + cast_b if w.backward else 0.0)
    W = mm_time(ctx, flops.wgrad_mm, flops.wgrad_fp8)
    Rc = mm_time(ctx, flops.rc - flops.rc_attn, flops.rc_fp8) + a_rc / attn + e_rc / hbm + \
        (nf4 + cast_f if w.full else 0.0)
    comm = row_comm(ctx, w.comm, flops)
    if w.rebuilt is not None:  # [T-COMP.zero_memory] the backward rebuilds them: the elementwise traffic
        B = B + w.rebuilt / hbm
    if w.zero_ep:  # and re-dispatches the tokens
        ef, eb, erc = comm.get("ep", (0.0, 0.0, 0.0))
        comm["ep"] = (ef, eb + (1 - ctx.k.o_ep) * (C.all_to_all(ctx.M_r, ctx.ep) + C.all_gather(ctx.M_r, ctx.etp)),
                      erc)
    if w.offload:
        comm["host"] = offload_exposed(ctx, w.offload, F, B + W)
    return RowTime(F, B, W, Rc, comm, flops)


def offload_exposed(ctx: TimeContext, offload: Num, forward: Num, backward: Num) -> tuple[Num, Num, Num]:
    """[T-COMM.offload] An offloaded layer copies its activations to the host during the next layer's forward and
    back during the next (later) layer's backward: over the host link, max(0, copy − the pass's compute of a
    layer like it) of each copy stays exposed; (forward, backward, recompute)."""
    copy = offload / ctx.r.hardware.host_link_bandwidth
    return maximum(0.0, copy - forward), maximum(0.0, copy - backward), 0.0


def async_tp_exposed(comm: Num, matmuls: Num, t: Num) -> Num:
    """[T-COMM.tp_async] TP collectives decomposed into t steps and pipelined with the matmuls they feed or follow
    (torchtitan async TP, TE userbuffers, MC2): the pair takes max(c, m) + min(c, m)/t, so max(0, c − m) +
    min(c, m)/t of the communication c stays exposed beyond the matmuls m."""
    return maximum(0.0, comm - matmuls) + minimum(comm, matmuls) / t


def comm_recipe(ctx: TimeContext, row: Row, backward: bool) -> tuple[tuple[str, tuple, str], ...]:
    """What a row's exposed TP / CP / EP comm reads apart from the device: per kind, the key of its (forward,
    backward) (``exposed_comm``), which the rows of a plan share on each device, and the share of the forward
    its recompute runs again ("full", "half": a checkpointed MLP / MoE half of the layer, "none"; ``row_comm``)."""
    r, item = ctx.r, row.item
    kind = item.kind
    if kind in (NOOP, EMBEDDING_COPY, VISION_EXTRAS):
        return ()
    if kind == EMBEDDING:  # a replicated table looks tokens up locally
        return () if r.flags.vocab_emb_dp else (("tp", ("embedding",), "none"),)
    if kind == OUTPUT:
        return (("tp", ("output",), "none"),)
    if kind == VISION:
        return (("tp", ("vision", backward), "none"),)
    full = item.option == "full"
    block = item.block if kind == MTP else kind
    regathers = 0.0 if ctx.pricer.acts.gathered(item.option) else 2.0
    # a checkpointed MLP / MoE layer (Megatron --recompute-modules mlp, moe) runs its half of the layer's TP
    # collectives again, and the MoE layer its dispatch and combine
    off = option_switches(item.option, ctx.pricer.acts.sel) if item.option in ("selective", "both") else frozenset()
    moe_rc = block.endswith("moe") and "moe" in off
    ffn_rc = moe_rc or ("mlp" in off and not block.endswith("moe"))
    out: list[tuple[str, tuple, str]] = [("tp", ("layer", regathers, kind == MTP),
                                          "full" if full else "half" if ffn_rc else "none")]
    if not block.startswith("lin_"):
        out.append(("cp", ("cp",), "full" if full else "none"))
    if block.endswith("moe"):
        out.append(("ep", ("ep",), "full" if full or moe_rc else "none"))
    return tuple(out)


def exposed_comm(ctx: TimeContext, key: tuple, flops: RowFlops) -> tuple[Num, Num]:
    """Exposed comm of one kind of a row on the context's device, (forward, backward), from its ``comm_recipe``
    key [docs/model.md#communication-volumes, docs/model.md#stage-time]; ``flops``: the row's (async TP overlaps
    its matmuls). A recompute runs the forward's again (its share: ``row_comm``)."""
    r, k = ctx.r, ctx.k
    par, f = r.par, r.flags
    what = key[0]
    exp_tp = 1 - k.o_tp
    if what == "embedding":
        fwd, bwd = C.tp_embedding(ctx.M_h, ctx.tp, par.sp, positions=r.dims.n_pos > 0)
        return exp_tp * fwd, exp_tp * bwd
    if what == "output":
        fwd, bwd = C.tp_head(ctx.M_h, ctx.tp, par.sp)
        return exp_tp * fwd, exp_tp * bwd
    if what == "vision":
        vision = r.model.vision
        assert vision is not None
        M_v = r.widths.c * vision.hidden_size * ctx.fc.vision_tokens
        fwd, bwd = C.tp_layer(M_v, ctx.tp, par.sp, 0.0)
        return exp_tp * fwd, exp_tp * bwd if key[1] else 0.0
    if what == "cp":
        return _cp_exposed(ctx)
    if what == "ep":
        ef, eb = C.ep_layer(ctx.M_r, ctx.ep, ctx.etp)
        exp_ep = 1 - k.o_ep
        return exp_ep * ef, exp_ep * eb
    _, regathers, mtp = key  # a layer's TP
    fwd, bwd = C.tp_layer(ctx.M_h, ctx.tp, par.sp, regathers)
    if mtp:
        hf, hb = C.tp_head(ctx.M_h, ctx.tp, par.sp)
        fwd, bwd = fwd + hf, bwd + hb
    if f.feat.async_tp:  # needs sequence parallelism: its all-gathers/reduce-scatters are what get decomposed
        mm_f = mm_time(ctx, flops.fwd_mm, flops.fwd_fp8)
        mm_b = mm_time(ctx, flops.bwd_mm + flops.wgrad_mm, flops.bwd_fp8 + flops.wgrad_fp8)
        a_f = where(par.sp, async_tp_exposed(fwd, mm_f, par.t), exp_tp * fwd)
        a_b = where(par.sp, async_tp_exposed(bwd, mm_b, par.t), exp_tp * bwd)
        return a_f, a_b
    return exp_tp * fwd, exp_tp * bwd


def row_comm(ctx: TimeContext, recipe: tuple[tuple[str, tuple, str], ...], flops: RowFlops
             ) -> dict[str, tuple[Num, Num, Num]]:
    """A row's exposed comm per kind from its ``comm_recipe``, (forward, backward, recompute): each kind's
    (forward, backward) made once per context and key (a row's async TP reads its own matmuls: made per row) —
    the rows of a layer kind with and without recompute share it — and the recompute the forward's again, all
    of it or half (a checkpointed MLP / MoE runs its half of the layer's TP collectives), or none."""
    kept = ctx.comms
    out: dict[str, tuple[Num, Num, Num]] = {}
    for kind, key, rc in recipe:
        got = kept.get(key)
        if got is None:
            got = exposed_comm(ctx, key, flops)
            if key[0] != "layer" or not ctx.r.flags.feat.async_tp:
                kept[key] = got
        f = got[0]
        out[kind] = (f, got[1], f if rc == "full" else f / 2 if rc == "half" else 0.0)
    return out


def _cp_exposed(ctx: TimeContext) -> tuple[Num, Num]:
    """[T-COMM.cp] A layer's exposed CP comm (forward, backward) per algorithm and overlap (hybrid: both parts)."""
    k, algo = ctx.k, ctx.r.flags.cp_algo
    cp_f: Num = 0.0
    cp_b: Num = 0.0
    if algo in ("ring", "hybrid"):
        rf, rb = C.cp_ring(ctx.M_kv, ctx.ring)
        cp_f, cp_b = cp_f + (1 - k.o_cp_ring) * rf, cp_b + (1 - k.o_cp_ring) * rb
    if algo in ("ulysses", "hybrid"):
        uf, ub = C.cp_ulysses(ctx.M_qkv, ctx.M_o, ctx.uly)
        cp_f, cp_b = cp_f + (1 - k.o_cp_ulysses) * uf, cp_b + (1 - k.o_cp_ulysses) * ub
    if algo == "allgather":
        af, ab = C.cp_allgather(ctx.M_kv, ctx.ring)
        cp_f, cp_b = cp_f + (1 - k.o_cp_allgather) * af, cp_b + (1 - k.o_cp_allgather) * ab
    return cp_f, cp_b


__all__ = ["COMM_KINDS", "KNOBS", "Knobs", "RowTime", "RowWork", "TimeContext", "async_tp_exposed", "comm_recipe",
           "cp_causal_imbalance", "dequantize_bytes", "exposed_comm", "fp8_cast_bytes", "kept_flops",
           "kept_knobs", "knobs", "mm_time", "offload_exposed", "row_comm", "row_key", "row_sums", "row_time",
           "row_work", "timed_row"]
