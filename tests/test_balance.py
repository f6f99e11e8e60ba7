"""Pipeline balancer (docs/model.md#balancing): the exact optimiser against brute force (V13 and random instances), and
the balancer on real plans re-verified by ``estimate``."""

from __future__ import annotations

import math
import random

import pytest

from estimator.balance.solver import Choice, brute_force, solve

GiB = 1.0  # the toy works in GiB and ms


def v13_table(i: int, a: int, c: int) -> list[Choice]:
    """V13: 8 identical layers, p 2, m 4, 1F1B (μ 2, 1); per layer static 1, activation 1 (none) or 0.1 (full),
    time 3 (none) or 4 (full); E on stage 0: 1 static; O on stage 1: 1 static, 0.5 activation, 6 ms."""
    mu = (2, 1)[i]
    out = []
    for r in range(c + 1):
        static = c + 1  # E on stage 0, O on stage 1: 1 GiB each
        act = mu * (r * 0.1 + (c - r) * 1.0 + (0.5 if i == 1 else 0.0))
        time = r * 4 + (c - r) * 3 + (6 if i == 1 else 0)
        out.append(Choice(time=time, memory=static + act, assignment=r))
    return out


def test_v13_balancer_toy():
    sol = solve(2, 8, 1, 7, v13_table, kappa=3, budget=14 * GiB)
    assert sol is not None
    assert sol.counts == (5, 3)
    assert [ch.assignment for ch in sol.choices] == [2, 0]
    assert [round(ch.memory, 6) for ch in sol.choices] == [12.4, 7.5]
    assert sol.times == (17, 15)
    assert sol.objective == 83
    assert brute_force(2, 8, 1, 7, v13_table, kappa=3, budget=14) == 83


@pytest.mark.parametrize("seed", range(60))
def test_solver_equals_brute_force_on_random_instances(seed):
    rng = random.Random(seed)
    p = rng.randint(1, 3)
    total = rng.randint(p, 10)
    c_min, c_max = 1, rng.randint(max(1, math.ceil(total / p)), total)
    costs: dict[tuple[int, int, int], list[Choice]] = {}

    def table(i: int, a: int, c: int) -> list[Choice]:
        key = (i, a, c)
        if key not in costs:
            n = rng.randint(1, 4)
            costs[key] = [Choice(rng.uniform(1, 10) * c, rng.uniform(0, 10) * c, k) for k in range(n)]
        return costs[key]

    kappa = rng.choice([0, 1, 3, 7])
    budget = rng.uniform(5, 60)
    expected = brute_force(p, total, c_min, c_max, table, kappa, budget)
    sol = solve(p, total, c_min, c_max, table, kappa, budget)
    if math.isinf(expected):
        assert sol is None
    else:
        assert sol is not None and sol.objective == pytest.approx(expected, rel=1e-12)
        assert sum(sol.counts) == total and all(ch.memory <= budget for ch in sol.choices)


# --------------------------------------------------------------------------------- on real plans
from pathlib import Path  # noqa: E402

from estimator.balance import balance  # noqa: E402
from estimator.balance.tables import Assignment, StageTables  # noqa: E402
from estimator.errors import ConfigError, SappError  # noqa: E402
from estimator.estimate import estimate  # noqa: E402
from estimator.formats import parse  # noqa: E402
from estimator.parsed import apply_changes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "resources" / "examples" / "deepseek_v3_671b.plan.yaml"


def test_balance_deepseek_fits_and_is_faster():
    parsed = parse([str(PLAN)])
    res = balance(parsed)
    assert res.after.fits
    assert all(max(s.total, s.optimizer_step_peak) <= res.after.budget for s in res.after.stages)
    assert res.objective_after <= res.objective_before
    assert res.after.step_time_s < res.before.step_time_s
    assert sum(res.counts) == 62 and sum(res.offsets) == 62 - 16 * 3
    assert res.strategy.offset == res.offsets
    assert list(res.recompute["full"]) == list(res.strategy.recompute.full_counts)
    # the stage tables price exactly what estimate() prices for the chosen layout
    tables = StageTables(apply_changes(parsed, {}), ("full", "selective", "comm", "both"))
    a = 0
    for i, c in enumerate(res.counts):
        assign = next(ch.assignment for ch in tables.choices(i, a, c)
                      if (ch.assignment.full, ch.assignment.sel, ch.assignment.comm) ==
                      (res.recompute["full"][i], res.recompute["selective"][i], res.recompute["comm"][i]))
        (time_,), (total,), (opt,) = tables.price(i, [tables.entries(i, a, c, assign)])
        stage = res.after.stages[i]
        assert total == pytest.approx(stage.total, rel=1e-12)
        assert opt == pytest.approx(stage.optimizer_step_peak, rel=1e-12)
        assert time_ == pytest.approx(
            float(res.after.step.stages[i].F + res.after.step.stages[i].B + res.after.step.stages[i].W +
                  res.after.step.stages[i].Rc), rel=1e-12)
        a += c


