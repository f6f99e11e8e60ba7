"""Memory of a stage from its form and its rows' costs (docs/model.md#stage-memory, formula M-STAGE):

1. ``chunks.chunk_sums``: per chunk, the row terms summed, the stored activations of one micro-batch A_chunk,
   the backward walk's largest need W [W-BWD], the largest forward working set, the transient buffer [C-BUF]
   and the optimizer-step sums [S-OPT];
2. ``combine``: the stage at its peak replay point (D49) — max over points of Σ_j n_j·A_chunk(j) + W(backward
   chunk), ties to the earliest — or, under PyTorch FSDP2, at its largest instant (``fsdp``, D50–D52); then the
   stage terms (the reserve).

Every function takes numbers or numpy arrays alike: one element for an estimate, one per candidate in the
search, one per table row in the balancer (stacked forms), or a grid of chunk choices (interleaved balancer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any, NamedTuple

import numpy as np

from .. import fsdp
from ..arr import Num, is_array, max_all, where
from ..device.stage_terms import terms_key, terms_keys
from ..result import CATEGORIES
from ..schedules import V_SCHEDULES, StageProfile
from ..stage import Row, StagePricer, kept_with, stage_rows
from . import terms
from .chunks import ChunkSums, chunk_sums, form_sums
from .form import StageForm
from .peak import peak_point
from .terms import StageView, process_groups

INSTANT_CATEGORIES = frozenset({"gradients", "activations", "communication_buffers", "working_overhead"})
STAGE_TENSORS = "stage-tensors"  # the pricer's memo key of a stage's part before its stage terms


class StageMemory(NamedTuple):
    """A stage assembled: its categories, total and optimizer-step peak, and where its peak sits (a NamedTuple:
    every stage of every estimate makes one, and a frozen dataclass takes several times as long to make)."""

    categories: dict[str, Num]
    total: Num
    optimizer_step_peak: Num
    counts: tuple[Num, ...]   # micro-batches in flight per chunk at the peak point
    working: Num
    transient: Num
    groups: Num
    # per STAGE_TERMS entry: its value and what it saw; None for a stage priced as an array element
    # (``assembly.stages``: its layer rows price it again one by one)
    stage_terms: tuple[tuple[Num, StageView], ...] | None = ()
    point: int = -1           # one element: the peak point's index
    working_from: tuple[int, int] = (-1, -1)  # one element: (chunk, walk position), or (-1, V label index)
    transient_from: tuple[int, int] = (-1, -1)  # one element: (chunk, key)
    instant: Any = None       # FSDP2: fsdp.Peak
    host: dict[str, Num] | None = None  # [H-DEVICE] host memory of one device by HOST_KINDS


class Point(NamedTuple):
    """A replay point: per chunk the micro-batches in flight (numbers, or arrays over candidates), the chunk
    whose backward follows, and for which elements it exists (True, or a boolean array in the search)."""

    counts: tuple[Num, ...]
    backward_chunk: int
    valid: Num = True


def profile_points(prof: StageProfile) -> list[Point]:
    return [Point(pt.counts, pt.backward_chunk) for pt in prof.points]


def map_elements(record: Any, fn: Any) -> Any:
    """A copy of a sums record (dataclass of numbers, dicts and tuples of them) with ``fn`` applied to every
    array: the balancer selects table rows or moves them to a grid axis this way."""
    def one(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return fn(x)
        if isinstance(x, dict):
            return {k: one(v) for k, v in x.items()}
        if isinstance(x, tuple):
            return tuple(one(v) for v in x)
        return x
    return replace(record, **{f.name: one(getattr(record, f.name)) for f in fields(record)})


# ------------------------------------------------------------------------------------------ the stage
class Tensors(NamedTuple):
    """A stage before its stage terms: the categories of what its rows and micro-batches hold at its peak point
    (or FSDP2 instant), and what ``_finish`` needs besides. The slack replay prices every stage twice with other
    stage terms (``device.stages``); this part stays."""

    categories: dict[str, Num]
    chunks: Sequence[ChunkSums]
    counts: tuple[Num, ...]
    working: Num
    transient: Num
    where: dict[str, Any]
    held: ChunkTotals  # chunk_totals(pricer, chunks): what _finish adds besides


def combine(pricer: StagePricer, stage: int, chunks: Sequence[ChunkSums], points: Sequence[Any],
            vision: Num = False, memo: dict | None = None) -> StageMemory:
    """A stage from its chunks' sums under the generic rule (not FSDP2)."""
    return _finish(pricer, stage, _combined(pricer, chunks, points, vision, memo))


