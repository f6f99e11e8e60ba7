"""[A-COMPILE.op] against PyTorch itself: what a compiled block under torchtitan's per-op checkpointing saves.

A Llama-style block (RMSNorm, GQA attention with torchtitan's repeat_kv, SwiGLU) under the 2024-12 torchtitan
policy (9dec370 parallelize_llama.py: mm and attention outputs MUST_SAVE, every second mm PREFER_RECOMPUTE) is
compiled with AOTAutograd's min-cut partitioner (the ``aot_eager_decomp_partition`` backend; inductor partitions
the same way) and the tensors its forward saves for the backward are listed through saved-tensor hooks. The
estimator's compiled keep set (``torchtitan_op_keep(compiled=True)``) must be exactly the activations PyTorch
saves: eager SAC would also cache w2's output (the 7th mm), the partitioner does not.

Needs PyTorch (the ``measure`` extra): skipped without it; .ci/run runs it in .venv-measure.
"""

from __future__ import annotations

import importlib.util

import pytest

from estimator import ModelSpec, RunOptions, Strategy, find_preset
from estimator.activations import torchtitan_op_keep
from estimator.estimate import layout_inputs
from estimator.layout import build_layout
from estimator.resolve import resolve
from estimator.stage import StagePricer

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="the measure extra (torch) is not installed")

H, NH, NKV, DH, FF, S = 256, 4, 2, 48, 640, 64  # q width 192 ≠ h ≠ kv width 96: every saved shape tells its slot


def _saved_activations() -> list[tuple[int, ...]]:
    from collections import defaultdict
    from functools import partial

    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

    save_list = {torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
                 torch.ops.aten._scaled_dot_product_efficient_attention.default,
                 torch.ops.aten._scaled_dot_product_flash_attention.default}

    def policy():
        meta: dict[str, int] = defaultdict(int)

        def decide(ctx, func, *args, **kwargs):
            key = "recompute_mm_count" if ctx.is_recompute else "forward_mm_count"
            if func == torch.ops.aten.mm.default:
                meta[key] += 1
            save = func in save_list and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
        return create_selective_checkpoint_contexts(decide)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n1, self.n2 = nn.RMSNorm(H), nn.RMSNorm(H)
            self.wq = nn.Linear(H, NH * DH, bias=False)
            self.wk = nn.Linear(H, NKV * DH, bias=False)
            self.wv = nn.Linear(H, NKV * DH, bias=False)
            self.wo = nn.Linear(NH * DH, H, bias=False)
            self.w1, self.w3 = nn.Linear(H, FF, bias=False), nn.Linear(H, FF, bias=False)
            self.w2 = nn.Linear(FF, H, bias=False)

        def forward(self, x):
            b, t, _ = x.shape
            h = self.n1(x)
            q = self.wq(h).view(b, t, NH, DH)
            k = self.wk(h).view(b, t, NKV, DH)
            v = self.wv(h).view(b, t, NKV, DH)
            rep = NH // NKV  # torchtitan's repeat_kv: expand + reshape
            k = k[:, :, :, None, :].expand(b, t, NKV, rep, DH).reshape(b, t, NH, DH)
            v = v[:, :, :, None, :].expand(b, t, NKV, rep, DH).reshape(b, t, NH, DH)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True)
            x = x + self.wo(o.transpose(1, 2).reshape(b, t, NH * DH))
            g = self.n2(x)
            return x + self.w2(F.silu(self.w1(g)) * self.w3(g))

    torch.manual_seed(0)
    block = Block()
    weights = {p.untyped_storage().data_ptr() for p in block.parameters()}

    def run(x):
        return checkpoint(block, x, use_reentrant=False, context_fn=partial(policy))

    fn = torch.compile(run, backend="aot_eager_decomp_partition", fullgraph=True)
    saved: dict[int, tuple[int, ...]] = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in weights:
            saved[ptr] = tuple(t.shape)
        return t

    x = torch.randn(1, S, H, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x).sum().backward()
    return sorted(saved.values())


def test_compiled_block_saves_exactly_the_compiled_keep_set():
    measured = _saved_activations()
    # block input, wq's output, wv's output, attention output, log-sum-exp, w1's output — no w2 output (S, H)
    assert measured == sorted([(1, S, H), (S, NH * DH), (S, NKV * DH), (1, NH, S, DH), (1, NH, S), (S, FF)])
    model = ModelSpec(name="tiny", family="llama2", hidden_size=H, num_layers=1, num_attention_heads=NH,
                      num_kv_heads=NKV, head_dim=DH, ffn_hidden_size=FF, vocab_size=1000)
    strategy = Strategy(seq_length=S, compile=("model",))
    r = resolve(model, strategy, find_preset("H100-80G"), RunOptions(framework="torchtitan"))
    slots = StagePricer(r, build_layout(layout_inputs(r))).acts.slots("dense")
    kept = sorted(torchtitan_op_keep(slots, compiled=True) & {s.id for s in slots})
    assert kept == ["a.fa_stats", "a.norm_in", "a.out", "a.q", "a.v", "m.act_in.gate"]
    assert "m.ffn_out" in torchtitan_op_keep(slots)  # eager SAC caches it
