"""``sapp fit``: the largest (or smallest) value of one field for which a plan still fits, with the limiting
stage, and the time to train for a token budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .device.ratio import with_slack_ratio
from .errors import SappError, StrategyError
from .estimate import estimate, layout_inputs, rule_context
from .layout import build_layout
from .messages import msg
from .parsed import ParsedConfig, apply_changes
from .resolve import resolve
from .result import Result
from .validate import violations

FIELDS = ("micro_batch_size", "seq_length", "micro_batches")
BOUNDS = {"micro_batch_size": 1024, "seq_length": 1 << 22, "micro_batches": 1 << 16}
SCAN = 1024  # how far past a value the next valid one is looked for (gaps are below pp·vpp in practice)


@dataclass
class FitResult:
    field: str
    value: int | None          # the extreme value that fits (None: not even the smallest valid one fits)
    result: Result | None      # the estimate at that value
    limiting_stage: int | None  # the stage that stops the next value
    next_value: int | None     # the first valid value that does not fit (None when the bound was reached)
    bound_reached: bool


def _plan(parsed: ParsedConfig, changes: dict[str, int]) -> ParsedConfig | None:
    """The plan with ``changes``, or None when the strategy it makes breaks a rule (docs/model.md#search): such a value
    is not a candidate at all (1 micro-batch cannot fill 4 pipeline stages), which is not the same as not fitting."""
    try:
        plan = apply_changes(parsed, changes, hold="dp")
        r = resolve(plan.model, plan.strategy, plan.hardware, plan.options)
        if violations(rule_context(r, build_layout(layout_inputs(r)))):
            return None
    except (StrategyError, SappError):
        return None
    return plan


def _fits(parsed: ParsedConfig, changes: dict[str, int]) -> Result | None:
    plan = _plan(parsed, changes)
    if plan is None:
        return None
    try:
        return estimate(plan.model, plan.strategy, plan.hardware, plan.options)
    except StrategyError:
        return None


def _next_valid(v: int, hi: int, valid: Callable[[int], bool]) -> int | None:
    """The smallest valid value in [v, min(hi, v + SCAN)]."""
    return next((x for x in range(v, min(hi, v + SCAN) + 1) if valid(x)), None)


def _largest(test: Callable[[int], Result | None], lo: int, hi: int, valid: Callable[[int], bool]) -> int | None:
    """Largest valid v in [lo, hi] with test(v) fitting, by doubling then bisection: memory grows with v over
    the valid values, which need not be contiguous (interleaved schedules take micro-batch counts in groups)."""
    best, upper = None, hi + 1
    tried: set[int] = set()
    for start in _geometric(lo, hi):
        v = _next_valid(start, hi, valid)
        if v is None or v in tried:
            continue
        tried.add(v)
        res = test(v)
        if res is None or not res.fits:
            upper = v
            break
        best = v
    if best is None:
        return None
    low, high = best + 1, upper - 1
    while low <= high:
        mid = (low + high) // 2
        v = next((x for x in range(mid, low - 1, -1) if valid(x)), None) or _next_valid(mid, high, valid)
        if v is None:
            break
        res = test(v)
        if res is not None and res.fits:
            best, low = v, v + 1
        else:
            high = v - 1
    return best


def _geometric(lo: int, hi: int) -> list[int]:
    out, v = [], max(1, lo)
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def fit_max(parsed: ParsedConfig, field: str) -> FitResult:
    """The largest ``field`` that fits, other fields fixed (the global batch follows micro_batch_size and
    micro_batches). Values the rules refuse (fewer micro-batches than pipeline stages, a sequence that 2·cp or
    tp does not divide, …) are skipped, not counted as not fitting."""
    parsed = with_slack_ratio(parsed)  # each tried value prices the allocator slack by the plan's own ratio
    if field not in FIELDS:
        raise SappError(msg("fit.max-one", field=field, FIELDS=', '.join(FIELDS)))
    st = parsed.strategy
    key = f"strategy.{field}"

    def changes_for(v: int) -> dict[str, int]:
        changes = {key: v}
        if field == "micro_batch_size":  # the micro-batch count stays; the global batch follows
            changes["strategy.micro_batches"] = st.micro_batches
        return changes

    validity: dict[int, bool] = {}

    def valid(v: int) -> bool:
        if v not in validity:
            validity[v] = _plan(parsed, changes_for(v)) is not None
        return validity[v]

    cache: dict[int, Result | None] = {}

    def test(v: int) -> Result | None:
        if v not in cache:
            cache[v] = _fits(parsed, changes_for(v))
        return cache[v]

    step = 128 if field == "seq_length" else 1
    bound = BOUNDS[field] // step
    value = _largest(lambda v: test(v * step), 1, bound, lambda v: valid(v * step))
    if value is None:
        first = _next_valid(1, bound, lambda v: valid(v * step))
        if first is None:
            raise SappError(msg("fit.value-up-makes", field=field, BOUNDS=BOUNDS[field]))
        res = test(first * step)
        return FitResult(field, None, None, res.peak_stage if res else None, first * step, False)
    value *= step
    nxt = _next_valid(value // step + 1, bound, lambda v: valid(v * step))
    limiting = None
    if nxt is not None:
        nxt *= step
        res = test(nxt)
        limiting = res.peak_stage if res is not None else None
    return FitResult(field, value, test(value), limiting, nxt, nxt is None)
def fit_min_devices(parsed: ParsedConfig) -> FitResult:
    """The smallest data-parallel degree (device count) at which the plan fits: tp, pp, cp and the global batch
    stay, dp shrinks (micro_batches grows)."""
    parsed = with_slack_ratio(parsed)
    st = parsed.strategy
    batch = st.global_batch_size
    options = [d for d in range(1, st.dp + 1) if batch % (d * st.micro_batch_size * st.n_acc) == 0]
    best, best_result, limiting, nxt = None, None, None, None
    for d in sorted(options, reverse=True):
        changes = {"strategy.dp": d, "strategy.micro_batches": batch // (d * st.micro_batch_size * st.n_acc)}
        if _plan(parsed, changes) is None:
            continue  # a dp the rules refuse (e.g. its micro-batch count breaks the schedule's groups)
        res = _fits(parsed, changes)
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
        raise SappError(msg("fit.step-time-plan"))
    seconds = tokens / (result.tokens_per_s_per_device * result.world_size)
    return seconds / 86400, seconds * result.world_size / 3600
