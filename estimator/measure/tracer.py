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

from .kernels import ATTENTION, SPARSE_FLASH, fuse_mamba_mixers, fuse_rms_norms, register_flash, train_indexers

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

# ops that only re-view a storage: the op a saved tensor is attributed to is the last op that is not one of these
VIEW_OPS = frozenset(("detach", "alias", "view", "_unsafe_view", "t", "transpose", "expand", "unsqueeze", "squeeze",
                      "permute", "slice", "select", "split", "split_with_sizes", "chunk"))


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
        register_flash()
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
