"""ND strategy search (docs/model.md#search): enumerate every strategy of a search space as numpy columns, refuse the
impossible ones with their first failing rule, price the survivors vectorised (memory and step time by the
estimator's own code), keep those that fit the budget, rank them by step time, and return the Pareto front
and the top K re-estimated in scalar mode (so they can be explained)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..device.ratio import with_slack_ratio
from ..errors import SappError
from ..estimate import estimate
from ..honest import Throughput, throughput
from ..messages import Message, Text, english, joined, msg
from ..parsed import ParsedConfig
from ..result import Result
from ..strategy import Strategy
from ..units import GiB, fmt_bytes
from .candidates import Candidates
from .filters import CODES, example_text
from .pricing import Resolver, candidate_strategy, price_candidates
from .sieve import sieve
from .space import Bounds, Dim, SearchSpace, parse_dims

CHUNK = 16_384
PROGRESS_INTERVAL = 0.05

Progress = Callable[[int, int, str], None]
Cancel = Callable[[], bool] | threading.Event


@dataclass
class RankedRow:
    strategy: Strategy
    peak_bytes: float
    peak_stage: int
    stage_peaks: tuple[float, ...]
    optimizer_step_peak: float
    headroom: float
    step_time_s: float
    tokens_per_s_per_device: float
    mfu: float
    result: Result | None = None  # scalar re-estimate (top K only)
    step_band: tuple[float, float] | None = None  # [T-BAND] step time at the device's fast and slow ends
    # the expert TP and optimizer shard size the row runs with: the strategy leaves them unstated when they are
    # the framework's defaults (as the plan does), so that applying the row writes only what changes
    etp: int = 1
    shard_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        from ..formats.plan_writer import strategy_fields

        return {"strategy": strategy_fields(self.strategy), "etp": self.etp, "shard_size": self.shard_size,
                "peak_bytes": round(self.peak_bytes),
                "peak_stage": self.peak_stage, "stage_peaks": [round(x) for x in self.stage_peaks],
                "optimizer_step_peak": round(self.optimizer_step_peak), "headroom": round(self.headroom),
                "step_time_s": self.step_time_s, "tokens_per_s_per_device": self.tokens_per_s_per_device,
                "mfu": self.mfu, **self.throughput.to_dict()}

    @property
    def throughput(self) -> Throughput:
        """Step time, tokens/s/device and MFU at the precision the step band allows (``estimator.honest``)."""
        return throughput(self.step_time_s, self.tokens_per_s_per_device, self.mfu, self.step_band)


@dataclass
class CurrentPlan:
    """The plan the search started from, priced like the Memory tab prices it, and where it stands: the rank it
    would take among the strategies that fit (None when it does not fit) and the ranked row that is the same
    strategy, if one is."""

    row: RankedRow
    fits: bool
    rank: int | None
    ranked_index: int | None

    def to_dict(self) -> dict[str, Any]:
        return {**self.row.to_dict(), "fits": self.fits, "rank": self.rank, "ranked_index": self.ranked_index}


@dataclass
class SearchResult:
    candidates: int
    refusals: dict[str, int]
    examples: dict[str, Text]  # per rule, one refused candidate (R-HOST's in the reader's language)
    survivors: int
    fitting: int
    over_budget: list[tuple[str, float]]  # (candidate, overshoot bytes), the 20 smallest
    ranked: list[RankedRow]
    pareto: list[RankedRow]
    budget: float
    seconds: float
    cancelled: bool = False
    phases: dict[str, float] = field(default_factory=dict)
    priced: int = 0  # survivors priced (all of them unless cancelled)
    current: CurrentPlan | None = None  # None when the plan itself cannot be estimated

    def to_dict(self) -> dict[str, Any]:
        return {"candidates": self.candidates, "refusals": self.refusals,
                "examples": {code: english(text) for code, text in self.examples.items()},
                "survivors": self.survivors, "priced": self.priced, "fitting": self.fitting,
                "over_budget": [{"candidate": c, "overshoot_bytes": round(o)} for c, o in self.over_budget],
                "pareto": [r.to_dict() for r in self.pareto], "ranked": [r.to_dict() for r in self.ranked],
                "current": self.current.to_dict() if self.current is not None else None,
                "budget": round(self.budget), "seconds": self.seconds, "cancelled": self.cancelled}

    @property
    def progress_text(self) -> str:
        """How much of the search ran: "cancelled after N of M priced" or "M priced"."""
        if self.cancelled:
            return f"cancelled after {self.priced:,} of {self.survivors:,} priced"
        return f"{self.priced:,} priced"


class _Reporter:
    def __init__(self, progress: Progress | None, cancel: Cancel | None) -> None:
        self.progress, self.cancel = progress, cancel
        self.last = 0.0

    def report(self, done: int, total: int, phase: str, force: bool = False) -> None:
        now = time.perf_counter()
        if self.progress is not None and (force or now - self.last >= PROGRESS_INTERVAL):
            self.last = now
            self.progress(done, total, phase)

    def cancelled(self) -> bool:
        if self.cancel is None:
            return False
        return self.cancel.is_set() if isinstance(self.cancel, threading.Event) else bool(self.cancel())


def candidate_at(parsed: ParsedConfig, cands: Candidates, derived: dict[str, np.ndarray], k: int,
                 resolver: Resolver | None = None) -> Strategy:
    """The Strategy of candidate ``k`` (as ``estimate`` prices it)."""
    row = cands.row(k)
    row["etp"] = int(derived["etp"][k])
    return candidate_strategy(parsed, row, str(derived["schedule"][k]), resolver=resolver)


def default_time_fn() -> Callable:
    from ..steptime import step_time

    return step_time


def search(parsed: ParsedConfig, space: SearchSpace, progress: Progress | None = None,
           cancel: Cancel | None = None, time_fn: Callable | None = None) -> SearchResult:
    """Run the search in the caller's thread (the GUI calls it from a worker). Candidates carry the current
    plan's allocator slack per dynamic byte (``device.ratio``), not a replay each."""
    start = time.perf_counter()
    parsed = with_slack_ratio(parsed)
    resolver = Resolver(parsed)
    rep = _Reporter(progress, cancel)
    time_fn = time_fn or default_time_fn()
    phases: dict[str, float] = {}
    rep.report(0, 0, "enumerate", force=True)
    sieved = sieve(parsed, space)
    total = sieved.total
    if not total:
        raise SappError(_no_candidates_message(parsed, space))
    phases["enumerate and filter"] = time.perf_counter() - start

    counts = sieved.counts
    refused = {code: int(counts[k]) for k, code in enumerate(CODES) if counts[k]}
    examples = {CODES[k]: example_text(CODES[k], _display_row(*sieved.examples[k]))
                for k in range(len(CODES)) if counts[k]}
    surv, surv_derived = sieved.survivors, sieved.derived
    survivors = len(surv)
    rep.report(0, survivors, "filter", force=True)
    if not survivors:  # the plan on screen is still a row (issue 12): it is what the user compares against
        budget = _budget(parsed)
        current = _current(parsed, budget, [], np.zeros(0))
        if current is None:
            raise SappError(_empty_message(total, refused, examples))
        return SearchResult(candidates=total, refusals=refused, examples=examples, survivors=0, fitting=0,
                            over_budget=[], ranked=[], pareto=[], budget=budget,
                            seconds=time.perf_counter() - start, cancelled=False, phases=phases, priced=0,
                            current=current)

    t0 = time.perf_counter()
    priced_count = [0]

    def on_group(n: int) -> None:
        priced_count[0] += n
        rep.report(priced_count[0], survivors, "price")

    priced = price_candidates(parsed, surv, surv_derived, time_fn, should_stop=rep.cancelled, on_group=on_group,
                              chunk=CHUNK, resolver=resolver)
    phases["price"] = time.perf_counter() - t0
    cancelled = rep.cancelled()
    done = ~np.isnan(priced.peak)

    t0 = time.perf_counter()
    rep.report(survivors, survivors, "rank", force=True)
    budget = _budget(parsed)
    decisive = np.fmax(priced.peak, priced.optimizer_step_peak)
    fits = done & fits_budget(decisive, priced.allocator_peak, budget, parsed)
    over = np.nonzero(done & ~fits)[0]
    host_over = _host_over(parsed, priced, fits)
    if len(host_over):  # R-HOST: fits the device, but its offloaded bytes do not fit the node's RAM
        refused["R-HOST"] = len(host_over)
        examples["R-HOST"] = _host_text(parsed, surv, surv_derived, priced, int(host_over[0]))
        fits[host_over] = False
    if len(over):
        refused["R-MEM"] = len(over)
        worst = over[np.argsort(decisive[over] - budget)[:20]]
        examples["R-MEM"] = _mem_text(surv, surv_derived, priced, int(worst[0]), budget)
        over_budget = [(example_text("R-MEM", _display_row(surv, surv_derived, int(k))), float(decisive[k] - budget))
                       for k in worst]
    else:
        over_budget = []
    fit_idx = np.nonzero(fits)[0]
    order = fit_idx[np.lexsort((surv.columns["p"][fit_idx], priced.peak[fit_idx], priced.step_time[fit_idx]))]
    top = order[:space.top_k]
    ranked = [_row(parsed, surv, surv_derived, priced, int(k), budget, rescore=True, resolver=resolver)
              for k in top]
    pareto_idx = _pareto(priced.step_time[fit_idx], decisive[fit_idx])
    in_top = dict(zip(top.tolist(), ranked, strict=True))  # a ranked row on the front is the same row
    pareto = [in_top.get(int(fit_idx[k])) or _row(parsed, surv, surv_derived, priced, int(fit_idx[k]), budget,
                                                  rescore=False, resolver=resolver) for k in pareto_idx]
    current = _current(parsed, budget, ranked, priced.step_time[fit_idx])
    phases["rank"] = time.perf_counter() - t0
    return SearchResult(candidates=total, refusals=refused, examples=examples, survivors=survivors,
                        fitting=len(fit_idx), over_budget=over_budget, ranked=ranked, pareto=pareto,
                        budget=budget, seconds=time.perf_counter() - start, cancelled=cancelled, phases=phases,
                        priced=int(done.sum()), current=current)


