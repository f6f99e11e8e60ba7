"""What a stage shows beyond its numbers: the per-layer table (``LayerRow``s: each row's terms, then one synthetic
row per stage-level quantity) and, for one element with ``explain``, the Explain tree (docs/model.md#explain).
The numbers all come from the assembler's ``StageMemory``; this module only labels them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arr import Num, is_array
from ..explain import CATEGORY_LABELS, Quantity, sum_node
from ..flops import moe_zero_level
from ..kinds import notes as kind_notes
from ..layout import EMBEDDING
from ..messages import Text, joined, msg
from ..params import position_table
from ..result import CATEGORIES, LayerRow
from ..stage import Row, StagePricer
from ..static import Local, fp8_weight_bytes
from ..units import fmt_bytes
from . import terms
from .chunks import MASK_AT
from .form import StageForm, row_label
from .memory import StageMemory

MASK_NOTE = msg("explain.dataloader-mask")  # the working overhead is the dataloader's mask [W-MASK]
V_LABELS = ("", msg("explain.v-pair.first"), msg("explain.v-pair.second"))
BUFFER_PARTS = ((msg("explain.buffer.sp"), "C-BUF.sp"), (msg("explain.buffer.cp"), "C-BUF.cp"),
                (msg("explain.buffer.ep"), "C-BUF.ep"), (msg("explain.buffer.dp"), "C-BUF.dp"),
                (msg("explain.buffer.pp"), "C-BUF.pp"))
# DeepSpeed (hf_trainer): the dp part is the ZeRO buckets and the ZeRO-3 gathered window
ZERO_BUFFER_PARTS = (*BUFFER_PARTS[:3], (msg("explain.buffer.zero"), "C-BUF.zero"), BUFFER_PARTS[4])


def _row_bytes(pricer: StagePricer, row: Row, n: Num, instants: bool) -> tuple[Num, ...]:
    out: list[Num] = [0.0] * len(CATEGORIES)
    for term in terms.ROW_TERMS:
        if not (instants and term.instant):
            k = CATEGORIES.index(term.category)
            out[k] = out[k] + term.value(row.cost, pricer)
    if not instants:
        k = CATEGORIES.index("activations")
        out[k] = out[k] + n * row.act
    return tuple(out)


def _one(category: str, value: Num) -> tuple[Num, ...]:
    return tuple(value if name == category else 0 for name in CATEGORIES)


def working_label(form: StageForm, rows: Sequence[Row], mem: StageMemory) -> Text:
    """Where the working set peaks: the walk position that wins, or the V schedules' overlapped pair."""
    chunk, at = mem.working_from
    if chunk < 0:
        return V_LABELS[at] if at > 0 else ""
    if at == MASK_AT:
        return MASK_NOTE
    if at < 0:
        return ""
    return row_label(rows[form.walks[chunk][at].row])


def transient_label(pricer: StagePricer, form: StageForm, rows: Sequence[Row], mem: StageMemory) -> Text:
    if pricer.r.flags.comm_buffer_mode == "upstream_sum":
        return msg("explain.upstream-sum")
    chunk, key = mem.transient_from
    if key < 0:
        return ""
    cost = pricer.cost(*form.keys[key])
    return msg("explain.largest", row=row_label(next(row for row in rows if row.chunk == chunk and row.cost is cost)))


def point_label(points, mem: StageMemory) -> Text:
    if mem.point < 0:
        return ""
    pt = points[mem.point]
    counts = [f"{float(n):g}" for n in pt.counts]
    if len(counts) == 1:
        return msg("explain.peak-point", chunk=pt.backward_chunk, count=counts[0])
    return msg("explain.peak-point.chunks", chunk=pt.backward_chunk, counts=", ".join(counts))


