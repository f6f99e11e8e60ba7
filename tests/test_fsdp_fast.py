"""The quick ways of an FSDP2 estimate (P-SCALAR-SPEED "Fifth session — FSDP2 stages") say what the general ones
say, to the byte: ``fsdp._one_peak`` (one plan's largest instant in one pass over the points) against
``peak_instant``'s general path, ``fsdp._best_instant``'s plain loop against the rule it replaces, ``fsdp._instant``
against ``Instant(...)``, ``stage.stage_rows`` (the layout's entries listed once, ``layout_entries``) against rows
built from ``stage_entries``, and the kept trace of a stage (``device.memory.stage_events``: its key hashed once,
found again in the pricer's memo) against one built anew — on the bundled examples, the real FSDP2 configs (with
../shared) and generated plans."""

from __future__ import annotations

import dataclasses
import json
import pickle
import random
from pathlib import Path

import pytest
from edit_sequences import drawn_strategies
from scripted_session import config_sets, opened_plan

from estimator import fsdp, reuse
from estimator.arr import argmax_first
from estimator.device import memory
from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.formats import parse
from estimator.stage import Row, StagePricer, stage_rows
from estimator.stage_entries import layout_entries, stage_entries

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "benchmarks" / "inputs" / "llama3_70b_torchtitan_pp8_vpp5.plan.yaml"  # FSDP2, pp 8 × vpp 5, m 16
BUNDLED = list(config_sets(None))
PEAK = fsdp.peak_instant  # the real one (``_checked`` wraps the module's)


pytestmark = pytest.mark.usefixtures("nothing_kept")


def _text(result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True, default=repr)


def _general(pricer, rows, act_chunk, points, explain=False):
    """``peak_instant`` by its general path (the one the search and the balancer take)."""
    quick = fsdp._one_peak
    fsdp._one_peak = lambda *_a, **_k: None
    try:
        return PEAK(pricer, rows, act_chunk, points, explain)
    finally:
        fsdp._one_peak = quick


def _checked(monkeypatch) -> list[int]:
    """Every stage's ``peak_instant`` of the estimates that follow, checked against the general path."""
    real = PEAK
    seen: list[int] = []

    def both(pricer, rows, act_chunk, points, explain=False):
        quick = real(pricer, rows, act_chunk, points, explain)
        general = _general(pricer, rows, act_chunk, points, explain)
        assert quick == general and repr(quick) == repr(general)
        assert [type(x) for x in dataclasses.astuple(quick.best)] == \
            [type(x) for x in dataclasses.astuple(general.best)]
        seen.append(len(points))
        return quick

    monkeypatch.setattr(fsdp, "peak_instant", both)
    return seen


def _estimates(parsed, strategies) -> int:
    priced = 0
    for st in strategies:
        try:
            estimate(parsed.model, st, parsed.hardware, parsed.options)
        except SappError:
            continue  # a plan the rules refuse has no stages
        priced += 1
    return priced


def _fsdp2(parsed) -> bool:
    try:
        return reuse.resolved(parsed.model, parsed.strategy, parsed.hardware, parsed.options).flags.fsdp2
    except SappError:
        return False


def test_one_peak_equals_the_general_path_on_the_bundled_fsdp2_examples(monkeypatch):
    seen = _checked(monkeypatch)
    plans = [p for p in (opened_plan(files, args) for _name, files, args in BUNDLED) if p is not None and _fsdp2(p)]
    assert len(plans) >= 3
    for parsed in plans:
        _estimates(parsed, [parsed.strategy])
    assert len(seen) >= len(plans)  # (one stage each: the generated plans draw pipelines over them)


def test_one_peak_equals_the_general_path_on_the_real_fsdp2_configs(shared_dir, monkeypatch):
    seen = _checked(monkeypatch)
    bundled = {b[0] for b in BUNDLED}
    plans = [p for p in (opened_plan(files, args) for name, files, args in config_sets(shared_dir)
                         if name not in bundled) if p is not None and _fsdp2(p)]
    assert len(plans) >= 5
    for parsed in plans:
        _estimates(parsed, [parsed.strategy])
    assert len(seen) >= 20


