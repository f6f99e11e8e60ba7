"""Step-time model (docs/model.md#step-time): a stage's time per micro-batch assembled from its rows' times
(``rowtime``) over its form (the distinct rows with their counts per chunk, ``assembly.form``) — the same code for
one plan, the search's candidates and the balancer's table rows — then the pipeline formulas [T-PIPE] and the step
total [T-STEP] with its parts, tokens/s/device and MFU. Degrees may be numpy arrays; the number of stages and
chunks may not.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple, TypeVar

import numpy as np

from . import comm as C
from .arr import Num, is_array
from .assembly.form import StageForm, build_form, form_signature, stage_plan
from .chunktime import ChunkPasses, ChunkTimes, Holdings, chunk_holdings, chunk_passes, chunk_times
from .dptime import exposed_dp, optimizer_time, stage_dp
from .layout import build_layout, layout_inputs, slot_index, slot_position
from .pipeline import (
    at_largest,
    first_largest,
    largest,
    pipe_1f1b,
    pipe_dualpipev,
    pipe_gpipe,
    pipe_interleaved,
    pipe_looped_bfs,
    pipe_seq1f1b,
    pipe_zbv,
    pipeline_time,
)
from .records import at_once
from .resolve import Resolved, resolve
from .rowtime import (
    COMM_KINDS,
    KNOBS,
    Knobs,
    TimeContext,
    knobs,
    row_time,
)
from .stage import Row, StagePricer, device_entry

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
        return stage_total(self.F, self.B, self.W, self.Rc)

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
_T = TypeVar("_T")
STAGE_SUMS = "stage-sums"  # the pricer's memo key of its forms' device-independent sums (``stage_sums``)


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


class StageSums(NamedTuple):
    """What a stage's chunks hold, summed in chunk order from 0.0: FLOPs, the DP inputs (``ChunkTimes.elements``),
    static and optimizer-state bytes, body layers, parameter and gradient bytes. None of it reads the device, so
    the band's ends take the plan's (``timed_stages``)."""

    model: Num
    hardware: Num
    static: Num
    states: Num
    layers: Num
    params: Num
    grads: Num
    elements: list[Num]
    dp_key: tuple | None  # ``elements_key(elements)``: made once for the plan's device and the band's ends


def stage_total(F: Num, B: Num, W: Num, Rc: Num) -> Num:
    """[T-STAGE] S_i = F_i + B_i + W_i + Rc_i: a stage's time per micro-batch (``StageTimes.S``, and
    ``stage_seconds`` for the band's ends, which make no stage records)."""
    return F + B + W + Rc


def stage_sums(chunks: Sequence[ChunkTimes | Holdings]) -> StageSums:
    model = hardware = static = states = params = grads = layers = 0.0
    elements: list[Num] = [0.0] * 6
    for c in chunks:
        model, hardware = model + c.model_flops, hardware + c.hardware_flops
        static, states, layers = static + c.static, states + c.states, layers + c.layers
        params, grads = params + c.params, grads + c.grads
        for i in range(6):
            elements[i] = elements[i] + c.elements[i]
    return StageSums(model, hardware, static, states, layers, params, grads, elements, elements_key(elements))


def elements_key(elements: list[Num]) -> tuple | None:
    """A stage's DP inputs by value and type (``dptime.stage_dp``'s key); None when one is an array (the search's
    candidates)."""
    kinds = tuple(map(type, elements))
    return None if np.ndarray in kinds else (*elements, kinds)


