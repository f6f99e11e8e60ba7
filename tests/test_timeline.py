"""Schedule timeline (issue 5): per-stage operations with start/end times and activation memory, in agreement with
the in-flight profile of the memory model (docs/model.md#in-flight-micro-batches, docs/model.md#peak-replay-point) for
every schedule."""

from __future__ import annotations

import dataclasses

import pytest

from estimator import ModelSpec, RecomputePlan, RunOptions, Strategy, find_preset
from estimator.estimate import layout_inputs, stage_rows
from estimator.layout import build_layout, slot_index
from estimator.resolve import resolve
from estimator.schedules import inflight_profile
from estimator.stage import StagePricer
from estimator.steptime import StageTimes, pipeline_time, step_time
from estimator.timeline import timeline

H100 = find_preset("H100-80G")
MODEL = ModelSpec(name="toy", hidden_size=1024, num_layers=16, num_attention_heads=8, ffn_hidden_size=4096,
                  vocab_size=32000)
SCHEDULES = [("1f1b", 1, 8, 1), ("1f1b", 1, 2, 1), ("interleaved", 2, 8, 1), ("interleaved", 2, 4, 1),
             ("gpipe", 1, 8, 1), ("seq1f1b", 1, 8, 4), ("seqsmartvpp", 2, 8, 2), ("zbv", 2, 8, 1), ("zbv", 2, 2, 1),
             ("dualpipev", 2, 8, 1), ("looped_bfs", 2, 8, 1), ("looped_bfs", 1, 4, 1), ("interleaved_zb", 2, 8, 1),
             ("interleaved_zb", 3, 12, 1)]


def build(schedule: str, vp: int, m: int, n_s: int, p: int = 4, recompute: str = "none"):
    st = Strategy(seq_length=4096, pp=p, vpp=vp, micro_batches=m, schedule=schedule, n_s=n_s,
                  recompute=RecomputePlan(default_mode=recompute))
    r = resolve(MODEL, st, H100, RunOptions(framework="megatron"))
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    rows = [stage_rows(pricer, i) for i in range(p)]
    return pricer, rows, step_time(pricer, rows)


@pytest.mark.parametrize(("schedule", "vp", "m", "n_s"), SCHEDULES)
def test_timeline_agrees_with_inflight_profile(schedule, vp, m, n_s):
    pricer, rows, step = build(schedule, vp, m, n_s)
    tl = timeline(pricer, rows, step)
    profile = inflight_profile(schedule, 4, vp, m, n_s=n_s)
    for i, stage in enumerate(tl.stages):
        prof = profile[i]
        assert stage.peak_inflight == prof.total
        act_chunk = [sum(row.act for row in rows[i] if row.chunk == j) for j in range(vp)]
        assert stage.act_chunk == pytest.approx(act_chunk)
        peak = prof.peak
        # the memory just before the peak backward is Σ_j n_j·A_chunk(j) of the profile's peak vector
        k = next(k for k, op in enumerate(stage.ops)
                 if op.kind == "B" and op.chunk == peak.backward_chunk and stage.before(k)[0] == peak.counts)
        counts, activations = stage.before(k)
        assert activations == pytest.approx(sum(n * a for n, a in zip(peak.counts, act_chunk, strict=True)))
        assert stage.ops[k - 1].memory == pytest.approx(stage.static + activations)
        assert sum(counts) == prof.total
        # over the whole timeline the activation maximum is the best replay point of the profile
        best = max(sum(n * a for n, a in zip(pt.counts, act_chunk, strict=True)) for pt in prof.points)
        assert stage.peak_activations == pytest.approx(best)
        assert sum(stage.ops[-1].inflight) == 0  # every unit released at the end of the flush


@pytest.mark.parametrize(("schedule", "vp", "m", "n_s"), SCHEDULES)
def test_timeline_respects_dependencies(schedule, vp, m, n_s):
    pricer, rows, step = build(schedule, vp, m, n_s, recompute="selective")
    tl = timeline(pricer, rows, step)
    p = 4
    last = p * vp - 1
    ends = {}
    for stage in tl.stages:
        previous_end = 0.0
        for op in stage.ops:
            assert op.start >= previous_end - 1e-15 and op.end >= op.start
            previous_end = op.end
            q = slot_index(schedule, p, vp, stage.stage, op.chunk)
            ends[(op.kind, op.microbatch, q, op.slice)] = (op.start, op.end)
    for (kind, mb, q, sl), (start, _end) in ends.items():
        if kind == "F" and q > 0:
            assert start >= ends[("F", mb, q - 1, sl)][1]
        if kind == "B":
            assert start >= ends[("B", mb, q + 1, sl)][1] if q < last else start >= ends[("F", mb, q, sl)][1]
        if kind == "W":
            assert start >= ends[("B", mb, q, sl)][1]
    count = {"F": 0, "B": 0}
    for stage in tl.stages:
        for op in stage.ops:
            count[op.kind] = count.get(op.kind, 0) + 1
    assert count["F"] == count["B"] == p * vp * m * n_s
    # every stage is busy for exactly its micro-batches' work
    for stage, times in zip(tl.stages, step.stages, strict=True):
        assert stage.busy == pytest.approx(m * n_s * times.S)


def uniform(F: float, B: float, W: float = 0.0, vp: int = 1) -> StageTimes:
    return StageTimes(F=F * vp, B=B * vp, W=W * vp, Rc=0.0, chunk_F=(F,) * vp, chunk_B=(B,) * vp, chunk_W=(W,) * vp,
                      chunk_Rc=(0.0,) * vp)


@pytest.mark.parametrize(("schedule", "vp", "n_s", "stage_times", "expected"), [
    ("1f1b", 1, 1, uniform(1 / 3, 2 / 3), 11), ("interleaved", 2, 1, uniform(1 / 6, 1 / 3, vp=2), 9.5),
    ("gpipe", 1, 1, uniform(1 / 3, 2 / 3), 11), ("seq1f1b", 1, 4, uniform(1 / 12, 1 / 6), 8.75),
    # looped BFS: (m·vp + p − 1) chunk forwards then as many chunk backwards, (16 + 3)·(1/6 + 1/3)
    ("looped_bfs", 2, 1, uniform(1 / 6, 1 / 3, vp=2), 9.5)])
def test_uniform_makespan_equals_pipeline_formula(schedule, vp, n_s, stage_times, expected):
    pricer, rows, step = build(schedule, vp, 8, n_s)
    step = dataclasses.replace(step, stages=(stage_times,) * 4)
    tl = timeline(pricer, rows, step)
    assert tl.makespan == pytest.approx(expected, rel=1e-12)
    assert pipeline_time(schedule, step.stages, 8, vp, n_s) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("schedule", ["zbv", "dualpipev"])
def test_v_schedules_makespan_bounds(schedule):
    pricer, rows, step = build(schedule, 2, 8, 1)
    step = dataclasses.replace(step, stages=(uniform(1 / 6, 1 / 6, 1 / 6, vp=2),) * 4)
    tl = timeline(pricer, rows, step)
    assert 8 <= tl.makespan <= 11  # never below m·S, never worse than plain 1F1B
