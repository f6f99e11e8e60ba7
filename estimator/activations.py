"""Stored activations per layer (docs/model.md#activations): the slot table, the selective-recompute rules, full
recompute, and the combination with the parallel degrees [A-LAYER].

A slot's bytes are per token (per routed token for EXP classes, per vocabulary entry for V). Class sums
depend only on the model, widths and flags (scalars); ``combine`` brings in the degrees, which may be numpy
arrays, so the search prices with the same code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from .arr import Num
from .kinds import apply_slots, base_of, has_mixer
from .resolve import Dims, Flags, Par, Widths

# Division classes (docs/model.md#division-classes). GSP: a norm output that is saved all-gathered (REP) when the gather
# switch is kept under SP, else sequence-sharded (SP). EXPT: per routed token and ÷ etp.
CLASSES = ("sp", "gsp", "tp", "rep", "v", "exp", "expt")


@dataclass(frozen=True)
class SlotDef:
    id: str
    bytes: float
    cls: str
    switches: frozenset[str] = frozenset()  # the slot is recomputed when any of these switches is 0
    matmul_out: int = 0  # torchtitan_op: 1-based index of the matmul whose output this slot is (0: none)
    op_only: bool = False  # a matmul output that only the torchtitan_op policy saves (otherwise freed)


@dataclass(frozen=True)
class ClassSums:
    sp: float = 0.0
    tp: float = 0.0
    rep: float = 0.0
    v: float = 0.0
    exp: float = 0.0
    expt: float = 0.0
    cast: bool = False  # weight casts kept (D7)

    def __add__(self, o: ClassSums) -> ClassSums:
        return ClassSums(self.sp + o.sp, self.tp + o.tp, self.rep + o.rep, self.v + o.v, self.exp + o.exp,
                         self.expt + o.expt, self.cast or o.cast)

    def __sub__(self, o: ClassSums) -> ClassSums:
        return ClassSums(self.sp - o.sp, self.tp - o.tp, self.rep - o.rep, self.v - o.v, self.exp - o.exp,
                         self.expt - o.expt, self.cast and not o.cast)


ZERO = ClassSums()


def _s(switch: str | tuple[str, ...] | None) -> frozenset[str]:
    if switch is None:
        return frozenset()
    return frozenset((switch,) if isinstance(switch, str) else switch)


# ------------------------------------------------------------------------------------------ slot table
def eager_rms(d: Dims, w: Widths, f: Flags) -> bool:
    """[A-NORM.eager] transformers' eager RMSNorm at a half-precision compute width: ``hidden_states.to(float32)``
    is what pow and the normalising multiply save (4·h, the input itself is not saved), and ``weight * x.to(
    input_dtype)`` saves the normalised copy for the weight's gradient (β_c·h) beside the output the linears keep."""
    return f.eager_norm and d.c_norm == 1 and w.c < 4


def norm_slots(half: str, d: Dims, w: Widths, f: Flags) -> list[SlotDef]:
    """A pre-norm's saved input and output (``half``: a | m), plus [A-NORM.eager]'s pre-weight copy."""
    h, bc = d.h, w.c
    if not eager_rms(d, w, f):
        return [SlotDef(f"{half}.norm_in", w.r * h, "sp"), SlotDef(f"{half}.norm_out", bc * h, "gsp", _s("norm_out"))]
    return [SlotDef(f"{half}.norm_in", 4 * h, "sp"), SlotDef(f"{half}.norm_hat", bc * h, "gsp", _s("norm_out")),
            SlotDef(f"{half}.norm_out", bc * h, "gsp", _s("norm_out"))]