def test_balance_lower_budget_never_returns_a_plan_that_does_not_fit():
    parsed = parse([str(PLAN)])
    for budget in (40 * 2**30, 30 * 2**30):
        try:
            res = balance(parsed, budget=budget)
        except SappError as exc:  # the clear "nothing fits" message
            assert "fits the budget" in str(exc)
            continue
        assert all(max(s.total, s.optimizer_step_peak) <= budget for s in res.after.stages)


def test_balance_mindspeed_uses_one_recompute_count():
    parsed = apply_changes(parse([str(PLAN)]), {"options.framework": "mindspeed", "strategy.offset": None,
                                                "strategy.sharding": "zero1", "strategy.param_bytes": 2})
    res = balance(parsed)
    fulls = [f for f, c in zip(res.recompute["full"], res.counts, strict=True) if f < c]
    assert len(set(fulls)) <= 1  # one N for every stage (min(N, layers) where a stage holds fewer)
    assert "--num-layer-list" in res.snippets
    assert res.strategy.partition == res.counts


def test_balance_refuses_what_it_cannot_express():
    parsed = parse([str(PLAN)])
    with pytest.raises(ConfigError, match="seqsmartvpp schedule"):
        balance(apply_changes(parsed, {"strategy.vpp": 2, "strategy.offset": None, "strategy.recompute": "full",
                                       "strategy.schedule": "seqsmartvpp"}))
    with pytest.raises(ConfigError, match="torchtitan cannot express"):
        balance(apply_changes(parsed, {"options.framework": "torchtitan"}))


def test_balance_hyperparallel_fsdp2_is_priced_by_instants():
    """HyperParallel (FSDP2, offsets and activation_checkpoint ranges): the tables use the docs/model.md#fsdp2 instants,
    so the balanced plan's stages equal estimate()'s."""
    from estimator.parsed import build_plan

    values = {"model.name": "llama3-8b", "model.hidden_size": 4096, "model.num_layers": 32,
              "model.num_attention_heads": 32, "model.num_kv_heads": 8, "model.head_dim": 128,
              "model.ffn_hidden_size": 14336, "model.vocab_size": 128256, "strategy.seq_length": 8192,
              "strategy.dp": 4, "strategy.pp": 4, "strategy.micro_batches": 8, "strategy.sharding": "fsdp",
              "options.framework": "hyperparallel", "hardware.device": "A2"}
    parsed = build_plan(values)
    res = balance(parsed)
    assert not res.before.fits  # without recompute the first stages do not fit; balancing must fix that
    assert res.after.fits and res.objective_after <= res.objective_before + 1e-9
    tables = StageTables(parsed, ("full", "selective"))
    # the tables price the allocator slack by the plan's own ratio (P-SLACK-RATIO); with that ratio the balanced
    # plan's estimate is what they priced, and its tensors (no slack) equal the exact estimate's
    ratio = tables.parsed.options
    assert ratio.allocator_slack_ratio is not None and ratio.allocator_slack_ratio > 0
    same = estimate(parsed.model, res.strategy, parsed.hardware, ratio)
    a = 0
    for i, c in enumerate(res.counts):
        assign = next(ch.assignment for ch in tables.choices(i, a, c)
                      if (ch.assignment.full, ch.assignment.sel) ==
                      (res.recompute["full"][i], res.recompute["selective"][i]))
        _, (total,), _ = tables.price(i, [tables.entries(i, a, c, assign)])
        assert total == pytest.approx(same.stages[i].total, rel=1e-12)
        exact = res.after.stages[i]
        assert total - same.stages[i].allocator_slack == pytest.approx(exact.total - exact.allocator_slack,
                                                                       rel=1e-12)
        a += c
    assert "activation_checkpoint.layers" in res.snippets


# ------------------------------------------------------------------------- interleaved (vp > 1)
TINY_INTERLEAVED = """\
model: {name: tiny, hidden_size: 512, num_layers: 6, num_attention_heads: 8, num_kv_heads: 8,
        ffn_hidden_size: 2048, vocab_size: 32000}
strategy: {dp: 1, tp: 1, pp: 2, vpp: 2, micro_batch_size: 4, micro_batches: 4, seq_length: 4096}
hardware: {device: A2}
options: {framework: mindformers}
"""


