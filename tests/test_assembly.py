"""The stage assembler (issue 14 part 2): one set of array functions for the estimate, the search and the balancer;
the extension point reaches every path; no import cycle in estimator/."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from estimator import ModelSpec, RecomputePlan, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from estimator.assembly import (
    RowTerm,
    StageTerm,
    price_stage,
    profile_points,
    stage_chunks,
    stage_form,
    stage_memory,
    terms,
)
from estimator.assembly.form import stack_forms
from estimator.balance.tables import StageTables
from estimator.formats import parse
from estimator.layout import build_layout, layout_inputs
from estimator.resolve import resolve
from estimator.schedules import inflight_profile
from estimator.stage import StagePricer
from estimator.vector import price_group, stack_par, with_par

ROOT = Path(__file__).resolve().parents[1]
H100 = find_preset("H100-80G")
DENSE = ModelSpec(name="llama3-70b", hidden_size=8192, num_layers=32, num_attention_heads=64, num_kv_heads=8,
                  ffn_hidden_size=28672, vocab_size=128256)
MOE = ModelSpec(name="deepseek-v3", hidden_size=7168, num_layers=27, first_k_dense=3, ffn_hidden_size=18432,
                num_attention_heads=128, q_lora_rank=1536, kv_lora_rank=512, head_dim=128, qk_rope_head_dim=64,
                v_head_dim=128, num_experts=64, experts_per_token=6, num_shared_experts=1, moe_ffn_hidden_size=2048,
                vocab_size=129280, mtp_layers=1)
PLANS = {
    "1f1b selective": ("megatron", DENSE, Strategy(seq_length=4096, tp=4, pp=4, dp=2, micro_batches=8,
                                                   sequence_parallel=True, sharding=ShardingSpec(mode="zero1"),
                                                   recompute=RecomputePlan(default_mode="selective"))),
    "interleaved uniform": ("megatron", DENSE, Strategy(seq_length=4096, tp=2, pp=4, vpp=2, dp=2, micro_batches=8,
                                                        recompute=RecomputePlan(default_mode="full",
                                                                                uniform_group=2))),
    "zbv MoE": ("mindformers", MOE, Strategy(seq_length=4096, tp=2, pp=2, vpp=2, dp=4, ep=4, micro_batches=8,
                                             schedule="zbv", mtp_in_offset=True, sharding=ShardingSpec(mode="mf_op"),
                                             recompute=RecomputePlan(full_counts=(2, 1)))),
    "fsdp2": ("torchtitan", DENSE, Strategy(seq_length=8192, tp=2, pp=2, dp=4, micro_batches=4,
                                            sharding=ShardingSpec(mode="fsdp"),
                                            recompute=RecomputePlan(default_mode="full"))),
}


# ------------------------------------------------------------------------------------------ import graph
def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the package modules it imports (module level or inside functions); importing a.b.c counts as
    importing the subpackage a.b too (its __init__ runs first)."""
    mods: dict[str, tuple[Path, bool]] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets.update(f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names)
        edges = set()
        for target in targets:
            parts = target.split(".")
            edges.update(".".join(parts[:k]) for k in range(2, len(parts) + 1))
        graph[name] = {e for e in edges if e in mods and e != name and not name.startswith(e + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycle_in_estimator():
    graph = import_graph(ROOT / "estimator")
    assert "estimator.steptime" in graph["estimator.estimate"]  # the graph sees imports at all
    assert cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# ------------------------------------------------------------------------------------------ one assembler
def _options(framework: str) -> RunOptions:
    """A fixed allocator slack per dynamic byte (P-SLACK-RATIO): arrays over candidates price the slack by a
    ratio, one plan replays it; with the ratio stated both forms price the same bytes."""
    return RunOptions(framework=framework, allocator_slack_ratio=0.125)


def _pricer(framework: str, model: ModelSpec, st: Strategy) -> tuple[StagePricer, list]:
    r = resolve(model, st, H100, _options(framework))
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    profile = inflight_profile(r.flags.schedule, r.par.p, r.par.vp, r.par.m, n_s=r.par.n_s)
    return pricer, [profile_points(prof) for prof in profile]


@pytest.mark.parametrize("name", sorted(PLANS))
def test_one_element_array_and_stacked_forms_agree(name):
    """A stage priced alone (numbers), inside a stacked form of all stages (arrays over table rows) and with its
    degrees as one-element arrays (the search) gives the same bytes."""
    framework, model, st = PLANS[name]
    pricer, points = _pricer(framework, model, st)
    p = pricer.r.par.p
    alone = [stage_memory(pricer, i, stage_form(pricer, i), points[i]) for i in range(p)]
    array_r = with_par(pricer.r, stack_par([pricer.r.par]))
    array_pricer = StagePricer(array_r, pricer.layout)
    for i in range(p):
        array = price_stage(array_pricer, i, points[i])
        assert np.ravel(array.total)[0] == pytest.approx(alone[i].total, rel=1e-12)
        assert np.ravel(array.optimizer_step_peak)[0] == pytest.approx(alone[i].optimizer_step_peak, rel=1e-12)
        if not pricer.r.flags.fsdp2:
            forms = [stage_form(pricer, k) for k in range(p)]
            stacked = stage_memory(pricer, i, stack_forms(forms), points[i])
            assert np.asarray(stacked.total)[i] == pytest.approx(alone[i].total, rel=1e-12)
            for cat, value in alone[i].categories.items():
                assert np.asarray(stacked.categories[cat])[i] == pytest.approx(value, rel=1e-12, abs=1e-6), cat


@pytest.mark.parametrize("name", sorted(name for name in PLANS if name != "fsdp2"))
def test_stages_sharing_chunk_sums_share_their_part_before_the_points(name, monkeypatch):
    """The part of a stage's combination its chunk sums decide (work, transient, the rows' categories) is made once
    per pricer and chunk-sum list (the stages holding the same rows share one), and each stage then equals the
    stage priced by a pricer of its own, which makes that part for it alone."""
    from estimator.assembly import memory

    framework, model, st = PLANS[name]
    pricer, points = _pricer(framework, model, st)
    p = pricer.r.par.p
    made = []
    real = memory._chunks_part
    monkeypatch.setattr(memory, "_chunks_part", lambda *args: made.append(id(args[1])) or real(*args))
    shared = [stage_memory(pricer, i, stage_form(pricer, i), points[i], stage_chunks(pricer, stage_form(pricer, i)))
              for i in range(p)]
    assert len(made) == len(set(made)) == len({id(stage_form(pricer, i)) for i in range(p)})
    for i in range(p):
        own, own_points = _pricer(framework, model, st)
        alone = stage_memory(own, i, stage_form(own, i), own_points[i])
        assert (shared[i].categories, shared[i].total, shared[i].optimizer_step_peak, shared[i].counts,
                shared[i].point, shared[i].working_from, shared[i].transient_from) == \
            (alone.categories, alone.total, alone.optimizer_step_peak, alone.counts, alone.point, alone.working_from,
             alone.transient_from)


# ------------------------------------------------------------------------------------------ the extension point
TERM = 12345.0
PER_ROW = 1000.0


def _add_terms(monkeypatch) -> None:
    stage_term = StageTerm("T-TEST", "reserve", "test term", lambda view: TERM, lambda view: TERM,
                           lambda view: {"bytes": TERM}, lambda view: "a test term")
    monkeypatch.setattr(terms, "STAGE_TERMS", (*terms.STAGE_TERMS, stage_term))
    monkeypatch.setattr(terms, "ROW_TERMS", (*terms.ROW_TERMS, RowTerm("T-ROW", "parameters",
                                                                       lambda cost, pricer: PER_ROW)))


def _plain(framework, model, st):
    return estimate(model, st, H100, _options(framework), explain=True)


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_new_term_reaches_estimate_search_and_explain(name, monkeypatch):
    framework, model, st = PLANS[name]
    before = _plain(framework, model, st)
    _add_terms(monkeypatch)
    after = _plain(framework, model, st)
    r = resolve(model, st, H100, _options(framework))
    vec = price_group(with_par(r, stack_par([r.par, r.par])), build_layout(layout_inputs(r)))
    for old, new in zip(before.stages, after.stages, strict=True):
        rows = sum(1 for row in new.layers if row.index is not None or row.kind in ("embedding", "output",
                                                                                  "embedding_copy", "noop"))
        assert new.total == pytest.approx(old.total + TERM + PER_ROW * rows, rel=1e-12)
        assert new.bytes_by_category["parameters"] == pytest.approx(old.bytes_by_category["parameters"] +
                                                                    PER_ROW * rows, rel=1e-12)
        assert new.optimizer_step_peak == pytest.approx(old.optimizer_step_peak + TERM + PER_ROW * rows, rel=1e-12)
        test_rows = [row for row in new.layers if row.kind == "test term"]
        assert [row.note for row in test_rows] == ["a test term"]
        assert sum(row.total for row in new.layers) == pytest.approx(new.total, rel=1e-12)
        assert "T-TEST" in str(new.explain.to_dict())
        assert vec["total"][new.index] == pytest.approx([new.total, new.total], rel=1e-12)


@pytest.mark.parametrize("plan", ["benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml",
                                  "resources/examples/hyperparallel_qwen3_fsdp.yaml"])
def test_a_new_term_reaches_the_balancer(plan, monkeypatch):
    """The balancer's table rows (stacked forms; FSDP2 one by one) see a new stage term and row term."""
    parsed = parse([str(ROOT / plan)])
    counts = [s.layer_counts[0] for s in estimate(parsed.model, parsed.strategy, parsed.hardware,
                                                  parsed.options).stages]

    def totals() -> list[tuple[float, float, int]]:
        tables = StageTables(parsed, ("full",))
        out, a = [], 0
        for i, c in enumerate(counts):
            table = [tables.entries(i, a, c, assign) for assign in tables.assignments(c)][:3]
            _t, total, opt = tables.price(i, table)
            out += [(x, y, len(entries)) for x, y, entries in zip(total, opt, table, strict=True)]
            a += c
        return out

    before = totals()
    _add_terms(monkeypatch)
    for (total, opt, rows), (new_total, new_opt, _rows) in zip(before, totals(), strict=True):
        assert new_total == pytest.approx(total + TERM + PER_ROW * rows, rel=1e-12)
        assert new_opt == pytest.approx(opt + TERM + PER_ROW * rows, rel=1e-12)


def test_a_new_stage_term_reaches_a_kept_stage(monkeypatch):
    """A plan that replays no allocator keeps its whole stages with the rows (``assembly._kept_stage``); a stage
    term added afterwards (the book's key holds the row terms only) is priced on the next estimate, not read
    from the kept stage."""
    parsed = parse([str(ROOT / "resources/examples/mindformers_deepseek_v3_671b.yaml")])
    args = (parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    before = estimate(*args)
    assert [s.total for s in estimate(*args).stages] == [s.total for s in before.stages]
    stage_term = StageTerm("T-TEST", "reserve", "test term", lambda view: TERM, lambda view: TERM,
                           lambda view: {"bytes": TERM}, lambda view: "a test term")
    monkeypatch.setattr(terms, "STAGE_TERMS", (*terms.STAGE_TERMS, stage_term))
    after = estimate(*args)
    assert [s.total for s in after.stages] == pytest.approx([s.total + TERM for s in before.stages], rel=1e-12)


def test_stage_result_made_at_once_equals_the_dataclass():
    """``result.stage_result`` sets a StageResult's instance dict at once: every field of the dataclass is one of
    its arguments, and the record equals, pickles and serialises as one made by ``StageResult(...)``."""
    import dataclasses
    import inspect
    import pickle

    from estimator.result import StageResult, stage_result

    names = [f.name for f in dataclasses.fields(StageResult)]
    assert list(inspect.signature(stage_result).parameters) == names
    parsed = parse([str(ROOT / "resources/examples/mindformers_deepseek_v3_671b.yaml")])
    made = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options).stages[-1]
    assert type(made) is StageResult and list(vars(made)) == names
    plain = StageResult(**{name: getattr(made, name) for name in names})
    assert made == plain and repr(made) == repr(plain) and made.to_dict() == plain.to_dict()
    back = pickle.loads(pickle.dumps(made))
    assert back == made and back.to_dict() == made.to_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.total = 0.0  # type: ignore[misc]


def test_a_kept_stage_equals_the_stage_priced_through_the_kept_parts():
    """A plan that replays no allocator keeps each whole stage (``assembly._kept_stage``) without the parts the
    generic rule keeps (the pricer's tensors, the combined and finished tables): each stage, its device notes
    included, equals the stage priced by a pricer of its own through those parts, and an edit of the micro-batch
    count and back finds every stage kept."""
    from estimator.assembly import memory
    from estimator.device.memory import replays_allocator

    parsed = parse([str(ROOT / "resources/examples/mindformers_deepseek_v3_671b.yaml")])
    r = resolve(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert not replays_allocator(r)
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    profile = inflight_profile(r.flags.schedule, r.par.p, r.par.vp, r.par.m, n_s=r.par.n_s)
    points = [profile_points(prof) for prof in profile]
    kept = [price_stage(pricer, i, points[i], keep=True) for i in range(r.par.p)]
    assert "combined" not in pricer.shared and "finished" not in pricer.shared
    for i, stage in enumerate(kept):
        own = StagePricer(r, pricer.layout)
        mem = memory.stage_memory(own, i, stage_form(own, i), points[i], stage_chunks(own, stage_form(own, i)))
        assert "combined" in own.shared
        assert (stage.bytes_by_category, stage.total, stage.optimizer_step_peak, stage.peak_vector) == \
            (mem.categories, mem.total, mem.optimizer_step_peak, tuple(mem.counts))
        assert stage.device == own.memo.get(("device", i), {})
    # fewer micro-batches than stages: other points; then back, where every stage is found kept
    other = inflight_profile(r.flags.schedule, r.par.p, r.par.vp, 2, n_s=r.par.n_s)
    assert [profile_points(prof) for prof in other] != points
    for i, prof in enumerate(other):
        price_stage(pricer, i, profile_points(prof), keep=True)
    for i, stage in enumerate(kept):
        again = price_stage(pricer, i, points[i], keep=True)
        assert again.bytes_by_category is stage.bytes_by_category  # the kept stage's
        assert again == stage and again.to_dict() == stage.to_dict()
