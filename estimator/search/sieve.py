"""The candidates that survive the rules, built coarse-first (docs/model.md#search, P-SEARCH-SPEED).

Most of a space is refused by rules that never read the optimizer shard size or the recompute mode (R-SP-T1,
R-PP-LAYERS, R-VPP-SCHED, R-GBS, R-CP-SP: about 78 % of DeepSeek-V3 on 1,024 devices). So the rules before
R-OS-DIV run on a coarse table — per (t, p, cp) block one row per (b, ep, etp, vp, sp), the shard size and
recompute mode at their first values — and each refused coarse row counts for the n_os·n_rec candidates it
stands for. Only the survivors are expanded over shard sizes and recompute modes, put back in enumeration order,
and judged by the remaining rules. The result is the one of ``refusals`` over ``enumerate_candidates``: the same
survivors in the same order, the same count per rule, and the same example (the first refused candidate in
enumeration order — a coarse row's first candidate is the coarse row itself).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..parsed import ParsedConfig
from .candidates import VALUE_DIMS, Block, Candidates, block_columns, candidate_blocks
from .filters import CODES, refusals, resolve_columns
from .space import SearchSpace

FINE_DIMS = ("os", "rec")  # collapsed in the coarse table
FIRST_FINE_RULE = CODES.index("R-OS-DIV")  # the first rule that reads a shard size (none reads the recompute mode)
FINE_COLUMNS = frozenset({"os", "os_e"})  # what the rules before it may not read
_FINE = tuple(VALUE_DIMS.index(name) for name in FINE_DIMS)


@dataclass
class Sieved:
    total: int                         # candidates in the space
    counts: np.ndarray                 # per CODES: candidates refused by that rule first
    examples: dict[int, tuple[Candidates, dict[str, np.ndarray], int]]  # code index → (table, derived, row)
    survivors: Candidates              # in enumeration order
    derived: dict[str, np.ndarray]     # resolve_columns of the survivors


def sieve(parsed: ParsedConfig, space: SearchSpace) -> Sieved:
    blocks = candidate_blocks(parsed, space)
    values = [[np.asarray(v, dtype=np.int64) for v in block[4]] for block in blocks]
    shapes = [tuple(len(v) for v in vals) for vals in values]
    total = sum(math.prod(shape) for shape in shapes)
    coarse_values = [[v[:1] if k in _FINE else v for k, v in enumerate(vals)] for vals in values]
    coarse = Candidates(block_columns(parsed, space.global_batch, blocks,
                                      [np.meshgrid(*vals, indexing="ij") for vals in coarse_values]))
    coarse_derived = resolve_columns(coarse, parsed)
    reason = refusals(coarse, coarse_derived, parsed, space, stop=FIRST_FINE_RULE, unread=FINE_COLUMNS)
    sizes = [math.prod(len(v) for v in vals) for vals in coarse_values]
    weight = np.repeat([math.prod(shape[k] for k in _FINE) for shape in shapes], sizes).astype(np.int64)
    counts = np.zeros(len(CODES), dtype=np.int64)
    refused = reason >= 0
    np.add.at(counts, reason[refused], weight[refused])
    examples = {int(k): (coarse, coarse_derived, int(np.argmax(reason == k)))
                for k in np.flatnonzero(np.bincount(reason[refused], minlength=len(CODES)))}

    fine = _expand(parsed, space, blocks, values, shapes, sizes, np.flatnonzero(~refused))
    fine_derived = resolve_columns(fine, parsed)
    fine_reason = refusals(fine, fine_derived, parsed, space, start=FIRST_FINE_RULE)
    fine_counts = np.bincount(fine_reason[fine_reason >= 0], minlength=len(CODES))
    counts += fine_counts
    examples.update({int(k): (fine, fine_derived, int(np.argmax(fine_reason == k)))
                     for k in np.flatnonzero(fine_counts)})
    alive = np.flatnonzero(fine_reason < 0)
    if len(alive) == len(fine):  # nothing refused here (DeepSeek-V3 on 1,024 devices): no ~40 MB copy
        return Sieved(total=total, counts=counts, examples=examples, survivors=fine, derived=fine_derived)
    derived = {k: (v if k == "schedule_names" else v[alive]) for k, v in fine_derived.items()}
    return Sieved(total=total, counts=counts, examples=examples, survivors=fine.take(alive), derived=derived)


def _expand(parsed: ParsedConfig, space: SearchSpace, blocks: list[Block], values: list[list[np.ndarray]],
            shapes: list[tuple[int, ...]], sizes: list[int], kept: np.ndarray) -> Candidates:
    """The candidates of the coarse rows ``kept`` (indices into the coarse table): each row over every shard size
    and recompute mode of its block, in enumeration order."""
    starts = np.searchsorted(kept, np.cumsum([0, *sizes]))  # ``kept`` is sorted: each block's slice of it
    offsets = np.cumsum([0, *sizes])
    chosen: list[Block] = []
    grids: list[list[np.ndarray]] = []
    for k, block in enumerate(blocks):
        rows = kept[starts[k]:starts[k + 1]] - offsets[k]
        if not len(rows):
            continue
        shape = shapes[k]
        coarse_shape = tuple(1 if j in _FINE else n for j, n in enumerate(shape))
        index = list(np.unravel_index(rows, coarse_shape))  # per VALUE_DIMS, the fine ones 0
        n_fine = math.prod(shape[j] for j in _FINE)
        fine_index = np.unravel_index(np.arange(n_fine), tuple(shape[j] for j in _FINE))
        for j, f in zip(_FINE, fine_index, strict=True):
            index[j] = f
        full = [np.repeat(x, n_fine) if j not in _FINE else np.tile(x, len(rows)) for j, x in enumerate(index)]
        order = np.argsort(np.ravel_multi_index(full, shape), kind="stable")
        chosen.append(block)
        grids.append([values[k][j][x[order]] for j, x in enumerate(full)])
    return Candidates(block_columns(parsed, space.global_batch, chosen, grids))


__all__ = ["FINE_COLUMNS", "FIRST_FINE_RULE", "Sieved", "sieve"]
