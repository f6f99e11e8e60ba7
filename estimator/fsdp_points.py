"""FSDP2's other micro-batches' activations over a stage's replay points (docs/model.md#instants, P-FSDP-POINTS): per
replay point Σ_i n_i·A_chunk(i), per backward chunk the largest of its points (A_h), for one plan's points, the
search's arrays and masked points; what ``fsdp._one_peak`` reads of a points list (``points_plan``), and the sums
of every point of one plan's stages made at once (``point_sums``)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from operator import add, is_, mul
from typing import Any

import numpy as np

from .arr import Num, index_size, is_array, mask_index, valid_shapes
from .masked_points import MaskedPoints, stacked_rows

KEPT_PLANS = 256
_PLANS: dict[int, tuple[list, tuple]] = {}  # id of a points list → (the list, its plan): one plan's lists are kept
# per in-flight profile (``estimate._points``) and never changed, and every stage and estimate of a profile reads one


def points_plan(points: list) -> tuple[int, tuple[tuple[int, tuple[tuple[int, tuple], ...]], ...], int]:
    """What ``_one_peak`` reads of the points alone, kept per list: the first point with the most micro-batches in
    flight (its counts are the stage's), per backward chunk in ascending order its points (index, counts) in
    order, and the counts' length (-1 where they differ)."""
    got = _PLANS.get(id(points))
    if got is not None and got[0] is points:
        return got[1]  # type: ignore[return-value]
    top, top_sum = -1, 0
    grouped: dict[int, list] = {}
    for k, pt in enumerate(points):
        grouped.setdefault(pt.backward_chunk, []).append((k, pt.counts))
        total = sum(pt.counts)
        if top < 0 or total > top_sum:
            top, top_sum = k, total
    widths = {len(pt.counts) for pt in points}
    plan = (top, tuple((j, tuple(grouped[j])) for j in sorted(grouped)), widths.pop() if len(widths) == 1 else -1)
    if len(_PLANS) >= KEPT_PLANS:
        _PLANS.clear()  # one dict operation each, so threads sharing it see a whole entry or none
    _PLANS[id(points)] = (points, plan)
    return plan


def other_activations(points: list, act_chunk: list[Num], chunks: list[int],
                      memo: dict | None = None) -> dict[int, tuple[Num, int]]:
    """Per backward chunk j: A_h = max over the points followed by j's backward of Σ_i n_i·A_chunk(i) −
    A_chunk(j) (−∞ for elements with no such point), and the winning point (one element). Points of one
    micro-batch count share a validity mask (the masks split the candidates): each mask's points are evaluated
    on its candidates only; ``memo`` (the pricer's) keeps each mask's candidate indices across stages."""
    if isinstance(points, MaskedPoints):
        return masked_other_activations(points, act_chunk, chunks, {} if memo is None else memo)
    groups: dict[int, list[tuple[int, Any]]] = {}
    for k, pt in enumerate(points):
        groups.setdefault(id(pt.valid), []).append((k, pt))
    if not is_array(*act_chunk, *(pt.valid for pt in points)):
        held = [_held(pt, act_chunk) for pt in points]
        return {j: _largest(points, held, act_chunk, j) for j in chunks}
    size = np.broadcast_shapes(*[np.shape(a) for a in act_chunk], *valid_shapes(points))
    acts = np.stack([np.broadcast_to(np.asarray(a, dtype=np.float64), size) for a in act_chunk]).reshape(
        len(act_chunk), -1)
    n = acts.shape[1]
    out = {j: np.full(n, -np.inf) for j in chunks}
    memo = {} if memo is None else memo
    for pts in groups.values():
        idx = mask_index(pts[0][1].valid, size, memo)
        if not index_size(idx):
            continue
        sub = acts[:, idx]
        values = np.array([pt.counts for _, pt in pts], dtype=np.float64) @ sub  # [P_mask, C_mask]: one product
        by_chunk: dict[int, list[int]] = {}
        for k, (_, pt) in enumerate(pts):
            by_chunk.setdefault(pt.backward_chunk, []).append(k)
        for j, ks in by_chunk.items():
            best = (values[ks[0]] if len(ks) == 1 else values[ks].max(axis=0)) - sub[j]
            out[j][idx] = np.maximum(out[j][idx], best)
    return {j: (v.reshape(size), -1) for j, v in out.items()}


def masked_other_activations(points: MaskedPoints, act_chunk: list[Num], chunks: list[int],
                             memo: dict) -> dict[int, tuple[Num, int]]:
    """``other_activations`` over a search group's points: the same product per mask, then the largest value
    of each backward chunk's points in one ``maximum.reduceat`` over the points ordered by chunk (the masks'
    arrays are built once per schedule profile). The masks are disjoint, so each candidate's A_h is written
    once."""
    size = points.size
    acts = stacked_rows(act_chunk, size, memo)
    out = np.full(acts.shape, -np.inf)
    for block in points.blocks:
        idx, arrays = block.index, block.arrays
        sub = acts[:, idx]
        values = arrays.counts @ sub  # [P_mask, C_mask]: one product
        best = np.maximum.reduceat(values[arrays.by_chunk], arrays.starts, axis=0) - sub[arrays.present]
        if isinstance(idx, slice):
            out[arrays.present, idx] = best
        else:
            out[np.ix_(arrays.present, idx)] = best
    return {j: (out[j].reshape(size), -1) for j in chunks}


def _held(point: Any, act_chunk: list[Num]) -> Num:
    """One element: Σ_i n_i·A_chunk(i) at a replay point."""
    value: Num = 0
    for n, a in zip(point.counts, act_chunk, strict=True):
        value = value + n * a
    return value


def _largest(points: list, held: list[Num], act_chunk: list[Num], chunk: int) -> tuple[Num, int]:
    """One element: max over the points followed by ``chunk``'s backward of Σ_i n_i·A_chunk(i) − A_chunk(chunk)
    (``held``: the sums per point), ties to the earliest, and that point's index."""
    best: Num = -np.inf
    at = -1
    for k, pt in enumerate(points):
        if pt.backward_chunk != chunk:
            continue
        value = held[k] - act_chunk[chunk]
        if value > best:
            best, at = value, k
    return best, at


POINT_SUMS = "fsdp-point-sums"  # the pricer's memo key (with a points list's id) of ``point_sums``' sums
AT_ONCE_POINTS = 24  # fewer points (a plan's stages together) are summed sooner one by one: the array's fixed cost
_FLOATS = frozenset({float})
_INTS = frozenset({int})
_STACKS: dict[tuple[int, ...], tuple[tuple[list, ...], Any]] = {}  # ids of one plan's points lists → (them, stack)


def point_sums(memo: dict, points: Sequence[list], acts: Sequence[list[Num]]) -> None:
    """Σ_i n_i·A_chunk(i) of every replay point of one plan's stages (``points``, their A_chunk ``acts``), made at
    once over all of them and left in the pricer's ``memo`` per points list for ``kept_sums`` (``fsdp._one_peak``
    reads one stage's). Each element is the one-point sum's operations in its order — 0 + n_0·a_0 + n_1·a_1 + … —
    on float64, as Python's floats (counts are integers, made floats exactly; A_chunk Python floats): one array
    operation per chunk instead of one sum per point (a stage has ~17 points under interleaved 1F1B). Nothing is
    left where the points are few, not one plan's, or of other widths."""
    if sum(map(len, points)) < AT_ONCE_POINTS:
        return
    stack = _stack(points)
    if stack is None:
        return
    columns, lengths, starts = stack
    width = len(columns)
    for a in acts:
        if len(a) != width or not _FLOATS.issuperset(map(type, a)):
            return
    per_point = np.repeat(np.array(acts, dtype=np.float64), lengths, axis=0)  # each stage's A_chunk, per point
    sums = np.zeros(per_point.shape[0])
    for i in range(width):
        sums = sums + columns[i] * per_point[:, i]
    values = sums.tolist()
    for k, pts in enumerate(points):
        memo[(POINT_SUMS, id(pts))] = (pts, acts[k], values[starts[k]:starts[k + 1]])


def kept_sums(memo: dict, points: list, act_chunk: list[Num]) -> list[float] | None:
    """``point_sums``' sums of ``points`` where they were made with these A_chunk (the same float objects: a stage's
    kept chunk sums; another stage sharing the points list may have replaced them), else None."""
    got = memo.get((POINT_SUMS, id(points)))
    if got is None or got[0] is not points or len(got[1]) != len(act_chunk) or not all(map(is_, got[1], act_chunk)):
        return None
    return got[2]  # type: ignore[no-any-return]


def one_sum(counts: Sequence[int], act_chunk: list[Num]) -> Num:
    """One point's Σ_i n_i·A_chunk(i): 0 + n_0·a_0 + n_1·a_1 + …, in order (``point_sums``' reference)."""
    return reduce(add, map(mul, counts, act_chunk), 0)


def _stack(points: Sequence[list]) -> tuple[list[np.ndarray], list[int], list[int]] | None:
    """One plan's points lists' counts as one column per chunk (float64, the lists' points in order), each list's
    length and start; kept per lists (they are kept per in-flight profile and never changed); None where a count
    is not an integer below 2**53 or the widths differ."""
    key = tuple(map(id, points))
    got = _STACKS.get(key)
    if got is not None and all(map(is_, got[0], points)):
        return got[1]  # type: ignore[no-any-return]
    stack = None
    rows = [pt.counts for pts in points for pt in pts] if all(type(pts) is list for pts in points) else []
    if rows and len({len(c) for c in rows}) == 1 and \
            all(_INTS.issuperset(map(type, c)) and all(abs(n) < 2**53 for n in c) for c in rows):
        table = np.array(rows, dtype=np.float64)
        lengths = [len(pts) for pts in points]
        starts = [0]
        for n in lengths:
            starts.append(starts[-1] + n)
        stack = ([np.ascontiguousarray(table[:, i]) for i in range(table.shape[1])], lengths, starts)
    if len(_STACKS) >= KEPT_PLANS:
        _STACKS.clear()  # one dict operation each, so threads sharing it see a whole entry or none
    _STACKS[key] = (tuple(points), stack)
    return stack
