"""Array-agnostic helpers: every formula accepts Python numbers or numpy arrays alike (spec §8.8), so the
search evaluates the very same code vectorised. Scalars stay Python numbers (fast, exact in float64)."""

from __future__ import annotations

from typing import Any

import numpy as np

Num = Any  # int | float | np.ndarray


def is_array(*values: Num) -> bool:
    return any(isinstance(v, np.ndarray) for v in values)


def where(cond: Num, a: Num, b: Num) -> Num:
    if is_array(cond, a, b):
        return np.where(cond, a, b)
    return a if cond else b


def maximum(a: Num, b: Num) -> Num:
    if is_array(a, b):
        return np.maximum(a, b)
    return a if a >= b else b


def minimum(a: Num, b: Num) -> Num:
    if is_array(a, b):
        return np.minimum(a, b)
    return a if a <= b else b


def ceil_div(a: Num, b: Num) -> Num:
    return -(-a // b)


def gt(a: Num, b: Num) -> Num:
    """1/0 indicator (numbers, so it multiplies)."""
    if is_array(a, b):
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
