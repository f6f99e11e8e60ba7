"""A plan's stages priced at once as array elements (``assembly.stages``, P-SCALAR-SPEED): for a plan whose
allocator is not replayed, every stage equals the stage priced one by one (``assembly.price_stage``) to the last
bit — categories, totals, optimizer-step peak, host memory, device notes, labels and per-layer rows, and the
types of its numbers — on the bundled examples, the benchmark inputs and generated plans, and through a
session's edits."""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from pathlib import Path

import pytest
from edit_sequences import walk

from estimator import (
    ModelSpec,
    RecomputePlan,
    RunOptions,
    ShardingSpec,
    Strategy,
    assembly,
    estimate,
    find_preset,
    reuse,
)
from estimator import model as model_module
from estimator.assembly import memory, stage_chunks, stage_form, stages
from estimator.device import memory as device_memory
from estimator.device.memory import replays_allocator
from estimator.errors import SappError
from estimator.formats import parse
from estimator.layout import build_layout, layout_inputs
from estimator.resolve import resolve
from estimator.result import StageResult
from estimator.schedules import inflight_profile
from estimator.session import PlanSession
from estimator.stage import StagePricer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "resources" / "examples"
PAIRS = {"mindspeed_qwen2_5vl_7b_finetune.sh": "mindspeed_qwen2_5vl_7b_model.json"}
H100 = find_preset("H100-80G")
DENSE = ModelSpec(name="llama3-8b", hidden_size=4096, num_layers=12, num_attention_heads=32, num_kv_heads=8,
                  ffn_hidden_size=14336, vocab_size=128256)
TIED = dataclasses.replace(DENSE, tie_embeddings=True)
MOE = ModelSpec(name="deepseek-v3", hidden_size=7168, num_layers=27, first_k_dense=3, ffn_hidden_size=18432,
                num_attention_heads=128, q_lora_rank=1536, kv_lora_rank=512, head_dim=128, qk_rope_head_dim=64,
                v_head_dim=128, num_experts=64, experts_per_token=6, num_shared_experts=1, moe_ffn_hidden_size=2048,
                vocab_size=129280, mtp_layers=1)
FIELDS = [f.name for f in dataclasses.fields(StageResult) if f.name not in ("layer_source", "explain")]


def _files() -> list[list[Path]]:
    paired = set(PAIRS.values())
    out = [[p, *([EXAMPLES / PAIRS[p.name]] if p.name in PAIRS else [])] for p in sorted(EXAMPLES.iterdir())
           if p.name != "index.yaml" and p.name not in paired]
    return out + [[p] for p in sorted((ROOT / "benchmarks" / "inputs").glob("*.plan.yaml"))]


def _unreplayed(options: RunOptions, framework_static: bool) -> list[RunOptions]:
    """The plan's options where its allocator is not replayed (MindSpore's static pool), else with a stated slack
    ratio (and a calibrated factor, fraction): the plans that take the array path."""
    if framework_static:
        return [options, dataclasses.replace(options, allocator_slack_fraction=0.07)]
    return [dataclasses.replace(options, allocator_slack_ratio=0.11),
            dataclasses.replace(options, allocator_slack_ratio=0.11, allocator_slack_factor=1.3,
                                allocator_slack_fraction=0.02)]


