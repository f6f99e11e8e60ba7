"""The buffers of overlapped TP communication beyond PyTorch's symmetric memory, each derived by hand from the
library's source:

* [D-UB] Transformer Engine's userbuffers (Megatron ``--tp-comm-overlap``): ``initialize_ub`` registers one buffer
  per overlapped GEMM — 12 in TE ≥ 2.10 (4 ring-exchange, 2 pipeline, 4 bulk, 2 external) — of shape
  (s·b/cp, h), bf16, uint8 for the 8 all-gather ones under FP8; the communicator adds its region 0
  (4·(14 400 + 791 552) = 3 223 808 B), 2 flag pages of 64 KiB and 4·33 B of ids per rank. Outside the caching
  allocator (device peak only).
* [C-BUF.mc2] the CANN MC2 op workspace (MindSpeed ``--use-ascend-mc2``): the local weight in NZ (each dimension
  rounded up to 256 B) + the gathered input / unreduced output β·h·T + 16 MiB, a transient of the layer that
  replaces the SP double buffer when it is larger.
"""

from __future__ import annotations

import dataclasses

import pytest

from estimator import ModelSpec, RunOptions, Strategy, estimate, find_preset
from estimator.device.overlap import UB_GEMMS

H100 = find_preset("H100-80G")
A2 = find_preset("A2")
H, F, A, KV, DH, V, L = 4096, 14336, 32, 8, 128, 128256, 4
LLAMA3_8B = ModelSpec(name="Llama-3-8B", family="llama2", hidden_size=H, num_layers=L, num_attention_heads=A,
                      num_kv_heads=KV, head_dim=DH, ffn_hidden_size=F, vocab_size=V)
MEGATRON = RunOptions(framework="megatron")
MINDSPEED = RunOptions(framework="mindspeed")
UB_FIXED = 3_223_808 + 2 * 65_536


def _rows(result, kind: str) -> list[float]:
    return [lr.total for s in result.stages for lr in s.layers if lr.kind == kind]


def test_te_userbuffers_by_hand():
    """Llama-3-8B, s 8192, b 1, t 8 (8 ranks): 12 buffers × 2 B × 8192 × 4096 = 805 306 368 B (768 MiB), plus
    3 354 880 B of the communicator and 132 B × 8 ranks = 808 662 304 B, on the device peak only."""
    assert len(UB_GEMMS) == 12 and sum(fp8 for _, fp8 in UB_GEMMS) == 8
    st = Strategy(seq_length=8192, tp=8, sequence_parallel=True, async_tp=True)
    on = estimate(LLAMA3_8B, st, H100, MEGATRON)
    off = estimate(LLAMA3_8B, dataclasses.replace(st, async_tp=False), H100, MEGATRON)
    hand = 12 * 2 * 8192 * 4096 + UB_FIXED + 132 * 8
    assert hand == 808_662_304
    for a, b in zip(on.stages, off.stages, strict=True):
        # registered outside the caching allocator: the device peak beyond the allocator's; the allocator's own
        # growth is the userbuffer GEMMs' cuBLAS workspace (test_userbuffer_gemms_take_their_own_cublas_workspace)
        inside = a.allocator_peak - b.allocator_peak
        assert a.device_peak - b.device_peak - inside == pytest.approx(hand)
        assert inside >= 100_666_368
    assert _rows(on, "userbuffers") == [pytest.approx(hand)]
    assert _rows(on, "symmetric_memory") == [0]
    assert not any(w.code == "W-UNMODELLED" and "async TP" in w.text for w in on.warnings)


