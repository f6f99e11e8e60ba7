"""Chunk sums (docs/model.md#stage-memory, step 1 of M-STAGE): per chunk of a stage form, the row terms summed, the
stored activations of one micro-batch A_chunk, the backward walk's largest need W [W-BWD], the largest forward
working set, the transient buffer [C-BUF] and the optimizer-step sums [S-OPT] — numbers for one plan, arrays over
the elements of stacked forms (the balancer's table rows) or of a search's candidates. ``memory`` combines them
into a stage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import add, mul

import numpy as np

from ..arr import Num, is_array, max_all, maximum
from ..layout import EMBEDDING, OUTPUT
from ..stage import StagePricer
from ..static import forloop_temporaries
from . import terms
from .form import Coefs, StageForm


@dataclass(frozen=True, slots=True)
class ChunkSums:
    """What the stage combination needs from one chunk (numbers or arrays over the elements)."""

    rows: dict[str, Num]   # ROW_TERMS id → Σ over the chunk's rows
    step: dict[str, Num]   # ROW_TERMS id → Σ of what the rows hold at the optimizer step
    act: Num               # A_chunk: stored activations of one micro-batch
    work: Num              # W: the largest need of the chunk's backward walk (≥ 0)
    forward: Num           # the largest forward working set (V schedules overlap it with a backward)
    transient: Num         # the largest transient buffer (D14), or upstream's per-layer sum
    temps: Num             # S-OPT: the optimizer's temporaries (foreach: Σ; for-loop: the largest tensor's)
    work_at: int = -1      # one element: the winning walk position (-1: none above 0)
    transient_at: int = -1  # one element: the key of the largest transient
    offload: Num = 0.0     # [A-OFFLOAD] activations of one micro-batch kept in host memory
    host: dict[str, Num] | None = None  # HOST_TERMS id → Σ over the chunk's rows (host memory)


def _row_values(pricer: StagePricer, form: StageForm) -> list[tuple[Num, ...]]:
    """Per key (kept with the rows): first the numbers ``chunk_sums`` adds up column by column (``_linear``: the
    ROW_TERMS values, what they hold at the optimizer step, the HOST_TERMS values, A1 and the offloaded
    activations), then upstream's buffer sum, the for-loop optimizer's largest tensor, whether every number
    ``chunk_sums`` reads of the key is a Python number (``_scalar_sums``) and the RowCost."""
    f = pricer.r.flags
    divisor = pricer.r.par.os if f.sharding_mode not in ("none",) else 1
    out = []
    kept = pricer.book.costs.values  # per RowCost object (held in the entry), shared with the row costs
    for item, with_head in form.keys:
        cost = pricer.cost(item, with_head)
        key = id(cost)
        got = kept.get(key)
        if got is None:
            _st, local = cost.static, cost.local
            upstream = max_all([cost.parts[0], cost.parts[1], cost.parts[3]]) + cost.parts[2]
            largest = None if local.frozen else forloop_temporaries(local.largest, divisor)
            numbers = [*[t.value(cost, pricer) for t in terms.ROW_TERMS],
                       *[(t.at_optimizer_step or t.value)(cost, pricer) for t in terms.ROW_TERMS],
                       *[t.value(cost, pricer) for t in terms.HOST_TERMS], cost.act, cost.offload, upstream, largest]
            scalar = _NUMBERS.issuperset(map(type, (*numbers, cost.rc, cost.act_none, cost.gw, cost.gf,
                                                    cost.transient, _st.opt_temporaries)))
            got = kept[key] = tuple([*numbers, scalar, cost])
        out.append(got)  # type: ignore[arg-type]
    return out


_NUMBERS = frozenset({float, int, type(None)})  # Python numbers (None: a frozen row's for-loop largest tensor)


def _linear(pairs: Coefs, values: Sequence[tuple[Num, ...]], n: int) -> list[Num]:
    """The first ``n`` numbers of each key's values, each summed as ``_lin`` sums one column (Σ count·value over
    the pairs in order, from 0.0): every column in one pass over the pairs."""
    out: list[Num] = [0.0] * n
    for k, c in pairs:
        # o + c·x for each of out's n columns (map stops with out), the loop in C: ~20 % less than a comprehension
        out = list(map(add, out, map(mul, repeat(c), values[k])))
    return out


def _lin(pairs: Coefs, values: Sequence[Num]) -> Num:
    out: Num = 0.0
    for k, c in pairs:
        out = out + c * values[k]
    return out


def _present(count: Num, value: Num) -> Num:
    """``value`` where the key is present (stacked forms: count > 0), −∞ elsewhere."""
    return np.where(count > 0, value, -np.inf) if isinstance(count, np.ndarray) else value


def chunk_sums(pricer: StagePricer, form: StageForm, j: int) -> ChunkSums:
    """Chunk ``j`` of ``form``: one plan's numbers through ``_scalar_sums``, arrays (a search's candidates, stacked
    forms) through ``_array_sums`` — the same sums in the same order."""
    return form_sums(pricer, form, (j,))[0]


def form_sums(pricer: StagePricer, form: StageForm, chunks: Sequence[int] | None = None) -> list[ChunkSums]:
    """The chunk sums of ``chunks`` of ``form`` (default: all), its keys' values read once."""
    values = _row_values(pricer, form)
    js = range(form.vp) if chunks is None else chunks
    scalar = type(form.vision) is bool  # a form of one layout (stacked forms' counts are arrays)
    if scalar:
        for v in values:
            if not v[-2]:
                scalar = False
                break
    make = _scalar_sums if scalar else _array_sums
    return [make(pricer, form, j, values) for j in js]


