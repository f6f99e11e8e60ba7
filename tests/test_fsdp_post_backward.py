"""FSDP2's post-backward of the last unit (e2), derived by hand from PyTorch's source (issue 10 item 3).

``FSDPParamGroup.post_backward`` (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py) takes the unit's
unsharded gradients off the parameters and calls ``foreach_reduce`` (_fsdp_collectives.py), which

1. allocates the reduce-scatter input (β_rd per element of the unit) and copies the unsharded gradients into it —
   both are live at once (the copy-in);
2. only then clears the list holding the unsharded gradients (``unsharded_grads.clear()``), and on the
   reduce-scatter stream allocates the output (β_rd per element / os) while the input still lives; with
   reduce dtype = parameter dtype the output *is* the new sharded gradient (a view, ``as_strided``), otherwise
   it is cast beside it, and with accumulation it is added into the gradient held already. With more than one
   rank, the Shard(i) loop before the copy-in (``for i, (fsdp_param, unsharded_grad) in enumerate(...)``) leaves
   its variable on the list's last gradient, so ``clear()`` does not free that one until foreach_reduce returns:
   the unit's last parameter (the head after the final norm; the E unit's embedding) keeps β_c per element.

So the unit's sharded gradient does not exist at the copy-in: the peak of the step is
max(copy-in, reduce-scatter output) on top of the gradients of the units posted back before. The estimate counted
the head's sharded gradient as already reduced at the copy-in (the root layout; the E unit's own in the torchtitan
layout) — high by β_g·E/os.
"""

from __future__ import annotations

from estimator import ModelSpec, RecomputePlan, RunOptions, ShardingSpec, Strategy, estimate, find_preset

H100 = find_preset("H100-80G")

# Llama-3-8B dimensions, 4 layers: a short-sequence, full-recompute plan whose peak is the last post-backward
H, A, KV, DH, FF, V, L = 4096, 32, 8, 128, 14336, 128256, 4
MODEL = ModelSpec(name="llama3-8b-4l", hidden_size=H, num_layers=L, num_attention_heads=A, num_kv_heads=KV,
                  head_dim=DH, ffn_hidden_size=FF, vocab_size=V)
BLOCK = H * A * DH + 2 * H * KV * DH + A * DH * H + 3 * H * FF + 2 * H  # q, k, v, o, w1 w2 w3, two norms
EMB = HEAD = V * H
ROOT = EMB + HEAD + H  # root unit: embedding, final norm, head
P = G = RD = 4
C = 2


def _stage(layout: str, dp: int, reduce_bytes: int = RD):
    strategy = Strategy(seq_length=1024, dp=dp, param_bytes=P, grad_bytes=G, reduce_bytes=reduce_bytes,
                        compute_bytes=C, flash_attention=True, recompute=RecomputePlan(default_mode="full"),
                        sharding=ShardingSpec(mode="fsdp", fsdp_layout=layout))
    options = RunOptions(framework="hyperparallel", optimizer_impl="foreach", reserve=0, kv_repeat=False)
    return estimate(MODEL, strategy, H100, options).stages[0]


DEVICE_PARTS = ("library_workspaces", "allocator_slack", "runtime_context", "comm_library")


def tensors(stage) -> float:
    """The stage's tensors at its peak instant: issue 10's device-level parts come on top of them (and do not move
    the instant, which the tensors decide)."""
    return stage.total - sum(stage.bytes_by_category[c] for c in DEVICE_PARTS)


def _static(dp: int) -> int:
    elems = L * BLOCK + ROOT
    return P * elems // dp + 2 * 4 * elems // dp  # sharded fp32 parameters + Adam's two fp32 states


def test_root_copy_in_holds_no_sharded_gradient_of_the_root():
    stage = _stage("root", 8)
    before = G * L * BLOCK // 8                     # the blocks' sharded gradients (posted back earlier)
    copy_in = before + RD * ROOT + C * ROOT         # + reduce-scatter input + the root's unsharded gradients
    assert tensors(stage) == _static(8) + copy_in      # the O part's sharded gradient (262,670,336 B) no longer in
    assert tensors(stage) == 9_624_975_360
    assert stage.peak_instant == "e2: root post-backward copy-in"
    assert stage.bytes_by_category["gradients"] == before
    assert stage.bytes_by_category["communication_buffers"] == RD * ROOT
    assert stage.bytes_by_category["working_overhead"] == C * ROOT


def test_one_way_shard_peaks_at_the_reduce_scatter_output():
    # os = 1: the output (β_rd·E, the sharded gradient itself) is larger than the freed β_c·E unsharded gradients;
    # with one rank the Shard(i) loop does not run, so no gradient is held through it
    stage = _stage("root", 1)
    before = G * L * BLOCK
    assert stage.peak_instant == "e2: root post-backward reduce-scatter output"
    assert tensors(stage) == _static(1) + before + G * ROOT + RD * ROOT
    assert stage.bytes_by_category["gradients"] == before + G * ROOT


def test_torchtitan_e_unit_reduce_scatter_output_keeps_the_embedding_gradient():
    # torchtitan layout: the E unit [embedding] posts back last; the O unit [norm, head] earlier. Its one gradient
    # is the list's last: held through the reduce-scatter beside the input and the output (4 + 4/8 + 2 per element,
    # the copy-in 4 + 2)
    stage = _stage("torchtitan", 8)
    before = G * (L * BLOCK + HEAD + H) // 8
    assert stage.peak_instant == "e2: E-unit post-backward reduce-scatter output"
    assert tensors(stage) == _static(8) + before + G * EMB // 8 + RD * EMB + C * EMB
    assert stage.bytes_by_category["working_overhead"] == C * EMB


def test_reduce_dtype_cast_keeps_the_output_beside_the_gradient():
    # bf16 reduce, fp32 gradients, os = 1: the bf16 output (2·E) and its fp32 cast (4·E) are live together beside
    # the input (2·E); the copy-in holds 2·E + 2·E
    stage = _stage("root", 1, reduce_bytes=2)
    before = G * L * BLOCK
    assert stage.peak_instant == "e2: root post-backward reduce-scatter output"
    assert tensors(stage) == _static(1) + before + G * ROOT + 2 * ROOT + 2 * ROOT