def test_te_userbuffers_follow_fp8_context_parallelism_and_the_world():
    """FP8: the 8 all-gather buffers are uint8, 8 × 1 B + 4 × 2 B = 16 B per element row; cp 2 halves s·b/cp;
    dp 4 makes 32 ranks (132 B each); t 1 registers nothing (Megatron needs TP for the overlap)."""
    st = Strategy(seq_length=8192, tp=8, sequence_parallel=True, async_tp=True)
    fp8 = estimate(LLAMA3_8B, st.replace(fp8="tensorwise"), H100, MEGATRON)
    assert _rows(fp8, "userbuffers") == [pytest.approx(16 * 8192 * 4096 + UB_FIXED + 132 * 8)]
    cp = estimate(LLAMA3_8B, st.replace(cp=2, micro_batch_size=2), H100, MEGATRON)
    assert _rows(cp, "userbuffers") == [pytest.approx(24 * (8192 * 2 // 2) * 4096 + UB_FIXED + 132 * 16)]
    dp = estimate(LLAMA3_8B, st.replace(dp=4), H100, MEGATRON)
    assert _rows(dp, "userbuffers") == [pytest.approx(24 * 8192 * 4096 + UB_FIXED + 132 * 32)]
    one = estimate(LLAMA3_8B, st.replace(tp=1, sequence_parallel=False), H100, MEGATRON)
    assert _rows(one, "userbuffers") == [0]


def test_userbuffers_only_under_transformer_engine():
    st = Strategy(seq_length=8192, tp=8, sequence_parallel=True, async_tp=True)
    titan = estimate(LLAMA3_8B, st, H100, RunOptions(framework="torchtitan"))
    assert _rows(titan, "userbuffers") == [0] and _rows(titan, "symmetric_memory")[0] > 0


def _buffers(st: Strategy) -> float:
    return estimate(LLAMA3_8B, st, A2, MINDSPEED).stages[0].bytes_by_category["communication_buffers"]


def test_mc2_workspace_by_hand():
    """t 2, s 8192, b 1 (T 8192), bf16. The layer's TP linears on the hidden states, local: qkv 4096 × 3072,
    o 2048 × 4096, fc1 4096 × 14336, down 7168 × 4096 — all multiples of 128 elements (256 B) — the largest fc1,
    4096 × 14336 × 2 = 117 440 512 B; + 8192 × 4096 × 2 = 67 108 864 B + 16 MiB = 201 326 592 B, above the SP
    double buffer 2 × 2 × 4096 × 8192 = 134 217 728 B, which it replaces as the layer's transient."""
    st = Strategy(seq_length=8192, tp=2, sequence_parallel=True)
    plain = _buffers(st)
    assert plain == pytest.approx(134_217_728)
    mc2 = _buffers(st.replace(async_tp=True))
    assert mc2 == pytest.approx(4096 * 14336 * 2 + 8192 * 4096 * 2 + 16 * 2**20)
    assert mc2 == pytest.approx(201_326_592)


def test_mc2_workspace_below_the_sp_double_buffer_changes_nothing():
    """t 8: fc1's local weight 4096 × 3584 × 2 = 29 360 128 B + 67 108 864 + 16 MiB = 113 246 208 B < the SP double
    buffer 134 217 728 B: the layer's transient stays the SP double buffer."""
    st = Strategy(seq_length=8192, tp=8, sequence_parallel=True)
    assert _buffers(st.replace(async_tp=True)) == pytest.approx(_buffers(st)) == pytest.approx(134_217_728)


def test_mc2_is_refused_by_mindspeed_on_moe_models():
    moe = dataclasses.replace(LLAMA3_8B, num_experts=8, experts_per_token=2, moe_ffn_hidden_size=F)
    got = estimate(moe, Strategy(seq_length=4096, tp=2, sequence_parallel=True, async_tp=True), A2, MINDSPEED)
    assert any(w.code == "W-MC2-MOE" for w in got.warnings)


@pytest.mark.parametrize(("framework", "key"), [("megatron", "will not start"), ("mindspeed", "will not start"),
                                              ("torchtitan", "nothing is priced")])
def test_async_tp_at_tp_1_is_said(framework: str, key: str):
    """Megatron's arguments.py turns sequence parallelism off at tp 1 and then asserts that --tp-comm-overlap has
    it: such a plan does not start. Elsewhere async TP at tp 1 has nothing to overlap. Either way it is said."""
    got = estimate(LLAMA3_8B, Strategy(seq_length=4096, tp=1, async_tp=True), H100, RunOptions(framework=framework))
    said = [w.text for w in got.warnings if w.code == "W-ASYNC-TP"]
    assert len(said) == 1 and key in said[0]
    plain = estimate(LLAMA3_8B, Strategy(seq_length=4096, tp=1), H100, RunOptions(framework=framework))
    assert not any(w.code == "W-ASYNC-TP" for w in plain.warnings)


def test_async_tp_elsewhere_is_still_said():
    st = Strategy(seq_length=4096, tp=2, sequence_parallel=True, async_tp=True)
    got = estimate(LLAMA3_8B, st, A2, RunOptions(framework="mindformers"))
    assert any(w.code == "W-UNMODELLED" and "MindFormers" in w.text for w in got.warnings)


def test_userbuffer_gemms_take_their_own_cublas_workspace():
    """TE's ``get_cublas_workspace(ub=True)``: the userbuffer GEMMs' workspace is _NUM_MAX_UB_STREAMS = 3 sizes of
    ``get_cublas_workspace_size_bytes`` — 3 × (32 MiB + 1 KiB) = 100 666 368 B on the H100 (compute capability 9.0)
    — one more allocation through the caching allocator, beside the process's own; none at t 1."""
    from estimator.device.workspaces import library_workspaces
    from estimator.resolve import resolve

    st = Strategy(seq_length=8192, tp=8, sequence_parallel=True, async_tp=True)
    on = library_workspaces(resolve(LLAMA3_8B, st, H100, MEGATRON))
    off = library_workspaces(resolve(LLAMA3_8B, st.replace(async_tp=False), H100, MEGATRON))
    assert on.ub == 3 * (32 * 2**20 + 1024) == 100_666_368
    assert on.te == off.te and off.ub == 0
    got = estimate(LLAMA3_8B, st, H100, MEGATRON)
    plain = estimate(LLAMA3_8B, st.replace(async_tp=False), H100, MEGATRON)
    assert got.stages[0].bytes_by_category["library_workspaces"] - \
        plain.stages[0].bytes_by_category["library_workspaces"] == pytest.approx(100_666_368)
    one = resolve(LLAMA3_8B, st.replace(tp=1, sequence_parallel=False), H100, MEGATRON)
    assert library_workspaces(one).ub == 0
    titan = resolve(LLAMA3_8B, st, H100, RunOptions(framework="torchtitan"))
    assert library_workspaces(titan).ub == 0
