"""Which stages of one plan the caching allocator is replayed on (issue 10, [D-SLACK], P-REPLAY-STAGES).

A replay costs tenths of a second per stage of a large plan (two steps of its schedule, tens of thousands of
allocations). The estimate prices every stage once without slack, replays the stage with the highest device peak
and the stage with the most dynamic bytes (activations, working sets, transient buffers: what the allocator
fragments), and gives every other stage their slack per dynamic byte, said in its allocator note. Plans of at most
``REPLAY_ALL`` stages replay every stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..messages import msg
from .memory import replays_allocator
from .stage_terms import REPLAYED, STAGE_RATIO
from .trace_key import say_trace_plan

if TYPE_CHECKING:
    from ..assembly import StageMemory
    from ..result import StageResult
    from ..stage import StagePricer

REPLAY_ALL = 2


def _dynamic(c: dict[str, Any]) -> Any:
    return c["activations"] + c["working_overhead"] + c["communication_buffers"]


def _unslacked(pricer: StagePricer, stage: int, points: Any) -> StageMemory:
    """The stage's memory without a StageResult (its labels, its layer rows): what pass 1 reads."""
    from ..assembly import stage_chunks, stage_form, stage_memory

    form = stage_form(pricer, stage)
    return stage_memory(pricer, stage, form, points, stage_chunks(pricer, form))


def _first_pass(pricer: StagePricer, points: Sequence[Any]) -> list[tuple[float, float, float]]:
    """Pass 1: per stage its total, its optimizer-step peak and its dynamic bytes, every stage priced without
    slack. Where every stage's part before its stage terms is one plan's numbers (``assembly.memory.stage_tensors``,
    kept for pass 2), the stage terms are added once over the array of stage indices, as ``memory._finish`` adds
    them to one stage (``assembly.stages`` does so for a plan without replay): each array operation is the
    one-stage operation on each stage's element, in the same order; else one by one."""
    from ..assembly import stage_chunks, stage_form
    from ..assembly.memory import add_stage_terms, held_at_step, stage_tensors
    from ..assembly.terms import process_groups
    from ..fsdp_points import point_sums
    from ..result import CATEGORIES

    p = len(points)
    forms = [stage_form(pricer, i) for i in range(p)]
    chunks = [stage_chunks(pricer, form) for form in forms]
    if pricer.r.flags.fsdp2:  # every replay point's Σ_i n_i·A_chunk(i) at once, for each stage's largest instant
        point_sums(pricer.memo, points, [[c.act for c in one] for one in chunks])
    made = []
    for i in range(p):
        tensors, keep = stage_tensors(pricer, i, forms[i], points[i], chunks[i])
        if not keep:  # arrays or masked points: one by one
            return [_what_pass_1_reads(_unslacked(pricer, k, points[k])) for k in range(p)]
        made.append(tensors)
    cat = {name: np.array([t.categories[name] for t in made], dtype=np.float64) for name in CATEGORIES}
    index = np.arange(p)
    total, at_step, _views = add_stage_terms(pricer, index, cat, process_groups(pricer.r, index, pricer.memo))
    at_step = (np.array([held_at_step(t.held) for t in made], dtype=np.float64) + at_step).tolist()
    return list(zip(total.tolist(), at_step, _dynamic(cat).tolist(), strict=True))


def _what_pass_1_reads(mem: StageMemory) -> tuple[float, float, float]:
    return mem.total, mem.optimizer_step_peak, _dynamic(mem.categories)


KEPT_CHOICES = 256  # per row book: one per in-flight profile (and accumulation) an estimate of it met


def _chosen(pricer: StagePricer, points: Sequence[Any]) -> list[int]:
    """The stages to replay: pass 1 prices every stage without slack and picks the one with the highest device
    peak and the one with the most dynamic bytes. Kept with the rows (``shared``) under each stage's points'
    values (and, under FSDP2, whether the step accumulates): the pass reads nothing else of the plan beyond what
    the rows read (``assembly.memory.stage_memory``), so a repeat, undo or an m edit back finds it."""
    from ..assembly.memory import points_key, terms_token
    from ..fsdp import accumulates

    values = tuple(points_key(pts) for pts in points)
    acc = accumulates(pricer) if pricer.r.flags.fsdp2 else None
    key = (values, acc) if all(v is not None for v in values) and (acc is not None or not pricer.r.flags.fsdp2) \
        else None
    kept = pricer.shared.setdefault("replay-choice", {})
    got = kept.get(key) if key is not None else None  # type: ignore[attr-defined]
    token = terms_token()
    if got is not None and got[1] == token:  # pass 1 priced the stage terms in force
        return got[0]  # type: ignore[no-any-return]
    p = len(points)
    pricer.memo[REPLAYED] = frozenset()
    pricer.memo[STAGE_RATIO] = None
    first = _first_pass(pricer, points)
    chosen = sorted({max(range(p), key=lambda i: (max(first[i][0], first[i][1]), -i)),
                     max(range(p), key=lambda i: (first[i][2], -i))})
    if key is not None:
        if len(kept) >= KEPT_CHOICES:  # type: ignore[arg-type]
            kept.clear()  # type: ignore[attr-defined]
        kept[key] = (chosen, token)  # type: ignore[index]
    return chosen


def price_stages(pricer: StagePricer, points: Sequence[Any], explain: bool) -> tuple[StageResult, ...]:
    from ..assembly import price_finished_stages, price_plan_stages, price_stage

    p = len(points)
    r = pricer.r
    unreplayed = not replays_allocator(r)
    if not unreplayed:
        say_trace_plan(pricer)  # its replayed stages' traces are kept for the next estimate
    if unreplayed and not explain and not r.flags.fsdp2:
        # no replay: no stage term reads the micro-batch count; the stages are kept, and priced at once
        made = price_plan_stages(pricer, points)
        if made is not None:
            return made
    if p <= REPLAY_ALL or unreplayed:
        # no replay: no stage term reads the micro-batch count, and a stage may be kept (assembly.price_stage)
        return tuple(price_stage(pricer, i, points[i], explain, keep=unreplayed) for i in range(p))
    chosen = _chosen(pricer, points)
    pricer.memo[REPLAYED] = frozenset(chosen)
    out = {i: price_stage(pricer, i, points[i], explain) for i in chosen}
    slack = sum(s.allocator_slack for s in out.values())
    dynamic = sum(_dynamic(s.bytes_by_category) for s in out.values())
    low = sum(s.device.get("allocator_slack_low", 0.0) for s in out.values())
    high = sum(s.device.get("allocator_slack_high", 0.0) for s in out.values())
    names = ", ".join(str(i) for i in chosen)
    pricer.memo[STAGE_RATIO] = (slack / dynamic if dynamic > 0 else 0.0, low / slack if slack > 0 else 1.0,
                                high / slack if slack > 0 else 1.0,
                                msg("device.allocator-ratio-replayed", names=names))
    rest = [i for i in range(p) if i not in out]
    made = price_finished_stages(pricer, rest, points) if not explain and len(rest) > 1 else None
    for k, i in enumerate(rest):
        out[i] = price_stage(pricer, i, points[i], explain) if made is None else made[k]
    return tuple(out[i] for i in range(p))


__all__ = ["REPLAY_ALL", "price_stages"]