class _ChunksPart(NamedTuple):
    """What a stage's combination reads of its chunks alone, not of its points: per chunk the work W the peak point
    adds (V schedules' overlap, a frozen vision tower's forward folded in) and where it comes from, the stage's
    transient buffer and where, the rows' categories and the chunks' totals."""

    work: list[Num]
    working_from: list[tuple[int, int]]
    transient: Num
    transient_from: tuple[int, int]
    rows: dict[str, Num]
    held: ChunkTotals
    # for a plan's stages as array elements (``stages``): ``rows``'s values in CATEGORIES order, each chunk's
    # A_chunk and offloaded activations, and what the rows hold at the optimizer step with the temporaries
    vector: tuple[Num, ...]
    act: tuple[Num, ...]
    offload: tuple[Num, ...]
    at_step: Num


def _chunks_part(pricer: StagePricer, chunks: Sequence[ChunkSums], vision: Num) -> _ChunksPart:
    f = pricer.r.flags
    work = [c.work for c in chunks]
    working_from = [(j, c.work_at) for j, c in enumerate(chunks)]
    if f.schedule in V_SCHEDULES:
        # one backward overlaps the other chunk's forward: W = max(W_1, F_0 + W_1, F_1 + W_0) at every point
        options = [work[1], chunks[0].forward + work[1], chunks[1].forward + work[0]]
        v_work = options[0]
        v_from = working_from[1]
        for k in (1, 2):
            if is_array(options[k], v_work):
                v_work = np.maximum(v_work, options[k])
            elif options[k] > v_work:
                v_work, v_from = options[k], (-1, k)
        work = [v_work, v_work]
        working_from = [v_from, v_from]
    if pricer.vision_frozen and vision is not False:
        fwd = pricer.vision_forward_working()
        work = [w + where(vision, fwd, 0.0) for w in work]
    transient, transient_from = _stage_transient(f.comm_buffer_mode, chunks)
    cat = dict.fromkeys(CATEGORIES, 0.0)
    held = chunk_totals(pricer, chunks)
    rows = held.rows
    for term in terms.ROW_TERMS:
        name = term.category
        cat[name] = cat[name] + rows[term.id]
    # _ChunksPart(...) less its Python __new__ (a fresh row book makes one per stage form)
    return tuple.__new__(_ChunksPart, (work, working_from, transient, transient_from, cat, held, tuple(cat.values()),
                                       tuple([c.act for c in chunks]), tuple([c.offload for c in chunks]),
                                       held_at_step(held)))


def chunks_part(pricer: StagePricer, chunks: Sequence[ChunkSums], vision: Num) -> _ChunksPart:
    """The part the chunks decide, kept per pricer for one plan's stages sharing a list of chunk sums
    (``stage_chunks``); not for arrays: the balancer combines a new list per call."""
    if type(vision) is bool and not isinstance(chunks[0].act, np.ndarray):
        key = ("chunks-part", id(chunks), vision)
        got = pricer.memo.get(key)
        if got is None or got[0] is not chunks:  # type: ignore[index]
            got = pricer.memo[key] = (chunks, _chunks_part(pricer, chunks, vision))
        return got[1]  # type: ignore[index,no-any-return]
    return _chunks_part(pricer, chunks, vision)


def _combined(pricer: StagePricer, chunks: Sequence[ChunkSums], points: Sequence[Any], vision: Num,
              memo: dict | None) -> Tensors:
    part = chunks_part(pricer, chunks, vision)
    counts, working, point = peak_point(points, part.act, part.work, memo)
    transient = part.transient
    cat = at_point(part.rows, in_flight(counts, part.act), transient, working)
    return Tensors(cat, chunks, tuple(counts), working, transient,
                   {"point": point, "transient_from": part.transient_from,
                    "working_from": part.working_from[points[point].backward_chunk] if point >= 0 else (-1, -1)},
                   part.held)


