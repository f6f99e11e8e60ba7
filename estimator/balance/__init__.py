"""Pipeline balancing (docs/model.md#balancing): for a fixed strategy, choose the layers per stage and the per-stage
recompute counts that minimise the pipeline time with every stage within the budget — exactly, by threshold
enumeration over a dynamic program (``solver``) on stage tables priced by the estimator (``tables``) — and
express the result in the framework's own terms (offsets / layer lists and recompute lists).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, SappError
from ..estimate import estimate
from ..messages import msg
from ..parsed import ParsedConfig
from ..result import Result
from ..strategy import Strategy
from .chunks import ChunkedTables
from .solver import Solution, solve
from .tables import Assignment, StageTables

DELTA = 4  # counts within base ± δ (editable, docs/model.md#balancing)
DELTA_CHUNKED = 2  # per chunk when vp > 1: a stage's choices grow as (2δ + 1)^vp


@dataclass
class BalanceResult:
    strategy: Strategy               # the balanced strategy (estimate() re-verified it)
    counts: tuple[int, ...]          # layer positions per stage
    offsets: tuple[int, ...]         # counts − base (MindFormers offsets)
    recompute: dict[str, tuple[int, ...]]  # full / selective / comm counts per stage
    before: Result
    after: Result
    objective_before: float
    objective_after: float
    exact: bool
    snippets: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # interleaved plans (vp > 1): per [chunk][stage], as MindFormers writes them; the per-stage fields above
    # then hold the stage's sums over its chunks
    chunk_offsets: tuple[tuple[int, ...], ...] | None = None
    chunk_recompute: dict[str, tuple[tuple[int, ...], ...]] | None = None

    def to_dict(self) -> dict[str, Any]:
        def stage_rows(res: Result) -> list[dict[str, Any]]:
            times = [float(t.F + t.B + t.W + t.Rc) for t in res.step.stages] if res.step is not None else []
            return [{"stage": s.index, "total_bytes": round(s.total), "layers": list(s.layer_counts),
                     "time_s": times[s.index] if times else None} for s in res.stages]
        def band(res: Result) -> dict[str, float]:
            return res.throughput.to_dict() if res.throughput is not None else {}

        return {"counts": list(self.counts), "offsets": list(self.offsets),
                "recompute": {k: list(v) for k, v in self.recompute.items()},
                "before": {"peak_bytes": round(self.before.peak_bytes), "fits": self.before.fits,
                           "step_time_s": self.before.step_time_s, "stages": stage_rows(self.before),
                           **band(self.before)},
                "after": {"peak_bytes": round(self.after.peak_bytes), "fits": self.after.fits,
                          "step_time_s": self.after.step_time_s, "stages": stage_rows(self.after),
                           **band(self.after)},
                "objective_before": self.objective_before, "objective_after": self.objective_after,
                "exact": self.exact, "snippets": self.snippets, "notes": self.notes, "seconds": self.seconds,
                **({"chunk_offsets": [list(r) for r in self.chunk_offsets],
                    "chunk_recompute": {k: [list(r) for r in v] for k, v in (self.chunk_recompute or {}).items()}}
                   if self.chunk_offsets is not None else {})}


def _kappa(parsed: ParsedConfig) -> tuple[float, bool]:
    """κ_pipe of the objective Σ t_i + κ·max t_i (docs/model.md#balancing) and whether the schedule is exactly of that
    form."""
    st = parsed.strategy
    schedule = st.schedule_name
    if schedule == "1f1b":
        return float(st.micro_batches - 1), True
    if schedule == "interleaved":  # D28: times ÷ vp and κ = m·vp − 1; the common factor 1/vp leaves the argmin
        return float(st.micro_batches * st.vpp - 1), True
    if schedule in ("zbv", "dualpipev"):  # m·τ plus the slowest stage's bubble term (``_v_objective``)
        return float(st.micro_batches), False
    if schedule == "seq1f1b":
        return float(st.micro_batches * st.n_s - 1), True
    # GPipe separates forward and backward maxima: Σ S + (m − 1)·max S bounds it from above
    return float(st.micro_batches - 1), False


def _options_for(parsed: ParsedConfig) -> tuple[str, ...]:
    fw = parsed.options.framework
    if fw in ("mindspeed", "megatron"):
        return ("full",)
    opts = ["full", "selective"]
    if parsed.strategy.sequence_parallel and fw in ("mindformers",):
        opts += ["comm", "both"]
    return tuple(opts)


def _uniform_n_only(parsed: ParsedConfig) -> bool:
    """MindSpeed-LLM / Megatron with model chunks (vpp > 1, or a V schedule): their flags cannot state layers per
    chunk other than through noop layers, so only the one recompute count N is theirs to choose."""
    st = parsed.strategy
    return parsed.options.framework in ("mindspeed", "megatron") and (
        st.vpp > 1 or st.schedule_name in ("zbv", "dualpipev", "seqsmartvpp"))


def _check_supported(parsed: ParsedConfig) -> None:
    st, fw = parsed.strategy, parsed.options.framework
    if fw == "torchtitan":
        raise ConfigError(msg("balance.torchtitan-cannot-express"), key="options.framework")
    if _uniform_n_only(parsed):
        return  # the layout stays; one recompute count is chosen (``_balance_uniform_n``)
    if st.schedule_name == "seqsmartvpp" or (st.schedule_name in ("zbv", "dualpipev") and fw != "mindformers"):
        raise ConfigError(msg("balance.balancing-schedule-supported", schedule_name=st.schedule_name),
                          key="strategy.schedule")
    if parsed.model.vision is not None:
        raise ConfigError(msg("balance.balancing-plans-vision"), key="model.vision")
    if st.pp < 2:
        raise ConfigError(msg("balance.nothing-balance-one"), key="strategy.pp")


def balance(parsed: ParsedConfig, budget: float | None = None, delta: int = DELTA) -> BalanceResult:
    start = time.perf_counter()
    _check_supported(parsed)
    result = _balance(parsed, budget, delta, start)
    limit = result.before.budget if budget is None else budget
    worst = max(max(s.total, s.optimizer_step_peak) for s in result.before.stages)
    if worst > limit:
        result.notes.insert(0, f"the plan as written does not fit: {worst / 2**30:.2f} GiB against the budget "
                               f"{limit / 2**30:.2f} GiB; the balanced plan fits, which can cost time")
    return result


def _balance(parsed: ParsedConfig, budget: float | None, delta: int, start: float) -> BalanceResult:
    st = parsed.strategy
    before = estimate(parsed.model, st, parsed.hardware, parsed.options)
    limit = before.budget if budget is None else budget
    fw = parsed.options.framework
    if _uniform_n_only(parsed):
        return _balance_uniform_n(parsed, before, limit, start)
    if st.vpp > 1:
        return _balance_chunked(parsed, before, limit, min(delta, DELTA_CHUNKED), start)
    tables = StageTables(parsed, _options_for(parsed))
    total, p = tables.total, tables.p
    base = total // p
    c_min, c_max = max(1, base - delta), base + delta
    kappa, exact = _kappa(parsed)
    notes = []
    if fw in ("mindspeed", "megatron"):
        solution = _solve_single_n(tables, total, p, c_min, c_max, kappa, limit)
    else:
        solution = solve(p, total, c_min, c_max, tables.choices, kappa, limit)
    if solution is None:
        raise SappError(msg("balance.layout-within-base", base=base, delta=delta, value=limit / 2 ** 30))
    strategy = _strategy(parsed, solution, base)
    after = estimate(parsed.model, strategy, parsed.hardware, parsed.options)
    if not exact:
        notes.append(f"{st.schedule_name}: the objective Σ t + (m − 1)·max t is the 1F1B form; the result is "
                     "re-priced with the schedule's own formula")
    objective_before = _objective(before, kappa)
    objective_after = _objective(after, kappa)
    recompute = {name: tuple(getattr(ch.assignment, attr) for ch in solution.choices)
                 for name, attr in (("full", "full"), ("selective", "sel"), ("comm", "comm"))}
    offsets = tuple(c - base for c in solution.counts)
    return BalanceResult(strategy=strategy, counts=solution.counts, offsets=offsets, recompute=recompute,
                         before=before, after=after, objective_before=objective_before,
                         objective_after=objective_after, exact=exact,
                         snippets=_snippets(fw, solution, offsets, recompute), notes=notes,
                         seconds=time.perf_counter() - start)


def _balance_chunked(parsed: ParsedConfig, before: Result, limit: float, delta: int, start: float) -> BalanceResult:
    """vp > 1 (MindFormers interleaved): per stage, counts and recompute per chunk (``chunks``)."""
    st = parsed.strategy
    tables = ChunkedTables(parsed, _options_for(parsed), delta)
    p, vp, base = tables.p, tables.vp, tables.base
    kappa, exact = _kappa(parsed)
    objective = None
    if tables.v_schedule:
        def objective(choices: list) -> float:  # T-PIPE.zbv / .dualpipev of the layout (ties: earliest stage)
            times = [ch.time for ch in choices]
            k = times.index(max(times))
            return kappa * times[k] + (p - 1) * choices[k].assignment.bubble
    solution = solve(p, tables.total, vp * tables.c_min, vp * tables.c_max, tables.choices, kappa, limit,
                     objective)
    if solution is None:
        raise SappError(msg("balance.layout-within-base-2", base=base, delta=delta, value=limit / 2 ** 30))
    chosen = [ch.assignment for ch in solution.choices]
    grid_offsets = tuple(tuple(chosen[i].counts[j] - base for i in range(p)) for j in range(vp))
    grids = {name: tuple(tuple(getattr(chosen[i], attr)[j] for i in range(p)) for j in range(vp))
             for name, attr in (("full", "full"), ("selective", "sel"), ("comm", "comm"))}
    fulls, sels, comms = grids["full"], grids["selective"], grids["comm"]

    def any_above(grid: tuple[tuple[int, ...], ...]) -> bool:
        return any(x > f for row, frow in zip(grid, fulls, strict=True) for x, f in zip(row, frow, strict=True))

    plan = dataclasses.replace(st.recompute, default_mode="none", full_counts=fulls,
                               sel_counts=sels if any_above(sels) else None,
                               comm_counts=comms if any_above(comms) else None, ranges=(), uniform_group=0)
    strategy = st.replace(recompute=plan, offset=grid_offsets, partition=None)
    after = estimate(parsed.model, strategy, parsed.hardware, parsed.options)
    notes = [f"per stage: sums over the stage's {vp} chunks; the config keys give them per chunk [vpp][pp]"]
    if tables.v_schedule:
        notes.append(f"{st.schedule_name}: the objective is the pipeline time m·S_max + (p − 1)·bubble of the "
                     "slowest stage; each threshold's layout is scored by it, so the result is the best found, "
                     "not a proven optimum (objective values are the estimator's pipeline time per flush)")
    elif not (exact and tables.exact):
        notes.append("the layer kinds differ along the model (dense/MoE, MTP or noop positions): each chunk's "
                     "kinds are read at its current place, so the optimum is approximate; the result is re-priced "
                     "by the estimator")
    recompute = {name: tuple(sum(grid[j][i] for j in range(vp)) for i in range(p)) for name, grid in grids.items()}
    stage_counts = tuple(sum(a.counts) for a in chosen)

    def lst(grid: tuple[tuple[int, ...], ...]) -> str:
        return "[" + ", ".join("[" + ", ".join(map(str, row)) + "]" for row in grid) + "]"

    snippets = {"model.model_config.offset": lst(grid_offsets), "recompute_config.recompute": lst(fulls)}
    if any_above(sels):
        snippets["recompute_config.select_recompute"] = lst(sels)
    if any_above(comms):
        snippets["recompute_config.select_comm_recompute"] = lst(comms)
    return BalanceResult(strategy=strategy, counts=stage_counts,
                         offsets=tuple(c - vp * base for c in stage_counts), recompute=recompute,
                         before=before, after=after,
                         objective_before=_pipe(before) if tables.v_schedule else _objective(before, kappa),
                         objective_after=_pipe(after) if tables.v_schedule else _objective(after, kappa),
                         exact=exact and tables.exact,
                         snippets=snippets, notes=notes, seconds=time.perf_counter() - start,
                         chunk_offsets=grid_offsets, chunk_recompute=grids)


def _balance_uniform_n(parsed: ParsedConfig, before: Result, limit: float, start: float) -> BalanceResult:
    """The layout as written and one ``--recompute-num-layers N`` (block method: the first N layers of every
    chunk): each N priced by ``estimate`` with the schedule's own step time; the fastest that fits wins."""
    st = parsed.strategy
    chunk_max = max(max(stage.layer_counts) for stage in before.stages)
    best: tuple[Strategy, Result, int | None] | None = None
    # the plan as written first (it may recompute selectively, which no N states): kept unless an N is faster
    options: list[tuple[Strategy, int | None]] = [(st, None)]
    for n in range(chunk_max + 1):
        plan = dataclasses.replace(st.recompute, default_mode="none", full_counts=n or None, sel_counts=None,
                                   comm_counts=None, ranges=(), uniform_group=0)
        options.append((st.replace(recompute=plan), n))
    for strategy, n in options:
        try:
            result = before if n is None else estimate(parsed.model, strategy, parsed.hardware, parsed.options)
        except SappError:
            continue
        if max(max(s.total, s.optimizer_step_peak) for s in result.stages) > limit:
            continue
        if best is None or (result.step_time_s or 0.0) < (best[1].step_time_s or 0.0):
            best = (strategy, result, n)
    if best is None:
        raise SappError(msg("balance.recompute-count-n", chunk_max=chunk_max, value=limit / 2 ** 30))
    strategy, after, chosen = best
    notes = [f"{st.schedule_name} with vpp {st.vpp}: the layout stays as written and one recompute count N "
             "(the first N layers of every chunk) is chosen, exactly, by the estimator's own step time"]
    if chosen is None:
        notes.append("the plan as written is already the fastest that fits among these")
    n = chosen if chosen is not None else 0
    p = len(after.stages)
    total = sum(sum(stage.layer_counts) for stage in after.stages)
    base = total // (p * st.vpp)
    counts = tuple(sum(stage.layer_counts) for stage in after.stages)
    def count(options: tuple[str, ...]) -> tuple[int, ...]:  # recomputed body layers per stage, from its rows
        return tuple(sum(1 for row in stage.layers if row.index is not None and row.option in options)
                     for stage in after.stages)

    recompute = {"full": count(("full",)), "selective": count(("full", "selective", "both")),
                 "comm": count(("full", "comm", "both"))}
    if chosen is None:
        snippets = {"recompute": "as written", "layout": "as written"}
    else:
        snippets = {"recompute": f"--recompute-granularity full --recompute-method block --recompute-num-layers "
                                 f"{n}" if n else "(none)",
                    "layout": "as written (MindSpeed states layers per chunk only through noop layers)"}
    return BalanceResult(strategy=strategy, counts=counts, offsets=tuple(c - st.vpp * base for c in counts),
                         recompute=recompute, before=before, after=after,
                         objective_before=before.step_time_s or 0.0, objective_after=after.step_time_s or 0.0,
                         exact=True, snippets=snippets, notes=notes, seconds=time.perf_counter() - start)


def _solve_single_n(tables: StageTables, total: int, p: int, c_min: int, c_max: int, kappa: float,
                    limit: float) -> Solution | None:
    """MindSpeed/Megatron: one recompute count N for every stage (block method), via an outer loop on N."""
    best: Solution | None = None
    for n in range(c_max + 1):
        def table(i: int, a: int, c: int, n: int = n):
            full = min(n, c)
            return [ch for ch in tables.choices(i, a, c) if ch.assignment.full == full and ch.assignment.sel == full]
        sol = solve(p, total, c_min, c_max, table, kappa, limit)
        if sol is not None and (best is None or sol.objective < best.objective):
            best = sol
    return best


def _strategy(parsed: ParsedConfig, solution: Solution, base: int) -> Strategy:
    st = parsed.strategy
    fulls = tuple(ch.assignment.full for ch in solution.choices)
    sels = tuple(ch.assignment.sel for ch in solution.choices)
    comms = tuple(ch.assignment.comm for ch in solution.choices)
    plan = dataclasses.replace(st.recompute, default_mode="none", full_counts=fulls,
                               sel_counts=sels if any(s > f for s, f in zip(sels, fulls, strict=True)) else None,
                               comm_counts=comms if any(c > f for c, f in zip(comms, fulls, strict=True)) else None,
                               ranges=(), uniform_group=0)
    if parsed.options.framework == "mindformers" or st.offset is not None:
        layout = {"offset": tuple(c - base for c in solution.counts), "partition": None}
    else:
        layout = {"partition": solution.counts, "offset": None}
    return st.replace(recompute=plan, **layout)


def _pipe(result: Result) -> float:
    return float(result.step.pipeline_s) if result.step is not None else 0.0


def _objective(result: Result, kappa: float) -> float:
    times = [float(t.F + t.B + t.W + t.Rc) for t in result.step.stages]
    return sum(times) + kappa * max(times)


def _snippets(fw: str, solution: Solution, offsets: tuple[int, ...],
              recompute: dict[str, tuple[int, ...]]) -> dict[str, str]:
    """The framework's own spelling of the result (docs/model.md#balancing)."""
    def lst(values: tuple[int, ...]) -> str:
        return "[" + ", ".join(map(str, values)) + "]"
    if fw == "mindformers":
        out = {"model.model_config.offset": lst(offsets), "recompute_config.recompute": lst(recompute["full"])}
        if any(s > f for s, f in zip(recompute["selective"], recompute["full"], strict=True)):
            out["recompute_config.select_recompute"] = lst(recompute["selective"])
        if any(c > f for c, f in zip(recompute["comm"], recompute["full"], strict=True)):
            out["recompute_config.select_comm_recompute"] = lst(recompute["comm"])
        return out
    if fw in ("mindspeed", "megatron"):
        n = max(recompute["full"], default=0)
        return {"--num-layer-list": ",".join(map(str, solution.counts)),
                "recompute": f"--recompute-granularity full --recompute-method block --recompute-num-layers {n}"
                             if n else "(none)"}
    ranges, start = [], 0
    for c, full in zip(solution.counts, recompute["full"], strict=True):
        if full:
            ranges.append(f"{start}-{start + full - 1}: full")
        start += c
    return {"config_overrides.offset": lst(offsets), "activation_checkpoint.layers": "{" + ", ".join(ranges) + "}"}


__all__ = ["Assignment", "BalanceResult", "balance"]
