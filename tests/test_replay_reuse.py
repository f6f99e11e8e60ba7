"""What an FSDP2 plan's estimate keeps for the next (P-SCALAR-SPEED; docs/model.md#what-an-edit-re-prices): the
allocation traces and the allocator replays of the deciding stages (``device.memory``), the FSDP2 walks and each
stage's largest instant (``fsdp``, ``assembly.memory``) — each kept under exactly what it reads, and never changing
a number (``tests/test_reuse.py`` compares a session's edits with estimates made with nothing kept)."""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path

import pytest

from estimator import estimate, reuse
from estimator.device import memory
from estimator.device.trace import stage_ops
from estimator.formats import parse

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "benchmarks" / "inputs" / "llama3_70b_torchtitan_pp8_vpp5.plan.yaml"  # FSDP2, pp 8 × vpp 5, m 16


pytestmark = pytest.mark.usefixtures("nothing_kept")


@pytest.fixture(scope="module")
def plan():
    return parse([str(LLAMA)])


def _text(result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True, default=repr)


def _cold(plan, strategy) -> str:
    """The estimate with nothing kept (the kept parts left as they are for the test's next step)."""
    kept = (reuse._BOOKS, reuse._RESOLVED, memory._EVENTS, memory._REPLAYS)
    reuse._BOOKS, reuse._RESOLVED, memory._EVENTS, memory._REPLAYS = (OrderedDict() for _ in kept)
    try:
        return _text(estimate(plan.model, strategy, plan.hardware, plan.options))
    finally:
        reuse._BOOKS, reuse._RESOLVED, memory._EVENTS, memory._REPLAYS = kept


def _traces() -> dict:
    return dict(memory._EVENTS)


def test_an_m_edit_that_keeps_the_stage_order_keeps_the_trace_and_its_replays(plan, monkeypatch):
    """The trace reads m only through the stage's operation order (the warm-up plus one steady round): m 16 → 32
    runs the same order on every stage, so the replayed stage is neither traced nor replayed again."""
    st = plan.strategy
    first = estimate(plan.model, st, plan.hardware, plan.options)
    traces = _traces()
    assert traces and all(len(memory._REPLAYS[t][1]) == 3 for t in traces.values())  # the nominal and BAND ends
    edited = st.replace(micro_batches=2 * st.micro_batches)
    r, r2 = (reuse.resolved(plan.model, s, plan.hardware, plan.options) for s in (st, edited))
    assert all(stage_ops(r, i) == stage_ops(r2, i) for i in range(st.pp))

    def refused(*_args, **_kwargs):
        raise AssertionError("traced or replayed again")

    with monkeypatch.context() as kept:
        kept.setattr(memory, "stage_trace", refused)
        kept.setattr(memory, "replay", refused)
        warm = _text(estimate(plan.model, edited, plan.hardware, plan.options))
        assert _text(estimate(plan.model, st, plan.hardware, plan.options)) == _text(first)  # undo
    assert _traces() == traces
    assert warm == _cold(plan, edited)


def test_an_m_edit_that_changes_the_stage_order_traces_it_again():
    """Two stages (every stage replayed) under 1F1B: the trace runs the warm-up plus one steady round, three
    micro-batches, so m 4 and m 8 run one order and m 2 another."""
    from types import SimpleNamespace

    from estimator import ModelSpec, RecomputePlan, RunOptions, ShardingSpec, Strategy, find_preset

    model = ModelSpec(name="llama3-8b", hidden_size=4096, num_layers=8, num_attention_heads=32, num_kv_heads=8,
                      ffn_hidden_size=14336, vocab_size=128256)
    st = Strategy(seq_length=4096, tp=2, pp=2, dp=2, micro_batches=4, sharding=ShardingSpec(mode="fsdp"),
                  recompute=RecomputePlan(default_mode="full"))
    small = SimpleNamespace(model=model, hardware=find_preset("H100-80G"), options=RunOptions(framework="torchtitan"))
    estimate(model, st, small.hardware, small.options)
    assert reuse.resolved(model, st, small.hardware, small.options).flags.fsdp2
    before = _traces()
    assert len(set(before.values())) == 2  # both stages replayed
    estimate(model, st.replace(micro_batches=8), small.hardware, small.options)
    assert _traces() == before
    fewer = st.replace(micro_batches=2)
    warm = _text(estimate(model, fewer, small.hardware, small.options))
    assert set(_traces()) > set(before)
    assert warm == _cold(small, fewer)


def test_equal_traces_of_two_plans_are_one_object_replayed_once(plan, monkeypatch):
    """A device at the low end of its efficiency bands prices the same tensors: its trace is kept under another
    key (the device is part of what a trace reads) but is the same object, whose replays are found."""
    estimate(plan.model, plan.strategy, plan.hardware, plan.options)
    (trace,) = set(_traces().values())
    slow = plan.hardware.at_band("low")
    monkeypatch.setattr(memory, "replay", lambda *_a, **_k: (_ for _ in ()).throw(AssertionError("replayed")))
    estimate(plan.model, plan.strategy, slow, plan.options)
    assert len(memory._EVENTS) == 2 * len(set(_traces().values())) and set(_traces().values()) == {trace}


