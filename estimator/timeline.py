"""Schedule timeline (GitHub issue 5): every operation of every stage with its start and end time and the stage's
activation memory after it, for every schedule (1F1B, interleaved, GPipe, Seq1F1B, seqsmartvpp, ZB-V, DualPipeV).

Each stage runs ``schedules.stage_order`` in order, one operation at a time; an operation starts when the stage is
free and its cross-stage dependency has finished: the forward of (micro-batch, slice) on model-order slot q after the
forward on slot q − 1, the backward on slot q after the backward on slot q + 1 (the last slot after its own
forward), a weight-gradient op after its backward. Durations are the step model's chunk values
(docs/model.md#stage-time): F^c; a split backward B^c + Rc^c and its W^c; an unsplit backward B^c + Rc^c + W^c.
Hand-over times are inside the sender's F and B, so a dependency waits for the sender's op to end.

Memory follows the in-flight profile of docs/model.md#in-flight-micro-batches: a forward adds one unit to its chunk, a
backward (the input-gradient op when split) removes it; activations = Σ_j n_j·A_chunk(j) with A_chunk the chunk's
one-micro-batch activations, and memory = activations + the stage's static bytes (parameters, held gradients, optimizer
states, resident gathered weights). The maximum in-flight total over a stage's timeline is
``inflight_profile(...)[i].total``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .layout import slot_index
from .schedules import Op, stage_order
from .stage import Row, StagePricer, stage_rows
from .steptime import StageTimes, StepTime

if TYPE_CHECKING:
    from .hardware import Hardware
    from .model import ModelSpec
    from .options import RunOptions
    from .strategy import Strategy


@dataclass(frozen=True)
class TimedOp:
    kind: str                    # F | B | W
    microbatch: int
    chunk: int
    slice: int
    start: float
    end: float
    inflight: tuple[int, ...]    # units per chunk after the op
    activations: float           # Σ_j n_j·A_chunk(j) after the op
    memory: float                # activations + static

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class StageTimeline:
    stage: int
    ops: tuple[TimedOp, ...]
    static: float
    act_chunk: tuple[float, ...]

    def before(self, k: int) -> tuple[tuple[int, ...], float]:
        """(in-flight vector, activations) just before op k."""
        if k == 0:
            return (0,) * len(self.act_chunk), 0.0
        op = self.ops[k - 1]
        return op.inflight, op.activations

    @property
    def peak_inflight(self) -> int:
        return max((sum(op.inflight) for op in self.ops), default=0)

    @property
    def peak_activations(self) -> float:
        return max((op.activations for op in self.ops), default=0.0)

    @property
    def peak_memory(self) -> float:
        return self.static + self.peak_activations

    @property
    def end(self) -> float:
        return self.ops[-1].end if self.ops else 0.0

    @property
    def busy(self) -> float:
        return sum(op.duration for op in self.ops)


@dataclass(frozen=True)
class Timeline:
    schedule: str
    stages: tuple[StageTimeline, ...]

    @property
    def makespan(self) -> float:
        """End of the last operation of one pipeline flush (seconds)."""
        return max(st.end for st in self.stages)


def op_duration(times: StageTimes, op: Op, split: bool) -> float:
    """F^c; B^c + Rc^c (+ W^c when the schedule does not split the backward); W^c."""
    c = op.chunk
    if op.kind == "F":
        return float(times.chunk_F[c])
    if op.kind == "W":
        return float(times.chunk_W[c])
    rc = times.chunk_Rc[c] if times.chunk_Rc else 0.0
    return float(times.chunk_B[c] + rc + (0.0 if split else times.chunk_W[c]))


def _static_bytes(pricer: StagePricer, rows: Sequence[Row]) -> float:
    f = pricer.r.flags
    total = 0.0
    for row in rows:
        st = row.static
        total += st.parameters + pricer.gamma * st.gradients + (0.0 if f.swap_optimizer else st.optimizer_states) \
            + row.resident
    return float(total)


def timeline(pricer: StagePricer, rows_per_stage: list[list[Row]], step: StepTime) -> Timeline:
    """Simulate one pipeline flush of the plan (scalar plans only)."""
    r = pricer.r
    par, sched, st = r.par, r.flags.schedule, r.strategy
    p, vp, m, n_s = int(par.p), int(par.vp), int(par.m), int(par.n_s)
    last_q = p * vp - 1
    orders = [stage_order(sched, p, vp, m, i, vpp_group=st.vpp_group, n_s=n_s,
                          overlap_moe_ep_comm=st.overlap_moe_ep_comm) for i in range(p)]
    acts = [tuple(float(sum(row.act for row in rows if row.chunk == j)) for j in range(vp))
            for rows in rows_per_stage]
    statics = [_static_bytes(pricer, rows) for rows in rows_per_stage]
    splits = [{(op.microbatch, op.chunk, op.slice) for op in order if op.kind == "W"} for order in orders]
    done: dict[tuple[str, int, int, int], float] = {}  # (kind, microbatch, slot q, slice) -> end
    ptr = [0] * p
    clock = [0.0] * p
    counts = [[0] * vp for _ in range(p)]
    timed: list[list[TimedOp]] = [[] for _ in range(p)]
    remaining = sum(len(o) for o in orders)
    while remaining:
        progress = False
        for i in range(p):
            order = orders[i]
            while ptr[i] < len(order):
                op = order[ptr[i]]
                q = slot_index(sched, p, vp, i, op.chunk)
                dep = _dependency(op, q, last_q)
                if dep is not None and dep not in done:
                    break
                start = max(clock[i], done[dep] if dep is not None else 0.0)
                end = start + op_duration(step.stages[i], op, (op.microbatch, op.chunk, op.slice) in splits[i])
                done[(op.kind, op.microbatch, q, op.slice)] = end
                clock[i] = end
                if op.kind == "F":
                    counts[i][op.chunk] += 1
                elif op.kind == "B":
                    counts[i][op.chunk] -= 1
                vec = tuple(counts[i])
                activations = float(sum(n * a for n, a in zip(vec, acts[i], strict=True)))
                timed[i].append(TimedOp(op.kind, op.microbatch, op.chunk, op.slice, start, end, vec, activations,
                                        statics[i] + activations))
                ptr[i] += 1
                remaining -= 1
                progress = True
        if not progress:
            stuck = {i: orders[i][ptr[i]] for i in range(p) if ptr[i] < len(orders[i])}
            raise RuntimeError(f"schedule {sched} deadlocks in the timeline simulation at {stuck}")
    return Timeline(schedule=sched, stages=tuple(
        StageTimeline(stage=i, ops=tuple(timed[i]), static=statics[i], act_chunk=acts[i]) for i in range(p)))


def _dependency(op: Op, q: int, last_q: int) -> tuple[str, int, int, int] | None:
    if op.kind == "F":
        return ("F", op.microbatch, q - 1, op.slice) if q > 0 else None
    if op.kind == "B":
        if q < last_q:
            return ("B", op.microbatch, q + 1, op.slice)
        return ("F", op.microbatch, q, op.slice)
    return ("B", op.microbatch, q, op.slice)


def estimate_timeline(model: ModelSpec, strategy: Strategy, hardware: Hardware,
                      options: RunOptions | None = None) -> Timeline:
    """Convenience: resolve, lay out, price, time the step and simulate its timeline."""
    from .layout import build_layout, layout_inputs
    from .options import RunOptions
    from .resolve import resolve
    from .steptime import step_time

    r = resolve(model, strategy, hardware, options or RunOptions())
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    rows = [stage_rows(pricer, i) for i in range(r.par.p)]
    return timeline(pricer, rows, step_time(pricer, rows))


__all__ = ["StageTimeline", "TimedOp", "Timeline", "estimate_timeline", "op_duration", "timeline"]
