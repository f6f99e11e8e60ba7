"""Step-time model (docs/model.md#step-time): a stage's time per micro-batch assembled from its rows' times
(``rowtime``) over its form (the distinct rows with their counts per chunk, ``assembly.form``) — the same code for
one plan, the search's candidates and the balancer's table rows — then the pipeline formulas [T-PIPE] and the step
total [T-STEP] with its parts, tokens/s/device and MFU. Degrees may be numpy arrays; the number of stages and
chunks may not.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from . import comm as C
from .arr import Num, is_array, maximum, where
from .assembly.form import StageForm, build_form, form_signature, stage_plan
from .layout import EMBEDDING, NOOP, OUTPUT, VISION, build_layout, layout_inputs, slot_index, slot_position
from .resolve import Resolved, resolve
from .rowtime import (
    COMM_KINDS,
    KNOBS,
    Knobs,
    TimeContext,
    compute_time,
    elementwise_time,
    kept_flops,
    knobs,
    row_key,
    row_time,
)
from .stage import Row, StagePricer, device_entry
from .static import gather_bytes, gather_trainable_bytes

if TYPE_CHECKING:
    from .hardware import Hardware
    from .model import ModelSpec
    from .options import RunOptions
    from .strategy import Strategy

PARTS = ("fwd", "bwd", "recompute", "tp", "cp", "ep", "dp", "pp", "host", "bubble", "optimizer")


# ------------------------------------------------------------------------------------------ records
@dataclass(frozen=True)
class StageTimes:
    """Per micro-batch (per slice for Seq1F1B) times of one stage, seconds, exposed comm included
    [docs/model.md#stage-time]. ``chunk_B`` is the input-gradient half of each chunk, ``chunk_Rc`` its recompute (B^c of
    the V formulas is chunk_B + chunk_Rc). ``comm``: exposed comm per kind — tp, cp, ep, pp, fsdp per micro-batch, dp
    per step."""

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
    mfu_peak: str = "bf16"   # the precision whose dense peak MFU divides by (P-MFU-PEAK)


# ------------------------------------------------------------------------------------------ stages
@dataclass(frozen=True, slots=True)
class ChunkTimes:
    """Σ over one chunk's rows (numbers or arrays over the elements): compute F, B, W, Rc with the rows' exposed
    TP / CP / EP comm folded in, that comm per kind, compute alone, FLOPs, and the local elements and static
    bytes the per-step terms read."""

    F: Num
    B: Num
    W: Num
    Rc: Num
    comm: dict[str, Num]   # tp, cp, ep: forward + backward + recompute
    fwd: Num               # compute only: F, B + W, Rc
    bwd: Num
    recompute: Num
    model_flops: Num
    hardware_flops: Num
    elements: tuple[Num, ...]  # DP inputs, dense then expert: trainable elements, gathered β_c bytes, β_p bytes
    static: Num            # parameter + gradient + optimizer-state bytes (t_opt)
    states: Num
    layers: Num = 0        # body layers (each about one DP gradient bucket)
    params: Num = 0        # parameter and gradient bytes the device stores (offload_params moves them per pass)
    grads: Num = 0


NOT_LAYERS = (EMBEDDING, OUTPUT, NOOP, VISION, "embedding_copy", "vision_extras")


CHUNK_HOLDINGS = "chunk-holdings"  # the pricer's memo key of its chunks' device-independent sums


class Holdings(NamedTuple):
    """What a chunk's rows hold, apart from any device: its rows with their counts and kept keys (``row_key``),
    their FLOPs, and the per-step terms' inputs (``ChunkTimes`` fields)."""

    rows: tuple[tuple[Num, tuple, Row], ...]
    model_flops: Num
    hardware_flops: Num
    elements: tuple[Num, ...]
    static: Num
    states: Num
    layers: Num
    params: Num
    grads: Num


