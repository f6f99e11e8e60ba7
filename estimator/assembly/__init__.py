"""The stage assembler: memory (and, through ``steptime``, time) of a pipeline stage, assembled once for every
caller — the estimate (one element), the search (one element per candidate), the balancer (one per table row,
or a grid of chunk choices) and PyTorch FSDP2 plans (instants instead of the peak point).

* ``form``: a stage's structure — the distinct row costs per chunk with their counts, its backward walk;
* ``chunks``: a chunk's sums (its rows' terms, A_chunk, the backward walk's W, the transient buffer);
* ``memory``: chunk sums → the stage at its peak replay point (or FSDP2 instant) → the stage terms;
* ``peak``: the peak replay point (D49) for one plan's points, the search's and the balancer's arrays;
* ``stages``: one plan's stages at once as array elements (no allocator replay: ``price_plan_stages``);
* ``terms``: the memory terms as data (``ROW_TERMS``, ``STAGE_TERMS``) — where a new term goes;
* ``report``: the per-layer table and the Explain tree of one element (labels only; the numbers come from
  ``memory``).

Adding a memory term (docs/model.md#adding-a-memory-term):

1. held by every row for the whole step (weights, gradients, states, a buffer kept between passes): if it is
   part of an existing per-row quantity, change ``stage.StagePricer``/``static`` where that quantity is priced;
   else add a ``RowCost`` field priced in ``StagePricer.cost`` and one ``RowTerm`` in ``terms.ROW_TERMS``
   naming its category. It then reaches the stage categories, the per-layer table, the search, the balancer
   and — unless its category is priced by FSDP2's instants (``RowTerm.instant``) — FSDP2 plans.
2. held once per device and stage (runtime context, library workspaces, communication-library buffers,
   allocator slack): one ``StageTerm`` in ``terms.STAGE_TERMS`` with its formula id, category, value, its part
   of the optimizer-step peak and its Explain inputs. It reads the assembled stage (``StageView``; its ``stage``
   may be an array of one plan's stage indices, ``stages``) and
   reaches every path, FSDP2 included, and shows as one synthetic row of the per-layer table.
3. stored activations of one micro-batch: ``StagePricer.activation`` (they are multiplied by the micro-batches
   in flight, walked by the backward, replayed by FSDP2's instants and the timeline).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ..messages import Text, english, message_of
from ..result import StageResult, stage_result
from ..stage import StagePricer, stage_rows
from . import memory, stages
from .chunks import form_sums
from .form import StageForm, stage_plan
from .memory import ChunkSums, Point, StageMemory, chunk_sums, points_key, profile_points, stage_memory, terms_token
from .report import explain_tree, layer_rows, point_label
from .terms import ROW_TERMS, STAGE_TERMS, RowTerm, StageTerm, StageView, process_groups


def stage_form(pricer: StagePricer, stage: int) -> StageForm:
    """The form of a stage (one object for every stage of the layout holding the same rows)."""
    return stage_plan(pricer.layout, pricer.r.dims.tie)[stage][0]


def stage_chunks(pricer: StagePricer, form: StageForm) -> list[ChunkSums]:
    """The chunk sums of a form, for every stage holding it (kept with the pricer's rows, ``shared``, with the
    form they belong to: they read the rows and the form alone)."""
    key = ("chunk-sums", id(form))
    got = pricer.shared.get(key)
    if got is None or got[0] is not form:
        got = pricer.shared[key] = (form, form_sums(pricer, form))
    return got[1]  # type: ignore[index]


def price_stage(pricer: StagePricer, stage: int, points: list[Point], explain: bool = False,
                keep: bool = False) -> StageResult:
    """One stage as a StageResult: numbers for one plan (with labels, Explain on request), or arrays over the
    search's candidates (points then carry the validity mask of their micro-batch count). ``keep``: no stage term
    reads the micro-batch count (``device.stages`` says when: no allocator replay), so the stage is kept with the
    rows (``_kept_stage``)."""
    form = stage_form(pricer, stage)
    fsdp2 = pricer.r.flags.fsdp2
    rows = stage_rows(pricer, stage) if (fsdp2 or explain) else None
    values = points_key(points) if keep and not explain and not fsdp2 else None
    if values is not None:
        mem, device = _kept_stage(pricer, stage, form, points, values)
    else:
        mem = stage_memory(pricer, stage, form, points, stage_chunks(pricer, form), explain, rows)
        device = pricer.memo.get(("device", stage), {})
    point, text = (mem.instant.best.name, english(mem.instant.best.name)) if mem.instant is not None else \
        _peak_point(points, mem)
    source = partial(_layer_rows, pricer, stage, form, mem, points)
    tree = explain_tree(pricer, stage, rows, mem, source(), point) if explain else None
    return _result(pricer, stage, form, mem, source, point, text, tree, device)


def _result(pricer: StagePricer, stage: int, form: StageForm, mem: StageMemory, source: Any, point: Any, text: str,
            tree: Any, device: dict) -> StageResult:
    """The StageResult of an assembled stage: its numbers, its peak point's label, its layer rows (``source``,
    on demand) and Explain tree, the device terms' notes."""
    return stage_result(index=stage, layer_source=source, bytes_by_category=mem.categories, total=mem.total,
                        peak_vector=tuple(mem.counts), peak_instant=text, peak_said=message_of(point),
                        optimizer_step_peak=mem.optimizer_step_peak, layer_counts=pricer.layout.chunk_counts()[stage],
                        layers_per_chunk=pricer.layout.chunk_layers[stage], kinds=form.kinds, explain=tree,
                        host_bytes=mem.host or {}, device=dict(device))