def _stage_transient(mode: str, chunks: Sequence[ChunkSums]) -> tuple[Num, tuple[int, int]]:
    if mode == "upstream_sum":
        return _chunk_total(chunks, lambda c: c.transient), (-1, -1)
    best: Num = chunks[0].transient
    at = (0, chunks[0].transient_at)
    for j, c in enumerate(chunks[1:], start=1):
        if is_array(c.transient, best):
            best = np.maximum(best, c.transient)
        elif c.transient > best:
            best, at = c.transient, (j, c.transient_at)
    return best, at


def _chunk_total(chunks: Sequence[ChunkSums], get) -> Num:
    out: Num = 0.0
    for c in chunks:
        out = out + get(c)
    return out


class ChunkTotals(NamedTuple):
    """Sums over a stage's chunks that do not depend on its peak point: per ROW_TERMS id what the rows hold,
    what they hold at the optimizer step (all terms), the optimizer's temporaries, per HOST_TERMS id."""

    rows: dict[str, Num]
    step: Num
    temps: Num
    host: dict[str, Num]


def held_at_step(held: ChunkTotals) -> Num:
    """[S-OPT] what a stage's rows hold at the optimizer step and the optimizer's temporaries: the optimizer-step
    peak less its stage terms' part (``add_stage_terms``), which each caller adds to it."""
    return held.step + held.temps


def chunk_totals(pricer: StagePricer, chunks: Sequence[ChunkSums]) -> ChunkTotals:
    """The chunks' totals, kept per pricer with the chunks they sum: the stages holding the same rows share one
    list of chunk sums (``stage_chunks``), and the slack replay prices each stage twice."""
    key = ("chunk-totals", id(chunks))
    got = pricer.memo.get(key)
    if got is not None and got[0] is chunks:  # type: ignore[index]
        return got[1]  # type: ignore[index]
    step: Num = 0.0
    for term in terms.ROW_TERMS:  # each term summed over the chunks in order, then added (as _chunk_total)
        one: Num = 0.0
        for c in chunks:
            one = one + c.step[term.id]
        step = step + one
    if pricer.r.flags.optimizer_impl == "foreach":
        temps: Num = 0.0
        for c in chunks:
            temps = temps + c.temps
    else:
        temps = max_all([c.temps for c in chunks])
    rows: dict[str, Num] = {}
    for term in terms.ROW_TERMS:
        one = 0.0
        for c in chunks:
            one = one + c.rows[term.id]
        rows[term.id] = one
    host: dict[str, Num] = {}
    for term in terms.HOST_TERMS:
        one = 0.0
        for c in chunks:
            one = one + (c.host or {})[term.id]
        host[term.id] = one
    totals = tuple.__new__(ChunkTotals, (rows, step, temps, host))  # ChunkTotals(...) less its Python __new__
    pricer.memo[key] = (chunks, totals)
    return totals


def in_flight(counts: Sequence[Num], per_chunk: Sequence[Num]) -> Num:
    """Σ_j n_j·x_j: a quantity of one micro-batch per chunk (A_chunk, offloaded activations) times the chunk's
    micro-batches in flight at the peak point, summed chunk by chunk in order (elements: a stage, a candidate)."""
    out: Num = 0.0
    for n, x in zip(counts, per_chunk, strict=True):
        out = out + n * x
    return out


def at_point(rows: dict[str, Num], activations: Num, transient: Num, working: Num) -> dict[str, Num]:
    """[D49] A stage's categories at its peak point: what its rows hold, the activations in flight, the transient
    buffer [C-BUF] and the backward's working set [W-BWD]."""
    cat = dict(rows)
    cat["activations"] = cat["activations"] + activations
    cat["communication_buffers"] = cat["communication_buffers"] + transient
    cat["working_overhead"] = cat["working_overhead"] + working
    return cat


