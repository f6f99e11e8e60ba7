"""The sixth session's quick ways for a replaying plan's stages (P-SCALAR-SPEED "Sixth session — FSDP2 stages")
say what the plain ones say, to the byte:

* ``fsdp._walk`` shares one walk among the chunks of a stage holding the same rows (its instants' ``focus``
  indexes the chunk's rows): estimates, Explain's instant names included, equal those made with every walk
  built anew for its own stage and chunk;
* ``device.stages._first_pass`` adds pass 1's stage terms once over the array of stages: its totals,
  optimizer-step peaks and dynamic bytes equal each stage finished alone (``_unslacked``), on Llama-3-70B, the
  bundled examples and generated plans;
* Explain's walks name the blocks of their own chunk."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from edit_sequences import drawn_strategies
from scripted_session import config_sets, opened_plan

from estimator import fsdp, reuse
from estimator.device import stages
from estimator.device.memory import replays_allocator
from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.formats import parse

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "benchmarks" / "inputs" / "llama3_70b_torchtitan_pp8_vpp5.plan.yaml"  # FSDP2, pp 8 × vpp 5, m 16

pytestmark = pytest.mark.usefixtures("nothing_kept")


def _text(result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True, default=repr)


def _bundled() -> list:
    return [p for p in (opened_plan(files, args) for _name, files, args in config_sets(None)) if p is not None]


def _texts(plan, strategies, explain: bool) -> list[str]:
    out = []
    for st in strategies:
        reuse.forget()  # nothing kept between the two ways
        try:
            out.append(_text(estimate(plan.model, st, plan.hardware, plan.options, explain=explain)))
        except SappError as exc:
            out.append(f"refused: {exc}")
    return out


def _unshared_walk(pricer, rows, j, signature, store, acc):
    """A walk built anew for its own stage and chunk, nothing kept or shared."""
    walk = fsdp._instants(pricer, rows, j, fsdp._stage(pricer, rows))
    return (*fsdp._best_instant(walk), walk)


def test_chunks_holding_the_same_rows_share_one_walk():
    plan = parse([str(LLAMA)])
    estimate(plan.model, plan.strategy, plan.hardware, plan.options)
    book = reuse.row_book(reuse.resolved(plan.model, plan.strategy, plan.hardware, plan.options))
    per_chunk = [v for k, v in book.shared.items() if isinstance(k, tuple) and k[0] == "fsdp-walk"]
    shared = [v for k, v in book.shared.items() if isinstance(k, tuple) and k[0] == "fsdp-chunk-walk"]
    assert len(shared) < len({(k[1], k[2]) for k in book.shared if isinstance(k, tuple) and k[0] == "fsdp-walk"})
    assert {id(v) for v in per_chunk} == {id(v) for v in shared}


@pytest.mark.parametrize("seed", [3, 2026])
def test_shared_walks_equal_walks_built_for_each_chunk(seed, monkeypatch):
    """Estimates and Explain (every instant of every walk, named with its chunk's layers) of Llama-3-70B and the
    bundled FSDP2 examples under drawn plans, against walks built anew for each stage and chunk."""
    rng = random.Random(seed)
    plans = [parse([str(LLAMA)])] + [p for p in _bundled() if _fsdp2(p)]
    assert len(plans) >= 3
    checked = 0
    for plan in plans:
        drawn = [plan.strategy, *drawn_strategies(plan, rng, 4)]
        for explain in (False, True):
            quick = _texts(plan, drawn, explain)
            monkeypatch.setattr(fsdp, "_walk", _unshared_walk)
            plain = _texts(plan, drawn, explain)
            monkeypatch.undo()
            assert quick == plain
            checked += sum(not t.startswith("refused") for t in quick)
    assert checked >= 20


@pytest.mark.parametrize("seed", range(3))
def test_explains_walks_name_the_blocks_of_their_chunk(seed):
    """Each walk Explain shows (one per backward chunk of the points, ascending) names only blocks its chunk
    holds, on every stage of Llama-3-70B under drawn replay points."""
    from estimator.assembly import Point, stage_chunks, stage_form
    from estimator.messages import Message
    from estimator.stage import StagePricer, stage_rows

    plan = parse([str(LLAMA)])
    r, layout = reuse.resolved_layout(plan.model, plan.strategy, plan.hardware, plan.options)
    pricer = StagePricer(r, layout, reuse.row_book(r))
    rng = random.Random(seed)
    vp = r.par.vp
    named = 0
    for stage in range(r.par.p):
        rows = stage_rows(pricer, stage)
        acts = [c.act for c in stage_chunks(pricer, stage_form(pricer, stage))]
        points = [Point(tuple(rng.choice([0, 1, 2, 8]) for _ in range(vp)), rng.randrange(vp)) for _ in range(5)]
        peak = fsdp.peak_instant(pricer, rows, acts, points, explain=True)
        for j, (_a_h, walk, _where) in zip(sorted({pt.backward_chunk for pt in points}), peak.walks, strict=True):
            held = {row.item.index for row in rows if row.chunk == j}
            for inst in walk:
                block = dict(inst.name.params).get("block") if isinstance(inst.name, Message) else None
                if block is not None:
                    assert block in held
                    named += 1
    assert named >= 40


def _fsdp2(parsed) -> bool:
    try:
        return reuse.resolved(parsed.model, parsed.strategy, parsed.hardware, parsed.options).flags.fsdp2
    except SappError:
        return False


def _checked_first_pass(monkeypatch) -> list[int]:
    """Every pass 1 of the estimates that follow, checked against each stage finished alone."""
    real = stages._first_pass
    seen: list[int] = []

    def both(pricer, points):
        quick = real(pricer, points)
        plain = [stages._what_pass_1_reads(stages._unslacked(pricer, i, points[i])) for i in range(len(points))]
        assert repr(quick) == repr(plain)
        seen.append(len(points))
        return quick

    monkeypatch.setattr(stages, "_first_pass", both)
    return seen


@pytest.mark.parametrize("seed", [5, 14])
def test_first_pass_over_the_array_of_stages_equals_each_stage_alone(seed, monkeypatch):
    seen = _checked_first_pass(monkeypatch)
    rng = random.Random(seed)
    plans = [parse([str(LLAMA)])] + [p for p in _bundled() if _replays(p)]
    assert len(plans) >= 3
    for plan in plans:
        for st in [plan.strategy, *drawn_strategies(plan, rng, 6)]:
            try:
                estimate(plan.model, st, plan.hardware, plan.options)
            except SappError:
                continue
    assert len(seen) >= 8 and max(seen) >= 8


def _replays(parsed) -> bool:
    try:
        return replays_allocator(reuse.resolved(parsed.model, parsed.strategy, parsed.hardware, parsed.options))
    except SappError:
        return False


def test_the_array_of_stages_refuses_a_replayed_stage():
    """A replayed stage's slack is priced stage by stage: an array of stages holding one is refused."""
    import numpy as np

    from estimator.assembly.memory import add_stage_terms
    from estimator.assembly.terms import process_groups
    from estimator.device.stage_terms import REPLAYED, STAGE_RATIO
    from estimator.result import CATEGORIES
    from estimator.stage import StagePricer

    plan = parse([str(LLAMA)])
    r, layout = reuse.resolved_layout(plan.model, plan.strategy, plan.hardware, plan.options)
    pricer = StagePricer(r, layout, reuse.row_book(r))
    index = np.arange(r.par.p)
    cat = {name: np.ones(len(index)) for name in CATEGORIES}
    pricer.memo[STAGE_RATIO] = None
    pricer.memo[REPLAYED] = frozenset()
    total, _step, _views = add_stage_terms(pricer, index, dict(cat), process_groups(r, index, pricer.memo))
    assert total.shape == index.shape
    pricer.memo[REPLAYED] = frozenset({3})
    with pytest.raises(ValueError, match="stage by stage"):
        add_stage_terms(pricer, index, dict(cat), process_groups(r, index, pricer.memo))