def attention_slots(d: Dims, w: Widths, f: Flags, s: float, linear: bool) -> list[SlotDef]:
    """Attention half of a body layer (docs/model.md#slot-table). ``s`` is the key length (the full sequence)."""
    h, bc = d.h, w.c
    out = norm_slots("a", d, w, f)
    if linear:
        state = bc * (4 * d.lin_k + 4 * d.lin_v + 2 * d.n_lv) + 4 * d.n_lv * d.lin_d_k * d.lin_d_v / 64
        out.append(SlotDef("lin.state", state, "tp", _s("qk_v")))
        out.append(SlotDef("a.out", bc * d.lin_v, "tp"))
        if f.norm_stats:
            out.append(SlotDef("nstat.attn", 4 * d.c_stat, "sp", _s("norm_out")))
        return out
    up = "mla_up" if d.mla else "qk_v"
    k_w = d.a * d.dqk if f.kv_repeat else d.k_w
    v_w = d.a * d.dv if f.kv_repeat else d.v_w
    if d.mla:
        # torchtitan_op numbering (forward matmul order): [wq_a,] wq_b | wq, wkv_a, wkv_b, wo
        mm_q, mm_kv_b = (2, 4) if d.dc_q > 0 else (1, 3)
        out.append(SlotDef("a.q", bc * d.q_w, "tp", _s(up), mm_q))
        out.append(SlotDef("a.k", bc * k_w, "tp", _s(up), mm_kv_b))
        out.append(SlotDef("a.v", bc * v_w, "tp", _s(up), mm_kv_b))
    else:
        out.append(SlotDef("a.q", bc * d.q_w, "tp", _s(up), 1))
        out.append(SlotDef("a.k", bc * k_w, "tp", _s(up), 2))
        out.append(SlotDef("a.v", bc * v_w, "tp", _s(up), 3))
    if d.qk_norm:
        out.append(SlotDef("a.qknorm", w.n * (d.a + d.n_kv) * d.dh, "tp", _s("norm_out")))
    if f.flash_attention:
        out.append(SlotDef("a.fa_stats", 4 * d.a, "tp", _s("core")))
    else:
        dropout = d.attn_dropout
        out.append(SlotDef("a.scores", w.sm * d.a * s, "tp", _s("core")))
        if w.sm != bc and not dropout:
            out.append(SlotDef("a.scores_cast", bc * d.a * s, "tp", _s(("core", "head_cast"))))
        if dropout:
            out.append(SlotDef("a.scores_drop", (w.dm + bc) * d.a * s, "tp", _s(("core", "dropout"))))
    out.append(SlotDef("a.out", bc * d.o_w, "tp"))
    if d.output_gate:
        out.append(SlotDef("a.gate", bc * d.o_w, "tp"))
    if d.hidden_dropout:
        out.append(SlotDef("a.drop", w.dm * h, "sp", _s("dropout")))
    if d.mla:
        lat = d.dc_q + d.dc_kv
        out.append(SlotDef("mla.lat", w.n * lat + bc * lat, "sp"))
        out.append(SlotDef("mla.rope", bc * d.dhr, "rep"))
        # outputs of the latent down-projections (wq_a, wkv_a), saved only by the torchtitan_op policy
        if d.dc_q > 0:
            out.append(SlotDef("a.q_a", bc * d.dc_q, "rep", frozenset(), 1, op_only=True))
        out.append(SlotDef("a.kv_a", bc * (d.dc_kv + d.dhr), "rep", frozenset(), 3 if d.dc_q > 0 else 2,
                           op_only=True))
    out.append(SlotDef("a.o_out", bc * h, "rep", frozenset(), 5 if d.mla and d.dc_q > 0 else 4, op_only=True))
    if f.norm_stats:
        latents = ((1 if d.dc_q > 0 else 0) + 1) if d.mla else 0
        stats = 4 * d.c_stat * (1 + latents)
        out.append(SlotDef("nstat.attn", stats, "sp", _s("norm_out")))
        if d.qk_norm:
            out.append(SlotDef("nstat.qk", 4 * d.c_stat * (d.a + d.n_kv), "tp", _s("norm_out")))
    return out


