"""What one estimate keeps for the next (estimator/reuse.py, P-SCALAR-SPEED): kept parts are keyed on what they
read, never change a number, and stay bounded."""

from __future__ import annotations

import json
from collections import OrderedDict
from importlib import import_module
from pathlib import Path

import pytest
from edit_sequences import walk

from estimator import ModelSpec, RecomputePlan, RunOptions, ShardingSpec, Strategy, estimate, find_preset, reuse
from estimator import kinds as kinds_module
from estimator.device import memory as device_memory
from estimator.resolve import resolve
from estimator.session import PlanSession

H100 = find_preset("H100-80G")
DENSE = ModelSpec(name="llama3-8b", hidden_size=4096, num_layers=8, num_attention_heads=32, num_kv_heads=8,
                  ffn_hidden_size=14336, vocab_size=128256)
PLAN = Strategy(seq_length=4096, tp=2, pp=2, dp=2, micro_batches=4, sharding=ShardingSpec(mode="zero1"),
                recompute=RecomputePlan(default_mode="selective"))
MF = RunOptions(framework="mindformers")
MEGATRON = RunOptions(framework="megatron")


pytestmark = pytest.mark.usefixtures("nothing_kept")


def _text(result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True, default=repr)


def _cold(strategy: Strategy, options: RunOptions = MEGATRON) -> str:
    reuse.forget()
    return _text(estimate(DENSE, strategy, H100, options))


def test_a_micro_batch_edit_shares_the_rows_and_the_resolved_plan():
    r4 = reuse.resolved(DENSE, PLAN, H100, MEGATRON)
    r8 = reuse.resolved(DENSE, PLAN.replace(micro_batches=8), H100, MEGATRON)
    assert (r4.par.m, r8.par.m) == (4, 8)
    assert r8 == resolve(DENSE, PLAN.replace(micro_batches=8), H100, MEGATRON)
    assert reuse.row_book(r4) is reuse.row_book(r8)
    assert reuse.resolved(DENSE, PLAN, H100, MEGATRON) is r4  # going back: the kept plan itself


def test_other_edits_price_their_rows_anew():
    book = reuse.row_book(resolve(DENSE, PLAN, H100, MEGATRON))
    for edit in ({"tp": 4, "dp": 1}, {"pp": 1, "dp": 4}, {"recompute": RecomputePlan(default_mode="full")},
                 {"micro_batch_size": 2}):
        assert reuse.row_book(resolve(DENSE, PLAN.replace(**edit), H100, MEGATRON)) is not book, edit
    assert reuse.row_book(resolve(DENSE, PLAN, H100, MF)) is not book
    assert reuse.row_book(resolve(DENSE, PLAN, find_preset("H100-80G").at_band("low"), MEGATRON)) is not book


def test_gamma_is_part_of_the_row_key():
    """MindFormers' upstream rule holds gradients only when p > 1 or the step accumulates (m·n_acc > 1): at p 1
    a micro-batch edit from 1 to 2 changes the rows (their backward working set), from 2 to 3 it does not."""
    one = Strategy(seq_length=4096, tp=2, dp=4, micro_batches=1)
    books = [reuse.row_book(resolve(DENSE, one.replace(micro_batches=m), H100, MF)) for m in (1, 2, 3)]
    assert books[0] is not books[1]
    assert books[1] is books[2]


def test_keys_tell_types_apart():
    assert reuse.typed(PLAN.replace(tp=2)) != reuse.typed(PLAN.replace(tp=2.0))
    assert reuse.typed(PLAN.replace(sequence_parallel=True)) != reuse.typed(PLAN.replace(sequence_parallel=1))
    nested = PLAN.replace(recompute=RecomputePlan(full_counts=(1, 1)))
    assert reuse.typed(nested) != reuse.typed(PLAN.replace(recompute=RecomputePlan(full_counts=(1, True))))
    assert reuse.typed(nested) == reuse.typed(PLAN.replace(recompute=RecomputePlan(full_counts=(1, 1))))