def layer_rows(pricer: StagePricer, form: StageForm, rows: Sequence[Row], mem: StageMemory) -> tuple[LayerRow, ...]:
    """Per-layer rows at the peak (Σ rows = the stage's categories)."""
    instants = mem.instant is not None
    out = []
    for row in rows:
        n = mem.counts[row.chunk]
        item = row.item
        out.append(LayerRow(kind=item.kind, bytes=_row_bytes(pricer, row, n, instants),
                            index=item.index if item.index >= 0 else None, chunk=row.chunk, option=item.option,
                            inflight=n))
    if instants:
        best = mem.instant.best
        for kind, category, value in (("gradients", "gradients", best.gradients),
                                      ("activations", "activations", best.activations),
                                      ("buffers", "communication_buffers", best.comm),
                                      ("working", "working_overhead", best.working)):
            out.append(LayerRow(kind, _one(category, value), note=best.name))
    else:
        out.append(LayerRow("working", _one("working_overhead", mem.working), note=working_label(form, rows, mem)))
        out.append(LayerRow("buffers", _one("communication_buffers", mem.transient),
                            note=transient_label(pricer, form, rows, mem)))
    for term, (value, view) in zip(terms.STAGE_TERMS, mem.stage_terms, strict=True):
        out.append(LayerRow(term.row, _one(term.category, value), note="" if is_array(view.groups) else
                            term.note(view)))
    return tuple(out)


# ------------------------------------------------------------------------------------------ explain
def explain_tree(pricer: StagePricer, stage: int, rows: Sequence[Row], mem: StageMemory,
                 rows_: tuple[LayerRow, ...], point: str) -> Quantity:
    """The stage total as a sum of categories, each a sum over its rows with the formula and the values
    substituted (one element only)."""
    if mem.instant is not None:
        return _fsdp_tree(stage, mem)
    par = pricer.r.par
    synthetic = [None, None, *list(zip(terms.STAGE_TERMS, mem.stage_terms, strict=True))]
    children = []
    for k, name in enumerate(CATEGORIES):
        leaves = []
        for lr, source in zip(rows_, [*rows, *synthetic], strict=True):
            value = lr.bytes[k]
            if not value:
                continue
            row = f"{lr.kind}" + (f" {lr.index}" if lr.index is not None else "")
            label: Text = msg("explain.row-chunk", row=row, chunk=lr.chunk) if par.vp > 1 else row
            if isinstance(source, Row):
                leaves.append(_with_positions(pricer, name, _row_leaf(pricer, name, label, value, source, lr),
                                              source))
            elif source is None:
                leaves.append(_stage_leaf(name, label, value, lr, rows, pricer.r.flags.zero is not None))
            else:
                term, (_value, view) = source
                leaves.append(Quantity(label, value, term.id, term.inputs(view), note=lr.said or lr.note))
        children.append(sum_node(CATEGORY_LABELS[name], leaves))
    total = sum_node(msg("explain.stage-total", stage=stage), children, "M-STAGE", note=point)
    total.inputs = dict(mem.categories)
    return total


def _fsdp_tree(stage: int, mem: StageMemory) -> Quantity:
    peak = mem.instant
    after = peak.several
    children = [Quantity(msg("explain.instant-after", name=inst.name, where=where_) if after else inst.name,
                         inst.dynamic + a_h, "F-INST",
                         {"gradients": inst.gradients, "activations": inst.activations + a_h,
                          "communication_buffers": inst.comm, "working_overhead": inst.working})
                for a_h, walk, where_ in peak.walks for inst in walk]
    dyn = Quantity(msg("explain.dynamic-max-over"), peak.best.dynamic, "F-INST", children=children, op="max",
                   note=msg("explain.argmax", name=peak.best.name))
    cat = mem.categories
    parts = [Quantity(CATEGORY_LABELS["parameters"], cat["parameters"], "S-LAYER.params"),
             Quantity(CATEGORY_LABELS["optimizer_states"], cat["optimizer_states"], "S-LAYER.opt"), dyn]
    parts += [Quantity(term.row, value, term.id) for term, (value, _view) in zip(terms.STAGE_TERMS, mem.stage_terms,
                                                                                 strict=True)]
    return sum_node(msg("explain.stage-total", stage=stage), parts, "M-STAGE", note=peak.best.name)


