"""torch.compile and the loss kernel (issue 11 feature 2) against derivations written here:

* torch.compile's min-cut partitioner (``torch._functorch.partitioners.min_cut_rematerialization_partition``) saves
  the inputs of each fused pointwise region and recomputes its outputs in the backward: the RMSNorm outputs
  (recomputed from the saved norm input and its fp32 statistics) and the SwiGLU activation and product (from the
  saved gate and up projections) are no longer saved;
* torchtitan's eager loss ``cross_entropy(pred.float(), labels)`` keeps an fp32 log-softmax (4 B per logit) and
  holds the fp32 copy and the log-softmax together in the forward; compiled, the bf16 logits and a per-token fp32
  log-sum-exp are kept and the softmax is recomputed in the backward;
* a chunked (fused linear) cross-entropy never materialises the logits: one fp32 chunk about the size of the hidden
  states (Liger's chunking rule);
* the layer's elementwise HBM traffic follows what it stores (T-COMP.ew), so fusion shortens it.
"""

from __future__ import annotations

import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from estimator.estimate import layout_inputs
from estimator.layout import build_layout
from estimator.resolve import resolve
from estimator.stage import StagePricer
from estimator.steptime import estimate_step_time

H100 = find_preset("H100-80G")
H, F, A, KV, DH, V = 4096, 14336, 32, 8, 128, 128256
LLAMA3_8B = ModelSpec(name="Llama-3-8B", family="llama2", hidden_size=H, num_layers=4, num_attention_heads=A,
                      num_kv_heads=KV, head_dim=DH, ffn_hidden_size=F, vocab_size=V)
Q, KV_W = A * DH, KV * DH
TITAN = RunOptions(framework="torchtitan")
EAGER = Strategy(seq_length=8192, dp=8, sharding=ShardingSpec(mode="fsdp"))


def _pricer(st: Strategy) -> StagePricer:
    r = resolve(LLAMA3_8B, st, H100, TITAN)
    return StagePricer(r, build_layout(layout_inputs(r)))


def _layer(st: Strategy, option: str = "none") -> float:
    sums = _pricer(st).acts.sums("dense", option)
    return sums.sp + sums.tp + sums.rep


# torchtitan's eager layer (flash attention, separate SiLU and mul, t = 1), bytes per token: norm inputs and
# outputs 4·2h, q k v, flash statistics, attention output, gate/up/SiLU/product 4·2·ffn, two fp32 norm statistics
EAGER_LAYER = 2 * H * 4 + 2 * (Q + 2 * KV_W) + 4 * A + 2 * Q + 2 * F * 4 + 2 * 4


def test_eager_layer_by_hand():
    assert _layer(EAGER) == EAGER_LAYER


def test_compiled_layer_recomputes_norm_outputs_and_swiglu():
    compiled = EAGER.replace(compile=("model",))
    assert _layer(compiled) == EAGER_LAYER - 2 * H * 2 - 2 * F * 2


def test_compiled_op_level_checkpointing_does_not_save_the_ffn_output():
    # torchtitan's per-op policy (parallelize_llama.py, 9dec370 and e7c0cae) marks the outputs of the 1st, 3rd, 5th,
    # 7th mm (wq, wv, w1, w2) and the attention kernel MUST_SAVE, everything else PREFER_RECOMPUTE. Eager SAC caches
    # every MUST_SAVE output beside the block input (V15: 63,616 B/token). Compiled (torchtitan compiles each
    # checkpointed block), AOTAutograd's partitioner must recompute the PREFER_RECOMPUTE nodes and saves a value
    # only when the backward graph reads it: the backward reads the block input (both RMSNorms are recomputed
    # from it), wq's output (RoPE'd q), wv's output (v), the attention output and log-sum-exp (the attention
    # backward; wo's input is recomputed from the output) and w1's output (SiLU's backward) — but not w2's output,
    # which only feeds the residual add, whose backward reads neither operand: h bf16 bytes less per token.
    eager, compiled = _layer(EAGER, "selective"), _layer(EAGER.replace(compile=("model",)), "selective")
    assert eager == 8192 + 8192 + 2048 + 8192 + 128 + 28_672 + 8192
    assert compiled == eager - 2 * H


def _head(st: Strategy) -> tuple[float, float]:
    pricer = _pricer(st)
    sums = pricer.acts.sums("output", "none")
    return sums.v, pricer.loss_working() / pricer.T


def test_compiled_loss_keeps_bf16_logits_and_a_log_sum_exp():
    v_eager, work_eager = _head(EAGER)
    assert v_eager == 4 and work_eager == pytest.approx(8 * V)  # fp32 log-softmax; fp32 copy + output in backward
    fused = EAGER.replace(compile=("loss",))
    v_fused, work_fused = _head(fused)
    assert v_fused == 2 and work_fused == pytest.approx(2 * V)
    rep = _pricer(fused).acts.sums("output", "none").rep
    assert rep == 2 * H + 4  # the head input (gathered: DTensor SP) and the fp32 log-sum-exp per token


def test_chunked_cross_entropy_never_materialises_the_logits():
    v, work = _head(EAGER.replace(loss_fusion="chunked"))
    assert v == 0 and work == pytest.approx(4 * H)


def test_compiled_peak_is_lower_by_the_recomputed_slots():
    eager = estimate(LLAMA3_8B, EAGER, H100, TITAN).stages[0].bytes_by_category["activations"]
    compiled = estimate(LLAMA3_8B, EAGER.replace(compile=("model",)), H100, TITAN)
    T = 8192
    assert eager - compiled.stages[0].bytes_by_category["activations"] == pytest.approx(4 * T * (2 * H * 2 + 2 * F * 2))
    assert not any("compile" in w.text for w in compiled.warnings)


def test_fusion_shortens_elementwise_time():
    eager = estimate_step_time(LLAMA3_8B, EAGER, H100, TITAN).stages[0]
    compiled = estimate_step_time(LLAMA3_8B, EAGER.replace(compile=("model",)), H100, TITAN).stages[0]
    hbm = H100.hbm_bandwidth * H100.eff_hbm
    less = 4 * 8192 * (2 * H * 2 + 2 * F * 2) / hbm  # the stored bytes no longer written and read
    forward, backward = eager.F - compiled.F, eager.B - compiled.B
    assert forward == pytest.approx(1 * less)  # k_ew_fwd = 1
    assert backward == pytest.approx(2 * less)  # k_ew_bwd = 2
