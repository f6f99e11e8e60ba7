"""The structure of a stage, apart from its numbers (docs/model.md#stage-assembly): which distinct row costs
each chunk holds and how often, and the positions of each chunk's backward walk [W-BWD] as linear combinations
of those costs. A form depends on the layout only (``stage_plan`` builds a layout's forms once, one object for
the stages holding the same rows); every number that depends on the degrees stays in the ``RowCost`` objects a
pricer makes for the form's keys, so one form serves every plan and candidate with that layout, and — stacked
with ``stack_forms`` — every table row of the balancer.

A count or coefficient is a number, or (stacked forms) a numpy array over the table rows; the assembler treats
both alike.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arr import Num
from ..layout import VISION, Item, Layout
from ..messages import Text, msg
from ..stage import Row, cost_key
from ..stage_entries import Entry, stage_entries

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
    row: int = -1       # position of ℓ among the stage's entries (labels; -1 for stacked forms)


@dataclass(frozen=True, slots=True, eq=False)
class StageForm:
    """A stage's structure: its distinct row costs as keys ((item, with_head) whose ``StagePricer.cost`` they
    are), per chunk j ``counts[j]`` = (key, count) and ``walks[j]`` its backward-walk positions (visit order: last
    row first)."""

    keys: tuple[tuple[Item, bool], ...]
    counts: tuple[Coefs, ...]
    walks: tuple[tuple[WalkTerm, ...], ...]
    vision: Num = False                     # holds a vision row (a frozen tower's forward working set)
    kinds: frozenset[str] = frozenset()     # row kinds present

    @property
    def vp(self) -> int:
        return len(self.counts)


def row_label(row: Row | Entry) -> Text:
    item = row.item
    if item.index is not None and item.index >= 0:
        return msg("explain.row-layer", kind=item.kind, index=item.index, option=item.option)
    return item.kind


def _in_group(item: Item) -> bool:
    return item.option == "full" and item.group > 1


def build_form(entries: Sequence[Entry | Row], vp: int) -> StageForm:
    """The form of a stage's rows (model order, the copies of docs/model.md#stage-rows included)."""
    keys: list[tuple[Item, bool]] = []
    index: dict[tuple, int] = {}
    key_of = []
    for e in entries:
        ck = cost_key(e.item, e.with_head)
        k = index.get(ck)
        if k is None:
            k = index[ck] = len(keys)
            keys.append((e.item, e.with_head))
        key_of.append(k)
    grouped = [_in_group(e.item) for e in entries]
    counts = []
    walks = []
    for j in range(vp):
        mine = [n for n, e in enumerate(entries) if e.chunk == j]
        tally: dict[int, int] = {}
        for n in mine:
            tally[key_of[n]] = tally.get(key_of[n], 0) + 1
        counts.append(tuple(tally.items()))
        walks.append(_walk(entries, mine, key_of, grouped))
    kinds = frozenset(e.item.kind for e in entries)
    return StageForm(tuple(keys), tuple(counts), tuple(walks), VISION in kinds, kinds)


def _walk(entries: Sequence[Entry | Row], mine: list[int], key_of: list[int], grouped: list[bool]
          ) -> tuple[WalkTerm, ...]:
    """The walk's positions, last row first. Inside a run of equal rows outside uniform groups, need only falls
    as the walk goes back (Rc and Gw stay, the walked activations grow), so only the run's last row is kept."""
    terms = []
    after: dict[int, int] = {}
    later = -1
    for n in reversed(mine):
        k = key_of[n]
        if grouped[n]:
            item = entries[n].item
            members: dict[int, int] = {}
            for m in mine:
                other = entries[m].item
                if grouped[m] and other.group == item.group and 0 <= other.index <= item.index and \
                        other.index > item.index - item.group:
                    members[key_of[m]] = members.get(key_of[m], 0) + 1
            terms.append(WalkTerm((), tuple(members.items()), ((k, 1),), tuple(after.items()), True, n))
        elif later < 0 or key_of[later] != k:
            terms.append(WalkTerm(((k, 1),), (), ((k, 1),), tuple(after.items()), True, n))
        after[k] = after.get(k, 0) + 1
        later = n
    return tuple(terms)


def form_signature(entries: Sequence[Entry | Row]) -> tuple:
    """Rows equal in everything a form reads: chunk, cost key, and — in uniform groups — the layer index."""
    return tuple((e.chunk, cost_key(e.item, e.with_head), e.item.index if _in_group(e.item) else 0)
                 for e in entries)


StagePlan = tuple[tuple[StageForm, tuple[Entry, ...]], ...]
_PLANS: dict[tuple[int, bool], tuple[Any, StagePlan]] = {}


def stage_plan(layout: Layout, tie: bool) -> StagePlan:
    """Per stage of a layout: its form — one object for all the stages holding the same rows — and its entries
    (in the form's row order: walk positions and labels index them). Built once per layout: every plan and
    candidate with that layout prices only numbers."""
    key = (id(layout), tie)
    got = _PLANS.get(key)
    if got is not None and got[0]() is layout:
        return got[1]
    forms: dict[tuple, StageForm] = {}
    out = []
    for i in range(layout.p):
        entries = tuple(stage_entries(layout, i, tie))
        signature = form_signature(entries)
        form = forms.get(signature)
        if form is None:
            form = forms[signature] = build_form(entries, layout.vp)
        out.append((form, entries))
    plan = tuple(out)
    if len(_PLANS) > 256:  # layouts come and go with the search's groups; keep the table small
        _PLANS.clear()
    _PLANS[key] = (weakref.ref(layout), plan)
    return plan


def stack_forms(forms: Sequence[StageForm]) -> StageForm:
    """One form whose counts and coefficients are arrays over ``forms`` (the balancer's table rows): the union
    of their keys, a missing count or coefficient 0, a missing walk position invalid."""
    vp = forms[0].vp
    keys: list[tuple[Item, bool]] = []
    index: dict[tuple, int] = {}
    for form in forms:
        for item, with_head in form.keys:
            ck = cost_key(item, with_head)
            if ck not in index:
                index[ck] = len(keys)
                keys.append((item, with_head))
    e = len(forms)
    remap = [[index[cost_key(*key)] for key in form.keys] for form in forms]

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
    return StageForm(tuple(keys), tuple(counts), tuple(walks), np.array([bool(form.vision) for form in forms]),
                     frozenset().union(*(form.kinds for form in forms)))

