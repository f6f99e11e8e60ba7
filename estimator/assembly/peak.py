"""The peak replay point of a stage (D49, docs/model.md#stage-memory): per element, the first point maximising
Σ_j n_j·A_chunk(j) + W(backward chunk) — one plan's few points in Python, the search's and the balancer's arrays as
one matrix product per block of elements sharing their points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..arr import Num, index_size, is_array, mask_index, valid_shapes
from ..masked_points import MaskedPoints, stacked_rows


def peak_point(points: Sequence[Any], act: Sequence[Num], work: Sequence[Num],
               memo: dict | None = None) -> tuple[tuple[Num, ...], Num, int]:
    """D49: per element, the first point maximising Σ_j n_j·A_chunk(j) + W(backward chunk): (in-flight counts
    per chunk, W of that point, and — one element — the point's index). For arrays the values of a set of points
    are one matrix product, values[P, C] = N[P, vp] @ A[vp, C] + W[b_P, C]; a point's ``valid`` (the search: a
    mask per micro-batch count) selects the elements it belongs to, and points sharing a mask are evaluated on
    those elements only (``memo``, the pricer's, keeps each mask's element indices across stages)."""
    if isinstance(points, MaskedPoints):
        return _masked_peak_point(points, act, work, {} if memo is None else memo)
    if not is_array(*act, *work, *(pt.valid for pt in points)):
        return _first_best(points, act, work)
    groups: dict[int, list[Any]] = {}
    for pt in points:
        groups.setdefault(id(pt.valid), []).append(pt)
    size = np.broadcast_shapes(*[np.shape(x) for x in (*act, *work)], *valid_shapes(points))
    vp = len(act)
    acts = np.stack([np.broadcast_to(np.asarray(a, dtype=np.float64), size) for a in act]).reshape(vp, -1)
    works = np.stack([np.broadcast_to(np.asarray(w, dtype=np.float64), size) for w in work]).reshape(vp, -1)
    memo = {} if memo is None else memo
    return _best_per_block(_point_blocks(groups.values(), size, vp, memo), acts, works, size)


def _point_blocks(groups: Any, size: tuple[int, ...], vp: int, memo: dict) -> Any:
    """Per group of points sharing a mask: (its elements, counts [P, vp], backward chunks [P], largest count)."""
    for pts in groups:
        idx = mask_index(pts[0].valid, size, memo)
        if not index_size(idx):
            continue
        if vp == 1:
            yield idx, None, None, max(pt.counts[0] for pt in pts)
        else:
            yield (idx, np.array([pt.counts for pt in pts], dtype=np.float64),
                   np.array([pt.backward_chunk for pt in pts], dtype=np.int64), None)


def _masked_peak_point(points: MaskedPoints, act: Sequence[Num], work: Sequence[Num],
                       memo: dict) -> tuple[tuple[Num, ...], Num, int]:
    """``peak_point`` over a search group's points, with the masks' arrays built once per schedule profile
    (``masked_points``) instead of regrouping the points here."""
    size = points.size
    blocks = ((b.index, b.arrays.counts, b.arrays.chunk, b.arrays.largest) for b in points.blocks)
    return _best_per_block(blocks, stacked_rows(act, size, memo), stacked_rows(work, size, memo), size)


def _best_per_block(blocks: Any, acts: np.ndarray, works: np.ndarray,
                    size: tuple[int, ...]) -> tuple[tuple[Num, ...], Num, int]:
    """D49 per block of elements sharing their points: values[P, C] = N[P, vp] @ A[vp, C] + W[b_P, C], the first
    largest point per element; one chunk needs no product (n·A + W with A ≥ 0 and one W peaks at the largest n;
    A = 0: every point alike)."""
    vp, n = acts.shape
    out_counts = np.zeros((vp, n))
    out_work = np.zeros(n)
    for idx, counts, chunk, largest in blocks:
        if vp == 1:
            out_counts[0, idx] = largest
            out_work[idx] = works[0, idx]
            continue
        sub = works[:, idx]
        best = np.argmax(counts @ acts[:, idx] + sub[chunk], axis=0)
        out_counts[:, idx] = counts[best].T
        out_work[idx] = sub[chunk[best], np.arange(sub.shape[1])]
    return tuple(out_counts[j].reshape(size) for j in range(vp)), out_work.reshape(size), -1


def _first_best(points: Sequence[Any], act: Sequence[Num], work: Sequence[Num]) -> tuple[tuple[Num, ...], Num, int]:
    """One element: the first point with the largest value, and its index."""
    best_value: Num = None
    best_k = -1
    for k, pt in enumerate(points):
        value: Num = 0
        for n, a in zip(pt.counts, act, strict=True):
            value = value + n * a
        value = value + work[pt.backward_chunk]
        if best_value is None or value > best_value:
            best_value, best_k = value, k
    chosen = points[best_k]
    return tuple(chosen.counts), work[chosen.backward_chunk], best_k


__all__ = ["peak_point"]
