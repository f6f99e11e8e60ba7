"""A stage's replay points over a search group's candidates, split by micro-batch count (docs/model.md#search).

The search prices a group's candidates at once; candidates with different micro-batch counts replay different
schedules, so each point carries the validity mask of its count. ``MaskedPoints`` is that list of points with,
per mask, the matrices the peak-point and FSDP2 code evaluate it with — the in-flight counts [P, vp], the
backward chunk of each point, which points each chunk's backward follows — built once per schedule profile
and shared by every group and stage replaying it, instead of regrouping the points on every stage."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, overload

import numpy as np

from .schedules import StageProfile


class ProfileArrays(NamedTuple):
    """One stage's replay points (one micro-batch count) as arrays, in the profile's point order."""

    counts: np.ndarray    # [P, vp] float64: micro-batches in flight per chunk at each point
    chunk: np.ndarray     # [P] int64: the chunk whose backward follows each point
    largest: float        # the largest count of chunk 0 (one chunk: the peak point's count)
    by_chunk: np.ndarray  # [P] the points ordered by backward chunk (stable: point order within a chunk)
    starts: np.ndarray    # where each chunk's run begins in ``by_chunk`` (``np.maximum.reduceat``'s indices)
    present: np.ndarray   # the backward chunk of each run


class MaskBlock(NamedTuple):
    """The points of one micro-batch count: their candidates (flat indices; a slice when contiguous, as the
    search orders a group's candidates by micro-batch count), the stage's profile and its arrays."""

    valid: np.ndarray
    index: slice | np.ndarray
    profile: StageProfile
    arrays: ProfileArrays


class MaskedPoints(Sequence):
    """A stage's points for ``size`` candidates, one ``blocks`` entry per mask (the masks disjoint: one
    micro-batch count each). As a sequence it reads like the list of points, each made with ``point(counts,
    backward_chunk, valid)`` (``assembly.Point``) when asked for: the search's code reads the arrays and at most
    the first point, so the points are not built for every stage of every group."""

    def __init__(self, blocks: tuple[MaskBlock, ...], size: tuple[int, ...], point: Callable[..., Any]) -> None:
        self.blocks, self.size, self._point = blocks, size, point
        self._len = sum(len(block.profile.points) for block in blocks)

    @property
    def backward_chunks(self) -> list[int]:
        """The chunks whose backward follows some point, ascending."""
        return sorted({int(j) for block in self.blocks for j in block.arrays.present})

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, k: int) -> Any: ...

    @overload
    def __getitem__(self, k: slice) -> list[Any]: ...

    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self._len))]
        if k < 0:
            k += self._len
        if not 0 <= k < self._len:
            raise IndexError(k)
        for block in self.blocks:
            points = block.profile.points
            if k < len(points):
                return self._point(points[k].counts, points[k].backward_chunk, block.valid)
            k -= len(points)
        raise IndexError(k)


# kept per profile object (``schedules.inflight_profile`` returns the same objects for the same schedule); the
# profile is held beside its arrays so that its id cannot be reused while the entry lives
_ARRAYS: dict[int, tuple[StageProfile, ProfileArrays]] = {}
_ARRAYS_MAX = 4096


def profile_arrays(prof: StageProfile) -> ProfileArrays:
    """The arrays of one stage profile (kept: they depend on the profile's points alone)."""
    got = _ARRAYS.get(id(prof))
    if got is not None and got[0] is prof:
        return got[1]
    counts = np.array([pt.counts for pt in prof.points], dtype=np.float64)
    chunk = np.array([pt.backward_chunk for pt in prof.points], dtype=np.int64)
    by_chunk = np.argsort(chunk, kind="stable")
    ordered = chunk[by_chunk]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    arrays = ProfileArrays(counts, chunk, float(max(pt.counts[0] for pt in prof.points)), by_chunk, starts,
                           ordered[starts])
    if len(_ARRAYS) >= _ARRAYS_MAX:
        _ARRAYS.clear()
    _ARRAYS[id(prof)] = (prof, arrays)
    return arrays


def mask_blocks(masks: dict[Any, np.ndarray]) -> dict[Any, slice | np.ndarray]:
    """Per mask, its candidates' flat indices: a slice when they are contiguous."""
    out: dict[Any, slice | np.ndarray] = {}
    for key, valid in masks.items():
        flat = np.flatnonzero(valid.reshape(-1))
        contiguous = len(flat) > 0 and int(flat[-1]) - int(flat[0]) + 1 == len(flat)
        out[key] = slice(int(flat[0]), int(flat[-1]) + 1) if contiguous else flat
    return out


def stacked_rows(values: Sequence[Any], size: tuple[int, ...], memo: dict) -> np.ndarray:
    """The values (numbers or arrays over the candidates) as one float64 array [len(values), Π size], kept in
    ``memo`` (a pricer's) per list of value objects: the stages holding the same rows share their chunk sums, so
    they stack the same values. The entry holds the values, so their ids stay theirs while it lives."""
    key = ("stacked-rows", size, *map(id, values))
    got = memo.get(key)
    if got is not None and all(a is b for a, b in zip(got[0], values, strict=True)):
        return got[1]
    out = np.stack([np.broadcast_to(np.asarray(v, dtype=np.float64), size) for v in values]).reshape(len(values), -1)
    memo[key] = (tuple(values), out)
    return out
