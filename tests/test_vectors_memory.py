"""Spec docs/model.md#test-vectors test vectors for the memory model (V1, V2, V4, V7, V9, V10, V14, V15, V16, V17)."""

from __future__ import annotations

import pytest

from estimator import (
    GiB,
    MiB,
    ModelSpec,
    RecomputePlan,
    RunOptions,
    ShardingSpec,
    Strategy,
    estimate,
    find_preset,
    parse_size,
)
from estimator.params import parameter_counts
from estimator.resolve import resolve
from estimator.single_layer import layer_activation, loss_working_set
from estimator.static import Local, static_bytes

H100 = find_preset("H100-80G")

LLAMA3_8B = ModelSpec(name="llama3-8b", hidden_size=4096, num_layers=32, num_attention_heads=32, num_kv_heads=8,
                      head_dim=128, ffn_hidden_size=14336, vocab_size=128256)
GPT3_175B = ModelSpec(name="gpt3-175b", family="gpt3", hidden_size=12288, num_layers=96, num_attention_heads=96,
                      ffn_hidden_size=4 * 12288, vocab_size=51200, tie_embeddings=True)


def megatron(**kw) -> RunOptions:
    return RunOptions(framework="megatron", **kw)


# ----------------------------------------------------------------------------------------- V1
@pytest.mark.parametrize(("mode", "expected"), [("none", 120e9), ("zero1", 31.40625e9), ("zero2", 16.640625e9),
                                                ("zero3", 1.875e9)])
def test_v1_zero_model_states(mode, expected):
    psi = 7.5e9
    r = resolve(LLAMA3_8B, Strategy(seq_length=2048, dp=64, param_bytes=2, grad_bytes=2, master_bytes=4,
                                    sharding=ShardingSpec(mode=mode, os=64 if mode != "none" else None)),
                H100, megatron(grad_persistence="persistent"))
    from estimator.resolve import shard_divisors

    st = static_bytes(Local(dense=psi, expert=0), r.widths, r.flags, r.par, shard_divisors(r.flags, r.par))
    assert st.parameters + st.gradients + st.optimizer_states == expected


# ----------------------------------------------------------------------------------------- V2
SBH = 2048 * 1 * 12288


@pytest.mark.parametrize(("tp", "sp", "option", "factor"), [
    (1, False, "none", 114), (8, False, "none", 23), (8, True, "none", 14.25), (8, False, "selective", 13),
    (8, True, "selective", 4.25), (8, False, "full", 2)])
def test_v2_korthikanti_layer_activations(tp, sp, option, factor):
    strategy = Strategy(seq_length=2048, tp=tp, sequence_parallel=sp)
    got = layer_activation(GPT3_175B, strategy, H100, megatron(), "dense", option)
    assert got == factor * SBH


# ----------------------------------------------------------------------------------------- V4
V4_FLAGS = {"fused_gated_act": True, "kv_repeat": False, "norm_stats": False}


def test_v4_llama3_8b_slot_sums():
    strategy = Strategy(seq_length=8192, flash_attention=True)
    per_layer = layer_activation(LLAMA3_8B, strategy, H100, megatron(**V4_FLAGS), "dense", "none")
    assert per_layer == 139_392 * 8192 == 1_141_899_264
    assert per_layer / MiB == 1089
    full = layer_activation(LLAMA3_8B, strategy, H100, megatron(**V4_FLAGS), "dense", "full")
    assert full == 2 * 4096 * 8192 == 64 * MiB
    # head slots with t_V = 1: 2·2·4096 + 4·128,256 per token
    head = layer_activation(LLAMA3_8B, strategy, H100, megatron(**V4_FLAGS), "output", "none")
    assert head == 529_408 * 8192 and head / MiB == 4136


def test_v4_gpt3_slot_split():
    """gpt3 per token: SP 10·h, TP 24·h + 5·a·s (docs/model.md#slot-table)."""
    s = 2048
    t1 = layer_activation(GPT3_175B, Strategy(seq_length=s, tp=1), H100, megatron(), "dense", "none")
    assert t1 == s * (34 * 12288 + 5 * 96 * s)
    t8 = layer_activation(GPT3_175B, Strategy(seq_length=s, tp=8), H100, megatron(), "dense", "none")
    assert t8 == s * (10 * 12288 + (24 * 12288 + 5 * 96 * s) / 8)