def chunk_times(ctx: TimeContext, form: StageForm, j: int, shared: dict | None = None) -> ChunkTimes:
    """A chunk's times on the context's device; what its rows hold (``chunk_holdings``) is kept in ``shared``
    (the asking pricer's, by default the context's own)."""
    held = chunk_holdings(ctx, form, j, ctx.pricer.shared if shared is None else shared)
    F = B = W = Rc = fwd = bwd = rec = 0.0
    comm: dict[str, Num] = {"tp": 0.0, "cp": 0.0, "ep": 0.0, "host": 0.0}
    for n, key, row in held.rows:
        rt = row_time(ctx, row, key)
        f_ = b_ = rc_ = 0.0
        for kind, (cf, cb, crc) in rt.comm.items():
            f_, b_, rc_ = f_ + cf, b_ + cb, rc_ + crc
            comm[kind] = comm[kind] + n * (cf + cb + crc)
        F, B, W, Rc = F + n * (rt.F + f_), B + n * (rt.B + b_), W + n * rt.W, Rc + n * (rt.Rc + rc_)
        fwd, bwd, rec = fwd + n * rt.F, bwd + n * (rt.B + rt.W), rec + n * rt.Rc
    return ChunkTimes(F, B, W, Rc, comm, fwd, bwd, rec, held.model_flops, held.hardware_flops, held.elements,
                      held.static, held.states, held.layers, held.params, held.grads)


def chunk_holdings(ctx: TimeContext, form: StageForm, j: int, shared: dict) -> Holdings:
    """The chunk's rows, their FLOPs, trainable elements, gathered bytes and static bytes; none of it depends on
    the device, so the band's step times (``estimate.step_band``) reuse the plan's (kept in ``shared``, per
    form)."""
    memo = shared.setdefault(CHUNK_HOLDINGS, {})
    key = (id(form), j)
    got = memo.get(key)  # type: ignore[union-attr]
    if got is not None and got[0] is form:
        return got[1]
    rows = []
    elements = [0.0] * 6
    model = hardware = static = states = layers = params = grads = 0.0
    f = ctx.r.flags
    bc, bp = ctx.r.widths.c, ctx.r.widths.p
    for k, n in form.counts[j]:
        item, with_head = form.keys[k]
        cost = ctx.pricer.cost(item, with_head)
        row = Row(item, j, cost, with_head)
        kept = row_key(row)
        rows.append((n, kept, row))
        flops = kept_flops(ctx, row, kept)
        model, hardware = model + n * flops.model, hardware + n * flops.hardware
        local, st = cost.local, cost.static
        for i, value in enumerate((local.trainable_dense, local.trainable_expert, gather_bytes(local, f, bc, 1, 0),
                                   gather_bytes(local, f, bc, 0, 1), gather_trainable_bytes(local, f, bp, 1, 0),
                                   gather_trainable_bytes(local, f, bp, 0, 1))):
            elements[i] = elements[i] + n * value
        static = static + n * (st.parameters + st.gradients + st.optimizer_states)
        states = states + n * st.optimizer_states
        params, grads = params + n * st.parameters, grads + n * st.gradients
        if item.kind not in NOT_LAYERS:
            layers = layers + n
    held = Holdings(tuple(rows), model, hardware, tuple(elements), static, states, layers, params, grads)
    memo[key] = (form, held)  # type: ignore[index]
    return held


def pp_sends(r: Resolved, stage: int, chunk: int) -> tuple[int, int]:
    """(forward, backward) hand-overs of a chunk that leave the stage (V schedules turn on the last stage)."""
    return stage_sends(r.flags.schedule, r.par.p, r.par.vp)[stage][chunk]


