"""Tests for estimator.compat: docs/model.md#test-vectors vectors V2, V3 (params column), V5, V6, V8."""

from __future__ import annotations

import math

import pytest

from estimator.compat import (
    GIB,
    MIB,
    korthikanti_layer_activation_bytes,
    korthikanti_params_bytes,
    megatron_theoretical,
    ptdp_flops_per_iteration,
    ptdp_seconds,
)
from estimator.errors import ConfigError

# --------------------------------------------------------------------------------- V5 (GPT-3 175B)

GPT3_175B = dict(
    hidden_size=12288, num_attention_heads=96, kv_channels=128, num_layers=96, ffn_hidden_size=49152,
    padded_vocab_size=51200, normalization="LayerNorm", swiglu=False,
    untie_embeddings_and_output_weights=False,
    seq_length=2048, micro_batch_size=1, tensor_model_parallel_size=8, pipeline_model_parallel_size=8,
    data_parallel_size=16, num_microbatches=96, use_distributed_optimizer=True, sequence_parallel=True,
    recompute_granularity="selective",
)


def test_v5_weights_and_optimizer() -> None:
    r = megatron_theoretical(**GPT3_175B)
    assert r.tp_sharded_params == 2_796_552_192
    assert r.replicated_params == 592_896
    assert r.bytes_per_param == 6 + 12 / 16
    assert r.weight_and_optimizer_bytes == 18_880_729_344
    assert r.weight_and_optimizer_mib == pytest.approx(18_006.07, abs=0.01)
    assert r.expert_sharded_params == 0
    assert r.data_parallel_size == 16


def test_v5_activations_and_total() -> None:
    r = megatron_theoretical(**GPT3_175B)
    assert r.activation_branch == "sp_selective"
    assert r.activation_bytes == 10_292_838_400
    assert r.activation_mib == pytest.approx(9_816.02, abs=0.01)
    assert r.total_mib == pytest.approx(27_822.08, abs=0.01)
    assert r.total_bytes == 18_880_729_344 + 10_292_838_400
    assert r.report_line() == ("Theoretical memory footprints: weight and optimizer=18006.07 MB, "
                               "activation=9816.02 MB, total=27822.08 MB")


def test_v5_vpp3() -> None:
    r = megatron_theoretical(**GPT3_175B, virtual_pipeline_model_parallel_size=3)
    assert r.activation_bytes == pytest.approx(10_292_838_400 * 31 / 24, rel=1e-12)
    assert r.activation_mib == pytest.approx(12_679.02, abs=0.01)
    assert r.weight_and_optimizer_bytes == 18_880_729_344


def test_v5_sp_off_branch2() -> None:
    args = {**GPT3_175B, "sequence_parallel": False}
    r = megatron_theoretical(**args)
    assert r.activation_branch == "without_sp"
    sbh = 2048 * 12288
    assert r.activation_bytes == pytest.approx(1.05 * (sbh * 13 * 96 + 131_072 + 201_326_592), rel=1e-12)
    assert r.activation_mib == pytest.approx(31_651.33, abs=0.01)
    # full recompute (or no recompute) also takes branch 2 in report_theoretical_memory
    full = megatron_theoretical(**{**GPT3_175B, "recompute_granularity": "full"})
    assert full.activation_branch == "without_sp"
    assert full.activation_bytes == pytest.approx(r.activation_bytes, rel=1e-12)


def test_megatron_world_size_derives_dp() -> None:
    a = megatron_theoretical(**{**GPT3_175B, "data_parallel_size": None, "world_size": 1024})
    assert a.data_parallel_size == 16
    assert a.weight_and_optimizer_bytes == 18_880_729_344