def stage_times(ctx: TimeContext, stage: int, chunks: Sequence[ChunkTimes], sums: StageSums | None = None
                ) -> StageTimes:
    """[T-STAGE] F_i, B_i, W_i, Rc_i and their chunk values — the chunks' rows, the pipeline hand-overs, the
    per-micro-batch parameter gathers and gradient reduce-scatters — and the per-step DP comm and t_opt.
    ``sums``: the chunks' ``stage_sums`` when the caller keeps them."""
    cF = [c.F for c in chunks]
    cB = [c.B for c in chunks]
    cW = [c.W for c in chunks]
    cR = [c.Rc for c in chunks]
    held = stage_sums(chunks) if sums is None else sums
    # the chunks' totals, each summed in chunk order from 0.0 (one pass over the chunks, not one per total)
    tp = cp = ep = pp = fsdp = host = fwd = bwd = rec = 0.0
    for c in chunks:
        cc = c.comm
        tp, cp, ep = tp + cc.get("tp", 0.0), cp + cc.get("cp", 0.0), ep + cc.get("ep", 0.0)
        pp, fsdp, host = pp + cc.get("pp", 0.0), fsdp + cc.get("fsdp", 0.0), host + cc.get("host", 0.0)
        fwd, bwd, rec = fwd + c.fwd, bwd + c.bwd, rec + c.recompute
    comp = {"fwd": fwd, "bwd": bwd, "recompute": rec}
    pp, fsdp, host, dp = _add_stage_terms(ctx, stage, cF, cB, held, pp, host)
    # COMM_KINDS in order, then dp
    comm = {"tp": tp, "cp": cp, "ep": ep, "pp": pp, "fsdp": fsdp, "host": host,
            "dp": exposed_dp(ctx, dp, comp, held.layers)}
    return at_once(StageTimes, F=sum(cF), B=sum(cB), W=sum(cW), Rc=sum(cR), chunk_F=tuple(cF), chunk_B=tuple(cB),
                   chunk_W=tuple(cW), chunk_Rc=tuple(cR), comm=comm, compute=comp,
                   optimizer=optimizer_time(ctx, held.static, held.states), model_flops=held.model,
                   hardware_flops=held.hardware)


def _add_stage_terms(ctx: TimeContext, stage: int, cF: list[Num], cB: list[Num], held: StageSums, pp: Num,
                     host: Num) -> tuple[Num, Num, Num, C.DPTimes]:
    """[T-STAGE] Adds to the chunks' F and B (in place) the pipeline hand-overs, the per-micro-batch parameter
    gathers and gradient reduce-scatters and the offloaded shards' copies; returns the stage's exposed pp, fsdp
    and host comm (``pp``, ``host``: the chunks' own) and its DP collectives."""
    r, k = ctx.r, ctx.k
    send = ctx.pp_send
    hand_overs = stage_sends(r.flags.schedule, r.par.p, r.par.vp)[stage]
    for j in range(len(cF)):
        n_fwd, n_bwd = hand_overs[j]
        cF[j] = cF[j] + n_fwd * send
        cB[j] = cB[j] + n_bwd * send
        pp = pp + (n_fwd + n_bwd) * send
    dp = stage_dp(ctx, held.elements, held.dp_key)
    fs_f, fs_b = (1 - k.o_fsdp) * dp.per_mb_fwd, (1 - k.o_fsdp) * dp.per_mb_bwd
    if cF:  # per-micro-batch parameter gathers and reduce-scatters ride with the first chunk's passes
        cF[0] = cF[0] + fs_f
        cB[0] = cB[0] + fs_b
    fsdp = fs_f + fs_b
    if r.flags.feat.offload_params:  # [T-COMM.offload_params] shards copied in before each gather, gradients out
        link = r.hardware.host_link_bandwidth
        regather = r.flags.reshard_after_forward or r.flags.sharding_mode == "zero3"
        h_f = (1 - k.o_fsdp) * held.params / link
        h_b = (1 - k.o_fsdp) * ((held.params if regather else 0.0) + held.grads) / link
        if cF:
            cF[0], cB[0] = cF[0] + h_f, cB[0] + h_b
        host = host + h_f + h_b
    return pp, fsdp, host, dp


