"""The step time and its band as an estimate keeps them (P-SCALAR-SPEED 'Fifth session — step time'): the band's
ends timed on contexts derived from the plan's (``TimeContext(like=)``), links and peaks kept per device record,
stage groups timed once, stage sums and row holdings kept, the band's ends from per-stage seconds without stage
records (sixth session) — each equal to the float to timing every device on its own with nothing kept and its
T_step taken from the stage records, on the bundled examples, on generated plans and after a session's edits."""

from __future__ import annotations

import functools
import math
from dataclasses import fields, replace
from pathlib import Path

import pytest
from edit_sequences import walk
from fuzzing import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from scripted_session import config_sets, opened_plan

from estimator import (
    ModelSpec,
    RecomputePlan,
    RunOptions,
    ShardingSpec,
    Strategy,
    estimate,
    find_preset,
    pipeline,
    rowtime,
    steptime,
)
from estimator.arr import maximum
from estimator.assembly.form import stage_plan
from estimator.comm import kept_link, level_link
from estimator.errors import SappError
from estimator.layout import build_layout, layout_inputs
from estimator.resolve import Resolved, resolve
from estimator.session import PlanSession
from estimator.stage import StagePricer

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = [(name, files, args) for name, files, args in config_sets(None)]
H100 = find_preset("H100-80G")


pytestmark = pytest.mark.usefixtures("nothing_kept")


def _alone(model, strategy, hardware, options) -> tuple[steptime.StepTime, float, float]:
    """The plan's step time and its band's ends, each device timed on its own: a new plan record, layout, row
    pricer and time context per device, no kept links, rows, sums or groups."""
    def on(hw):
        saved = rowtime._DEVICES
        rowtime._DEVICES = {}
        try:
            r = resolve(model, strategy, hw, options)
            return StagePricer(r, build_layout(layout_inputs(r)))
        finally:
            rowtime._DEVICES = saved

    def seconds(hw) -> float:
        pricer = on(hw)
        saved = rowtime._DEVICES
        rowtime._DEVICES = {}
        try:  # T_step from the stage records (not ``step_seconds``' per-stage seconds)
            timed = steptime.timed_stages(pricer)
            par = pricer.r.par
            t_pipe = pipeline.pipeline_time(pricer.r.flags.schedule, timed.stages, par.m, par.vp, par.n_s)
            return float(par.n_acc * t_pipe + timed.dp_step + timed.t_opt)
        finally:
            rowtime._DEVICES = saved

    plan = on(hardware)
    saved = rowtime._DEVICES
    rowtime._DEVICES = {}
    try:
        step = steptime.step_time(plan)
    finally:
        rowtime._DEVICES = saved
    return step, seconds(hardware.at_band("high")), seconds(hardware.at_band("low"))


def _same(result, model, strategy, hardware, options) -> None:
    step, high, low = _alone(model, strategy, hardware, options)
    assert result.step == step
    assert result.step.step_time_s == step.step_time_s and result.step.parts == step.parts
    if hardware.has_band:
        assert result.step_band == (high, low)
        assert high <= result.step.step_time_s <= low


@pytest.mark.parametrize("name,files,args", BUNDLED, ids=[b[0] for b in BUNDLED])
def test_every_bundled_examples_step_and_band_equal_each_device_timed_alone(name, files, args):
    p = opened_plan(files, args)
    if p is None:
        pytest.skip("a config the session refuses to open is another test's subject")
    try:
        result = estimate(p.model, p.strategy, p.hardware, p.options)
    except SappError:
        pytest.skip("refused plan")
    _same(result, p.model, p.strategy, p.hardware, p.options)


@pytest.mark.parametrize("path", ["benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml",
                                  "benchmarks/inputs/llama3_70b_torchtitan_pp8_vpp5.plan.yaml",
                                  "resources/examples/mindformers_qwen3_32b.yaml"])
def test_the_step_after_each_edit_of_a_sequence_equals_each_device_timed_alone(path):
    """tp, pp, recompute and micro-batch edits and their undos through the session: every estimate's step time
    and band against timing each device alone (nothing kept from the earlier estimates)."""
    session = PlanSession()
    session.open([ROOT / path])

    for _, p in walk(session, ("tp", "undo", "pp", "rec", "undo", "tp", "m", "undo", "undo", "undo", "rec", "tp",
                               "pp")):
        _same(estimate(p.model, p.strategy, p.hardware, p.options), p.model, p.strategy, p.hardware, p.options)


DENSE = ModelSpec(name="dense", hidden_size=2048, num_layers=12, num_attention_heads=16, num_kv_heads=4,
                  ffn_hidden_size=5632, vocab_size=32000)
MOE = ModelSpec(name="moe", hidden_size=2048, num_layers=8, num_attention_heads=16, num_kv_heads=4,
                ffn_hidden_size=5632, vocab_size=32000, num_experts=16, experts_per_token=2, moe_ffn_hidden_size=1024,
                first_k_dense=1)