def _array_sums(pricer: StagePricer, form: StageForm, j: int, values: Sequence[tuple[Num, ...]]) -> ChunkSums:
    f = pricer.r.flags
    costs = [v[-1] for v in values]
    pairs = form.counts[j]
    by_term, at_step, host, act, offload, upstream = _column_sums(pairs, values)
    # [W-BWD] the walk's positions, last row first; the first strict maximum names the position
    work: Num = 0.0
    work_at = -1
    walk = form.walks[j]
    if walk:
        rc, none, gw, acts = [c.rc for c in costs], [c.act_none for c in costs], [c.gw for c in costs], \
            [c.act for c in costs]
    for t, term in enumerate(walk):
        need = (_lin(term.rc, rc) if term.rc else _lin(term.group_none, none)) + _lin(term.gw, gw) - \
            _lin(term.after, acts)
        if term.valid is not True:
            need = np.where(term.valid, need, -np.inf)
        if isinstance(need, np.ndarray) or isinstance(work, np.ndarray):  # inline: once per walk position
            work = np.maximum(work, need)
        elif need > work:
            work, work_at = need, t
    forward: Num = 0.0
    for k, n in pairs:
        gf = costs[k].gf
        if isinstance(n, np.ndarray) or isinstance(forward, np.ndarray) or isinstance(gf, np.ndarray):
            forward = np.maximum(forward, _present(n, gf))
        else:  # arr.maximum of numbers, inline
            forward = forward if forward >= gf else gf
    if f.dataloader_mask:
        work, work_at = _with_mask(pricer, form, pairs, act, forward, work, work_at)
    # [C-BUF] one stage maximum (D14), or upstream's per-layer sum
    transient: Num = 0.0
    transient_at = -1
    if f.comm_buffer_mode == "upstream_sum":
        transient = _lin(pairs, [v[upstream] for v in values])
    else:
        for k, n in pairs:
            value = _present(n, costs[k].transient)
            if isinstance(value, np.ndarray) or isinstance(transient, np.ndarray):
                transient = np.maximum(transient, value)
            elif transient_at < 0 or value > transient:
                transient, transient_at = value, k
    if f.optimizer_impl == "foreach":
        temps = _lin(pairs, [c.static.opt_temporaries for c in costs])
    elif f.optimizer_impl == "forloop":
        temps = 0.0
        for k, n in pairs:
            if values[k][upstream + 1] is not None:
                temps = maximum(temps, _present(n, values[k][upstream + 1]))
    else:
        temps = 0.0
    return ChunkSums(rows=by_term, step=at_step, act=act, work=work, forward=forward, transient=transient,
                     temps=temps, work_at=work_at, transient_at=transient_at,
                     offload=offload, host=host)


def _column_sums(pairs: Coefs, values: Sequence[tuple[Num, ...]]) -> tuple[dict, dict, dict, Num, Num, int]:
    """A chunk's linear sums (``_linear``) of its keys' values, named: per row term its value and its part at the
    optimizer step, per host term its value, the activations A_chunk and the offloaded bytes; then the index in a
    key's values of upstream's buffer sum (the for-loop optimizer's largest tensor next). The terms are read at
    each call: an extension adds its own (``assembly.terms``)."""
    width = len(terms.ROW_TERMS)
    upstream = 2 * width + len(terms.HOST_TERMS) + 2
    sums = _linear(pairs, values, upstream)
    by_term = {t.id: sums[i] for i, t in enumerate(terms.ROW_TERMS)}
    at_step = {t.id: sums[width + i] for i, t in enumerate(terms.ROW_TERMS)}
    host = {t.id: sums[2 * width + i] for i, t in enumerate(terms.HOST_TERMS)}
    return by_term, at_step, host, sums[upstream - 2], sums[upstream - 1], upstream