def stage_seconds(ctx: TimeContext, stage: int, chunks: Sequence[ChunkTimes | ChunkPasses], held: StageSums
                  ) -> tuple[Num, Num, Num]:
    """What the step formula reads of ``stage_times`` under a schedule that reads only S: the stage's S, its
    exposed per-step DP comm and t_opt, the same values (the band's ends make no stage records)."""
    cF = [c.F for c in chunks]
    cB = [c.B for c in chunks]
    fwd = bwd = rec = 0.0
    for c in chunks:
        fwd, bwd, rec = fwd + c.fwd, bwd + c.bwd, rec + c.recompute
    dp = _add_stage_terms(ctx, stage, cF, cB, held, 0.0, 0.0)[3]
    S = stage_total(sum(cF), sum(cB), sum([c.W for c in chunks]), sum([c.Rc for c in chunks]))
    return (S, exposed_dp(ctx, dp, {"fwd": fwd, "bwd": bwd, "recompute": rec}, held.layers),
            optimizer_time(ctx, held.static, held.states))


# ------------------------------------------------------------------------------------------ step (docs/model.md#step)
def _kept_times(pricer: StagePricer, hardware: Hardware | None = None) -> tuple[TimeContext, dict]:
    """The time context of the pricer's rows on its device, with the layouts' stages timed there (``Timed``, per
    layout; kept with the rows, per device: the plan's and the band's two ends). A chunk's and a stage's times
    read the rows, the device, the degrees, the schedule's hand-overs and the knobs — never the micro-batch count,
    which only the pipeline formula and the step total below read (docs/model.md#what-an-edit-re-prices)."""
    hardware = pricer.r.hardware if hardware is None else hardware
    return device_entry(pricer.book.times, hardware, lambda: (_context(pricer, hardware), {}))


def _context(pricer: StagePricer, hardware: Hardware) -> TimeContext:
    """The time context of the pricer's rows on ``hardware``, kept with the row costs (``stage.RowCosts``): it
    reads the rows' inputs and the device, never the layout (the chunk holdings it is asked for are kept per
    form in the asking book, ``chunk_times``), so the plans of a recompute edit share it."""
    def make() -> TimeContext:
        if hardware is not pricer.r.hardware:
            # a band end: what reads no device is the plan's device's context's, its rows (the costs read no device)
            # too
            like = _context(pricer, pricer.r.hardware)
            return TimeContext(like.pricer, like=like, r=with_device(pricer.r, hardware))
        rows = copy.copy(pricer)  # the rows and their costs, not what this plan derived (its memo, its book's forms)
        rows.memo = {}
        rows.shared = {}
        return TimeContext(rows)

    return device_entry(pricer.book.costs.contexts, hardware, make)


def with_device(r: Resolved, hardware: Hardware) -> Resolved:
    """``replace(r, hardware=hardware)``: the record's instance dict copied at once (``replace`` runs the frozen
    dataclass's ``__init__``, which sets its fields one by one; Resolved derives nothing in ``__post_init__``, and
    tests/test_steptime_band.py checks the two equal)."""
    return at_once(Resolved, **{**r.__dict__, "hardware": hardware})


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


class StageGroups(NamedTuple):
    """A plan's stages grouped by what they take the same time for: the same rows (one form) sending the same
    pipeline hand-overs (most middle stages of a uniform stack), and within them chunks holding the same rows
    (the same form and counts). None of it reads the device: the plan's and the band's ends share it."""

    first: tuple[tuple[int, StageForm], ...]  # per group, in order of first occurrence: (first stage, form)
    index: tuple[int, ...]                    # per stage: its group
    chunk_of: tuple[tuple[int, ...], ...]     # per group, per chunk: its distinct chunk
    chunks: tuple[tuple[StageForm, int], ...]  # the distinct chunks, in order of first occurrence: (form, chunk)