@lru_cache(maxsize=256)
def stage_sends(sched: str, p: int, vp: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """``pp_sends`` of every (stage, chunk) of a schedule, built once per (schedule, p, vp)."""
    n = p * vp

    def sends(stage: int, chunk: int) -> tuple[int, int]:
        q = slot_index(sched, p, vp, stage, chunk)
        fwd = int(q < n - 1 and slot_position(sched, p, vp, q + 1)[0] != stage)
        bwd = int(q > 0 and slot_position(sched, p, vp, q - 1)[0] != stage)
        return fwd, bwd

    return tuple(tuple(sends(stage, chunk) for chunk in range(vp)) for stage in range(p))


def stage_times(ctx: TimeContext, stage: int, chunks: Sequence[ChunkTimes]) -> StageTimes:
    """[T-STAGE] F_i, B_i, W_i, Rc_i and their chunk values — the chunks' rows, the pipeline hand-overs, the
    per-micro-batch parameter gathers and gradient reduce-scatters — and the per-step DP comm and t_opt."""
    r, k = ctx.r, ctx.k
    cF = [c.F for c in chunks]
    cB = [c.B for c in chunks]
    cW = [c.W for c in chunks]
    cR = [c.Rc for c in chunks]
    # the chunks' totals, each summed in chunk order from 0.0 (one pass over the chunks, not one per total)
    comm: dict[str, Num] = dict.fromkeys(COMM_KINDS, 0.0)
    fwd = bwd = rec = model = hardware = static = states = params = grads = layers = 0.0
    elements: list[Num] = [0.0] * 6
    for c in chunks:
        for kind in COMM_KINDS:
            comm[kind] = comm[kind] + c.comm.get(kind, 0.0)
        fwd, bwd, rec = fwd + c.fwd, bwd + c.bwd, rec + c.recompute
        model, hardware = model + c.model_flops, hardware + c.hardware_flops
        static, states, layers = static + c.static, states + c.states, layers + c.layers
        params, grads = params + c.params, grads + c.grads
        for i in range(6):
            elements[i] = elements[i] + c.elements[i]
    comp = {"fwd": fwd, "bwd": bwd, "recompute": rec}
    send = (1 - k.o_pp) * C.pp_boundary(ctx.M_p, ctx.pp)
    hand_overs = stage_sends(r.flags.schedule, r.par.p, r.par.vp)[stage]
    for j in range(len(chunks)):
        n_fwd, n_bwd = hand_overs[j]
        cF[j] = cF[j] + n_fwd * send
        cB[j] = cB[j] + n_bwd * send
        comm["pp"] = comm["pp"] + (n_fwd + n_bwd) * send
    dp = _dp(ctx, elements)
    fs_f, fs_b = (1 - k.o_fsdp) * dp.per_mb_fwd, (1 - k.o_fsdp) * dp.per_mb_bwd
    if chunks:  # per-micro-batch parameter gathers and reduce-scatters ride with the first chunk's passes
        cF[0] = cF[0] + fs_f
        cB[0] = cB[0] + fs_b
    comm["fsdp"] = fs_f + fs_b
    if r.flags.feat.offload_params:  # [T-COMM.offload_params] shards copied in before each gather, gradients out
        host = r.hardware.host_link_bandwidth
        regather = r.flags.reshard_after_forward or r.flags.sharding_mode == "zero3"
        h_f = (1 - k.o_fsdp) * params / host
        h_b = (1 - k.o_fsdp) * ((params if regather else 0.0) + grads) / host
        if chunks:
            cF[0], cB[0] = cF[0] + h_f, cB[0] + h_b
        comm["host"] = comm["host"] + h_f + h_b
    comm["dp"] = exposed_dp(ctx, dp, comp, layers)
    optimizer = optimizer_time(ctx, static, states)
    return StageTimes(F=sum(cF), B=sum(cB), W=sum(cW), Rc=sum(cR), chunk_F=tuple(cF), chunk_B=tuple(cB),
                      chunk_W=tuple(cW), chunk_Rc=tuple(cR), comm=comm, compute=comp, optimizer=optimizer,
                      model_flops=model, hardware_flops=hardware)


def exposed_dp(ctx: TimeContext, dp: C.DPTimes, compute: dict[str, Num], layers: Num) -> Num:
    """[T-COMM.dp_overlap] The per-step DP collectives left exposed. With ``overlap_grad_reduce`` the gradient
    reduction runs bucket by bucket under the last micro-batch's backward: max(t_rs − Bk, t_rs/L) exposed, the
    last bucket (about one layer's gradients, L the stage's layers) always; without it, all of t_rs. Likewise
    ``overlap_param_gather`` hides the parameter all-gather under the next step's first forward: max(t_ag − F,
    t_ag/L). A plan that states neither keeps the knob (docs/model.md#knobs): (1 − o_dp)·(t_rs + t_ag)."""
    feat = ctx.r.flags.feat
    if feat.overlap_grad_reduce is None and feat.overlap_param_gather is None:
        return (1 - ctx.k.o_dp) * dp.per_step
    n = maximum(1, layers)
    slices = ctx.r.par.n_s  # compute is per micro-batch (per slice for sliced schedules)
    backward = (compute["bwd"] + compute["recompute"]) * slices
    forward = compute["fwd"] * slices
    reduce, gather = dp.reduce, dp.gather
    out_r = maximum(reduce - backward, reduce / n) if feat.overlap_grad_reduce else reduce
    out_g = maximum(gather - forward, gather / n) if feat.overlap_param_gather else gather
    return out_r + out_g


def _dp(ctx: TimeContext, elements: list[Num]) -> C.DPTimes:
    """[T-COMM.dp] dense part on D and expert part on D_e from the stage's local elements."""
    r = ctx.r
    w, f = r.widths, r.flags
    trainable_d, trainable_e, gathered_d, gathered_e, params_d, params_e = elements
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
    return dense + expert


def optimizer_time(ctx: TimeContext, static: Num, states: Num) -> Num:
    """[T-OPT] t_opt = 2·(parameter + gradient + optimizer bytes of the stage)/(hbm_Bps·eff_hbm), + the states over
    the host link with ``swap_optimizer``. [T-OPT.offload] A step on the host (``offload_optimizer``,
    ``offload_params``) moves the gradients to the host and the parameters back over the host link instead, its
    CPU compute not priced (W-UNMODELLED)."""
    feat = ctx.r.flags.feat
    if feat.offload_optimizer or feat.offload_params:
        return (static - states) / ctx.r.hardware.host_link_bandwidth
    out = 2 * static / ctx.rate_hbm
    if ctx.r.flags.swap_optimizer:
        out = out + states / ctx.r.hardware.host_link_bandwidth
    return out


# ------------------------------------------------------------------------------------------ pipeline
# (docs/model.md#pipeline)
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


def pipe_looped_bfs(F: Sequence[Num], Bk: Sequence[Num], m: Num, vp: Num) -> Num:
    """[T-PIPE.looped_bfs] PyTorch's looped BFS runs every micro-batch through each local chunk before the next,
    backwards in reverse — GPipe in chunk units: (Σ_i F_i + (m·vp − 1)·max F + Σ_i Bk_i + (m·vp − 1)·max Bk)/vp."""
    return (sum(F) + (m * vp - 1) * _max(F) + sum(Bk) + (m * vp - 1) * _max(Bk)) / vp


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
    if not is_array(*S, *values):  # one plan: the first largest stage's value
        first = 0
        for i in range(1, len(S)):
            if S[i] > S[first]:
                first = i
        return values[first]
    best, out = S[0], values[0]
    for s, v in zip(S[1:], values[1:], strict=True):
        take = s > best
        best = where(take, s, best)
        out = where(take, v, out)
    return out


def pipeline_time(schedule: str, stages: Sequence[StageTimes], m: Num, vp: Num, n_s: Num,
                  S: Sequence[Num] | None = None) -> Num:
    """[T-PIPE] One flush of the pipeline (stage values per micro-batch; per slice for sliced schedules); ``S``:
    the stages' S when the caller has them."""
    S = [st.S for st in stages] if S is None else S
    p = len(stages)
    if schedule == "1f1b":
        return pipe_1f1b(S, m)
    if schedule == "interleaved":
        return pipe_interleaved(S, m, vp)
    if schedule == "seqsmartvpp":
        return pipe_interleaved(S, m * n_s, vp)
    if schedule == "gpipe":
        return pipe_gpipe([st.F for st in stages], [st.Bk for st in stages], m)
    if schedule == "looped_bfs":
        return pipe_looped_bfs([st.F for st in stages], [st.Bk for st in stages], m, vp)
    if schedule == "seq1f1b":
        return pipe_seq1f1b(S, m, n_s)
    S_max = _max(S)
    # chunk values of the slowest stage: the chunk with the largest F^c + B^c − 2·W^c (resp. the DualPipeV term)
    best: Num = None
    for j in range(len(stages[0].chunk_F)):
        Fc = _select(S, [st.chunk_F[j] for st in stages])
        Bc = _select(S, [st.chunk_B[j] + (st.chunk_Rc[j] if st.chunk_Rc else 0.0) for st in stages])
        Wc = _select(S, [st.chunk_W[j] for st in stages])
        # ZB-V and interleaved ZB1P share the zero-bubble form (the W passes fill the bubble)
        value = pipe_dualpipev(S_max, m, p, Fc, Bc, Wc) if schedule == "dualpipev" else pipe_zbv(S_max, m, p, Fc, Bc,
                                                                                                   Wc)
        best = value if best is None else maximum(best, value)
    return best


# ------------------------------------------------------------------------------------------ step (docs/model.md#step)
def _kept_times(pricer: StagePricer, hardware: Hardware | None = None) -> tuple[TimeContext, dict, dict]:
    """The time context of the pricer's rows on its device, with the stage and chunk times timed there (kept
    with the rows, per device: the plan's and the band's two ends). A chunk's and a stage's times read the rows,
    the device, the degrees, the schedule's hand-overs and the knobs — never the micro-batch count, which only
    the pipeline formula and the step total below read (docs/model.md#what-an-edit-re-prices)."""
    hardware = pricer.r.hardware if hardware is None else hardware
    return device_entry(pricer.book.times, hardware, lambda: (_context(pricer, hardware), {}, {}))


def _context(pricer: StagePricer, hardware: Hardware) -> TimeContext:
    """The time context of the pricer's rows on ``hardware``, kept with the row costs (``stage.RowCosts``): it
    reads the rows' inputs and the device, never the layout (the chunk holdings it is asked for are kept per
    form in the asking book, ``chunk_times``), so the plans of a recompute edit share it."""
    def make() -> TimeContext:
        rows = copy.copy(pricer)  # the rows and their costs, not what this plan derived (its memo, its book's forms)
        rows.memo = {}
        rows.shared = {}
        if hardware is not pricer.r.hardware:
            rows.r = replace(pricer.r, hardware=hardware)
        return TimeContext(rows)

    return device_entry(pricer.book.costs.contexts, hardware, make)


class Timed(NamedTuple):
    """A plan's stages timed per micro-batch, and what the step formula reads of them apart from the micro-batch
    count: the slowest stage's parts are picked among the distinct stages (first occurrences, in stage order: a
    stage priced once has one S, and a later copy never beats an earlier one — ties go to the earliest)."""

    stages: tuple[StageTimes, ...]
    S: list[Num]
    S_distinct: list[Num]
    distinct: list[StageTimes]
    dp_step: Num      # max_i (1 − o_dp)·t_dp,i
    t_opt: Num        # max_i t_opt,i
    model_flops: Num  # Σ_i per micro-batch
    hardware_flops: Num


def timed_stages(pricer: StagePricer, rows_per_stage: list[list[Row]] | None = None,
                 hardware: Hardware | None = None) -> Timed:
    """The stages of the pricer's layout (or of ``rows_per_stage``) timed on the plan's device (or on
    ``hardware``, the layout's stages only); for the layout, kept with the rows per device (``_kept_times``:
    none of it reads the micro-batch count)."""
    r = pricer.r
    par, sched = r.par, r.flags.schedule
    if rows_per_stage is None:
        ctx, seen, chunks = _kept_times(pricer, hardware)
        got = seen.get(("timed", id(pricer.layout)))
        if got is not None and got[0] is pricer.layout:
            return got[1]
        forms = [form for form, _entries in stage_plan(pricer.layout, r.dims.tie)]
    else:
        built: dict[tuple, StageForm] = {}
        forms = []
        for rows in rows_per_stage:
            signature = form_signature(rows)
            if signature not in built:
                built[signature] = build_form(rows, par.vp)
            forms.append(built[signature])
        ctx, seen, chunks = TimeContext(pricer), {}, {}
    # stages holding the same rows that send the same pipeline hand-overs take the same time: price each such
    # stage once (most middle stages of a uniform stack); chunks holding the same rows, each such chunk once
    sends = stage_sends(sched, par.p, par.vp)
    timed = []
    for i, form in enumerate(forms):
        key = (id(form), sends[i])
        got = seen.get(key)
        if got is None or got[0] is not form:
            parts = []
            for j in range(par.vp):
                held = (id(form), form.counts[j])
                if held not in chunks or chunks[held][0] is not form:
                    chunks[held] = (form, chunk_times(ctx, form, j, pricer.shared))
                parts.append(chunks[held][1])
            got = seen[key] = (form, stage_times(ctx, i, parts))
        timed.append(got[1])
    stages = tuple(timed)
    distinct = list({id(st): st for st in stages}.values())
    S_of = {id(st): st.S for st in distinct}
    out = Timed(stages, [S_of[id(st)] for st in stages], [S_of[id(st)] for st in distinct], distinct,
                _max([st.comm["dp"] for st in stages]), _max([st.optimizer for st in stages]),
                sum(st.model_flops for st in stages), sum(st.hardware_flops for st in stages))
    if rows_per_stage is None:
        seen[("timed", id(pricer.layout))] = (pricer.layout, out)
    return out


def step_seconds(pricer: StagePricer, hardware: Hardware | None = None) -> Num:
    """T_step of ``step_time`` alone, on ``hardware`` (the step-time band's ends) or the plan's device."""
    r = pricer.r
    par = r.par
    timed = timed_stages(pricer, hardware=hardware)
    t_pipe = pipeline_time(r.flags.schedule, timed.stages, par.m, par.vp, par.n_s, timed.S)
    return par.n_acc * t_pipe + timed.dp_step + timed.t_opt


def step_time(pricer: StagePricer, rows_per_stage: list[list[Row]] | None = None) -> StepTime:
    """[T-STEP] T_step = n_acc·T_pipe + max_i (1 − o_dp)·t_dp,i + max_i t_opt,i, with its parts (sum = T_step),
    tokens/s/device = G·s/(T_step·N) and MFU = model FLOPs per step/(T_step·N·peak). The stages are the pricer's
    layout's (``rows_per_stage`` names other rows, e.g. a timeline's)."""
    r = pricer.r
    par, sched = r.par, r.flags.schedule
    timed = timed_stages(pricer, rows_per_stage)
    stages, S, S_distinct, distinct = timed.stages, timed.S, timed.S_distinct, timed.distinct
    units = par.m * par.n_s  # micro-batches (slices) per flush
    t_pipe = pipeline_time(sched, stages, par.m, par.vp, par.n_s, S)
    dp_step, t_opt = timed.dp_step, timed.t_opt
    total = par.n_acc * t_pipe + dp_step + t_opt
    reps = par.n_acc * units
    parts: dict[str, Num] = {}
    split = {id(st): st.parts() for st in distinct}  # stages priced once share their parts
    for name in ("fwd", "bwd", "recompute", "tp", "cp", "ep", "pp", "host"):
        parts[name] = reps * _select(S_distinct, [split[id(st)][name] for st in distinct])
    parts["dp"] = dp_step + reps * _select(S_distinct, [st.comm["fsdp"] for st in distinct])
    parts["bubble"] = par.n_acc * t_pipe - reps * _max(S)
    parts["optimizer"] = t_opt
    parts = {k: parts[k] for k in PARTS}
    world = par.world
    replicas = par.d * par.t * par.cp
    model = reps * replicas * timed.model_flops
    hardware = reps * replicas * timed.hardware_flops
    mfu_peak, peak = r.hardware.mfu_peak(r.widths.c)
    tokens = par.b * par.d * par.m * par.n_acc * par.s
    return StepTime(step_time_s=total, parts=parts, stages=stages, tokens_per_s_per_device=tokens / (total * world),
                    mfu=model / (total * world * peak) if peak else 0.0, model_flops_per_step=model,
                    hardware_flops_per_step=hardware, pipeline_s=t_pipe, schedule=sched, mfu_peak=mfu_peak)


def estimate_step_time(model: ModelSpec, strategy: Strategy, hardware: Hardware,
                       options: RunOptions | None = None) -> StepTime:
    """Convenience: resolve, lay out, price the rows and time the step (no memory verdict, no validation)."""
    from .options import RunOptions

    r = resolve(model, strategy, hardware, options or RunOptions())
    return step_time(StagePricer(r, build_layout(layout_inputs(r))))


__all__ = ["COMM_KINDS", "KNOBS", "PARTS", "ChunkTimes", "Knobs", "StageTimes", "StepTime", "chunk_times",
           "compute_time", "elementwise_time", "estimate_step_time", "knobs", "pipe_1f1b", "pipe_dualpipev",
           "pipe_gpipe", "pipe_interleaved", "pipe_looped_bfs", "pipe_seq1f1b", "pipe_zbv", "pipeline_time",
           "pp_sends", "row_time", "stage_times", "step_seconds", "step_time", "timed_stages"]