def ffn_slots(d: Dims, w: Widths, f: Flags, moe: bool, mm_base: int) -> list[SlotDef]:
    """FFN half (docs/model.md#slot-table): dense FFN, or router + shared experts + routed experts."""
    h, bc = d.h, w.c
    out = norm_slots("m", d, w, f)
    if not moe:
        # torchtitan order: w1 (gate), w3 (up), w2 (down); act_in holds both branch outputs
        # the mlp switch: Megatron's --recompute-modules mlp checkpoints the MLP on its (kept) norm output
        out.append(SlotDef("m.act_in.gate", bc * d.hff, "tp", _s("mlp"), mm_base + 1))
        if d.g > 1:
            out.append(SlotDef("m.act_in.up", bc * (d.g - 1) * d.hff, "tp", _s("mlp"), mm_base + 2))
        out.append(SlotDef("m.fc2_in", bc * d.hff, "tp", _s(("act", "mlp"))))
        if d.g > 1 and not f.fused_act:
            out.append(SlotDef("m.act_out", bc * d.hff, "tp", _s(("act", "mlp"))))
        out.append(SlotDef("m.ffn_out", bc * h, "rep", frozenset(), mm_base + d.g + 1, op_only=True))
    else:
        # the moe switch: Megatron's --recompute-modules moe checkpoints the whole MoE layer (router, shared and
        # routed experts, dispatch) on its (kept) norm output; shared_experts checkpoints the shared experts only
        out.append(SlotDef("r.router", d.router_bytes * 2 * d.n_exp + 8 * d.n_chosen, "sp", _s("moe"),
                           mm_base + 1))
        if d.hff_sh:
            shared = ("moe", "shared_experts")
            out.append(SlotDef("s.act_in.gate", bc * d.hff_sh, "tp", _s(shared), mm_base + 2))
            if d.g > 1:
                out.append(SlotDef("s.act_in.up", bc * (d.g - 1) * d.hff_sh, "tp", _s(shared), mm_base + 3))
            out.append(SlotDef("s.fc2_in", bc * d.hff_sh, "tp", _s(("act", *shared))))
            if d.g > 1 and not f.fused_act:
                out.append(SlotDef("s.act_out", bc * d.hff_sh, "tp", _s(("act", *shared))))
            out.append(SlotDef("s.out", bc * h, "rep", frozenset(), mm_base + d.g + 2, op_only=True))
        out.append(SlotDef("e.in", bc * h, "exp", _s("moe")))
        out.append(SlotDef("e.out", bc * h, "exp", _s("moe")))
        out.append(SlotDef("e.act_in", bc * d.g * d.hff_exp, "expt", _s("moe")))
        out.append(SlotDef("e.fc2_in", bc * d.hff_exp, "expt", _s(("moe_act", "moe"))))
        if d.g > 1 and not f.fused_act_experts:
            out.append(SlotDef("e.act_out", bc * d.hff_exp, "expt", _s(("moe_act", "moe"))))
    if d.hidden_dropout:
        out.append(SlotDef("m.drop", w.dm * h, "sp", _s("dropout")))
    if f.norm_stats:
        out.append(SlotDef("nstat.ffn", 4 * d.c_stat, "sp", _s("norm_out")))
    return out


# what a layer without its base's mixer (estimator/kinds ``without: [mixer]``) keeps of the attention half
MIXER_INPUT = ("a.norm_in", "a.norm_out", "nstat.attn", "a.drop")


def block_slots(d: Dims, w: Widths, f: Flags, s: float, kind: str, mixer: bool = True) -> tuple[SlotDef, ...]:
    if kind == "noop":
        return ()
    linear = kind.startswith("lin_")
    attn = attention_slots(d, w, f, s, linear)
    n_attn_mm = 0 if linear else (5 if d.mla and d.dc_q > 0 else 4)
    if not mixer:
        attn, n_attn_mm = [slot for slot in attn if slot.id in MIXER_INPUT], 0
    return (*attn, *ffn_slots(d, w, f, kind.endswith("moe"), n_attn_mm))


def head_slots(d: Dims, w: Widths, f: Flags) -> tuple[SlotDef, ...]:
    """Output: final-norm input, head input (REP with DTensor SP: the column-parallel head gathers it),
    and the loss' saved softmax (per vocabulary entry, class V)."""
    fusion = f.feat.loss_fusion
    eager = eager_rms(d, w, f)
    out = [SlotDef("o.norm_in", (4 if eager else w.r) * d.h, "sp"),
           SlotDef("o.head_in", w.c * d.h, "rep" if f.dtensor_sp else "sp")]
    if eager:
        out.append(SlotDef("o.norm_hat", w.c * d.h, "sp"))
    if fusion in ("none", "megatron_fused"):  # Megatron's fused loss saves the unfused one's fp32 softmax
        out.append(SlotDef("o.loss", w.l, "v"))
    elif fusion == "fused":  # [A-LOSS.fused] the logits at β_c and a fp32 log-sum-exp per token; no fp32 copy
        out += [SlotDef("o.loss", w.c, "v"), SlotDef("o.lse", 4.0, "rep")]
    else:  # [A-LOSS.chunked] the logits are never materialised: the log-sum-exp per token is all that is kept
        out.append(SlotDef("o.lse", 4.0, "rep"))
    if f.norm_stats:
        out.append(SlotDef("nstat.o", 4 * d.c_stat, "sp"))
    return tuple(out)


def embedding_slots(d: Dims, w: Widths) -> tuple[SlotDef, ...]:
    out = [SlotDef("emb.ids", 8.0, "rep")]
    if d.n_pos:  # [A-POS] the position embedding's backward keeps its int64 position ids
        out.append(SlotDef("emb.pos_ids", 8.0, "rep"))
    if d.emb_dropout:
        out.append(SlotDef("emb.drop", w.dm * d.h, "sp"))
    return tuple(out)


