"""LoRA and QLoRA (issue 11 feature 4) against independent derivations written here:

* adapters r·(d_in + d_out) per adapted matrix (Hu et al. 2021, §4.1), counted by hand for Llama-2-7B;
* a frozen base carries no gradients and no optimizer states, so both are exactly the adapters';
* QLoRA stores the base as NF4: 0.5 byte per weight plus the quantisation constants, 32/64 = 0.5 bit per weight
  without and 8/64 + 32/(64·256) = 0.127 bit with double quantisation (Dettmers et al. 2023, §3);
* a frozen linear layer keeps no input (Transformer Engine saves the input only when the weight requires a
  gradient), the adapter path keeps x·A (r values per token);
* the weight-gradient FLOPs are the adapters' only: 2·T·Σ r·(d_in + d_out).
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from estimator import comm as C
from estimator.errors import ConfigError, StrategyError
from estimator.estimate import layout_inputs
from estimator.export import export
from estimator.features import nf4_bytes
from estimator.formats import parse
from estimator.layout import build_layout
from estimator.parsed import apply_changes
from estimator.resolve import resolve
from estimator.stage import StagePricer
from estimator.steptime import estimate_step_time

H100 = find_preset("H100-80G")
H, F, L, V, R = 4096, 11008, 32, 32000, 16
LLAMA2_7B = ModelSpec(name="Llama-2-7B", family="llama2", hidden_size=H, num_layers=L, num_attention_heads=32,
                      ffn_hidden_size=F, vocab_size=V)
# Megatron's fused modules: linear_qkv (h → 3h, MHA), linear_proj (h → h), linear_fc1 (h → 2·ffn), linear_fc2
ADAPTERS_PER_LAYER = R * (H + 3 * H) + R * (H + H) + R * (H + 2 * F) + R * (F + H)
LINEARS_PER_LAYER = H * 3 * H + H * H + H * 2 * F + F * H


def lora(**kw) -> Strategy:
    base = {"seq_length": 4096, "peft": "lora", "lora_rank": R, "lora_targets": ("qkv", "o", "fc1", "down")}
    base.update(kw)
    return Strategy(**base)


def test_adapter_count_by_hand():
    assert ADAPTERS_PER_LAYER == 1_052_672
    assert ADAPTERS_PER_LAYER * L == 33_685_504  # 0.50 % of the 6.74 B base


def test_gradients_and_optimizer_states_are_exactly_the_adapters():
    got = estimate(LLAMA2_7B, lora(), H100, RunOptions(framework="megatron")).stages[0].bytes_by_category
    adapters = ADAPTERS_PER_LAYER * L
    assert got["gradients"] == pytest.approx(4 * adapters)                  # fp32 main grads, adapters only
    assert got["optimizer_states"] == pytest.approx((2 * 4 + 4) * adapters)  # Adam m, v and the fp32 master
    base = L * (LINEARS_PER_LAYER + 2 * H) + 2 * V * H + H                 # + norms, embedding, head, final norm
    assert got["parameters"] == pytest.approx(2 * base + 2 * adapters)


def test_full_finetune_would_hold_every_gradient():
    full = estimate(LLAMA2_7B, Strategy(seq_length=4096), H100, RunOptions(framework="megatron"))
    peft = estimate(LLAMA2_7B, lora(), H100, RunOptions(framework="megatron"))
    assert peft.stages[0].bytes_by_category["gradients"] < full.stages[0].bytes_by_category["gradients"] / 150


def test_zero_sharding_divides_the_adapter_states():
    st = lora(dp=8, sharding=ShardingSpec(mode="zero1"))
    got = estimate(LLAMA2_7B, st, H100, RunOptions(framework="megatron")).stages[0].bytes_by_category
    assert got["optimizer_states"] == pytest.approx(12 * ADAPTERS_PER_LAYER * L / 8)


def test_nf4_constants_match_the_qlora_paper():
    assert nf4_bytes(False) == pytest.approx(0.5 + 0.5 / 8)                  # 0.5 bit of fp32 absmax per weight
    assert (nf4_bytes(True) - 0.5) * 8 == pytest.approx(0.127, abs=5e-4)     # 0.127 bit with double quantisation


def test_qlora_base_is_half_a_byte_per_weight_plus_constants():
    st = lora(peft="qlora")
    got = estimate(LLAMA2_7B, st, H100, RunOptions(framework="megatron")).stages[0].bytes_by_category
    nf4 = 0.5 + 1 / 64 + 4 / (64 * 256)
    quantised = L * LINEARS_PER_LAYER                 # every linear of the body; embedding and head stay 2 B
    plain = L * 2 * H + 2 * V * H + H
    assert got["parameters"] == pytest.approx(nf4 * quantised + 2 * plain + 2 * ADAPTERS_PER_LAYER * L)
    no_dq = estimate(LLAMA2_7B, st.replace(qlora_double_quant=False), H100, RunOptions(framework="megatron"))
    assert no_dq.stages[0].bytes_by_category["parameters"] - got["parameters"] == pytest.approx(
        (4 / 64 - 1 / 64 - 4 / (64 * 256)) * quantised)


def _per_token(st: Strategy, framework: str) -> float:
    r = resolve(LLAMA2_7B, st, H100, RunOptions(framework=framework))
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    sums = pricer.acts.sums("dense", "none")
    return sums.sp + sums.tp + sums.rep


# one Llama layer without LoRA (Megatron rule, flash attention, fused SwiGLU, t = 1), bytes per token:
# norm inputs/outputs 4·2h, q k v 3·2h, attention output 2h, flash statistics 4·a, gate, up and fc2 input 3·2·ffn,
# two fp32 norm statistics
FULL_LAYER = 2 * H * 4 + 2 * H * 3 + 2 * H + 4 * 32 + 2 * F * 3 + 2 * 4


def test_full_layer_slots_by_hand():
    assert _per_token(Strategy(seq_length=4096), "megatron") == FULL_LAYER


def test_frozen_ffn_keeps_no_inputs_and_adapters_keep_xa():
    st = lora(lora_targets=("q", "v"))
    # m.norm_out (fc1 input) and the fc2 input are freed; x·A (r values) is kept per adapted module
    assert _per_token(st, "megatron") == FULL_LAYER - 2 * H - 2 * F + 2 * (2 * R)
    # MindSpeed's local Megatron linear saves its input whether or not the weight trains
    assert _per_token(st, "mindspeed") == FULL_LAYER + 2 * (2 * R)


def test_lora_dropout_saves_the_dropped_input_and_its_mask():
    st = lora(lora_targets=("q",), lora_dropout=0.05)
    # a.norm_out is read by no adapter now (lora_A reads the dropped copy): freed; the copy (2 B) and mask (1 B)
    expected = FULL_LAYER - 2 * H - 2 * H - 2 * F + (2 + 1) * H + 2 * R
    assert _per_token(st, "megatron") == expected


def test_weight_gradient_flops_are_the_adapters():
    st = lora()
    got = estimate_step_time(LLAMA2_7B, st, H100, RunOptions(framework="megatron"))
    rate = H100.flops(2) * H100.eff_matmul
    wgrad = got.stages[0].W
    assert wgrad == pytest.approx(L * 2 * 4096 * ADAPTERS_PER_LAYER / rate)


def test_data_parallel_reduces_the_adapter_gradients_only():
    st = lora(dp=8, sharding=ShardingSpec(mode="zero1"))
    got = estimate_step_time(LLAMA2_7B, st, H100, RunOptions(framework="megatron", overlap_dp=0.0))
    nvlink = H100.levels[0]
    link = C.Link(8, nvlink.bandwidth * nvlink.efficiency, nvlink.latency)
    adapters = ADAPTERS_PER_LAYER * L
    expected = C.reduce_scatter(4 * adapters, link) + C.all_gather(2 * adapters, link)
    assert got.stages[0].comm["dp"] == pytest.approx(expected)


def test_qlora_dequantisation_costs_hbm_time_per_pass():
    plain = estimate_step_time(LLAMA2_7B, lora(), H100, RunOptions(framework="megatron"))
    quant = estimate_step_time(LLAMA2_7B, lora(peft="qlora"), H100, RunOptions(framework="megatron"))
    per_pass = (nf4_bytes(True) + 2) * L * LINEARS_PER_LAYER / (H100.hbm_bandwidth * H100.eff_hbm)
    forward, backward = quant.stages[0].F - plain.stages[0].F, quant.stages[0].B - plain.stages[0].B
    assert forward == pytest.approx(per_pass)
    assert backward == pytest.approx(per_pass)


@pytest.mark.parametrize(("kw", "match"), [({"lora_rank": 0}, "lora_rank"), ({"lora_targets": ()}, "lora_targets")])
def test_incomplete_peft_is_refused(kw, match):
    with pytest.raises(StrategyError, match=match):
        estimate(LLAMA2_7B, lora(**kw), H100, RunOptions(framework="megatron"))


def test_unknown_targets_and_moe_experts_are_said():
    got = estimate(LLAMA2_7B, lora(lora_targets=("q", "kv_b")), H100, RunOptions(framework="megatron"))
    assert any(w.code == "W-LORA-TARGET" and "kv_b" in w.text for w in got.warnings)
    assert not any(w.code == "W-UNMODELLED" and "PEFT" in w.text for w in got.warnings)


# ------------------------------------------------------------------------------------------ configs
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _copy(tmp_path: Path, path: Path) -> str:
    target = tmp_path / path.name
    shutil.copy(path, target)
    return str(target)


def _roundtrip(path: str, changes: dict) -> list[str]:
    parsed = parse([path])
    edited = apply_changes(parsed, changes)
    files = export(edited)
    old = Path(path).read_text(encoding="utf-8")
    new = files[path]
    Path(path).write_text(new, encoding="utf-8")
    assert parse([path]).strategy == edited.strategy
    return [d for d in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            if d[:1] in "+-" and not d.startswith(("+++", "---"))]


def test_mindspeed_lora_flags_are_read():
    parsed = parse([str(FIXTURES / "mindspeed" / "lora_llama2_7b.sh")])
    st = parsed.strategy
    assert (st.peft, st.lora_rank, st.lora_targets) == ("lora", 16, ("qkv", "o", "fc1", "down"))
    assert parsed.provenance["strategy.lora_rank"].key.startswith("--lora-r")
    got = estimate(parsed.model, st, parsed.hardware, parsed.options)
    local = (R * H + R * 3 * H / 2) + (R * H / 2 + R * H) + (R * H + R * 2 * F / 2) + (R * F / 2 + R * H)  # tp 2
    assert got.stages[0].bytes_by_category["gradients"] == pytest.approx(4 * L * local)
    assert not any("LoRA" in w.text and w.code == "W-UNMODELLED" for w in got.warnings)


def test_mindspeed_lora_export_round_trips(tmp_path):
    path = _copy(tmp_path, FIXTURES / "mindspeed" / "lora_llama2_7b.sh")
    lines = _roundtrip(path, {"strategy.lora_rank": 64, "strategy.peft": "qlora",
                              "strategy.lora_targets": ["qkv", "o"]})
    assert "-    --lora-r 16 \\" in lines and "+    --lora-r 64 \\" in lines
    assert "+    --lora-target-modules linear_qkv linear_proj \\" in lines
    assert any(line.startswith("+") and "--qlora" in line for line in lines)


def test_mindspeed_lora_export_refuses_unfused_targets(tmp_path):
    path = _copy(tmp_path, FIXTURES / "mindspeed" / "lora_llama2_7b.sh")
    edited = apply_changes(parse([path]), {"strategy.lora_targets": ["q", "v"]})
    with pytest.raises(ConfigError, match="linear_qkv"):
        export(edited)


def test_mindformers_pet_config_is_read():
    parsed = parse([str(FIXTURES / "mindformers" / "lora_llama.yaml")])
    st = parsed.strategy
    assert (st.peft, st.lora_rank, st.lora_dropout, st.lora_targets) == ("lora", 16, 0.05, ("q", "k", "v", "o"))
    assert st.lora_param_bytes == 2.0
    assert parsed.provenance["strategy.lora_targets"].key == "model.model_config.pet_config.target_modules"


def test_mindformers_pet_config_export_round_trips(tmp_path):
    path = _copy(tmp_path, FIXTURES / "mindformers" / "lora_llama.yaml")
    lines = _roundtrip(path, {"strategy.lora_rank": 8, "strategy.lora_dropout": 0.0})
    assert sorted(lines) == sorted(["-      lora_rank: 16", "+      lora_rank: 8", "-      lora_dropout: 0.05",
                                    "+      lora_dropout: 0.0"])
    edited = apply_changes(parse([path]), {"strategy.lora_targets": ["q", "v"]})
    with pytest.raises(ConfigError, match="lora_targets"):
        export(edited)


def test_hf_peft_trainable_count_for_llama2_7b_q_v_rank_8():
    """PEFT's print_trainable_parameters for Llama-2-7B, LoraConfig(r=8, target_modules=[q_proj, v_proj]):
    'trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622'."""
    st = Strategy(seq_length=4096, peft="lora", lora_rank=8, lora_targets=("q", "v"))
    got = estimate(LLAMA2_7B, st, H100, RunOptions(framework="megatron"))
    assert got.stages[0].bytes_by_category["gradients"] == pytest.approx(4 * 4_194_304)
    assert got.parameters_total == 6_738_415_616  # the base (6,742,609,920 − the adapters)