def stage_groups(forms: Sequence[StageForm], sends: tuple, vp: int) -> StageGroups:
    groups: dict[tuple, int] = {}
    held: dict[tuple, int] = {}
    first, index, chunk_of, chunks = [], [], [], []
    for i, form in enumerate(forms):
        key = (id(form), sends[i])
        g = groups.get(key)
        if g is None:
            g = groups[key] = len(first)
            first.append((i, form))
            of = []
            for j in range(vp):
                c = held.setdefault((id(form), form.counts[j]), len(chunks))
                if c == len(chunks):
                    chunks.append((form, j))
                of.append(c)
            chunk_of.append(tuple(of))
        index.append(g)
    return StageGroups(tuple(first), tuple(index), tuple(chunk_of), tuple(chunks))


STAGE_GROUPS = "stage-groups"  # the pricer's memo key of its layout's StageGroups


def timed_stages(pricer: StagePricer, rows_per_stage: list[list[Row]] | None = None,
                 hardware: Hardware | None = None) -> Timed:
    """The stages of the pricer's layout (or of ``rows_per_stage``) timed on the plan's device (or on
    ``hardware``, the layout's stages only); for the layout, kept with the rows per device (``_kept_times``:
    none of it reads the micro-batch count). Each group of stages (``stage_groups``) is timed once, each
    distinct chunk once."""
    par = pricer.r.par
    if rows_per_stage is None:
        layout = pricer.layout
        ctx, seen = _kept_times(pricer, hardware)
        got = seen.get(("timed", id(layout)))
        if got is not None and got[0] is layout:
            return got[1]  # type: ignore[no-any-return]
        groups = _layout_groups(pricer)
    else:
        built: dict[tuple, StageForm] = {}
        forms = []
        for rows in rows_per_stage:
            signature = form_signature(rows)
            if signature not in built:
                built[signature] = build_form(rows, par.vp)
            forms.append(built[signature])
        ctx, seen = TimeContext(pricer), {}
        groups = stage_groups(forms, stage_sends(pricer.r.flags.schedule, par.p, par.vp), par.vp)
    distinct = _per_group(pricer, ctx, groups, stage_times)
    index = groups.index
    stages = tuple([distinct[g] for g in index])
    # per stage, in stage order, from the distinct stages' values
    S_distinct = [st.S for st in distinct]
    dp = [st.comm["dp"] for st in distinct]
    opt = [st.optimizer for st in distinct]
    model = [st.model_flops for st in distinct]
    hw_flops = [st.hardware_flops for st in distinct]
    out = Timed(stages, [S_distinct[g] for g in index], S_distinct, distinct, largest([dp[g] for g in index]),
                largest([opt[g] for g in index]), sum([model[g] for g in index]), sum([hw_flops[g] for g in index]))
    if rows_per_stage is None:
        seen[("timed", id(layout))] = (layout, out)
    return out


def _per_group(pricer: StagePricer, ctx: TimeContext, groups: StageGroups,
               timed: Callable[[TimeContext, int, list, StageSums], _T], passes: bool = False) -> list[_T]:
    """``timed`` (``stage_times``, or ``stage_seconds`` for what an S-only schedule reads) of each group of stages'
    first stage, from each distinct chunk timed once and the form's kept stage sums. ``passes``: the chunks'
    ``chunk_passes`` (no chunk records: all that ``stage_seconds`` reads), the sums from what they hold."""
    shared = pricer.shared
    sums = shared.setdefault(STAGE_SUMS, {})
    if passes:
        held: list = [chunk_holdings(ctx, form, j, shared) for form, j in groups.chunks]
        chunks: list = [chunk_passes(ctx, h) for h in held]
    else:
        chunks = held = [chunk_times(ctx, form, j, shared) for form, j in groups.chunks]
    out = []
    for (i, form), of in zip(groups.first, groups.chunk_of, strict=True):
        out.append(timed(ctx, i, [chunks[c] for c in of], _kept_sums(sums, form, held, of)))
    return out


def _kept_sums(memo: dict, form: StageForm, chunks: Sequence[ChunkTimes | Holdings], of: Sequence[int]
               ) -> StageSums:
    """The ``stage_sums`` of a form's chunks (``chunks[c]`` for c in ``of``; they read no device: the band's ends
    take the plan's), kept per form in the asking pricer's memo."""
    got = memo.get(id(form))
    if got is None or got[0] is not form:
        got = memo[id(form)] = (form, stage_sums([chunks[c] for c in of]))
    return got[1]  # type: ignore[no-any-return]


