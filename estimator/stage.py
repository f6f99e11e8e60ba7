"""Per-stage pricing shared by the generic path (docs/model.md#stage-memory) and the FSDP2 path (docs/model.md#fsdp2):
the rows a stage holds, their static bytes, their stored activations, backward working sets and transient buffers.

``StagePricer`` caches everything that depends only on (kind, option), so a stage costs a few dictionary
look-ups per distinct layer kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple, TypeVar

from . import params as P
from .activations import FROZEN_SUFFIX, ActivationTable, ClassSums, combine
from .activations import ZERO as ZERO_SUMS
from .arr import Num, gt, maximum, minimum, where
from .attention_mask import mask_bytes
from .device.overlap import mc2_workspace
from .layout import EMBEDDING, MTP, NOOP, OUTPUT, VISION, Item, Layout
from .resolve import Resolved, routed_tokens, shard_divisors, t_head, t_vocab, v_pad
from .stage_entries import EMBEDDING_COPY, layout_entries
from .static import (
    Local,
    StaticBytes,
    embedding_local,
    gather_bytes,
    grad_factor,
    local_elements,
    output_local,
    static_bytes,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RowCost:
    """What a row costs; shared by every layer with the same (kind, block, option, group role, head)."""

    local: Local
    static: StaticBytes
    act: float          # stored activations of one micro-batch (A1)
    act_none: float     # activations with no recompute (A(ℓ, none)), for Rc and FSDP2 instants
    gw: float           # backward working set Gw(ℓ)
    gf: float           # forward working set (V schedules)
    transient: float    # transient communication buffer C(ℓ)
    resident: float     # resident gathered weights (mf_op keep_gathered)
    parts: tuple[float, float, float, float, float] = (0, 0, 0, 0, 0)  # sp, cp, ep, dp, pp buffer terms
    rc: float = 0.0     # Rc(ℓ) outside uniform groups: what this row's backward recomputes
    offload: float = 0.0  # activations of one micro-batch kept in host memory (activation offload / swap)
    rebuilt: float = 0.0  # activations freed after the forward and rebuilt in the backward (--moe-zero-memory)
    mc2: float = 0.0      # the MC2 op workspace [C-BUF.mc2] (MindSpeed --use-ascend-mc2), in ``parts`` when larger


def cost_key(item: Item, with_head: bool = True) -> tuple:
    """What a row's cost depends on (its model index does not matter): rows with one key share one RowCost."""
    return (item.kind, item.block, item.option, item.group, item.keeps_input, item.offload, item.zero, with_head,
            item.grad)


class Row(NamedTuple):
    """A priced row of a stage: an entry and its cost."""

    item: Item
    chunk: int
    cost: RowCost
    with_head: bool = True

    @property
    def local(self) -> Local:
        return self.cost.local

    @property
    def static(self) -> StaticBytes:
        return self.cost.static

    @property
    def act(self) -> float:
        return self.cost.act

    @property
    def act_none(self) -> float:
        return self.cost.act_none

    @property
    def gw(self) -> float:
        return self.cost.gw

    @property
    def gf(self) -> float:
        return self.cost.gf

    @property
    def transient(self) -> float:
        return self.cost.transient

    @property
    def resident(self) -> float:
        return self.cost.resident

    @property
    def parts(self) -> tuple[float, float, float, float, float]:
        return self.cost.parts


class RowCosts:
    """What a plan's rows cost, apart from its layout (``reuse.row_costs`` shares one across the books of plans
    that differ only in what the layout reads of the recompute plan): ``StagePricer``'s priced locals, static
    bytes, rows and activation table, each row cost's term values (``values``), the rows' FLOPs (``flops``), what
    they hold for the step time (``holdings``, ``chunktime.row_holdings``) and per device their row times
    (``times``) — all keyed per row (``cost_key``, or the RowCost object) — and per device the step time's context
    (``contexts``, ``steptime._context``)."""

    def __init__(self) -> None:
        self.local: dict = {}
        self.static: dict = {}
        self.rows: dict = {}
        self.acts: ActivationTable | None = None
        self.values: dict = {}
        self.flops: dict = {}
        self.holdings: dict = {}
        self.times: dict = {}
        self.contexts: dict = {}