def fits_budget(device: np.ndarray, allocator: np.ndarray | None, budget: float,
                parsed: ParsedConfig) -> np.ndarray:
    """[D-VERDICT] for arrays: the device peak within the budget; with a framework memory pool (MindSpore
    max_device_memory) the allocator peak within the pool and the device peak within the capacity."""
    opts = parsed.options
    if opts.max_device_memory is None or opts.budget_override is not None or allocator is None:
        return device <= budget
    return (allocator <= budget) & (device <= parsed.hardware.capacity - opts.margin)


def headroom(device: float, allocator: float, budget: float, parsed: ParsedConfig) -> float:
    """[D-VERDICT]'s margin for one candidate, as ``estimate.assemble`` takes it: the budget less the device peak;
    with a framework pool, the smaller of pool − allocator peak and capacity − margin − device peak."""
    opts = parsed.options
    if opts.max_device_memory is None or opts.budget_override is not None:
        return float(budget - device)
    return float(min(budget - allocator, parsed.hardware.capacity - opts.margin - device))


def _current(parsed: ParsedConfig, budget: float, ranked: list[RankedRow],
             fit_times: np.ndarray) -> CurrentPlan | None:
    """The plan as opened (its own offsets, recompute lists and everything the candidates vary), priced by the
    scalar estimate, with the rank it would take by step time among the strategies that fit."""
    try:
        result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    except SappError:
        return None
    if result.step_time_s is None:
        return None
    decisive = max(result.peak_bytes, result.optimizer_step_peak)
    from ..resolve import resolve

    par = resolve(parsed.model, parsed.strategy, parsed.hardware, parsed.options).par
    row = RankedRow(strategy=parsed.strategy, peak_bytes=float(result.peak_bytes), peak_stage=result.peak_stage,
                    stage_peaks=tuple(float(s.total) for s in result.stages),
                    optimizer_step_peak=float(result.optimizer_step_peak), headroom=float(budget - decisive),
                    step_time_s=float(result.step_time_s),
                    tokens_per_s_per_device=float(result.tokens_per_s_per_device or 0.0),
                    mfu=float(result.mfu or 0.0), result=result, step_band=result.step_band, etp=int(par.etp),
                    shard_size=int(par.os) if parsed.strategy.sharding.mode != "none" else None)
    same = next((k for k, r in enumerate(ranked) if _same_plan(parsed, r.strategy)), None)
    fits = decisive <= budget and (result.host is None or result.host.fits is not False)  # R-HOST too
    rank = (same + 1 if same is not None else int(np.sum(fit_times < row.step_time_s)) + 1) if fits else None
    return CurrentPlan(row=row, fits=fits, rank=rank, ranked_index=same)


