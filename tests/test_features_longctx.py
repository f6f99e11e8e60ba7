"""Very long context (issue 11 feature 6), hand-derived:

* a ring keeps two K/V blocks in flight whatever the CP degree; the all-gather variant holds the whole sequence's
  K/V and, in the backward, their gradients (Transformer Engine's AttnFuncWithCPAndKVAllGather): at a fixed number
  of tokens per device its buffer grows with cp;
* with a causal mask and contiguous chunks, rank r's queries see r + ½ of the cp key blocks: the last rank does
  (cp − ½)/cp of the full attention where a load-balanced split (head-tail chunks) gives each rank ½;
* attention kernels run at their own efficiency when the device preset (or plan) states one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator import ModelSpec, RunOptions, Strategy, estimate, find_preset
from estimator.export import export
from estimator.formats import parse
from estimator.parsed import apply_changes
from estimator.rowtime import cp_causal_imbalance
from estimator.steptime import estimate_step_time

H100 = find_preset("H100-80G")
H, F, A, KV, DH, V, L = 4096, 14336, 32, 8, 128, 128256, 4
LLAMA3_8B = ModelSpec(name="Llama-3-8B", family="llama2", hidden_size=H, num_layers=L, num_attention_heads=A,
                      num_kv_heads=KV, head_dim=DH, ffn_hidden_size=F, vocab_size=V)
MEGATRON = RunOptions(framework="megatron")
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _buffers(st: Strategy) -> float:
    return estimate(LLAMA3_8B, st, H100, MEGATRON).stages[0].bytes_by_category["communication_buffers"]


@pytest.mark.parametrize("cp", [2, 4, 8, 16])
def test_cp_buffers_at_fixed_tokens_per_device(cp):
    tokens = 16384  # per device: the sequence grows with cp (131k at cp 8)
    kv_block = 2 * KV * 2 * DH * tokens  # β_c·n_kv·(dqk + dv)·T
    ring = _buffers(Strategy(seq_length=tokens * cp, cp=cp, cp_algo="ring"))
    gather = _buffers(Strategy(seq_length=tokens * cp, cp=cp, cp_algo="allgather"))
    assert ring == pytest.approx(2 * kv_block)        # constant in cp (the largest transient of a layer)
    assert gather == pytest.approx(2 * cp * kv_block)  # K/V and dK/dV for the whole sequence


@pytest.mark.parametrize(("cp", "factor"), [(2, 1.5), (4, 1.75), (8, 1.875), (1, 1.0)])
def test_causal_imbalance_of_contiguous_chunks(cp, factor):
    assert cp_causal_imbalance(cp, 0.5, True) == pytest.approx(factor)
    assert cp_causal_imbalance(cp, 0.5, False) == 1.0


def _attention_flops(s: int, cp: int) -> float:
    T = s / cp
    return L * 2 * T * A * 0.5 * s * (DH + DH)  # forward core of the stage, κ = ½ (causal, flash)


def test_unbalanced_cp_slows_the_attention_of_the_critical_rank():
    s, cp = 131072, 8
    st = Strategy(seq_length=s, cp=cp, cp_algo="ring")
    balanced = estimate_step_time(LLAMA3_8B, st, H100, MEGATRON).stages[0]
    skewed = estimate_step_time(LLAMA3_8B, st.replace(cp_load_balance=False), H100, MEGATRON).stages[0]
    rate = H100.flops(2) * H100.eff_matmul
    fwd = _attention_flops(s, cp)
    f_more, b_more = skewed.F - balanced.F, skewed.B - balanced.B
    assert f_more == pytest.approx(fwd * (1.875 - 1) / rate)
    assert b_more == pytest.approx(2.5 * fwd * (1.875 - 1) / rate)  # flash backward = 2.5 × forward


def test_attention_efficiency_applies_to_the_core_only():
    s = 65536
    st = Strategy(seq_length=s, cp=4, cp_algo="ring")
    base = estimate_step_time(LLAMA3_8B, st, H100, MEGATRON).stages[0]
    slow = estimate_step_time(LLAMA3_8B, st, H100.replace(eff_attention=0.4), MEGATRON).stages[0]
    fwd = _attention_flops(s, 4)
    peak = H100.flops(2)
    more, weights = slow.F - base.F, (slow.W, base.W)
    assert more == pytest.approx(fwd / (peak * 0.4) - fwd / (peak * H100.eff_matmul))
    assert weights[0] == pytest.approx(weights[1])


def test_megatron_cp_comm_type_is_read_and_written(tmp_path):
    path = tmp_path / "cp.sh"
    text = (FIXTURES / "mindspeed" / "fp8_llama3_8b.sh").read_text().replace(
        "    --seq-length 8192 \\", "    --context-parallel-size 4 \\\n    --cp-comm-type allgather \\\n"
        "    --seq-length 131072 \\")
    path.write_text(text)
    parsed = parse([path], framework="megatron")
    assert (parsed.strategy.cp, parsed.strategy.cp_algo) == (4, "allgather")
    new = export(apply_changes(parsed, {"strategy.cp_algo": "ring"}))[str(path)]
    assert "--cp-comm-type p2p" in new and "--context-parallel-algo" not in new


def _layer(st: Strategy):
    from estimator.estimate import layout_inputs
    from estimator.layout import Item, build_layout
    from estimator.resolve import resolve
    from estimator.stage import Row, StagePricer

    r = resolve(LLAMA3_8B, st, H100, MEGATRON)
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    item = Item("dense", "dense", index=1)
    return pricer, Row(item, 0, pricer.cost(item))


def test_a_million_tokens_keep_the_activations_of_their_share():
    """Flash attention saves per-token tensors only: a layer at 2^20 tokens over cp 64 keeps exactly what it keeps
    at 16,384 tokens without CP (the ring's K/V blocks are transient buffers, not saved activations)."""
    _, long_row = _layer(Strategy(seq_length=1 << 20, cp=64, cp_algo="ring"))
    _, short_row = _layer(Strategy(seq_length=1 << 14))
    assert long_row.cost.act == pytest.approx(short_row.cost.act)
    assert long_row.cost.transient == pytest.approx(2 * 2 * KV * 2 * DH * (1 << 14))  # two K/V blocks in flight


def test_causal_attention_flops_at_a_million_tokens():
    """Per rank, a load-balanced causal split does 1/cp of the full causal attention: the forward core is
    2·s²·a·(dqk + dv)·½/cp (QKᵀ and PV, half the score matrix), the flash backward 2.5 × that."""
    from estimator.rowtime import TimeContext, row_time

    s, cp = 1 << 20, 64
    pricer, row = _layer(Strategy(seq_length=s, cp=cp, cp_algo="ring"))
    flops = row_time(TimeContext(pricer), row).flops
    full = 2 * s * s * A * (DH + DH) * 0.5
    assert flops.fwd_attn == pytest.approx(full / cp)
    assert flops.bwd_attn == pytest.approx(2.5 * full / cp)
