"""Resolving in two parts (estimator/resolve.py ``settle`` / ``resolve_settled``) and what an estimate keeps of
them (estimator/reuse.py ``settled``, the layouts kept with a Settled, the records' originals), the verdict's
records made at once: a kept part is keyed on everything it reads, so no edit finds a stale one
(P-SCALAR-SPEED "Fifth session — resolve and verdict")."""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections import OrderedDict
from pathlib import Path

import pytest

from estimator import RecomputePlan, ShardingSpec, Strategy, estimate, reuse
from estimator import model as model_module
from estimator.errors import LayoutError, SappError
from estimator.formats import parse
from estimator.host import HostStage, host_memory
from estimator.layout import build_layout, layout_inputs
from estimator.resolve import DEGREES, Par, Resolved, resolve, resolve_settled, settle
from estimator.result import OUTSIDE_ALLOCATOR, Result, StageResult
from estimator.session import PlanSession
from estimator.session.edits import EditError
from estimator.validate import RuleContext

ROOT = Path(__file__).resolve().parents[1]
PLANS = ["benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml",
         "benchmarks/inputs/llama3_70b_torchtitan_pp8_vpp5.plan.yaml",
         "resources/examples/mindformers_qwen3_32b.yaml", "resources/examples/hyperparallel_qwen3_fsdp.yaml",
         "resources/examples/deepseek_v3_671b.plan.yaml", "resources/examples/mindformers_mixtral_8x7b.yaml"]


pytestmark = pytest.mark.usefixtures("nothing_kept")


def _parsed(path: str):
    return parse([ROOT / path])


class _Refusing:
    """A record that answers every field but ``refused`` (AssertionError: the code under test read it)."""

    def __init__(self, record, refused, inner=None):
        self._record, self._refused, self._inner = record, refused, inner or {}

    def __getattr__(self, name):
        if name in self._inner:
            return self._inner[name]
        if name in self._refused:
            raise AssertionError(f"read {name}")
        return getattr(self._record, name)


def _without_degrees(st: Strategy) -> _Refusing:
    plan = _Refusing(st.recompute, {f.name for f in dataclasses.fields(RecomputePlan)} - {"rule"})
    return _Refusing(st, DEGREES, {"recompute": plan})


@pytest.mark.parametrize("path", PLANS)
def test_settle_reads_no_degree(path):
    """``settle`` reads no field of DEGREES (nor of the recompute plan but its rule): what reuse.settled leaves
    out of its key."""
    p = _parsed(path)
    for st in (p.strategy, p.strategy.replace(peft="lora", lora_rank=8, lora_targets=("q", "v"), async_tp=True,
                                              fp8="delayed", offload_optimizer=True, trainable_layers=None)):
        settled = settle(p.model, _without_degrees(st), p.options)  # type: ignore[arg-type]
        assert settled.assumptions == settle(p.model, st, p.options).assumptions


@pytest.mark.parametrize("path", PLANS)
def test_the_layout_reads_of_the_degrees_only_what_its_key_holds(path):
    """``layout_inputs`` reads of DEGREES only ``reuse.LAYOUT_READ`` (the rest of what it reads is the Settled's
    key: the model, the options, every other strategy field)."""
    p = _parsed(path)
    r = resolve(p.model, p.strategy, p.hardware, p.options)
    refusing = _Refusing(p.strategy, DEGREES - set(reuse.LAYOUT_READ))
    assert layout_inputs(dataclasses.replace(r, strategy=refusing)) == layout_inputs(r)  # type: ignore[arg-type]


