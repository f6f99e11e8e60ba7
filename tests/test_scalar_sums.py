"""One plan's chunk sums go through ``chunks._scalar_sums``, arrays (a search's candidates, stacked forms) through
``chunks._array_sums``: the two must give the same sums to the last bit and in type, the same walk position and
transient key, for every branch the numbers take (walk positions of rows and of uniform full-recompute groups, V
schedules, the upstream buffer sum, foreach and for-loop optimizers, the dataloader's mask, offloaded
activations). A plan's stages priced at once share a host-bytes dict per stage form and offloaded bytes, and a
stage sharing its neighbour's dict shares its host record (``host.host_memory``): each equal to the record made of
the stage alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_chunk_sums import _same as chunk_sums_same

from estimator import ModelSpec, RecomputePlan, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from estimator.assembly.chunks import _array_sums, _row_values, _scalar_sums, form_sums
from estimator.assembly.form import stack_forms, stage_plan
from estimator.formats import parse
from estimator.host import _host_stage
from estimator.layout import build_layout, layout_inputs
from estimator.resolve import resolve
from estimator.stage import StagePricer

ROOT = Path(__file__).resolve().parents[1]
H100 = find_preset("H100-80G")
DENSE = ModelSpec(name="llama3-8b", hidden_size=4096, num_layers=12, num_attention_heads=32, num_kv_heads=8,
                  ffn_hidden_size=14336, vocab_size=128256)
MOE = ModelSpec(name="deepseek-v3", hidden_size=7168, num_layers=27, first_k_dense=3, ffn_hidden_size=18432,
                num_attention_heads=128, q_lora_rank=1536, kv_lora_rank=512, head_dim=128, qk_rope_head_dim=64,
                v_head_dim=128, num_experts=64, experts_per_token=6, num_shared_experts=1, moe_ffn_hidden_size=2048,
                vocab_size=129280, mtp_layers=1)
MEGA = RunOptions(framework="megatron", allocator_slack_ratio=0.09)
CASES = {
    "uniform groups, foreach": (DENSE, Strategy(seq_length=4096, tp=2, pp=4, vpp=2, dp=2, micro_batches=8,
                                                recompute=RecomputePlan(default_mode="full", uniform_group=2)),
                                RunOptions(framework="megatron", optimizer_impl="foreach",
                                           allocator_slack_ratio=0.09)),
    "upstream sum, for-loop, mask": (DENSE, Strategy(seq_length=4096, tp=2, pp=2, dp=2, cp=2, micro_batches=4,
                                                     sharding=ShardingSpec(mode="zero3")),
                                     RunOptions(framework="megatron", comm_buffer_mode="upstream_sum",
                                                optimizer_impl="forloop", dataloader_mask=True,
                                                allocator_slack_ratio=0.09)),
    "zbv MoE": (MOE, Strategy(seq_length=4096, tp=2, pp=2, vpp=2, dp=4, ep=4, micro_batches=8, schedule="zbv",
                              mtp_in_offset=True, sharding=ShardingSpec(mode="mf_op"),
                              recompute=RecomputePlan(full_counts=(2, 1))), RunOptions(framework="mindformers")),
    "offload+swap": (DENSE, Strategy(seq_length=4096, tp=2, pp=4, dp=2, micro_batches=8,
                                     offload_activations=("layer",), swap_optimizer=True,
                                     sharding=ShardingSpec(mode="zero1")), MEGA),
}


def _pricers() -> list[tuple[str, StagePricer]]:
    out = []
    for name, (model, st, opts) in CASES.items():
        r = resolve(model, st, H100, opts)
        out.append((name, StagePricer(r, build_layout(layout_inputs(r)))))
    for name in ("deepseek_v3_671b_mindformers", "llama3_70b_torchtitan_pp8_vpp5"):
        parsed = parse([str(ROOT / "benchmarks" / "inputs" / f"{name}.plan.yaml")])
        r = resolve(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
        out.append((name, StagePricer(r, build_layout(layout_inputs(r)))))
    return out


PRICERS = _pricers()


def _same(got, want) -> None:
    chunk_sums_same(got, want, nan_equal=True)


FIELDS = ("rows", "step", "act", "work", "forward", "transient", "temps", "work_at", "transient_at", "offload", "host")


@pytest.mark.parametrize("case", PRICERS, ids=[c[0] for c in PRICERS])
def test_scalar_sums_equal_the_array_path(case):
    name, pricer = case
    plan = stage_plan(pricer.layout, pricer.r.dims.tie)
    forms = list({id(entry[0]): entry[0] for entry in plan}.values())
    seen = set()
    for form in forms:
        values = _row_values(pricer, form)
        assert all(v[-2] is True for v in values)  # one plan's numbers: the scalar path
        for j in range(form.vp):
            got, want = _scalar_sums(pricer, form, j, values), _array_sums(pricer, form, j, values)
            for field in FIELDS:
                _same(getattr(got, field), getattr(want, field))
            assert form_sums(pricer, form, (j,)) == [want]
            for t, term in enumerate(form.walks[j]):  # each walk position alone: its need, not only the largest
                alone = replace(form, walks=tuple((term,) if i == j else w for i, w in enumerate(form.walks)))
                one, other = _scalar_sums(pricer, alone, j, values), _array_sums(pricer, alone, j, values)
                _same(one.work, other.work)
                _same(one.work_at, other.work_at)
                seen.add(("position", t, one.work_at == 0))
            seen.update(("group" if term.group_none else "row") for term in form.walks[j])
            seen.add(("work_at", got.work_at >= 0 or got.work_at == -2))
    if name.startswith("uniform"):
        assert "group" in seen  # the walk's uniform-group positions were compared
    assert ("work_at", True) in seen


def test_stacked_forms_take_the_array_path():
    """Stacked forms (the balancer's table rows) have array counts: ``form_sums`` must not take the scalar path."""
    _name, pricer = PRICERS[-2]
    forms = [entry[0] for entry in stage_plan(pricer.layout, pricer.r.dims.tie)]
    stacked = stack_forms(forms)
    got = form_sums(pricer, stacked)
    want = [_array_sums(pricer, stacked, j, _row_values(pricer, stacked)) for j in range(stacked.vp)]
    for g, w in zip(got, want, strict=True):
        for field in FIELDS:
            _same(getattr(g, field), getattr(w, field))
    assert isinstance(got[0].act, np.ndarray)


@pytest.mark.parametrize("name", ["deepseek_v3_671b_mindformers", "offload"])
def test_host_records_shared_per_host_dict(name):
    if name == "offload":
        model, st, opts = CASES["offload+swap"]
        result = estimate(model, st, H100, opts)
    else:
        parsed = parse([str(ROOT / "benchmarks" / "inputs" / f"{name}.plan.yaml")])
        result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.host is not None
    for stage, record in zip(result.stages, result.host.stages, strict=True):
        assert record == _host_stage(stage)
    for a, b in zip(result.stages, result.stages[1:], strict=False):
        same = a.host_bytes is b.host_bytes
        assert (result.host.stages[a.index] is result.host.stages[b.index]) == same
    if name != "offload":  # a plan priced at once: the stages of one form and offloaded bytes share the dict
        assert len({id(s.host_bytes) for s in result.stages}) < len(result.stages)