def _row_leaf(pricer: StagePricer, category: str, label: Text, value: float, row: Row, lr: LayerRow) -> Quantity:
    r = pricer.r
    w, par, f, d = r.widths, r.par, r.flags, r.dims
    loc = row.local
    sh = pricer.divisors
    local = {"E_d": loc.dense, "E_e": loc.expert}
    if loc.base_frozen and category in ("parameters", "gradients", "optimizer_states"):
        return _peft_leaf(pricer, category, label, value, loc)
    if (loc.frozen or loc.partial) and category in ("parameters", "gradients", "optimizer_states"):
        return _freeze_leaf(pricer, category, label, value, loc)
    if category == "parameters":
        stored = Quantity(msg("explain.stored"), value, "S-LAYER.params", {"β_p": w.p, **local, "sh_p": sh[0],
                                                                           "sh_pe": sh[3]})
        eight = fp8_weight_bytes(loc, w, f, sh)
        if not (f.feat.fp8_on and f.feat.fp8_impl == "te" and loc.fp8 + loc.fp8_expert):  # no FP8 linear here
            return Quantity(label, value, "S-LAYER.params", stored.inputs)
        stored.value = value - eight
        fp8 = Quantity(msg("explain.fp8-weights", fp8=f.feat.fp8), eight, "S-FP8",
                       {"β_8": f.feat.fp8_weight_bytes, "β_p": w.p, "E_8": loc.fp8 + loc.fp8_expert, "sh_p": sh[0],
                        **({"len": f.feat.fp8_amax_history} if f.feat.fp8 == "delayed" else {})})
        return Quantity(label, value, "S-LAYER.params", children=[stored, fp8], op="sum")
    if category == "gradients":
        return Quantity(label, value, "S-LAYER.grads", {"γ": pricer.gamma, "β_g": w.g, **local, "sh_g": sh[1],
                                                         "sh_ge": sh[4]})
    if category == "optimizer_states":
        return Quantity(label, value, "S-LAYER.opt", {"n_os": w.n_os, "β_os": w.os, "β_m": w.m, **local,
                                                       "sh_o": sh[2], "sh_oe": sh[5]})
    if category == "activations":
        if lr.option == "full":
            d_in = par.t if f.slice_full_input else par.sp_div
            return Quantity(label, value, "A-FULL", {"n_j": lr.inflight, "β_r": w.r, "h": d.h, "T": pricer.T,
                                                      "d_in": d_in}, note=msg("explain.full-recompute-keeps"))
        sums = pricer.sums(row.item, lr.option)
        inputs = {"n_j": lr.inflight, "T": pricer.T, "Σ_SP": sums.sp, "sp_div": par.sp_div, "Σ_TP": sums.tp,
                  "t": par.t, "Σ_REP": sums.rep, "Σ_V": sums.v, "v_pad": pricer.vpad, "t_V": pricer.t_v,
                  "R": pricer.R, "Σ_EXP": sums.exp, "Σ_EXPT": sums.expt, "etp": par.etp, "β_c": w.c,
                  "casts": loc.cast if sums.cast else 0}
        feat = f.feat
        fp8 = msg("explain.activations.fp8", fp8=feat.fp8, bytes=feat.fp8_act_bytes) if \
            feat.fp8_on and feat.fp8_impl == "te" and loc.fp8 + loc.fp8_expert else ""
        offload = msg("explain.activations.offload", bytes=fmt_bytes(float(row.cost.offload))) \
            if row.cost.offload else ""
        rebuilt = msg("explain.activations.rebuilt", bytes=fmt_bytes(float(row.cost.rebuilt)),
                      what=zero_memory_said(pricer, row)) if row.cost.rebuilt else ""
        freeze = msg("explain.activations.freeze.frozen") if row.item.grad == "frozen" else \
            msg("explain.activations.freeze.off") if row.item.grad == "off" else ""  # [A-FREEZE]
        return Quantity(label, value, "A-LAYER", inputs, note=msg("explain.activations", option=lr.option, fp8=fp8,
                                                                   offload=offload, rebuilt=rebuilt, freeze=freeze,
                                                                   kinds=kind_notes(row.item.block)))
    return Quantity(label, value, "C-BUF.resident", {"β_c": w.c, **local}, note=msg("explain.weights-kept-gathered"))


def _with_positions(pricer: StagePricer, category: str, leaf: Quantity, row: Row) -> Quantity:
    """The first stage's embedding row with learned positions: its parameter leaf names the elements of E_d, the
    word table [P-EMB] and the position table [P-POS] (the gradient and optimizer leaves use the same E_d)."""
    d, par = pricer.r.dims, pricer.r.par
    if row.item.kind != EMBEDDING or not d.n_pos or category != "parameters":
        return leaf
    pos = float(position_table(d))
    t = 1 if pricer.r.flags.vocab_emb_dp else par.t
    leaf.children = [Quantity(msg("explain.word-embedding"), float(row.local.dense) - pos, "P-EMB",
                              {"v_pad": pricer.vpad, "h": d.h, "t": t}, unit="elements"),
                     Quantity(msg("explain.position-table"), pos, "P-POS", {"n_pos": d.n_pos, "h": d.h},
                              unit="elements")]
    return leaf


