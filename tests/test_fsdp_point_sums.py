"""Every replay point's Σ_i n_i·A_chunk(i) of one plan's stages made at once (``fsdp_points.point_sums``, read by
``fsdp._one_peak`` through ``kept_sums``) equals each point's sum made alone (``one_sum``: 0 + n_0·a_0 + n_1·a_1 +
…, in order) to the bit, on drawn points and A_chunk and on Llama-3-70B's stages; estimates (Explain included)
with the sums made at once equal those made point by point, on Llama-3-70B and the bundled FSDP2 examples under
drawn plans. Seeded faults — the chunks summed in another order, one stage's sums given to another — fail the
comparison."""

from __future__ import annotations

import importlib
import json
import random
from pathlib import Path

import pytest
from edit_sequences import drawn_strategies
from scripted_session import config_sets, opened_plan

from estimator import fsdp, fsdp_points, reuse
from estimator.assembly import Point, stage_chunks, stage_form
from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.formats import parse

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "benchmarks" / "inputs" / "llama3_70b_torchtitan_pp8_vpp5.plan.yaml"  # FSDP2, pp 8 × vpp 5

pytestmark = pytest.mark.usefixtures("nothing_kept")


def _drawn(rng: random.Random, stages: int, width: int) -> tuple[list[list[Point]], list[list[float]]]:
    """Points lists (17 points each, as interleaved 1F1B's) and A_chunk of mixed magnitudes, so that the order of
    the additions shows in the last bits."""
    points = [[Point(tuple(rng.choice([0, 1, 2, 3, 7, 16]) for _ in range(width)), rng.randrange(width))
               for _ in range(17)] for _ in range(stages)]
    acts = [[rng.choice([1.0, 1e9, 3e11]) * rng.random() + rng.random() for _ in range(width)] for _ in range(stages)]
    return points, acts


def _mismatches(memo: dict, points, acts) -> int:
    out = 0
    for pts, act in zip(points, acts, strict=True):
        got = fsdp_points.kept_sums(memo, pts, act)
        assert got is not None
        want = [fsdp_points.one_sum(pt.counts, act) for pt in pts]
        out += sum(repr(a) != repr(b) or type(a) is not type(b) for a, b in zip(got, want, strict=True))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_sums_at_once_equal_each_points_sum(seed):
    points, acts = _drawn(random.Random(seed), 8, 5)
    memo: dict = {}
    fsdp_points.point_sums(memo, points, acts)
    assert _mismatches(memo, points, acts) == 0


def test_a_seeded_fault_fails_the_comparison(monkeypatch):
    """The chunks summed last to first, or each stage handed the next stage's sums, differ from the point sums."""
    points, acts = _drawn(random.Random(11), 8, 5)
    real = fsdp_points._stack

    def reversed_chunks(pts):
        columns, lengths, starts = real(pts)
        return columns[::-1], lengths, starts

    def shifted(pts):
        columns, lengths, starts = real(pts)
        return columns, lengths, [*starts[1:], starts[-1] + 17]

    for fault, given in ((reversed_chunks, [a[::-1] for a in acts]), (shifted, acts)):
        monkeypatch.setattr(fsdp_points, "_stack", fault)
        memo: dict = {}
        fsdp_points.point_sums(memo, points, given)
        monkeypatch.undo()
        differ = 0
        for pts, act in zip(points, acts, strict=True):
            made = memo[(fsdp_points.POINT_SUMS, id(pts))][2]
            want = [fsdp_points.one_sum(pt.counts, act) for pt in pts]
            differ += len(made) != len(want) or any(repr(a) != repr(b) for a, b in zip(made, want, strict=False))
        assert differ > 0


def test_sums_made_with_other_a_chunk_are_not_read():
    """A stage sharing another's points list with its own A_chunk (other float objects) sums point by point."""
    points, acts = _drawn(random.Random(3), 2, 5)
    memo: dict = {}
    fsdp_points.point_sums(memo, points, acts)
    assert fsdp_points.kept_sums(memo, points[0], list(acts[0])) is not None  # the same floats, another list
    assert fsdp_points.kept_sums(memo, points[0], acts[1]) is None
    assert fsdp_points.kept_sums(memo, points[0], acts[0][:4]) is None
    few: dict = {}
    fsdp_points.point_sums(few, [points[0][:5], points[1][:5]], acts)  # fewer than AT_ONCE_POINTS: none made
    assert not few


def test_llama_stages_sums_equal_each_points_sum(monkeypatch):
    """Llama-3-70B's own stages: their A_chunk and interleaved 1F1B replay points, after a recompute edit too."""
    module = importlib.import_module("estimator.estimate")
    seen = []
    real = module.price_stages

    def kept(pricer, points, explain):
        seen.append((pricer, points))
        return real(pricer, points, explain)

    monkeypatch.setattr(module, "price_stages", kept)
    plan = parse([str(LLAMA)])
    for st in (plan.strategy, _recompute_edit(plan)):
        estimate(plan.model, st, plan.hardware, plan.options)
    assert len(seen) == 2
    for pricer, points in seen:
        acts = [[c.act for c in stage_chunks(pricer, stage_form(pricer, i))] for i in range(len(points))]
        memo: dict = {}
        fsdp_points.point_sums(memo, points, acts)
        assert sum(map(len, points)) >= fsdp_points.AT_ONCE_POINTS
        assert _mismatches(memo, points, acts) == 0


def _recompute_edit(plan):
    from estimator.session import PlanSession

    session = PlanSession()
    session.open([str(LLAMA)])
    session.apply(session.recompute_changes(mode="selective"), "recompute")
    return session.parsed.strategy


def _texts(plan, strategies, explain: bool) -> list[str]:
    out = []
    for st in strategies:
        reuse.forget()  # nothing kept between the two ways
        try:
            result = estimate(plan.model, st, plan.hardware, plan.options, explain=explain)
            out.append(json.dumps(result.to_dict(), sort_keys=True, default=repr))
        except SappError as exc:
            out.append(f"refused: {exc}")
    return out


def _fsdp2(parsed) -> bool:
    try:
        return reuse.resolved(parsed.model, parsed.strategy, parsed.hardware, parsed.options).flags.fsdp2
    except SappError:
        return False


@pytest.mark.parametrize("seed", [4, 2026])
def test_estimates_with_sums_at_once_equal_point_by_point(seed, monkeypatch):
    rng = random.Random(seed)
    bundled = [p for p in (opened_plan(files, args) for _n, files, args in config_sets(None)) if p is not None]
    plans = [parse([str(LLAMA)])] + [p for p in bundled if _fsdp2(p)]
    read = []
    real = fsdp.kept_sums

    def counted(memo, points, act_chunk):
        got = real(memo, points, act_chunk)
        read.append(got is not None)
        return got

    for plan in plans:
        drawn = [plan.strategy, _recompute_edit(plan) if plan is plans[0] else plan.strategy,
                 *drawn_strategies(plan, rng, 3)]
        for explain in (False, True):
            monkeypatch.setattr(fsdp, "kept_sums", counted)
            quick = _texts(plan, drawn, explain)
            monkeypatch.setattr(fsdp, "kept_sums", lambda memo, points, act_chunk: None)
            plain = _texts(plan, drawn, explain)
            monkeypatch.undo()
            assert quick == plain
    assert sum(read) >= 16  # the sums made at once were read
