"""Stage tables for interleaved pipelines (vp > 1, docs/model.md#balancing): a stage holds one slot per
chunk, so a stage's choice is a count per chunk (each within base ± δ) and a recompute assignment per chunk.

A slot's cost is taken to depend only on (stage, chunk, count): its layer kinds are read from the plan's own
layout at the slot's current start, which is exact when the body is one kind of layer with no MTP or noop
positions among the offsets (``ChunkedTables.exact``); otherwise the balancer flags the result approximate
and re-verifies it with ``estimate``. Every assignment of a slot is priced at once (stacked forms: its chunk
sums and chunk times, arrays over the assignments); assignments that another one beats on time, activations,
working set and buffers at once are dropped; the chunks' remaining options are then combined on a grid (axis j:
chunk j's options) by the estimate's own stage assembly — memory at the stage's replay points (``assembly``),
time F + B + W + Rc per micro-batch and, for V schedules, the bubble term (``steptime``).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..arr import Num
from ..assembly import ChunkSums, chunk_sums
from ..assembly.form import build_form, stack_forms
from ..assembly.memory import combine, map_elements
from ..layout import MTP, NOOP, Item, slot_index, slot_position
from ..parsed import ParsedConfig
from ..stage_entries import EMBEDDING_COPY, Entry
from ..steptime import ChunkTimes, chunk_times, stage_times
from .solver import Choice
from .tables import Assignment, PlanTables, Position, assignments, slot_items, snap_times


@dataclass(frozen=True)
class ChunkedAssignment:
    """What a stage runs: positions per chunk and a recompute assignment per chunk."""

    counts: tuple[int, ...]
    chunks: tuple[Assignment, ...]
    bubble: float = 0.0  # V schedules: the stage's (p − 1)-multiplied term of T-PIPE.zbv / .dualpipev

    @property
    def full(self) -> tuple[int, ...]:
        return tuple(a.full for a in self.chunks)

    @property
    def sel(self) -> tuple[int, ...]:
        return tuple(a.sel for a in self.chunks)

    @property
    def comm(self) -> tuple[int, ...]:
        return tuple(a.comm for a in self.chunks)


@dataclass(frozen=True)
class _Options:
    """The kept recompute assignments of one (stage, chunk, count) slot and their sums, arrays over them."""

    assigns: tuple[Assignment, ...]
    sums: ChunkSums
    times: ChunkTimes
    vision: Num


class ChunkedTables(PlanTables):
    """Prices candidate stages of one interleaved plan (vp > 1, not FSDP2)."""

    def __init__(self, parsed: ParsedConfig, options: tuple[str, ...], delta: int) -> None:
        super().__init__(parsed, options)
        self.total = len(self.positions)
        self.base = self.total // (self.p * self.vp)
        self.c_min, self.c_max = max(1, self.base - delta), self.base + delta
        kinds = {(pos.kind, pos.block) for pos in self.positions}
        self.exact = len(kinds) == 1 and next(iter(kinds))[0] not in (NOOP, MTP)
        self.v_schedule = self.schedule in ("zbv", "dualpipev")
        last = slot_position(self.schedule, self.p, self.vp, self.p * self.vp - 1)
        self.o_stage, self.o_chunk = last  # the stage/chunk holding the output head
        counts = self.layout.counts
        self._starts = [sum(counts[:q]) for q in range(len(counts))]
        self._chunk_cache: dict[tuple[int, int, int], _Options] = {}
        self._stage_cache: dict[tuple[int, int], list[Choice]] = {}

    # ------------------------------------------------------------------------------------ rows
    def _slot_positions(self, i: int, j: int, c: int) -> list[Position]:
        """The kinds of a c-position slot at (stage i, chunk j): read at the slot's current start."""
        a = self._starts[slot_index(self.schedule, self.p, self.vp, i, j)]
        a = max(0, min(a, self.total - c))
        return self.positions[a:a + c]

    def chunk_entries(self, i: int, j: int, c: int, assign: Assignment) -> list[Entry]:
        """The rows of chunk j of stage i, in model order, as ``stage_entries`` lists them."""
        tie = self.r.dims.tie
        holds_e = i == 0 and j == 0  # slot 0 in every schedule
        holds_o = (i, j) == (self.o_stage, self.o_chunk)
        positions = self._slot_positions(i, j, c)
        items = slot_items(self.parsed, positions, assign, holds_e, holds_o, self.slot_savings(i, j, positions),
                           self.mtp_offload, self.freeze)
        out = [Entry(it, j, not (tie and i == 0)) for it in items]
        # a stage with MTP but not the embedding holds a copy of the table (unless a tied head serves)
        if any(it.kind == MTP for it in items) and i != 0 and not (tie and i == self.o_stage):
            out.append(Entry(Item(EMBEDDING_COPY, ""), j))
        return out

    def _chunk_options(self, i: int, j: int, c: int) -> _Options:
        """Every assignment of a slot, minus those another one beats on every count."""
        key = (i, j, c)
        got = self._chunk_cache.get(key)
        if got is not None:
            return got
        found: list[Assignment] = []
        forms = []
        seen: set[tuple[str, ...]] = set()
        for assign in assignments(self.options, c):
            entries = self.chunk_entries(i, j, c, assign)
            signature = tuple(e.item.option for e in entries)
            if signature in seen:
                continue
            seen.add(signature)
            found.append(assign)
            forms.append(build_form(entries, self.vp))
        stacked = stack_forms(forms)
        sums, times = chunk_sums(self.pricer, stacked, j), chunk_times(self.ctx, stacked, j)
        # drop what another assignment beats on every count; of equal ones the first (fewest recomputed
        # layers) stays (V schedules also compare the chunk's F, B + Rc, W and forward working set)
        if self.v_schedule:
            columns = [times.F, times.B + times.Rc, times.W, sums.act, sums.work, sums.transient, sums.forward]
        else:
            columns = [times.F + (times.B + times.Rc) + times.W, sums.act, sums.work, sums.transient]
        values = np.stack([np.broadcast_to(np.asarray(x, dtype=np.float64), (len(found),)) for x in columns], axis=1)
        no_worse = (values[None, :, :] <= values[:, None, :]).all(axis=2)   # [x, y]: y no worse than x
        equal = (values[None, :, :] == values[:, None, :]).all(axis=2)
        earlier = np.arange(len(found))[None, :] < np.arange(len(found))[:, None]
        kept = np.flatnonzero(~(no_worse & (~equal | earlier)).any(axis=1))

        def take(x: Num) -> Num:
            return np.broadcast_to(x, (len(found),))[kept]

        got = _Options(tuple(found[k] for k in kept), map_elements(sums, take), map_elements(times, take),
                       take(stacked.vision))
        self._chunk_cache[key] = got
        return got

    # ------------------------------------------------------------------------------------ stages
    def count_vectors(self, c: int) -> list[tuple[int, ...]]:
        window = range(self.c_min, self.c_max + 1)
        return [v for v in itertools.product(window, repeat=self.vp) if sum(v) == c]

    def choices(self, i: int, a: int, c: int) -> list[Choice]:
        """Every (counts per chunk, recompute per chunk) of a stage holding c positions, reduced to its
        time/memory Pareto front (the start ``a`` does not change the cost: kinds come from the layout)."""
        del a
        key = (i, c)
        got = self._stage_cache.get(key)
        if got is not None:
            return got
        out: list[Choice] = []
        for vector in self.count_vectors(c):
            out.extend(self._vector_choices(i, vector))
        out.sort(key=lambda ch: (ch.time, ch.memory))
        front: list[Choice] = []
        best_memory = math.inf
        for ch in out:
            if ch.memory < best_memory:
                front.append(ch)
                best_memory = ch.memory
        self._stage_cache[key] = front
        return front

    def _vector_choices(self, i: int, vector: tuple[int, ...]) -> list[Choice]:
        """Every combination of the chunks' options at once: axis j of the grid indexes chunk j's options."""
        options = [self._chunk_options(i, j, c) for j, c in enumerate(vector)]
        shape = tuple(len(opts.assigns) for opts in options)

        def along(j: int):
            axis = [1] * self.vp
            axis[j] = -1
            return lambda x: np.reshape(x, axis)

        sums = [map_elements(opts.sums, along(j)) for j, opts in enumerate(options)]
        times = [map_elements(opts.times, along(j)) for j, opts in enumerate(options)]
        vision = functools.reduce(np.logical_or, [along(j)(opts.vision) for j, opts in enumerate(options)])
        mem = combine(self.pricer, i, sums, self.points[i], vision, self.pricer.memo)
        st = stage_times(self.ctx, i, times)
        memory = np.broadcast_to(np.maximum(mem.total, mem.optimizer_step_peak), shape).ravel()
        time_ = np.asarray(snap_times(np.broadcast_to(st.F + st.B + st.W + st.Rc, shape)))
        bubble = np.zeros(shape).ravel()
        if self.v_schedule:  # T-PIPE.zbv / .dualpipev: the slowest stage's max over chunks of its bubble term
            terms = []
            for j in range(self.vp):
                f_c, b_c, w_c = st.chunk_F[j], st.chunk_B[j] + st.chunk_Rc[j], st.chunk_W[j]
                expr = f_c + b_c - 2 * w_c if self.schedule == "zbv" else (f_c + b_c + w_c) + (b_c + w_c) - 3 * w_c
                terms.append(np.maximum(0.0, expr))
            bubble = np.broadcast_to(functools.reduce(np.maximum, terms), shape).ravel()
        # only this vector's time/memory Pareto front can be the fastest fitting choice
        order = np.lexsort((memory, time_))
        running = np.minimum.accumulate(memory[order])
        keep = order[np.concatenate(([True], running[1:] < running[:-1]))]
        out = []
        for flat in keep.tolist():
            combo = np.unravel_index(flat, shape)
            out.append(Choice(float(time_[flat]), float(memory[flat]), ChunkedAssignment(
                vector, tuple(options[j].assigns[int(k)] for j, k in enumerate(combo)), float(bubble[flat]))))
        return out
