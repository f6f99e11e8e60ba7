"""The structure of a stage, apart from its numbers (docs/model.md#stage-assembly): which distinct row costs
each chunk holds and how often, and the positions of each chunk's backward walk [W-BWD] as linear combinations
of those costs. A form is built once per stage (and shared by the stages holding the same rows); every number
that depends on the degrees stays in the ``RowCost`` objects, so one form serves one plan, every candidate of a
search group, and — stacked with ``stack_forms`` — every table row of the balancer.

A count or coefficient is a number, or (stacked forms) a numpy array over the table rows; the assembler treats
both alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..arr import Num
from ..layout import VISION, Item
from ..stage import Row, RowCost

Coefs = tuple[tuple[int, Num], ...]  # (key, coefficient) pairs


@dataclass(frozen=True, slots=True, eq=False)
class WalkTerm:
    """One position ℓ of a chunk's backward walk: need(ℓ) = Rc(ℓ) + Gw(ℓ) − Σ A1 of the rows after ℓ.
    Rc is the row's own ``rc``, or (a uniform full-recompute group, recomputed as a unit) Σ A(·, none) of the
    group's members up to ℓ; each part is Σ coefficient·number over the form's keys."""

    rc: Coefs           # on RowCost.rc
    group_none: Coefs   # on RowCost.act_none (uniform-group members)
    gw: Coefs           # on RowCost.gw
    after: Coefs        # on RowCost.act (the rows already walked)
    valid: Num = True   # stacked forms: which table rows have this position
    row: int = -1       # index of ℓ in ``StageForm.rows`` (labels; -1 for stacked forms)


@dataclass(frozen=True, slots=True, eq=False)
class StageForm:
    """A stage's structure: per chunk j, ``counts[j]`` = (key, count) of the distinct costs it holds and
    ``walks[j]`` its backward-walk positions (visit order: last row first)."""

    keys: tuple[RowCost, ...]
    items: tuple[Item, ...]                 # a representative item per key (kind, block, option)
    counts: tuple[Coefs, ...]
    walks: tuple[tuple[WalkTerm, ...], ...]
    rows: tuple[Row, ...] = ()              # the stage's rows in model order (scalar forms)
    vision: Num = False                     # holds a vision row (a frozen tower's forward working set)

    @property
    def vp(self) -> int:
        return len(self.counts)


def row_label(row: Row) -> str:
    item = row.item
    if item.index is not None and item.index >= 0:
        return f"{item.kind} layer {item.index} ({item.option})"
    return item.kind


def _in_group(item: Item) -> bool:
    return item.option == "full" and item.group > 1


def build_form(rows: Sequence[Row], vp: int) -> StageForm:
    """The form of a stage's rows (model order, the copies of docs/model.md#stage-rows included)."""
    keys: list[RowCost] = []
    items: list[Item] = []
    index: dict[int, int] = {}
    key_of = []
    for row in rows:
        k = index.get(id(row.cost))
        if k is None:
            k = index[id(row.cost)] = len(keys)
            keys.append(row.cost)
            items.append(row.item)
        key_of.append(k)
    grouped = [_in_group(row.item) for row in rows]
    counts = []
    walks = []
    for j in range(vp):
        mine = [n for n, row in enumerate(rows) if row.chunk == j]
        tally: dict[int, int] = {}
        for n in mine:
            tally[key_of[n]] = tally.get(key_of[n], 0) + 1
        counts.append(tuple(tally.items()))
        walks.append(_walk(rows, mine, key_of, grouped))
    return StageForm(tuple(keys), tuple(items), tuple(counts), tuple(walks), tuple(rows),
                     any(row.item.kind == VISION for row in rows))


def _walk(rows: Sequence[Row], mine: list[int], key_of: list[int], grouped: list[bool]) -> tuple[WalkTerm, ...]:
    """The walk's positions, last row first. Inside a run of equal rows outside uniform groups, need only falls
    as the walk goes back (Rc and Gw stay, the walked activations grow), so only the run's last row is kept."""
    terms = []
    after: dict[int, int] = {}
    later = -1
    for n in reversed(mine):
        k = key_of[n]
        if grouped[n]:
            item = rows[n].item
            members: dict[int, int] = {}
            for m in mine:
                other = rows[m].item
                if grouped[m] and other.group == item.group and 0 <= other.index <= item.index and \
                        other.index > item.index - item.group:
                    members[key_of[m]] = members.get(key_of[m], 0) + 1
            terms.append(WalkTerm((), tuple(members.items()), ((k, 1),), tuple(after.items()), True, n))
        elif later < 0 or key_of[later] != k:
            terms.append(WalkTerm(((k, 1),), (), ((k, 1),), tuple(after.items()), True, n))
        after[k] = after.get(k, 0) + 1
        later = n
    return tuple(terms)


def stack_forms(forms: Sequence[StageForm]) -> StageForm:
    """One form whose counts and coefficients are arrays over ``forms`` (the balancer's table rows): the union
    of their keys, a missing count or coefficient 0, a missing walk position invalid."""
    vp = forms[0].vp
    keys: list[RowCost] = []
    items: list[Item] = []
    index: dict[int, int] = {}
    for form in forms:
        for cost, item in zip(form.keys, form.items, strict=True):
            if id(cost) not in index:
                index[id(cost)] = len(keys)
                keys.append(cost)
                items.append(item)
    e = len(forms)
    remap = [[index[id(cost)] for cost in form.keys] for form in forms]

    def dense(pairs_per_form: Sequence[Coefs | None]) -> Coefs:
        table = np.zeros((len(keys), e))
        for f, pairs in enumerate(pairs_per_form):
            for k, c in pairs or ():
                table[remap[f][k], f] = c
        return tuple((k, table[k]) for k in range(len(keys)) if table[k].any())

    counts, walks = [], []
    for j in range(vp):
        counts.append(dense([form.counts[j] for form in forms]))
        depth = max(len(form.walks[j]) for form in forms)
        terms = []
        for t in range(depth):
            at = [form.walks[j][t] if t < len(form.walks[j]) else None for form in forms]
            valid = np.array([term is not None for term in at])
            terms.append(WalkTerm(*(dense([getattr(term, name) if term else None for term in at])
                                    for name in ("rc", "group_none", "gw", "after")), valid, -1))
        walks.append(tuple(terms))
    return StageForm(tuple(keys), tuple(items), tuple(counts), tuple(walks), (),
                     np.array([bool(form.vision) for form in forms]))


def form_signature(rows: Sequence[Row]) -> tuple:
    """Rows equal in everything a form reads: chunk, cost, and — in uniform groups — the layer index."""
    return tuple((row.chunk, id(row.cost), row.item.group, row.item.option == "full",
                  row.item.index if _in_group(row.item) else 0) for row in rows)
