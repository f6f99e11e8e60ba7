"""The measured activation census of one layer, named in the slot vocabulary of ``estimator/activations.py``.

Pure Python (no PyTorch): the tracer hands over one ``Saved`` per storage autograd holds; ``slot_of`` names it
after the module and op that produced it (Hugging Face module names: ``input_layernorm``, ``self_attn.q_proj``,
``mlp.experts`` …) and the projection it derives from, so the census can be compared slot by slot with the
analytic table. A storage no rule names keeps a name of its own (``x.<module>.<op>``) and is shown as measured
only — never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ATTN_TOPS = ("self_attn", "attn", "attention", "linear_attn", "mixer", "input_layernorm", "self_attention", "mamba")
FFN_NORMS = ("post_attention_layernorm", "pre_feedforward_layernorm", "ffn_norm")
QK_NORMS = ("q_norm", "k_norm", "query_layernorm", "key_layernorm")
MLA_NORMS = ("q_a_layernorm", "kv_a_layernorm")
FLASH_SUFFIXES = ("flash_attention", "efficient_attention", "cudnn_attention")
SOFTMAX_OPS = ("_softmax", "_safe_softmax", "softmax")


@dataclass(frozen=True)
class Saved:
    """One saved storage (see tracer.SavedEntry), as plain data."""

    module: str           # layer-relative producer module ("" = the layer's own code, e.g. a residual add)
    op: str               # producer op, "<input>" for the layer input, "<outside>" for a tensor from outside
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    lineage: frozenset[str] = frozenset()
    saver_modules: tuple[str, ...] = ()  # modules whose ops saved it
    saver_roles: tuple[str, ...] = ()  # how each saving op held it: "arg0" … or "out0" … of the op last run


@dataclass(frozen=True)
class CensusRow:
    slot: str
    bytes_per_token: float
    entries: tuple[Saved, ...] = field(default=())

    @property
    def shared(self) -> bool:
        return self.slot.startswith("shared.")


def slot_of(e: Saved, compute_dtype: str, routed: bool, hidden: int) -> str:
    """The analytic slot id a saved storage belongs to (see the module docstring)."""
    path = e.module
    parts = path.split(".") if path else []
    top = parts[0] if parts else ""
    leaf = parts[-1] if parts else ""
    stats = e.dtype == "float32" and bool(e.shape) and e.shape[-1] == 1
    if e.op == "<outside>":
        return "shared.rope" if len(e.shape) == 4 and e.shape[1] == 1 else f"shared.{e.op.strip('<>')}"
    if e.op == "<input>":
        return "a.norm_in"
    if not path:  # the layer's own code: the residual sum, read by the FFN norm
        return "m.norm_in"
    if "indexer" in parts:
        return _indexer_slot(e)
    if e.op.startswith("sapp.mamba2") or (top == "mamba" and leaf == "in_proj"):
        return _mamba_slot(e)
    # norms: statistics, the saved input (or its fp32 upcast), the normalised output
    if "norm" in leaf:
        if leaf in QK_NORMS:
            return "nstat.qk" if stats else "a.qknorm"
        if leaf in MLA_NORMS:
            return "nstat.attn" if stats else "mla.lat"
        half = "m" if top in FFN_NORMS or top not in ATTN_TOPS else "a"
        if stats:
            return "nstat.attn" if half == "a" else "nstat.ffn"
        if e.op == "_to_copy" and e.dtype == "float32" and compute_dtype != "float32":
            return f"{half}.norm_in"
        return f"{half}.norm_out"
    if top in ATTN_TOPS:
        if any(m.rsplit(".", 1)[-1] in QK_NORMS for m in e.saver_modules):
            return "a.qknorm"  # a projection's output saved as the input of a q/k norm (fused norm)
        return _attention_slot(e, leaf, compute_dtype)
    if top in ("mlp", "block_sparse_moe", "feed_forward", "moe"):
        return _ffn_slot(e, parts[1:], routed, hidden)
    if top == "shared_mlp":  # Granite: the dense FFN, or a shared expert beside the routed ones
        return _ffn_slot(e, ["shared_expert" if routed else "mlp", *parts[1:]], routed, hidden)
    return f"x.{path}.{e.op}"


def _attention_slot(e: Saved, leaf: str, compute_dtype: str) -> str:
    if any(s in e.op for s in FLASH_SUFFIXES):
        return "a.fa_stats" if e.dtype == "float32" else "a.out"
    if e.op in SOFTMAX_OPS:
        return "a.scores"
    if leaf == "o_proj":
        return "a.o_out"
    if leaf in ("q_a_proj", "kv_a_proj_with_mqa"):
        return "mla.lat"
    roots = e.lineage
    square = len(e.shape) >= 3 and e.shape[-1] == e.shape[-2]
    if square and len(e.shape) == 4 and e.shape[1] == 1 and not roots:
        return "a.mask"  # an additive mask materialised per layer (transformers' sdpa path)
    if square and e.op in ("_to_copy", "clone", "native_dropout"):
        return "a.scores_cast"  # the scores cast back to the compute dtype for the value matmul (eager)
    if len(roots) > 1 and roots & {"v_proj", "kv_b_proj"} and e.op in ("clone", "bmm", "_unsafe_view"):
        return "a.out"  # eager: the attention output made contiguous for the output projection (MLA: kv_b_proj)
    if roots == {"q_proj"} or roots == {"q_b_proj"}:
        return "a.q"
    if roots == {"k_proj"}:
        return "a.k"
    if roots == {"v_proj"}:
        return "a.v"
    if roots == {"kv_b_proj"} or roots == {"kv_b_proj", "kv_a_proj_with_mqa"}:
        # MLA: the key (nope part and the rotated rope part) has the query width, the value its own
        return "a.k" if e.op in ("new_empty", "cat", "empty", "add", "copy_") else "a.v"
    return f"x.attn.{leaf or 'self'}.{e.op}"


def _mamba_slot(e: Saved) -> str:
    """A Mamba-2 mixer run as the fused kernel's contract (estimator/kinds/mamba2.yaml): the in_proj output, the
    scan output, the gated norm's rstd, and the normalised output that out_proj saves."""
    if e.module.endswith("in_proj"):
        return "ssm.in"
    if e.dtype == "float32":
        return "ssm.rstd"
    # the kernel's first output (the normalised one) is what out_proj saves; its second is the scan output
    return "ssm.out_in" if "out0" in e.saver_roles else "ssm.y"


