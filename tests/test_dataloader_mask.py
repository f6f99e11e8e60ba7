"""[W-MASK] Megatron-LM's dataloader attention mask (docs/model.md#working-overhead, docs/decisions.md D-MG-AUDIT):
by Megatron-LM's default each micro-batch's b×1×s×s boolean mask is fetched on the chunks holding the embedding or
the output layer, s/cp of its rows kept through the chunk's forward. The numbers below are derived by hand from
that rule and the [W-BWD] forward working set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from format_helpers import variant

from estimator import ModelSpec, RunOptions, Strategy, estimate, find_preset
from estimator.cli import main
from estimator.explain import Quantity
from estimator.formats import parse

ROOT = Path(__file__).resolve().parents[1]
H100 = find_preset("H100-80G")
H, HFF, V, S = 256, 1024, 1024, 32768  # v = 1024 is already a multiple of Megatron's 128·t
TINY = ModelSpec(name="tiny", family="gpt3", hidden_size=H, num_layers=2, num_attention_heads=4, ffn_hidden_size=HFF,
                 vocab_size=V)
MASK, PLAIN = RunOptions(framework="megatron", dataloader_mask=True), RunOptions(framework="megatron")
DEFAULTS = ROOT / "tests" / "fixtures" / "megatron" / "train_gpt3_defaults.sh"


def _find(q: Quantity, formula_id: str) -> list[Quantity]:
    return ([q] if q.formula_id == formula_id else []) + [x for c in q.children for x in _find(c, formula_id)]


def working(strategy: Strategy, options: RunOptions, stage: int = 0) -> float:
    return estimate(TINY, strategy, H100, options).stages[stage].bytes_by_category["working_overhead"]


@pytest.mark.parametrize("cp", [1, 2])
def test_the_mask_beside_the_largest_forward_working_set(cp):
    """One stage holds the embedding and the output: W = F + M, with M = b·(s/cp)·s = 1 GiB (cp 1) or 512 MiB
    (cp 2) and F the layer's forward working set T·β_c·(2h + hff) (> the loss' T·β_c·v_pad), T = b·s/cp."""
    plan = Strategy(tp=1, pp=1, dp=1, cp=cp, seq_length=S, micro_batch_size=1, micro_batches=1)
    tokens = S // cp
    forward = tokens * 2 * (2 * H + HFF)
    assert forward > tokens * 2 * V
    mask = 1 * tokens * S
    assert working(plan, MASK) == forward + mask == (1_174_405_120 if cp == 1 else 587_202_560)
    assert working(plan, PLAIN) < forward + mask


def test_while_the_fetch_slices_the_whole_mask_is_held_before_the_activations():
    """cp 2 with flash attention (small activations): the fetch holds the whole b·s·s mask and its b·(s/cp)·s slice
    before any activation of the micro-batch is stored, W = b·s·s + b·(s/cp)·s − A_chunk."""
    plan = Strategy(tp=1, pp=1, dp=1, cp=2, seq_length=S, micro_batch_size=1, micro_batches=1, flash_attention=True)
    result = estimate(TINY, plan, H100, MASK, explain=True)
    stage = result.stages[0]
    assert stage.bytes_by_category["working_overhead"] == S * S + S * (S // 2) - stage.bytes_by_category["activations"]
    assert stage.bytes_by_category["working_overhead"] > (S // 2) * 2 * (2 * H + HFF) + S * (S // 2)
    row = next(r for r in stage.layers if r.kind == "working")
    assert "[W-MASK]" in row.note
    tree = stage.explain
    assert tree is not None and tree.check() == []
    [node] = _find(tree, "W-MASK")
    assert node.value == stage.bytes_by_category["working_overhead"]


def test_only_the_chunks_that_fetch_the_batch_hold_it():
    """Three stages: the middle one fetches nothing (Megatron-LM's get_batch returns None there)."""
    deep = TINY.replace(num_layers=3)
    plan = Strategy(tp=1, pp=3, dp=1, seq_length=S, micro_batch_size=1, micro_batches=3)
    on, off = estimate(deep, plan, H100, MASK), estimate(deep, plan, H100, PLAIN)
    work = [(a.bytes_by_category["working_overhead"], b.bytes_by_category["working_overhead"])
            for a, b in zip(on.stages, off.stages, strict=True)]
    assert work[1][0] == work[1][1]
    assert work[0][0] > work[0][1] and work[2][0] > work[2][1]


def test_a_megatron_lm_script_prices_it_unless_it_turns_it_off(capsys, tmp_path):
    """The fixture (b 4, s 1024, cp 2): the last stage grows by M = 4·512·1024 = 2 MiB over the same plan without
    the mask; --no-create-attention-mask-in-dataloader states it off (and nothing is assumed)."""
    parsed = parse([str(DEFAULTS)])
    assert parsed.options.dataloader_mask is True
    assert any(a.field == "options.dataloader_mask" and "[W-MASK]" in str(a.source) for a in parsed.assumptions)
    on = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    off = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options.replace(dataloader_mask=False))
    grown = [a.bytes_by_category["working_overhead"] - b.bytes_by_category["working_overhead"]
             for a, b in zip(on.stages, off.stages, strict=True)]
    assert grown == [0, 4 * 512 * 1024]  # the first stage's backward working set is larger than F + M
    plain = variant(tmp_path, DEFAULTS, ("    --fp16\n", "    --fp16\n    --no-create-attention-mask-in-dataloader\n"))
    assert parse([plain]).options.dataloader_mask is False
    assert main(["estimate", plain, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert not [w for w in out["warnings"] if "attention mask" in w["text"]]


def test_megatrons_unfused_softmax_keeping_it_for_the_backward_is_said(tmp_path):
    local = variant(tmp_path, DEFAULTS, ("    --fp16\n", "    --fp16\n    --transformer-impl local\n"
                                                       "    --attention-backend local\n"))
    said = [w.text for w in parse([local]).warnings if "masked_fill_" in w.text]
    assert len(said) == 1 and "up to 2 MiB per micro-batch in flight" in said[0] and "lower bound" in said[0]
    assert not [w for w in parse([str(DEFAULTS)]).warnings if "masked_fill_" in w.text]


def test_the_search_prices_it_as_the_estimate_does():
    """The array path (a search group: degrees as numpy arrays) equals the scalar estimate with the mask."""
    import numpy as np
    from test_vectorised import DENSE, candidates

    from estimator import RecomputePlan, ShardingSpec
    from estimator.layout import build_layout, layout_inputs
    from estimator.resolve import resolve
    from estimator.result import CATEGORIES
    from estimator.vector import price_group, stack_par, with_par

    options = RunOptions(framework="megatron", allocator_slack_ratio=0.125, dataloader_mask=True)
    base = Strategy(seq_length=32768, pp=4, micro_batches=8, sharding=ShardingSpec(mode="zero1"),
                    recompute=RecomputePlan(default_mode="full"))
    strategies, scalars, plain = [], [], []
    for st in candidates(DENSE, base, "megatron"):
        try:
            scalars.append(estimate(DENSE, st, H100, options))
        except Exception:  # a candidate the rules refuse (StrategyError)
            continue
        plain.append(estimate(DENSE, st, H100, options.replace(dataloader_mask=False)))
        strategies.append(st)
    assert len(strategies) >= 10
    changed = sum(a.stages[0].bytes_by_category["working_overhead"] != b.stages[0].bytes_by_category[
        "working_overhead"] for a, b in zip(scalars, plain, strict=True))
    assert changed >= 3  # the mask sets the first stage's working overhead in some of them
    resolved = [resolve(DENSE, st, H100, options) for st in strategies]
    vec = price_group(with_par(resolved[0], stack_par([r.par for r in resolved])),
                      build_layout(layout_inputs(resolved[0])))
    for c, scalar in enumerate(scalars):
        for i, stage in enumerate(scalar.stages):
            for key in CATEGORIES:
                assert abs(vec[key][i, c] - stage.bytes_by_category[key]) <= 1.0, (c, i, key)
            assert abs(vec["total"][i, c] - stage.total) <= 1.0
    assert np.isfinite(vec["total"]).all()
