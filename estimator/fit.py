"""``sapp fit``: the largest (or smallest) value of one field for which a plan still fits, with the limiting
stage, and the time to train for a token budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import SappError, StrategyError
from .estimate import estimate
from .parsed import ParsedConfig, apply_changes
from .result import Result

FIELDS = ("micro_batch_size", "seq_length", "micro_batches")
BOUNDS = {"micro_batch_size": 1024, "seq_length": 1 << 22, "micro_batches": 1 << 16}


@dataclass
class FitResult:
    field: str
    value: int | None          # the extreme value that fits (None: not even the smallest tried fits)
    result: Result | None      # the estimate at that value
    limiting_stage: int | None  # the stage that stops the next value
    next_value: int | None     # the first value that does not fit (None when the bound was reached)
    bound_reached: bool


def _fits(parsed: ParsedConfig, changes: dict[str, int]) -> Result | None:
    try:
        plan = apply_changes(parsed, changes, hold="dp")
        result = estimate(plan.model, plan.strategy, plan.hardware, plan.options)
    except StrategyError:
        return None
    return result


def _largest(test: Callable[[int], Result | None], lo: int, hi: int, valid: Callable[[int], bool]) -> int | None:
    """Largest valid v in [lo, hi] with test(v) fitting, by doubling then bisection (memory grows with v)."""
    candidates = [v for v in _geometric(lo, hi) if valid(v)]
    best = None
    for v in candidates:
        res = test(v)
        if res is None or not res.fits:
            break
        best = v
    if best is None:
        return None
    upper = next((v for v in candidates if v > best), hi + 1)
    values = [v for v in range(best + 1, min(upper, hi + 1)) if valid(v)]
    lo_i, hi_i = 0, len(values) - 1
    while lo_i <= hi_i:
        mid = (lo_i + hi_i) // 2
        res = test(values[mid])
        if res is not None and res.fits:
            best = values[mid]
            lo_i = mid + 1
        else:
            hi_i = mid - 1
    return best


def _geometric(lo: int, hi: int) -> list[int]:
    out, v = [], max(1, lo)
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def fit_max(parsed: ParsedConfig, field: str) -> FitResult:
    """The largest ``field`` that fits, other fields fixed (the global batch follows micro_batch_size and
    micro_batches; the sequence must stay divisible by 2·cp and, with SP, by tp)."""
    if field not in FIELDS:
        raise SappError(f"--max {field}: one of {', '.join(FIELDS)}")
    st = parsed.strategy
    key = f"strategy.{field}"

    def valid(v: int) -> bool:
        if field == "seq_length":
            return v % (2 * st.cp) == 0 and (not st.sequence_parallel or (v // st.cp) % st.tp == 0)
        return True

    cache: dict[int, Result | None] = {}

    def test(v: int) -> Result | None:
        if v not in cache:
            changes = {key: v}
            if field == "micro_batch_size":  # the micro-batch count stays; the global batch follows
                changes["strategy.micro_batches"] = st.micro_batches
            cache[v] = _fits(parsed, changes)
        return cache[v]

    step = 128 if field == "seq_length" else 1
    value = _largest(lambda v: test(v * step), 1, BOUNDS[field] // step, lambda v: valid(v * step))
    if value is None:
        first = test(step)
        return FitResult(field, None, None, first.peak_stage if first else None, step, False)
    value *= step
    nxt = next((v for v in range(value + step, BOUNDS[field] + 1, step) if valid(v)), None)
    limiting = None
    if nxt is not None:
        res = test(nxt)
        limiting = res.peak_stage if res is not None else None
    return FitResult(field, value, test(value), limiting, nxt, nxt is None)


def fit_min_devices(parsed: ParsedConfig) -> FitResult:
    """The smallest data-parallel degree (device count) at which the plan fits: tp, pp, cp and the global batch
    stay, dp shrinks (micro_batches grows)."""
    st = parsed.strategy
    batch = st.global_batch_size
    options = [d for d in range(1, st.dp + 1) if batch % (d * st.micro_batch_size * st.n_acc) == 0]
    best, best_result, limiting, nxt = None, None, None, None
    for d in sorted(options, reverse=True):
        res = _fits(parsed, {"strategy.dp": d, "strategy.micro_batches": batch // (d * st.micro_batch_size * st.n_acc)})
        if res is None or not res.fits:
            limiting = res.peak_stage if res is not None else None
            nxt = d * st.tp * st.pp * st.cp
            break
        best, best_result = d, res
    devices = best * st.tp * st.pp * st.cp if best is not None else None
    return FitResult("devices", devices, best_result, limiting, nxt, nxt is None)


def time_to_train(result: Result, tokens: float) -> tuple[float, float]:
    """(days, device-hours) to process ``tokens`` at the plan's step time."""
    if result.step_time_s is None or not result.tokens_per_s_per_device:
        raise SappError("no step time for this plan")
    seconds = tokens / (result.tokens_per_s_per_device * result.world_size)
    return seconds / 86400, seconds * result.world_size / 3600
