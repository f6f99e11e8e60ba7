"""The individual tensors behind a stage's row totals: the saved activation slots of a layer (one tensor per slot
of the slot table, docs/model.md#slot-table, at the row's degrees) and the weight tensors of a layer (one per matrix).
The allocator model needs sizes, not sums: a 512 MiB tensor and 512 tensors of 1 MiB fragment memory differently."""

from __future__ import annotations

from dataclasses import dataclass

from ..activations import ClassSums, option_switches, torchtitan_op_keep
from ..layout import EMBEDDING, MTP, NOOP, OUTPUT
from ..stage import Row, StagePricer
from ..stage_entries import EMBEDDING_COPY


@dataclass(frozen=True)
class SlotTensor:
    id: str
    bytes: float       # one micro-batch
    kept: bool         # saved for backward under the row's recompute option (else freed in forward)
    matmul: bool       # the output of a matmul (a gradient of its size flows back through a weight)


def _slot_bytes(pricer: StagePricer, row: Row, cls: str, per_token: float, gathered: bool) -> float:
    if cls == "gsp":
        cls = "rep" if gathered else "sp"
    sums = ClassSums(**{cls: per_token})
    return float(pricer.combine(sums, row.item))


def slot_tensors(pricer: StagePricer, row: Row) -> list[SlotTensor]:
    """The activation tensors a row's forward produces, in forward order, and which of them its recompute
    option keeps (the kept ones sum to the row's stored activations A1)."""
    item = row.item
    if item.kind in (NOOP, EMBEDDING_COPY, "vision_extras", "vision"):
        return []
    acts = pricer.acts
    key = pricer.act_key(item)
    slots = acts.slots(key)
    option = item.option
    gathered = acts.gathered("none" if option == "full" else option)
    if option == "full":
        keep: set[str] = {slots[0].id} if (item.keeps_input and slots) else set()
    elif option in ("selective", "both") and acts.f.rule == "torchtitan_op" and item.kind not in (EMBEDDING, OUTPUT):
        keep = set(torchtitan_op_keep(slots, compiled=acts.f.feat.compile_model))
    else:
        off = option_switches(option, acts.sel) if item.kind not in (EMBEDDING, OUTPUT) else frozenset()
        keep = {s.id for s in slots if not (s.op_only or s.switches & off)}
    out = []
    for slot in slots:
        size = _slot_bytes(pricer, row, slot.cls, slot.bytes, gathered)
        if option == "full" and slot is slots[0]:
            size = float(row.act) if item.keeps_input else size
        out.append(SlotTensor(slot.id, size, slot.id in keep, bool(slot.matmul_out)))
    return out


def weight_tensors(pricer: StagePricer, row: Row) -> list[float]:
    """Local elements of each weight tensor of a row (after TP/EP, before any sharding), summing to the row's
    local elements. Dense attention and FFN blocks are split per matrix; other kinds by their largest tensor."""
    d, par = pricer.r.dims, pricer.r.par
    local = row.local
    total = float(local.total)
    if total <= 0:
        return []
    kind = row.item.block if row.item.kind == MTP else row.item.kind
    t = float(par.t)
    if kind in ("dense", "moe") and not d.mla:
        attn = [d.h * d.q_w / t, d.h * d.k_w / t, d.h * d.v_w / t, d.o_w * d.h / t]
        if kind == "dense":
            ffn = [d.h * d.hff / t] * (d.g + 1)
        else:
            experts = d.n_exp / float(par.ep)
            ffn = [experts * d.h * d.hff_exp / float(par.etp)] * (d.g + 1)  # grouped [E, h, f] tensors
            if d.hff_sh:
                ffn += [d.h * d.hff_sh / t] * (d.g + 1)
            ffn.append(float(d.h * d.n_exp))  # router
        mats = [x for x in attn + ffn if x > 0]
        rest = total - sum(mats)
        if rest >= -1e-6 * total:
            return mats + ([rest] if rest > 0 else [])
    if row.item.kind == OUTPUT:
        head = total - d.h
        return [x for x in (head, float(d.h)) if x > 0]
    largest = float(local.largest) if float(local.largest) > 0 else total
    out = []
    left = total
    while left > 0:
        out.append(min(largest, left))
        left -= out[-1]
    return out


__all__ = ["SlotTensor", "slot_tensors", "weight_tensors"]