def test_kept_parts_never_change_a_result():
    """Every plan of an edit sequence, estimated after the others (their parts kept), equals the same plan
    estimated with nothing kept — memory, step time, its band, warnings."""
    sequence = [PLAN, PLAN.replace(micro_batches=8), PLAN.replace(tp=4, dp=1), PLAN,
                PLAN.replace(recompute=RecomputePlan(default_mode="full")), PLAN.replace(micro_batches=16), PLAN]
    reuse.forget()
    warm = [_text(estimate(DENSE, st, H100, MEGATRON)) for st in sequence]
    assert warm == [_cold(st) for st in sequence]
    options = RunOptions(framework="mindformers")
    one = Strategy(seq_length=4096, tp=2, dp=4, micro_batches=1)
    reuse.forget()
    warm = [_text(estimate(DENSE, one.replace(micro_batches=m), H100, options)) for m in (1, 2, 1, 3)]
    assert warm == [_cold(one.replace(micro_batches=m), options) for m in (1, 2, 1, 3)]


def test_a_plugin_kind_reaches_a_kept_plan(monkeypatch):
    """Layer kinds registered while the process runs (a plug-in, the user's folder) change the key."""
    r = reuse.resolved(DENSE, PLAN, H100, MEGATRON)
    book = reuse.row_book(r)
    monkeypatch.setattr(kinds_module, "_GENERATION", [kinds_module.generation() + 1])
    assert reuse.row_book(r) is not book
    assert reuse.resolved(DENSE, PLAN, H100, MEGATRON) is not r


def test_books_are_bounded():
    for m in range(1, reuse.MAX_BOOKS + 6):
        estimate(DENSE, PLAN.replace(micro_batch_size=m, dp=2), H100, MEGATRON)
    assert len(reuse._BOOKS) <= reuse.MAX_BOOKS
    assert len(reuse._RESOLVED) <= reuse.MAX_BOOKS
    for rec in range(reuse.MAX_BOOKS + 6):  # recompute edits: new books over one row costs' entry
        estimate(DENSE, PLAN.replace(recompute=RecomputePlan(default_mode="selective", full_counts=(rec % 5, 1))),
                 H100, MEGATRON)
    for sw in range(reuse.MAX_BOOKS + 6):
        switches = ("core_attn",) * (sw + 1)
        estimate(DENSE, PLAN.replace(recompute=RecomputePlan(default_mode="selective", switches=switches)), H100,
                 MEGATRON)
    assert max(len(reuse._BOOKS), len(reuse._COSTS), len(reuse._TABLES)) <= reuse.MAX_BOOKS
    assert reuse._TWINS and all(len(twins) <= reuse.TWINS for twins in reuse._TWINS.values())


