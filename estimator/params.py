"""Parameter elements per layer, by class (docs/model.md#parameter-elements): ``tp`` (÷ t), ``rep`` (replicated across
TP), ``exp`` (routed experts, ÷ ep·etp). Also the matmul weights used per token (FLOPs, weight casts) and the
largest single tensor of each class (the for-loop optimizer's temporaries)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .dims import Dims
from .kinds import extra_params, has_mixer
from .kinds import generation as kinds_generation
from .model import ModelSpec, VisionSpec
from .profiles import get_profile


@dataclass(frozen=True)
class Elements:
    tp: float = 0
    rep: float = 0
    exp: float = 0
    tp_mm: float = 0       # matmul weight elements of class tp
    rep_mm: float = 0      # matmul weight elements of class rep (computed redundantly on every TP rank)
    largest_tp: float = 0  # largest tensor of each class (elements, before any division)
    largest_rep: float = 0
    largest_exp: float = 0  # one expert's largest matrix

    def __add__(self, other: Elements) -> Elements:
        return Elements(self.tp + other.tp, self.rep + other.rep, self.exp + other.exp,
                        self.tp_mm + other.tp_mm, self.rep_mm + other.rep_mm,
                        max(self.largest_tp, other.largest_tp), max(self.largest_rep, other.largest_rep),
                        max(self.largest_exp, other.largest_exp))

    @property
    def total(self) -> float:
        return self.tp + self.rep + self.exp


def attention(d: Dims) -> Elements:
    """[P-ATTN] MHA / GQA / MQA, or [P-MLA]."""
    if d.mla:
        return mla(d)
    q_w, k_w, v_w, o_w, h = d.q_w, d.k_w, d.v_w, d.o_w, d.h
    mm = h * (q_w + k_w + v_w) + o_w * h + (h * o_w if d.output_gate else 0)
    tp = mm + (q_w + k_w + v_w if d.qkv_bias else 0)
    rep = (h if d.out_bias else 0) + (2 * d.c_norm * d.dh if d.qk_norm else 0)
    return Elements(tp=tp, rep=rep, tp_mm=mm, largest_tp=h * max(q_w * (2 if d.output_gate else 1), o_w),
                    largest_rep=h if d.out_bias else 0)


def mla(d: Dims) -> Elements:
    """[P-MLA]: latent down-projections and their norms are replicated across TP (D10)."""
    a, h, dqk = d.a, d.h, d.dqk
    q_up = d.dc_q * a * dqk if d.dc_q > 0 else h * a * dqk
    kv_up = d.dc_kv * a * (d.dh + d.dv)
    out = a * d.dv * h
    tp = q_up + kv_up + out
    rep_mm = (h * d.dc_q if d.dc_q > 0 else 0) + h * (d.dc_kv + d.dhr)
    rep = rep_mm + (d.c_norm * d.dc_q if d.dc_q > 0 else 0) + d.c_norm * d.dc_kv
    return Elements(tp=tp, rep=rep, tp_mm=tp, rep_mm=rep_mm, largest_tp=max(q_up, kv_up, out),
                    largest_rep=max(h * d.dc_q, h * (d.dc_kv + d.dhr)))


def linear_attention(d: Dims) -> Elements:
    """[P-LIN] gated-delta linear attention."""
    h, k, v, n_lv = d.h, d.lin_k, d.lin_v, d.n_lv
    mm = h * (2 * k + 3 * v) + 2 * h * n_lv
    tp = mm + d.conv * (2 * k + v) + 2 * n_lv
    return Elements(tp=tp, rep=d.lin_d_v, tp_mm=mm, largest_tp=h * (2 * k + 2 * v), largest_rep=d.lin_d_v)


def dense_ffn(d: Dims) -> Elements:
    """[P-FFN]: g input branches + the down projection."""
    mm = (d.g + 1) * d.h * d.hff
    tp = mm + (d.g * d.hff if d.mlp_bias else 0)
    return Elements(tp=tp, rep=d.h if d.mlp_bias else 0, tp_mm=mm, largest_tp=d.h * d.hff,
                    largest_rep=d.h if d.mlp_bias else 0)


def moe_ffn(d: Dims) -> Elements:
    """[P-MOE]: routed experts (class exp), shared experts dense (D9), router replicated (D10)."""
    exp = d.n_exp * (d.g + 1) * d.h * d.hff_exp
    shared = (d.g + 1) * d.h * d.hff_sh
    router = d.h * d.n_exp
    rep = router + (d.n_exp if d.router_bias else 0) + (d.h if d.shared_gate else 0)
    return Elements(tp=shared, rep=rep, exp=exp, tp_mm=shared, rep_mm=router + (d.h if d.shared_gate else 0),
                    largest_tp=d.h * d.hff_sh, largest_rep=router, largest_exp=d.h * d.hff_exp)


def norms(d: Dims) -> Elements:
    """[P-NORM]: two norms per body layer."""
    return Elements(rep=2 * d.c_norm * d.h, largest_rep=d.h)


def block(d: Dims, kind: str) -> Elements:
    """One body layer of ``kind``."""
    if kind == "noop":
        return Elements()
    mixer = Elements() if not has_mixer(kind) else linear_attention(d) if kind.startswith("lin_") else attention(d)
    ffn = moe_ffn(d) if kind.endswith("moe") else dense_ffn(d)
    extra = extra_params(d, kind)  # what a kind described as data adds (estimator/kinds), by class
    return mixer + ffn + norms(d) + Elements(tp=extra["tp"], rep=extra["rep"], exp=extra["exp"],
                                             tp_mm=extra["tp_mm"], rep_mm=extra["rep_mm"])


def kept_block(kept: dict | None, d: Dims, kind: str, mtp: bool = False) -> Elements:
    """``block(d, kind)`` (``mtp_module(d, kind)`` when ``mtp``), kept in ``kept`` (None: not kept): a dict whose
    holder is keyed on everything they read — the dims, by value, and the registered layer kinds (the activation
    table's ``elements``, reuse.activation_table)."""
    if kept is None:
        return mtp_module(d, kind) if mtp else block(d, kind)
    key = (MTP_KEY, kind) if mtp else kind
    got = kept.get(key)
    if got is None:
        got = kept[key] = mtp_module(d, kind) if mtp else block(d, kind)
    return got


MTP_KEY = "mtp"  # kept_block's keys: a body kind's name, or (MTP_KEY, the module's block kind)


def trainable_part(d: Dims, kind: str, parts: frozenset[str]) -> Elements:
    """[A-FREEZE] The elements of a body layer of ``kind`` in its module groups ``parts`` (TRAINABLE_PARTS): the
    mixer (self_attention), the FFN with its router and experts (mlp), and each of the two norms."""
    out = Elements()
    if "self_attention" in parts and has_mixer(kind):
        out = out + (linear_attention(d) if kind.startswith("lin_") else attention(d))
    if "mlp" in parts:
        out = out + (moe_ffn(d) if kind.endswith("moe") else dense_ffn(d))
    for name in ("input_norm", "post_attention_norm"):
        if name in parts:
            out = out + Elements(rep=d.c_norm * d.h, largest_rep=d.h)
    return out


def linear_modules(d: Dims, kind: str) -> dict[str, tuple[int, int, str]]:
    """The linear layers of a body layer of ``kind`` as Megatron builds them (fused q/k/v and gate/up): name ->
    (in, out, placement), placement ``col`` (column-parallel: split output), ``row`` (row-parallel: split input)
    or ``rep`` (replicated across TP: MLA's latent down-projections). The router and the routed experts are not
    listed; the FFN is the dense one or the shared experts'."""
    out: dict[str, tuple[int, int, str]] = {}
    if kind == "noop":
        return out
    h = d.h
    if not has_mixer(kind):
        pass  # a kind's own mixer (estimator/kinds) is not one of Megatron's attention modules
    elif not kind.startswith("lin_"):
        if d.mla:
            if d.dc_q > 0:
                out["q_a"] = (h, d.dc_q, "rep")
                out["q_b"] = (d.dc_q, d.a * d.dqk, "col")
            else:
                out["q"] = (h, d.a * d.dqk, "col")
            out["kv_a"] = (h, d.dc_kv + d.dhr, "rep")
            out["kv_b"] = (d.dc_kv, d.a * (d.dh + d.dv), "col")
        else:
            out["qkv"] = (h, d.q_w + d.k_w + d.v_w, "col")
        out["o"] = (d.o_w, h, "row")
        if d.output_gate:
            out["gate_attn"] = (h, d.o_w, "col")
    else:
        lin = linear_attention(d)
        out["lin_in"] = (h, round(lin.tp_mm / h), "col")  # the gated-delta projections, as one column-parallel
    width = d.hff_sh if kind.endswith("moe") else d.hff
    if width:
        out["fc1"] = (h, d.g * width, "col")
        out["down"] = (width, h, "row")
    return out


def lora_modules(d: Dims, kind: str) -> dict[str, tuple[int, int, str]]:
    """The linear layers LoRA can adapt (``linear_modules`` plus the separate projections Hugging Face models
    have: q, k, v, gate, up). Routed experts are not adaptable here (frozen)."""
    out = {k: v for k, v in linear_modules(d, kind).items() if k not in ("gate_attn", "lin_in")}
    if "qkv" in out:
        h = d.h
        out.update(q=(h, d.q_w, "col"), k=(h, d.k_w, "col"), v=(h, d.v_w, "col"))
    if "fc1" in out:
        h, width = d.h, out["down"][0]
        if d.g > 1:
            out["gate"] = (h, width, "col")
        out["up"] = (h, width, "col")
    return out


def fp8_linear(d: Dims, kind: str) -> Elements:
    """[P-FP8] The weight elements of a layer's FP8 linears (every linear of ``linear_modules``: the router and
    the head stay in bf16), by class; routed experts are the block's ``exp`` (FP8 when fp8_experts)."""
    tp = rep = 0
    for n_in, n_out, placement in linear_modules(d, kind).values():
        if placement == "rep":
            rep += n_in * n_out
        else:
            tp += n_in * n_out
    return Elements(tp=tp, rep=rep, tp_mm=tp, rep_mm=rep)


def lora_adapters(d: Dims, kind: str, targets: frozenset[str], rank: int) -> Elements:
    """[P-LORA] Adapter elements r·(in + out) per adapted module (Hu et al. 2021): a column-parallel module's
    A (in×r) is replicated and its B (r×out) split over TP; a row-parallel module's A is split and its B replicated
    (PEFT's LoraParallelLinear); MLA's replicated down-projections keep both whole."""
    tp = rep = 0
    largest_tp = largest_rep = 0
    for name, (n_in, n_out, placement) in lora_modules(d, kind).items():
        if name not in targets:
            continue
        a, b = n_in * rank, rank * n_out
        if placement == "col":
            rep, tp = rep + a, tp + b
            largest_rep, largest_tp = max(largest_rep, a), max(largest_tp, b)
        elif placement == "row":
            tp, rep = tp + a, rep + b
            largest_tp, largest_rep = max(largest_tp, a), max(largest_rep, b)
        else:
            rep += a + b
            largest_rep = max(largest_rep, a, b)
    return Elements(tp=tp, rep=rep, tp_mm=tp, rep_mm=rep, largest_tp=largest_tp, largest_rep=largest_rep)


def mtp_module(d: Dims, kind: str) -> Elements:
    """[P-MTP]: a body layer plus the eh projection and three norms (embedding and head are shared)."""
    extra = Elements(tp=2 * d.h * d.h, rep=3 * d.c_norm * d.h, tp_mm=2 * d.h * d.h, largest_tp=2 * d.h * d.h)
    return block(d, kind) + extra


def position_table(d: Dims) -> float:
    """[P-POS] learned absolute position embeddings n_pos·h, beside the word embedding on the first stage only
    (the last stage's copy of a tied table is the word embedding's). Replicated across TP: Megatron builds
    them as a serial ``torch.nn.Embedding(max_sequence_length, hidden)``, not a vocabulary-parallel one."""
    return d.n_pos * d.h


def final_norm(d: Dims) -> float:
    """[P-FNORM]."""
    return d.c_norm * d.h


def vision_layer(v: VisionSpec) -> Elements:
    """[P-VIT] one vision layer: attention + FFN with the vision dims and `vit` biases, two norms."""
    prof = get_profile("vit")
    c_norm = 2 if v.norm == "layer" else 1
    h = v.hidden_size
    a = v.num_attention_heads
    dh = v.head_dim or h // a
    n_kv = v.num_kv_heads or a
    q_w, k_w, v_w, o_w = a * dh, n_kv * dh, n_kv * dh, a * dh
    attn_mm = h * (q_w + k_w + v_w) + o_w * h
    g = 2 if v.gated_ffn else 1
    ffn_mm = (g + 1) * h * v.ffn_hidden_size
    tp = attn_mm + ffn_mm + (q_w + k_w + v_w if prof.qkv_bias else 0) + (g * v.ffn_hidden_size if prof.mlp_bias else 0)
    rep = (h if prof.out_bias else 0) + (h if prof.mlp_bias else 0) + 2 * c_norm * h
    return Elements(tp=tp, rep=rep, tp_mm=attn_mm + ffn_mm, largest_tp=h * max(q_w, v.ffn_hidden_size))


def vision_extras(v: VisionSpec, lm_hidden: int) -> Elements:
    """Patch embedding C·P²·T_p·h_v and the patch merger (LayerNorm + 2-layer MLP), replicated."""
    h = v.hidden_size
    patch = v.in_channels * v.patch_size ** 2 * v.temporal_patch_size * h
    merged = h * v.spatial_merge_size ** 2
    out = v.out_hidden_size or lm_hidden
    c_norm = 2 if v.norm == "layer" else 1
    merger = c_norm * h + merged * merged + merged + merged * out + out
    return Elements(rep=patch + merger, rep_mm=patch + merged * merged + merged * out,
                    largest_rep=max(patch, merged * merged, merged * out))


@dataclass(frozen=True)
class ParameterCounts:
    total: int    # body + embedding + output (a tied table once); MTP excluded
    mtp: int
    active: int   # n_chosen routed + shared experts per MoE layer; embedding and output included
    non_embedding: int


def parameter_counts(model: ModelSpec, d: Dims) -> ParameterCounts:
    """Parameter counts of the model (unpadded vocabulary), docs/model.md#inputs-and-outputs and V7."""
    return _parameter_counts(model, d, kinds_generation())


@lru_cache(maxsize=256)
def _parameter_counts(model: ModelSpec, d: Dims, _kinds: int) -> ParameterCounts:
    """``_kinds``: the layer-kind registry's generation, so a kind folder registered later is counted."""
    emb = d.v * d.h + position_table(d)
    head = 0 if d.tie else d.v * d.h
    body_total = 0.0
    body_active = 0.0
    for kind in model.body_kinds():
        el = block(d, kind)
        body_total += el.total
        if kind.endswith("moe"):
            body_active += el.total - el.exp + el.exp * d.n_chosen / max(1, d.n_exp)
        else:
            body_active += el.total
    mtp = sum(mtp_module(d, k).total for k in model.mtp_kinds())
    vision = 0.0
    if model.vision is not None:
        vision = model.vision.num_layers * vision_layer(model.vision).total + \
            vision_extras(model.vision, d.h).total
    fnorm = final_norm(d)
    total = body_total + emb + head + fnorm + vision
    active = body_active + emb + head + fnorm + vision
    return ParameterCounts(total=round(total), mtp=round(mtp), active=round(active),
                           non_embedding=round(body_total + fnorm + vision))