def mtp_extra_slots(d: Dims, w: Widths, f: Flags) -> tuple[SlotDef, ...]:
    """mtp.in: hnorm, enorm and eh_proj inputs; with statistics for the two extra norms."""
    out = [SlotDef("mtp.in", w.r * d.h + 3 * w.c * d.h, "sp")]
    if f.norm_stats:
        out.append(SlotDef("nstat.mtp", 2 * 4 * d.c_stat, "sp"))
    return tuple(out)


# ------------------------------------------------------------------------------------------ offload
def offload_group(slot_id: str) -> str:
    """The module group (strategy.OFFLOAD_GROUPS) that saves a slot: MindSpeed's --swap-modules names
    (input_norm, self_attention, post_attention_norm) and the FFN (mlp), or '' for slots outside a layer."""
    if slot_id in ("a.norm_in", "a.norm_hat", "nstat.attn"):
        return "input_norm"
    if slot_id in ("m.norm_in", "m.norm_hat", "nstat.ffn"):
        return "post_attention_norm"
    if slot_id.startswith(("a.", "mla.", "lin.", "nstat.qk")) or slot_id.startswith(("lora.q", "lora.k", "lora.v",
                                                                                  "lora.o")):
        return "self_attention"
    if slot_id.startswith(("m.", "s.", "e.", "r.", "lora.")):
        return "mlp"
    return ""


# MindSpeed --moe-zero-memory level0 (mindspeed/core/transformer/moe/...: ``dispached_input.untyped_storage()
# .resize_(0)``; the grouped MLP's activation output freed by ``is_recompute_activation``): the experts' dispatched
# input and activation output, rebuilt in the backward (a second dispatch all-to-all, the activation function)
ZERO_MEMORY_SLOTS = frozenset({"e.in", "e.fc2_in", "e.act_out"})
# level1 (grouped_mlp_with_comp_and_comm_overlap_all2all: ``mm1_out.untyped_storage().resize_(0)``, the shared
# experts' fc1 and activation outputs freed by moe_layer_overlap_all2all) also frees the experts' and shared
# experts' fc1 outputs (the activation inputs), rebuilt with a second fc1 matmul in the backward
ZERO_MEMORY_LEVEL1_SLOTS = ZERO_MEMORY_SLOTS | frozenset({"e.act_in", "s.act_in.gate", "s.act_in.up", "s.fc2_in",
                                                          "s.act_out"})
ZERO_MEMORY_LEVELS = {"level0": ZERO_MEMORY_SLOTS, "level1": ZERO_MEMORY_LEVEL1_SLOTS}
# MindSpeed-LLM --mla-zero-memory (tasks/models/transformer/multi_latent_attention.py): the MLA attention runs under
# CheckpointWithoutOutput from its input (the kept norm output) and its output, linear_proj's input, is discarded
# after linear_proj; both are recomputed when linear_proj's output gradient arrives. Freed: what the attention saves
# between its input and linear_proj (latents, q/k/v, rope, flash statistics or scores) and linear_proj's input;
# kept: the norms, the residual dropout mask, the norm statistics slot (latent statistics included)
MLA_ZERO_MEMORY_SLOTS = frozenset({"a.q", "a.k", "a.v", "a.qknorm", "nstat.qk", "a.fa_stats", "a.scores",
                                   "a.scores_cast", "a.scores_drop", "a.out", "a.gate", "mla.lat", "mla.rope",
                                   "a.q_a", "a.kv_a"})


# ------------------------------------------------------------------------------------------ compile
# saved tensors a compiled layer recomputes: torch.compile's min-cut partitioner keeps the inputs of each fused
# pointwise region and recomputes its outputs in the backward — the RMSNorm outputs (from the saved norm input and
# its fp32 statistics) and the SwiGLU product and activation (from the saved gate and up projections)
COMPILE_RECOMPUTED = frozenset({"a.norm_out", "m.norm_out", "a.norm_hat", "m.norm_hat", "m.fc2_in", "m.act_out",
                                "s.fc2_in", "s.act_out",
                                "e.fc2_in", "e.act_out"})


def compiled_slots(slots: list[SlotDef]) -> list[SlotDef]:
    """[A-COMPILE] A compiled layer's slots: the outputs of fused elementwise chains are recomputed, not saved
    (their inputs, and the norm statistics, stay)."""
    return [s for s in slots if s.id not in COMPILE_RECOMPUTED]


