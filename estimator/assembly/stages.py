"""A plan's stages as the elements of arrays (P-SCALAR-SPEED): the stages of one plan that replays no allocator
(``device.stages``: MindSpore's static pool, a stated slack ratio), priced at once as the search prices its
candidates — each stage's rows' categories, activations at its peak point, working set and transient buffer one
element of an array over the stages, the stage terms evaluated once over the array of stage indices (they ask
whether a stage is an end stage, ``terms.process_groups``, ``device.stage_terms``), the total and the
optimizer-step peak once — instead of assembling the stages one by one.

Every number is the one the one-stage path (``memory.unkept_stage``) gives, because the combination is the
one-stage path's own functions (``memory.at_point``, ``in_flight``, ``add_stage_terms``, ``host_of``) applied to
arrays over the stages: each array operation is the same operation, in the same order, on each stage's element
(float64, as Python's floats), so every sum keeps its sequential order; what a stage's chunks decide
(``memory.chunks_part``) and its peak point are the one-stage path's own too. A stage made here holds no
stage-term views (``StageMemory.stage_terms`` None): its per-layer table prices it again one by one
(``assembly._layer_rows``), on demand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..result import CATEGORIES
from .form import StageForm
from .memory import Point, StageMemory, add_stage_terms, at_point, chunks_part, host_of, in_flight, points_key
from .peak import _first_best
from .terms import process_groups

if TYPE_CHECKING:
    from ..stage import StagePricer


def plan_keys(points: Sequence[list[Point]], forms: Sequence[StageForm]) -> list[tuple] | None:
    """Each stage's points' values (``memory.points_key``), or None where a stage's points or form are not one
    plan's numbers (arrays or masked points, an array of vision flags): those go one by one."""
    out = []
    for pts, form in zip(points, forms, strict=True):
        values = points_key(pts)
        if values is None or type(form.vision) is not bool:
            return None
        out.append(values)
    return out


def as_arrays(pricer: StagePricer, stages: Sequence[int], forms: Sequence[StageForm],
              chunks: Sequence[Sequence[Any]], points: Sequence[list[Point]]) -> list[tuple[StageMemory, dict]]:
    """The stages ``stages`` of one plan (their forms, the forms' chunk sums and their points, indexed like
    ``stages``), each as a StageMemory with the device terms' notes — what ``memory.unkept_stage`` gives stage by
    stage, computed over an array of the stages."""
    r = pricer.r
    n = len(stages)
    # what the chunks decide, once per list of chunk sums (a form's, ``stage_chunks``: its stages share it)
    by_chunks: dict[int, Any] = {}
    parts = []
    for c, form in zip(chunks, forms, strict=True):
        part = by_chunks.get(id(c))  # the lists are held by ``chunks``: their ids stay theirs during the call
        if part is None:
            part = by_chunks[id(c)] = chunks_part(pricer, c, form.vision)
        parts.append(part)
    peaks = []  # per stage: (in-flight counts, working set, point index)
    for pts, part in zip(points, parts, strict=True):
        if len(pts) == 1:  # _first_best of one point: that point
            pt = pts[0]
            peaks.append((pt.counts, part.work[pt.backward_chunk], 0))
        else:
            peaks.append(_first_best(pts, part.act, part.work))
    # one table, a column per stage: its rows' categories (its chunks' part, CATEGORIES order), per chunk A_chunk
    # and the offloaded activations, the transient buffer, what the rows hold at the optimizer step, then its
    # peak point's in-flight counts per chunk and working set W
    vp, width = len(parts[0].act), len(CATEGORIES)
    table = np.array([(*part.vector, *part.act, *part.offload, part.transient, part.at_step, *peak[0], peak[1])
                      for part, peak in zip(parts, peaks, strict=True)], dtype=np.float64).T
    at = width + 2 * vp  # the transient buffer's row
    counts = table[at + 2:at + 2 + vp]
    cat = at_point(dict(zip(CATEGORIES, table[:width], strict=True)), in_flight(counts, table[width:width + vp]),
                   table[at], table[at + 2 + vp])
    # the stage terms over the array of stage indices (as ``memory._finish``, each term once)
    index = np.array(stages)
    groups = process_groups(r, index, pricer.memo)
    total, at_step, _views = add_stage_terms(pricer, index, cat, groups)
    opt = (table[at + 1] + at_step).tolist()
    columns = np.array([cat[name] for name in CATEGORIES]).T.tolist()
    offloaded = in_flight(counts, table[width + vp:at])
    offloaded = offloaded.tolist() if isinstance(offloaded, np.ndarray) else [offloaded] * n
    groups_at = groups.tolist() if isinstance(groups, np.ndarray) else [groups] * n
    out = []
    memo = pricer.memo
    new = tuple.__new__  # StageMemory(...) less its Python __new__: one per stage
    # host_of per chunks' part and offloaded bytes: the stages sharing both share one dict (nothing changes a
    # stage's host bytes; a kept stage's are shared by the estimates that find it), and ``host.host_memory``
    # makes one record of it
    hosts: dict[tuple, dict] = {}
    for stage, row, total_k, opt_k, off_k, groups_k, pts, part, peak in zip(
            stages, columns, total.tolist(), opt, offloaded, groups_at, points, parts, peaks, strict=True):
        key = (id(part), off_k)
        host = hosts.get(key)
        if host is None:
            host = hosts[key] = host_of(off_k, part.held)
        point = peak[2]
        mem = new(StageMemory, (dict(zip(CATEGORIES, row, strict=True)), total_k, opt_k, tuple(peak[0]), peak[1],
                                part.transient, groups_k, None, point, part.working_from[pts[point].backward_chunk],
                                part.transient_from, None, host))
        out.append((mem, dict(memo.get(("device", stage), ()))))
    return out


__all__ = ["as_arrays", "plan_keys"]