def price_plan_stages(pricer: StagePricer, points: Sequence[list[Point]]) -> tuple[StageResult, ...] | None:
    """Every stage of one plan whose stage terms read no micro-batch count (``price_stage`` with ``keep``, no
    Explain, not FSDP2), the stages not kept priced at once as array elements (``stages.as_arrays``); None where a
    stage's points or form are not one plan's numbers (then ``price_stage`` one by one)."""
    p = len(points)
    plan = stage_plan(pricer.layout, pricer.r.dims.tie)
    forms = [plan[i][0] for i in range(p)]
    values = stages.plan_keys(points, forms)
    if values is None:
        return None
    kept = pricer.shared.setdefault("stages", {})
    token = terms_token()
    if kept:
        got = [kept.get((i, values[i])) for i in range(p)]  # type: ignore[attr-defined]
        new = [i for i in range(p) if not _current(got[i], forms[i], token)]
    else:  # a new row book (a tp, pp or recompute edit): no stage kept yet
        got, new = [None] * p, list(range(p))
    if new:
        sums: dict[int, list[ChunkSums]] = {}  # per form (held by ``forms``): its stages share its chunk sums
        chunks = []
        for i in new:
            got_sums = sums.get(id(forms[i]))
            if got_sums is None:
                got_sums = sums[id(forms[i])] = stage_chunks(pricer, forms[i])
            chunks.append(got_sums)
        made = stages.as_arrays(pricer, new, [forms[i] for i in new], chunks, [points[i] for i in new])
        for i, (mem, device) in zip(new, made, strict=True):
            got[i] = _keep_stage(kept, (i, values[i]), (forms[i], mem, device, token))  # type: ignore[arg-type]
    out = []
    for i in range(p):
        form, mem, device, _token = got[i]  # type: ignore[misc]
        pts = points[i]
        # one plan's points (``plan_keys``: integer counts), with a peak point (``peak._first_best``)
        point, text = _kept_label(pts, mem, pts[mem.point]) if mem.point >= 0 else _peak_point(pts, mem)
        out.append(_result(pricer, i, form, mem, partial(_layer_rows, pricer, i, form, mem, pts), point, text, None,
                           device))
    return tuple(out)


def price_finished_stages(pricer: StagePricer, stages: Sequence[int],
                          points: Sequence[list[Point]]) -> list[StageResult] | None:
    """``price_stage`` (no Explain) of one replaying plan's stages ``stages``, none of them replayed (``device.stages``:
    the replayed stages' ratio prices their slack), their stage terms added at once over the array of their stage
    indices (``memory.finish_stages``); None where a stage's tensors are not one plan's numbers (then one by one)."""
    plan = stage_plan(pricer.layout, pricer.r.dims.tie)
    forms, made = [], []
    for i in stages:
        form = plan[i][0]
        tensors, keep = memory.stage_tensors(pricer, i, form, points[i], stage_chunks(pricer, form))
        if not keep:
            return None
        forms.append(form)
        made.append(tensors)
    out = []
    memo = pricer.memo
    for i, form, mem in zip(stages, forms, memory.finish_stages(pricer, stages, made), strict=True):
        pts = points[i]
        point, text = (mem.instant.best.name, english(mem.instant.best.name)) if mem.instant is not None else \
            _peak_point(pts, mem)
        out.append(_result(pricer, i, form, mem, partial(_layer_rows, pricer, i, form, mem, pts), point, text, None,
                           memo.get(("device", i), {})))
    return out


