"""The PyTorch side of ``sapp measure``: build a Hugging Face causal LM on fake tensors and record, for one
layer, every tensor autograd saves for backward and the live bytes over the forward and the backward.

Imported only by ``sapp measure`` (PyTorch and transformers are the optional ``measure`` extra). Nothing here
allocates real memory: every parameter and activation is a ``FakeTensor`` (shape, dtype and device only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

# ops that only re-view a storage: the op a saved tensor is attributed to is the last op that is not one of these
VIEW_OPS = frozenset(("detach", "alias", "view", "_unsafe_view", "t", "transpose", "expand", "unsqueeze", "squeeze",
                      "permute", "slice", "select", "split", "split_with_sizes", "chunk"))
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


def _register_flash() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register("sapp_causal", _flash_attention)
    AttentionInterface.register(SPARSE_FLASH, _flash_attention)
    AttentionMaskInterface.register(SPARSE_FLASH, eager_mask)  # made once per forward, outside the layers


@dataclass
class SavedEntry:
    """One storage autograd holds for backward (counted once however many ops save it)."""

    producer_module: str      # layer-relative module path of the op that allocated it ("" = the layer itself)
    producer_op: str          # aten op that allocated it ("<input>" for the layer input)
    shape: tuple[int, ...]
    dtype: str
    nbytes: int               # the whole storage
    savers: list[tuple[str, str, str]] = field(default_factory=list)  # (module, op, "arg0" | "out1" | "?")
    lineage: frozenset[str] = frozenset()  # projection modules whose outputs it derives from


@dataclass
class LayerTrace:
    index: int
    saved: list[SavedEntry]
    fwd_peak: int          # live bytes (activations, no parameters or their gradients), maximum over the forward
    fwd_end: int           # live bytes when the forward returns (input + saved + output)
    bwd_start: int         # live bytes when the backward starts (fwd_end + the output gradient)
    bwd_peak: int          # maximum over the backward, parameter gradients excluded
    param_elements: int


class _Recorder(TorchDispatchMode):
    """Records the producer of every storage, the live storages and the peak after each op."""

    def __init__(self, params: set[int]) -> None:
        super().__init__()
        self.params = params
        self.module_stack: list[str] = [""]
        self.lineage_roots: dict[str, str] = {}
        self.producers: dict[int, tuple[StorageWeakRef, str, str, frozenset[str]]] = {}
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.grad_storages: set[int] = set()
        self.peak = 0
        self.last: tuple[str, str, tuple, tuple] = ("", "", (), ())

    def track(self, t: torch.Tensor, module: str, op: str, lineage: frozenset[str]) -> None:
        st = t.untyped_storage()
        key = st._cdata
        old = self.producers.get(key)
        if old is None or old[0].expired():
            self.producers[key] = (StorageWeakRef(st), module, op, lineage)
        if key not in self.params and (key not in self.live or self.live[key][0].expired()):
            self.live[key] = (StorageWeakRef(st), st.nbytes())

    def lineage_of(self, t: torch.Tensor) -> frozenset[str]:
        got = self.producers.get(t.untyped_storage()._cdata)
        return got[3] if got is not None and not got[0].expired() else frozenset()

    def live_bytes(self) -> int:
        total = 0
        for key, (ref, nbytes) in list(self.live.items()):
            if ref.expired():
                del self.live[key]
            elif key not in self.grad_storages:
                total += nbytes
        return total

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__ if func.namespace == "aten" else f"{func.namespace}.{func.__name__}"
        module = self.module_stack[-1]
        flat_in = [a for a in _flatten(args) if isinstance(a, torch.Tensor)]
        flat_out = [o for o in _flatten(out) if isinstance(o, torch.Tensor)]
        root = self.lineage_roots.get(module)
        if root is not None:
            lineage = frozenset((root,))
        else:
            lineage = frozenset()
            for a in flat_in:
                if a.untyped_storage()._cdata not in self.params:
                    lineage |= self.lineage_of(a)
        for o in flat_out:
            self.track(o, module, name, lineage)
        if func.namespace != "prim" and name not in VIEW_OPS:
            self.last = (module, name, tuple(flat_in), tuple(flat_out))
        self.peak = max(self.peak, self.live_bytes())
        return out


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        out: list[Any] = []
        for item in x:
            out.extend(_flatten(item))
        return out
    return [x]


def build_model(config_data: dict[str, Any], dtype: str, attention: str, num_layers: int,
                fused_norms: bool = True) -> tuple[Any, Any, list[str]]:
    """The model on fake tensors: (fake mode, model, norm classes not fused) with ``num_layers`` body layers and
    dropout as configured."""
    from transformers import AutoConfig

    data = dict(config_data)
    model_type = data.pop("model_type", None)
    if not model_type:
        raise ValueError("config.json has no model_type; transformers cannot tell which model to build")
    data.pop("auto_map", None)  # never run a model's own code
    config = AutoConfig.for_model(model_type, **data)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    text.num_hidden_layers = num_layers
    for key in ("layer_types", "mlp_only_layers"):
        value = getattr(text, key, None)
        if isinstance(value, list) and key == "layer_types":
            text.layer_types = value[:num_layers]
    if hasattr(text, "num_nextn_predict_layers"):
        text.num_nextn_predict_layers = 0
    sparse = bool(getattr(text, "index_topk", 0))  # DeepSeek sparse attention: the indexer needs a mask
    if attention == "flash":
        _register_flash()
    implementation = SPARSE_FLASH if attention == "flash" and sparse else ATTENTION[attention]
    kwargs: dict[str, Any] = {"attn_implementation": implementation, "dtype": DTYPES[dtype]}
    model_class = _model_class(config)
    if model_class._can_set_experts_implementation():
        # routed experts as one grouped GEMM over the routed token copies (Megatron's grouped GEMM, torchtitan's
        # grouped_mm): static shapes, so fake tensors need no routing values
        kwargs["experts_implementation"] = "grouped_mm"
    mode = FakeTensorMode()
    with mode:
        model = model_class._from_config(config, **kwargs)
    model.train()
    # the census is the no-recompute one (transformers 5 renamed the switch)
    (getattr(model, "activation_checkpointing_disable", None) or model.gradient_checkpointing_disable)()
    train_indexers(model, fused=attention == "flash")
    fuse_mamba_mixers(model)
    return mode, model, fuse_rms_norms(model) if fused_norms else []


def _model_class(config: Any) -> Any:
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.auto_factory import _get_model_class

    mapping = AutoModelForCausalLM._model_mapping
    if type(config) not in mapping:
        raise ValueError(f"transformers has no causal-LM class for model_type {config.model_type!r}")
    return _get_model_class(config, mapping)


def decoder(model: Any) -> Any:
    """The module holding ``layers``, ``rotary_emb`` and ``norm``."""
    for name in ("model", "language_model", "transformer"):
        inner = getattr(model, name, None)
        if inner is not None and hasattr(inner, "layers"):
            return inner
        if inner is not None and hasattr(inner, "language_model"):
            return inner.language_model
    raise ValueError(f"{type(model).__name__}: no decoder with .layers found")


# layer-relative projection modules whose outputs root a lineage (q, k, v and the MLA latents)
LINEAGE_ROOTS = ("q_proj", "k_proj", "v_proj", "q_b_proj", "kv_b_proj", "kv_a_proj_with_mqa", "q_a_proj",
                 "in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a",
                 "wq_b", "wk", "weights_proj")


def trace_layers(mode: FakeTensorMode, model: Any, indices: list[int], batch: int, seq: int,
                 dtype: str) -> dict[int, LayerTrace]:
    """One forward and backward of the decoder on fake input embeddings of (batch, seq, hidden); the decoder
    builds its own masks and position embeddings, as in training. Records the saved tensors of each layer in
    ``indices`` and the live bytes while that layer runs forward and backward."""
    inner = decoder(model)
    params = {p.untyped_storage()._cdata for p in model.parameters()}
    params |= {b.untyped_storage()._cdata for b in model.buffers()}
    rec = _Recorder(params)
    handles: list[Any] = []
    for name, module in inner.named_modules():
        def pre(_m: Any, _a: Any, n: str = name) -> None:
            rec.module_stack.append(n)

        def post(_m: Any, _a: Any, _o: Any) -> None:
            rec.module_stack.pop()

        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
        leaf = name.rsplit(".", 1)[-1]
        if leaf in LINEAGE_ROOTS:
            rec.lineage_roots[name] = leaf
    for p in inner.parameters():
        def accumulated(param: torch.Tensor) -> None:
            rec.grad_storages.add(param.grad.untyped_storage()._cdata)

        handles.append(p.register_post_accumulate_grad_hook(accumulated))
    saved: dict[int, dict[int, SavedEntry]] = {i: {} for i in indices}
    refs: dict[int, StorageWeakRef] = {}
    windows: dict[int, dict[str, int]] = {i: {} for i in indices}

    def current_layer() -> tuple[int | None, str]:
        path = rec.module_stack[-1]
        parts = path.split(".")
        if len(parts) >= 2 and parts[0] == "layers" and parts[1].isdigit() and int(parts[1]) in saved:
            return int(parts[1]), ".".join(parts[2:])
        return None, ""

    def pack(t: torch.Tensor) -> torch.Tensor:
        index, _ = current_layer()
        st = t.untyped_storage()
        key = st._cdata
        if index is None or key in params:
            return t
        module, op, args, outs = rec.last
        role = "?"
        for i, a in enumerate(args):
            if a.untyped_storage()._cdata == key:
                role = f"arg{i}"
                break
        else:
            for i, o in enumerate(outs):
                if o.untyped_storage()._cdata == key:
                    role = f"out{i}"
                    break
        entry = saved[index].get(key)
        if entry is None or refs[key].expired():
            got = rec.producers.get(key)
            if got is not None and not got[0].expired():
                _, p_module, p_op, lineage = got
            else:
                p_module, p_op, lineage = "", "<outside>", frozenset()
            own = f"layers.{index}"
            if p_module == own or p_module.startswith(own + "."):
                p_module = p_module[len(own) + 1:]
            elif key == windows[index].get("input_key"):
                p_module, p_op = "", "<input>"
            else:
                p_module, p_op = "", "<outside>"  # made before the layer (rotary tables, masks): shared
            entry = SavedEntry(p_module, p_op, tuple(t.shape), str(t.dtype).replace("torch.", ""), st.nbytes(),
                               lineage=lineage)
            saved[index][key] = entry
            refs[key] = StorageWeakRef(st)
        saver = (_relative(module, index), op, role)
        if saver not in entry.savers:
            entry.savers.append(saver)
        return t

    layers = inner.layers
    for index in indices:
        def fwd_pre(_m: Any, args: Any, i: int = index) -> None:
            if args and isinstance(args[0], torch.Tensor):
                windows[i]["input_key"] = args[0].untyped_storage()._cdata
            windows[i]["fwd_start"] = rec.live_bytes()
            rec.peak = windows[i]["fwd_start"]

        def fwd_post(_m: Any, _a: Any, _out: Any, i: int = index) -> None:
            windows[i]["fwd_peak"] = rec.peak
            windows[i]["fwd_end"] = rec.live_bytes()

        def bwd_pre(_m: Any, _g: Any, i: int = index) -> None:
            windows[i]["bwd_start"] = rec.live_bytes()
            rec.peak = windows[i]["bwd_start"]

        def bwd_post(_m: Any, _gi: Any, _go: Any, i: int = index) -> None:
            windows[i]["bwd_peak"] = rec.peak

        handles.append(layers[index].register_forward_pre_hook(fwd_pre))
        handles.append(layers[index].register_forward_hook(fwd_post))
        handles.append(layers[index].register_full_backward_pre_hook(bwd_pre))
        handles.append(layers[index].register_full_backward_hook(bwd_post))

    with mode:
        hidden = _text_config(model).hidden_size
        x = torch.randn(batch, seq, hidden, dtype=DTYPES[dtype], requires_grad=True)
        with rec, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            rec.track(x, "", "<input>", frozenset())
            out = inner(inputs_embeds=x, use_cache=False)
            y = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
            y.backward(torch.ones_like(y))
    for h in handles:
        h.remove()
    traces = {}
    for index in indices:
        w = windows[index]
        traces[index] = LayerTrace(index, list(saved[index].values()), w["fwd_peak"], w["fwd_end"], w["bwd_start"],
                                   w["bwd_peak"], sum(p.numel() for p in layers[index].parameters()))
    return traces


def _relative(module: str, index: int) -> str:
    own = f"layers.{index}"
    return module[len(own) + 1:] if module.startswith(own + ".") else ("" if module == own else module)


def _text_config(model: Any) -> Any:
    return model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
