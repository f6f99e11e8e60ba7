"""The rows a pipeline stage holds, apart from their numbers (docs/model.md#stage-rows): the layout's items in
model order and the synthetic copies a stage carries (a tied table's head, an MTP module's embedding copy, a vision
tower's extras). ``stage.StagePricer`` prices them; ``stage.stage_rows`` pairs them with their costs."""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

from .layout import EMBEDDING, MTP, OUTPUT, VISION, Item, Layout

EMBEDDING_COPY = "embedding_copy"


class Entry(NamedTuple):
    """A row of a stage apart from its numbers: one layout item (or a synthetic copy of the embedding), its chunk,
    and whether an output row carries the head (a tied table whose embedding sits on the stage does not, D56)."""

    item: Item
    chunk: int
    with_head: bool = True


_ENTRIES: dict[tuple[int, bool], tuple[Any, tuple]] = {}  # (id of a layout, tie) → (a weak reference to it, entries)


def layout_entries(layout: Layout, tie: bool) -> tuple[tuple[Entry, ...], ...]:
    """``stage_entries`` of a layout's every stage, once per layout (held weakly): a tp edit keeps the layout."""
    got = _ENTRIES.get((id(layout), tie))
    if got is None or got[0]() is not layout:
        if len(_ENTRIES) > 256:
            _ENTRIES.clear()
        got = _ENTRIES[id(layout), tie] = (weakref.ref(layout),
                                           tuple(tuple(stage_entries(layout, i, tie)) for i in range(layout.p)))
    return got[1]


def stage_entries(layout: Layout, stage: int, tie: bool) -> list[Entry]:
    """The rows a stage holds in model order, with the copies of docs/model.md#stage-rows: a tied table whose E
    sits elsewhere makes O carry a full copy of the head (D56); MTP modules on a stage without E (or the tied
    table) carry an embedding copy; the first stage with a vision tower carries its patch embedding and merger."""
    slots = layout.stage_slots(stage)
    kinds = {it.kind for s in slots for it in s.items}
    has_e, has_o, has_mtp = EMBEDDING in kinds, OUTPUT in kinds, MTP in kinds
    with_head = not (tie and has_e)
    out = [Entry(item, slot.chunk, with_head) for slot in slots for item in slot.items]
    if has_mtp and not has_e and not (tie and has_o):
        mtp_chunk = next(s.chunk for s in slots if any(it.kind == MTP for it in s.items))
        out.append(Entry(Item(EMBEDDING_COPY, ""), mtp_chunk))
    if VISION in kinds and stage == next(i for i in range(layout.p) if any(
            it.kind == VISION for s in layout.stage_slots(i) for it in s.items)):
        out.insert(0, Entry(Item("vision_extras", ""), 0))
    return out


__all__ = ["EMBEDDING_COPY", "Entry", "layout_entries", "stage_entries"]
