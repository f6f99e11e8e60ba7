"""The fused kernels ``sapp measure`` runs a Hugging Face model through, as training stacks run them: flash and
sparse flash attention, DeepSeek's sparse-attention indexer, the Mamba-2 mixer and RMSNorm, each a ``torch.library``
custom op with only a fake kernel (shapes), saving for backward what the real kernel saves; and the patches that put
them into a model built by ``tracer.build_model``.

Imported only by ``sapp measure`` (PyTorch and transformers are the optional ``measure`` extra).
"""

from __future__ import annotations

from typing import Any

import torch

# --attention: "flash" is what training stacks run (FlashAttention-2/3, TE, MindSpeed FA): a causal kernel, no
# materialised mask, K/V heads not repeated, saving out and logsumexp; "sdpa" and "eager" are transformers' own
# paths as they run here (sdpa with the decoder's mask, which repeats K/V; eager with the scores materialised)
ATTENTION = {"flash": "sapp_causal", "sdpa": "sdpa", "eager": "eager"}
# flash for a model with DeepSeek's sparse-attention indexer, which scores against a materialised causal mask
SPARSE_FLASH = "sapp_sparse"


@torch.library.custom_op("sapp::flash_attention", mutates_args=())
def _flash_op(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """FlashAttention's forward contract: (out, logsumexp) from (batch, heads, seq, dim) inputs, K/V with
    fewer heads (GQA) and a value width of its own (MLA). Only its fake kernel runs (shapes only)."""
    raise NotImplementedError("sapp::flash_attention runs on fake tensors only")


@_flash_op.register_fake
def _(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    b, heads, seq, _ = query.shape
    # out in (batch, seq, heads, dim), the layout flash kernels write and the output projection reads
    return query.new_empty(b, seq, heads, value.shape[-1]), query.new_empty(b, heads, seq, dtype=torch.float32)


@torch.library.custom_op("sapp::flash_attention_backward", mutates_args=())
def _flash_bwd_op(grad: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  out: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    raise NotImplementedError("sapp::flash_attention_backward runs on fake tensors only")


@_flash_bwd_op.register_fake
def _(grad: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, out: torch.Tensor,
      lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.empty_like(query), torch.empty_like(key), torch.empty_like(value)



def _flash_setup(ctx: Any, inputs: tuple, output: tuple) -> None:
    # what flash_attn's FlashAttnFunc saves: q, k, v, out, softmax_lse (rng_state only with dropout)
    ctx.save_for_backward(*inputs, *output)


def _flash_backward(ctx: Any, grad_out: torch.Tensor, _grad_lse: torch.Tensor) -> tuple:
    q, k, v, out, lse = ctx.saved_tensors
    return _flash_bwd_op(grad_out.contiguous(), q, k, v, out, lse)


_flash_op.register_autograd(_flash_backward, setup_context=_flash_setup)


@torch.library.custom_op("sapp::sparse_flash_attention", mutates_args=())
def _sparse_op(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A sparse flash kernel's contract (FlashMLA sparse, DeepSeek-V3.2): attention over the ``indices`` (batch,
    seq, topk) keys of every query; saves what the dense kernel saves and the indices. Fake kernel only."""
    raise NotImplementedError("sapp::sparse_flash_attention runs on fake tensors only")


@_sparse_op.register_fake
def _(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
      indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    b, heads, seq, _ = query.shape
    return query.new_empty(b, seq, heads, value.shape[-1]), query.new_empty(b, heads, seq, dtype=torch.float32)


def _sparse_backward(ctx: Any, grad_out: torch.Tensor, _grad_lse: torch.Tensor) -> tuple:
    q, k, v, _indices, out, lse = ctx.saved_tensors
    return (*_flash_bwd_op(grad_out.contiguous(), q, k, v, out, lse), None)


_sparse_op.register_autograd(_sparse_backward, setup_context=_flash_setup)


def _flash_attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attention_mask: Any, dropout: float = 0.0, indices: Any = None,
                     **_: Any) -> tuple[torch.Tensor, None]:
    """The causal flash kernel. The mask (causal or sliding window) is not materialised, as in FlashAttention:
    a window changes the work, not what is saved for backward; dropout keeps only an RNG state. With a sparse
    indexer's ``indices`` the sparse kernel runs instead (it keeps the indices for its backward)."""
    if indices is not None:
        out, _lse = _sparse_op(query, key, value, indices)
    else:
        out, _lse = _flash_op(query, key, value)
    return out, None


@torch.library.custom_op("sapp::lightning_indexer", mutates_args=())
def _indexer_op(q: torch.Tensor, k: torch.Tensor, weights: torch.Tensor, mask: torch.Tensor,
                topk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A fused lightning indexer's contract (DeepSeek-V3.2 §2.1): the index scores Σ_j w_j·ReLU(q_j·k) of every
    causal key, never materialised, and their top-k: (scores of the selected keys, fp32; their int32 indices),
    from q (batch, seq, heads, dim), k (batch, seq, dim) and w (batch, seq, heads). Fake kernel only."""
    raise NotImplementedError("sapp::lightning_indexer runs on fake tensors only")


@_indexer_op.register_fake
def _(q: torch.Tensor, k: torch.Tensor, weights: torch.Tensor, mask: torch.Tensor,
      topk: int) -> tuple[torch.Tensor, torch.Tensor]:
    b, seq = q.shape[:2]
    return q.new_empty(b, seq, topk, dtype=torch.float32), q.new_empty(b, seq, topk, dtype=torch.int32)


@torch.library.custom_op("sapp::lightning_indexer_backward", mutates_args=())
def _indexer_bwd_op(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, weights: torch.Tensor,
                    indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    raise NotImplementedError("sapp::lightning_indexer_backward runs on fake tensors only")


@_indexer_bwd_op.register_fake
def _(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, weights: torch.Tensor,
      indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(weights)


def _indexer_setup(ctx: Any, inputs: tuple, output: tuple) -> None:
    # the backward of the indexer's loss recomputes the logits of the selected keys: q, k, w and the indices
    q, k, weights, _mask, _topk = inputs
    ctx.save_for_backward(q, k, weights, output[1])


def _indexer_backward(ctx: Any, grad: torch.Tensor, _grad_indices: Any) -> tuple:
    q, k, weights, indices = ctx.saved_tensors
    return (*_indexer_bwd_op(grad.contiguous(), q, k, weights, indices), None, None)


_indexer_op.register_autograd(_indexer_backward, setup_context=_indexer_setup)


def train_indexers(model: Any, fused: bool) -> int:
    """Run every DeepSeek sparse-attention indexer as training runs it (DeepSeek-V3.2 §2.1, Megatron-LM's
    DSAttention): on detached inputs (its gradient comes from its own KL loss only), with autograd on — the
    transformers module runs it under no_grad, as inference does. ``fused``: the fused kernel's contract
    (``_indexer_op``); else transformers' own unfused arithmetic. Returns how many indexers it changed."""
    import inspect

    changed = 0
    for module in model.modules():
        if not type(module).__name__.endswith("Indexer") or not hasattr(module, "index_topk"):
            continue
        plain = inspect.unwrap(type(module).forward)  # without torch.no_grad

        def forward(hidden_states: torch.Tensor, q_resid: torch.Tensor, position_embeddings: Any,
                    attention_mask: torch.Tensor, *args: Any, m: Any = module, f: Any = plain, **kwargs: Any) -> Any:
            hidden_states, q_resid = hidden_states.detach(), q_resid.detach()
            if not fused:
                return f(m, hidden_states, q_resid, position_embeddings, attention_mask, *args, **kwargs)
            return _fused_indexer(m, hidden_states, q_resid, position_embeddings, attention_mask)

        module.forward = forward
        changed += 1
    return changed


@torch.library.custom_op("sapp::mamba2_split_conv1d_scan", mutates_args=())
def _mamba_op(zxbcdt: torch.Tensor, conv_weight: torch.Tensor, conv_bias: torch.Tensor | None,
              dt_bias: torch.Tensor, a_log: torch.Tensor, d: torch.Tensor, norm_weight: torch.Tensor, groups: int,
              state: int, heads: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The fused Mamba-2 kernel's contract (mamba_ssm's mamba_split_conv1d_scan_combined with the gated RMSNorm and
    without out_proj, as Megatron's MambaMixer calls it): from the in_proj output zxbcdt (batch, seq, 2·d_in +
    2·groups·state + heads) the normalised gated output (batch, seq, d_in), the scan output before the norm and the
    norm's fp32 rstd per group. Fake kernel only."""
    raise NotImplementedError("sapp::mamba2_split_conv1d_scan runs on fake tensors only")


@_mamba_op.register_fake
def _(zxbcdt: torch.Tensor, conv_weight: torch.Tensor, conv_bias: torch.Tensor | None, dt_bias: torch.Tensor,
      a_log: torch.Tensor, d: torch.Tensor, norm_weight: torch.Tensor, groups: int, state: int, heads: int,
      head_dim: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    b, seq, _ = zxbcdt.shape
    d_in = heads * head_dim
    return (zxbcdt.new_empty(b, seq, d_in), zxbcdt.new_empty(b, seq, d_in),
            zxbcdt.new_empty(b, seq, groups, dtype=torch.float32))


@torch.library.custom_op("sapp::mamba2_split_conv1d_scan_backward", mutates_args=())
def _mamba_bwd_op(grad: torch.Tensor, zxbcdt: torch.Tensor, out_x: torch.Tensor,
                  rstd: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError("sapp::mamba2_split_conv1d_scan_backward runs on fake tensors only")


@_mamba_bwd_op.register_fake
def _(grad: torch.Tensor, zxbcdt: torch.Tensor, out_x: torch.Tensor, rstd: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(zxbcdt)


def _mamba_setup(ctx: Any, inputs: tuple, output: tuple) -> None:
    # what MambaSplitConv1dScanCombinedFn saves besides parameters: zxbcdt, the scan output and the norm's rstd
    ctx.params = inputs[1:7]
    ctx.save_for_backward(inputs[0], output[1], output[2])


def _mamba_backward(ctx: Any, grad: torch.Tensor, _g_x: Any, _g_rstd: Any) -> tuple:
    zxbcdt, out_x, rstd = ctx.saved_tensors
    grads = [None if p is None else torch.zeros_like(p) for p in ctx.params]
    return (_mamba_bwd_op(grad.contiguous(), zxbcdt, out_x, rstd), *grads, None, None, None, None)


_mamba_op.register_autograd(_mamba_backward, setup_context=_mamba_setup)
MAMBA_PARTS = ("in_proj", "conv1d", "dt_bias", "A_log", "D", "norm", "out_proj", "n_groups", "ssm_state_size",
               "num_heads", "head_dim")


def fuse_mamba_mixers(model: Any) -> int:
    """Run every Mamba-2 mixer (transformers' Mamba2Mixer pattern) as the fused kernel's contract: on a CPU
    transformers runs its unfused PyTorch scan, which saves each chunk's intermediates; training stacks run the
    fused kernel. Returns how many mixers it changed."""
    changed = 0
    for module in model.modules():
        if not all(hasattr(module, part) for part in MAMBA_PARTS):
            continue

        def forward(hidden_states: torch.Tensor, *args: Any, m: Any = module, **kwargs: Any) -> torch.Tensor:
            zxbcdt = m.in_proj(hidden_states)
            y, _x, _rstd = _mamba_op(zxbcdt, m.conv1d.weight, m.conv1d.bias, m.dt_bias, m.A_log, m.D,
                                     m.norm.weight, m.n_groups, m.ssm_state_size, m.num_heads, m.head_dim)
            return m.out_proj(y)

        module.forward = forward
        changed += 1
    return changed


def _fused_indexer(m: Any, x: torch.Tensor, qr: torch.Tensor, position_embeddings: Any,
                   mask: torch.Tensor) -> torch.Tensor:
    """transformers' indexer up to the scores (projections, key norm, RoPE on the first rope dims, head
    weights), then the fused scoring and top-k."""
    import importlib

    b, seq, _ = x.shape
    rope = m.qk_rope_head_dim
    apply = importlib.import_module(type(m).__module__).apply_rotary_pos_emb
    q = m.wq_b(qr).view(b, seq, m.n_heads, m.head_dim)
    k = m.k_norm(m.wk(x)).unsqueeze(2)
    q_rot, q_pass = torch.split(q, [rope, m.head_dim - rope], dim=-1)
    k_rot, k_pass = torch.split(k, [rope, m.head_dim - rope], dim=-1)
    q_rot, k_rot = apply(q_rot, k_rot, *position_embeddings, unsqueeze_dim=2)
    q = torch.cat([q_rot, q_pass], dim=-1)
    k = torch.cat([k_rot, k_pass], dim=-1).squeeze(2)
    weights = m.weights_proj(x).float() * (m.n_heads ** -0.5)
    _scores, indices = _indexer_op(q, k, weights, mask, min(m.index_topk, seq))
    return indices


@torch.library.custom_op("sapp::rms_norm", mutates_args=())
def _rms_op(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """A fused RMSNorm's contract (Apex/TE/Megatron): (out, fp32 rstd per row). Fake kernel only."""
    raise NotImplementedError("sapp::rms_norm runs on fake tensors only")


@_rms_op.register_fake
def _(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), x.new_empty((*x.shape[:-1], 1), dtype=torch.float32)


@torch.library.custom_op("sapp::rms_norm_backward", mutates_args=())
def _rms_bwd_op(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    raise NotImplementedError("sapp::rms_norm_backward runs on fake tensors only")


@_rms_bwd_op.register_fake
def _(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.empty_like(x), torch.empty_like(weight)


def _rms_setup(ctx: Any, inputs: tuple, output: tuple) -> None:
    x, weight, _eps = inputs
    ctx.save_for_backward(x, weight, output[1])  # the input, the weight and the statistics; not the output


def _rms_backward(ctx: Any, grad: torch.Tensor, _grad_rstd: torch.Tensor) -> tuple:
    x, weight, rstd = ctx.saved_tensors
    dx, dw = _rms_bwd_op(grad.contiguous(), x, weight, rstd)
    return dx, dw, None


_rms_op.register_autograd(_rms_backward, setup_context=_rms_setup)
LLAMA_RMS_PATTERN = "self.weight * hidden_states.to(input_dtype)"


def fuse_rms_norms(model: Any) -> list[str]:
    """Run every Llama-pattern RMSNorm as the fused kernel; returns the norm classes left as they are
    (other formulas, e.g. a (1 + weight) scale or a gated norm)."""
    import inspect

    kept: set[str] = set()
    for module in model.modules():
        cls = type(module)
        if not cls.__name__.endswith("RMSNorm"):
            continue
        try:
            source = inspect.getsource(cls.forward)
        except (OSError, TypeError):
            source = ""
        eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
        if LLAMA_RMS_PATTERN not in source or eps is None or getattr(module, "weight", None) is None:
            kept.add(cls.__name__)
            continue

        def forward(hidden_states: torch.Tensor, m: Any = module, e: float = float(eps)) -> torch.Tensor:
            return _rms_op(hidden_states, m.weight, e)[0]

        module.forward = forward
    return sorted(kept)


def register_flash() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register("sapp_causal", _flash_attention)
    AttentionInterface.register(SPARSE_FLASH, _flash_attention)
    AttentionMaskInterface.register(SPARSE_FLASH, eager_mask)  # made once per forward, outside the layers


__all__ = ["ATTENTION", "SPARSE_FLASH", "fuse_mamba_mixers", "fuse_rms_norms", "register_flash", "train_indexers"]