# ------------------------------------------------------------------------------------------ FP8
# slots that only an FP8 linear reads in the backward (for its weight gradient): Transformer Engine saves the
# quantised input instead, columnwise only (``update_usage(rowwise_usage=False, columnwise_usage=True)``)
FP8_INPUTS = frozenset({"a.norm_out", "m.norm_out", "m.fc2_in", "s.fc2_in"})
FP8_EXPERT_INPUTS = frozenset({"e.in", "e.fc2_in"})


def fp8_slots(d: Dims, w: Widths, f: Flags, kind: str, slots: list[SlotDef]) -> list[SlotDef]:
    """[A-FP8] A body layer's slots when Transformer Engine runs its linears in FP8: the inputs only a linear
    reads are saved at β_8 (1 B, + scales: blockwise 4/128, MXFP8 1/32) instead of β_c; the attention output,
    which flash attention's backward also reads, keeps its β_c copy and the output projection saves an FP8 one
    beside it; so does the shared experts' fc1 beside the MoE layer's FFN input, which the bf16 router reads.
    torchao's Float8Linear saves its high-precision input (no change)."""
    feat = f.feat
    b8 = feat.fp8_act_bytes
    out: list[SlotDef] = []
    moe = kind.endswith("moe")
    for slot in slots:
        router_reads = moe and slot.id == "m.norm_out"
        only_linear = (slot.id in FP8_INPUTS and not router_reads) or \
            (feat.fp8_experts and slot.id in FP8_EXPERT_INPUTS) or (slot.id == "a.out" and not f.flash_attention)
        if only_linear:
            out.append(replace(slot, bytes=slot.bytes * b8 / w.c))
            continue
        out.append(slot)
        if slot.id == "a.out":
            out.append(SlotDef("a.out_fp8", b8 * d.o_w, "tp", slot.switches))
        elif router_reads and d.hff_sh:  # the shared experts' FP8 input: inside their checkpoint
            out.append(SlotDef("m.norm_out_fp8", b8 * d.h, slot.cls, slot.switches | {"moe", "shared_experts"}))
    return out


# ------------------------------------------------------------------------------------------ PEFT
# the linear layers that read a saved slot for their weight gradient: a frozen linear does not keep its input
# (Transformer Engine saves it only when the weight requires a gradient; PyTorch autograd likewise)
LINEAR_INPUTS = {"a.norm_out": frozenset({"q", "k", "v", "qkv", "q_a", "kv_a"}),
                 "m.norm_out": frozenset({"gate", "up", "fc1"}), "m.fc2_in": frozenset({"down"}),
                 "s.fc2_in": frozenset({"down"}), "a.out": frozenset({"o"}), "a.out_fp8": frozenset({"o"}),
                 "m.norm_out_fp8": frozenset({"gate", "up", "fc1"})}


FROZEN_SUFFIX = ":frozen"  # an activation-table kind whose layer's weights are all frozen ([A-FREEZE])


def frozen_slots(f: Flags, kind: str, slots: Sequence[SlotDef], readers_kept: frozenset[str] = frozenset()
                 ) -> list[SlotDef]:
    """[A-LORA], [A-FREEZE] The slots a layer with frozen weights still saves for its input gradients: no norm's
    pre-weight copy (nothing computes the norm weights' gradient) and no input of a frozen linear layer (read
    only for its weight gradient; PyTorch autograd and Transformer Engine save it only when the weight requires a
    gradient, Megatron's local linears always: ``frozen_inputs_freed``) unless a linear in ``readers_kept``
    reads it (a LoRA adapter on the module), flash attention's output (its backward reads O) and a MoE layer's
    FFN input (the routed experts: kept, conservative)."""
    out: list[SlotDef] = []
    for slot in slots:
        if slot.id.endswith(".norm_hat"):
            continue
        readers = LINEAR_INPUTS.get(slot.id)
        keep_for_fa = slot.id == "a.out" and f.flash_attention  # flash attention's backward reads O
        moe_ffn_input = slot.id == "m.norm_out" and kind.endswith("moe")
        if readers is not None and f.feat.frozen_inputs_freed and not keep_for_fa and not moe_ffn_input and \
                not readers & readers_kept:
            continue
        out.append(slot)
    return out