def _same_plan(parsed: ParsedConfig, strategy: Strategy) -> bool:
    """Whether ``strategy`` is the plan's own, written differently (defaults stated: etp, schedule, shard size)."""
    plan = parsed.strategy
    if strategy == plan:
        return True
    layout = ("dp", "tp", "pp", "vpp", "cp", "ep", "micro_batch_size", "micro_batches", "sequence_parallel",
              "recompute", "offset", "partition", "vision_partition")
    if any(getattr(strategy, name) != getattr(plan, name) for name in layout):
        return False
    from ..resolve import resolve

    ours, theirs = (resolve(parsed.model, s, parsed.hardware, parsed.options) for s in (strategy, plan))
    return ours.par == theirs.par and ours.flags == theirs.flags and ours.widths == theirs.widths


def _budget(parsed: ParsedConfig) -> float:
    from ..resolve import plan_budget

    return plan_budget(parsed.hardware.capacity, parsed.options)


def _row(parsed: ParsedConfig, cands: Candidates, derived: dict[str, np.ndarray], priced, k: int,
         budget: float, rescore: bool, resolver: Resolver) -> RankedRow:
    row = cands.row(k)
    strategy = candidate_at(parsed, cands, derived, k, resolver)
    result = estimate(parsed.model, strategy, parsed.hardware, parsed.options) if rescore else None
    band = result.step_band if result is not None else _band(strategy, resolver)
    return RankedRow(strategy=strategy, peak_bytes=float(priced.peak[k]), peak_stage=int(priced.peak_stage[k]),
                     stage_peaks=tuple(float(x) for x in priced.stage_peaks(k)),
                     optimizer_step_peak=float(priced.optimizer_step_peak[k]),
                     headroom=headroom(priced.peak[k], priced.allocator_peak[k], budget, parsed),
                     step_time_s=float(priced.step_time[k]),
                     tokens_per_s_per_device=float(priced.tokens_per_s_per_device[k]), mfu=float(priced.mfu[k]),
                     result=result, step_band=band, etp=int(derived["etp"][k]) if parsed.model.is_moe else 1,
                     shard_size=int(row["os"]) if parsed.strategy.sharding.mode != "none" else None)


