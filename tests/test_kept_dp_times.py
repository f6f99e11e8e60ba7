"""Kept across estimates per what they read, by value and type: the step time's DP collectives
(``dptime.stage_dp``: ``dp_reads`` and the stage's elements), a plan's links (``comm.plan_links``, per device by the
degrees they are made of), a rank's communicators (``communicators.rank_groups``) and its library workspaces
(``workspaces.library_workspaces``). Every estimate of an edit sequence, and of plans that differ in one field the
keys read, equals one made with nothing kept; a key missing what it reads fails these checks (the seeded faults
below)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from edit_sequences import walk
from test_reuse import _nothing_kept, _text

from estimator import (
    ModelSpec,
    RecomputePlan,
    RunOptions,
    ShardingSpec,
    Strategy,
    comm,
    dptime,
    estimate,
    find_preset,
    rowtime,
    steptime,
)
from estimator.device import communicators, workspaces
from estimator.session import PlanSession

ROOT = Path(__file__).resolve().parents[1]
H100 = find_preset("H100-80G")
MOE = ModelSpec(name="moe", hidden_size=2048, num_layers=8, num_attention_heads=16, num_kv_heads=4,
                ffn_hidden_size=5632, vocab_size=32000, num_experts=16, experts_per_token=2, moe_ffn_hidden_size=1024,
                first_k_dense=1)
BASE = Strategy(seq_length=4096, tp=2, pp=2, dp=2, ep=2, micro_batches=4, sharding=ShardingSpec(mode="zero1"),
                recompute=RecomputePlan(default_mode="selective"), sequence_parallel=True)
# each differs from the one before in what the DP times or the links read, not always in the stages' elements
PLANS = [(BASE, "megatron"), (replace(BASE, dp=4), "megatron"), (replace(BASE, dp=4, cp=2), "megatron"),
         (replace(BASE, dp=4, sharding=ShardingSpec(mode="zero3")), "megatron"),
         (replace(BASE, dp=4, sharding=ShardingSpec(mode="none")), "megatron"),
         (replace(BASE, dp=4, sharding=ShardingSpec(mode="fsdp")), "torchtitan"), (replace(BASE, dp=4), "torchtitan"),
         (BASE, "mindformers"), (replace(BASE, dp=8), "mindformers"), (replace(BASE, tp=4), "mindformers"),
         (replace(BASE, pp=4), "megatron")]  # end stages with one pipeline neighbour, the others with two
SEQUENCE = ("tp", "undo", "pp", "rec", "undo", "tp", "m", "undo", "undo", "undo", "rec", "tp", "pp")


@pytest.fixture(autouse=True)
def _nothing_kept_around(nothing_kept, monkeypatch):
    _no_kept_terms(monkeypatch)


def _no_kept_terms(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(dptime, "_DP", {})
    patch.setattr(rowtime, "_DEVICES", {})
    patch.setattr(communicators, "_GROUPS", {})
    patch.setattr(workspaces, "_KEPT", {})


def _cold(patch: pytest.MonkeyPatch, make: Callable[[], object]) -> str:
    """``make()``'s result with nothing kept, the kept parts untouched for the next estimate."""
    with patch.context() as empty:
        _nothing_kept(empty)
        _no_kept_terms(empty)
        # and none kept within the estimate either: each made by its own function
        empty.setattr(dptime, "dp_reads", lambda ctx: None)
        empty.setattr(comm, "plan_links", comm._plan_links)
        empty.setattr(communicators, "_groups_reads", lambda r, stage: None)
        empty.setattr(workspaces, "_reads", lambda r: None)
        return _text(make())


def _sequence_differs(path: str, patch: pytest.MonkeyPatch) -> list[str]:
    session = PlanSession()
    session.open([ROOT / path])
    out = []
    for kind, p in walk(session, SEQUENCE):
        def make(p=p):
            return estimate(p.model, p.strategy, p.hardware, p.options)
        if _text(make()) != _cold(patch, make):
            out.append(kind)
    return out


def _plans_differ(patch: pytest.MonkeyPatch) -> list[int]:
    out = []
    for i, (strategy, framework) in enumerate(PLANS):
        def make(strategy=strategy, framework=framework):
            return estimate(MOE, strategy, H100, RunOptions(framework=framework))
        if _text(make()) != _cold(patch, make):
            out.append(i)
    return out


@pytest.mark.parametrize("path", ["benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml",
                                  "benchmarks/inputs/llama3_70b_torchtitan_pp8_vpp5.plan.yaml",
                                  "resources/examples/mindformers_qwen3_32b.yaml"])
def test_an_edit_sequence_equals_estimates_with_no_dp_times_or_links_kept(path, monkeypatch):
    assert _sequence_differs(path, monkeypatch) == []


def test_plans_one_field_apart_equal_estimates_with_no_dp_times_or_links_kept(monkeypatch):
    assert _plans_differ(monkeypatch) == []
    # kept, per what each reads
    assert len(dptime._DP) > 1 and len(communicators._GROUPS) > 1 and len(workspaces._KEPT) > 1


def test_a_dp_key_without_the_links_fails_the_checks(monkeypatch):
    made = dptime.dp_reads

    def without_links(ctx):
        reads = made(ctx)
        return None if reads is None else reads[:7]

    monkeypatch.setattr(dptime, "dp_reads", without_links)
    assert _plans_differ(monkeypatch) != []


def test_a_dp_key_without_the_sharding_mode_fails_the_checks(monkeypatch):
    made = dptime.dp_reads

    def without_mode(ctx):
        reads = made(ctx)
        return None if reads is None else reads[1:]

    monkeypatch.setattr(dptime, "dp_reads", without_mode)
    assert _plans_differ(monkeypatch) != []


def test_a_links_key_without_the_data_parallel_degrees_fails_the_checks(monkeypatch):
    made = comm._plan_links

    def without_dp(table, hw, t, cp, u, ep, etp, p, d, D, stride, os, os_e, edp):
        key = ("links without d, D, os, edp", t, cp, u, ep, etp, p, stride, os_e)
        if key not in table:
            table[key] = made(table, hw, t, cp, u, ep, etp, p, d, D, stride, os, os_e, edp)
        return table[key]

    monkeypatch.setattr(comm, "plan_links", without_dp)
    assert _plans_differ(monkeypatch) != []


def test_a_groups_key_without_the_end_stage_fails_the_checks(monkeypatch):
    made = communicators._groups_reads

    def without_end(r, stage):
        reads = made(r, stage)
        return None if reads is None else reads[:-1]

    monkeypatch.setattr(communicators, "_groups_reads", without_end)
    assert _plans_differ(monkeypatch) != []


def test_a_workspaces_key_without_the_framework_fails_the_checks(monkeypatch):
    made = workspaces._reads

    def without_framework(r):
        reads = made(r)
        return None if reads is None else reads[:3] + reads[5:]

    monkeypatch.setattr(workspaces, "_reads", without_framework)
    assert _plans_differ(monkeypatch) != []


def test_a_dp_key_without_the_elements_values_fails_the_checks(monkeypatch):
    """The stage's elements enter ``_dp``'s key once per stage form (``StageSums.dp_key``, for the plan's device
    and the band's ends): a key of their types alone hands one stage's DP times to another."""
    made = steptime.elements_key

    def types_only(elements):
        key = made(elements)
        return None if key is None else key[-1:]

    monkeypatch.setattr(steptime, "elements_key", types_only)
    assert _plans_differ(monkeypatch) != []

