"""A stage's chunk on one device (docs/model.md#stage-time): the sums over its rows' times (``rowtime``) with their
counts, and what its rows hold apart from any device (FLOPs, the DP inputs, static bytes) — the step time's
(``steptime``) and the balancer's stages are assembled from these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .arr import Num
from .assembly.form import StageForm
from .layout import EMBEDDING, NOOP, OUTPUT, VISION
from .records import at_once
from .rowtime import TimeContext, kept_flops, row_key, timed_row
from .stage import Row
from .static import gather_bytes, gather_trainable_bytes


@dataclass(frozen=True)
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
    F, B, W, Rc, fwd, bwd, rec = chunk_passes(ctx, held)
    tp = cp = ep = host = 0.0
    cache = ctx.row_cache
    for n, key, _row in held.rows:  # chunk_passes has timed every row
        t = cache[key][2]
        tp, cp, ep, host = tp + n * t.tp, cp + n * t.cp, ep + n * t.ep, host + n * t.host
    comm: dict[str, Num] = {"tp": tp, "cp": cp, "ep": ep, "host": host}
    return at_once(ChunkTimes, F=F, B=B, W=W, Rc=Rc, comm=comm, fwd=fwd, bwd=bwd, recompute=rec,
                   model_flops=held.model_flops, hardware_flops=held.hardware_flops, elements=held.elements,
                   static=held.static, states=held.states, layers=held.layers, params=held.params, grads=held.grads)


class ChunkPasses(NamedTuple):
    """A chunk's passes on one device — ``ChunkTimes``' F, B, W, Rc (exposed TP / CP / EP comm folded in) and
    compute alone — all that an S-only schedule's step formula reads of its chunks (``steptime.stage_seconds``)."""

    F: Num
    B: Num
    W: Num
    Rc: Num
    fwd: Num
    bwd: Num
    recompute: Num


def chunk_passes(ctx: TimeContext, held: Holdings) -> ChunkPasses:
    """Σ n·t over a chunk's rows of each pass, in row order from 0.0, timing the rows not yet timed on the
    context's device."""
    F = B = W = Rc = fwd = bwd = rec = 0.0
    cache = ctx.row_cache
    for n, key, row in held.rows:
        got = cache.get(key)
        if got is None or got[0] is not row.cost:
            got = timed_row(ctx, row, key)
        t = got[2]  # the row's RowSums
        F, B, W, Rc = F + n * t.F, B + n * t.B, W + n * t.W, Rc + n * t.Rc
        fwd, bwd, rec = fwd + n * t.fwd, bwd + n * t.bwd, rec + n * t.recompute
    return ChunkPasses(F, B, W, Rc, fwd, bwd, rec)


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
    # the six DP inputs (``ChunkTimes.elements``), each summed in row order from 0.0
    e0 = e1 = e2 = e3 = e4 = e5 = 0.0
    model = hardware = static = states = layers = params = grads = 0.0
    kept_rows = ctx.pricer.book.costs.holdings
    price = ctx.pricer.cost
    for k, n in form.counts[j]:
        item, with_head = form.keys[k]
        cost = price(item, with_head)
        row = Row(item, j, cost, with_head)
        kept = row_key(row)
        rows.append((n, kept, row))
        got = kept_rows.get(kept)
        if got is None or got[0] is not cost:
            got = kept_rows[kept] = (cost, row_holdings(ctx, row, kept))
        r_model, r_hardware, (r0, r1, r2, r3, r4, r5), r_static, r_states, r_params, r_grads = got[1]
        model, hardware = model + n * r_model, hardware + n * r_hardware
        e0, e1, e2, e3, e4, e5 = e0 + n * r0, e1 + n * r1, e2 + n * r2, e3 + n * r3, e4 + n * r4, e5 + n * r5
        static = static + n * r_static
        states = states + n * r_states
        params, grads = params + n * r_params, grads + n * r_grads
        if item.kind not in NOT_LAYERS:
            layers = layers + n
    held = Holdings(tuple(rows), model, hardware, (e0, e1, e2, e3, e4, e5), static, states, layers, params, grads)
    memo[key] = (form, held)  # type: ignore[index]
    return held


def row_holdings(ctx: TimeContext, row: Row, key: tuple) -> tuple[Num, Num, tuple[Num, ...], Num, Num, Num, Num]:
    """What one row holds, apart from any device (kept with the row costs per row, ``chunk_holdings`` sums them
    with the rows' counts): model and hardware FLOPs, the six DP inputs (``ChunkTimes.elements``), parameter +
    gradient + optimizer-state bytes, optimizer-state, parameter and gradient bytes."""
    f = ctx.r.flags
    bc, bp = ctx.r.widths.c, ctx.r.widths.p
    flops = kept_flops(ctx, row, key)
    local, st = row.cost.local, row.cost.static
    elements = (local.trainable_dense, local.trainable_expert, gather_bytes(local, f, bc, 1, 0),
                gather_bytes(local, f, bc, 0, 1), gather_trainable_bytes(local, f, bp, 1, 0),
                gather_trainable_bytes(local, f, bp, 0, 1))
    return (flops.model, flops.hardware, elements, st.parameters + st.gradients + st.optimizer_states,
            st.optimizer_states, st.parameters, st.gradients)


__all__ = ["CHUNK_HOLDINGS", "NOT_LAYERS", "ChunkPasses", "ChunkTimes", "Holdings", "chunk_holdings", "chunk_passes",
           "chunk_times", "row_holdings"]