DEVICES = 8  # entries per device table: a plan's device and its band's two ends (more when an equal device
# arrives as a new object)


def kept_with(table: dict, key: object, holder: object, make: Callable[[], T], limit: int) -> T:
    """``table``'s entry under ``key``, made by ``make`` when missing or kept for another ``holder`` (the object
    the key names by its id, held in the entry so that its id is not reused); the table is emptied when it holds
    ``limit`` entries."""
    got = table.get(key)
    if got is None or got[0] is not holder:
        if len(table) >= limit:
            table.clear()
        got = table[key] = (holder, make())
    return got[1]


def device_entry(table: dict, hardware: object, make: Callable[[], T]) -> T:
    """``table``'s entry for the device record ``hardware``, made by ``make`` when missing: keyed by the object
    (held in the entry, so its id is not reused) — hashing a device record by value costs microseconds, and a
    plan's device and its band ends stay the same objects; at most ``DEVICES`` kept."""
    return kept_with(table, id(hardware), hardware, make, DEVICES)


class RowBook:
    """What a pricer's rows are kept in (``reuse.row_book`` shares one across estimates): the row costs
    (``costs``: their own, or shared by plans whose rows agree) and what is derived from the rows per stage form
    of one layout — ``shared`` (chunk sums, chunk holdings, kept stages, keyed per stage form) and per device
    (the plan's, or a band end's) the step time's context with its chunk and stage times (``times``)."""

    def __init__(self, costs: RowCosts | None = None) -> None:
        self.costs = costs or RowCosts()
        self.shared: dict = {}
        self.times: dict = {}

    def release(self) -> None:
        """Drops the step-time contexts kept here and in the row costs: each refers back to its pricer, hence to
        this book — a cycle that only the garbage collector frees. A book nobody else holds (a search group's,
        with its own row costs) is then freed by reference counting, arrays and all, as soon as it is let go."""
        self.times.clear()
        self.costs.contexts.clear()