@pytest.mark.parametrize("seed", [5, 14])
def test_one_peak_equals_the_general_path_on_generated_plans(seed, monkeypatch):
    """Llama-3-70B and the bundled FSDP2 examples under drawn degrees, chunk counts, micro-batch counts and
    recompute modes: every stage's largest instant by both paths."""
    seen = _checked(monkeypatch)
    bundled = [p for p in (opened_plan(files, args) for _name, files, args in BUNDLED) if p is not None and _fsdp2(p)]
    rng = random.Random(seed)
    priced = 0
    for plan in [parse([str(LLAMA)]), *bundled]:
        priced += _estimates(plan, drawn_strategies(plan, rng, 8))
    assert priced >= 8
    assert len(seen) >= 30 and max(seen) > 1


def _pricer(parsed, strategy=None) -> StagePricer:
    from estimator.reuse import resolved_layout, row_book

    r, layout = resolved_layout(parsed.model, strategy or parsed.strategy, parsed.hardware, parsed.options)
    return StagePricer(r, layout, row_book(r))


@pytest.mark.parametrize("seed", range(4))
def test_one_peak_equals_the_general_path_on_drawn_points_with_ties(seed):
    """Drawn replay points — in-flight counts with many equal sums, every chunk's backward, one point or many — on
    each stage of Llama-3-70B, with the chunks' activations as priced and all equal (ties everywhere)."""
    from estimator.assembly import Point, stage_chunks, stage_form

    plan = parse([str(LLAMA)])
    pricer = _pricer(plan)
    rng = random.Random(seed)
    vp = pricer.r.par.vp
    for stage in range(pricer.r.par.p):
        rows = stage_rows(pricer, stage)
        priced = [c.act for c in stage_chunks(pricer, stage_form(pricer, stage))]
        for acts in (priced, [priced[0]] * vp, [float(rng.choice([1, 2])) for _ in range(vp)]):
            for _ in range(6):
                points = [Point(tuple(rng.choice([0, 1, 2, 8]) for _ in range(vp)), rng.randrange(vp))
                          for _ in range(rng.choice([1, 2, 5, 17]))]
                quick = fsdp.peak_instant(pricer, rows, acts, points)
                general = _general(pricer, rows, acts, points)
                assert quick == general and repr(quick) == repr(general)


def test_best_instant_is_the_first_largest_dynamic_sum():
    """The plain loop over numbers against the rule it replaces (argmax_first of Instant.dynamic, its fields)."""
    plan = parse([str(LLAMA)])
    pricer = _pricer(plan)
    walks = 0
    for stage in range(pricer.r.par.p):
        rows = stage_rows(pricer, stage)
        part = fsdp._stage(pricer, rows)
        for j in sorted({row.chunk for row in rows}):
            walk = fsdp._instants(pricer, rows, j, part)
            for instants in (walk, walk[:1], walk + walk, [walk[-1], *walk]):  # repeats: ties to the earliest
                fields, dynamic, k = fsdp._best_instant(instants)
                want = argmax_first([inst.dynamic for inst in instants])
                inst = instants[want]
                assert k == want and type(k) is int
                assert repr(dynamic) == repr(inst.dynamic)
                assert repr(fields) == repr((inst.gradients, inst.activations, inst.comm, inst.working))
            walks += 1
    assert walks >= pricer.r.par.p