def test_megatron_pipeline_discount_and_output_layer() -> None:
    few = megatron_theoretical(**{**GPT3_175B, "num_microbatches": 4})
    assert few.activation_bytes == pytest.approx(10_292_838_400 / 2, rel=1e-12)
    unknown = megatron_theoretical(**{**GPT3_175B, "num_microbatches": None})
    assert unknown.activation_bytes == 10_292_838_400
    # p = 1: untied output copy on the same rank and the output-layer/CE activations
    p1 = megatron_theoretical(**{**GPT3_175B, "pipeline_model_parallel_size": 1, "num_microbatches": None,
                                 "untie_embeddings_and_output_weights": True})
    s, h, v = 2048, 12288, 51200
    assert p1.tp_sharded_params == (1_811_939_328 * 96 + 2 * h * v) / 8
    assert p1.activation_bytes == pytest.approx(
        (s * h * 34 * 96 + 8 * s + s * h + s * h * 4 * (1 + v / h)) / 8, rel=1e-12)


def test_megatron_plain_optimizer_18_bytes() -> None:
    r = megatron_theoretical(**{**GPT3_175B, "use_distributed_optimizer": False})
    assert r.bytes_per_param == 18
    assert r.weight_and_optimizer_bytes == (2_796_552_192 + 592_896) * 18


# ------------------------------------------------------------------------------ V6 (Megatron test)

V6 = dict(
    add_bias_linear=False, data_parallel_size=16, expert_model_parallel_size=2, expert_tensor_parallel_size=4,
    ffn_hidden_size=16, group_query_attention=False, hidden_size=8, kv_channels=4, moe_ffn_hidden_size=16,
    moe_layer_freq=[0, 1], moe_router_topk=1, moe_shared_expert_gate=False,
    moe_shared_expert_intermediate_size=8,
    mtp_num_layers=None, multi_latent_attention=False, normalization="RMSNorm", num_attention_heads=2,
    num_experts=4, num_layers=2, padded_vocab_size=32, pipeline_model_parallel_size=2, swiglu=False,
    tensor_model_parallel_size=2, untie_embeddings_and_output_weights=False, use_distributed_optimizer=True,
    world_size=64, seq_length=8, micro_batch_size=1,
)


def test_v6_expert_parallel_weights() -> None:
    r = megatron_theoretical(**V6)
    assert r.tp_sharded_params == 352
    assert r.replicated_params == 36
    assert r.expert_sharded_params == 64
    assert r.data_parallel_size == 16
    assert r.expert_data_parallel_size == 4
    assert r.bytes_per_param == 6.75
    assert r.bytes_per_expert_param == 9
    assert r.weight_and_optimizer_bytes == 3195


def test_v6_monotone_in_expert_parallelism() -> None:
    base = {**V6, "pipeline_model_parallel_size": 1, "world_size": 32}
    mem = [megatron_theoretical(**{**base, "expert_model_parallel_size": e, "expert_tensor_parallel_size": x})
           .weight_and_optimizer_bytes for e, x in ((1, 1), (2, 1), (2, 2), (4, 2))]
    assert mem[0] > mem[1] > mem[2] > mem[3]


def test_megatron_moe_activation_terms() -> None:
    # Megatron's test_moe_layer_uses_expert_ffn_hidden_size_and_router_topk (SP + selective branch)
    r = megatron_theoretical(
        hidden_size=4, num_attention_heads=1, num_layers=2, ffn_hidden_size=16, padded_vocab_size=32,
        seq_length=8, micro_batch_size=2, num_experts=4, moe_layer_freq=[0, 1], moe_ffn_hidden_size=8,
        moe_router_topk=2, moe_shared_expert_intermediate_size=4, num_microbatches=1,
        sequence_parallel=True, recompute_granularity="selective")
    sb, sbh = 16, 64
    expected = ((18 * sbh + 4 * sb * 16) + (18 * sbh + 4 * sb * 4) + 4 * 2 * sb * 4 + 4 * 2 * sb * 8
                + 8 * 8 * 2 + sbh + sbh * 4 * (1 + 32 / 4))
    assert math.isclose(r.activation_bytes, expected)