def _indexer_slot(e: Saved) -> str:
    """DeepSeek sparse attention's lightning indexer (estimator/kinds/dsa.yaml): its query (wq_b), key (wk, the
    key norm's input and statistics), head weights (weights_proj), ReLU'd scores (both) and top-k indices."""
    if e.dtype in ("int64", "int32"):
        return "dsa.topk"
    roots = e.lineage
    if roots == {"wq_b"}:
        return "dsa.q"
    if roots == {"wk"} or e.module.endswith("k_norm"):
        return "dsa.k"
    if roots == {"weights_proj"}:
        return "dsa.w"
    if {"wq_b", "wk"} <= roots:
        return "dsa.scores"
    return f"x.indexer.{e.module.rsplit('.', 1)[-1]}.{e.op}"


def _ffn_slot(e: Saved, rest: list[str], routed: bool, hidden: int) -> str:
    leaf = rest[-1] if rest else ""
    shared = bool(rest) and rest[0] in ("shared_experts", "shared_expert", "shared_mlp")
    if rest and rest[0] in ("gate", "router"):
        return "r.router"
    if rest and rest[0] == "shared_expert_gate":
        return "s.gate"
    if shared or not routed:
        prefix = "s" if shared else "m"
        if leaf in ("gate_proj", "input_linear"):  # input_linear: gate and up in one projection (one storage)
            return f"{prefix}.act_in.gate"
        if leaf == "up_proj":
            return f"{prefix}.act_in.up"
        if leaf in ("act_fn", "activation"):
            return f"{prefix}.act_out"
        if leaf in ("down_proj", "output_linear"):
            return "s.out" if shared else "m.ffn_out"
        if e.op == "mul":
            return f"{prefix}.fc2_in"
        return f"x.{prefix}.{leaf or 'self'}.{e.op}"
    if rest and rest[0] == "experts":
        if leaf == "act_fn":
            return "e.act_out"
        if e.op.endswith("grouped_mm"):
            # the up (gate and up) GEMM is g·hff_exp wide, the down GEMM returns to the hidden width
            return "e.out" if e.shape[-1] == hidden else "e.act_in"
        if e.op == "mul" and e.dtype not in ("int64", "int32", "bool"):
            return "e.fc2_in"
        if e.op == "index" and len(e.shape) == 2 and e.shape[-1] > 1:
            return "e.in"
        return "e.index"  # dispatch bookkeeping: sort permutation, token ids, per-copy routing weight
    return f"x.mlp.{'.'.join(rest) or 'self'}.{e.op}"


def census_rows(entries: list[Saved], tokens: int, compute_dtype: str, routed: bool,
                hidden: int) -> list[CensusRow]:
    """Bytes per token (per input token, routed copies included) by slot, in first-seen order."""
    groups: dict[str, list[Saved]] = {}
    for e in entries:
        groups.setdefault(slot_of(e, compute_dtype, routed, hidden), []).append(e)
    return [CensusRow(slot, sum(x.nbytes for x in es) / tokens, tuple(es)) for slot, es in groups.items()]