def _band(strategy: Strategy, resolver: Resolver) -> tuple[float, float] | None:
    """[T-BAND] of a front-only row (not re-estimated: it is not explained): its step time at the device's
    fast and slow ends, no memory priced."""
    from ..estimate import step_band
    from ..layout import build_layout, layout_inputs
    from ..stage import StagePricer

    try:
        r = resolver(strategy)
        return step_band(StagePricer(r, build_layout(layout_inputs(r)))) if r.hardware.has_band else None
    except SappError:
        return None


def _host_over(parsed: ParsedConfig, priced, fits: np.ndarray) -> np.ndarray:
    """[H-NODE] candidates that fit the device but whose host memory per node (per device × devices per node)
    exceeds the node's RAM from the preset; none when the preset states no RAM."""
    ram = parsed.hardware.host_ram_per_node
    if ram is None or priced.host is None:
        return np.zeros(0, dtype=np.int64)
    return np.nonzero(fits & (priced.host * parsed.hardware.devices_per_node > ram))[0]


def _host_text(parsed: ParsedConfig, cands: Candidates, derived, priced, k: int) -> Message:
    hw = parsed.hardware
    return msg("search.host-ram-example", candidate=example_text("R-HOST", _display_row(cands, derived, k)),
               per_node=fmt_bytes(priced.host[k] * hw.devices_per_node), per_device=fmt_bytes(priced.host[k]),
               devices_per_node=hw.devices_per_node, ram=fmt_bytes(hw.host_ram_per_node or 0.0))


def _pareto(times: np.ndarray, peaks: np.ndarray) -> list[int]:
    """Indices of the non-dominated (step time, peak) points, fastest first."""
    order = np.lexsort((peaks, times))
    ordered = peaks[order]
    # a point is on the front when its peak is below every faster point's (the running minimum before it)
    before = np.fmin.accumulate(np.concatenate(([np.inf], ordered[:-1])))
    return order[ordered < before].tolist()


def _display_row(cands: Candidates, derived: dict[str, np.ndarray], k: int) -> dict[str, int]:
    row = cands.row(k)
    row["etp"] = int(derived["etp"][k])
    return row


def _mem_text(cands: Candidates, derived, priced, k: int, budget: float) -> str:
    peak = max(priced.peak[k], priced.optimizer_step_peak[k])
    return (example_text("R-MEM", _display_row(cands, derived, k)) +
            f" — peak {peak / GiB:.2f} GiB on stage {priced.peak_stage[k]} exceeds budget {budget / GiB:.2f} GiB "
            f"by {(peak - budget) / GiB:.2f} GiB")


def _no_candidates_message(parsed: ParsedConfig, space: SearchSpace) -> Message:
    """Nothing could even be enumerated: degrees that cannot split the devices."""
    n = space.devices
    problems = []
    for name, parsed_value in (("tp", parsed.strategy.tp), ("pp", parsed.strategy.pp), ("cp", parsed.strategy.cp)):
        dim = space.dim(name)
        values = dim.values if dim is not None and not dim.auto else (() if dim is not None else (parsed_value,))
        bad = [v for v in values if n % v]
        if bad:
            problems.append(msg("search.degree-does-not-divide", name=name, values=",".join(map(str, bad)), n=n))
    detail = joined(problems) if problems else msg("search.no-product-divides", n=n)
    return msg("search.no-candidate", detail=detail)


def _empty_message(total: int, refused: dict[str, int], examples: dict[str, str]) -> Message:
    lines = [msg("search.none-survives", total=total)]
    for code, count in sorted(refused.items(), key=lambda kv: -kv[1]):
        lines.append(msg("search.refused-line", code=code, count=count, example=examples[code]))
    return joined(lines, separator="list.lines")


__all__ = ["Bounds", "CurrentPlan", "Dim", "RankedRow", "SearchResult", "SearchSpace", "parse_dims", "search"]