@pytest.mark.parametrize("budget_gib", [9.0, 7.5, 7.0, 6.0])
def test_interleaved_balance_equals_brute_force_over_every_layout(tmp_path, monkeypatch, budget_gib):
    """p 2 × vp 2, 6 layers, counts per chunk within base 1 ± 2 and full recompute per chunk: every layout
    priced by estimate(); the balancer's objective (re-priced by estimate) is the brute-force optimum."""
    import dataclasses
    import itertools

    import estimator.balance as balancer
    from estimator.estimate import estimate

    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_INTERLEAVED)
    parsed = parse([str(path)])
    assert parsed.strategy.schedule_name == "interleaved"
    monkeypatch.setattr(balancer, "_options_for", lambda _parsed: ("full",))
    p, vp, layers, base = 2, 2, 6, 1
    kappa = parsed.strategy.micro_batches * vp - 1
    budget = budget_gib * 2**30
    best = math.inf
    for counts in itertools.product(range(1, 4), repeat=p * vp):  # [slot q = j·p + i]
        if sum(counts) != layers:
            continue
        for fulls in itertools.product(*[range(c + 1) for c in counts]):
            grid = tuple(tuple(fulls[j * p + i] for i in range(p)) for j in range(vp))
            plan = dataclasses.replace(parsed.strategy.recompute, default_mode="none", full_counts=grid,
                                       sel_counts=None, comm_counts=None, ranges=(), uniform_group=0)
            offsets = tuple(tuple(counts[j * p + i] - base for i in range(p)) for j in range(vp))
            res = estimate(parsed.model, parsed.strategy.replace(recompute=plan, offset=offsets, partition=None),
                           parsed.hardware, parsed.options)
            if any(max(s.total, s.optimizer_step_peak) > budget for s in res.stages):
                continue
            times = [float(t.F + t.B + t.W + t.Rc) for t in res.step.stages]
            best = min(best, sum(times) + kappa * max(times))
    if math.isinf(best):
        with pytest.raises(SappError, match="fits the budget"):
            balance(parsed, budget=budget)
        return
    res = balance(parsed, budget=budget)
    assert res.exact and res.objective_after == pytest.approx(best, rel=1e-12)
    assert all(max(s.total, s.optimizer_step_peak) <= budget for s in res.after.stages)


def test_interleaved_balance_of_the_qwen3_example():
    """MindFormers Qwen3-32B, pp 4 × vpp 2: offsets and full/selective/comm recompute per [chunk][stage], priced
    exactly as estimate() prices the balanced plan."""
    from estimator.balance.chunks import ChunkedTables

    parsed = parse([str(ROOT / "resources" / "examples" / "mindformers_qwen3_32b.yaml")])
    res = balance(parsed)
    assert res.exact and res.after.fits and res.objective_after < res.objective_before
    assert res.strategy.offset == res.chunk_offsets and len(res.chunk_offsets) == 2
    assert sum(map(sum, res.chunk_offsets)) == 0 and sum(res.counts) == 64
    assert res.snippets["model.model_config.offset"].startswith("[[")
    assert res.strategy.recompute.full_counts == res.chunk_recompute["full"]
    from estimator.balance import _options_for

    tables = ChunkedTables(parsed, _options_for(parsed), 2)
    for i, stage in enumerate(res.after.stages):
        vector = tuple(res.chunk_offsets[j][i] + tables.base for j in range(2))
        assert vector == stage.layer_counts
        want = tuple(Assignment(*(res.chunk_recompute[name][j][i] for name in ("full", "selective", "comm")))
                     for j in range(2))
        chosen = [ch for ch in tables._vector_choices(i, vector) if ch.assignment.chunks == want]
        assert chosen, f"stage {i}: the chosen assignment is on its vector's front"
        step = res.after.step.stages[i]
        assert chosen[0].time == pytest.approx(float(step.F + step.B + step.W + step.Rc), rel=1e-12)
        assert chosen[0].memory == pytest.approx(max(stage.total, stage.optimizer_step_peak), rel=1e-12)


def test_a_plan_that_does_not_fit_is_said_so_beside_its_balance():
    parsed = parse([str(PLAN)])
    before = balance(parsed).before
    worst = max(max(s.total, s.optimizer_step_peak) for s in before.stages)
    res = balance(parsed, budget=worst - 2**30)  # 1 GiB below the plan as written
    assert res.notes[0].startswith("the plan as written does not fit")
    assert all(max(s.total, s.optimizer_step_peak) <= worst - 2**30 for s in res.after.stages)
    assert not any("does not fit" in note for note in balance(parsed).notes)