def test_replays_are_keyed_by_configuration_and_scale():
    events = (("step", 0), ("a", 1, 3 << 20, 0, True), ("f", 1), ("a", 2, 25 << 20, 0, False), ("step", 1),
              ("a", 3, 3 << 20, 0, True), ("f", 3))
    plain = memory.replayed_slack(events, memory.AllocatorConfig(), 1.0)
    expandable = memory.replayed_slack(events, memory.AllocatorConfig(expandable_segments=True), 1.0)
    assert plain != expandable
    assert memory.replayed_slack(tuple(events), memory.AllocatorConfig(), 1.0) == plain
    assert len(memory._REPLAYS) == 1 and len(next(iter(memory._REPLAYS.values()))[1]) == 2
    assert memory.replayed_slack(events, memory.AllocatorConfig(), 1.01) != plain  # the transient tensors scaled
    memory.replayed_slack(events, memory.AllocatorConfig(), 1)  # an int scale is another key
    assert len(next(iter(memory._REPLAYS.values()))[1]) == 4


def test_kept_traces_are_bounded(plan, monkeypatch):
    monkeypatch.setattr(memory, "_EVENTS_KEPT", 2)
    for device in (plan.hardware, plan.hardware.at_band("low"), plan.hardware.at_band("high")):
        estimate(plan.model, plan.strategy, device, plan.options, with_time=False)
    assert len(memory._EVENTS) == 2
    for size in (1, 2, 3):
        memory.replayed_slack((("step", 0), ("a", 1, size << 20, 0, True)), memory.AllocatorConfig(), 1.0)
    assert len(memory._REPLAYS) == 2


def test_fsdp2_walks_and_instants_are_kept_with_the_rows(plan, monkeypatch):
    """A repeat finds each stage's largest instant; an m edit (which moves every stage's in-flight counts) walks
    no chunk's backward again: the walks read of m only whether the step accumulates."""
    from estimator import fsdp

    st = plan.strategy
    first = _text(estimate(plan.model, st, plan.hardware, plan.options))
    book = reuse.row_book(reuse.resolved(plan.model, st, plan.hardware, plan.options))
    kept = dict(book.shared["fsdp-tensors"])
    assert len(kept) == st.pp
    monkeypatch.setattr(fsdp, "_instants", lambda *_a, **_k: (_ for _ in ()).throw(AssertionError("walked")))
    assert _text(estimate(plan.model, st, plan.hardware, plan.options)) == first
    assert book.shared["fsdp-tensors"] == kept
    edited = st.replace(micro_batches=2 * st.micro_batches)
    warm = _text(estimate(plan.model, edited, plan.hardware, plan.options))
    monkeypatch.undo()
    assert warm == _cold(plan, edited)


@pytest.mark.parametrize("seed", [14, 2026])
def test_random_session_edits_of_an_fsdp2_plan_equal_estimates_with_nothing_kept(seed):
    """Llama-3-70B (FSDP2, pp 8 × vpp 5): a random walk of what a user does — micro-batch counts that keep and
    that change the stages' points and orders, tp, recompute, the device's band end, undo, redo — every estimate
    against one made with no book, resolved plan, trace or replay kept."""
    import random

    from estimator.errors import SappError
    from estimator.session import PlanSession

    rng = random.Random(seed)
    session = PlanSession()
    session.open([LLAMA])
    compared = 0
    for _ in range(14):
        st = session.parsed.strategy
        step = rng.choice(["m", "m", "m", "tp", "rec", "device", "undo", "redo"])
        try:
            if step == "undo" and session.can_undo:
                session.undo()
            elif step == "redo" and session.can_redo:
                session.redo()
            elif step == "m":
                session.apply({"strategy.micro_batches": rng.choice([8, 16, 24, 32, 48])})
            elif step == "tp":
                session.apply({"strategy.tp": rng.choice(session.step_candidates("strategy.tp") or [st.tp])})
            elif step == "rec":
                session.apply(session.recompute_changes(mode=rng.choice(["full", "selective", "none"])))
            elif step == "device":
                session.apply({"hardware.device": rng.choice(["H100-80G", "H200"])})
        except SappError:
            continue
        p = session.parsed
        try:
            warm = _text(estimate(p.model, p.strategy, p.hardware, p.options))
        except SappError as exc:
            warm = f"refused: {exc}"
        try:
            cold = _cold(p, p.strategy)
        except SappError as exc:
            cold = f"refused: {exc}"
        assert warm == cold, (step, p.strategy)
        compared += not warm.startswith("refused")
    assert compared >= 7


