"""The loss working set per framework and loss kernel (D45, docs/model.md#working-overhead), each figure derived here
from the framework's source, in bytes per logit (one logit = one token × one vocabulary row on this rank):

Megatron-LM, ``--cross-entropy-loss-fusion`` (``--cross-entropy-fusion-impl native``, the default;
megatron/core/fusions/fused_cross_entropy.py at d98e8a64dd, unchanged in memory since it was added in 2024-06):

* forward: ``calculate_logits_max`` returns ``vocab_parallel_logits.float()`` — an fp32 copy (4) beside the caller's
  bf16 logits (2); ``calculate_predicted_logits`` subtracts the maximum in place and exponentiates with
  ``torch.exp(x, out=x)``; ``calculate_cross_entropy_loss`` divides in place; ``ctx.save_for_backward(exp_logits,
  …)`` saves that fp32 softmax: 4 saved, 2 beside it in the forward (w_f = β_c) — the unfused loss' figures;
* backward: ``calculate_gradients`` runs ``grad_2d[arange_1d, masked_target_1d] -= softmax_update`` on a view of the
  saved softmax, ``grad_input.mul_(…)`` and returns ``grad_input.to(torch.bfloat16)``. Each step is decorated with
  ``jit_fuser``, which is ``torch.compile`` from torch 2.2 (megatron/core/jit.py). Compiled, the in-place
  ``index_put_`` on a view of a graph input becomes a functional ``index_put`` that inductor's reinplacing pass
  leaves alone (torch/_inductor/fx_passes/reinplace.py: a mutated view of a graph input is not reinplaced unless
  the epilogue's ``copy_`` writes that very result back — here it writes the product) and that inductor lowers as
  ``index_put_(clone(x), …)`` (torch/_inductor/lowering.py): an fp32 clone (4). Live together: the saved softmax
  (4), the clone (4) and the bf16 gradient (2) — w_b = β_l + β_c beyond the saved softmax.
  Unfused (``VocabParallelCrossEntropy``, eager): the same steps in place, then autograd casts the fp32 gradient to
  the bf16 input's dtype: 4 + 2 — w_b = β_c.
* MindSpeed sets ``megatron.core.jit.jit_fuser = dummy_jit`` (mindspeed_llm/tasks/megatron_adaptor.py): its fused
  loss runs the same steps eagerly, as the unfused loss does.

torchtitan with TP > 1 (loss parallel; torch/distributed/tensor/parallel/loss.py): ``cross_entropy(pred.float(),
labels)`` dispatches to DTensor's decomposition instead of the aten kernels (``del pred`` frees the bf16 logits
before the backward, torchtitan train.py at 9dec370):

* forward ``_log_softmax``: the bf16 logits (2), the fp32 copy ``x`` (4), ``shifted = x - x_max`` (4) and
  ``torch.exp(shifted)`` (4) are live together; ``result = shifted - logsumexp`` (4) replaces the exp: 14, of which
  the result (4) is the saved log-softmax — w_f = β_c + 2·β_l;
* backward ``_nll_loss_and_log_softmax_backward``: ``grad_input = torch.zeros_like(x)`` (4), then
  ``(grad_input + torch.exp(x)) * grad_output``: the saved log-softmax x (4), grad_input (4), the sum (4) and either
  the exp (4) or the product (4) — 16, w_b = 3·β_l beyond the saved one. With TP 1 the aten kernels
  (``nll_loss_backward`` into a zeroed fp32 gradient, then ``_log_softmax_backward_data``) hold 4 + 4 + 4: w_b =
  2·β_l (V15, unchanged).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from estimator.formats import parse
from estimator.single_layer import layer_activation, loss_working_set

H100 = find_preset("H100-80G")
H, F, A, KV, DH, V = 4096, 14336, 32, 8, 128, 128256
LLAMA3_8B = ModelSpec(name="Llama-3-8B", family="llama2", hidden_size=H, num_layers=4, num_attention_heads=A,
                      num_kv_heads=KV, head_dim=DH, ffn_hidden_size=F, vocab_size=V)
S = 8192
BETA_C, BETA_L = 2, 4
FIX = Path(__file__).resolve().parent / "fixtures" / "megatron"


def _megatron_vpad(t: int) -> int:
    """Megatron pads the vocabulary to a multiple of 128·t (D35)."""
    unit = 128 * t
    return -(-V // unit) * unit


def _head_saved(framework: str, strategy: Strategy) -> float:
    """The output row's stored bytes less its per-token slots: the saved softmax (class V)."""
    options = RunOptions(framework=framework)
    return layer_activation(LLAMA3_8B, strategy, H100, options, "output", "none")


