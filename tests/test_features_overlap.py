"""Async TP and overlapped data-parallel collectives (issue 11 feature 3), hand-derived:

* async TP (torchtitan ``enable_async_tensor_parallel``, TE ``--tp-comm-overlap``, MindSpeed MC2) splits each
  sequence-parallel all-gather / reduce-scatter into t steps pipelined with the matmul it feeds or follows: the pair
  takes max(c, m) + min(c, m)/t (the first or last step cannot overlap);
* ``--overlap-grad-reduce`` reduces gradient buckets while the last micro-batch's backward runs (the last bucket,
  about one layer's gradients, stays exposed); ``--overlap-param-gather`` gathers under the next forward; without the
  flags Megatron runs them after the backward / before the forward, fully exposed.
"""

from __future__ import annotations

import dataclasses

import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, find_preset
from estimator import comm as C
from estimator.formats import parse
from estimator.rowtime import async_tp_exposed
from estimator.steptime import estimate_step_time

H100 = find_preset("H100-80G")
H, F, A, KV, DH, V, L = 4096, 14336, 32, 8, 128, 128256, 4
LLAMA3_8B = ModelSpec(name="Llama-3-8B", family="llama2", hidden_size=H, num_layers=L, num_attention_heads=A,
                      num_kv_heads=KV, head_dim=DH, ffn_hidden_size=F, vocab_size=V)
LINEAR = H * (A * DH + 2 * KV * DH) + A * DH * H + 3 * H * F
MEGATRON = RunOptions(framework="megatron")
NVLINK = H100.levels[0]


def _link(n: int) -> C.Link:
    return C.Link(n, NVLINK.bandwidth * NVLINK.efficiency, NVLINK.latency)


def test_pipelined_pair_by_hand():
    assert async_tp_exposed(3.0, 2.0, 4) == pytest.approx(1.0 + 2.0 / 4)  # comm-bound: c − m + m/t
    assert async_tp_exposed(1.0, 2.0, 4) == pytest.approx(1.0 / 4)        # compute-bound: the first step only


def test_async_tp_hides_sequence_parallel_collectives_behind_matmuls():
    t, s = 8, 8192
    st = Strategy(seq_length=s, tp=t, sequence_parallel=True)
    plain = estimate_step_time(LLAMA3_8B, st, H100, MEGATRON).stages[0].comm["tp"]
    fused = estimate_step_time(LLAMA3_8B, st.replace(async_tp=True), H100, MEGATRON).stages[0].comm["tp"]
    ag = C.all_gather(2 * H * s, _link(t))  # M_h = β_c·h·T
    c_f, c_b = 4 * ag, (4 + 2) * ag  # Megatron re-gathers both saved norm outputs in the backward
    m_f = 2 * s * LINEAR / t / (H100.peak("bf16") * H100.eff_matmul)
    m_b = 2 * m_f  # input and weight gradients
    per_layer = async_tp_exposed(c_f, m_f, t) + async_tp_exposed(c_b, m_b, t)
    assert plain - fused == pytest.approx(L * (c_f + c_b - per_layer))  # Megatron's o_tp is 0


def test_async_tp_needs_sequence_parallelism():
    st = Strategy(seq_length=8192, tp=8, async_tp=True)
    got = estimate_step_time(LLAMA3_8B, st, H100, MEGATRON)
    assert got.stages[0].comm["tp"] == estimate_step_time(LLAMA3_8B, st.replace(async_tp=False), H100,
                                                           MEGATRON).stages[0].comm["tp"]


def _dp(**kw) -> tuple[float, float]:
    st = Strategy(seq_length=8192, dp=8, sharding=ShardingSpec(mode="zero1"), **kw)
    got = estimate_step_time(LLAMA3_8B, st, H100, MEGATRON).stages[0]
    return got.comm["dp"], got.compute["bwd"] + got.compute["recompute"]


def _stage_collectives() -> tuple[float, float]:
    elements = L * (LINEAR + 2 * H) + 2 * V * H + H
    return C.reduce_scatter(4 * elements, _link(8)), C.all_gather(2 * elements, _link(8))


def test_without_overlap_flags_megatron_exposes_both_collectives():
    rs, ag = _stage_collectives()
    exposed, _ = _dp(overlap_grad_reduce=False, overlap_param_gather=False)
    assert exposed == pytest.approx(rs + ag)


def test_overlapped_reduction_leaves_the_last_bucket():
    rs, ag = _stage_collectives()
    exposed, backward = _dp(overlap_grad_reduce=True, overlap_param_gather=True)
    assert backward > rs  # compute-bound: only the last layer's bucket stays exposed
    assert exposed == pytest.approx(rs / L + ag / L)
    exposed, _ = _dp(overlap_grad_reduce=True, overlap_param_gather=False)
    assert exposed == pytest.approx(rs / L + ag)


def test_unstated_overlap_keeps_the_knob():
    rs, ag = _stage_collectives()
    exposed, _ = _dp()
    assert exposed == pytest.approx((1 - 0.9) * (rs + ag))


def test_mindspeed_overlap_flags_are_read(shared_dir):
    scripts = shared_dir / "real-configs" / "mindspeed"
    both = parse([scripts / "msl_mixtral_8x7b_pretrain_ptd.sh"]).strategy
    assert (both.overlap_grad_reduce, both.overlap_param_gather) == (True, True)
    grads = parse([scripts / "msl_llama2_7b_pretrain_ptd.sh"]).strategy
    assert (grads.overlap_grad_reduce, grads.overlap_param_gather) == (True, False)


def test_symmetric_memory_workspace_is_priced_outside_the_allocator():
    """PyTorch's async TP keeps one symmetric-memory buffer per TP group grown to its largest request: the output
    chunks' double buffer of matmul-reduce-scatter, 2·β_c·h·T/t (torch/distributed/_symmetric_memory). By hand for
    Llama-3-8B, bf16, b 1, s 8192, t 8: 2 × 2 B × 4096 × 8192 / 8 = 8,388,608 B = 16 MiB on every stage, in the
    device peak (``empty_strided_p2p`` maps it outside the caching allocator), not in the allocator peak."""
    from estimator import estimate

    st = Strategy(seq_length=8192, tp=8, sequence_parallel=True, async_tp=True)
    on = estimate(LLAMA3_8B, st, H100, RunOptions(framework="torchtitan"))
    off = estimate(LLAMA3_8B, dataclasses.replace(st, async_tp=False), H100, RunOptions(framework="torchtitan"))
    hand = 2 * 2 * 4096 * 8192 / 8
    assert hand == 16 * 2**20
    for a, b in zip(on.stages, off.stages, strict=True):
        assert a.device_peak - b.device_peak == pytest.approx(hand)
        assert a.allocator_peak == pytest.approx(b.allocator_peak)
        assert [lr.total for lr in a.layers if lr.kind == "symmetric_memory"] == [pytest.approx(hand)]
    assert not any(w.code == "W-UNMODELLED" and "async TP" in w.text for w in on.warnings)
    te = estimate(LLAMA3_8B, st, H100, MEGATRON)  # TE userbuffers instead [D-UB] (test_features_overlap_buffers)
    assert all(lr.total == 0 for s in te.stages for lr in s.layers if lr.kind == "symmetric_memory")