def lora_slots(d: Dims, w: Widths, f: Flags, kind: str, slots: list[SlotDef]) -> list[SlotDef]:
    """[A-LORA] A body layer's slots under LoRA on a frozen base: the inputs of frozen linear layers no adapter
    reads are dropped (where the framework frees them), and every adapted module saves its adapter path —
    the low-rank activation x·A (β_c·r per token, sequence-sharded with SP) for B's weight gradient, with dropout
    the dropped input and its mask, and an input cast when the adapters are stored wider than β_c."""
    from .params import lora_modules

    feat = f.feat
    modules = lora_modules(d, kind)
    active = {name: spec for name, spec in modules.items() if name in feat.lora_targets}
    reads_x = not feat.lora_dropout and w.a <= w.c  # lora_A reads the base input itself
    out = frozen_slots(f, kind, slots, frozenset(active) if reads_x else frozenset())
    for name, (n_in, _n_out, placement) in sorted(active.items()):
        cls = "tp" if placement == "row" else "gsp"  # the module's input: a TP-split or a norm output
        if feat.lora_dropout:
            out.append(SlotDef(f"lora.{name}.drop", (w.c + w.dm) * n_in, cls))
        elif w.a > w.c:
            out.append(SlotDef(f"lora.{name}.cast", w.a * n_in, cls))
        out.append(SlotDef(f"lora.{name}.xa", w.c * feat.lora_rank, "sp"))
    return out


# ----------------------------------------------------------------------------------- recompute rules
MEGATRON_MODULES = {"core_attn": "core", "layernorm": "norm_out", "mla_up_proj": "mla_up", "moe_act": "moe_act",
                    "act": "act", "mlp": "mlp", "moe": "moe", "shared_experts": "shared_experts"}


def selective_switches(rule: str, flags: Flags, explicit: tuple[str, ...] | None) -> frozenset[str]:
    """Switches a selective layer recomputes (docs/model.md#selective-recompute)."""
    if explicit is not None:
        return frozenset(MEGATRON_MODULES.get(x, x) for x in explicit)
    if rule == "hyperparallel":
        return frozenset({"core", "head_cast", "dropout", "norm_out", "gather", "act"})
    if rule == "mindformers":
        out = {"act"}
        if not flags.flash_attention:
            out |= {"core", "head_cast", "qk_v"}
        return frozenset(out)
    if rule == "megatron":
        return frozenset({"core"})
    return frozenset()  # torchtitan_op is not switch based


def option_switches(option: str, sel: frozenset[str]) -> frozenset[str]:
    if option == "selective":
        return sel
    if option == "comm":
        return frozenset({"gather"})
    if option == "both":
        return sel | {"gather"}
    return frozenset()


def sum_slots(slots: tuple[SlotDef, ...], off: frozenset[str], gathered: bool,
              keep: frozenset[str] | None = None) -> ClassSums:
    """Class sums of the slots kept when the switches in ``off`` are recomputed.
    ``gathered``: GSP slots count as REP (all-gathered norm outputs saved), else as SP.
    ``keep``: when given, only these slot ids count (torchtitan_op, docs/model.md#test-vectors V15)."""
    acc = dict.fromkeys(("sp", "tp", "rep", "v", "exp", "expt"), 0.0)
    for slot in slots:
        if keep is not None:
            if slot.id not in keep:
                continue
        elif slot.op_only or slot.switches & off:
            continue
        cls = slot.cls
        if cls == "gsp":
            cls = "rep" if gathered else "sp"
        acc[cls] += slot.bytes
    return ClassSums(**acc)


# the outputs of a residual branch's last matmul (wo, w2, the shared experts' w2): the residual add's backward reads
# neither operand, and nothing else reads them
BRANCH_OUTPUTS = frozenset({"a.o_out", "m.ffn_out", "s.out"})


def torchtitan_op_keep(slots: tuple[SlotDef, ...], compiled: bool = False) -> frozenset[str]:
    """DECISION D43: keep the layer input, the attention kernel outputs, and the outputs of the 1st, 3rd,
    5th … matmul in forward order; recompute the rest. Row-parallel outputs (wo, w2) are REP partial sums.

    [A-COMPILE.op] Compiled (``compiled``), the policy's MUST_SAVE only bans recomputing those outputs: AOTAutograd's
    partitioner (torch/_functorch/partitioners.py, PREFER_RECOMPUTE nodes must be recomputed) saves a forward
    value only when the backward graph reads it, so a kept matmul output the backward never reads — a residual
    branch's output (``BRANCH_OUTPUTS``) — is not saved; eager SAC caches every MUST_SAVE output
    (P-COMPILE-OP-SAC)."""
    keep = {"a.norm_in", "a.out", "a.fa_stats", "e.in", "e.out"}
    for slot in slots:
        if slot.matmul_out and slot.matmul_out % 2 == 1 and not (compiled and slot.id in BRANCH_OUTPUTS):
            keep.add(slot.id)
    return frozenset(keep)