def _scalar_sums(pricer: StagePricer, form: StageForm, j: int, values: Sequence[tuple[Num, ...]]) -> ChunkSums:
    """``_array_sums`` of one plan's numbers (counts, coefficients and values Python numbers): the same operations
    in the same order — each sum Σ c·x over the pairs from 0.0, the first strict maximum — without the tests for
    arrays, the helpers' calls and the per-key lists they read (tests/test_scalar_sums.py compares the two)."""
    f = pricer.r.flags
    pairs = form.counts[j]
    by_term, at_step, host, act, offload, upstream = _column_sums(pairs, values)
    # [W-BWD] need(ℓ) = (Rc or the group's A(·, none)) + Gw − Σ A1 walked, as _lin sums each part
    work: Num = 0.0
    work_at = -1
    for t, term in enumerate(form.walks[j]):
        part: Num = 0.0
        if term.rc:
            for k, c in term.rc:
                part = part + c * values[k][-1].rc
        else:
            for k, c in term.group_none:
                part = part + c * values[k][-1].act_none
        gw: Num = 0.0
        for k, c in term.gw:
            gw = gw + c * values[k][-1].gw
        walked: Num = 0.0
        for k, c in term.after:
            walked = walked + c * values[k][-1].act
        need = part + gw - walked
        if need > work:
            work, work_at = need, t
    forward: Num = 0.0
    for k, _n in pairs:
        gf = values[k][-1].gf
        forward = forward if forward >= gf else gf
    if f.dataloader_mask:
        work, work_at = _with_mask(pricer, form, pairs, act, forward, work, work_at)
    transient: Num = 0.0
    transient_at = -1
    if f.comm_buffer_mode == "upstream_sum":
        for k, c in pairs:
            transient = transient + c * values[k][upstream]
    else:
        for k, _n in pairs:
            value = values[k][-1].transient
            if transient_at < 0 or value > transient:
                transient, transient_at = value, k
    temps: Num = 0.0
    if f.optimizer_impl == "foreach":
        for k, c in pairs:
            temps = temps + c * values[k][-1].static.opt_temporaries
    elif f.optimizer_impl == "forloop":
        for k, _n in pairs:
            largest = values[k][upstream + 1]
            if largest is not None:
                temps = temps if temps >= largest else largest
    # positional, in field order: the frozen dataclass's __init__ takes ~1 µs longer by keyword
    return ChunkSums(by_term, at_step, act, work, forward, transient, temps, work_at, transient_at, offload, host)


MASK_AT = -2  # ChunkSums.work_at: the dataloader's mask [W-MASK] sets the chunk's working overhead


def _with_mask(pricer: StagePricer, form: StageForm, pairs: Coefs, act: Num, forward: Num, work: Num,
               work_at: int) -> tuple[Num, int]:
    """[W-MASK] A chunk holding the embedding or the output layer (where Megatron-LM's ``get_batch`` runs) holds
    the micro-batch's mask through its forward — at most its largest forward working set beside it, the chunk's
    activations of that micro-batch stored (counted at the point) — and, while the fetch slices it for context
    parallelism, the whole mask beside the slice before any of them is: W = max(W, F + M, M_fetch − A_chunk)."""
    ends = [n for k, n in pairs if form.keys[k][0].kind in (EMBEDDING, OUTPUT)]
    if not ends:
        return work, work_at
    kept, fetch = pricer.dataloader_mask()
    during = maximum(forward + kept, fetch - act)
    held = [n > 0 for n in ends if isinstance(n, np.ndarray)]
    if held:  # stacked forms: the elements whose chunk holds one of them
        during = np.where(np.logical_or.reduce(held), during, -np.inf) if len(held) == len(ends) else during
    if is_array(during, work):
        return np.maximum(work, during), work_at
    return (during, MASK_AT) if during > work else (work, work_at)


__all__ = ["MASK_AT", "ChunkSums", "chunk_sums", "form_sums"]