def test_a_session_edit_and_undo_reuse_the_plan(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("model:\n  hidden_size: 4096\n  num_layers: 8\n  num_attention_heads: 32\n  num_kv_heads: 8\n"
                    "  ffn_hidden_size: 14336\n  vocab_size: 128256\nstrategy:\n  seq_length: 4096\n  tp: 2\n"
                    "  pp: 2\n  dp: 2\n  micro_batches: 4\nhardware:\n  device: H100-80G\n"
                    "options:\n  framework: megatron\n", encoding="utf-8")
    session = PlanSession()
    session.open([plan])
    p = session.parsed
    first = estimate(p.model, p.strategy, p.hardware, p.options)
    book = reuse.row_book(reuse.resolved(p.model, p.strategy, p.hardware, p.options))
    session.apply({"strategy.micro_batches": 8})
    q = session.parsed
    assert reuse.row_book(reuse.resolved(q.model, q.strategy, q.hardware, q.options)) is book
    session.undo()
    back = session.parsed
    assert _text(estimate(back.model, back.strategy, back.hardware, back.options)) == _text(first)


def test_a_stage_whose_points_stay_is_not_combined_again():
    """Under 1F1B with m ≥ p every stage keeps its in-flight points when m changes: the stages' combined tensors
    are found again (and the estimate equals one with nothing kept — test_kept_parts_never_change_a_result)."""
    estimate(DENSE, PLAN, H100, MEGATRON)
    book = reuse.row_book(reuse.resolved(DENSE, PLAN, H100, MEGATRON))
    kept = dict(book.shared["combined"])
    assert len(kept) == PLAN.pp
    estimate(DENSE, PLAN.replace(micro_batches=16), H100, MEGATRON)
    assert book.shared["combined"] == kept


def test_estimates_on_several_threads_share_the_kept_parts():
    """The app's tasks (search, compare, balance) estimate on their own threads beside the estimate worker."""
    from concurrent.futures import ThreadPoolExecutor

    plans = [PLAN.replace(micro_batches=m, micro_batch_size=b) for m in (2, 4, 8) for b in (1, 2)] * 3
    with ThreadPoolExecutor(4) as pool:
        warm = list(pool.map(lambda st: _text(estimate(DENSE, st, H100, MEGATRON)), plans))
    assert len(reuse._BOOKS) <= reuse.MAX_BOOKS
    assert warm == [_cold(st) for st in plans]


def test_a_stage_without_allocator_replay_is_kept_across_a_micro_batch_edit():
    """MindSpore's allocator is not replayed (device.memory.allocator_kind: static), so no stage term reads the
    micro-batch count: an edit of it that leaves every stage's points as they were prices no stage again — and
    the estimates equal those made with nothing kept."""
    from estimator.device.memory import allocator_kind

    plan = PLAN.replace(sharding=ShardingSpec(mode="mf_op"))
    assert allocator_kind(resolve(DENSE, plan, H100, MF))[0] == "static"
    first = estimate(DENSE, plan, H100, MF)
    book = reuse.row_book(reuse.resolved(DENSE, plan, H100, MF))
    kept = {key: entry[1] for key, entry in book.shared["stages"].items()}  # (stage, its points' values)
    assert sorted(stage for stage, _values in kept) == list(range(plan.pp))
    edited = estimate(DENSE, plan.replace(micro_batches=16), H100, MF)
    assert {key: entry[1] for key, entry in book.shared["stages"].items()} == kept  # nothing new
    assert all(book.shared["stages"][key][1] is mem for key, mem in kept.items())
    assert [s.total for s in edited.stages] == [s.total for s in first.stages]
    assert _text(edited) == _cold(plan.replace(micro_batches=16), MF)
    assert _text(estimate(DENSE, plan, H100, MF)) == _cold(plan, MF)
    # with Explain the stage is priced (its tree needs every quantity), and says the same numbers
    explained = estimate(DENSE, plan, H100, MF, explain=True)
    assert [s.total for s in explained.stages] == [s.total for s in first.stages]


@pytest.mark.parametrize("path", ["benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml",
                                  "benchmarks/inputs/llama3_70b_torchtitan_pp8_vpp5.plan.yaml",
                                  "resources/examples/mindformers_qwen3_32b.yaml"])
def test_an_edit_sequence_through_the_session_equals_estimates_with_nothing_kept(path, monkeypatch):
    """What a user does (estimate after each edit and undo), every estimate against one with nothing kept."""
    root = Path(__file__).resolve().parents[1]
    session = PlanSession()
    session.open([root / path])

    for kind, p in walk(session, ("m", "tp", "undo", "undo", "pp", "rec", "undo", "m", "undo", "undo", "rec", "rec",
                                  "tp", "undo", "undo", "undo", "pp", "m", "rec", "undo", "undo", "undo")):
        warm = _text(estimate(p.model, p.strategy, p.hardware, p.options))
        with monkeypatch.context() as empty:  # nothing kept, the kept parts untouched for the next edit
            _nothing_kept(empty)
            assert warm == _text(estimate(p.model, p.strategy, p.hardware, p.options)), kind


def _nothing_kept(patch: pytest.MonkeyPatch) -> None:
    """Every table an estimate keeps for the next one, empty (the process's kept ones untouched)."""
    from estimator import assembly
    from estimator import model as model_module

    patch.setattr(model_module, "_STACKS", {})  # layer groups kept across model records
    for name in ("_BOOKS", "_COSTS", "_RESOLVED", "_SETTLED", "_TABLES", "_KEYS", "_ORIGINALS"):
        patch.setattr(reuse, name, OrderedDict())
    patch.setattr(reuse, "_TWINS", {})
    patch.setattr(reuse, "_RECENT", {})
    estimate_module = import_module("estimator.estimate")
    patch.setattr(estimate_module, "_COUNTS", {})
    patch.setattr(estimate_module, "_KINDS", {})
    patch.setattr(assembly, "_LABELS", {})
    patch.setattr(device_memory, "_EVENTS", OrderedDict())  # the kept allocation traces and their replays
    patch.setattr(device_memory, "_REPLAYS", OrderedDict())
    patch.setattr(device_memory, "_OPS_HASHES", {})  # the operation orders' hashes (the traces' keys)


def test_a_recompute_edit_keeps_the_rows_whose_mode_stays():
    """The row costs read of the recompute plan only each row's mode (the layout's item), the switches and the
    rule: a recompute edit gets a new book (new stage forms) over the same row costs, so a row whose mode stayed
    is not priced again; a tp edit keeps the activation table (its slots do not read the degrees)."""
    full = PLAN.replace(recompute=RecomputePlan(default_mode="full"))
    counted = PLAN.replace(recompute=RecomputePlan(default_mode="selective", full_counts=(2, 0)))
    books = [reuse.row_book(reuse.resolved(DENSE, st, H100, MEGATRON)) for st in (PLAN, full, counted)]
    assert len({id(b) for b in books}) == 3
    assert len({id(b.costs) for b in books}) == 1
    estimate(DENSE, PLAN, H100, MEGATRON)
    priced = dict(books[0].costs.rows)
    estimate(DENSE, counted, H100, MEGATRON)  # stage 0's first two layers full, the rest as before
    assert all(books[2].costs.rows[k] is cost for k, cost in priced.items())
    assert any(k not in priced for k in books[2].costs.rows)
    # the step time's context (device rates, links, knobs) is the row costs' too; each book keeps its own forms'
    # chunk holdings
    context = books[0].times[id(H100)][1][0]
    assert books[2].times[id(H100)][1][0] is context
    assert books[0].shared["chunk-holdings"] and books[2].shared["chunk-holdings"]
    assert not context.pricer.shared
    switched = PLAN.replace(recompute=RecomputePlan(default_mode="selective", switches=("core_attn",)))
    assert reuse.row_book(reuse.resolved(DENSE, switched, H100, MEGATRON)).costs is not books[0].costs
    ruled = PLAN.replace(recompute=RecomputePlan(default_mode="selective", rule="megatron"))
    assert reuse.row_book(reuse.resolved(DENSE, ruled, H100, MEGATRON)).costs is not books[0].costs
    wider = reuse.row_book(reuse.resolved(DENSE, PLAN.replace(tp=4, dp=1), H100, MEGATRON))
    assert wider.costs is not books[0].costs and wider.costs.acts is books[0].costs.acts
    for st in (PLAN, full, counted, switched, ruled, PLAN.replace(tp=4, dp=1), PLAN):
        warm = _text(estimate(DENSE, st, H100, MEGATRON))
        assert warm == _cold(st)


def test_a_rebuilt_record_shares_its_twin_key(monkeypatch):
    """The session rebuilds a plan's records on every edit: one whose fields equal a recent one's, by value and
    type, shares its key; one that differs in a value or a type does not."""
    _nothing_kept(monkeypatch)
    key = reuse.key_of(PLAN)
    assert reuse.key_of(PLAN.replace(recompute=RecomputePlan(default_mode="selective"))) is key
    assert reuse.key_of(PLAN.replace(tp=2)) is key
    assert reuse.key_of(PLAN.replace(tp=2.0)) != key
    nested = PLAN.replace(recompute=RecomputePlan(default_mode="selective", full_counts=(1, 1)))
    assert reuse.key_of(nested) != key
    assert reuse.key_of(PLAN.replace(recompute=RecomputePlan(default_mode="selective", full_counts=(1, True)))) \
        != reuse.key_of(nested)
    assert reuse.key_of(PLAN.replace(micro_batches=8), reuse.NOT_READ) is reuse.key_of(PLAN, reuse.NOT_READ)
    assert reuse.key_of(PLAN.replace(micro_batches=8)) != key


def test_device_tables_key_the_device_object_and_stay_bounded():
    """Per-device tables (time contexts, row times) are keyed by the device object (a value hash of a device
    costs microseconds per look-up): an equal device made anew gets its own entry, and at most DEVICES are kept."""
    from estimator.stage import DEVICES, device_entry

    table: dict = {}
    low = H100.at_band("low")
    first = device_entry(table, low, list)
    assert device_entry(table, low, list) is first
    assert device_entry(table, H100.at_band("low"), list) is not first
    for _ in range(3 * DEVICES):
        device_entry(table, H100.at_band("high"), list)
    assert len(table) <= DEVICES


def test_the_block_elements_are_kept_with_the_activation_table(monkeypatch):
    """A body layer's parameter elements read the dims and the registered kinds only: kept with the activation
    table (params.kept_block), so a tp, pp or recompute edit counts them once — each kept entry is what counting
    afresh gives, and every estimate equals one with nothing kept."""
    from estimator import params as P

    spec = dict(name="moe", hidden_size=2048, num_layers=6, num_attention_heads=16, num_kv_heads=4,
                ffn_hidden_size=8192, vocab_size=32000, num_experts=8, experts_per_token=2, moe_ffn_hidden_size=1024,
                first_k_dense=1, mtp_layers=1)
    moe = ModelSpec(**spec)
    plan = Strategy(seq_length=4096, tp=2, pp=2, dp=2, ep=2, etp=1, micro_batches=4, sequence_parallel=True)
    edits = [plan, plan.replace(tp=4, dp=1), plan.replace(pp=1, dp=4),
             plan.replace(recompute=RecomputePlan(default_mode="full")), plan]
    warm = [_text(estimate(moe, st, H100, MEGATRON)) for st in edits]
    tables = [reuse.row_book(reuse.resolved(moe, st, H100, MEGATRON)).costs.acts for st in edits]
    assert tables[1] is tables[0] and tables[-1] is tables[0]  # a tp edit keeps the table, and its elements
    assert all(table.elements for table in tables)
    kept = reuse.row_book(reuse.resolved(moe, plan, H100, MEGATRON)).costs.acts.elements
    d = reuse.resolved(moe, plan, H100, MEGATRON).dims
    assert set(kept) == {"dense", "moe", (P.MTP_KEY, "moe")}
    assert kept["dense"] == P.block(d, "dense") and kept["moe"] == P.block(d, "moe")
    assert kept[(P.MTP_KEY, "moe")] == P.mtp_module(d, "moe") != kept["moe"]
    for st, got in zip(edits, warm, strict=True):
        with monkeypatch.context() as empty:
            _nothing_kept(empty)
            assert got == _text(estimate(moe, st, H100, MEGATRON)), st
    wide = ModelSpec(**{**spec, "hidden_size": 4096})  # other dims: another table, its own elements
    estimate(wide, plan, H100, MEGATRON)
    other = reuse.row_book(reuse.resolved(wide, plan, H100, MEGATRON)).costs.acts.elements
    assert other is not kept and other["moe"] != kept["moe"]


def test_layer_groups_are_kept_by_the_values_they_read(monkeypatch):
    """The plan session makes a new model record on every edit: its layer groups are found by the values they
    read (with their types) and the layer-kind registry's generation, and equal a fresh build."""
    from estimator import model as model_module

    monkeypatch.setattr(model_module, "_STACKS", {})
    spec = dict(name="moe", hidden_size=2048, num_layers=6, num_attention_heads=16, ffn_hidden_size=8192,
                vocab_size=32000, num_experts=8, experts_per_token=2, moe_ffn_hidden_size=1024, first_k_dense=1,
                moe_layer_freq=2, mtp_layers=1)
    a, b = ModelSpec(**spec), ModelSpec(**spec)
    assert a is not b and a.layer_stack() is b.layer_stack()
    assert a.layer_stack() == a._build_stack()
    assert [g.kind for g in a.layer_stack()] == ["dense", "moe", "dense", "moe", "dense", "moe", "moe"]
    for change in ({"moe_layer_freq": 1}, {"first_k_dense": 0}, {"num_experts": 0}, {"mtp_layers": 0},
                   {"num_layers": 4}, {"model_type": "qwen3_next"},
                   {"layer_types": ("linear_attention", "full_attention") * 3}):
        other = ModelSpec(**{**spec, **change})
        assert other.layer_stack() == other._build_stack() and other.layer_stack() is not a.layer_stack(), change
    assert ModelSpec(**{**spec, "mtp_layers": True}).layer_stack() is not a.layer_stack()  # types tell apart
    monkeypatch.setattr(model_module, "kinds_generation", lambda: -1)  # a kind folder registered since
    assert ModelSpec(**spec).layer_stack() is not a.layer_stack()
    monkeypatch.setattr(model_module, "STACKS", 2)
    for n in range(1, 6):
        ModelSpec(**{**spec, "num_layers": n}).layer_stack()
    assert len(model_module._STACKS) <= 2


def test_a_row_cost_is_found_again_by_its_key():
    """``StagePricer.cost`` looks a row up by ``stage.cost_key`` written out: every row of a plan, asked again, is
    the kept cost (not priced anew), and rows with different keys have their own."""
    from estimator.stage import StagePricer, cost_key
    from estimator.stage_entries import stage_entries

    r, layout = reuse.resolved_layout(DENSE, PLAN, H100, MEGATRON)
    pricer = StagePricer(r, layout)
    entries = [e for stage in range(layout.p) for e in stage_entries(layout, stage, r.dims.tie)]
    costs = [pricer.cost(e.item, e.with_head) for e in entries]
    assert set(pricer._rows) == {cost_key(e.item, e.with_head) for e in entries}
    assert all(pricer.cost(e.item, e.with_head) is c for e, c in zip(entries, costs, strict=True))