def add_stage_terms(pricer: StagePricer, stage: Any, cat: dict[str, Num],
                    groups: Num) -> tuple[Num, Num, tuple[tuple[Num, StageView], ...]]:
    """The stage terms added to ``cat`` in place, in STAGE_TERMS order, each seeing the categories before it;
    ``stage`` is one stage index or an array of one plan's (``stages``). Returns the total (M-STAGE), the terms'
    part of the optimizer-step peak [S-OPT] and each term's value with what it saw (Explain, the layer rows)."""
    r = pricer.r
    at_step: Num = 0.0
    added = []
    new = tuple.__new__  # StageView(...) less its Python __new__: one per term and stage
    for term in terms.STAGE_TERMS:
        view = new(StageView, (r, stage, dict(cat), groups, pricer))
        value = term.value(view)
        name = term.category
        cat[name] = cat[name] + value
        step = term.at_optimizer_step
        at_step = at_step + (value if step is None else step(view))
        added.append((value, view))
    total: Num = 0.0
    for name in CATEGORIES:
        total = total + cat[name]
    return total, at_step, tuple(added)


def host_of(offloaded: Num, held: ChunkTotals) -> dict[str, Num]:
    """[H-DEVICE] host memory of one device by HOST_KINDS: the offloaded activations in flight at the stage's peak
    point (``in_flight``: pinned buffers of every micro-batch in flight) and the HOST_TERMS summed over its
    chunks."""
    out: dict[str, Num] = dict.fromkeys(terms.HOST_KINDS, 0.0)
    out["activations"] = offloaded
    for term in terms.HOST_TERMS:
        out[term.category] = out[term.category] + held.host[term.id]
    return out


def _finish(pricer: StagePricer, stage: int, tensors: Tensors) -> StageMemory:
    """The stage terms, the total (M-STAGE) and the optimizer-step peak [S-OPT]."""
    cat, chunks = dict(tensors.categories), tensors.chunks
    groups = process_groups(pricer.r, stage, pricer.memo)
    total, at_step, added = add_stage_terms(pricer, stage, cat, groups)
    if isinstance(total, np.ndarray):  # a per-device constant (runtime context, …) gets the stage's shape too
        zeros = np.zeros_like(total)
        cat = {name: value if (value.shape if isinstance(value, np.ndarray) else ()) == total.shape else value + zeros
               for name, value in cat.items()}
    held = tensors.held
    where = tensors.where
    return StageMemory(cat, total, held_at_step(held) + at_step, tensors.counts, tensors.working,
                       tensors.transient, groups, added, where.get("point", -1),
                       where.get("working_from", (-1, -1)), where.get("transient_from", (-1, -1)),
                       where.get("instant"), host_of(in_flight(tensors.counts, [c.offload for c in chunks]), held))


def stage_memory(pricer: StagePricer, stage: int, form: StageForm, points: Sequence[Any],
                 chunks: Sequence[ChunkSums] | None = None, explain: bool = False,
                 rows: Sequence[Row] | None = None) -> StageMemory:
    """A stage: the generic rule, or PyTorch FSDP2's instants (``fsdp.peak_instant``, which walks ``rows``, the
    stage's priced rows: by default the pricer's layout's stage ``stage``). With the form's kept ``chunks``
    (``stage_chunks``: then ``rows`` are the stage's own, if given) the part before the stage terms is kept per
    stage and reused when the stage is priced again at the same points (the slack replay's second pass)."""
    if chunks is None or explain:
        chunks = form_sums(pricer, form) if chunks is None else chunks
        return _finish(pricer, stage, _tensors(pricer, stage, form, points, chunks, explain, rows))
    return _kept_finish(pricer, stage, *stage_tensors(pricer, stage, form, points, chunks, rows))


def stage_tensors(pricer: StagePricer, stage: int, form: StageForm, points: Sequence[Any],
                  chunks: Sequence[ChunkSums], rows: Sequence[Row] | None = None) -> tuple[Tensors, bool]:
    """A stage's part before its stage terms (no Explain; the form's kept ``chunks``), kept per stage in the
    pricer's memo for the same points and chunks (the slack replay prices each stage twice, ``device.stages``),
    and whether it is kept with the rows (``keep``: one plan's numbers), which ``_kept_finish`` reads."""
    key = (STAGE_TENSORS, stage)
    kept = pricer.memo.get(key)
    if kept is not None and kept[0] is points and kept[1] is chunks:  # type: ignore[index]
        return kept[2], kept[3]  # type: ignore[index]
    fsdp2 = pricer.r.flags.fsdp2
    # kept with the rows (``keep``) for one plan's points: arrays or masked points (the search, the balancer) not
    keep = points_key(points) is not None and (fsdp.accumulates(pricer) is not None if fsdp2 else
                                               type(form.vision) is bool)
    tensors = _kept_instants(pricer, stage, form, points, chunks, rows) if keep and fsdp2 else \
        _tensors(pricer, stage, form, points, chunks, False, rows)
    pricer.memo[key] = (points, chunks, tensors, keep)
    return tensors, keep


