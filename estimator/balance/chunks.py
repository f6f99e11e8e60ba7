"""Stage tables for interleaved pipelines (vp > 1, spec §9.2–§9.3): a stage holds one slot per chunk, so a
stage's choice is a count per chunk (each within base ± δ) and a recompute assignment per chunk.

A slot's cost is taken to depend only on (stage, chunk, count): its layer kinds are read from the plan's own
layout at the slot's current start, which is exact when the body is one kind of layer with no MTP or noop
positions among the offsets (``ChunkedTables.exact``); otherwise the balancer flags the result approximate
and re-verifies it with ``estimate`` (spec §9.3). Memory mirrors ``estimate.price_stage`` with chunks: static
sums + the largest replay point Σ_j n_j·A_j + W(backward chunk) + buffers + reserve; time is the stage's
F + B + W + Rc per micro-batch from the step-time model. Per chunk, recompute assignments that another
assignment beats on time, activations, working set and buffers at once are dropped before the chunks are
combined.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..estimate import (
    forward_working,
    layout_inputs,
    optimizer_step_peak,
    process_groups,
    reserve_bytes,
    working_for_chunk,
)
from ..layout import MTP, NOOP, build_layout, slot_index, slot_position
from ..parsed import ParsedConfig
from ..resolve import resolve
from ..schedules import inflight_profile
from ..stage import Row, StagePricer
from ..steptime import _Ctx, row_time, stage_times
from .solver import Choice
from .tables import Assignment, Position, assignments, layer_positions, slot_items


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
class _Chunk:
    """One chunk's rows under one assignment, reduced to what the stage combines."""

    assign: Assignment
    rows: tuple[Row, ...]
    time: float        # Σ row times (F + B + W + Rc and their communication)
    act: float         # stored activations of one micro-batch
    working: float     # W(chunk): the working set of its backward walk
    transient: float   # the largest transient buffer among its rows
    signature: tuple[str, ...]
    forward: float = 0.0   # V schedules: the forward working set (the other chunk's backward overlaps it)
    f: float = 0.0         # chunk F, B + Rc, W of the step-time model (V schedules' bubble term)
    br: float = 0.0
    w: float = 0.0


