"""Layer partition generator (docs/model.md#layout): which layers each (stage, chunk) slot holds, where the embedding,
output head and MTP modules sit, and which recompute option every layer gets.

Slots are indexed in model order q (docs/model.md#positions-and-slots); ``Layout.slot(stage, chunk)`` maps back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from .errors import LayoutError
from .layer_states import (
    LayerLists,
    freeze_inputs,
    grad_option,
    graph_start,
    is_int,
    layer_grad,
    saving_counts,
    zero_level,
)
from .messages import Message, msg
from .strategy import V_SCHEDULES, RecomputePlan
from .warnings import EstimateWarning

if TYPE_CHECKING:
    from .resolve import Resolved

EMBEDDING, OUTPUT, MTP, NOOP, VISION = "embedding", "output", "mtp", "noop", "vision"


@dataclass(frozen=True)
class Item:
    """One position of a slot. ``block`` is the body kind that prices it (an MTP module's block kind)."""

    kind: str            # embedding | output | mtp | noop | vision | dense | moe | lin_dense | lin_moe
    block: str           # pricing kind of the transformer block ('' for embedding/output)
    index: int = -1      # model-order index over body + MTP layers (E, O, noop: -1)
    option: str = "none"  # none | selective | comm | both | full
    group: int = 1       # uniform recompute group size this layer belongs to (1: no group)
    keeps_input: bool = True  # full recompute: whether this layer stores its input (first of a group)
    # activation offload of this layer: None as the plan says (every layer), False none, True the plan's groups,
    # a tuple those of the plan's groups (strategy.offload_layers)
    offload: bool | tuple[str, ...] | None = None
    zero: str | None = None      # --moe-zero-memory level of this layer (None: the plan's level)
    grad: str | None = None      # [A-FREEZE] None: trains; frozen: frozen weights, backward passes; off: no graph


@dataclass(frozen=True)
class Slot:
    q: int
    stage: int
    chunk: int
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Layout:
    p: int
    vp: int
    schedule: str
    slots: tuple[Slot, ...]            # by q
    counts: tuple[int, ...]            # c_q by q (positions from the partition)
    warnings: tuple[EstimateWarning, ...] = field(default=())

    def slot(self, stage: int, chunk: int) -> Slot:
        return self.slots[slot_index(self.schedule, self.p, self.vp, stage, chunk)]

    def stage_slots(self, stage: int) -> tuple[Slot, ...]:
        return tuple(self.slot(stage, j) for j in range(self.vp))

    def chunk_counts(self) -> tuple[tuple[int, ...], ...]:
        """[stage][chunk] -> number of body/MTP/noop positions (what users call 'layers per chunk')."""
        return self._chunk_counts

    @cached_property
    def chunk_layers(self) -> tuple[tuple[int, ...], ...]:
        """[stage][chunk] -> decoder and MTP layers: the positions less those the embedding, the output, no-op
        layers and the vision tower take (what a user counts as a stage's layers)."""
        return tuple(tuple(sum(1 for it in self.slot(i, j).items if it.index >= 0) for j in range(self.vp))
                     for i in range(self.p))

    @cached_property
    def _chunk_counts(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(self.counts[slot_index(self.schedule, self.p, self.vp, i, j)]
                           for j in range(self.vp)) for i in range(self.p))


def slot_index(schedule: str, p: int, vp: int, stage: int, chunk: int) -> int:
    """Model-order slot q of (chunk, stage) (docs/model.md#positions-and-slots): V schedules run down the stages and
    back up."""
    if schedule in V_SCHEDULES:
        return stage if chunk == 0 else 2 * p - 1 - stage
    return chunk * p + stage


def slot_position(schedule: str, p: int, vp: int, q: int) -> tuple[int, int]:
    """(stage, chunk) of model-order slot q."""
    if schedule in V_SCHEDULES:
        return (q, 0) if q < p else (2 * p - 1 - q, 1)
    return q % p, q // p


# --------------------------------------------------------------------------------------------- counts

def balanced_counts(l_eff: int, n_slots: int) -> list[int]:
    """No offset (DECISION D27): one extra layer to the first ``rem`` slots in the order
    n-2 down to 1, then n-1, then 0 (later slots hold fewer micro-batches; the last carries the head)."""
    base, rem = divmod(l_eff, n_slots)
    counts = [base] * n_slots
    order = [*range(n_slots - 2, 0, -1), n_slots - 1, 0] if n_slots > 1 else [0]
    for q in order[:rem]:
        counts[q] += 1
    return counts


def _offset_counts(offset: object, l_eff: int, p: int, vp: int, schedule: str, rule: str,
                   warnings: list[EstimateWarning]) -> list[int]:
    n = p * vp
    base = l_eff // n
    rem = l_eff - base * n
    grid: list[list[int]]  # [chunk][stage]
    if is_int(offset):
        o = int(offset)  # type: ignore[arg-type]
        if o != rem:
            raise LayoutError("E-OFF-SCALAR", msg("E-OFF-SCALAR", offset=o, remainder=rem, slots=n, positions=l_eff,
                                                  fits=fitting_offset(rem, p, vp)))
        grid = [[o] * p for _ in range(vp)]
    elif isinstance(offset, Sequence) and not isinstance(offset, str) and offset and all(
            isinstance(x, Sequence) and not isinstance(x, str) for x in offset):
        rows = [list(r) for r in offset]  # type: ignore[union-attr]
        if len(rows) != vp or any(len(r) != p for r in rows) or not all(is_int(x) for r in rows for x in r):
            if not all(is_int(x) for r in rows for x in r):
                raise LayoutError("E-OFF-TYPE", msg("E-OFF-TYPE.offset", p=p, vp=vp, offset=offset))
            raise _offset_length(f"{len(rows)}×{[len(r) for r in rows]}", p, vp)
        total = sum(sum(r) for r in rows)
        if total != rem:
            raise LayoutError("E-OFF-SUM", msg("E-OFF-SUM", total=total, remainder=rem, positions=l_eff, p=p, vp=vp,
                                               base=base, fits=fitting_offset(rem, p, vp)))
        grid = rows
    elif isinstance(offset, Sequence) and not isinstance(offset, str):
        values = list(offset)  # type: ignore[arg-type]
        if not all(is_int(x) for x in values):
            raise LayoutError("E-OFF-TYPE", msg("E-OFF-TYPE.offset", p=p, vp=vp, offset=offset))
        if len(values) != p:
            raise _offset_length(str(len(values)), p, vp)
        total = sum(values)
        if total != rem:
            raise LayoutError("E-OFF-SUM", msg("E-OFF-SUM", total=total, remainder=rem, positions=l_eff, p=p, vp=vp,
                                               base=base, fits=fitting_offset(rem, p, vp)))
        if vp > 1 and rule == "split":
            grid = [[0] * p for _ in range(vp)]
            for i, o in enumerate(values):
                share = int(o / vp)  # trunc toward zero, as upstream
                for j in range(vp):
                    grid[j][i] = share
                grid[vp - 1][i] += o - vp * share
        else:
            grid = [list(values) for _ in range(vp)]
    else:
        raise LayoutError("E-OFF-TYPE", msg("E-OFF-TYPE.offset", p=p, vp=vp, offset=offset))

    wanted = [0] * n
    for j in range(vp):
        for i in range(p):
            wanted[slot_index(schedule, p, vp, i, j)] = base + grid[j][i]
    broadcast_sum = sum(wanted) - base * n
    if broadcast_sum != rem:
        warnings.append(EstimateWarning(
            "W-OFF-BROADCAST", msg("W-OFF-BROADCAST", offset=offset, vp=vp, total=broadcast_sum, remainder=rem)))
    counts = []
    remaining = l_eff
    for q in range(n):
        c = max(0, min(remaining, wanted[q]))
        counts.append(c)
        remaining -= c
    if remaining > 0:  # a broadcast that sums short: the rest stays on the last slot, as filled in order
        counts[-1] += remaining
    for q, c in enumerate(counts):
        if c < 1:
            i, j = slot_position(schedule, p, vp, q)
            raise LayoutError("E-OFF-MIN", msg("E-OFF-MIN", stage=i, chunk=j, layers=c, base=base, offset=grid[j][i]))
    return counts


def fitting_offset(rem: int, p: int, vp: int) -> list[int] | list[list[int]]:
    """An offset that sums to the remainder ``rem``: one extra layer on each of the first ``rem`` slots (a list of
    ``p`` per stage, or ``vp`` such lists); what a refusal suggests."""
    rows = [[1 if j * p + i < rem else 0 for i in range(p)] for j in range(vp)]
    return rows[0] if vp == 1 else rows


def _offset_length(entries: str, p: int, vp: int) -> LayoutError:
    if vp > 1:
        return LayoutError("E-OFF-LEN", msg("E-OFF-LEN.offset-chunks", entries=entries, p=p, vp=vp))
    return LayoutError("E-OFF-LEN", msg("E-OFF-LEN.offset", entries=entries, p=p))


def _partition_counts(partition: object, l_eff: int, p: int, vp: int, schedule: str,
                      describe: Message) -> list[int]:
    if isinstance(partition, Sequence) and partition and all(isinstance(x, Sequence) for x in partition):
        rows = [list(r) for r in partition]  # type: ignore[union-attr]
        if len(rows) != vp or any(len(r) != p for r in rows):
            raise LayoutError("E-OFF-LEN", msg("E-OFF-LEN.rows", rows=len(rows), vp=vp, p=p))
    elif isinstance(partition, Sequence):
        values = list(partition)  # type: ignore[arg-type]
        if len(values) != p * vp and len(values) != p:
            raise LayoutError("E-OFF-LEN", msg("E-OFF-LEN.list-chunks", n=len(values), p=p, slots=p * vp) if vp > 1
                              else msg("E-OFF-LEN.list", n=len(values), p=p))
        if vp > 1 and len(values) == p:
            raise LayoutError("E-OFF-LEN", msg("E-OFF-LEN.list-vpp", p=p, vp=vp))
        rows = [values[j * p:(j + 1) * p] for j in range(vp)]
    else:
        raise LayoutError("E-OFF-TYPE", msg("E-OFF-TYPE.list", p=p, partition=partition))
    if not all(is_int(x) and x >= 0 for r in rows for x in r):
        raise LayoutError("E-OFF-TYPE", msg("E-OFF-TYPE.list-entries", partition=partition))
    total = sum(sum(r) for r in rows)
    if total != l_eff:
        raise LayoutError("E-PART-SUM", msg("E-PART-SUM", total=total, positions=l_eff, describe=describe))
    counts = [0] * (p * vp)
    for j in range(vp):
        for i in range(p):
            counts[slot_index(schedule, p, vp, i, j)] = rows[j][i]
    for q, c in enumerate(counts):
        if c < 1:
            i, j = slot_position(schedule, p, vp, q)
            raise LayoutError("E-OFF-MIN", msg("E-OFF-MIN.list", stage=i, chunk=j, layers=c))
    return counts


# ------------------------------------------------------------------------------------- recompute
@dataclass
class _SlotRecompute:
    full: int = 0
    sel: int = 0
    comm: int = 0


def _counts_grid(name: str, counts: object, slot_layers: list[list[int]], p: int, vp: int, strict: bool,
                 warnings: list[EstimateWarning]) -> list[list[int]] | None:
    """Per [chunk][stage] recompute counts from a bool, int, list[p] or list[vp][p]
    (docs/model.md#recompute-assignment)."""
    if counts is None or counts is False:
        return None
    if counts is True:
        return [[slot_layers[j][i] for i in range(p)] for j in range(vp)]
    grid = [[0] * p for _ in range(vp)]

    def clip(i: int, j: int, r: int) -> int:
        c = slot_layers[j][i]
        if r > c:
            if strict:
                raise LayoutError("E-REC-RANGE", msg("E-REC-RANGE", stage=i, chunk=j, count=r, layers=c))
            warnings.append(EstimateWarning("W-REC-CLIP", msg("W-REC-CLIP", name=name, stage=i, chunk=j, count=r,
                                                              layers=c)))
            return c
        return r

    if is_int(counts):
        for j in range(vp):
            for i in range(p):
                grid[j][i] = min(int(counts), slot_layers[j][i])  # type: ignore[call-overload]
        return grid
    if not isinstance(counts, Sequence) or isinstance(counts, str):
        raise LayoutError("E-REC-LEN", msg("E-REC-LEN", name=name, counts=counts))
    values = list(counts)
    nested = bool(values) and all(isinstance(v, Sequence) and not isinstance(v, str) for v in values)
    if nested:
        if len(values) != vp or any(len(v) != p for v in values):
            raise LayoutError("E-REC-LEN", msg("E-REC-LEN.list", n=len(values), p=p, vp=vp))
        for j in range(vp):
            for i in range(p):
                grid[j][i] = clip(i, j, _as_count(values[j][i], name))
        return grid
    if len(values) != p:
        raise LayoutError("E-REC-LEN", msg("E-REC-LEN.list", n=len(values), p=p, vp=vp))
    for i in range(p):
        r = _as_count(values[i], name)
        stage_total = sum(slot_layers[j][i] for j in range(vp))
        if r > stage_total:
            if strict:
                raise LayoutError("E-REC-RANGE", msg("E-REC-RANGE.stage", stage=i, count=r,
                                                     layers=stage_total))
            warnings.append(EstimateWarning("W-REC-CLIP", msg("W-REC-CLIP.stage", name=name, stage=i, count=r,
                                                              layers=stage_total)))
            r = stage_total
        # DECISION D40: dealt one layer at a time round-robin over chunks, skipping full chunks.
        j = 0
        while r > 0:
            if grid[j][i] < slot_layers[j][i]:
                grid[j][i] += 1
                r -= 1
            j = (j + 1) % vp
    return grid


def _as_count(value: object, name: str) -> int:
    if value is True:
        return 10**9
    if value is False or value is None:
        return 0
    if not is_int(value) or int(value) < 0:  # type: ignore[call-overload]
        raise LayoutError("E-REC-LEN", msg("E-REC-LEN.entries", name=name, value=value))
    return int(value)  # type: ignore[call-overload]


# --------------------------------------------------------------------------------------- builder
@dataclass(frozen=True)
class LayoutInputs:
    body_kinds: tuple[str, ...]
    mtp_kinds: tuple[str, ...]
    p: int
    vp: int
    schedule: str
    offset: object = None
    partition: object = None
    offset_rule: str = "broadcast"
    mtp_in_offset: bool = False
    emb_out_in_offset: bool = False
    noop_layers: tuple[int, ...] = ()
    recompute: RecomputePlan = field(default_factory=RecomputePlan)
    strict: bool = False
    vision_layers: int = 0
    vision_partition: tuple[int, ...] | None = None
    offload_counts: object = None        # which layers offload (strategy.offload_counts; None: every layer)
    # or, per group, which model indices offload it (strategy.offload_layers)
    zero_memory_layers: int | None = None  # level1 layers of --moe-zero-memory level1 per stage (None: every one)
    trainable_layers: frozenset[int] | None = None  # freeze fine-tuning: the body layers that train (None: all)
    embedding_trains: bool = True      # whether the embedding's weights train (a graph from the first layer on)
    checkpoint_trainable_only: bool = False  # activation checkpointing skips layers without trainable weights


def layout_inputs(r: Resolved) -> LayoutInputs:
    """What the layout of a resolved plan depends on."""
    st, model = r.strategy, r.model
    vision = model.vision
    return LayoutInputs(
        body_kinds=model.body_kinds(), mtp_kinds=model.mtp_kinds(), p=st.pp, vp=st.vpp, schedule=r.flags.schedule,
        offset=st.offset, partition=st.partition, offset_rule=st.offset_rule, mtp_in_offset=st.mtp_in_offset,
        emb_out_in_offset=st.emb_out_in_offset, noop_layers=st.noop_layers, recompute=st.recompute,
        strict=r.options.strict, vision_layers=vision.num_layers if vision else 0,
        vision_partition=st.vision_partition, **dict(zip(("offload_counts", "zero_memory_layers"),
                                                          saving_counts(r), strict=True)),
        **freeze_inputs(r))


def _types(value: object) -> object:
    """A type signature: True == 1 and hash alike, but mean "every layer" and "one layer"."""
    if isinstance(value, (tuple, list)):
        return tuple(_types(v) for v in value)
    return type(value).__name__


def build_layout(inp: LayoutInputs) -> Layout:
    """The layout of ``inp`` (cached: layouts are immutable and searches revisit them)."""
    plan = inp.recompute
    signature = tuple(_types(x) for x in (inp.offset, inp.partition, plan.full_counts, plan.sel_counts,
                                          plan.comm_counts, inp.offload_counts))
    return _build_layout(inp, signature)


@lru_cache(maxsize=512)
def _build_layout(inp: LayoutInputs, signature: object) -> Layout:
    del signature  # part of the cache key only
    p, vp, schedule = inp.p, inp.vp, inp.schedule
    warnings: list[EstimateWarning] = []
    if schedule in V_SCHEDULES and vp != 2:
        raise LayoutError("E-ZBV-VP", msg("E-ZBV-VP", vp=vp))
    n_lay, n_mtp, n_noop = len(inp.body_kinds), len(inp.mtp_kinds), len(inp.noop_layers)
    l_eff = n_lay + n_noop + (n_mtp if inp.mtp_in_offset else 0) + (2 if inp.emb_out_in_offset else 0)
    n_slots = p * vp
    if n_slots > l_eff:
        raise LayoutError("E-VPP-LAYERS", msg("E-VPP-LAYERS", p=p, vp=vp, positions=l_eff))
    if inp.partition is not None:
        describe = msg("layout.positions", n=n_lay)
        if inp.mtp_in_offset and n_mtp:
            describe = msg("layout.positions.mtp", before=describe, n=n_mtp)
        if n_noop:
            describe = msg("layout.positions.noop", before=describe, n=n_noop)
        if inp.emb_out_in_offset:
            describe = msg("layout.positions.embedding", before=describe)
        counts = _partition_counts(inp.partition, l_eff, p, vp, schedule, describe)
    elif inp.offset is not None:
        counts = _offset_counts(inp.offset, l_eff, p, vp, schedule, inp.offset_rule, warnings)
        base = l_eff // n_slots
        per_stage = [sum(counts[slot_index(schedule, p, vp, i, j)] for j in range(vp)) for i in range(p)]
        for i in range(p - 1):
            if per_stage[i] < base * vp and any(per_stage[k] > base * vp for k in range(i + 1, p)):
                warnings.append(EstimateWarning(
                    "W-OFF-NEG-LAST", msg("W-OFF-NEG-LAST", stage=i, layers=per_stage[i], base=base * vp)))
                break
    else:
        counts = balanced_counts(l_eff, n_slots)

    # positions in model order
    noop = set(inp.noop_layers)
    positions: list[tuple[str, str, int]] = []  # (kind, block, model index)
    if inp.emb_out_in_offset:
        positions.append((EMBEDDING, "", -1))
    body_iter = iter(enumerate(inp.body_kinds))
    for k in range(n_lay + n_noop):
        if k in noop:
            positions.append((NOOP, "", -1))
        else:
            idx, kind = next(body_iter)
            positions.append((kind, kind, idx))
    if inp.mtp_in_offset:  # with the output also a position, MTP comes before it (Megatron's layout E t… m L)
        positions.extend((MTP, kind, n_lay + k) for k, kind in enumerate(inp.mtp_kinds))
    if inp.emb_out_in_offset:
        positions.append((OUTPUT, "", -1))

    slot_items: list[list[tuple[str, str, int]]] = []
    cursor = 0
    for q in range(n_slots):
        slot_items.append(positions[cursor:cursor + counts[q]])
        cursor += counts[q]

    if not inp.emb_out_in_offset:
        first = next(q for q in range(n_slots) if slot_items[q])
        if schedule in V_SCHEDULES:
            first = 0
        slot_items[first].insert(0, (EMBEDDING, "", -1))
        last_body = max((q for q in range(n_slots) if any(it[2] >= 0 and it[0] != MTP for it in slot_items[q])),
                        default=n_slots - 1)
        if schedule in V_SCHEDULES:
            last_body = n_slots - 1
        pos = max((k for k, it in enumerate(slot_items[last_body]) if it[2] >= 0 and it[0] != MTP),
                  default=len(slot_items[last_body]) - 1)
        slot_items[last_body].insert(pos + 1, (OUTPUT, "", -1))
        out_slot = last_body
    else:
        out_slot = next(q for q in range(n_slots) if any(it[0] == OUTPUT for it in slot_items[q]))
    if not inp.mtp_in_offset and n_mtp:
        slot_items[out_slot].extend((MTP, kind, n_lay + k) for k, kind in enumerate(inp.mtp_kinds))

    if inp.trainable_layers and max(inp.trainable_layers) >= n_lay + n_mtp:
        raise LayoutError("E-TRAINABLE-LAYERS", msg("E-TRAINABLE-LAYERS", layer=max(inp.trainable_layers),
                                                     top=n_lay + n_mtp - 1))
    # per [chunk][stage] count of recomputable (body + MTP) layers
    rec_layers = [[0] * p for _ in range(vp)]
    for q in range(n_slots):
        i, j = slot_position(schedule, p, vp, q)
        rec_layers[j][i] = sum(1 for it in slot_items[q] if it[2] >= 0)
    options = _assign_recompute(inp, rec_layers, slot_items, warnings)
    savings = _assign_savings(inp, rec_layers, slot_items, warnings)

    # vision tower positions (a separate module with its own partition, before the embedding)
    if inp.vision_layers:
        vis = list(inp.vision_partition) if inp.vision_partition is not None else [inp.vision_layers] + \
            [0] * (p - 1)
        if len(vis) != p or sum(vis) != inp.vision_layers:
            raise LayoutError("E-PART-SUM", msg("E-PART-SUM.vision", vision=vis, p=p,
                                                layers=inp.vision_layers))
        for i, c in enumerate(vis):
            q = slot_index(schedule, p, vp, i, 0)
            slot_items[q][0:0] = [(VISION, VISION, -1)] * c

    slots = []
    start = graph_start(inp.trainable_layers, inp.embedding_trains)
    for q in range(n_slots):
        i, j = slot_position(schedule, p, vp, q)
        items = []
        for kind, block, idx in slot_items[q]:
            if idx >= 0:
                option, group, keeps = options[idx]
                grad = layer_grad(idx, inp.trainable_layers, start)
                items.append(Item(kind, block, idx, grad_option(option, grad, inp.checkpoint_trainable_only), group,
                                  keeps, *savings.get(idx, (None, None)), grad))
            else:
                items.append(Item(kind, block, idx))
        slots.append(Slot(q, i, j, tuple(items)))
    return Layout(p, vp, schedule, tuple(slots), tuple(counts), tuple(warnings))


def _assign_savings(inp: LayoutInputs, rec_layers: list[list[int]], slot_items: list[list[tuple[str, str, int]]],
                    warnings: list[EstimateWarning]) -> dict[int, tuple[bool | tuple[str, ...] | None, str | None]]:
    """Per model index, whether the layer offloads its activations ([A-OFFLOAD]: the first n layers of each slot
    from ``offload_counts``, as Megatron's --cpu-offloading-num-layers; [A-OFFLOAD-LAYERS]: the groups whose
    layer lists name it) and its --moe-zero-memory level ([A-ZERO-MEMORY], ``zero_level``). Empty when every
    layer follows the plan."""
    if inp.offload_counts is None and inp.zero_memory_layers is None:
        return {}
    p, vp = inp.p, inp.vp
    lists = inp.offload_counts if isinstance(inp.offload_counts, LayerLists) else None
    if lists is not None:
        top = len(inp.body_kinds) + len(inp.mtp_kinds) - 1
        if lists.top > top:
            raise LayoutError("E-OFFLOAD-LAYERS", msg("E-OFFLOAD-LAYERS.range", layer=lists.top, top=top))
    grid: list[list[int]] | None = None
    if inp.offload_counts is False:
        grid = [[0] * p for _ in range(vp)]
    elif inp.offload_counts is not None and lists is None:
        grid = _counts_grid("offload_counts", inp.offload_counts, rec_layers, p, vp, inp.strict, warnings)
    out: dict[int, tuple[bool | tuple[str, ...] | None, str | None]] = {}
    for q, items in enumerate(slot_items):
        i, j = slot_position(inp.schedule, p, vp, q)
        k = 0
        for _kind, _block, idx in items:
            if idx < 0:
                continue
            offload = lists.of(idx) if lists is not None else None if grid is None else k < grid[j][i]
            out[idx] = (offload, zero_level(k, j, vp, inp.zero_memory_layers))
            k += 1
    return out


def _assign_recompute(inp: LayoutInputs, rec_layers: list[list[int]],
                      slot_items: list[list[tuple[str, str, int]]],
                      warnings: list[EstimateWarning]) -> dict[int, tuple[str, int, bool]]:
    """Option per model index (docs/model.md#recompute-assignment): ranges > per-stage counts > default_mode."""
    plan, p, vp, schedule = inp.recompute, inp.p, inp.vp, inp.schedule
    full = _counts_grid("recompute", plan.full_counts, rec_layers, p, vp, inp.strict, warnings)
    sel = _counts_grid("select_recompute", plan.sel_counts, rec_layers, p, vp, inp.strict, warnings)
    comm = _counts_grid("select_comm_recompute", plan.comm_counts, rec_layers, p, vp, inp.strict, warnings)
    out: dict[int, tuple[str, int, bool]] = {}
    for q, items in enumerate(slot_items):
        i, j = slot_position(schedule, p, vp, q)
        k = 0
        for _kind, _block, idx in items:
            if idx < 0:
                continue
            if full is not None and k < full[j][i]:
                option = "full"
            else:
                s = k < sel[j][i] if sel is not None else plan.default_mode == "selective"
                c = k < comm[j][i] if comm is not None else False
                if full is None and plan.default_mode == "full":
                    option = "full"
                else:
                    option = "both" if s and c else "selective" if s else "comm" if c else "none"
            out[idx] = (option, 1, True)
            k += 1
    n_total = len(inp.body_kinds) + len(inp.mtp_kinds)
    covered: dict[int, int] = {}
    for r, rng in enumerate(plan.ranges):
        last = rng.first + rng.count - 1
        if rng.first < 0 or rng.count < 1 or last >= n_total:
            raise LayoutError("E-RANGE-OOB", msg("E-RANGE-OOB", first=rng.first, last=last, top=n_total - 1))
        for idx in range(rng.first, last + 1):
            if idx in covered and not plan.allow_overlap:
                other = plan.ranges[covered[idx]]
                raise LayoutError("E-RANGE-OVERLAP", msg("E-RANGE-OVERLAP", other_first=other.first,
                                                         other_last=other.first + other.count - 1, first=rng.first,
                                                         last=last, layer=idx))
            covered[idx] = r
            out[idx] = (rng.option, 1, True)
    if plan.uniform_group > 1:
        # Groups of N from each slot start, recomputed as units: the first keeps the group input.
        for items in slot_items:
            indices = [idx for _k, _b, idx in items if idx >= 0 and out[idx][0] == "full"]
            for start in range(0, len(indices), plan.uniform_group):
                group = indices[start:start + plan.uniform_group]
                for n, idx in enumerate(group):
                    out[idx] = ("full", len(group), n == 0)
    return out