def _layout_groups(pricer: StagePricer) -> StageGroups:
    """The ``stage_groups`` of the pricer's layout, kept with its rows (they read no device)."""
    layout, r = pricer.layout, pricer.r
    kept = pricer.shared.get(STAGE_GROUPS)
    if kept is None or kept[0] is not layout:
        forms = [form for form, _entries in stage_plan(layout, r.dims.tie)]
        sends = stage_sends(r.flags.schedule, r.par.p, r.par.vp)
        kept = pricer.shared[STAGE_GROUPS] = (layout, stage_groups(forms, sends, r.par.vp))
    return kept[1]  # type: ignore[no-any-return]


S_ONLY = ("1f1b", "interleaved", "seqsmartvpp", "seq1f1b")  # the schedules whose T_pipe reads only the stages' S


def seconds_per_stage(pricer: StagePricer, hardware: Hardware | None = None) -> tuple[list[Num], Num, Num]:
    """Under a schedule of ``S_ONLY``, what ``step_seconds`` reads of ``timed_stages`` on ``hardware`` (or the plan's
    device): the stages' S, max_i (1 − o_dp)·t_dp,i and max_i t_opt,i, from ``stage_seconds`` per group of stages
    (kept with the rows per device, as ``timed_stages``)."""
    layout = pricer.layout
    ctx, seen = _kept_times(pricer, hardware)
    got = seen.get(("seconds", id(layout)))
    if got is not None and got[0] is layout:
        return got[1]  # type: ignore[no-any-return]
    groups = _layout_groups(pricer)
    S, dp, opt = zip(*_per_group(pricer, ctx, groups, stage_seconds, passes=True), strict=True)
    index = groups.index
    out = ([S[g] for g in index], largest([dp[g] for g in index]), largest([opt[g] for g in index]))
    seen[("seconds", id(layout))] = (layout, out)
    return out


def step_seconds(pricer: StagePricer, hardware: Hardware | None = None) -> Num:
    """T_step of ``step_time`` alone, on ``hardware`` (the step-time band's ends) or the plan's device."""
    r = pricer.r
    par, sched = r.par, r.flags.schedule
    if sched in S_ONLY:
        S, dp_step, t_opt = seconds_per_stage(pricer, hardware)
        return par.n_acc * pipeline_time(sched, S, par.m, par.vp, par.n_s, S) + dp_step + t_opt
    timed = timed_stages(pricer, hardware=hardware)
    t_pipe = pipeline_time(sched, timed.stages, par.m, par.vp, par.n_s, timed.S)
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
    # one plan: the parts of the first largest stage (``at_largest``; a part that is an array makes its S one)
    if not is_array(*S_distinct):
        slowest = distinct[first_largest(S_distinct)]
        split = slowest.parts()
        for name in ("fwd", "bwd", "recompute", "tp", "cp", "ep", "pp", "host"):
            parts[name] = reps * split[name]
        parts["dp"] = dp_step + reps * slowest.comm["fsdp"]
    else:
        splits = [st.parts() for st in distinct]
        for name in ("fwd", "bwd", "recompute", "tp", "cp", "ep", "pp", "host"):
            parts[name] = reps * at_largest(S_distinct, [split[name] for split in splits])
        parts["dp"] = dp_step + reps * at_largest(S_distinct, [st.comm["fsdp"] for st in distinct])
    parts["bubble"] = par.n_acc * t_pipe - reps * largest(S)
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
           "estimate_step_time", "knobs", "pipe_1f1b", "pipe_dualpipev",
           "pipe_gpipe", "pipe_interleaved", "pipe_looped_bfs", "pipe_seq1f1b", "pipe_zbv", "pipeline_time",
           "pp_sends", "row_time", "stage_times", "step_seconds", "step_time", "timed_stages"]
