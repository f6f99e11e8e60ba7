"""The same pricing code evaluated with numpy arrays of degrees equals the scalar estimate for every
candidate (issue 2: every formula accepts numbers or arrays; docs/model.md#stage-assembly consistency)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from reference_models import DEEPSEEK_V3, LLAMA3_70B

from estimator import ModelSpec, RecomputePlan, RunOptions, ShardingSpec, Strategy, StrategyError, estimate, find_preset
from estimator.estimate import layout_inputs
from estimator.layout import build_layout
from estimator.resolve import resolve
from estimator.result import CATEGORIES
from estimator.vector import price_group, stack_par, with_par

H100 = find_preset("H100-80G")
DENSE, MOE = LLAMA3_70B, DEEPSEEK_V3


def candidates(model: ModelSpec, base: Strategy, framework: str) -> list[Strategy]:
    """Strategies of one layout group: same pp/vpp/m/schedule/recompute, varying the other degrees."""
    out = []
    for tp, cp, sp, ep, mbs, m in itertools.product((1, 2, 4, 8), (1, 2), (False, True), (1, 2, 8), (1, 2),
                                                    (base.micro_batches, 2 * base.micro_batches)):
        if (sp and tp == 1) or (ep > 1 and not model.is_moe) or (framework == "mindformers" and sp and cp > 1):
            continue
        if framework in ("megatron", "mindspeed") and model.is_moe and tp > 1 and not sp:
            continue
        dp = 64 // (tp * cp * base.pp)
        if dp < 1 or (dp * tp * cp) % ep:
            continue
        out.append(base.replace(tp=tp, cp=cp, sequence_parallel=sp, ep=ep, dp=dp, micro_batch_size=mbs,
                                micro_batches=m))
    return out


CASES = [
    ("megatron", DENSE, Strategy(seq_length=4096, pp=4, micro_batches=8, sharding=ShardingSpec(mode="zero1"),
                                 recompute=RecomputePlan(default_mode="selective"))),
    ("mindformers", MOE, Strategy(seq_length=4096, pp=8, micro_batches=16, mtp_in_offset=True,
                                  sharding=ShardingSpec(mode="mf_op"), recompute=RecomputePlan(full_counts=(2,) * 8))),
    ("torchtitan", DENSE, Strategy(seq_length=8192, pp=2, vpp=2, micro_batches=4, sharding=ShardingSpec(mode="fsdp"),
                                   recompute=RecomputePlan(default_mode="full"))),
    ("hyperparallel", MOE, Strategy(seq_length=4096, pp=1, micro_batches=2, sharding=ShardingSpec(mode="fsdp"))),
    ("mindspeed", MOE, Strategy(seq_length=4096, pp=4, micro_batches=8, schedule="gpipe",
                                sharding=ShardingSpec(mode="zero1"))),
]


@pytest.mark.parametrize(("framework", "model", "base"), CASES, ids=[c[0] for c in CASES])
def test_vector_equals_scalar(framework, model, base):
    # arrays price the allocator slack by a ratio (P-SLACK-RATIO), one plan replays it: stated, both price alike
    options = RunOptions(framework=framework, allocator_slack_ratio=0.125)
    strategies, scalars = [], []
    for st in candidates(model, base, framework):
        try:
            scalars.append(estimate(model, st, H100, options))
        except StrategyError:
            continue
        strategies.append(st)
    assert len(strategies) >= 10
    resolved = [resolve(model, st, H100, options) for st in strategies]
    layout = build_layout(layout_inputs(resolved[0]))
    vec = price_group(with_par(resolved[0], stack_par([r.par for r in resolved])), layout)
    for c, (st, scalar) in enumerate(zip(strategies, scalars, strict=True)):
        for i, stage in enumerate(scalar.stages):
            for key in CATEGORIES:
                assert abs(vec[key][i, c] - stage.bytes_by_category[key]) <= 1.0, (st, i, key)
            assert abs(vec["total"][i, c] - stage.total) <= 1.0
            assert abs(vec["optimizer_step_peak"][i, c] - stage.optimizer_step_peak) <= 1.0
    assert np.isfinite(vec["total"]).all()
