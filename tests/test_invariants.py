"""Invariants of the memory model (issue 2 "Proof"): monotonicity in DP and recompute, in-flight counts,
per-layer rows summing to stage totals, explain trees summing to their values."""

from __future__ import annotations

import itertools

import pytest
from reference_models import DEEPSEEK_V3, LLAMA3_70B

from estimator import (
    CATEGORIES,
    ModelSpec,
    RecomputePlan,
    RunOptions,
    ShardingSpec,
    Strategy,
    estimate,
    find_preset,
)
from estimator.single_layer import layer_activation

A2 = find_preset("A2")
H100 = find_preset("H100-80G")

DENSE, MOE = LLAMA3_70B, DEEPSEEK_V3
QWEN3 = ModelSpec(name="qwen3-32b", hidden_size=5120, num_layers=64, num_attention_heads=64, num_kv_heads=8,
                  head_dim=128, qk_norm=True, ffn_hidden_size=25600, vocab_size=151936)
FRAMEWORKS = ("mindformers", "mindspeed", "megatron", "torchtitan", "hyperparallel", "hf_trainer")


def model_states(result) -> list[float]:
    return [s.bytes_by_category["parameters"] + s.bytes_by_category["gradients"] +
            s.bytes_by_category["optimizer_states"] for s in result.stages]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("mode", ["none", "zero1", "zero2", "zero3", "mf_op"])
def test_more_dp_never_raises_model_states(framework, mode):
    previous = None
    for dp in (1, 2, 4, 8, 16):
        strategy = Strategy(seq_length=4096, dp=dp, tp=8, pp=4, micro_batches=8, sequence_parallel=True,
                            sharding=ShardingSpec(mode=mode))
        states = model_states(estimate(DENSE, strategy, H100, RunOptions(framework=framework)))
        if previous is not None:
            assert all(now <= before + 1e-6 for now, before in zip(states, previous, strict=True))
        previous = states


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(("model", "kind"), [(DENSE, "dense"), (MOE, "moe"), (MOE, "dense"), (QWEN3, "dense")])
@pytest.mark.parametrize(("tp", "sp"), [(1, False), (4, False), (4, True)])
def test_full_le_selective_le_none_per_layer(framework, model, kind, tp, sp):
    strategy = Strategy(seq_length=4096, tp=tp, sequence_parallel=sp, ep=1)
    opts = RunOptions(framework=framework)
    values = {opt: layer_activation(model, strategy, H100, opts, kind, opt) for opt in ("none", "selective", "full")}
    assert values["full"] <= values["selective"] <= values["none"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_full_le_selective_le_none_per_stage(framework):
    """At a fixed replay point (same schedule, same counts) stage activations order like the options."""
    acts = {}
    for mode in ("none", "selective", "full"):
        strategy = Strategy(seq_length=4096, tp=8, pp=4, micro_batches=8, sequence_parallel=True,
                            recompute=RecomputePlan(default_mode=mode))
        res = estimate(DENSE, strategy, H100, RunOptions(framework=framework, reserve=0))
        acts[mode] = [s.bytes_by_category["activations"] for s in res.stages]
        assert all(s.peak_vector == (4 - s.index,) for s in res.stages)
    for i in range(4):
        assert acts["full"][i] <= acts["selective"][i] <= acts["none"][i]


@pytest.mark.parametrize(("p", "m"), [(4, 8), (4, 2), (8, 8), (16, 32)])
def test_stage0_holds_min_p_m_in_1f1b(p, m):
    strategy = Strategy(seq_length=2048, pp=p, micro_batches=m, tp=8)
    res = estimate(DENSE, strategy, H100, RunOptions(framework="megatron", allow_underfilled_pipeline=True))
    assert res.stages[0].peak_vector == (min(p, m),)
    assert [s.peak_vector[0] for s in res.stages] == [min(p - i, m) for i in range(p)]


CASES = list(itertools.product(
    FRAMEWORKS,
    [
        (DENSE, Strategy(seq_length=4096, dp=2, tp=8, pp=4, micro_batches=8, sequence_parallel=True,
                         recompute=RecomputePlan(full_counts=(10, 5, 2, 0)), sharding=ShardingSpec(mode="zero1"))),
        (DENSE, Strategy(seq_length=4096, dp=2, tp=8, pp=4, vpp=2, micro_batches=8, sequence_parallel=True,
                         recompute=RecomputePlan(default_mode="selective"))),
        (MOE, Strategy(seq_length=4096, dp=16, tp=4, pp=16, ep=8, micro_batches=32, sequence_parallel=True,
                       mtp_in_offset=True, offset=(1,) * 15 + (-1,), recompute=RecomputePlan(default_mode="full"),
                       sharding=ShardingSpec(mode="zero1"))),
        (QWEN3, Strategy(seq_length=8192, dp=8, tp=2, cp=2, sequence_parallel=True,
                         sharding=ShardingSpec(mode="fsdp"))),
    ]))


@pytest.mark.parametrize(("framework", "case"), CASES)
def test_rows_sum_to_stage_totals_and_explain_sums(framework, case):
    model, strategy = case
    if framework == "mindformers" and strategy.cp > 1:
        strategy = strategy.replace(sequence_parallel=False)
    res = estimate(model, strategy, A2, RunOptions(framework=framework), explain=True)
    for stage in res.stages:
        for k, cat in enumerate(CATEGORIES):
            assert sum(row.bytes[k] for row in stage.layers) == pytest.approx(stage.bytes_by_category[cat],
                                                                               rel=1e-12, abs=1e-6)
        assert stage.total == pytest.approx(sum(stage.bytes_by_category.values()), rel=1e-12)
        assert stage.explain is not None
        assert stage.explain.value == pytest.approx(stage.total, rel=1e-12)
        assert stage.explain.check() == []
    # the peak is every stage's largest instant, the optimizer step included (issue 10), and the headroom its margin
    assert res.peak_bytes == max(max(s.total, s.optimizer_step_peak) for s in res.stages)
    assert res.headroom == pytest.approx(res.budget - res.peak_bytes)
