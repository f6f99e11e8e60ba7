"""MindSpore's optimizer parallel at the optimizer step (D59) and MindFormers' replicated head (D58), each against
numbers derived by hand here.

D59: MindFormers publishes Llama2-13B pre-training on 8 devices (dp 8, optimizer parallel, fp16 weights, fp32
AdamW states, max_device_memory 58GB). Without an accumulation buffer each layer's gradient is reduce-scattered in
the backward and the all-gathered weights are dead once their layer's backward ran, so the step holds the shards
only; the estimate used to hold the gathered weights and the full gradients at the step (63.6 GiB, "does not fit").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator.estimate import estimate
from estimator.formats import parse
from estimator.resolve import t_head

FIXTURE = Path(__file__).parent / "fixtures" / "mindformers" / "llama2_13b_8p_parallel_optimizer.yaml"
GiB = 2**30

# Llama2-13B, by hand: h 5120, 40 layers, FFN 13,824 (8/3·h rounded up to 256), vocabulary 32,000, untied
H, L, FFN, V = 5120, 40, 13_824, 32_000
PER_LAYER = 4 * H * H + 3 * H * FFN + 2 * H
P = L * PER_LAYER + 2 * V * H + H


def test_the_parameter_count_is_llama2_13b() -> None:
    assert P == 13_015_864_320
    parsed = parse([str(FIXTURE)])
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.parameters_total == P


def test_optimizer_parallel_step_holds_shards_only() -> None:
    parsed = parse([str(FIXTURE)])
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    (stage,) = result.stages
    c = stage.bytes_by_category
    # forward/backward: the fp16 weights all-gathered and kept to the backward (comm recompute off), the sharded
    # fp16 weights and the fp32 states (2 × 4 B) over os = 8
    assert c["communication_buffers"] == pytest.approx(2 * P, rel=1e-6)
    assert c["parameters"] == pytest.approx(2 * P / 8, rel=1e-6)
    assert c["optimizer_states"] == pytest.approx(8 * P / 8, rel=1e-6)
    # the step: fp16 weight shard + fp16 gradient shard + fp32 states, all ÷ 8 (fused AdamW: no temporaries)
    outside = c["runtime_context"] + c["comm_library"] + c["reserve"]
    assert stage.optimizer_step_peak - outside == pytest.approx((2 + 2 + 8) * P / 8, rel=1e-6)
    # so the forward/backward decides, and the plan MindFormers ran fits its 58 GiB pool and the 64 GiB device
    assert stage.optimizer_step_peak < stage.total and result.limit == "peak"
    assert result.fits and stage.allocator_peak < 58 * GiB < stage.allocator_peak + 24 * GiB


def test_head_is_replicated_with_vocab_emb_dp() -> None:
    """D58 on a 2-way TP variant: the head v·h is not ÷ t, its FLOPs repeat on both TP ranks."""
    parsed = parse([str(FIXTURE)])
    strategy = parsed.strategy.replace(tp=2, dp=4)
    result = estimate(parsed.model, strategy, parsed.hardware, parsed.options)
    out = next(row for row in result.stages[0].layers if row.kind == "output")
    head = V * H + H  # + the final norm
    assert out.by_category()["parameters"] == pytest.approx(2 * head / 4, rel=1e-6)  # fp16, ÷ os 4 only
    unsplit = strategy.replace(vocab_emb_dp=False)
    split = estimate(parsed.model, unsplit, parsed.hardware, parsed.options)
    out_split = next(row for row in split.stages[0].layers if row.kind == "output")
    assert out_split.by_category()["parameters"] == pytest.approx(2 * (V * H / 2 + H) / 4, rel=1e-6)
    # the repeated head FLOPs cost time but are not model FLOPs: same model FLOPs, longer step
    assert result.step.model_flops_per_step == pytest.approx(split.step.model_flops_per_step, rel=1e-9)
    assert result.step_time_s > split.step_time_s


def test_t_head_rule() -> None:
    """MindFormers: vocab_emb_dp or a vocabulary that t does not divide replicates the head; others split it."""
    parsed = parse([str(FIXTURE)])
    from estimator.resolve import resolve

    r = resolve(parsed.model, parsed.strategy.replace(tp=2, dp=4, vocab_emb_dp=False), parsed.hardware,
                parsed.options)
    assert t_head(r.flags, r.dims, 2) == 2 and t_head(r.flags, r.dims, 3) == 1  # 32,000 % 3 ≠ 0
    megatron = resolve(parsed.model, parsed.strategy.replace(tp=2, dp=4), parsed.hardware,
                       parsed.options.replace(framework="megatron"))
    assert t_head(megatron.flags, megatron.dims, 2) == 2