def zero_memory_said(pricer: StagePricer, row: Row) -> Text:
    """Which zero-memory feature rebuilds a row's activations: MindSpeed's MoE level, MindSpeed-LLM's MLA."""
    feat = pricer.r.flags.feat
    level = moe_zero_level(feat, row.item)
    parts = [msg("explain.zero.moe", level=level)] if level in ("level0", "level1") else []
    if feat.mla_zero_memory and pricer.r.dims.mla:
        parts.append(msg("explain.zero.mla"))
    return joined(parts) if parts else ""


def _peft_leaf(pricer: StagePricer, category: str, label: Text, value: float, loc: Local) -> Quantity:
    """A PEFT row's static bytes: the frozen (maybe NF4) base and its trainable adapters (P-LORA, P-NF4)."""
    w, sh = pricer.r.widths, pricer.divisors
    adapters = {"E_a": loc.adapters}
    if category == "parameters":
        return Quantity(label, value, "S-LAYER.params.peft", {"β_p": w.p, "β_a": w.a, "β_q": w.q, "E_d": loc.dense,
                                                               **adapters, "E_q": loc.quantized, "E_e": loc.expert,
                                                               "E_qe": loc.quantized_expert, "sh_p": sh[0],
                                                               "sh_pe": sh[3]})
    if category == "gradients":
        return Quantity(label, value, "S-LAYER.grads.peft", {"γ": pricer.gamma, "β_g": w.g, **adapters,
                                                              "sh_g": sh[1]})
    master = 0.0 if w.a >= 4 else w.m
    return Quantity(label, value, "S-LAYER.opt.peft", {"n_os": w.n_os, "β_os": w.os, "β_m": master, **adapters,
                                                        "sh_o": sh[2]})


def _freeze_leaf(pricer: StagePricer, category: str, label: Text, value: float, loc: Local) -> Quantity:
    """A row with frozen weights (all of them, or all but its trainable module groups): the frozen ones at β_pf
    without gradients or optimizer states (S-LAYER.*.freeze, [A-FREEZE])."""
    w, sh = pricer.r.widths, pricer.divisors
    trained = {"E_t": loc.trainable_dense, "E_te": loc.trainable_expert}
    if category == "parameters":
        return Quantity(label, value, "S-LAYER.params.freeze", {"β_pf": w.p_frozen, "β_p": w.p, "E_d": loc.dense,
                                                                 "E_e": loc.expert, **trained, "sh_p": sh[0],
                                                                 "sh_pe": sh[3]})
    if category == "gradients":
        return Quantity(label, value, "S-LAYER.grads.freeze", {"γ": pricer.gamma, "β_g": w.g, **trained,
                                                                "sh_g": sh[1], "sh_ge": sh[4]})
    return Quantity(label, value, "S-LAYER.opt.freeze", {"n_os": w.n_os, "β_os": w.os, "β_m": w.m, **trained,
                                                          "sh_o": sh[2], "sh_oe": sh[5]})


def _stage_leaf(category: str, label: Text, value: float, lr: LayerRow, rows: Sequence[Row], zero: bool) -> Quantity:
    if category == "communication_buffers":
        if not rows:
            return Quantity(label, value, "C-BUF", note=lr.said or lr.note)
        top = max(rows, key=lambda row: row.transient)
        parts = ZERO_BUFFER_PARTS if zero else BUFFER_PARTS
        if top.cost.mc2 and top.cost.parts[0] == top.cost.mc2:  # MC2's op workspace is the layer's SP transient
            parts = ((msg("explain.buffer.mc2"), "C-BUF.mc2"), *parts[1:])
        children = [Quantity(n, float(v), fid) for (n, fid), v in zip(parts, top.parts, strict=True) if v]
        exact = abs(sum(c.value for c in children) - value) <= 1e-9 * max(1.0, value)
        note = lr.said or lr.note
        return Quantity(label, value, "C-BUF", children=children, op="sum" if children and exact else "formula",
                        note=note if exact else msg("explain.children-largest-layer", note=note))
    if lr.said == MASK_NOTE:
        return Quantity(label, value, "W-MASK", note=MASK_NOTE)
    return Quantity(label, value, "W-BWD", note=msg("explain.largest-need", note=lr.said or lr.note) if lr.note else "")