def _cases() -> list[tuple[str, ModelSpec, Strategy, object, RunOptions]]:
    out = []
    for paths in _files():
        try:
            parsed = parse([str(p) for p in paths], devices=256 if paths[0].suffix == ".toml" else None)
        except SappError:
            continue
        r = resolve(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
        for k, opts in enumerate(_unreplayed(parsed.options, not replays_allocator(r))):
            out.append((f"{paths[0].name}#{k}", parsed.model, parsed.strategy, parsed.hardware, opts))
    # the reserve reads the process groups (a tied table's end stages have one more) and the dynamic bytes
    reserve = {"reserve": 3.0 * 2**20, "frag_fraction": 0.05, "comm_lib_per_group": 7.0 * 2**20}
    mf = RunOptions(framework="mindformers", **reserve)
    mega = RunOptions(framework="megatron", allocator_slack_ratio=0.09, **reserve)
    nvls = dataclasses.replace(mega, nccl_version="2.21.5")
    for name, model, st, opts in (
            ("tied pp4 m4", TIED, Strategy(seq_length=4096, tp=2, pp=4, dp=2, micro_batches=4), mega),
            ("tied pp4 m8 vpp", TIED, Strategy(seq_length=4096, tp=2, pp=4, vpp=3, dp=2, micro_batches=8), nvls),
            ("tied pp2 mf", TIED, Strategy(seq_length=4096, tp=4, pp=2, dp=2, micro_batches=4,
                                           sharding=ShardingSpec(mode="mf_op")), mf),
            ("dense pp1", DENSE, Strategy(seq_length=4096, tp=8, pp=1, dp=2, micro_batches=4), mega),
            # offloaded activations: stages of one form at other in-flight counts hold other host bytes
            ("offload pp4", DENSE, Strategy(seq_length=4096, tp=2, pp=4, dp=2, micro_batches=8,
                                            offload_activations=("layer",)), mega),
            ("zbv MoE", MOE, Strategy(seq_length=4096, tp=2, pp=2, vpp=2, dp=4, ep=4, micro_batches=8,
                                      schedule="zbv", mtp_in_offset=True, sharding=ShardingSpec(mode="mf_op"),
                                      recompute=RecomputePlan(full_counts=(2, 1))), mf),
            ("MoE selective pp3", MOE, Strategy(seq_length=4096, tp=4, pp=3, dp=2, ep=2, micro_batches=6,
                                                sequence_parallel=True,
                                                recompute=RecomputePlan(default_mode="selective")), nvls)):
        out.append((name, model, st, H100, opts))
    return out


CASES = _cases()


def _nothing_kept(patch: pytest.MonkeyPatch) -> None:
    """Every table an estimate keeps for the next one, empty (the process's kept ones untouched)."""
    patch.setattr(model_module, "_STACKS", {})
    for name in ("_BOOKS", "_COSTS", "_RESOLVED", "_TABLES", "_KEYS"):
        patch.setattr(reuse, name, OrderedDict())
    patch.setattr(reuse, "_TWINS", {})
    patch.setattr(assembly, "_LABELS", {})
    patch.setattr(device_memory, "_EVENTS", OrderedDict())
    patch.setattr(device_memory, "_REPLAYS", OrderedDict())


def _one_by_one(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(assembly, "price_plan_stages", lambda pricer, points: None)


def _same_stages(got, want) -> None:
    assert len(got.stages) == len(want.stages)
    for a, b in zip(got.stages, want.stages, strict=True):
        for name in FIELDS:
            assert getattr(a, name) == getattr(b, name), name
        for mine, theirs in ((a.bytes_by_category, b.bytes_by_category), (a.host_bytes, b.host_bytes),
                             (a.device, b.device)):
            assert list(mine) == list(theirs)  # the same keys in the same order
            assert [type(v) for v in mine.values()] == [type(v) for v in theirs.values()]
        assert (type(a.total), type(a.optimizer_step_peak)) == (type(b.total), type(b.optimizer_step_peak))
        assert a.layers == b.layers
        assert [row.note for row in a.layers] == [row.note for row in b.layers]
    assert json.dumps(got.to_dict(), sort_keys=True, default=repr) == \
        json.dumps(want.to_dict(), sort_keys=True, default=repr)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_plans_stages_as_arrays_equal_the_stages_one_by_one(case, monkeypatch):
    _name, model, st, hw, opts = case
    r = resolve(model, st, hw, opts)
    made = []
    real = stages.as_arrays
    monkeypatch.setattr(stages, "as_arrays", lambda *a: made.append(a[1]) or real(*a))
    with monkeypatch.context() as m:
        _nothing_kept(m)
        arrays = estimate(model, st, hw, opts)
        again = estimate(model, st, hw, opts)  # every stage kept
        other = estimate(model, st.replace(micro_batches=st.micro_batches * 2), hw, opts)
    if replays_allocator(r) or r.flags.fsdp2:  # priced one by one
        assert made == []
        return
    assert made and list(made[0]) == list(range(r.par.p))
    with monkeypatch.context() as m:
        _nothing_kept(m)
        _one_by_one(m)
        one = estimate(model, st, hw, opts)
        one_other = estimate(model, st.replace(micro_batches=st.micro_batches * 2), hw, opts)
    _same_stages(arrays, one)
    _same_stages(again, one)
    _same_stages(other, one_other)


def test_the_array_elements_equal_the_one_stage_assembly():
    """``stages.as_arrays`` against ``memory.unkept_stage`` on a pricer of its own: every StageMemory field but
    the stage terms' views (which the array path does not keep) and each stage's device notes."""
    parsed = parse([str(ROOT / "benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml")])
    r = resolve(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    layout = build_layout(layout_inputs(r))
    profile = inflight_profile(r.flags.schedule, r.par.p, r.par.vp, r.par.m, n_s=r.par.n_s)
    points = [memory.profile_points(prof) for prof in profile]
    pricer = StagePricer(r, layout)
    forms = [stage_form(pricer, i) for i in range(r.par.p)]
    order = [5, 0, 15, 3, 14]  # any subset, in any order
    made = stages.as_arrays(pricer, order, [forms[i] for i in order],
                            [stage_chunks(pricer, forms[i]) for i in order], [points[i] for i in order])
    for i, (mem, device) in zip(order, made, strict=True):
        own = StagePricer(r, layout)
        want = memory.unkept_stage(own, i, forms[i], points[i], stage_chunks(own, forms[i]))
        assert mem.stage_terms is None and want.stage_terms
        assert mem._replace(stage_terms=()) == want._replace(stage_terms=())
        assert [type(v) for v in mem.categories.values()] == [type(v) for v in want.categories.values()]
        assert device == own.memo.get(("device", i), {})
    # each stage's notes are its own (the slack term writes a static pool's one note to every stage; the
    # communicators' terms add to a stage's notes in place)
    notes = [pricer.memo[("device", i)] for i in order]
    notes[0]["probe"] = 1.0
    assert all("probe" not in note for note in notes[1:])


@pytest.mark.parametrize("path", ["benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml",
                                  "resources/examples/mindformers_qwen3_32b.yaml"])
def test_an_edit_sequence_equals_stages_priced_one_by_one_with_nothing_kept(path, monkeypatch):
    """tp, pp, recompute and micro-batch edits through the session, with undo: every estimate (its stages as
    array elements, kept parts reused) equals one priced stage by stage with nothing kept."""
    session = PlanSession()
    session.open([ROOT / path])
    for _, p in walk(session, ("tp", "pp", "undo", "rec", "m", "undo", "undo", "undo", "pp", "tp", "rec", "undo",
                               "m")):
        warm = estimate(p.model, p.strategy, p.hardware, p.options)
        with monkeypatch.context() as cold:
            _nothing_kept(cold)
            _one_by_one(cold)
            _same_stages(warm, estimate(p.model, p.strategy, p.hardware, p.options))
