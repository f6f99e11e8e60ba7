"""The exact optimiser of the pipeline balancer (docs/model.md#balancing, DECISION D28), independent of the cost model.

A stage i that starts at layer position a and holds c positions can be run with several recompute choices,
each with a time and a memory; t*_i(a, c) is the fastest choice that fits the budget. The objective is
Σ_i t_i + κ·max_i t_i (κ = m − 1 for 1F1B). Because both terms grow with every t_i, a layout's best choices
are the per-stage fastest ones; the layout is found by threshold enumeration: for each distinct finite value τ
of t*, in ascending order, Q(τ) = min Σ t*_i over layouts whose stages all have t*_i ≤ τ (a dynamic program
over (stage, positions consumed)); objective(τ) = Q(τ) + κ·τ; stop once κ·τ + Q(∞) ≥ the best so far.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Choice:
    """One way to run a stage: its time, its memory and what it means (opaque to the solver)."""

    time: float
    memory: float
    assignment: Any = None


# (stage, start position, count) -> the choices for that slot
Table = Callable[[int, int, int], Sequence[Choice]]


@dataclass(frozen=True)
class Solution:
    counts: tuple[int, ...]
    choices: tuple[Choice, ...]
    objective: float

    @property
    def times(self) -> tuple[float, ...]:
        return tuple(c.time for c in self.choices)


def _windows(p: int, total: int, c_min: int, c_max: int) -> list[tuple[int, int]]:
    """Reachable start positions per stage: (lowest, highest)."""
    out = []
    for i in range(p):
        lo = max(i * c_min, total - (p - i) * c_max)
        hi = min(i * c_max, total - (p - i) * c_min)
        out.append((lo, hi))
    return out


def best_table(p: int, total: int, c_min: int, c_max: int, table: Table,
               budget: float | Sequence[float]) -> tuple[np.ndarray, dict[tuple[int, int, int], Choice]]:
    """t*[i, a, c] (inf where nothing fits) and the argmin choice per (i, a, c)."""
    budgets = [budget] * p if isinstance(budget, (int, float)) else list(budget)
    tstar = np.full((p, total + 1, c_max + 1), np.inf)
    argbest: dict[tuple[int, int, int], Choice] = {}
    for i, (lo, hi) in enumerate(_windows(p, total, c_min, c_max)):
        for a in range(lo, hi + 1):
            for c in range(c_min, c_max + 1):
                if a + c > total:
                    break
                best: Choice | None = None
                for choice in table(i, a, c):
                    if choice.memory <= budgets[i] and (best is None or choice.time < best.time):
                        best = choice
                if best is not None:
                    tstar[i, a, c] = best.time
                    argbest[(i, a, c)] = best
    return tstar, argbest


def _min_sum(tstar: np.ndarray, tau: float, total: int) -> tuple[float, list[int] | None]:
    """Q(τ): min Σ t*_i with every t*_i ≤ τ, by DP over (stage, positions consumed); and the counts."""
    p, _, width = tstar.shape
    allowed = np.where(tstar <= tau, tstar, np.inf)
    cost = np.full(total + 1, np.inf)
    cost[0] = 0.0
    back = np.zeros((p, total + 1), dtype=np.int64)
    for i in range(p):
        new = np.full(total + 1, np.inf)
        for c in range(1, width):
            # new[a + c] = min(new[a + c], cost[a] + allowed[i, a, c])
            cand = cost[: total + 1 - c] + allowed[i, : total + 1 - c, c]
            target = new[c:]
            better = cand < target
            target[better] = cand[better]
            back[i, c:][better] = c
        cost = new
    if not math.isfinite(cost[total]):
        return math.inf, None
    counts = []
    pos = total
    for i in range(p - 1, -1, -1):
        c = int(back[i, pos])
        counts.append(c)
        pos -= c
    return float(cost[total]), counts[::-1]


def solve(p: int, total: int, c_min: int, c_max: int, table: Table, kappa: float,
          budget: float | Sequence[float],
          objective: Callable[[list[Choice]], float] | None = None) -> Solution | None:
    """The layout and per-stage choices minimising Σ t_i + κ·max t_i with every stage within budget (exact over
    counts in [c_min, c_max]); None when no layout fits.

    ``objective`` replaces the Σ form for schedules whose time is κ·max t plus a term of the slowest stage (the
    V schedules): each threshold's min-Σ layout is then scored by it, κ·τ bounds it from below, and the result
    is the best such layout (not proven optimal: another layout under the same τ could score better)."""
    tstar, argbest = best_table(p, total, c_min, c_max, table, budget)
    finite = np.unique(tstar[np.isfinite(tstar)])
    if not len(finite):
        return None
    q_inf, _ = _min_sum(tstar, math.inf, total)
    if not math.isfinite(q_inf):
        return None
    floor = 0.0 if objective is not None else q_inf
    best_obj, best_counts = math.inf, None
    for tau in finite:  # ascending
        if kappa * tau + floor >= best_obj:
            break
        _q, counts = _min_sum(tstar, float(tau), total)
        if counts is None:
            continue
        if objective is not None:
            obj = objective(_chosen(argbest, counts))
        else:  # with these counts the true max may be below τ: price the layout exactly
            times = _times(tstar, counts)
            obj = sum(times) + kappa * max(times)
        if obj < best_obj - 1e-15 * max(1.0, abs(obj)):
            best_obj, best_counts = obj, counts
    assert best_counts is not None
    return Solution(tuple(best_counts), tuple(_chosen(argbest, best_counts)), best_obj)


def _chosen(argbest: dict[tuple[int, int, int], Choice], counts: list[int]) -> list[Choice]:
    choices, a = [], 0
    for i, c in enumerate(counts):
        choices.append(argbest[(i, a, c)])
        a += c
    return choices


def _times(tstar: np.ndarray, counts: list[int]) -> list[float]:
    out, a = [], 0
    for i, c in enumerate(counts):
        out.append(float(tstar[i, a, c]))
        a += c
    return out


def brute_force(p: int, total: int, c_min: int, c_max: int, table: Table, kappa: float,
                budget: float | Sequence[float]) -> float:
    """Exhaustive reference for tests: every composition, the fastest fitting choice per stage."""
    budgets = [budget] * p if isinstance(budget, (int, float)) else list(budget)
    best = math.inf

    def rec(i: int, a: int, times: list[float]) -> None:
        nonlocal best
        if i == p:
            if a == total:
                best = min(best, sum(times) + kappa * max(times))
            return
        for c in range(c_min, c_max + 1):
            if a + c > total:
                break
            fitting = [ch.time for ch in table(i, a, c) if ch.memory <= budgets[i]]
            if fitting:
                rec(i + 1, a + c, [*times, min(fitting)])

    rec(0, 0, [])
    return best