def unkept_stage(pricer: StagePricer, stage: int, form: StageForm, points: Sequence[Any],
                 chunks: Sequence[ChunkSums]) -> StageMemory:
    """A stage of one plan without the generic rule's kept parts (the pricer's tensors, the combined and the
    finished tables): for a caller that keeps the whole stage under keys that cover theirs
    (``assembly._kept_stage``)."""
    return _finish(pricer, stage, _combined(pricer, chunks, points, form.vision, pricer.memo))


_TERMS_TOKENS: dict[int, tuple[tuple, int]] = {}  # id of a STAGE_TERMS tuple → (the tuple, its number)


def terms_token() -> int:
    """A number for the stage terms in force (``terms.STAGE_TERMS``, by identity: bench_device swaps them), which
    kept parts hold instead of the terms themselves — a result pickles with its pricer's book (the app's worker
    processes send results back), and a term's note may be a lambda."""
    now = terms.STAGE_TERMS
    got = _TERMS_TOKENS.get(id(now))
    if got is None or got[0] is not now:
        got = _TERMS_TOKENS[id(now)] = (now, len(_TERMS_TOKENS) + 1)  # the tuples are held: ids are not reused
    return got[1]


KEPT_FINISHED = 1024  # stages with their stage terms kept per row book (each pass, m and replay adds one per stage)


def _kept_finish(pricer: StagePricer, stage: int, tensors: Tensors, keep: bool) -> StageMemory:
    """``_finish`` of one plan's stage (``keep``: its tensors are kept with the rows, ``_kept_combined`` or
    ``_kept_instants``), kept with the rows under the stage, its tensors, the stage terms (``terms_token``) and
    what they read besides the rows (``device.stage_terms.terms_key``: a replay's band, the
    replayed stages' ratio), with the device terms' notes it leaves in the pricer's memo; arrays are finished
    every time."""
    extra = terms_key(pricer, stage) if keep else None
    if extra is None:
        return _finish(pricer, stage, tensors)
    kept = pricer.shared.setdefault("finished", {})
    key = (stage, id(tensors), extra)
    got = kept.get(key)  # type: ignore[attr-defined]
    notes = ("device", stage)
    token = terms_token()
    if got is None or got[0] is not tensors or got[3] != token:  # the stage terms it was priced with
        if len(kept) >= KEPT_FINISHED:  # type: ignore[arg-type]
            kept.clear()  # type: ignore[attr-defined]
        mem = _finish(pricer, stage, tensors)
        got = kept[key] = (tensors, mem, dict(pricer.memo.get(notes, {})), token)  # type: ignore[index]
    elif got[2]:
        pricer.memo[notes] = dict(got[2])
    else:
        pricer.memo.pop(notes, None)
    return got[1]  # type: ignore[no-any-return]


