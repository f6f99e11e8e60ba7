"""Fidelity against the original SAPP-ND estimator and the memory its authors recorded (docs/fidelity.md, issue 3).

The upstream numbers come from ../shared/upstream_outputs (a reconstruction of the early sapp_nd snapshot run on its
own inputs; MiB, int-truncated). Every test skips without ../shared. The tests pin the comparison the document
reports: where the spec keeps upstream's rule our numbers reproduce upstream's; where a decision changes it the
difference has the documented size; and our estimates of the DeepSeek-V3 test case stay in the documented error band
of the recorded per-stage memory. When an estimator change moves one of these numbers, update docs/fidelity.md too.

The DeepSeek inputs state ``moe_config.expert_model_parallel: 1``, which the MindFormers reader takes as etp 1
(P-MF-ETP): "default" below is etp 1, and ETP4 reproduces the original default rule (docs/model.md#expert-layout) the
page quotes as "before".
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from statistics import linear_regression
from typing import Any

import pytest

from estimator import estimate
from estimator.formats import parse
from estimator.parsed import apply_changes

MIB = 2**20
UP = "upstream_outputs"
MIXTRAL = "sapp_nd__memory_estimation__test_cases__mixtral__default.mindformers.yaml"
DEEPSEEK = "sapp_nd__memory_estimation__test_cases__deepseek3__default.yaml"
QWEN = "sapp_nd__nd__yamls__pretrain_qwen3_72b.yaml"
ND_DEEPSEEK = "sapp_nd__nd__yamls__deepseek.yaml"

# Upstream's choices, as far as RunOptions express them (docs/fidelity.md "Reading the comparison"). On these runs
# cp = 1, vp = 1 and upstream_rule is already the MindFormers default, so only the buffer mode changes a number.
COMPAT = {"options.comm_buffer_mode": "upstream_sum", "options.params_divided_by_cp": True,
          "options.vpp_variant": "upstream_big", "options.grad_persistence": "upstream_rule"}
ETP1 = {"strategy.etp": 1}  # what the DeepSeek files state (expert_model_parallel: 1): a no-op on them (P-MF-ETP)
ETP4 = {"strategy.etp": 4}  # the default before P-MF-ETP (etp = t when ep ≤ d·cp, docs/model.md#expert-layout)
OFFSET_14 = [0, 0, *[1] * 14]  # the layout (3, 3, 4 × 14) of the first two recorded blocks
BLOCKS = {  # the three comment blocks of the DeepSeek-V3 test case yaml, in file order
    "B1": {"strategy.recompute": "none", "strategy.offset": OFFSET_14},
    "B2": {"strategy.recompute": [1] * 16, "strategy.offset": OFFSET_14},
    "B3": {},  # the yaml's own settings: recompute [1, 2 × 13, 1, 1], offset [0, 0, 1 × 12, 2, 0]
}


# ------------------------------------------------------------------------------------------------ helpers
@cache
def _upstream(root: Path, name: str) -> dict[str, Any]:
    return json.loads((root / UP / name).read_text())


def upstream(shared_dir: Path, name: str) -> dict[str, Any]:
    return _upstream(shared_dir, name)


@cache
def _ours(root: Path, name: str, changes: tuple[tuple[str, Any], ...]):
    parsed = parse([root / UP / "inputs" / name])
    if changes:
        parsed = apply_changes(parsed, {k: list(v) if isinstance(v, tuple) else v for k, v in changes})
    return estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)


# The spec's device-level view (D6: one hidden 1 GiB safety buffer, no runtime context, no HCCL buffers), which
# upstream shares: these comparisons are of the tensor model. Issue 10's device-level parts (runtime context, HCCL
# buffers; MindSpore plans statically, so no allocator slack) are measured in docs/fidelity.md §11.
SPEC_DEVICE = {"options.reserve": 2**30, "options.runtime_context": 0, "options.comm_library_factor": 0.0}


def ours(shared_dir: Path, name: str, *change_sets: dict[str, Any]):
    merged: dict[str, Any] = dict(SPEC_DEVICE)
    for changes in change_sets:
        merged.update(changes)
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in merged.items()))
    return _ours(shared_dir, name, frozen)


def cat(stage, key: str) -> float:
    """One category of a stage, MiB."""
    return stage.bytes_by_category[key] / MIB


def row(stage, kind: str, index: int | None = None):
    return next(r for r in stage.layers if r.kind == kind and (index is None or r.index == index))


def row_mib(stage, kind: str, index: int | None, key: str) -> float:
    return row(stage, kind, index).by_category()[key] / MIB


def node(up_stage: dict[str, Any], layer: Any, kind: str) -> dict[str, int]:
    """An upstream per-node log entry: (stage, chunk, layer, kind) -> {formula: MiB}."""
    return up_stage["node_log"][f"({up_stage['stage']}, 0, {layer!r}, {kind!r})"]


def errors(ours_totals: list[float], recorded: list[int]) -> list[float]:
    return [100 * (o / m - 1) for o, m in zip(ours_totals, recorded, strict=True)]


def recorded(shared_dir: Path, block: int) -> list[int]:
    data = upstream(shared_dir, "deepseek3_test_case_measured_memory_from_yaml_comments.json")
    return [s["measured_MB"] for s in data["blocks"][block]["stages"]]


# ------------------------------------------------------------------------------------------------ Mixtral
# D12: upstream prices an h-sized bias on each projection. Per layer: 4·h = 16,384 attention elements (dense
# domain, ÷ os 8 for parameters and states, ÷ t 1 for gradients) and 8 experts × 3 × hff = 344,064 expert elements
# (÷ 8 everywhere). Bytes per layer at β_p = β_g = 2, 2·β_os = 8:
BIAS_P = 2 * (16_384 / 8 + 344_064 / 8)        # 90,112
BIAS_OS = 8 * (16_384 / 8 + 344_064 / 8)       # 360,448
BIAS_G = 2 * (16_384 + 344_064 / 8)            # 118,784
# O: upstream's head has a v bias and no final norm; ours has the final norm (c_norm·h) and no bias.
HEAD_P = 2 * (32_000 - 4_096) / 8
HEAD_OS = 8 * (32_000 - 4_096) / 8
HEAD_G = 2 * (32_000 - 4_096)


def test_mixtral_static_reproduces_upstream_up_to_biases_and_embedding_gradient(shared_dir):
    up = upstream(shared_dir, "run_mixtral_default.json")["per_stage"]
    r = ours(shared_dir, MIXTRAL, COMPAT)
    for i, (s, u) in enumerate(zip(r.stages, up, strict=True)):
        head = i == 1
        params = s.bytes_by_category["parameters"] + 16 * BIAS_P + head * HEAD_P
        states = s.bytes_by_category["optimizer_states"] + 16 * BIAS_OS + head * HEAD_OS
        # upstream truncates bytes/2^20 to an int: with the biases added back we give its integers exactly
        assert int(params / MIB) == u["ModelParameters"]
        assert int(states / MIB) == u["OptimizerStates"]
        # without the bias correction the difference is the documented −1.4 / −5.5 MiB
        assert cat(s, "parameters") - u["ModelParameters"] == pytest.approx(-1.4, abs=1.0)
        assert cat(s, "optimizer_states") - u["OptimizerStates"] == pytest.approx(-5.5, abs=1.0)
    grads0 = r.stages[0].bytes_by_category["gradients"] + 16 * BIAS_G
    grads1 = r.stages[1].bytes_by_category["gradients"] + 16 * BIAS_G + HEAD_G
    assert int(grads1 / MIB) == up[1]["AccumulGradients"]
    # D11: upstream divides the embedding gradient by shard_embed = 8, we keep the whole table's gradient
    # (mf_op without gradient_accumulation_shard): 250 MiB − 31.25 MiB more on stage 0.
    assert (grads0 / MIB - up[0]["AccumulGradients"]) == pytest.approx(250 - 31.25, abs=1.5)
    assert row_mib(r.stages[0], "embedding", None, "gradients") == pytest.approx(250.0, abs=0.01)
    assert node(up[0], "", "E")["accu_grad"] == 31


def test_mixtral_dynamic_terms_against_the_node_log(shared_dir):
    run = upstream(shared_dir, "run_mixtral_default.json")
    up = run["per_stage"]
    r = ours(shared_dir, MIXTRAL)
    p, m = run["strategy"]["pp"], run["ccfg_after_hooks"]["m"]
    for i, s in enumerate(r.stages):
        # D13 changes nothing here (m ≥ p): in flight min(p − i, m) = upstream's min(p, m) − i
        assert s.peak_vector == (min(p - i, m),) == (min(p, m) - i,)
        full = row(s, "moe", 16 * i)
        assert full.option == "full"
        # [A-FULL] β_r·h·T/d_in = 2·4096·4096 = 32 MiB per micro-batch, upstream's fullrec_layer_activ
        assert full.by_category()["activations"] / MIB / full.inflight == 32.0
        assert node(up[i], 16 * i, "F")["_activ"] == 32 * (min(p, m) - i)
        # D6: the hidden 1 GiB safety buffer is our explicit reserve
        assert cat(s, "reserve") == 1024.0
    # D17: embedding activations are token ids (8 B/token), upstream stores the embedding output (β_c·h per token)
    assert row_mib(r.stages[0], "embedding", None, "activations") == pytest.approx(8 * 4096 * 2 / MIB)
    assert node(up[0], "", "E")["_activ"] == 64
    # docs/model.md#slot-table: ours o.norm_in + o.head_in + statistics + fp32 loss softmax = 564 MiB; upstream s·h·4 +
    # s·v·β_c = 314
    assert row_mib(r.stages[1], "output", None, "activations") == pytest.approx(564.0, abs=0.05)
    assert node(up[1], "", "O")["_activ"] == 314
    # D15: stage 0 working = A(ℓ15, none) 1088.8 + Gw 556.8; upstream's overhead = A(none) 1371 + comm 144
    assert cat(r.stages[0], "working_overhead") == pytest.approx(1645.6, abs=0.1)
    rec = node(up[0], "rec_15", "N")
    assert rec["_activ"] + rec["_comm"] == 1515


def test_mixtral_totals_as_documented(shared_dir):
    run = upstream(shared_dir, "run_mixtral_default.json")
    assert run["peak_MB"] == 39474
    default, compat = ours(shared_dir, MIXTRAL), ours(shared_dir, MIXTRAL, COMPAT)
    assert default.peak_stage == compat.peak_stage == 0
    assert default.peak_bytes / MIB == pytest.approx(40174.0, abs=1)
    assert compat.peak_bytes / MIB == pytest.approx(42222.0, abs=1)
    assert default.stages[1].total / MIB == pytest.approx(39662.0, abs=1)
    assert compat.stages[1].total / MIB == pytest.approx(41710.0, abs=1)
    # docs/model.md#communication-buffers resident gathered weights (mf_op, parallel_optimizer_comm_recompute False):
    # β_c·E per layer, only for the weights a shard splits: the dense part (os = 8), not the experts (os_e = 1: nothing
    # is gathered; F1 fixed)
    moe = row(default.stages[0], "moe", 0).by_category()
    assert moe["communication_buffers"] == 2 * 41_984_000
    assert moe["optimizer_states"] == 8 * (41_984_000 / 8 + 176_160_768 / 1)  # sh_oe = os_e = 1
    assert cat(default.stages[0], "communication_buffers") == pytest.approx(1736.05, abs=0.1)
    assert cat(default.stages[1], "communication_buffers") == pytest.approx(1736.06, abs=0.1)
    # per stage: 16 × β_c·E_d (80.08) + the embedding or head (250) + the D14 transient maximum (204.8)
    assert row_mib(default.stages[0], "embedding", None, "communication_buffers") == pytest.approx(250.0, abs=0.01)
    assert cat(default.stages[0], "communication_buffers") == pytest.approx(16 * 80.078 + 250 + 204.8, abs=0.1)
    # before the F1 fix the 16 layers' experts (β_c·E_e = 336 MiB each) were counted too: 45,550 / 47,598 MiB
    before = 16 * 2 * 176_160_768 / MIB
    assert before == 5376.0
    assert default.peak_bytes / MIB + before == pytest.approx(45550.0, abs=1)
    assert compat.peak_bytes / MIB + before == pytest.approx(47598.0, abs=1)


# ------------------------------------------------------------------------------------------------ DeepSeek-V3
@pytest.mark.parametrize("name", [DEEPSEEK, ND_DEEPSEEK])
def test_deepseek_inputs_read_etp_1_from_expert_model_parallel(shared_dir, tmp_path, name):
    """P-MF-ETP: both DeepSeek files state moe_config.expert_model_parallel: 1, which the reader takes as etp 1 (as
    upstream does: t_exp 1). The key is what does it: without it the default rule (docs/model.md#expert-layout) gives
    etp = t = 4."""
    src = shared_dir / UP / "inputs" / name
    parsed = parse([src])
    assert parsed.strategy.etp == 1
    prov = parsed.provenance["strategy.etp"]
    assert (prov.source, prov.key, prov.raw) == ("file", "moe_config.expert_model_parallel", 1)
    if name == DEEPSEEK:
        assert upstream(shared_dir, "run_deepseek3_default.json")["ccfg_after_hooks"]["t_exp"] == 1
    text = src.read_text()
    assert text.count("  expert_model_parallel: 1\n") == 1
    without = tmp_path / name
    without.write_text(text.replace("  expert_model_parallel: 1\n", ""))
    stripped = parse([without])
    assert stripped.strategy.etp is None and "strategy.etp" not in stripped.provenance
    stripped = apply_changes(stripped, SPEC_DEVICE)
    r = estimate(stripped.model, stripped.strategy, stripped.hardware, stripped.options)
    assert [s.total for s in r.stages] == [s.total for s in ours(shared_dir, name, ETP4).stages]
    assert [s.total for s in ours(shared_dir, name).stages] == [s.total for s in ours(shared_dir, name, ETP1).stages]
    assert r.peak_bytes != ours(shared_dir, name).peak_bytes


def test_deepseek_static_per_layer_against_the_node_log(shared_dir):
    up = upstream(shared_dir, "run_deepseek3_default.json")["per_stage"]
    r = ours(shared_dir, DEEPSEEK, COMPAT)  # etp 1, read from the file like upstream (P-MF-ETP)
    s0, s2 = r.stages[0], r.stages[2]
    # dense layer 0: upstream 114 = attention+norms ÷ os only (not ÷ t) + dense FFN ÷ 64 (expert divisor);
    # ours 74.98 = MLA tp ÷ (t·os), replicated ÷ os, FFN ÷ (t·os)
    assert row_mib(s0, "dense", 0, "parameters") == pytest.approx(74.98, abs=0.01)
    assert node(up[0], 0, "F")["model_param"] == 114
    # MoE layer: 765 vs 705.85 (attention +63.25, shared expert/router/biases −3.4)
    assert row_mib(s2, "moe", 6, "parameters") == pytest.approx(705.85, abs=0.01)
    assert node(up[2], 6, "F")["model_param"] == 765
    assert row_mib(s2, "moe", 6, "optimizer_states") == pytest.approx(2 * 705.85, abs=0.02)
    assert node(up[2], 6, "F")["optim_state"] == 1531
    # gradients at etp 1: routed experts ÷ ep = 8 in both (5376 MiB); D9/D10 move −80 MiB
    assert row_mib(s2, "moe", 6, "gradients") == pytest.approx(5646.8, abs=0.1)
    assert node(up[2], 6, "F")["accu_grad"] == 5726
    assert row_mib(s0, "dense", 0, "gradients") == pytest.approx(599.8, abs=0.1)
    assert node(up[0], 0, "F")["accu_grad"] == 370
    # D11: the vocab_emb_dp table follows docs/model.md#sharding-divisors (÷ os 8, gradient unsharded); upstream ÷
    # shard_embed = d·t = 64
    assert row_mib(s0, "embedding", None, "parameters") == pytest.approx(546.0, abs=0.1)
    assert row_mib(s0, "embedding", None, "gradients") == pytest.approx(4368.0, abs=0.1)
    assert node(up[0], "", "E")["model_param"] == 68 and node(up[0], "", "E")["accu_grad"] == 68
    # the default is etp 1 too; with the spec's MindFormers etp = t = 4 (docs/model.md#expert-layout, the default before
    # P-MF-ETP) the expert gradients were ÷ 32
    assert row_mib(ours(shared_dir, DEEPSEEK).stages[2], "moe", 6, "gradients") == pytest.approx(5646.8, abs=0.1)
    assert row_mib(ours(shared_dir, DEEPSEEK, ETP4).stages[2], "moe", 6, "gradients") == pytest.approx(1614.8, abs=0.1)


def test_deepseek_activations_per_layer_against_node_log_and_recorded_slope(shared_dir):
    up = upstream(shared_dir, "run_deepseek3_default.json")["per_stage"]
    default, etp4 = ours(shared_dir, DEEPSEEK), ours(shared_dir, DEEPSEEK, ETP4)
    for i, s in enumerate(default.stages):
        assert s.peak_vector == (16 - i,)  # 1F1B min(p − i, m), upstream min(p, m) − i: equal as m ≥ p
    s0, s2 = default.stages[0], default.stages[2]

    def per_mb(stage, kind, index):
        r = row(stage, kind, index)
        return r.by_category()["activations"] / MIB / r.inflight

    # full recompute: both keep the TP-sliced layer input, 28 MiB per micro-batch
    assert per_mb(s2, "moe", 6) == 28.0 and node(up[2], 6, "F")["_activ"] == 28 * 14
    # dense layer not recomputed: ours 914.0, upstream 905 (549 + 244 + 112)
    assert per_mb(s0, "dense", 1) == pytest.approx(914.0, abs=0.1)
    g2 = node(up[0], "G_2", "N")
    assert g2["_activ"] == 905
    # MoE layer not recomputed: ours 1622.2 (default, etp 1) / 3638.1 (etp 4, before P-MF-ETP), upstream 1367
    # (549 + 706 + 112)
    assert per_mb(s2, "moe", 8) == pytest.approx(1622.2, abs=0.1)
    assert per_mb(etp4.stages[2], "moe", 8) == pytest.approx(3638.1, abs=0.1)
    assert node(up[2], "G_9", "N")["_activ"] == 1367
    # the recorded blocks fix the MoE layer at ≈ 1700.8 MiB per micro-batch (block 1 slope 6803 per stage / 4
    # layers); the default (etp 1) is within 5 % of it, the old etp 4 more than twice as large
    b1 = recorded(shared_dir, 0)
    measured = (b1[2] - b1[10]) / 8 / 4
    assert measured == pytest.approx(1700.8, abs=0.1)
    assert abs(per_mb(s2, "moe", 8) / measured - 1) < 0.05
    assert per_mb(etp4.stages[2], "moe", 8) / measured > 2.1


def test_deepseek_totals_against_upstream(shared_dir):
    up = [s["Total"] for s in upstream(shared_dir, "run_deepseek3_default.json")["per_stage"]]
    default = [s.total / MIB for s in ours(shared_dir, DEEPSEEK).stages]
    compat = [s.total / MIB for s in ours(shared_dir, DEEPSEEK, COMPAT).stages]
    before = [s.total / MIB for s in ours(shared_dir, DEEPSEEK, ETP4).stages]
    assert up.index(max(up)) == default.index(max(default)) == compat.index(max(compat)) == 2
    assert max(default) == pytest.approx(90779.5, abs=1)
    assert max(compat) == pytest.approx(93411.5, abs=1)
    assert max(before) == pytest.approx(125051.5, abs=1) and before.index(max(before)) == 2  # etp 4
    # the compat runs used to add etp 1 by hand: the file's own value now, so it changes nothing
    assert [s.total / MIB for s in ours(shared_dir, DEEPSEEK, COMPAT, ETP1).stages] == compat
    # default: stages 0–14 within −8.4 … −1.2 % of upstream, the last stage −4.7 % (−19.1 before D58: upstream
    # also holds full-vocabulary logits there, F4)
    diffs = [100 * (d / u - 1) for d, u in zip(default, up, strict=True)]
    assert all(-8.5 < d < -1.1 for d in diffs[:15])
    assert diffs[15] == pytest.approx(-4.7, abs=0.1)
    # compat: stages 0–14 within −4.0 … −0.3 % of upstream, the last stage −1.6 % (−16.0 before D58)
    diffs = [100 * (c / u - 1) for c, u in zip(compat, up, strict=True)]
    assert all(-4.1 < d < 0 for d in diffs[:15])
    assert diffs[15] == pytest.approx(-1.6, abs=0.2)


@pytest.mark.parametrize(("block", "etp", "mean", "worst", "mean_0_14", "worst_0_14"), [
    ("B1", None, 3.6, 4.3, 3.6, 4.3),        # default: etp 1 from the file (P-MF-ETP); D58 (last stage −3.7 %)
    ("B1", 4, 33.7, 62.4, 34.5, 62.4),       # before P-MF-ETP: etp = t = 4
    ("B2", None, 3.7, 4.8, 3.7, 4.8),
    ("B2", 4, 25.9, 48.7, 26.0, 48.7),
    ("B3", None, 18.3, 32.2, 18.2, 32.2),    # B3's numbers are B2's measurement (next test)
    ("B3", 4, 10.6, 35.5, 8.9, 26.7),
])
def test_deepseek_recorded_memory_error_band(shared_dir, block, etp, mean, worst, mean_0_14, worst_0_14):
    """Ours against the per-stage memory written in the yaml comments (probably MindSpore dry-run statistics)."""
    changes = [BLOCKS[block]] + ([{"strategy.etp": etp}] if etp else [])
    totals = [s.total / MIB for s in ours(shared_dir, DEEPSEEK, *changes).stages]
    e = errors(totals, recorded(shared_dir, list(BLOCKS).index(block)))
    abs_e = [abs(x) for x in e]
    assert sum(abs_e) / 16 == pytest.approx(mean, abs=0.1)
    assert max(abs_e) == pytest.approx(worst, abs=0.1)
    assert sum(abs_e[:15]) / 15 == pytest.approx(mean_0_14, abs=0.1)
    assert max(abs_e[:15]) == pytest.approx(worst_0_14, abs=0.1)
    if etp is None and block in ("B1", "B2"):
        # the settings the numbers were recorded with: every stage within −5 … +2 %, the last −3.7 % (−15.5 / −15.8
        # before D58, F4)
        assert all(-5.0 < x < 2.0 for x in e)
        assert -4.0 < e[15] < -3.5


def test_deepseek_recorded_blocks_two_and_three_are_one_measurement(shared_dir):
    """Blocks 2 and 3 list the same numbers; their slope fits three non-recomputed layers per stage (block 2)."""
    b1, b2, b3 = (recorded(shared_dir, k) for k in range(3))
    assert b2 == b3
    per_layer = (b1[2] - b1[10]) / 8 / 4       # 4 layers not recomputed per stage in block 1
    slope_b2 = (b2[2] - b2[10]) / 8            # in-flight count drops by one per stage (1F1B p − i)
    assert slope_b2 == pytest.approx(3 * per_layer + 28, rel=0.01)        # [1] × 16: three layers kept
    assert slope_b2 != pytest.approx(2 * per_layer + 2 * 28, rel=0.2)     # [1, 2 × 13, 1, 1]: two


def test_deepseek_last_stage_gap_is_a_fixed_last_stage_term(shared_dir):
    """F4: a line through stages 2–10 against the in-flight count (16 − i), extended to stage 15 (one micro-batch),
    splits the last stage into the body shortfall every stage has and a last-stage extra: 25,032 MiB recorded in
    both blocks (it does not depend on recompute). Before D58 ours was 14,765 (10,267 short); with MindFormers'
    replicated head (vocab_emb_dp) it is 24,028: 1,004 MiB short, as the split written here predicted."""
    def extra(totals: list[float]) -> float:
        fit = linear_regression([16 - i for i in range(2, 11)], totals[2:11])
        return totals[15] - (fit.intercept + fit.slope)

    for k, block in enumerate(("B1", "B2")):
        rec = recorded(shared_dir, k)
        totals = [s.total / MIB for s in ours(shared_dir, DEEPSEEK, BLOCKS[block]).stages]
        assert rec[15] - totals[15] == pytest.approx((2850.3, 2787.5)[k], abs=1)  # was 12,113 / 12,050
        assert extra(rec) == pytest.approx(25032, abs=1)
        assert extra(totals) == pytest.approx(24028, abs=1)
        assert extra(rec) - extra(totals) == pytest.approx(1004, abs=2)
    # ours: head 9,494 + MTP embedding copy 8,190 (P-MTP-COPY) + MTP minus a MoE layer 1,599.9 + working 4,992
    s15_block = ours(shared_dir, DEEPSEEK, BLOCKS["B1"]).stages
    s15 = s15_block[15]

    def rsum(kind, index=None):
        return sum(row(s15, kind, index).by_category().values()) / MIB
    assert rsum("embedding_copy") == pytest.approx(8190.0, abs=0.1)
    assert rsum("mtp", 61) - rsum("moe", 60) == pytest.approx(1599.9, abs=0.1)
    # D58: with vocab_emb_dp MindFormers replicates the LM head over TP (matmul ((dp·cp, 1), (1, 1))): the head is
    # priced ÷ 1, not ÷ t = 4 (the row also holds the final norm, h elements: < 0.05 MiB)
    head = 7168 * 159_744
    out = row(s15, "output").by_category()
    assert out["parameters"] / MIB == pytest.approx(4 * head / 8 / MIB, abs=0.05)              # 546 (was 136.5)
    assert out["optimizer_states"] / MIB == pytest.approx(8 * head / 8 / MIB, abs=0.05)        # 1,092 (273)
    assert out["gradients"] / MIB == pytest.approx(4 * head / MIB, abs=0.05)                   # 4,368 (1,092)
    assert out["communication_buffers"] / MIB == pytest.approx(2 * head / MIB, abs=0.05)       # 2,184 (546)
    # and the logits of main and MTP head at once are full-vocabulary: 2·T·v·β_c (was the loss working set 1,872)
    assert cat(s15, "working_overhead") == pytest.approx(2 * 8192 * 159_744 * 2 / MIB, abs=0.1)  # 4,992
    replicated = (4 / 8 + 8 / 8 + 4 + 2) * head * (1 - 1 / 4) / MIB
    assert replicated + (4992 - 1872) == pytest.approx(9262.5)  # the four head terms + the logits
    left = extra(recorded(shared_dir, 0)) - extra([s.total / MIB for s in s15_block])
    assert left == pytest.approx(10267 - 9262.5, abs=2)  # what stays unexplained: ≈ 1 GB


# ------------------------------------------------------------------------------------------------ other runs
def test_qwen3_72b_against_upstream(shared_dir):
    run = upstream(shared_dir, "run_nd_qwen3_72b.json")
    up = run["per_stage"]
    r = ours(shared_dir, QWEN)
    assert run["peak_MB"] == 29115 and r.peak_stage == 0
    assert r.peak_bytes / MIB == pytest.approx(35985.8, abs=1)
    # both divide every body gradient by t (fp32, not sharded): stages 1–6 agree to the MiB
    for s, u in zip(r.stages[1:7], up[1:7], strict=True):
        assert cat(s, "gradients") == pytest.approx(u["AccumulGradients"], abs=1)
    # parameters: attention ÷ os only upstream (+53.1 MiB per layer), dense FFN ÷ d·t = 128 upstream (−65.3)
    assert cat(r.stages[1], "parameters") - up[1]["ModelParameters"] == pytest.approx(113, abs=1)
    # β_r = 4 (fp32_residual_connection, docs/model.md#frameworks): the full-recompute input is 32 MiB per micro-batch,
    # upstream 16
    full = row(r.stages[7], "dense", 70)
    assert full.by_category()["activations"] / MIB / full.inflight == 32.0
    assert node(up[7], 70, "F")["_activ"] == 16


def test_nd_deepseek_against_upstream(shared_dir):
    up = [s["Total"] for s in upstream(shared_dir, "run_nd_deepseek.json")["per_stage"]]
    default = [s.total / MIB for s in ours(shared_dir, ND_DEEPSEEK).stages]
    compat = [s.total / MIB for s in ours(shared_dir, ND_DEEPSEEK, COMPAT).stages]
    before = [s.total / MIB for s in ours(shared_dir, ND_DEEPSEEK, ETP4).stages]
    assert max(up) == up[1] == 50177
    # the file states expert_model_parallel: 1 as well: etp 1 by default (P-MF-ETP); stage 1 is 46,032 (upstream's
    # peak stage); with vocab_emb_dp's replicated head (D58) the last stage is higher, 47,450 (−17.9 % of upstream
    # before)
    assert default[1] == pytest.approx(46032.4, abs=1) and compat[1] == pytest.approx(47348, abs=1)
    assert max(default) == pytest.approx(47450.5, abs=1) and default.index(max(default)) == 15
    assert max(compat) == pytest.approx(47982.5, abs=1) and compat.index(max(compat)) == 15
    assert [s.total / MIB for s in ours(shared_dir, ND_DEEPSEEK, COMPAT, ETP1).stages] == compat
    # before P-MF-ETP (etp 4) the peak is the last stage (28,439 before D58)
    assert max(before) == pytest.approx(37370.5, abs=1) and before.index(max(before)) == 15
    # every body stage is 8.3–8.4 % (default) or 5.6–5.7 % (compat) under upstream; the slope (−56 MiB per stage)
    # is the same
    assert all(-8.5 < 100 * (d / u - 1) < -8.2 for d, u in zip(default[1:15], up[1:15], strict=True))
    assert all(-5.8 < 100 * (c / u - 1) < -5.5 for c, u in zip(compat[1:15], up[1:15], strict=True))
    assert compat[1] - compat[2] == pytest.approx(up[1] - up[2], abs=1)
    assert default[1] - default[2] == pytest.approx(up[1] - up[2], abs=1)
    assert 100 * (default[0] / up[0] - 1) == pytest.approx(21.4, abs=0.1)  # D11: the embedding gradient
    assert 100 * (default[15] / up[15] - 1) == pytest.approx(1.1, abs=0.1)  # −17.9 before D58


def test_deepseek_demo_overrides_against_upstream(shared_dir):
    """The expressible part of upstream's demo overrides (dp 8, s 1024, β_c 1, swap_optimizer); the 10·h² attention and
    n_attMM = 5 are formula patches we cannot express, so the body stages are ≈ 24 % under upstream."""
    demo = {"strategy.dp": 8, "strategy.micro_batches": 32, "strategy.seq_length": 1024,
            "strategy.compute_bytes": 1, "strategy.swap_optimizer": True}
    up = [s["Total"] for s in upstream(shared_dir, "run_deepseek3_demo_overrides.json")["per_stage"]]
    default = [s.total / MIB for s in ours(shared_dir, DEEPSEEK, demo).stages]
    compat = [s.total / MIB for s in ours(shared_dir, DEEPSEEK, demo, COMPAT).stages]
    assert max(up) == up[14] == 57943
    assert max(default) == pytest.approx(44106, abs=1) and default.index(max(default)) == 14
    assert max(compat) == pytest.approx(44326, abs=1) and compat.index(max(compat)) == 14
    assert all(-25.0 < 100 * (d / u - 1) < -24.2 for d, u in zip(default[2:14], up[2:14], strict=True))
    assert all(cat(s, "optimizer_states") == 0 for s in ours(shared_dir, DEEPSEEK, demo).stages)
    # etp 4 (before P-MF-ETP): d = 8 gives os_e = d·t/(ep·etp) = 1, so F1 moved this run: 21,263 → 19,919 MiB
    before = ours(shared_dir, DEEPSEEK, demo, ETP4)
    assert before.stages[2].total / MIB == pytest.approx(19919, abs=1)  # the peak stage before D58 (now 15)
    experts = 256 // 8 * 3 * 7168 * 2048  # a rank's routed-expert elements per layer at etp 1 (÷ etp at etp 4)
    assert before.stages[2].total / MIB + 4 * experts / 4 / MIB == pytest.approx(21263, abs=1)  # 4 layers × 336 MiB
    # kept gathered at β_c = 1: the experts only at etp 1 (os_e = 4), the dense part in both
    now = ours(shared_dir, DEEPSEEK, demo)
    gathered = [row_mib(x.stages[2], "moe", 6, "communication_buffers") for x in (now, before)]
    assert gathered[0] - gathered[1] == pytest.approx(experts / MIB)