@fuzz_settings(40)
@given(moe=st.booleans(), tp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2, 4]), vp=st.sampled_from([1, 2]),
       cp=st.sampled_from([1, 2]), m=st.sampled_from([4, 8]), mode=st.sampled_from(["none", "zero1", "zero3"]),
       rc=st.sampled_from(["none", "selective", "full"]),
       schedule=st.sampled_from([None, "gpipe", "zbv", "dualpipev", "looped_bfs"]),
       framework=st.sampled_from(["megatron", "torchtitan", "mindformers"]))
def test_generated_plans_step_and_band_equal_each_device_timed_alone(moe, tp, pp, vp, cp, m, mode, rc, schedule,
                                                                     framework):
    model = MOE if moe else DENSE
    strategy = Strategy(seq_length=4096, tp=tp, pp=pp, vpp=vp if pp > 1 else 1, cp=cp, dp=2, micro_batches=m,
                        ep=2 if moe else 1, sharding=ShardingSpec(mode=mode),
                        recompute=RecomputePlan(default_mode=rc), schedule=schedule)
    options = RunOptions(framework=framework)
    try:
        result = estimate(model, strategy, H100, options)
    except SappError:
        return  # refused plans have no step time
    _same(result, model, strategy, H100, options)


def test_a_band_ends_context_equals_one_made_for_that_device(monkeypatch):
    """What ``TimeContext(like=)`` takes from the plan's context reads no device: every attribute equals a context
    made from scratch on the band's end, its links made by ``level_link`` (not the ones kept per device)."""
    strategy = Strategy(seq_length=4096, tp=2, pp=2, dp=2, ep=2, cp=2, micro_batches=4,
                        sharding=ShardingSpec(mode="zero1"), recompute=RecomputePlan(default_mode="selective"))
    r = resolve(MOE, strategy, H100, RunOptions(framework="megatron"))
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    nominal = rowtime.TimeContext(pricer)
    for end in ("high", "low"):
        hw = H100.at_band(end)
        band = replace(pricer.r, hardware=hw)
        assert steptime.with_device(pricer.r, hw) == band
        assert set(steptime.with_device(pricer.r, hw).__dict__) == {f.name for f in fields(Resolved)}
        rows = StagePricer(band, pricer.layout, pricer.book)
        derived = vars(rowtime.TimeContext(rows, like=nominal))
        with monkeypatch.context() as fresh:
            fresh.setattr(rowtime, "_DEVICES", {})
            alone = vars(rowtime.TimeContext(rows))
        assert derived.keys() == alone.keys()
        for key, value in alone.items():
            assert derived[key] == value, key
        assert derived["tp"] == level_link(hw, 2, 1)


def test_a_kept_link_keeps_the_group_sizes_type():
    """Links are kept per device by group size and stride, their types included: an int and an equal float make
    the same floats but not always the same types (an int 0 where a float 0.0 was)."""
    table: dict = {}
    as_int = kept_link(table, H100, 1, 2)
    as_float = kept_link(table, H100, 1.0, 2)
    assert type(as_int.n) is int and type(as_float.n) is float
    assert as_int == level_link(H100, 1, 2) and kept_link(table, H100, 1, 2) is as_int
    assert kept_link(table, H100, 8, 8) == level_link(H100, 8, 8)


@pytest.mark.parametrize("values", [[1.0, 2.0, 2.0, 0.5], [0.0, -0.0, 0.0], [-0.0, 0.0], [3.0], [math.nan, 1.0, 2.0],
                                    [1.0, math.nan, 0.5], [2, 2.0, 1]])
def test_max_of_numbers_is_the_fold_of_maximum(values):
    folded = functools.reduce(maximum, values)
    got = pipeline.largest(values)
    assert repr(got) == repr(folded) and type(got) is type(folded)


def test_stage_groups_time_each_stage_as_its_own():
    """A stage timed once for its group equals the stage timed alone (its chunks timed there, its sums not kept),
    on every stage of the bundled benchmark plans."""
    for path in ("benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml",
                 "benchmarks/inputs/llama3_70b_torchtitan_pp8_vpp5.plan.yaml"):
        session = PlanSession()
        session.open([ROOT / path])
        p = session.parsed
        r = resolve(p.model, p.strategy, p.hardware, p.options)
        pricer = StagePricer(r, build_layout(layout_inputs(r)))
        timed = steptime.timed_stages(pricer)
        ctx = rowtime.TimeContext(pricer)
        for i, (form, _entries) in enumerate(stage_plan(pricer.layout, r.dims.tie)):
            chunks = [steptime.chunk_times(ctx, form, j, {}) for j in range(r.par.vp)]
            assert steptime.stage_times(ctx, i, chunks) == timed.stages[i], (path, i)
        assert len(timed.distinct) < r.par.p