def test_a_repeat_and_an_m_edit_back_finish_no_stage_again(plan, monkeypatch):
    """The stage terms of a replaying plan read, besides the rows and the stage's tensors, only the replay's band
    (replayed stages) or the replayed stages' ratio (the others): a repeat, and going back after an m edit, find
    every stage finished and the choice of the replayed stages made — and equal estimates with nothing kept."""
    from estimator.assembly import memory as assembly_memory
    from estimator.device import stages

    st = plan.strategy
    edited = st.replace(micro_batches=2 * st.micro_batches)
    first = _text(estimate(plan.model, st, plan.hardware, plan.options))
    warm_edit = _text(estimate(plan.model, edited, plan.hardware, plan.options))

    def refused(*_args, **_kwargs):
        raise AssertionError("priced again")

    finish, again = assembly_memory._finish, assembly_memory.terms_again

    def layer_rows_again(*args, **kwargs):
        """A stage finished at once (``memory.finish_stages``) holds no stage-term views: its per-layer rows,
        asked for by ``_text``, finish it alone again, on demand — not a stage priced again."""
        with monkeypatch.context() as m:
            m.setattr(assembly_memory, "_finish", finish)
            return again(*args, **kwargs)

    monkeypatch.setattr(assembly_memory, "_finish", refused)
    monkeypatch.setattr(assembly_memory, "_at_once", refused)
    monkeypatch.setattr(assembly_memory, "terms_again", layer_rows_again)
    monkeypatch.setattr(stages, "_unslacked", refused)
    monkeypatch.setattr(stages, "_first_pass", refused)
    assert _text(estimate(plan.model, st, plan.hardware, plan.options)) == first
    assert _text(estimate(plan.model, edited, plan.hardware, plan.options)) == warm_edit
    monkeypatch.undo()
    assert first == _cold(plan, st) and warm_edit == _cold(plan, edited)
    # Explain prices every stage anew and says the same numbers
    explained = estimate(plan.model, st, plan.hardware, plan.options, explain=True)
    plain = estimate(plan.model, st, plan.hardware, plan.options)
    assert [s.total for s in explained.stages] == [s.total for s in plain.stages]
    assert [s.device for s in explained.stages] == [s.device for s in plain.stages]


def test_the_search_ratio_finds_the_estimates_trace_and_replay(plan, monkeypatch):
    """The search's slack ratio prices the plan with allocator_slack_ratio 0 (an option that only scales the
    slack, left out of what a trace reads) and replays its stage with the most dynamic bytes: after the plan's
    estimate — the app's order — that trace and its replay are found."""
    from estimator.device import ratio

    estimate(plan.model, plan.strategy, plan.hardware, plan.options)
    ratio._ratio.cache_clear()

    def refused(*_args, **_kwargs):
        raise AssertionError("traced or replayed again")

    monkeypatch.setattr(memory, "stage_trace", refused)
    monkeypatch.setattr(memory, "replay", refused)
    assert ratio.base_slack_ratio(plan) > 0


def test_fsdp2_estimates_on_several_threads_share_the_kept_parts(plan):
    """The app's tasks estimate on their own threads beside the estimate worker: the walks, instants, finishes,
    choices, traces and replays they keep are shared, and every estimate equals one with nothing kept."""
    from concurrent.futures import ThreadPoolExecutor

    st = plan.strategy
    counts = (8, 16, 32)
    with ThreadPoolExecutor(4) as pool:
        warm = list(pool.map(lambda m: _text(estimate(plan.model, st.replace(micro_batches=m), plan.hardware,
                                                      plan.options)), counts * 3))
    cold = {m: _cold(plan, st.replace(micro_batches=m)) for m in counts}
    assert warm == [cold[m] for m in counts * 3]


def test_kept_finishes_follow_the_stage_terms(plan, monkeypatch):
    """A stage's finish and the replayed stages' choice are kept for the stage terms they were priced with
    (``assembly.terms.STAGE_TERMS``, which bench_device swaps to price without the device terms)."""
    from estimator.assembly import terms

    st = plan.strategy
    with_device = _text(estimate(plan.model, st, plan.hardware, plan.options))
    monkeypatch.setattr(terms, "STAGE_TERMS", tuple(t for t in terms.STAGE_TERMS if not t.id.startswith("D-")))
    without = _text(estimate(plan.model, st, plan.hardware, plan.options))
    assert without != with_device and without == _cold(plan, st)
    monkeypatch.undo()
    assert _text(estimate(plan.model, st, plan.hardware, plan.options)) == with_device


def test_results_pickle_with_their_kept_parts(plan):
    """Results travel from the app's worker processes (balance, compare) by pickle, with their pricer's book:
    nothing kept in it may be unpicklable (a stage term's note may be a lambda)."""
    import pickle

    st = plan.strategy
    for m in (st.micro_batches, 2 * st.micro_batches, st.micro_batches):
        result = estimate(plan.model, st.replace(micro_batches=m), plan.hardware, plan.options)
        assert _text(pickle.loads(pickle.dumps(result))) == _text(result)