def test_megatron_bad_inputs() -> None:
    with pytest.raises(ConfigError):
        megatron_theoretical(**{**V6, "world_size": 60})
    with pytest.raises(ConfigError):
        megatron_theoretical(**{**V6, "moe_layer_freq": [1, 1, 0]})
    with pytest.raises(ConfigError):
        megatron_theoretical(**{**GPT3_175B, "group_query_attention": True})


# --------------------------------------------------------------------------- V2 / V3 (Korthikanti)

SBH = 2048 * 12288


@pytest.mark.parametrize(
    ("t", "sp", "recompute", "factor", "exact"),
    [
        (1, False, "none", 114, 2_868_903_936),
        (8, False, "none", 23, 578_813_952),
        (8, True, "none", 14.25, 358_612_992),
        (8, False, "selective", 13, 327_155_712),
        (8, True, "selective", 4.25, 106_954_752),
        (8, False, "full", 2, 50_331_648),
    ],
)
def test_v2_table2(t: int, sp: bool, recompute: str, factor: float, exact: int) -> None:
    got = korthikanti_layer_activation_bytes(2048, 1, 12288, 96, t, sp, recompute)  # type: ignore[arg-type]
    assert got == factor * SBH == exact


def test_v2_bad_recompute() -> None:
    with pytest.raises(ConfigError):
        korthikanti_layer_activation_bytes(2048, 1, 12288, 96, 8, True, "some")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("h", "layers", "t", "p", "gib"),
    [
        (6144, 48, 8, 1, 45.5625),
        (12288, 96, 8, 8, 45.5625),
        (20480, 105, 8, 35, 31.640625),
        (25600, 128, 8, 64, 32.958984375),
    ],
)
def test_v3_params_column(h: int, layers: int, t: int, p: int, gib: float) -> None:
    assert korthikanti_params_bytes(h, layers, t, p) / GIB == gib
    assert korthikanti_params_bytes(h, layers, t, p, bytes_per_param=16) == korthikanti_params_bytes(
        h, layers, t, p) * 16 / 18


# -------------------------------------------------------------------------------------- V8 (PTD-P)


def test_v8_gpt3() -> None:
    f = ptdp_flops_per_iteration(1536, 2048, 96, 12288, 51200)
    assert f == pytest.approx(4.51097075e18, rel=1e-6)
    assert round(ptdp_seconds(f, 1024, 138e12), 2) == 31.92


@pytest.mark.parametrize(
    ("gpus", "tflops", "seconds"), [(2240, 126, 59.97), (2800, 121, 49.96), (3360, 113, 44.58)]
)
def test_v8_mt_nlg(gpus: int, tflops: float, seconds: float) -> None:
    f = ptdp_flops_per_iteration(1920, 2048, 105, 20480, 50272)
    assert round(ptdp_seconds(f, gpus, tflops * 1e12), 2) == seconds


def test_ptdp_bad_inputs() -> None:
    with pytest.raises(ConfigError):
        ptdp_seconds(1.0, 0, 1.0)


def test_mib_constant() -> None:
    assert MIB == 2**20


def test_megatron_mla_moe_parameter_counts_match_v7_deepseek_v3() -> None:
    # Megatron's MLA + MoE parameter count reproduces V7's DeepSeek-V3 totals (no router bias, MTP excluded)
    r = megatron_theoretical(
        hidden_size=7168, num_attention_heads=128, num_layers=61, ffn_hidden_size=18432,
        padded_vocab_size=129280, seq_length=4096, micro_batch_size=1, normalization="RMSNorm", swiglu=True,
        untie_embeddings_and_output_weights=True, add_bias_linear=False, multi_latent_attention=True,
        q_lora_rank=1536, kv_lora_rank=512, qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128,
        num_experts=256, moe_layer_freq=[0] * 3 + [1] * 58, moe_ffn_hidden_size=2048,
        moe_shared_expert_intermediate_size=2048, moe_router_topk=8)
    assert r.total_params == 671_026_404_352
    assert r.active_params == 37_552_282_624
