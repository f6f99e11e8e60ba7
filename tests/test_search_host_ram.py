"""The search refuses offload plans whose host memory per node exceeds the node's RAM (issue 11, R-HOST), counted
per rule like the other refusals, and says so for the plan as opened."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from estimator.formats import parse
from estimator.search import SearchSpace, parse_dims, search
from estimator.search.report import render_search
from estimator.units import GiB

PLAN = Path(__file__).resolve().parent / "fixtures" / "offload" / "swap_7b.plan.yaml"  # swap_optimizer
H, L, F, V = 4096, 32, 11008, 32000
PARAMS = 2 * V * H + L * (4 * H * H + 3 * H * F + 2 * H) + H  # untied embedding and head, two norms a layer
RAM = 200 * GiB
DIMS = ["tp=1,2,4,8", "pp=1,2"]


@pytest.fixture(scope="module")
def plans():
    parsed = parse([PLAN])
    small = dataclasses.replace(parsed, hardware=parsed.hardware.replace(host_ram_per_node=RAM))
    return parsed, small


def _space(parsed) -> SearchSpace:
    st = parsed.strategy
    return SearchSpace(st.world_size, st.global_batch_size, parse_dims(DIMS), top_k=50)


def test_host_memory_per_node_is_twelve_bytes_per_parameter_of_the_stage(plans) -> None:
    """Hand count: tp 2, one stage, 8 devices per node → 12·P/2 per device, × 8 per node."""
    parsed, _small = plans
    full = search(parsed, _space(parsed))
    row = next(r for r in full.ranked if (r.strategy.tp, r.strategy.pp) == (2, 1))
    assert row.result.host.per_device == pytest.approx(12 * PARAMS / 2, rel=1e-3)
    assert row.result.host.per_node == pytest.approx(8 * 12 * PARAMS / 2, rel=1e-3)  # 301 GiB


def test_plans_over_the_node_ram_are_refused_by_rule(plans) -> None:
    parsed, small = plans
    full = search(parsed, _space(parsed))    # the preset's 2 TiB: every device-fitting plan fits the host
    assert "R-HOST" not in full.refusals
    over = [r for r in full.ranked if r.result.host.per_node > RAM]
    assert {(r.strategy.tp, r.strategy.pp) for r in over} == {(1, 2), (2, 1)}  # hand count: 12·P/(t·p)·8 > 200 GiB
    result = search(small, _space(small))
    assert result.refusals["R-HOST"] == len(over)
    assert result.refusals.get("R-MEM") == full.refusals.get("R-MEM")  # the device rule counts as before
    assert result.fitting == full.fitting - len(over)
    assert all(r.result.host.per_node <= RAM for r in result.ranked)
    assert all((r.strategy.tp, r.strategy.pp) not in {(1, 2), (2, 1)} for r in [*result.ranked, *result.pareto])
    example = str(result.examples["R-HOST"])
    assert example.startswith("R-HOST: ") and "exceeds the node's 200.00 GiB of RAM" in example
    assert result.to_dict()["examples"]["R-HOST"] == example
    assert result.examples["R-HOST"].render("zh_CN").endswith("超过了节点的 200.00 GiB 内存")
    text = render_search(small, _space(small), result)
    assert "R-HOST" in text


def test_the_plan_as_opened_over_the_host_ram_is_said(plans) -> None:
    _parsed, small = plans
    plan = dataclasses.replace(small, strategy=small.strategy.replace(dp=4, tp=2, micro_batches=16))
    result = search(plan, SearchSpace(8, plan.strategy.global_batch_size, parse_dims(["tp=2,4"]), top_k=10))
    current = result.current
    assert current is not None and not current.fits and current.rank is None
    assert current.row.peak_bytes <= result.budget  # it fits the device: the host RAM refuses it
    assert "does not fit the node's host RAM" in render_search(plan, _space(plan), result)