def finish_stages(pricer: StagePricer, stages: Sequence[int], made: Sequence[Tensors]) -> list[StageMemory]:
    """``_kept_finish`` of one plan's stages ``stages`` (their tensors ``made``, kept with the rows: ``keep``), none
    of them replayed: those kept are found, the others finished at once over the array of their stage indices (as
    pass 1, ``device.stages``, and ``stages.as_arrays`` do): each array operation is the one-stage operation on
    each stage's element, in the same order (float64, as Python's floats). A stage so made holds no stage-term
    views (``StageMemory.stage_terms`` None: its layer rows finish it alone again, ``terms_again``). Where a part
    is not a Python float (a numpy scalar keeps its type one by one), the stages are finished one by one."""
    kept = pricer.shared.setdefault("finished", {})
    token = terms_token()
    memo = pricer.memo
    out: list[Any] = [None] * len(stages)
    todo = []
    for k, (stage, tensors, extra) in enumerate(zip(stages, made, terms_keys(pricer, stages), strict=True)):
        key = (stage, id(tensors), extra)
        got = kept.get(key) if extra is not None else None  # type: ignore[attr-defined]
        if got is not None and got[0] is tensors and got[3] == token:
            if got[2]:
                memo[("device", stage)] = dict(got[2])
            else:
                memo.pop(("device", stage), None)
            out[k] = got[1]
        else:
            todo.append((k, key if extra is not None else None))
    mems = _at_once(pricer, [stages[k] for k, _ in todo], [made[k] for k, _ in todo]) if len(todo) >= AT_ONCE else None
    for n, (k, key) in enumerate(todo):
        stage = stages[k]
        mem = _finish(pricer, stage, made[k]) if mems is None else mems[n]
        if key is not None:
            if len(kept) >= KEPT_FINISHED:  # type: ignore[arg-type]
                kept.clear()  # type: ignore[attr-defined]
            kept[key] = (made[k], mem, dict(memo.get(("device", stage), {})), token)  # type: ignore[index]
        out[k] = mem
    return out


def _at_once(pricer: StagePricer, stages: list[int], made: list[Tensors]) -> list[StageMemory] | None:
    """``_finish`` of each stage of ``stages`` as array elements; None where a part is not a Python float."""
    for t in made:
        if tuple(t.categories) != CATEGORIES or not _FLOATS.issuperset(map(type, t.categories.values())) or \
                type(t.held.step) is not float or type(t.held.temps) is not float:
            return None
    # one table, a column per stage: its categories (CATEGORIES order), what its rows hold at the optimizer step
    table = np.array([(*t.categories.values(), held_at_step(t.held)) for t in made], dtype=np.float64).T
    cat = dict(zip(CATEGORIES, table, strict=False))
    index = np.array(stages)
    groups = process_groups(pricer.r, index, pricer.memo)
    total, at_step, added = add_stage_terms(pricer, index, cat, groups)
    for value, _view in added:  # a term's numpy scalar would keep its type in the one-stage sums
        if isinstance(value, np.generic):
            return None
    opt = (table[-1] + at_step).tolist()
    columns = np.array([cat[name] for name in CATEGORIES]).T.tolist()
    n = len(stages)
    groups_at = groups.tolist() if isinstance(groups, np.ndarray) else [groups] * n
    new = tuple.__new__  # StageMemory(...) less its Python __new__: one per stage
    hosts: dict[tuple, dict] = {}  # host_of per chunks' totals and offloaded bytes (stages sharing both)
    out = []
    for k, (t, total_k) in enumerate(zip(made, total.tolist(), strict=True)):
        where = t.where
        offloaded = in_flight(t.counts, [c.offload for c in t.chunks])
        key = (id(t.held), offloaded)
        host = hosts.get(key)
        if host is None:
            host = hosts[key] = host_of(offloaded, t.held)
        out.append(new(StageMemory, (dict(zip(CATEGORIES, columns[k], strict=True)), total_k, opt[k], t.counts,
                                     t.working, t.transient, groups_at[k], None, where.get("point", -1),
                                     where.get("working_from", (-1, -1)), where.get("transient_from", (-1, -1)),
                                     where.get("instant"), dict(host))))
    return out


_FLOATS = frozenset({float})
AT_ONCE = 4  # fewer stages finish sooner one by one (the array terms' fixed cost, ~50 µs, against ~12 µs a stage)


def terms_again(pricer: StagePricer, stage: int, form: StageForm, points: Sequence[Any],
                chunks: Sequence[ChunkSums]) -> StageMemory:
    """A stage priced as an array element (``stages.as_arrays``, ``finish_stages``) finished alone again, with its
    stage terms' views (its per-layer table, on demand): FSDP2's from its kept instant, else from its chunks."""
    if pricer.r.flags.fsdp2:
        return _finish(pricer, stage, stage_tensors(pricer, stage, form, points, chunks)[0])
    return unkept_stage(pricer, stage, form, points, chunks)