def test_mindspeed_dualpipev_gets_its_one_recompute_count(tmp_path):
    """MindSpeed-LLM cannot state layers per chunk: the layout stays and N of --recompute-num-layers is the
    fastest that fits, checked against every N priced by estimate(); the written script re-estimates the same."""
    import dataclasses

    from estimator.estimate import estimate
    from estimator.export import export

    path = ROOT / "resources" / "examples" / "mindspeed_deepseek_v3_671b_pretrain.sh"
    parsed = parse([str(path)], overrides={"hardware.device": "A3"})
    budget = 58 * 2**30
    res = balance(parsed, budget=budget)
    assert res.exact and res.strategy.offset == parsed.strategy.offset
    assert res.strategy.partition == parsed.strategy.partition
    assert res.strategy.noop_layers == parsed.strategy.noop_layers
    fitting = {}
    for n in range(0, 5):
        plan = dataclasses.replace(parsed.strategy.recompute, default_mode="none", full_counts=n or None,
                                   sel_counts=None, comm_counts=None, ranges=(), uniform_group=0)
        r = estimate(parsed.model, parsed.strategy.replace(recompute=plan), parsed.hardware, parsed.options)
        if max(max(s.total, s.optimizer_step_peak) for s in r.stages) <= budget:
            fitting[n] = r.step_time_s
    best_n = min(fitting, key=fitting.get)
    assert res.strategy.recompute.full_counts == best_n
    assert res.objective_after == pytest.approx(fitting[best_n], rel=1e-12)
    assert f"--recompute-num-layers {best_n}" in res.snippets["recompute"]
    assert res.notes[0].startswith("the plan as written does not fit")
    (text,) = export(parsed, res.strategy).values()
    out = tmp_path / "balanced.sh"
    out.write_text(text)
    again = estimate(*_plan_parts(parse([str(out)], overrides={"hardware.device": "A3"})))
    assert again.peak_bytes == pytest.approx(res.after.peak_bytes, rel=1e-12)


def _plan_parts(parsed):
    return parsed.model, parsed.strategy, parsed.hardware, parsed.options


def test_zbv_on_mindformers_is_balanced_by_its_pipeline_time(tmp_path):
    """ZB-V (MindFormers zero_bubble_v): counts and recompute per chunk in V order, scored by m·S_max + (p − 1)·
    bubble; the tables price what estimate() prices, and the result is no slower than any uniform layout with
    one full-recompute count per chunk that fits."""
    import dataclasses

    from estimator.balance.chunks import ChunkedTables
    from estimator.estimate import estimate

    path = tmp_path / "zbv.yaml"
    path.write_text(TINY_INTERLEAVED.replace("num_layers: 6", "num_layers: 12").replace(
        "vpp: 2,", "vpp: 2, schedule: zbv,"))
    parsed = parse([str(path)])
    assert parsed.strategy.schedule_name == "zbv"
    # 7 GiB of tensors, beside the device-level parts every stage holds (runtime context, HCCL buffers)
    c = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options).stages[0].bytes_by_category
    budget = 7 * 2**30 + c["runtime_context"] + c["comm_library"]
    res = balance(parsed, budget=budget)
    assert not res.exact and any("pipeline time" in note for note in res.notes)
    assert all(max(s.total, s.optimizer_step_peak) <= budget for s in res.after.stages)
    assert res.objective_after == pytest.approx(float(res.after.step.pipeline_s), rel=1e-12)
    # the chosen stages, priced by the tables, are what estimate() prices
    from estimator.balance import _options_for

    tables = ChunkedTables(parsed, _options_for(parsed), 2)
    for i, stage in enumerate(res.after.stages):
        vector = stage.layer_counts
        want = tuple(Assignment(*(res.chunk_recompute[name][j][i] for name in ("full", "selective", "comm")))
                     for j in range(2))
        chosen = [ch for ch in tables._vector_choices(i, vector) if ch.assignment.chunks == want]
        assert chosen
        step = res.after.step.stages[i]
        assert chosen[0].time == pytest.approx(float(step.F + step.B + step.W + step.Rc), rel=1e-12)
        assert chosen[0].memory == pytest.approx(max(stage.total, stage.optimizer_step_peak), rel=1e-12)
    # no uniform layout with one full-recompute count per chunk that fits is faster
    for n in range(0, 4):
        plan = dataclasses.replace(parsed.strategy.recompute, default_mode="none", full_counts=n or None,
                                   ranges=(), uniform_group=0)
        r = estimate(parsed.model, parsed.strategy.replace(recompute=plan), parsed.hardware, parsed.options)
        if all(max(s.total, s.optimizer_step_peak) <= budget for s in r.stages):
            assert res.objective_after <= float(r.step.pipeline_s) * (1 + 1e-12)