class StagePricer:
    """Prices a plan's rows (cached per (kind, option), see ``cost_key``) and keeps what other modules derive.

    ``memo`` holds what one plan derives (per stage: rows, peak points, device terms); ``shared`` what depends on
    the rows alone (row values, chunk sums, FLOPs, chunk holdings — per stage form). ``book`` (``reuse.row_book``,
    the estimate's) shares the rows and ``shared`` with every estimate whose inputs the rows read agree; without
    one they are the pricer's own."""

    def __init__(self, r: Resolved, layout: Layout, book: RowBook | None = None) -> None:
        self.r = r
        self.layout = layout
        d, w, f, par = r.dims, r.widths, r.flags, r.par
        self.divisors = shard_divisors(f, par, r.options.params_divided_by_cp)
        self.T = par.T
        self.R = routed_tokens(d, par, r.options.rho)
        self.vpad = v_pad(d, par.t)
        self.t_v = t_vocab(f, par.t)
        self.t_h = t_head(f, d, par.t)  # D58: MindFormers replicates the head with vocab_emb_dp
        self.gamma = grad_factor(f, par)
        self.book = book = book or RowBook()
        costs = book.costs
        if costs.acts is None:
            costs.acts = ActivationTable(d, w, f, float(par.s), r.strategy.recompute.switches)
        self.acts: ActivationTable = costs.acts
        self._local: dict[tuple, Local] = costs.local
        self._static: dict[tuple, StaticBytes] = costs.static
        self._rows: dict[tuple, RowCost] = costs.rows
        self.shared: dict = book.shared
        self.memo: dict[tuple, object] = {}  # derived per-pricer results other modules reuse across stages
        vision = r.model.vision
        self.vision_frozen = bool(vision is not None and (vision.frozen or "vision" in f.frozen or f.feat.lora))

    # ---------------------------------------------------------------------------------- locals
    def local(self, kind: str, block: str, with_head: bool = True, grad: str | None = None) -> Local:
        """A row's local elements; ``grad`` its [A-FREEZE] state (frozen / off: the layer's weights are frozen)."""
        key = (kind, block, with_head, grad)
        got = self._local.get(key)
        if got is not None:
            return got
        d, f, par = self.r.dims, self.r.flags, self.r.par
        feat = f.feat
        # PEFT freezes the whole base model: embedding, head and towers carry no gradients, the body layers
        # train their adapters only
        frozen_modules = (*f.frozen, "embedding", "output", "vision", "projector") if feat.lora else f.frozen
        if kind in (EMBEDDING, EMBEDDING_COPY):
            got = embedding_local(d, f, par, frozen="embedding" in frozen_modules, positions=kind == EMBEDDING)
        elif kind == OUTPUT:
            got = output_local(d, par, with_head, frozen="output" in frozen_modules, t_head=self.t_h)
        elif kind == NOOP:
            got = Local(0, 0)
        elif kind == VISION:
            vision = self.r.model.vision
            assert vision is not None
            got = local_elements(P.vision_layer(vision), par, frozen=self.vision_frozen)
        elif kind == "vision_extras":
            vision = self.r.model.vision
            assert vision is not None
            got = local_elements(P.vision_extras(vision, d.h), par,
                                 frozen=vision.projector_frozen or "projector" in frozen_modules)
        elif kind == MTP:
            elements = P.kept_block(self.acts.elements, self.acts.d, block, mtp=True)
            got = local_elements(elements, par, frozen="mtp" in frozen_modules or grad is not None,
                                 **self._peft(block), **self._fp8(block), **self._part(block, grad))
        else:
            elements = P.kept_block(self.acts.elements, self.acts.d, kind)
            got = local_elements(elements, par, frozen="body" in frozen_modules or grad is not None,
                                 **self._peft(kind), **self._fp8(kind), **self._part(kind, grad))
        self._local[key] = got
        return got

    def _peft(self, kind: str) -> dict:
        """local_elements' PEFT arguments for a body layer of ``kind``: its LoRA adapters, and NF4 storage of
        its matmul weights under QLoRA."""
        feat = self.r.flags.feat
        if not feat.lora:
            return {}
        return {"adapters": P.lora_adapters(self.r.dims, kind, feat.lora_targets, feat.lora_rank),
                "quantize": feat.peft == "qlora"}

    def _part(self, kind: str, grad: str | None) -> dict:
        """local_elements' freeze argument for a trainable layer of ``kind`` whose trainable module groups are
        only some (``trainable_parts``): the elements of those groups ([A-FREEZE] P.trainable_part)."""
        parts = self.r.flags.feat.trainable_parts
        if grad is not None or not parts:
            return {}
        return {"part": P.trainable_part(self.r.dims, kind, parts)}

    def _fp8(self, kind: str) -> dict:
        """local_elements' FP8 arguments for a body layer of ``kind``: its FP8 linears and GEMM count (two per
        local expert when the experts run FP8)."""
        feat, d, par = self.r.flags.feat, self.r.dims, self.r.par
        if not feat.fp8_on:
            return {}
        gemms = len(P.linear_modules(d, kind))
        experts = feat.fp8_experts and kind.endswith("moe")
        if experts:
            gemms = gemms + 2 * d.n_exp / par.ep
        return {"fp8": P.fp8_linear(d, kind), "fp8_experts": experts, "fp8_gemms": gemms}

    def static(self, kind: str, block: str, with_head: bool = True, grad: str | None = None) -> StaticBytes:
        key = (kind, block, with_head, grad)
        got = self._static.get(key)
        if got is None:
            got = static_bytes(self.local(kind, block, with_head, grad), self.r.widths, self.r.flags, self.r.par,
                               self.divisors)
            self._static[key] = got
        return got

    # ---------------------------------------------------------------------------------- activations
    def act_key(self, item: Item) -> str:
        key = "mtp:" + item.block if item.kind == MTP else item.kind
        return key + FROZEN_SUFFIX if item.grad == "frozen" else key

    def activation(self, item: Item, option: str | None = None) -> float:
        """A(ℓ, option) of one micro-batch."""
        option = option or item.option
        if item.kind in (NOOP, "vision_extras", EMBEDDING_COPY) or item.grad == "off":
            return 0.0  # [A-FREEZE] off: autograd records nothing, so nothing is saved
        if item.kind == VISION:
            return 0.0 if self.vision_frozen else self._vision_activation()
        if option == "full" and not item.keeps_input:
            return 0.0
        sums = self.acts.sums(self.act_key(item), option, item.offload, item.zero)
        local = self.local(item.kind, item.block, grad=item.grad)
        out = combine(sums, self.T, self.R, self.r.par, self.vpad, self.t_v, local.cast, self.r.widths.c)
        if option != "full" and self.r.flags.cp_keeps_kv and item.kind not in (EMBEDDING, OUTPUT):
            out = out + self.kept_remote_kv(item)
        return out

    def offloaded(self, item: Item, option: str | None = None) -> Num:
        """[A-OFFLOAD] the activations of one micro-batch a layer keeps in host memory; the backward holds the
        layer's own and the next one's prefetch on the device (2× in its working set [W-OFFLOAD])."""
        option = option or item.option
        if item.kind in (NOOP, EMBEDDING, OUTPUT, VISION, "vision_extras", EMBEDDING_COPY) or item.grad == "off":
            return 0.0
        sums = self.acts.offloaded(self.act_key(item), option, item.offload)
        if sums is ZERO_SUMS:
            return 0.0
        return self.combine(sums, item)

    def rebuilt(self, item: Item, option: str | None = None) -> Num:
        """[A-ZERO-MEMORY] the activations of one micro-batch --moe-zero-memory frees after a MoE layer's forward
        and rebuilds in its backward (held there: Gw)."""
        option = option or item.option
        if item.kind in (NOOP, EMBEDDING, OUTPUT, VISION, "vision_extras", EMBEDDING_COPY) or item.grad == "off":
            return 0.0
        sums = self.acts.zero_memory(self.act_key(item), option, item.offload, item.zero)
        return 0.0 if sums is ZERO_SUMS else self.combine(sums, item)

    def kept_remote_kv(self, item: Item) -> Num:
        """``cp_keeps_kv`` (docs/model.md#context-parallelism): a ring layer also keeps the gathered remote K/V,
        (ring degree − 1)·β_c·n_kv·(dqk + dv)·T/t (hybrid: the ring degree is cp/u)."""
        d, f, par = self.r.dims, self.r.flags, self.r.par
        block = item.block if item.kind == MTP else item.kind
        if f.cp_algo in ("ulysses", "allgather") or block.startswith("lin_"):
            return 0.0
        ring = par.cp / par.u if f.cp_algo == "hybrid" else par.cp
        return (ring - 1) * self.r.widths.c * d.n_kv * (d.dqk + d.dv) * self.T / par.t

    def sums(self, item: Item, option: str) -> ClassSums:
        return self.acts.sums(self.act_key(item), option, item.offload, item.zero)

    def combine(self, sums: ClassSums, item: Item) -> float:
        local = self.local(item.kind, item.block, grad=item.grad)
        return combine(sums, self.T, self.R, self.r.par, self.vpad, self.t_v, local.cast, self.r.widths.c)

    def _vision_tokens(self) -> float:
        vision = self.r.model.vision
        assert vision is not None
        if vision.seq_length:
            s_v = vision.seq_length
        elif vision.num_position_embeddings:
            s_v = vision.num_position_embeddings / vision.spatial_merge_size ** 2
        else:
            s_v = 1024
        return self.r.par.b * s_v / self.r.par.cp

    def _vision_activation(self) -> float:
        """A trainable tower is priced as dense layers with the vision dims (docs/model.md#vision-towers): Korthikanti's
        layer with LayerNorm/GeLU, flash attention, no dropout, at T_v tokens."""
        vision = self.r.model.vision
        assert vision is not None
        h, f_v, bc = vision.hidden_size, vision.ffn_hidden_size, self.r.widths.c
        g = 2 if vision.gated_ffn else 1
        heads = vision.num_attention_heads
        per_token_tp = bc * (3 * h + h) + bc * (g * f_v + f_v) + 4 * heads
        per_token_sp = self.r.widths.r * h * 2 + bc * h * 2
        par = self.r.par
        return self._vision_tokens() * (per_token_sp / par.sp_div + per_token_tp / par.t)

    def dataloader_mask(self) -> tuple[Num, Num]:
        """[W-MASK] Megatron-LM's data loader (``create_attention_mask_in_dataloader``, its default): the chunk
        holding the embedding or the output layer fetches each micro-batch's causal mask, b×1×s×s booleans, keeps
        the s/cp rows of its context-parallel rank and holds them through the micro-batch's forward. Returns (the
        kept mask b·(s/cp)·s, and what the fetch holds while it slices: b·s·s + b·(s/cp)·s with cp > 1, else 0)."""
        par = self.r.par
        kept = mask_bytes(par.b, par.s, par.cp)
        return kept, (par.b * par.s * par.s + kept) * gt(par.cp, 1)

    def vision_forward_working(self) -> float:
        """Frozen tower: its largest forward layer working set T_v·β_c·(2·h_v + g·hff_v/t)
        (docs/model.md#vision-towers)."""
        vision = self.r.model.vision
        if vision is None:
            return 0.0
        g = 2 if vision.gated_ffn else 1
        return self._vision_tokens() * self.r.widths.c * (2 * vision.hidden_size +
                                                          g * vision.ffn_hidden_size / self.r.par.t)

    # ---------------------------------------------------------------------------------- working sets
    def gw(self, item: Item, backward: bool = True, forward: Num | None = None) -> Num:
        """Gw(ℓ) [W-BWD]: the gradient working set of a layer's backward (forward set when not
        ``backward``). ``forward``: the row's forward set when the caller has it (``cost``: a row priced once) —
        the backward's is the same set but around a loss, so only the upstream rule's own gradient is added."""
        backward = backward and item.grad != "off"  # [A-FREEZE] no graph: only the forward's working set
        upstream = backward and self.r.flags.persistence == "upstream_rule"
        if forward is not None and item.kind not in (OUTPUT, MTP):
            out = forward  # ``_working`` reads ``backward`` only for a loss' working set
        else:
            out = self._working(item, backward)
        if upstream:
            # D5 upstream rule without held gradients (γ = 0): the executing layer's own gradient
            out = out + (1 - self.gamma) * self.static(item.kind, item.block, grad=item.grad).gradients
        return out

    def _working(self, item: Item, backward: bool) -> Num:
        """A layer's working set in its backward (or forward), before the upstream rule's own gradient."""
        d, w, par = self.r.dims, self.r.widths, self.r.par
        T = self.T
        kind = item.block if item.kind == MTP else item.kind
        frozen_vision = item.kind == VISION and self.vision_frozen
        if item.kind in (NOOP, EMBEDDING, EMBEDDING_COPY, "vision_extras") or frozen_vision:
            out = 0.0
        elif item.kind == OUTPUT:
            out = self.loss_working(backward)
        elif item.kind == VISION:
            vision = self.r.model.vision
            assert vision is not None
            g = 2 if vision.gated_ffn else 1
            out = self._vision_tokens() * w.c * (2 * vision.hidden_size + g * vision.ffn_hidden_size / par.t)
        else:
            if kind.endswith("moe"):
                i_max = maximum((self.R / T) * d.g * d.hff_exp / par.etp, d.g * d.hff_sh / par.t)
            else:
                i_max = d.g * d.hff / par.t
            out = T * w.c * (2 * d.h / par.sp_div + i_max)
            if item.kind == MTP:
                out = maximum(out, self.loss_working(backward))
        return out

    def loss_working(self, backward: bool = True) -> Num:
        """The loss' working set over the logits (D45): T·w·v_pad/t_V with w = max(w_b, w_f) around the backward,
        w_f in the forward, the vocab-parallel widths where t_V > 1 [W-LOSS.parallel]; a chunked (fused linear)
        cross-entropy holds one fp32 chunk of logits about the size of the hidden states instead (Liger's chunking
        rule) [W-LOSS.chunked]. A replicated head (D58) makes full-vocabulary logits (and their gradient) on every TP
        rank, β_c·v_pad per token, for the main and the MTP tokens at once (MindFormers applies the head once to
        their concatenation) [W-LOSS.replicated]."""
        f, T = self.r.flags, self.T
        if f.feat.loss_fusion == "chunked":
            return T * 4 * self.r.dims.h
        width = max(f.w_b, f.w_f) if backward else f.w_f
        width_par = max(f.w_b_par, f.w_f_par) if backward else f.w_f_par
        if width_par != width:
            width = width + (width_par - width) * gt(self.t_v, 1)
        out = T * width * self.vpad / self.t_v
        if f.framework == "mindformers":
            tokens = T * (1 + self.r.dims.n_mtp)
            full = tokens * self.r.widths.c * self.vpad
            out = where(self.t_h < self.r.par.t, maximum(out, full), out)
        return out

    def rc(self, item: Item, group_act_none: float = 0.0, known: tuple[Num, Num, Num, Num] | None = None) -> Num:
        """Rc(ℓ): what the backward of ℓ recomputes (full: A(ℓ, none); selective: the dropped slots). ``known``:
        the row's (A(ℓ, none) with its host and rebuilt parts, A(ℓ), offloaded, rebuilt) when the caller has
        them (``cost``)."""
        if item.option == "none" or item.kind in (NOOP, EMBEDDING, OUTPUT, EMBEDDING_COPY, VISION):
            return 0.0
        if known is None:
            # what the layer produces, wherever it is kept (device, host, freed for a rebuild)
            none = self.activation(item, "none") + self.offloaded(item, "none") + self.rebuilt(item, "none")
            known = (none, self.activation(item, item.option), self.offloaded(item), self.rebuilt(item))
        none, act, offload, rebuilt = known
        if item.option == "full":
            return group_act_none if item.group > 1 else none
        return none - act - offload - rebuilt

    # ---------------------------------------------------------------------------------- buffers
    def buffer_terms(self, item: Item) -> tuple[float, float, float, float, float]:
        """(sp, cp, ep, dp, pp) transient buffer terms of C(ℓ) [C-BUF] for one row."""
        d, w, f, par = self.r.dims, self.r.widths, self.r.flags, self.r.par
        T, bc = self.T, w.c
        if item.kind in (NOOP, EMBEDDING_COPY, "vision_extras"):
            return (0.0, 0.0, 0.0, 0.0, 0.0)
        block = item.block if item.kind == MTP else item.kind
        is_block = item.kind not in (EMBEDDING, OUTPUT, VISION, "vision_extras")
        # double-buffered SP gather (none with DTensor SP, whose gathered input is the saved norm output)
        sp_term = 2 * bc * d.h * T * par.sp if (not f.dtensor_sp and item.kind != EMBEDDING) else 0.0
        if is_block and f.feat.async_tp:  # MC2 gathers into (reduce-scatters out of) its op workspace
            sp_term = maximum(sp_term, self.mc2(item))
        cp_term: Num = 0.0
        if is_block and not block.startswith("lin_"):
            algo = f.cp_algo  # only its own buffer is computed (a row priced per edit)
            if algo in ("ring", "hybrid"):
                cp_term = 2 * bc * d.n_kv * (d.dqk + d.dv) * T / par.t
            if algo in ("ulysses", "hybrid"):
                ulysses = bc * (d.q_w + d.k_w + d.v_w + d.o_w) * T / par.t
                cp_term = cp_term + ulysses if algo == "hybrid" else ulysses
            elif algo == "allgather":
                # the backward holds the gathered K/V and their full-length gradients (4 × cp blocks)
                cp_term = 2 * par.cp * bc * d.n_kv * (d.dqk + d.dv) * T / par.t
            elif algo != "ring":
                raise KeyError(algo)
            cp_term = cp_term * gt(par.cp, 1)
        ep_term = 2 * bc * d.h * self.R * gt(par.ep, 1) if (is_block and block.endswith("moe")) else 0.0
        mode = f.sharding_mode
        regather = mode == "zero3" or (mode in ("fsdp", "hsdp") and not f.fsdp2) or \
            (mode == "mf_op" and not f.keep_gathered)
        dp_term = 2 * self.gathered_bytes(item) if regather else 0.0
        zero = f.zero
        if zero is not None:  # DeepSpeed: the ZeRO-3 gathered window and the buckets (C-BUF.zero)
            if mode == "zero3":
                used = self.gathered_bytes(item)
                dp_term = minimum(used + bc * zero.prefetch, maximum(used, bc * zero.max_live))
            dp_term = dp_term + zero.bucket_bytes(w.g, w.p)
        pp_term = 2 * bc * d.h * T / par.sp_div * gt(par.p, 1)
        return (sp_term, cp_term, ep_term, dp_term, pp_term)

    def mc2(self, item: Item) -> Num:
        """[C-BUF.mc2] the largest MC2 op workspace of a block row (0 without MindSpeed's MC2)."""
        if item.kind in (NOOP, EMBEDDING, OUTPUT, VISION, "vision_extras", EMBEDDING_COPY):
            return 0.0
        return mc2_workspace(self.r, item.block if item.kind == MTP else item.kind, self.T)

    def resident(self, item: Item) -> float:
        """Weights kept gathered between forward and backward (mf_op with keep_gathered_weights)."""
        f = self.r.flags
        if f.sharding_mode != "mf_op" or not f.keep_gathered:
            return 0.0
        return self.gathered_bytes(item)

    def gathered_bytes(self, item: Item) -> Num:
        """β_c·gathered elements, FP8 weights at β_8 when the recipe gathers them in FP8."""
        par = self.r.par
        return gather_bytes(self.local(item.kind, item.block, grad=item.grad), self.r.flags, self.r.widths.c,
                            gt(par.os, 1), gt(par.os_e, 1))

    def gathered_elements(self, item: Item) -> Num:
        """Local elements that sharding actually splits, hence must gather: dense ones when the dense shard
        size os > 1, expert ones when the expert shard size os_e > 1 (a 1-way shard is the weight itself)."""
        par = self.r.par
        local = self.local(item.kind, item.block, grad=item.grad)
        return local.dense * gt(par.os, 1) + local.expert * gt(par.os_e, 1)

    # ---------------------------------------------------------------------------------- rows
    def cost(self, item: Item, with_head: bool = True) -> RowCost:
        """The shared cost of a row like ``item`` (its model index does not matter)."""
        got = self._rows.get((item.kind, item.block, item.option, item.group, item.keeps_input, item.offload,
                              item.zero, with_head, item.grad))  # cost_key, written out: a call per row less
        if got is None:
            got = self._rows[cost_key(item, with_head)] = self._price(item, with_head)
        return got

    def _price(self, item: Item, with_head: bool) -> RowCost:
        """A row's cost, each term computed once (the duplicates ``cost`` would ask for are the same values)."""
        kind, grad = item.kind, item.grad
        head = with_head if kind == OUTPUT else True
        terms = self.buffer_terms(item)
        act, offload, rebuilt = self.activation(item), self.offloaded(item), self.rebuilt(item)
        # A(ℓ, none) counts what the layer produces, on the device, sent to the host or freed for a rebuild
        # (a layer without a graph produces what a trainable one does: its forward's traffic, T-COMP); with no
        # recompute it is what the row keeps
        if grad == "off":
            made = replace(item, grad=None)
            act_none = self.activation(made, "none") + self.offloaded(made, "none") + self.rebuilt(made, "none")
            rc = self.rc(item)
        else:
            act_none = act + offload + rebuilt if item.option == "none" else \
                self.activation(item, "none") + self.offloaded(item, "none") + self.rebuilt(item, "none")
            rc = self.rc(item, known=(act_none, act, offload, rebuilt))
        gf = self.gw(item, False)
        gw = self.gw(item, forward=gf)
        # positional, in field order (local, static, act, act_none, gw, gf, transient, resident, parts, rc, offload,
        # rebuilt, mc2): the frozen dataclass's __init__ takes ~1 µs longer by keyword, and an edit prices ~7 rows
        return RowCost(self.local(kind, item.block, head, grad), self.static(kind, item.block, head, grad), act,
                       act_none, gw + 2 * offload + rebuilt, gf, sum(terms), self.resident(item), terms, rc, offload,
                       rebuilt, self.mc2(item) if self.r.flags.feat.async_tp else 0.0)


def stage_rows(pricer: StagePricer, stage: int) -> list[Row]:
    """The priced rows of a stage in model order (``stage_entries`` with their costs; kept with the rows, per
    layout)."""
    key = ("stage-rows", stage)
    got = pricer.shared.get(key)
    if got is None or got[0] is not pricer.layout:
        cost, new = pricer.cost, tuple.__new__  # Row(...) less its Python __new__: ~88 rows an estimate
        got = pricer.shared[key] = (pricer.layout, [new(Row, (e.item, e.chunk, cost(e.item, e.with_head), e.with_head))
                                                    for e in layout_entries(pricer.layout, pricer.r.dims.tie)[stage]])
    return list(got[1])