_POINTS_KEYS: dict[int, tuple[list, tuple]] = {}  # id of a points list → (the list, its key): lists are kept per
# in-flight profile (``estimate._points``) and never changed


def points_key(points: Sequence[Any]) -> tuple | None:
    """The values of one plan's replay points (their in-flight counts, integers, and backward chunks) as a key;
    None for arrays or masked points (the search, the balancer)."""
    if type(points) is not list:
        return None
    got = _POINTS_KEYS.get(id(points))
    if got is not None and got[0] is points:
        return got[1]
    if any(pt.valid is not True or any(type(n) is not int for n in pt.counts) for pt in points):
        return None
    key = tuple((pt.counts, pt.backward_chunk) for pt in points)
    if len(_POINTS_KEYS) >= KEPT_COMBINED:
        _POINTS_KEYS.clear()
    _POINTS_KEYS[id(points)] = (points, key)
    return key


KEPT_COMBINED = 256  # stages kept per row book: each micro-batch count the user tries adds at most one per stage


def _kept_combined(pricer: StagePricer, chunks: Sequence[ChunkSums], points: Sequence[Any], vision: Num) -> Tensors:
    """``_combined`` of one plan, kept with the rows (``shared``) under the chunk sums it combines and the points'
    in-flight counts (integers) and backward chunks: it reads nothing else of the plan, so a stage whose in-flight
    points an edit left as they were (the micro-batch count under 1F1B with m ≥ p) is not combined again."""
    values = points_key(points)
    if values is None or type(vision) is not bool:  # arrays or masked points: the search, the balancer
        return _combined(pricer, chunks, points, vision, pricer.memo)
    return kept_with(pricer.shared.setdefault("combined", {}), (id(chunks), vision, values), chunks,
                     lambda: _combined(pricer, chunks, points, vision, pricer.memo), KEPT_COMBINED)


def _kept_instants(pricer: StagePricer, stage: int, form: StageForm, points: Sequence[Any],
                   chunks: Sequence[ChunkSums], rows: Sequence[Row] | None) -> Tensors:
    """``_tensors`` of one FSDP2 plan's stage (its own rows, the form's kept chunk sums), kept with the rows
    (``shared``) under the stage, its points' in-flight counts and backward chunks and ``fsdp.accumulates``: its
    largest instant reads nothing else of the plan beyond what the rows read, so an edit of m that leaves the
    stage's points, undo and re-estimates find it (the peak's name holds the stage's layer indices: per stage)."""
    values = points_key(points)
    acc = fsdp.accumulates(pricer)
    if values is None or acc is None:  # arrays or masked points: the search, the balancer
        return _tensors(pricer, stage, form, points, chunks, False, rows)
    return kept_with(pricer.shared.setdefault("fsdp-tensors", {}), (stage, acc, values), chunks,
                     lambda: _tensors(pricer, stage, form, points, chunks, False, rows), KEPT_COMBINED)


def _tensors(pricer: StagePricer, stage: int, form: StageForm, points: Sequence[Any], chunks: Sequence[ChunkSums],
             explain: bool, rows: Sequence[Row] | None) -> Tensors:
    if not pricer.r.flags.fsdp2:
        return _kept_combined(pricer, chunks, points, form.vision)

    rows = stage_rows(pricer, stage) if rows is None else rows
    peak = fsdp.peak_instant(pricer, list(rows), [c.act for c in chunks], points, explain)
    cat = dict.fromkeys(CATEGORIES, 0.0)
    held = chunk_totals(pricer, chunks)
    for term in terms.ROW_TERMS:
        if term.category not in INSTANT_CATEGORIES:
            cat[term.category] = cat[term.category] + held.rows[term.id]
    best = peak.best
    cat["gradients"], cat["activations"] = best.gradients, best.activations
    cat["communication_buffers"], cat["working_overhead"] = best.comm, best.working
    return Tensors(cat, chunks, tuple(peak.counts), best.working, best.comm, {"instant": peak}, held)


__all__ = ["CATEGORIES", "INSTANT_CATEGORIES", "ChunkSums", "Point", "StageMemory", "chunk_sums", "combine",
           "held_at_step", "peak_point", "profile_points", "stage_memory", "stage_tensors"]
