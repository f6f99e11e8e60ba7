"""Array-agnostic helpers: every formula accepts Python numbers or numpy arrays alike (docs/model.md#stage-assembly), so
the search evaluates the very same code vectorised. Scalars stay Python numbers (fast, exact in float64)."""

from __future__ import annotations

from typing import Any

import numpy as np

Num = Any  # int | float | np.ndarray


def is_array(*values: Num) -> bool:
    for v in values:  # noqa: SIM110 — a plain loop: any() over a generator costs a scalar estimate ~10 %
        if isinstance(v, np.ndarray):
            return True
    return False


# the helpers below test for arrays inline (not through ``is_array``): a scalar estimate calls them ~500 times
def where(cond: Num, a: Num, b: Num) -> Num:
    if isinstance(cond, np.ndarray) or isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.where(cond, a, b)
    return a if cond else b


def maximum(a: Num, b: Num) -> Num:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.maximum(a, b)
    return a if a >= b else b


def minimum(a: Num, b: Num) -> Num:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.minimum(a, b)
    return a if a <= b else b


def ceil_div(a: Num, b: Num) -> Num:
    return -(-a // b)


def gt(a: Num, b: Num) -> Num:
    """1/0 indicator (numbers, so it multiplies)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (np.asarray(a) > b).astype(np.float64)
    return 1 if a > b else 0


def land(a: Num, b: Num) -> Num:
    if is_array(a, b):
        return np.logical_and(a, b)
    return bool(a) and bool(b)


def lor(a: Num, b: Num) -> Num:
    if is_array(a, b):
        return np.logical_or(a, b)
    return bool(a) or bool(b)


def lnot(a: Num) -> Num:
    if is_array(a):
        return np.logical_not(a)
    return not a


def argmax_first(values: list[Num]) -> Num:
    """Index of the largest value, ties to the earliest; an int for numbers, an int array for arrays."""
    if is_array(*values):
        stacked = np.stack(np.broadcast_arrays(*[np.asarray(v, dtype=np.float64) for v in values]))
        return np.argmax(stacked, axis=0)
    best = 0
    for k in range(1, len(values)):
        if values[k] > values[best]:
            best = k
    return best


def valid_or_minus_inf(valid: Num, value: Num) -> Num:
    """``value`` where ``valid``, −inf elsewhere (points that do not exist for a candidate never win)."""
    if valid is True:
        return value
    return np.where(valid, value, -np.inf)


def pick(index: Num, options: list[Num]) -> Num:
    """options[index] element-wise (``index`` from ``argmax_first``)."""
    if isinstance(index, np.ndarray):
        arrays = np.broadcast_arrays(index, *[np.asarray(o, dtype=np.float64) for o in options])
        stacked = np.stack(arrays[1:])  # np.choose allows at most 64 options; FSDP2 has more instants
        return np.take_along_axis(stacked, arrays[0][None, ...], axis=0)[0]
    return options[index]


def max_all(values: list[Num], default: Num = 0.0) -> Num:
    """Element-wise maximum over a list (numbers or arrays)."""
    if not values:
        return default
    out = values[0]
    for v in values[1:]:
        out = maximum(out, v)
    return out


def mask_index(valid: object, size: tuple[int, ...], memo: dict) -> slice | np.ndarray:
    """The flat candidate indices where ``valid`` holds (True: all), kept in ``memo`` per mask object: a slice
    when they are contiguous (the search orders each group's candidates by micro-batch count, so they are), which
    indexes without copying."""
    key = ("mask-index", id(valid), size)
    cached = memo.get(key)
    if cached is not None and cached[0] is valid:
        return cached[1]
    n = int(np.prod(size))
    if valid is True:
        index: slice | np.ndarray = slice(0, n)
    else:
        flat = np.flatnonzero(np.broadcast_to(valid, size).reshape(-1))
        contiguous = len(flat) > 0 and int(flat[-1]) - int(flat[0]) + 1 == len(flat)
        index = slice(int(flat[0]), int(flat[-1]) + 1) if contiguous else flat
    memo[key] = (valid, index)
    return index


def valid_shapes(points: Any) -> list[tuple[int, ...]]:
    """The shapes of the points' validity masks, one per mask object (the points of one micro-batch count share
    theirs): what the elements' shape is broadcast from."""
    return [np.shape(valid) for valid in {id(pt.valid): pt.valid for pt in points}.values()]


def index_size(index: slice | np.ndarray) -> int:
    return index.stop - index.start if isinstance(index, slice) else len(index)