# ------------------------------------------------------------------------------------------ Megatron fused loss
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_megatron_fused_loss_saves_the_fp32_softmax_of_the_unfused_one(tp):
    plain = Strategy(seq_length=S, tp=tp, dp=1)
    fused = plain.replace(loss_fusion="fused")
    assert _head_saved("megatron", fused) == _head_saved("megatron", plain)
    options = RunOptions(framework="megatron")
    logits = S * _megatron_vpad(tp) / tp
    # unfused: the gradient built in place in the softmax, the bf16 cast beside it
    assert loss_working_set(LLAMA3_8B, plain, H100, options) == BETA_C * logits
    # fused, compiled: the saved softmax, inductor's fp32 clone for index_put and the bf16 gradient
    assert loss_working_set(LLAMA3_8B, fused, H100, options) == (BETA_L + BETA_C) * logits


def test_mindspeed_fused_loss_runs_eagerly_like_the_unfused_one():
    options = RunOptions(framework="mindspeed")
    plain = Strategy(seq_length=S, tp=2, dp=1)
    fused = plain.replace(loss_fusion="fused")
    assert _head_saved("mindspeed", fused) == _head_saved("mindspeed", plain)
    assert loss_working_set(LLAMA3_8B, fused, H100, options) == loss_working_set(LLAMA3_8B, plain, H100, options)


def test_a_compiled_torchtitan_loss_still_keeps_the_bf16_logits():
    # the fused kernel of other frameworks is unchanged: β_c logits, the gradient at β_c
    options = RunOptions(framework="torchtitan")
    fused = Strategy(seq_length=S, dp=8, sharding=ShardingSpec(mode="fsdp"), compile=("loss",))
    assert loss_working_set(LLAMA3_8B, fused, H100, options) == BETA_C * S * V


# ------------------------------------------------------------------------------------------ torchtitan loss parallel
@pytest.mark.parametrize("tp", [2, 4, 8])
def test_torchtitan_loss_parallel_holds_sixteen_bytes_per_logit_around_its_backward(tp):
    options = RunOptions(framework="torchtitan")
    strategy = Strategy(seq_length=S, tp=tp, dp=1)
    logits = S * V / tp
    assert loss_working_set(LLAMA3_8B, strategy, H100, options) == 3 * BETA_L * logits
    assert BETA_L + 3 * BETA_L == 16  # with the saved log-softmax: x, grad_input, the sum, the product


def test_torchtitan_without_loss_parallel_keeps_the_aten_kernels_figures():
    options = RunOptions(framework="torchtitan")
    tp1 = Strategy(seq_length=S, dp=8)
    assert loss_working_set(LLAMA3_8B, tp1, H100, options) == 2 * BETA_L * S * V  # V15: 8,405,385,216 B
    # TP 2 with loss parallel switched off (training.disable_loss_parallel): the logits are gathered, aten kernels
    off = Strategy(seq_length=S, tp=2, dp=4, vocab_parallel_loss=False)
    assert loss_working_set(LLAMA3_8B, off, H100, options) == 2 * BETA_L * S * V


def test_loss_parallel_working_set_reaches_the_peak_of_a_plan_peaking_at_the_loss():
    # one layer, a long sequence: the stage peaks at the loss backward, whose working set grows by β_l per logit
    model = LLAMA3_8B.replace(num_layers=1)
    options = RunOptions(framework="torchtitan", reserve=0)
    strategy = Strategy(seq_length=S, tp=2, dp=4, sharding=ShardingSpec(mode="fsdp"))
    stage = estimate(model, strategy, H100, options).stages[0]
    old_rule = 2 * BETA_L * S * V / 2  # D45's "pytorch" widths: 8 B per logit beyond the saved log-softmax
    assert stage.peak_instant.startswith("L: loss backward"), stage.peak_instant
    assert stage.bytes_by_category["working_overhead"] == old_rule + BETA_L * S * V / 2


# ------------------------------------------------------------------------------------------ the reader
def _script(tmp_path: Path, extra: str) -> str:
    text = (FIX / "train_gpt3_defaults.sh").read_text(encoding="utf-8")
    assert "    --fp16\n" in text
    path = tmp_path / "train.sh"
    path.write_text(text.replace("    --fp16\n", "    --fp16\n" + extra), encoding="utf-8")
    return str(path)


def test_te_cross_entropy_is_said_to_be_priced_as_the_native_one(tmp_path):
    te = parse([_script(tmp_path, "    --cross-entropy-loss-fusion\n    --cross-entropy-fusion-impl te\n")])
    assert te.strategy.loss_fusion == "fused"
    said = [w.text for w in te.warnings if w.code == "W-FLAG-UNPRICED"]
    assert len(said) == 1 and "Transformer Engine's cross-entropy" in said[0]
    native = parse([_script(tmp_path, "    --cross-entropy-loss-fusion\n    --cross-entropy-fusion-impl native\n")])
    assert native.strategy.loss_fusion == "fused"
    assert not [w for w in native.warnings if w.code == "W-FLAG-UNPRICED"]