def _degree_edits(st: Strategy) -> list[Strategy]:
    return [st.replace(tp=st.tp * 2, dp=max(1, st.dp // 2)), st.replace(pp=max(1, st.pp // 2), vpp=1),
            st.replace(cp=2), st.replace(cp=4, ulysses_degree=2), st.replace(ep=max(1, st.ep // 2), etp=None),
            st.replace(micro_batches=st.micro_batches * 2, n_acc=3), st.replace(seq_length=st.seq_length * 2),
            st.replace(recompute=RecomputePlan(default_mode="full", rule=st.recompute.rule)),
            st.replace(sequence_parallel=not st.sequence_parallel),
            st.replace(tp=1, sequence_parallel=False), st.replace(schedule="gpipe", vpp=1),
            st.replace(sharding=dataclasses.replace(st.sharding, os=None), dp=st.dp * 2, tp=max(1, st.tp // 2)),
            st.replace(tp=float(st.tp))]


@pytest.mark.parametrize("path", PLANS)
def test_a_settled_plan_resolves_every_degree_edit_as_resolve_does(path):
    """One Settled, made from the opened plan, resolves each edit of its degrees (the strategy's fields in
    DEGREES) exactly as ``resolve`` of the edited plan: the records, the assumptions and warnings — their text
    and order — included."""
    p = _parsed(path)
    for st in (p.strategy, p.strategy.replace(async_tp=True)):
        settled = settle(p.model, st, p.options)
        for edited in _degree_edits(st):
            fresh = resolve(p.model, edited, p.hardware, p.options)
            got = resolve_settled(settled, p.model, edited, p.hardware, p.options)
            assert got == fresh, edited
            assert [str(a) for a in got.assumptions] == [str(a) for a in fresh.assumptions]
            assert [str(w) for w in got.warnings] == [str(w) for w in fresh.warnings]
            assert type(got.par.t) is type(fresh.par.t)


@pytest.mark.parametrize("path", PLANS)
def test_each_degree_edit_finds_its_own_layout(path):
    """The layouts kept with a Settled: every degree edit of a plan (after the plan and each edit before it were
    estimated) gets the layout of its own inputs — or the same refusal."""
    p = _parsed(path)
    st = p.strategy
    edits = [*_degree_edits(st), st.replace(noop_layers=(0,)), st.replace(pp=2, vpp=1, offset=(1, -1)),
             st.replace(pp=2, vpp=1, offset=(1, True)), st, st.replace(recompute=RecomputePlan(
                 default_mode="selective", full_counts=1, rule=st.recompute.rule))]
    for edited in edits:
        try:
            fresh = build_layout(layout_inputs(resolve(p.model, edited, p.hardware, p.options)))
        except LayoutError as exc:
            with pytest.raises(LayoutError) as kept:
                reuse.resolved_layout(p.model, edited, p.hardware, p.options)
            assert str(kept.value) == str(exc)
            continue
        assert reuse.resolved_layout(p.model, edited, p.hardware, p.options)[1] == fresh, edited


def test_at_once_refuses_a_record_it_cannot_make_whole():
    """records.at_once, the one way a hot path makes a frozen record with its dict set at once, refuses a call that
    gives another number of fields than the class declares (a field added to the class but not where its records
    are made), and a class that derives fields in __post_init__ or has no instance dict."""
    from estimator.records import at_once

    @dataclasses.dataclass(frozen=True)
    class Two:
        a: int
        b: int = 0

    assert at_once(Two, a=1, b=2) == Two(1, 2)
    with pytest.raises(TypeError, match="1 fields given, 2 declared"):
        at_once(Two, a=1)

    @dataclasses.dataclass(frozen=True)
    class Derived:
        a: int

        def __post_init__(self) -> None:
            object.__setattr__(self, "a", self.a + 1)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    for cls in (Derived, Slotted, tuple):
        with pytest.raises(TypeError, match="cannot be made at once"):
            at_once(cls, a=1)


def test_records_made_at_once_equal_the_dataclass():
    """Par, Resolved, Result (records.at_once) and RuleContext (validate.context_of) are made with their instance
    dict set at once: every field of the dataclass is there, and they equal, hash, print, pickle and copy as the
    dataclass's."""
    from importlib import import_module

    estimate_module = import_module("estimator.estimate")
    p = _parsed(PLANS[0])
    r = resolve(p.model, p.strategy, p.hardware, p.options)
    ctx = estimate_module.rule_context(r, reuse.resolved_layout(p.model, p.strategy, p.hardware, p.options)[1])
    edited = reuse.resolved(p.model, p.strategy.replace(micro_batches=p.strategy.micro_batches * 2), p.hardware,
                            p.options)  # a kept plan with another m: made from the kept one's records
    assert edited == resolve(p.model, edited.strategy, p.hardware, p.options)
    result = estimate(p.model, p.strategy, p.hardware, p.options)
    for record, cls in ((r.par, Par), (r, Resolved), (ctx, RuleContext), (edited, Resolved), (edited.par, Par),
                        (result, Result)):
        assert type(record) is cls
        assert list(vars(record)) == [f.name for f in dataclasses.fields(cls)] or \
            set(vars(record)) == {f.name for f in dataclasses.fields(cls)}
        made = cls(**{f.name: getattr(record, f.name) for f in dataclasses.fields(cls)})
        assert made == record and repr(made) == repr(record)
        assert pickle.loads(pickle.dumps(record)) == made
        assert dataclasses.replace(record) == record
        if cls is Par:
            assert hash(made) == hash(record)


def test_the_verdict_s_shortcuts_equal_their_definitions():
    """StageResult.outside_allocator sums the OUTSIDE_ALLOCATOR categories (as ``sum`` of them, in that order);
    host_memory's stages equal HostStage(**bytes) — signed zeros, ints and missing kinds included — and a kind
    HostStage has no field for is refused as before."""
    assert OUTSIDE_ALLOCATOR == ("reserve", "runtime_context", "comm_library")
    for cats in ({}, {"reserve": 1.5, "comm_library": 2},
                 {"runtime_context": -0.0, "reserve": 3e9, "comm_library": 7.25}):
        stage = StageResult(index=0, layer_source=tuple, bytes_by_category=cats, total=10.0, optimizer_step_peak=12.0)
        assert stage.outside_allocator == sum(cats.get(k, 0.0) for k in OUTSIDE_ALLOCATOR)
        assert repr(stage.outside_allocator) == repr(sum(cats.get(k, 0.0) for k in OUTSIDE_ALLOCATOR))
        assert stage.allocator_peak == stage.device_peak - stage.outside_allocator
    p = _parsed(PLANS[0])
    r = resolve(p.model, p.strategy, p.hardware, p.options)
    given = [{"activations": 0.0, "parameters": -0.0, "gradients": 1, "optimizer_states": 2.5}, {},
             {"optimizer_states": 3, "activations": True}]
    stages = [StageResult(index=i, layer_source=tuple, host_bytes=b) for i, b in enumerate(given)]
    host = host_memory(r, stages)
    for got, b in zip(host.stages, given, strict=True):
        want = HostStage(**{k: float(v) for k, v in b.items()})
        assert got == want and repr(got) == repr(want) and got.to_dict() == want.to_dict()
    with pytest.raises(TypeError):
        host_memory(r, [StageResult(index=0, layer_source=tuple, host_bytes={"disk": 1.0})])


def test_a_rebuilt_record_has_each_key_of_its_original(monkeypatch):
    """A record equal to a recent one field by field, by value and type, has that one's keys for every set of
    fields left out; one that differs in a type has none of them."""
    _nothing_kept(monkeypatch)
    plan = Strategy(seq_length=4096, tp=2, pp=2, dp=2, micro_batches=4, sharding=ShardingSpec(mode="zero1"))
    keys = {skip: reuse.key_of(plan, skip) for skip in (frozenset(), reuse.NOT_READ, DEGREES)}
    rebuilt = plan.replace(recompute=RecomputePlan(), sharding=ShardingSpec(mode="zero1"))
    assert all(reuse.key_of(rebuilt, skip) is key for skip, key in keys.items())
    typed_apart = plan.replace(sharding=ShardingSpec(mode="zero1", span_cp=1))  # 1 == True, another type
    assert all(reuse.key_of(typed_apart, skip) != key for skip, key in keys.items())
    assert reuse.key_of(plan.replace(tp=4), DEGREES) is keys[DEGREES]  # a degree: the same settled plan
    assert reuse.key_of(plan.replace(tp=4), reuse.NOT_READ) != keys[reuse.NOT_READ]
    assert len(reuse._ORIGINALS) <= 8 * reuse.MAX_BOOKS
    assert all(len(kept) <= reuse.TWINS for kept in reuse._RECENT.values())


def _nothing_kept(patch: pytest.MonkeyPatch) -> None:
    """Every table an estimate keeps for the next one, empty (the process's kept ones untouched; as
    tests/test_reuse.py's, and the verdict's tables)."""
    from importlib import import_module

    from estimator import assembly
    from estimator.device import memory as device_memory

    estimate_module = import_module("estimator.estimate")
    patch.setattr(model_module, "_STACKS", {})
    for name in ("_BOOKS", "_COSTS", "_RESOLVED", "_SETTLED", "_TABLES", "_KEYS", "_ORIGINALS"):
        patch.setattr(reuse, name, OrderedDict())
    patch.setattr(reuse, "_TWINS", {})
    patch.setattr(reuse, "_RECENT", {})
    patch.setattr(estimate_module, "_COUNTS", {})
    patch.setattr(estimate_module, "_KINDS", {})
    patch.setattr(assembly, "_LABELS", {})
    patch.setattr(device_memory, "_EVENTS", OrderedDict())
    patch.setattr(device_memory, "_REPLAYS", OrderedDict())
    patch.setattr(device_memory, "_OPS_HASHES", {})


def _outcome(p) -> str:
    """The estimate as its JSON, warnings and assumptions (text and order) included, or the error it raised."""
    try:
        result = estimate(p.model, p.strategy, p.hardware, p.options)
    except SappError as exc:
        return f"{type(exc).__name__}: {exc}"
    return json.dumps(result.to_dict(), sort_keys=True, default=repr) + "\n".join(
        [*map(str, result.warnings), *map(str, result.assumptions)])


@pytest.mark.parametrize("path", PLANS[:4])
def test_an_edit_sequence_over_many_fields_equals_estimates_with_nothing_kept(path, monkeypatch):
    """tp, pp, cp, ep, recompute, micro-batch, sequence-length, device and option edits and undos through the
    session: every estimate equals one made with every kept table empty."""
    session = PlanSession()
    session.open([ROOT / path])
    other = "A3" if session.parsed.hardware.id != "A3" else "H100-96G"

    def changes(kind: str) -> dict:
        st, options = session.parsed.strategy, session.parsed.options
        if kind in ("tp", "pp", "cp"):
            now = getattr(st, kind)
            steps = session.step_candidates(f"strategy.{kind}") or []
            smaller = [v for v in steps if v < now]
            return {f"strategy.{kind}": smaller[-1] if smaller else (min(v for v in steps if v > now)
                                                                     if any(v > now for v in steps) else now)}
        return {"m": {"strategy.micro_batches": st.micro_batches * 2},
                "ep": {"strategy.ep": st.ep // 2 if st.ep > 1 else 2},
                "seq": {"strategy.seq_length": st.seq_length // 2},
                "rec": session.recompute_changes(mode="selective" if st.recompute.default_mode == "full" else "full"),
                "hw": {"hardware.device": other},
                "opt": {"options.margin": options.margin + 2**30},
                "opt2": {"options.allow_underfilled_pipeline": not options.allow_underfilled_pipeline}}[kind]

    seen = 0
    for kind in ("tp", "undo", "pp", "cp", "undo", "ep", "m", "seq", "undo", "rec", "hw", "tp", "undo", "opt",
                 "pp", "undo", "undo", "opt2", "rec", "undo", "undo", "undo", "seq", "cp", "tp", "undo", "undo"):
        try:
            if kind == "undo":
                session.undo()
            else:
                session.apply(changes(kind), kind)
        except (EditError, IndexError, ValueError):
            continue  # an edit this plan refuses (or nothing left to undo): the next one
        p = session.parsed
        warm = _outcome(p)
        with monkeypatch.context() as empty:
            _nothing_kept(empty)
            assert warm == _outcome(p), kind
        seen += 1
    assert seen >= 15