def test_an_instant_made_quickly_is_an_instant():
    name = fsdp.BLOCK_A
    quick = fsdp._instant(name, 1.0, 2.5, 3, 4.0, 7)
    plain = fsdp.Instant(name, 1.0, 2.5, 3, 4.0, 7)
    assert quick == plain and repr(quick) == repr(plain) and hash(quick) == hash(plain)
    assert dataclasses.asdict(quick) == dataclasses.asdict(plain)
    assert dataclasses.replace(quick, focus=-1) == fsdp.Instant(name, 1.0, 2.5, 3, 4.0)
    assert pickle.loads(pickle.dumps(quick)) == plain
    assert fsdp._instant(name, 1.0, 2.5, 3, 4.0) == fsdp.Instant(name, 1.0, 2.5, 3, 4.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.gradients = 0.0  # type: ignore[misc]
    # every field of the dataclass is set (a new field must be added to ``_instant`` too)
    assert set(vars(quick)) == {f.name for f in dataclasses.fields(fsdp.Instant)}


@pytest.mark.parametrize("name,files,args", [*BUNDLED, ("llama", [LLAMA], {})],
                         ids=[*(b[0] for b in BUNDLED), "llama"])
def test_stage_rows_are_the_layouts_entries_priced(name, files, args):
    parsed = opened_plan(files, args)
    if parsed is None:
        pytest.skip("the session refuses it (another test's subject)")
    try:
        pricer = _pricer(parsed)
    except SappError:
        pytest.skip("the rules refuse it")
    kept = layout_entries(pricer.layout, pricer.r.dims.tie)
    assert layout_entries(pricer.layout, pricer.r.dims.tie) is kept
    assert kept == tuple(tuple(stage_entries(pricer.layout, i, pricer.r.dims.tie)) for i in range(pricer.layout.p))
    for stage in range(pricer.layout.p):
        want = [Row(e.item, e.chunk, pricer.cost(e.item, e.with_head), e.with_head)
                for e in stage_entries(pricer.layout, stage, pricer.r.dims.tie)]
        got = stage_rows(pricer, stage)
        assert got == want and all(type(row) is Row for row in got)
        assert all(a.cost is b.cost for a, b in zip(got, want, strict=True))
        got.clear()  # a caller's copy: the kept list stays
        assert stage_rows(pricer, stage) == want


def test_a_stage_trace_is_found_by_value_and_once_per_pricer(monkeypatch):
    """The kept trace's key is hashed once and equal by value (an equal operation order of another micro-batch
    count finds it); a pricer asks for its stage's trace once, then finds it in its memo."""
    from estimator.device.trace_key import say_trace_plan
    from estimator.device.workspaces import library_workspaces

    plan = parse([str(LLAMA)])
    st = plan.strategy
    estimate(plan.model, st, plan.hardware, plan.options)
    keys = list(memory._EVENTS)
    assert keys
    for key in keys:
        assert hash(key) == hash((*key.parts[:3], hash(key.parts[3])))
    edited = st.replace(micro_batches=2 * st.micro_batches)
    pricer = _pricer(plan, edited)
    say_trace_plan(pricer)
    r = pricer.r
    stage = keys[0].parts[1]
    ops = memory.stage_ops(r, stage)
    ops_copy = tuple(list(ops))
    assert ops_copy is not ops and ops_copy == ops
    key = memory._trace_key(pricer.memo[memory.TRACE_PLAN], stage, library_workspaces(r), ops_copy)
    assert key in memory._EVENTS  # found by value: another order object of the same operations
    monkeypatch.setattr(memory, "stage_trace", lambda *_a, **_k: (_ for _ in ()).throw(AssertionError("traced")))
    rows = stage_rows(pricer, stage)
    first = memory.stage_events(pricer, stage, rows, library_workspaces(r))
    assert first is memory._EVENTS[key]
    monkeypatch.setattr(memory, "stage_ops", lambda *_a: (_ for _ in ()).throw(AssertionError("looked up")))
    assert memory.stage_events(pricer, stage, rows, library_workspaces(r)) is first
    monkeypatch.undo()


def test_kept_operation_order_hashes_are_bounded_and_are_the_hashes(monkeypatch):
    monkeypatch.setattr(memory, "_OPS_HASHES", {})
    orders = [tuple(range(n)) for n in range(memory._EVENTS_KEPT * 4 + 10)]
    assert [memory._ops_hash(ops) for ops in orders] == [hash(ops) for ops in orders]
    assert len(memory._OPS_HASHES) <= memory._EVENTS_KEPT * 4
    assert all(memory._OPS_HASHES[i][0] is ops for i, (ops, _h) in memory._OPS_HASHES.items() if id(ops) == i)
