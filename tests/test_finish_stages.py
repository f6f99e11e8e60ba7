"""A replaying plan's stages priced by the replayed stages' ratio are finished at once over the array of their
stage indices (``memory.finish_stages``, ``assembly.price_finished_stages``): every field, type, note, label and
per-layer row (made on demand, ``memory.terms_again``) equals each stage finished alone, on Llama-3-70B, the
bundled replaying examples and drawn plans; a seeded fault (two stages' results swapped) fails the comparison."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
from edit_sequences import drawn_strategies
from scripted_session import config_sets, opened_plan

from estimator import assembly, reuse
from estimator.assembly import memory
from estimator.device.memory import replays_allocator
from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.formats import parse
from estimator.result import StageResult

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "benchmarks" / "inputs" / "llama3_70b_torchtitan_pp8_vpp5.plan.yaml"
FIELDS = [f.name for f in dataclasses.fields(StageResult) if f.name not in ("layer_source", "explain")]

pytestmark = pytest.mark.usefixtures("nothing_kept")


def _replaying() -> list:
    out = [parse([str(LLAMA)])]
    for _name, files, args in config_sets(None):
        plan = opened_plan(files, args)
        if plan is None:
            continue
        try:
            if replays_allocator(reuse.resolved(plan.model, plan.strategy, plan.hardware, plan.options)):
                out.append(plan)
        except SappError:
            continue
    return out


def _said(result) -> list:
    """Every field of every stage with its type, its per-layer rows and their notes, and the whole as JSON."""
    out = []
    for s in result.stages:
        for name in FIELDS:
            value = getattr(s, name)
            out.append((name, repr(value), type(value)))
            if isinstance(value, dict):
                out.append((name, [(k, type(v)) for k, v in value.items()]))
        out.append((repr(s.layers), [row.note for row in s.layers]))
    out.append(json.dumps(result.to_dict(), sort_keys=True, default=repr))
    return out


def _estimates(plan, strategies) -> list:
    out = []
    for st in strategies:
        reuse.forget()
        try:
            out.append(_said(estimate(plan.model, st, plan.hardware, plan.options)))
        except SappError as exc:
            out.append(f"refused: {exc}")
    return out


def _compare(monkeypatch, seed: int) -> tuple[int, int]:
    """(estimates differing, stages finished at once) over the plans and drawn strategies."""
    made = []
    real = memory._at_once
    monkeypatch.setattr(memory, "_at_once", lambda *a: made.append(len(a[1])) or real(*a))
    monkeypatch.setattr(memory, "AT_ONCE", 2)  # every array of two stages or more
    rng = random.Random(seed)
    differ = 0
    for plan in _replaying():
        drawn = [plan.strategy, *drawn_strategies(plan, rng, 5)]
        quick = _estimates(plan, drawn)
        with monkeypatch.context() as m:
            m.setattr(assembly, "price_finished_stages", lambda *a: None)
            plain = _estimates(plan, drawn)
        differ += sum(a != b for a, b in zip(quick, plain, strict=True))
    return differ, sum(made)


@pytest.mark.parametrize("seed", [7, 2026])
def test_stages_finished_at_once_equal_each_stage_alone(seed, monkeypatch):
    differ, made = _compare(monkeypatch, seed)
    assert differ == 0
    assert made >= 12


def test_a_seeded_fault_fails_the_comparison(monkeypatch):
    real = memory._at_once

    def swapped(pricer, stages, made):
        out = real(pricer, stages, made)
        return None if out is None else [out[1], out[0], *out[2:]]

    monkeypatch.setattr(memory, "_at_once", swapped)
    differ, made = _compare(monkeypatch, 7)
    assert made >= 12 and differ > 0
