"""PyTorch FSDP2 priced instant by instant (docs/model.md#fsdp2, DECISIONS D50–D52).

Under ``fully_shard`` the categories peak at different moments, so a stage is priced at each instant of
the backward that follows its peak replay point — loss backward (L), the O unit's post-backward (O), for
every block the gated-activation backward (a), the end of attention backward (b) and the post-backward
copy-in (c), then the embedding backward (e1) and the E/root unit's post-backward (e2) — and the largest
sum of gradients + activations + communication buffers + working overhead wins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from operator import attrgetter
from typing import Any, NamedTuple

import numpy as np

from .arr import Num, argmax_first, gt, is_array, maximum, minimum, pick, where
from .fsdp_points import kept_sums, one_sum, points_plan
from .fsdp_points import other_activations as _other_activations
from .layout import EMBEDDING, MTP, NOOP, OUTPUT, VISION
from .masked_points import MaskedPoints
from .messages import Message, Text, msg
from .records import at_once
from .stage import Row, StagePricer
from .stage_entries import EMBEDDING_COPY
from .static import gather_bytes

# slots live at instant (a): the block's A(ℓ, none) minus the down-projection input, released by its backward
FC2_INPUTS = frozenset({"m.fc2_in", "e.fc2_in", "s.fc2_in"})
ATTN_INPUTS = frozenset({"a.norm_in", "a.norm_out"})
# a block's instants, named by ``Instant.named`` with each stage's layer index (made once: a walk makes four a block)
BLOCK_A, BLOCK_B, BLOCK_C, BLOCK_C_OUTPUT = (msg("fsdp.block.a", block=None), msg("fsdp.block.b", block=None),
                                             msg("fsdp.block.c", block=None), msg("fsdp.block.c-output", block=None))
LOSS, O_UNIT, O_UNIT_OUTPUT, E1, IDLE = (msg("fsdp.loss"), msg("fsdp.o-unit"), msg("fsdp.o-unit.output"),
                                        msg("fsdp.e1"), msg("fsdp.idle"))
E2_ROOT = (msg("fsdp.e2.root.copy-in"), msg("fsdp.e2.root.output"))
E2_UNIT = (msg("fsdp.e2.unit.copy-in"), msg("fsdp.e2.unit.output"))


@dataclass(frozen=True)
class Instant:
    name: Text  # a catalogue message (its English text is the result's peak_instant)
    gradients: Num
    activations: Num
    comm: Num
    working: Num
    focus: int = -1  # index into the stage rows of the block this instant belongs to

    @property
    def dynamic(self) -> Num:
        return self.gradients + self.activations + self.comm + self.working

    def named(self, rows: list[Row]) -> Text:
        """The name with the block's layer index, ``rows`` the rows of the instant's chunk (walks are shared by the
        stages, and the chunks of a stage, holding the same rows: ``_walk``)."""
        if self.focus < 0 or not isinstance(self.name, Message):
            return self.name
        return _block_named(self.name, rows[self.focus].item.index)


def _block_named(name: Message, index: int) -> Message:
    """``name`` with its ``block`` parameter set to ``index`` (a Message made at once: one per stage an estimate)."""
    return at_once(Message, key=name.key, params=tuple([(k, index if k == "block" else v) for k, v in name.params]))


def _instant(name: Text, gradients: Num, activations: Num, comm: Num, working: Num, focus: int = -1) -> Instant:
    """An Instant equal to ``Instant(...)`` of the same, its instance dict set at once (``result.stage_result``'s
    way: the frozen dataclass's ``__init__`` sets the six fields one by one, and a walk makes four a block)."""
    return at_once(Instant, name=name, gradients=gradients, activations=activations, comm=comm, working=working,
                   focus=focus)


def _is_block(row: Row) -> bool:
    return row.item.kind not in (EMBEDDING, OUTPUT, NOOP, EMBEDDING_COPY, VISION, "vision_extras")


@dataclass(frozen=True)
class Peak:
    """A stage's largest FSDP2 instant: its four dynamic fields (the other micro-batches' activations added),
    its name (one element) and the in-flight counts shown; ``walks`` keeps every instant for Explain."""

    best: Instant
    counts: tuple[Num, ...]
    walks: tuple[tuple[Num, list[Instant], str], ...] = ()  # per backward chunk: (A_h, instants, point)
    several: bool = False  # the stage has more than one replay point (names say which one)


def peak_instant(pricer: StagePricer, rows: list[Row], act_chunk: list[Num], points: list,
                 explain: bool = False) -> Peak:
    """The largest instant over the backward that follows each replay point (docs/model.md#instants). The other
    micro-batches' activations A_h add a constant per replay point, so the largest instant of a backward depends only on
    its chunk: walk each chunk's backward once, then add the largest A_h among the points followed by that chunk's
    backward (P-FSDP-POINTS). Numbers or arrays over candidates alike."""
    if not explain and type(points) is list and _NUMBERS.issuperset(map(type, act_chunk)) and \
            all(pt.valid is True for pt in points):
        got = _one_peak(pricer, rows, act_chunk, points)
        if got is not None:
            return got
    chunks = points.backward_chunks if isinstance(points, MaskedPoints) else \
        sorted({pt.backward_chunk for pt in points})
    others = _other_activations(points, act_chunk, chunks, pricer.memo)
    # stages holding the same rows share the walk of a chunk's backward (names take each stage's layer indices)
    signature = _signature(rows)
    store, acc = _walk_store(pricer)
    totals: list[Num] = []
    picked: list[tuple[Num, ...]] = []
    walks = []
    for j in chunks:
        a_h, point = others[j]
        fields_j, dynamic_j, k_j, walk = _walk(pricer, rows, j, signature, store, acc)
        picked.append((fields_j[0], fields_j[1] + a_h, fields_j[2], fields_j[3]))
        totals.append(a_h + dynamic_j)
        walks.append((a_h, walk, point, k_j, j))
    c, won = _largest_chunk(totals, picked)
    several = len(points) > 1
    if isinstance(c, int) and not is_array(*won):
        a_h, walk, point, k_j, j = walks[c]
        named = walk[k_j].named(_chunk_rows(rows, j))
        name = msg("explain.instant-after", name=named, where=_where(points, point)) if several else named
        counts = max(points, key=lambda pt: sum(pt.counts)).counts
    else:
        name, counts = "", points[0].counts
    shown = tuple((a_h, [replace(inst, name=inst.named(_chunk_rows(rows, j)), focus=-1) for inst in walk],
                   _where(points, point)) for a_h, walk, point, _k, j in walks) if explain else ()
    return Peak(Instant(name, *won), tuple(counts), shown, several)


_NUMBERS = frozenset({int, float})
_ROW_PARTS = attrgetter("chunk", "item.kind", "item.block", "item.option")
_COST = attrgetter("cost")


def _signature(rows: list[Row]) -> tuple:
    """What a stage's walks read of its rows: per row its chunk, kind, block, option and cost (by identity; the
    costs are the row book's), so that stages holding the same rows share their walks."""
    return tuple(map(_ROW_PARTS, rows)), tuple(map(id, map(_COST, rows)))


def _chunk_rows(rows: list[Row], j: int) -> list[Row]:
    return [row for row in rows if row.chunk == j]


def _walk(pricer: StagePricer, rows: list[Row], j: int, signature: tuple, store: dict, acc: int | None) -> tuple:
    """The walk of chunk ``j``'s backward (its largest instant's fields, dynamic sum, index, and the instants),
    kept in ``store`` under the rows' signature and ``acc`` with the stage part it reads. A walk reads of the rows
    only chunk ``j``'s (``_instants``; its instants' ``focus`` indexes them): the chunks of a stage holding the
    same rows (an interleaved stage's middle chunks) share it, kept under those rows' part of the signature."""
    key = ("fsdp-walk", j, signature, acc)
    cached = store.get(key)
    if cached is None:
        parts, ids = signature
        own = tuple((part[1:], at) for part, at in zip(parts, ids, strict=True) if part[0] == j)
        shared_key = ("fsdp-chunk-walk", own, signature, acc)
        cached = store.get(shared_key)
        if cached is None:
            stage_key = ("fsdp-stage", signature, acc)
            stage = store.get(stage_key)
            if stage is None:
                stage = store[stage_key] = _stage(pricer, rows, store.setdefault("fsdp-block-parts", {}))
            walk = _instants(pricer, rows, j, stage)
            cached = store[shared_key] = (*_best_instant(walk), walk)
        store[key] = cached
    return cached


def _one_peak(pricer: StagePricer, rows: list[Row], act_chunk: list[Num], points: list) -> Peak | None:
    """``peak_instant`` of one plan's stage (numbers; no Explain) in one pass over its points: the same sums in the
    same order — Σ_i n_i·A_chunk(i) per point, A_h = its largest minus A_chunk(j) per backward chunk j (ties to
    the earliest point), the chunk with the largest A_h + dynamic (ties to the earliest chunk) — without the
    general path's per-chunk lists. None where a walk holds arrays (the general path then decides)."""
    top, by_chunk, width = points_plan(points)
    if not by_chunk or width != len(act_chunk):  # no point, or counts of another length: the general path says so
        return None
    signature = _signature(rows)
    store, acc = _walk_store(pricer)
    sums = kept_sums(pricer.memo, points, act_chunk)  # every point's Σ_i n_i·A_chunk(i), made at once (one_sum's)
    won_total: Num = None
    for j, members in by_chunk:
        a_j = act_chunk[j]
        a_h: Num = -np.inf  # A_h: the first largest Σ_i n_i·A_chunk(i) − A_chunk(j) of the points (-1: none above −∞)
        point = -1
        for k, counts in members:
            value = (one_sum(counts, act_chunk) if sums is None else sums[k]) - a_j
            if value > a_h:
                a_h, point = value, k
        fields_j, dynamic_j, k_j, walk = _walk(pricer, rows, j, signature, store, acc)
        if type(k_j) is not int:
            return None
        total = a_h + dynamic_j
        if won_total is None or total > won_total:
            won_total = total
            won = (fields_j[0], fields_j[1] + a_h, fields_j[2], fields_j[3])
            inst, at, won_j = walk[k_j], point, j
    if is_array(*won):
        return None
    named = inst.named(_chunk_rows(rows, won_j))
    several = len(points) > 1
    name = msg("explain.instant-after", name=named, where=_where(points, at)) if several else named
    # Peak(Instant(name, *won), …) with their dicts set at once: one each per stage of an estimate
    return at_once(Peak, best=_instant(name, *won), counts=tuple(points[top].counts), walks=(), several=several)


def accumulates(pricer: StagePricer) -> int | None:
    """The key part of ``Par.accumulates`` (whether a step accumulates gradients, the value ``_stage`` reads): all a
    walk reads of the micro-batch count and the accumulation steps; None over arrays of candidates (not kept)."""
    memo = pricer.memo  # kept per pricer (its plan is fixed): a stage's walks and tensors ask three times
    got = memo.get(_ACCUMULATES, memo)
    if got is memo:
        acc = pricer.r.par.accumulates
        got = memo[_ACCUMULATES] = None if isinstance(acc, np.ndarray) else acc  # type: ignore[index]
    return got  # type: ignore[return-value]


_ACCUMULATES = "fsdp-accumulates"  # the pricer's memo key of ``accumulates``


def _walk_store(pricer: StagePricer) -> tuple[dict, int | None]:
    """Where a stage's walks are kept, and the key part they read besides the rows: one plan's walks read of the
    plan what its rows do (the row book's key: ``pricer.shared``) and ``accumulates``, so they are kept with the
    rows for the next estimate (an edit of m, undo); walks over arrays of candidates with the pricer."""
    acc = accumulates(pricer)
    return (pricer.memo, None) if acc is None else (pricer.shared, acc)


def _largest_chunk(totals: list[Num], picked: list[tuple[Num, ...]]) -> tuple[Num, tuple[Num, ...]]:
    """The chunk with the largest total (``argmax_first``) and its fields (``_gather``); arrays of one shape (the
    search) in two stacks."""
    first = totals[0]
    shape = np.shape(first)
    if all(isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == shape
           for x in (*totals, *(x for option in picked for x in option))):
        if len(totals) == 1:  # one backward chunk: it wins everywhere
            return np.zeros(shape, dtype=np.intp), tuple(np.array(x) for x in picked[0])
        at = np.argmax(np.stack(totals), axis=0)
        return at, tuple(_take(np.stack([np.stack(option) for option in picked]), at))
    c = argmax_first(totals)
    return c, _gather(c, picked)


def _where(points: list, point: int) -> str:
    """The replay point an instant follows, as its in-flight counts (one element; "" for arrays)."""
    return str(tuple(points[point].counts)) if point >= 0 else ""


def _gather(index: Num, options: list[tuple[Num, ...]]) -> tuple[Num, ...]:
    """options[index] field by field (``index`` from ``argmax_first``): one gather for all fields on arrays."""
    if not isinstance(index, np.ndarray):
        return options[index]
    stacked = _stacked(options, np.shape(index))
    return tuple(np.take_along_axis(stacked, np.broadcast_to(index, stacked.shape[2:])[None, None, ...], axis=0)[0])


def _stacked(options: list[tuple[Num, ...]], *shapes: tuple[int, ...]) -> np.ndarray:
    """The options' fields as one float64 array [options, fields, *shape], broadcast to their common shape (and
    ``shapes``): each field written into its place, not broadcast and stacked field by field."""
    distinct = {*shapes, *(x.shape for option in options for x in option if isinstance(x, np.ndarray))}
    # one shape (the search's candidates) needs no broadcasting rule; np.broadcast_shapes costs ~10 µs per shape
    shape = next(iter(distinct)) if len(distinct) == 1 else np.broadcast_shapes(*distinct)
    out = np.empty((len(options), len(options[0]), *shape))
    for i, option in enumerate(options):
        for f, x in enumerate(option):
            out[i, f] = x
    return out


def _take(stacked: np.ndarray, at: np.ndarray) -> np.ndarray:
    """stacked[at[e], :, e] for every element e: [options, fields, *shape] → [fields, *shape]."""
    if at.ndim == 1:  # the search's candidates: one fancy index instead of take_along_axis' index grids
        return stacked[at, :, np.arange(at.shape[0])].T
    return np.take_along_axis(stacked, at[None, None, ...], axis=0)[0]


def _best_instant(walk: list[Instant]) -> tuple[tuple[Num, ...], Num, Num]:
    """The four fields of a walk's largest instant (ties to the earliest), its dynamic sum and its index."""
    dynamic = [inst.gradients + inst.activations + inst.comm + inst.working for inst in walk]  # Instant.dynamic
    if _NUMBERS.issuperset(map(type, dynamic)):  # no field is an array (an array's sum is never an int or float)
        k = 0
        for i in range(1, len(dynamic)):
            if dynamic[i] > dynamic[k]:
                k = i
        inst = walk[k]
        return (inst.gradients, inst.activations, inst.comm, inst.working), dynamic[k], k
    options = [(inst.gradients, inst.activations, inst.comm, inst.working) for inst in walk]
    if is_array(*(x for option in options for x in option)):
        # Instant.dynamic's sum, in its order, over all instants at once
        stacked = _stacked(options)
        dynamic_all = stacked[:, 0] + stacked[:, 1] + stacked[:, 2] + stacked[:, 3]
        at = np.argmax(dynamic_all, axis=0)
        return tuple(_take(stacked, at)), _take(dynamic_all[:, None], at)[0], at
    dynamic = [inst.dynamic for inst in walk]
    k = argmax_first(dynamic)
    fields_ = _gather(k, [(inst.gradients, inst.activations, inst.comm, inst.working) for inst in walk])
    return fields_, pick(k, dynamic), k


class _Stage(NamedTuple):
    """What a stage's walks share, whichever chunk's backward they follow (``_stage``)."""

    e_elems: Num
    o_elems: Num
    held: Num
    o_last: Num
    e_last: Num
    acc: Num
    held_all: Num
    res_base: Num
    head_grad: Num
    beside: Num
    per_cost: dict[int, tuple[Any, tuple[Num, ...]]]  # id of a row cost → (it, its block instants' parts), filled
    # lazily and shared by the stages of one store (``_walk``): the parts read the cost and the plan alone


def _stage(pricer: StagePricer, rows: list[Row], per_cost: dict | None = None) -> _Stage:
    """The terms of a stage's instants that do not depend on the chunk walked: its units, gradients held,
    resident weights (docs/model.md#instants)."""
    r = pricer.r
    d, w, f, par = r.dims, r.widths, r.flags, r.par
    bc, brd, os = w.c, w.rd, par.os
    root = f.fsdp_layout == "root"

    e_rows = [row for row in rows if row.item.kind in (EMBEDDING, EMBEDDING_COPY)]
    o_rows = [row for row in rows if row.item.kind == OUTPUT]
    blocks = [row for row in rows if _is_block(row)]
    e_elems: Num = sum(row.local.total for row in e_rows)
    o_elems: Num = sum(row.local.total for row in o_rows)
    if d.tie and e_rows and o_rows and not root:
        # torchtitan layout with tied embeddings: one unit [embedding, final norm, head], priced as O
        o_elems, e_elems = o_elems + e_elems, 0.0
    units = [row.local.total for row in blocks] + ([o_elems] if o_rows else []) + ([e_elems] if e_rows else [])
    # the unit's last parameter (torchtitan and HF order: the head after the final norm; the E unit's embedding)
    # keeps its unsharded gradient through the reduce-scatter when os > 1: foreach_reduce's Shard(i) loop variable
    # still holds the list's last element after ``unsharded_grads.clear()`` (a block's last one is a norm weight)
    held = bc * gt(os, 1)
    o_last: Num = 0.0 if d.tie else _largest_param(o_rows)
    e_last: Num = 0.0 if (d.tie and o_rows and not root) else _largest_param(e_rows)

    # gradients (D51): progressive sharded gradients of the units whose post-backward has run; with
    # accumulation every unit holds them (sync every micro-batch: sharded; deferred: unsharded β_rd·E_u)
    acc = par.accumulates
    held_all = sum(w.g * x / os for x in units) if f.fsdp_sync else sum(brd * x for x in units)
    reshard = f.reshard_after_forward
    res_base: Num = (0.0 if reshard else sum(gather_bytes(row.local, f, bc) for row in blocks)) + \
        (0.0 if (reshard or root) else bc * e_elems) + (bc * (e_elems + o_elems) if root else 0.0)
    head_grad: Num = bc * o_elems if root else 0.0  # H: the root unit posts back only at the end (D52)
    # a reduce-scatter output made beside the sharded gradient: cast to the gradient dtype, or accumulated into it
    beside = maximum(acc, gt(abs(w.g - brd), 0.0))
    return _Stage(e_elems, o_elems, held, o_last, e_last, acc, held_all, res_base, head_grad, beside,
                  {} if per_cost is None else per_cost)


def _instants(pricer: StagePricer, rows: list[Row], j_r: int, stage: _Stage) -> list[Instant]:
    """The instants of one backward of chunk ``j_r`` (docs/model.md#instants), without the other micro-batches'
    activations A_h (``peak_instant`` adds them); block instants are named by ``Instant.named`` with the chunk's
    rows (``focus`` indexes them: the walk reads no other row, ``_walk``)."""
    r = pricer.r
    d, w, f, par = r.dims, r.widths, r.flags, r.par
    bc, brd, T, os = w.c, w.rd, pricer.T, par.os
    root = f.fsdp_layout == "root"
    e_elems, o_elems, held, o_last, e_last, acc, held_all, res_base, head_grad, beside, per_cost = stage

    host_grads = f.feat.offload_params  # CPUOffloadPolicy: reduce-scattered gradients go to host memory

    def grads_after(done_sharded: Num) -> Num:
        """Progressive gradients given Σ β_g·E_u/os of the units already posted back."""
        return 0.0 if host_grads else acc * held_all + (1 - acc) * done_sharded

    def prefetch(next_bytes: Num, gathered: bool) -> Num:
        # FSDP2 copies a 1-way shard straight into the unsharded parameter: no prefetch buffer when os = 1
        return 0.0 if gathered else next_bytes * gt(os, 1)

    def unsharded(row: Row) -> Num:
        """A unit's gathered weights: β_c, FP8 weights at β_8 with a float8 all-gather (static.gather_bytes)."""
        return gather_bytes(row.local, f, bc)

    reshard = f.reshard_after_forward
    rows = _chunk_rows(rows, j_r)  # what the walk reads of the stage's rows
    has_o = any(row.item.kind == OUTPUT for row in rows)
    has_e = any(row.item.kind == EMBEDDING for row in rows)
    chunk_blocks = [k for k, row in enumerate(rows) if _is_block(row)]
    block_elems = [rows[k].local.total for k in chunk_blocks]
    block_bytes = [unsharded(rows[k]) for k in chunk_blocks]
    before_of: list[Num] = []  # stored activations of the chunk's rows before each row
    running: Num = 0.0
    for row in rows:
        before_of.append(running)
        running = running + row.act

    out: list[Instant] = []
    if has_o:
        o_gathered = 0.0 if root else bc * o_elems
        loss = pricer.loss_working()
        out.append(_instant(LOSS, grads_after(0.0), running, res_base + o_gathered, loss))
        if not root:
            pf = prefetch(block_bytes[-1], not reshard) if chunk_blocks else 0.0
            act = sum(row.act for row in rows if row.item.kind != OUTPUT)
            out.append(_instant(O_UNIT, grads_after(0.0), act,
                               res_base + brd * o_elems + pf, bc * o_elems + T * bc * d.h / par.sp_div))
            out.append(_instant(O_UNIT_OUTPUT, grads_after(w.g * o_elems / os), act,
                               res_base + brd * o_elems * (1 + beside / os) + pf,
                               held * o_last + T * bc * d.h / par.sp_div))
    done: Num = w.g * o_elems / os if (has_o and not root) else 0.0
    released: Num = 0.0  # resident blocks already posted back (not resharding: they leave Res)
    # Inside a run of identical blocks every instant term is affine in the position (prefix activations,
    # progressive gradients, released units grow by the same amount per block), so its maximum sits at the
    # run's ends; instants are built only within one block of a run boundary.
    costs = [id(rows[k].cost) for k in chunk_blocks]
    n_blocks = len(chunk_blocks)
    edge = {pos for pos in range(n_blocks) if pos <= 1 or pos >= n_blocks - 2 or costs[pos - 1] != costs[pos]
            or costs[pos + 1] != costs[pos] or costs[pos - 2] != costs[pos - 1] or costs[pos + 2] != costs[pos + 1]}
    for pos in range(n_blocks - 1, -1, -1):
        k = chunk_blocks[pos]
        row = rows[k]
        e_l = block_elems[pos]
        before = before_of[k]
        # the next unit in backward order: block ℓ−1, or the E unit after block 0
        if pos > 0:
            pf = prefetch(block_bytes[pos - 1], not reshard)
        elif has_e and not root:
            pf = prefetch(bc * e_elems, not reshard)
        else:
            pf = 0.0
        rs = brd * block_elems[pos + 1] if pos + 1 < len(chunk_blocks) else 0.0
        gather = block_bytes[pos] if reshard else 0.0  # a resident block is already counted in Res
        res = res_base - released
        grads = grads_after(done)
        cost = row.cost
        cached = per_cost.get(id(cost))
        if cached is None or cached[0] is not cost:
            # (a) live = A(ℓ, none) − fc2 inputs; (b) live = the attention inputs. The part A(ℓ, option) stores
            # counts as activations, the recomputed rest as working overhead.
            live_a = _live(pricer, row, FC2_INPUTS, exclude=True)
            live_b = _live(pricer, row, ATTN_INPUTS, exclude=False)
            stored_a, stored_b = minimum(row.act, live_a), minimum(row.act, live_b)
            cached = per_cost[id(cost)] = (cost, (
                stored_a, _ffn_working(pricer, row) + (live_a - stored_a), stored_b,
                bc * e_l + T * bc * (d.h / par.sp_div + 2 * d.h + d.q_w / par.t) + (live_b - stored_b),
                bc * e_l + T * bc * d.h / par.sp_div))
        stored_a, work_a, stored_b, work_b, work_c = cached[1]
        if pos not in edge:
            done = done + w.g * e_l / os
            if not reshard:
                released = released + block_bytes[pos]
            continue
        comm_ab = res + gather + pf + rs  # each stage names its own layer in the instants (Instant.named)
        out.append(_instant(BLOCK_A, grads, before + stored_a, comm_ab, head_grad + work_a, k))
        out.append(_instant(BLOCK_B, grads, before + stored_b, comm_ab, head_grad + work_b, k))
        res_c = res - (0.0 if reshard else block_bytes[pos])
        out.append(_instant(BLOCK_C, grads, before, res_c + brd * e_l + pf,
                           head_grad + work_c, k))
        out.append(_instant(BLOCK_C_OUTPUT, grads_after(done + w.g * e_l / os), before,
                           res_c + brd * e_l + pf + brd * e_l / os * beside, head_grad + work_c - bc * e_l, k))
        done = done + w.g * e_l / os
        if not reshard:
            released = released + block_bytes[pos]
    if has_e:
        grads = grads_after(done)
        block0 = brd * rows[chunk_blocks[0]].local.total if chunk_blocks else 0.0
        unit = (e_elems + o_elems) if root else e_elems
        emb_grad: Num = bc * e_elems
        incoming: Num = T * bc * d.h
        if f.dtensor_sp and not f.vocab_emb_dp:
            # TP + SP: the vocab-sharded DTensor embedding makes its gradient at full vocabulary
            # (docs/model.md#instants)
            emb_grad = where(par.sp, bc * pricer.vpad * d.h, emb_grad)
            incoming = where(par.sp, maximum(incoming, bc * e_elems), incoming)
        out.append(_instant(E1, grads, 0.0, bc * unit + block0,
                           head_grad + emb_grad + incoming))
        # FSDP2's post-backward (_fsdp_collectives.foreach_reduce): the copy-in holds the unit's unsharded gradients
        # and its reduce-scatter input at once; only then are the gradients freed and the reduce-scatter output (the
        # unit's sharded gradient, reduce dtype; cast to the parameter dtype beside it when they differ; added into
        # the held one when accumulating) made while the input still lives — with os = 1 that can be the larger
        copy_in, output = E2_ROOT if root else E2_UNIT
        out.append(_instant(copy_in, grads, 0.0, brd * unit, bc * unit))
        out.append(_instant(output, grads_after(done + w.g * unit / os), 0.0,
                           brd * unit + brd * unit / os * beside, held * (o_last if root else e_last)))
    if not out:  # a stage with no blocks, E or O (e.g. only noop layers)
        out.append(_instant(IDLE, grads_after(0.0), 0.0, res_base, 0.0))
    return out


def _largest_param(rows: list[Row]) -> Num:
    """The largest local parameter of the rows (0 for none)."""
    out: Num = 0.0
    for row in rows:
        out = maximum(out, row.local.largest)
    return out


def _live(pricer: StagePricer, row: Row, ids: frozenset[str], exclude: bool) -> Num:
    sums = pricer.acts.subset(pricer.act_key(row.item), ids, exclude)
    return pricer.combine(sums, row.item)


def _ffn_working(pricer: StagePricer, row: Row) -> Num:
    """(a): block-output, fc2-input and branch gradients plus the down-projection's unsharded weight
    gradient. MoE: routed tokens through the local experts and their stacked down-projection gradient."""
    d, w, par = pricer.r.dims, pricer.r.widths, pricer.r.par
    bc, T = w.c, pricer.T
    block = row.item.block if row.item.kind == MTP else row.item.kind
    out = T * bc * d.h / par.sp_div
    if block.endswith("moe"):
        routed = pricer.R * bc * (d.g + 1) * d.hff_exp / par.etp
        shared = T * bc * (d.g + 1) * d.hff_sh / par.t
        weight = bc * maximum(d.h * d.hff_sh / par.t, (d.n_exp / par.ep) * d.h * d.hff_exp / par.etp)
        return out + routed + shared + weight
    return out + T * bc * (d.g + 1) * d.hff / par.t + bc * d.h * d.hff / par.t