KEPT_STAGES = 1024  # stages kept per row book: each micro-batch count that moves a stage's points adds one


def _kept_stage(pricer: StagePricer, stage: int, form: StageForm, points: list[Point],
                values: tuple) -> tuple[StageMemory, dict]:
    """A stage's memory and the device terms' notes, kept with the rows (``shared``) under the stage and its
    points' values, for its form and the stage terms in force: with the rows' inputs (the book's key) and no
    allocator replay, that is all a stage reads — the micro-batch count only through the points, so an edit of it
    that leaves a stage's points as they were (1F1B with m ≥ p), or an edit back, prices no stage again. This is
    the only layer such a stage is kept in: the parts ``stage_memory`` keeps for a replaying plan (its combined
    tensors, its finished terms) are keyed on the same or less — the combination on the form's chunk sums and the
    points' values, the finished stage on the stage, those tensors and ``terms_key`` (() without a replay) — so a
    miss here misses there, bar another stage of the same form at equal points, which combines anew."""
    kept = pricer.shared.setdefault("stages", {})
    key = (stage, values)
    got = kept.get(key)  # type: ignore[attr-defined]
    token = terms_token()  # the stage terms in force: the book's key holds the row terms, not these
    if not _current(got, form, token):
        mem = memory.unkept_stage(pricer, stage, form, points, stage_chunks(pricer, form))
        got = _keep_stage(kept, key, (form, mem, dict(pricer.memo.get(("device", stage), {})), token))  # type: ignore
    return got[1], got[2]


def _current(got: tuple | None, form: StageForm, token: int) -> bool:
    """A kept stage (form, memory, device notes, terms token) holds for this form and the stage terms in force."""
    return got is not None and got[0] is form and got[3] == token


def _keep_stage(kept: dict, key: tuple, entry: tuple) -> tuple:
    if len(kept) >= KEPT_STAGES:
        kept.clear()
    kept[key] = entry
    return entry


KEPT_LABELS = 256
_INTS = frozenset({int})
_LABELS: dict[tuple, tuple[Text, str]] = {}  # a point's counts and backward chunk (values, types) → its label


def _peak_point(points: list[Point] | Any, mem: StageMemory) -> tuple[Text, str]:
    """The peak point's label and its English text, kept (at most ``KEPT_LABELS``) under the point's in-flight
    counts (integers: one plan's) and backward chunk, by value and type: the label reads the point alone, so
    every plan, book and micro-batch count whose stage peaks at an equal point shares it."""
    pt = points[mem.point] if type(points) is list and mem.point >= 0 else None
    kinds = tuple(map(type, pt.counts)) if pt is not None else ()
    if pt is None or not _INTS.issuperset(kinds):  # arrays (the search, the balancer): not kept
        label = point_label(points, mem)
        return label, english(label)
    return _kept_label(points, mem, pt)


def _kept_label(points: list[Point], mem: StageMemory, pt: Point) -> tuple[Text, str]:
    """``_peak_point`` of a peak point ``pt`` of one plan (its counts integers: ``points_key`` said so)."""
    key = (pt.counts, pt.backward_chunk, type(pt.backward_chunk))
    got = _LABELS.get(key)
    if got is None:
        label = point_label(points, mem)
        got = (label, english(label))
        if len(_LABELS) >= KEPT_LABELS:
            _LABELS.clear()  # one dict operation each, so threads sharing it see a whole entry or none
        _LABELS[key] = got
    return got


def _layer_rows(pricer: StagePricer, stage: int, form: StageForm, mem: StageMemory, points: list[Point]) -> tuple:
    if mem.stage_terms is None:  # priced as an array element: its stage terms' views one by one
        mem = memory.terms_again(pricer, stage, form, points, stage_chunks(pricer, form))
    return layer_rows(pricer, form, stage_rows(pricer, stage), mem)


__all__ = ["ROW_TERMS", "STAGE_TERMS", "ChunkSums", "Point", "RowTerm", "StageForm", "StageMemory", "StageTerm",
           "StageView", "chunk_sums", "price_finished_stages", "price_plan_stages", "price_stage", "process_groups",
           "profile_points", "stage_chunks", "stage_form", "stage_memory"]