# --------------------------------------------------------------------------------------- layer table
@dataclass(frozen=True)
class LayerActivation:
    """Per block kind: the slot table and the kept class sums per recompute option."""

    kind: str
    slots: tuple[SlotDef, ...]
    sums: dict[str, ClassSums] = field(hash=False, compare=False)


class ActivationTable:
    """Slot tables and class sums for every kind present, built once per estimate (scalars)."""

    def __init__(self, d: Dims, w: Widths, f: Flags, s: float, explicit_switches: tuple[str, ...] | None) -> None:
        self.d, self.w, self.f, self.s = d, w, f, s
        self.sel = selective_switches(f.rule, f, explicit_switches)
        self._cache: dict[tuple[str, str, bool | None, str | None], ClassSums] = {}
        self._slots: dict[str, tuple[SlotDef, ...]] = {}
        self._subsets: dict[tuple, ClassSums] = {}
        # a body layer's (or MTP module's) parameter elements (params.kept_block): they read the dims and the
        # registered layer kinds only, as the slot tables do, so whoever shares this table (the row books of a tp,
        # pp or recompute edit, reuse.activation_table) shares them (StagePricer.local, the row FLOPs)
        self.elements: dict = {}

    def slots(self, kind: str) -> tuple[SlotDef, ...]:
        got = self._slots.get(kind)
        if got is None:
            if kind.endswith(FROZEN_SUFFIX):  # [A-FREEZE] a frozen layer behind a trainable one
                base = kind[:-len(FROZEN_SUFFIX)]
                got = tuple(frozen_slots(self.f, base[4:] if base.startswith("mtp:") else base, self.slots(base)))
            elif kind == "embedding":
                got = embedding_slots(self.d, self.w)
            elif kind == "output":
                got = head_slots(self.d, self.w, self.f)
            elif kind.startswith("mtp:"):
                block = kind[4:]
                got = (*self._block(block), *mtp_extra_slots(self.d, self.w, self.f),
                       *head_slots(self.d, self.w, self.f))
            else:
                got = self._block(kind)
            self._slots[kind] = got
        return got

    def _block(self, kind: str) -> tuple[SlotDef, ...]:
        """A body kind's slots: the shipped table of its base kind, edited by its kind file and the user's slot
        overrides (estimator/kinds), then by the features that change what is saved (compile, FP8, LoRA)."""
        base = base_of(kind)
        slots = apply_slots(kind, block_slots(self.d, self.w, self.f, self.s, base, has_mixer(kind)), self.d, self.w,
                            self.f, self.s, SlotDef)
        feat = self.f.feat
        if feat.compile_model and base not in ("noop", "vision"):
            slots = tuple(compiled_slots(list(slots)))
        if feat.fp8_on and feat.fp8_impl == "te" and base not in ("noop", "vision"):
            slots = tuple(fp8_slots(self.d, self.w, self.f, base, list(slots)))
        if feat.lora and base not in ("noop", "vision"):
            slots = tuple(lora_slots(self.d, self.w, self.f, base, list(slots)))
        return slots

    def gathered(self, option: str) -> bool:
        """The SP norm outputs are saved all-gathered unless the gather switch is recomputed."""
        return self.f.saves_gathered and "gather" not in option_switches(option, self.sel)

    def sums(self, kind: str, option: str, offload: bool | tuple[str, ...] | None = None,
             zero: str | None = None) -> ClassSums:
        """Kept class sums of one layer of ``kind`` under ``option`` (full: the kept input only); ``offload`` and
        ``zero`` are the layer's own activation offload and --moe-zero-memory level (None: the plan's)."""
        key = (kind, option, offload, zero)
        got = self._cache.get(key)
        if got is not None:
            return got
        if kind in ("noop", "vision_frozen"):
            got = ZERO
        elif option == "full":
            # [A-FULL] the layer input β_r·h·T/d_in, d_in = t when sliced (SP, slice flag, family)
            if self.f.slice_full_input:
                got = ClassSums(tp=self.w.r * self.d.h)
            else:
                got = ClassSums(sp=self.w.r * self.d.h)
        else:
            moved = self.offloaded_ids(kind, offload) | self.zero_memory_ids(kind, offload, zero)
            got = self._kept(kind, option, tuple(s for s in self.slots(kind) if s.id not in moved))
            got = ClassSums(got.sp, got.tp, got.rep, got.v, got.exp, got.expt,
                            cast=self.f.keep_casts and kind not in ("embedding", "output"))
        self._cache[key] = got
        return got

    def _kept(self, kind: str, option: str, slots: tuple[SlotDef, ...]) -> ClassSums:
        gathered = self.gathered(option)
        if option in ("selective", "both") and self.f.rule == "torchtitan_op" and kind not in ("embedding", "output"):
            return sum_slots(slots, frozenset(), gathered,
                             torchtitan_op_keep(self.slots(kind), compiled=self.f.feat.compile_model))
        off = option_switches(option, self.sel) if kind not in ("embedding", "output") else frozenset()
        return sum_slots(slots, off, gathered)

    def offloaded_ids(self, kind: str, offload: bool | tuple[str, ...] | None = None) -> frozenset[str]:
        """Slot ids of a layer of ``kind`` whose saved activations an offload/swap sends to host memory (none
        when the layer is not one the plan offloads, ``offload`` False)."""
        groups = self.f.feat.offload_groups
        if not groups or offload is False or kind in ("embedding", "output", "noop", "vision", "vision_frozen"):
            return frozenset()
        if isinstance(offload, tuple):  # [A-OFFLOAD-LAYERS] the plan's groups whose layer lists name this layer
            groups = groups & frozenset(offload)
        ids = {s.id for s in self.slots(kind)}
        return frozenset(i for i in ids if offload_group(i) in groups or (offload_group(i) and "layer" in groups))

    def zero_memory_ids(self, kind: str, offload: bool | tuple[str, ...] | None = None,
                        zero: str | None = None) -> frozenset[str]:
        """Slot ids MindSpeed's --moe-zero-memory frees after a MoE layer's forward at the layer's level ``zero``
        (None: the plan's), those of ZERO_MEMORY_LEVELS the layer has, and MindSpeed-LLM's --mla-zero-memory
        those of an MLA attention (MLA_ZERO_MEMORY_SLOTS)."""
        level = self.f.feat.moe_zero_memory if zero is None else zero
        freed = ZERO_MEMORY_LEVELS.get(level, frozenset())  # e.* (routed), s.* (shared experts): MoE layers only
        if self.f.feat.mla_zero_memory and self.d.mla:
            freed = freed | MLA_ZERO_MEMORY_SLOTS
        if not freed:
            return frozenset()
        return frozenset(s.id for s in self.slots(kind) if s.id in freed) - self.offloaded_ids(kind, offload)

    def zero_memory(self, kind: str, option: str, offload: bool | tuple[str, ...] | None = None,
                    zero: str | None = None) -> ClassSums:
        """[A-ZERO-MEMORY] class sums of what --moe-zero-memory frees in a layer of ``kind`` under ``option``."""
        freed = self.zero_memory_ids(kind, offload, zero)
        if not freed or option == "full":
            return ZERO
        return self._kept(kind, option, tuple(s for s in self.slots(kind) if s.id in freed))

    def offloaded(self, kind: str, option: str, offload: bool | tuple[str, ...] | None = None) -> ClassSums:
        """[A-OFFLOAD] class sums of what a layer of ``kind`` keeps in host memory under ``option`` (a fully
        recomputed layer keeps its input on the device)."""
        moved = self.offloaded_ids(kind, offload)
        if not moved or option == "full":
            return ZERO
        return self._kept(kind, option, tuple(s for s in self.slots(kind) if s.id in moved))

    def subset(self, kind: str, ids: frozenset[str], exclude: bool, option: str = "none") -> ClassSums:
        """Class sums over a subset of the kept slots (FSDP2 instants, docs/model.md#instants)."""
        key = (kind, ids, exclude, option)
        got = self._subsets.get(key)
        if got is None:
            chosen = tuple(s for s in self.slots(kind) if (s.id in ids) != exclude)
            got = sum_slots(chosen, option_switches(option, self.sel), self.gathered(option))
            self._subsets[key] = got
        return got

    @cached_property
    def has_norm_out_recompute(self) -> bool:
        return "norm_out" in self.sel


def combine(sums: ClassSums, T: Num, R: Num, par: Par, vpad: Num, t_v: Num, cast_elements: Num = 0.0,
            bc: float = 2.0) -> Num:
    """[A-LAYER] A = T·(Σ_SP/sp_div + Σ_TP/t + Σ_REP + Σ_V·v_pad/t_V) + R·(Σ_EXP + Σ_EXPT/etp) + casts."""
    out = T * (sums.sp / par.sp_div + sums.tp / par.t + sums.rep + sums.v * vpad / t_v)
    if sums.exp or sums.expt:
        out = out + R * (sums.exp + sums.expt / par.etp)
    if sums.cast:
        out = out + bc * cast_elements
    return out