# ----------------------------------------------------------------------------------------- V7, V9
V7 = [
    (ModelSpec(name="llama2-7b", hidden_size=4096, num_layers=32, num_attention_heads=32, ffn_hidden_size=11008,
               vocab_size=32000), 6_738_415_616, None),
    (LLAMA3_8B, 8_030_261_248, None),
    (ModelSpec(name="llama3-70b", hidden_size=8192, num_layers=80, num_attention_heads=64, num_kv_heads=8,
               ffn_hidden_size=28672, vocab_size=128256), 70_553_706_496, None),
    (ModelSpec(name="mixtral-8x7b", hidden_size=4096, num_layers=32, num_attention_heads=32, num_kv_heads=8,
               num_experts=8, experts_per_token=2, moe_ffn_hidden_size=14336, vocab_size=32000),
     46_702_792_704, 12_879_925_248),
    (ModelSpec(name="qwen3-32b", hidden_size=5120, num_layers=64, num_attention_heads=64, num_kv_heads=8,
               head_dim=128, qk_norm=True, ffn_hidden_size=25600, vocab_size=151936), 32_762_123_264, None),
    (ModelSpec(name="deepseek-v3", hidden_size=7168, num_layers=61, first_k_dense=3, ffn_hidden_size=18432,
               num_attention_heads=128, q_lora_rank=1536, kv_lora_rank=512, head_dim=128, qk_rope_head_dim=64,
               v_head_dim=128, num_experts=256, experts_per_token=8, num_shared_experts=1,
               moe_ffn_hidden_size=2048, vocab_size=129280, mtp_layers=1), 671_026_404_352, 37_552_282_624),
]


@pytest.mark.parametrize(("model", "total", "active"), V7, ids=[m.name for m, _, _ in V7])
def test_v7_parameter_counts(model, total, active):
    r = resolve(model, Strategy(seq_length=4096), H100, RunOptions(framework="torchtitan"))
    counts = parameter_counts(model, r.dims)
    assert counts.total == total
    assert counts.active == (active if active is not None else total)


def test_v7_qwen3_non_embedding():
    model = V7[4][0]
    r = resolve(model, Strategy(seq_length=4096), H100, RunOptions(framework="torchtitan"))
    assert parameter_counts(model, r.dims).non_embedding == 31_206_298_624


def test_v9_head_dim_is_read():
    model = V7[4][0]
    fallback = model.replace(head_dim=None)
    r = resolve(fallback, Strategy(seq_length=4096), H100, RunOptions(framework="torchtitan"))
    assert parameter_counts(fallback, r.dims).total == 30_497_192_960
    assert any(a.field == "model.head_dim" for a in r.assumptions)


# ----------------------------------------------------------------------------------------- V10
def test_v10_static_bytes_zero1_megatron():
    res = estimate(LLAMA3_8B, Strategy(seq_length=8192, dp=8, sharding=ShardingSpec(mode="zero1")), H100,
                   megatron(reserve=0))
    cat = res.stages[0].bytes_by_category
    assert cat["parameters"] + cat["gradients"] + cat["optimizer_states"] == 60_226_959_360
    assert round((cat["parameters"] + cat["gradients"] + cat["optimizer_states"]) / GiB, 2) == 56.09


# The spec's vectors are the tensor model (reserve 0): issue 10's device-level parts are added on top of it, each held
# at the peak and at the optimizer step alike, so the spec's figure is the estimate's less those parts.
DEVICE_PARTS = ("library_workspaces", "allocator_slack", "runtime_context", "comm_library")


def spec_view(stage, value: float) -> float:
    return value - sum(stage.bytes_by_category[c] for c in DEVICE_PARTS)


@pytest.mark.parametrize(("impl", "expected"), [("fused", 16_060_522_496), ("foreach", 20_075_653_120)])
def test_v10_static_bytes_torchtitan_fsdp(impl, expected):
    res = estimate(LLAMA3_8B, Strategy(seq_length=8192, dp=8, sharding=ShardingSpec(mode="fsdp")), H100,
                   RunOptions(framework="torchtitan", reserve=0, optimizer_impl=impl))
    assert spec_view(res.stages[0], res.stages[0].optimizer_step_peak) == expected


# ----------------------------------------------------------------------------------------- V14
def test_v14_units():
    assert parse_size("58GB") == 62_277_025_792
    assert parse_size("1.5GB") == 1536 * MiB


# ----------------------------------------------------------------------------------------- V15
TT = RunOptions(framework="torchtitan")