class ChunkedTables:
    """Prices candidate stages of one interleaved plan (vp > 1, not FSDP2)."""

    def __init__(self, parsed: ParsedConfig, options: tuple[str, ...], delta: int) -> None:
        st = parsed.strategy
        self.parsed = parsed
        self.r = resolve(parsed.model, st, parsed.hardware, parsed.options)
        self.layout = build_layout(layout_inputs(self.r))
        self.pricer = StagePricer(self.r, self.layout)
        self.ctx = _Ctx(self.pricer)
        self.options = options
        par, f = self.r.par, self.r.flags
        self.p, self.vp, self.schedule = int(par.p), int(par.vp), f.schedule
        self.profile = inflight_profile(f.schedule, self.p, self.vp, int(par.m), vpp_group=st.vpp_group,
                                        n_s=int(par.n_s), overlap_moe_ep_comm=st.overlap_moe_ep_comm,
                                        variant=parsed.options.vpp_variant)
        self.positions: list[Position] = layer_positions(parsed)
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
        self._groups = [process_groups(self.r, i) for i in range(self.p)]
        self.upstream_sum = f.comm_buffer_mode == "upstream_sum"
        self._chunk_cache: dict[tuple[int, int, int], list[_Chunk]] = {}
        self._stage_cache: dict[tuple[int, int], list[Choice]] = {}

    # ------------------------------------------------------------------------------------ rows
    def _slot_positions(self, i: int, j: int, c: int) -> list[Position]:
        """The kinds of a c-position slot at (stage i, chunk j): read at the slot's current start."""
        a = self._starts[slot_index(self.schedule, self.p, self.vp, i, j)]
        a = max(0, min(a, self.total - c))
        return self.positions[a:a + c]

    def chunk_rows(self, i: int, j: int, c: int, assign: Assignment) -> list[Row]:
        """The rows of chunk j of stage i, in model order, as ``stage_rows`` builds them."""
        pricer = self.pricer
        tie = self.r.dims.tie
        holds_e = i == 0 and j == 0  # slot 0 in every schedule
        holds_o = (i, j) == (self.o_stage, self.o_chunk)
        items = slot_items(self.parsed, self._slot_positions(i, j, c), assign, holds_e, holds_o)
        rows = [Row(it, j, pricer.cost(it, with_head=not (tie and i == 0))) for it in items]
        # a stage with MTP but not the embedding holds a copy of the table (unless a tied head serves), §5.3
        if any(it.kind == MTP for it in items) and i != 0 and not (tie and i == self.o_stage):
            rows.append(pricer.copy_row(j))
        return rows

    def _chunk_options(self, i: int, j: int, c: int) -> list[_Chunk]:
        """Every assignment of a slot, minus those another one beats on every count."""
        key = (i, j, c)
        got = self._chunk_cache.get(key)
        if got is not None:
            return got
        found: list[_Chunk] = []
        seen: set[tuple[str, ...]] = set()
        for assign in assignments(self.options, c):
            rows = self.chunk_rows(i, j, c, assign)
            signature = tuple(row.item.option for row in rows)
            if signature in seen:
                continue
            seen.add(signature)
            f_sum = br_sum = w_sum = 0.0
            for row in rows:
                rt = row_time(self.ctx, row)
                f_sum += float(rt.F) + sum(float(f) for f, _b, _rc in rt.comm.values())
                br_sum += float(rt.B + rt.Rc) + sum(float(b + rc) for _f, b, rc in rt.comm.values())
                w_sum += float(rt.W)
            time_ = f_sum + br_sum + w_sum
            if self.upstream_sum:  # upstream's per-layer sum of buffers, else the largest one (D14)
                transient = sum(max(row.parts[0], row.parts[1], row.parts[3]) + row.parts[2] for row in rows)
            else:
                transient = max(row.transient for row in rows)
            found.append(_Chunk(assign, tuple(rows), time_, float(sum(row.act for row in rows)),
                                float(working_for_chunk(self.pricer, rows, j)[0]), float(transient), signature,
                                float(forward_working(rows, j)), f_sum, br_sum, w_sum))
        # drop what another assignment beats on every count; of equal ones the first (fewest recomputed
        # layers) stays (V schedules also compare the chunk's F, B + Rc, W and forward working set)
        fields = ("f", "br", "w", "act", "working", "transient", "forward") if self.v_schedule else \
            ("time", "act", "working", "transient")
        values = np.array([tuple(getattr(x, name) for name in fields) for x in found])
        no_worse = (values[None, :, :] <= values[:, None, :]).all(axis=2)   # [x, y]: y no worse than x
        equal = (values[None, :, :] == values[:, None, :]).all(axis=2)
        earlier = np.arange(len(found))[None, :] < np.arange(len(found))[:, None]
        beaten = (no_worse & (~equal | earlier)).any(axis=1)
        kept = [x for x, out in zip(found, beaten, strict=True) if not out]
        self._chunk_cache[key] = kept
        return kept

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
        r = self.r
        f = r.flags
        options = [self._chunk_options(i, j, c) for j, c in enumerate(vector)]
        # what does not depend on the recompute assignment: priced once with the first combination
        first = [opts[0] for opts in options]
        rows = [row for ch in first for row in ch.rows]
        whole = stage_times(self.ctx, i, rows)
        constant = float(whole.F + whole.B + whole.W + whole.Rc) - sum(ch.time for ch in first)
        params = sum(row.static.parameters for row in rows)
        grads = self.pricer.gamma * sum(row.static.gradients for row in rows)
        states = 0.0 if f.swap_optimizer else sum(row.static.optimizer_states for row in rows)
        resident = sum(row.resident for row in rows)
        groups = self._groups[i]
        opt_peak = float(optimizer_step_peak(r, rows, resident, groups))
        static = params + grads + states + resident
        # every combination of the chunks' options at once: axis j of the grids indexes chunk j's options
        names = ("time", "act", "working", "transient", "forward", "f", "br", "w")
        grids = [np.array([getattr(ch, name) for ch in opts]).reshape([-1 if k == j else 1
                                                                       for k in range(self.vp)])
                 for name in names for j, opts in enumerate(options)]
        times, acts, works, transients, forwards, fs, brs, ws = (grids[k * self.vp:(k + 1) * self.vp]
                                                                 for k in range(len(names)))
        if self.v_schedule:  # V schedules: one working set for every point (as estimate.price_stage)
            v_work = np.maximum(np.maximum(works[1], forwards[0] + works[1]), forwards[1] + works[0])
            works = [v_work, v_work]
        dynamic = None
        for pt in self.profile[i].points:
            value = sum(n * a for n, a in zip(pt.counts, acts, strict=True)) + works[pt.backward_chunk]
            dynamic = value if dynamic is None else np.maximum(dynamic, value)
        transient = sum(transients) if self.upstream_sum else functools.reduce(np.maximum, transients)
        reserve = reserve_bytes(r, dynamic, i, groups)[0]
        memory = np.maximum(static + dynamic + transient + reserve, opt_peak)
        time_ = constant + sum(times)
        shape = np.broadcast_shapes(*(np.shape(g) for g in grids))
        memory, time_ = np.broadcast_to(memory, shape).ravel(), np.broadcast_to(time_, shape).ravel()
        bubble = np.zeros(shape).ravel()
        if self.v_schedule:  # T-PIPE.zbv / .dualpipev: the slowest stage's max over chunks of its bubble term
            terms = []
            for j in range(self.vp):
                f_c = fs[j] + (whole.chunk_F[j] - first[j].f)
                b_c = brs[j] + (whole.chunk_B[j] + whole.chunk_Rc[j] - first[j].br)
                w_c = ws[j] + (whole.chunk_W[j] - first[j].w)
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
                vector, tuple(options[j][int(k)].assign for j, k in enumerate(combo)), float(bubble[flat]))))
        return out

    def stage_rows(self, i: int, chosen: ChunkedAssignment) -> list[Row]:
        return [row for j, (c, assign) in enumerate(zip(chosen.counts, chosen.chunks, strict=True))
                for row in self.chunk_rows(i, j, c, assign)]
