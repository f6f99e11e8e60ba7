"""Which stages of one plan the caching allocator is replayed on (issue 10, [D-SLACK], P-REPLAY-STAGES).

A replay costs tenths of a second per stage of a large plan (two steps of its schedule, tens of thousands of
allocations). The estimate prices every stage once without slack, replays the stage with the highest device peak
and the stage with the most dynamic bytes (activations, working sets, transient buffers: what the allocator
fragments), and gives every other stage their slack per dynamic byte, said in its allocator note. Plans of at most
``REPLAY_ALL`` stages replay every stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..messages import msg
from .memory import replays_allocator
from .stage_terms import REPLAYED, STAGE_RATIO
from .trace_key import say_trace_plan

if TYPE_CHECKING:
    from ..assembly import StageMemory
    from ..result import StageResult
    from ..stage import StagePricer

REPLAY_ALL = 2


def _dynamic(c: dict[str, float]) -> float:
    return c["activations"] + c["working_overhead"] + c["communication_buffers"]


def _unslacked(pricer: StagePricer, stage: int, points: Any) -> StageMemory:
    """The stage's memory without a StageResult (its labels, its layer rows): what pass 1 reads."""
    from ..assembly import stage_chunks, stage_form, stage_memory

    form = stage_form(pricer, stage)
    return stage_memory(pricer, stage, form, points, stage_chunks(pricer, form))


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
    first = [_unslacked(pricer, i, points[i]) for i in range(p)]
    chosen = sorted({max(range(p), key=lambda i: (max(first[i].total, first[i].optimizer_step_peak), -i)),
                     max(range(p), key=lambda i: (_dynamic(first[i].categories), -i))})
    if key is not None:
        if len(kept) >= KEPT_CHOICES:  # type: ignore[arg-type]
            kept.clear()  # type: ignore[attr-defined]
        kept[key] = (chosen, token)  # type: ignore[index]
    return chosen


def price_stages(pricer: StagePricer, points: Sequence[Any], explain: bool) -> tuple[StageResult, ...]:
    from ..assembly import price_plan_stages, price_stage

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
    for i in range(p):
        if i not in out:
            out[i] = price_stage(pricer, i, points[i], explain)
    return tuple(out[i] for i in range(p))


__all__ = ["REPLAY_ALL", "price_stages"]