@pytest.mark.parametrize(("options", "per_token"), [
    (TT, 168_072), (RunOptions(framework="torchtitan", fused_gated_act=True), 139_400),
    (RunOptions(framework="torchtitan", kv_repeat=True), 180_360)])
def test_v15_eager_census(options, per_token):
    strategy = Strategy(seq_length=8192)
    assert layer_activation(LLAMA3_8B, strategy, H100, options, "dense", "none") == per_token * 8192


def test_v15_torchtitan_op_and_hyperparallel_rules():
    strategy = Strategy(seq_length=8192)
    assert layer_activation(LLAMA3_8B, strategy, H100, TT, "dense", "selective") == 63_616 * 8192
    hp_rule = Strategy(seq_length=8192, recompute=RecomputePlan(rule="hyperparallel"))
    assert layer_activation(LLAMA3_8B, hp_rule, H100, TT, "dense", "selective") == 94_208 * 8192


def test_v15_loss_working_sets():
    strategy = Strategy(seq_length=8192)
    assert loss_working_set(LLAMA3_8B, strategy, H100, TT) == 8_405_385_216
    assert loss_working_set(LLAMA3_8B, strategy, H100, megatron()) == 2_101_346_304


# ----------------------------------------------------------------------------------------- V16
def test_v16_mindformers_offset_broadcast():
    from estimator.layout import LayoutInputs, build_layout

    layout = build_layout(LayoutInputs(body_kinds=("dense",) * 8, mtp_kinds=(), p=2, vp=2, schedule="interleaved",
                                       offset=(1, -1)))
    assert layout.chunk_counts() == ((3, 3), (1, 1))
    assert [sum(c) for c in layout.chunk_counts()] == [6, 2]


def test_v16_telechat_vpp3_recompute_dealing():
    from estimator.layout import LayoutInputs, build_layout

    offset = ((-1, -1, 0, 0, 0, 0, 0, 0), (-1, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 1, 1, 1, 1, -1))
    plan = RecomputePlan(comm_counts=(8, 8, 10, 11, 10, 7, 5, 4), sel_counts=True)
    layout = build_layout(LayoutInputs(body_kinds=("dense",) * 96, mtp_kinds=(), p=8, vp=3, schedule="interleaved",
                                       offset=offset, recompute=plan))
    assert layout.chunk_counts() == ((3, 3, 4), (3, 4, 4), (4, 4, 4), (4, 4, 5), (4, 4, 5), (4, 4, 5), (4, 4, 5),
                                     (4, 4, 3))
    dealt = []
    for i in range(8):
        per_chunk = []
        for j in range(3):
            items = layout.slot(i, j).items
            per_chunk.append(sum(1 for it in items if it.option == "both"))
            assert all(it.option in ("both", "selective") for it in items if it.index >= 0)
        dealt.append(tuple(per_chunk))
    assert dealt == [(3, 3, 2), (3, 3, 2), (4, 3, 3), (4, 4, 3), (4, 3, 3), (3, 2, 2), (2, 2, 1), (2, 1, 1)]


# ----------------------------------------------------------------------------------------- V17
LLAMA2_4L = ModelSpec(name="llama2-7b-4l", hidden_size=4096, num_layers=4, num_attention_heads=32,
                      ffn_hidden_size=11008, vocab_size=32000)


def _v17(layout: str):
    strategy = Strategy(seq_length=4096, dp=8, param_bytes=4, grad_bytes=4, reduce_bytes=4, compute_bytes=2,
                        flash_attention=True, sharding=ShardingSpec(mode="fsdp", fsdp_layout=layout))
    options = RunOptions(framework="hyperparallel", optimizer_impl="foreach", reserve=0, kv_repeat=False)
    return estimate(LLAMA2_4L, strategy, H100, options)


def test_v17_fsdp2_root_layout():
    res = _v17("root")
    stage = res.stages[0]
    assert spec_view(stage, stage.total) == 6_307_457_024
    assert stage.peak_instant.startswith("(a) block 2")
    assert {k: v for k, v in stage.bytes_by_category.items() if k not in DEVICE_PARTS} == {
        "parameters": 535_840_768, "gradients": 101_191_680, "optimizer_states": 1_071_681_536,
        "activations": 1_798_963_200, "communication_buffers": 2_143_363_072, "working_overhead": 656_416_768,
        "reserve": 0}


def test_v17_fsdp2_torchtitan_layout():
    res = _v17("torchtitan")
    stage = res.stages[0]
    assert spec_view(stage, stage.total) == 6_028_507_136
    assert stage.peak_instant.startswith("L")
