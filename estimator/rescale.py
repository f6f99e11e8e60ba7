"""Rescaling a user's layer layout and recompute counts when PP or VPP change (docs/model.md#rescaling).

New stage k covers old stages [k·p_old/p_new, (k+1)·p_old/p_new); counts are summed over that interval
(fractional overlaps weighted), rounded by largest remainder so that they still sum to the layout's
positions, and repaired in D27 order. Recompute counts follow the same map and are clipped to the new
stage's layers.
"""

from __future__ import annotations

import math
from dataclasses import replace

from .layout import Layout, balanced_counts
from .strategy import RecomputePlan, Strategy


def _largest_remainder(shares: list[float], total: int) -> list[int]:
    floors = [math.floor(x) for x in shares]
    missing = total - sum(floors)
    order = sorted(range(len(shares)), key=lambda k: (-(shares[k] - floors[k]), k))
    for k in order[:max(0, missing)]:
        floors[k] += 1
    return floors


def _map(values: list[float], p_new: int) -> list[float]:
    """Sum old per-stage values into p_new intervals, splitting a stage between intervals by overlap."""
    p_old = len(values)
    out = [0.0] * p_new
    for k in range(p_new):
        lo, hi = k * p_old / p_new, (k + 1) * p_old / p_new
        for i in range(p_old):
            overlap = max(0.0, min(hi, i + 1) - max(lo, i))
            out[k] += overlap * values[i]
    return out


def _split(total: int, parts: int) -> list[int]:
    """A stage's layers over its chunks, later chunks first getting the remainder as D27 does."""
    return balanced_counts(total, parts) if parts > 1 else [total]


def rescale(strategy: Strategy, layout: Layout, p_new: int, vp_new: int) -> Strategy:
    """The strategy with offset/partition and per-stage recompute lists mapped onto (p_new, vp_new)."""
    old_stage = [sum(c) for c in layout.chunk_counts()]
    l_eff = sum(old_stage)
    if p_new * vp_new > l_eff:
        return strategy  # the layout check reports it
    new_stage = _largest_remainder(_map([float(x) for x in old_stage], p_new), l_eff)
    if any(c < vp_new for c in new_stage):  # repair: fall back to the balanced layout
        new_stage = [sum(balanced_counts(l_eff, p_new * vp_new)[k::p_new]) for k in range(p_new)]
    grid = [_split(new_stage[k], vp_new) for k in range(p_new)]  # [stage][chunk]
    changes: dict = {}
    if strategy.partition is not None or strategy.offset is not None:
        rows = tuple(tuple(grid[k][j] for k in range(p_new)) for j in range(vp_new))
        if strategy.partition is not None:
            changes["partition"] = rows if vp_new > 1 else rows[0]
            changes["offset"] = None
        else:
            base = l_eff // (p_new * vp_new)
            offsets = tuple(tuple(c - base for c in row) for row in rows)
            # a list[p] would be broadcast to every chunk (D39), so vp > 1 needs the [vp][p] form
            changes["offset"] = offsets[0] if vp_new == 1 else offsets
    plan = strategy.recompute
    rec_changes = {}
    for name in ("full_counts", "sel_counts", "comm_counts"):
        counts = getattr(plan, name)
        if isinstance(counts, tuple) and counts:
            per_stage = [sum(c) if isinstance(c, tuple) else int(c) for c in counts]
            if isinstance(counts[0], tuple):  # [vp][p] -> per stage
                per_stage = [sum(row[i] for row in counts) for i in range(len(counts[0]))]
            mapped = _largest_remainder(_map([float(x) for x in per_stage], p_new), round(sum(per_stage)))
            rec_changes[name] = tuple(min(c, new_stage[k]) for k, c in enumerate(mapped))
    if rec_changes:
        changes["recompute"] = replace(plan, **rec_changes) if isinstance(plan, RecomputePlan) else plan
    return replace(strategy, **changes) if changes else strategy


def rescale_vision(partition: tuple[int, ...] | None, p_new: int) -> tuple[int, ...] | None:
    """A vision tower's layers per stage mapped onto p_new stages the same way (a tower on the first stages
    stays there)."""
    if partition is None or len(partition) == p_new:
        return partition
    total = sum(partition)
    return tuple(_largest_remainder(_map([float(x) for x in partition], p_new), total))
