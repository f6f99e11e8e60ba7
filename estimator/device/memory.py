"""Device-level memory of one pipeline stage (issue 10): from the tensor peak (what ``max_memory_allocated``
shows) to the allocator peak (``max_memory_reserved``: tensors plus the caching allocator's slack) to the device
peak (what the device shows: the allocator plus the runtime context and the communication libraries' buffers).
The terms are the assembler's stage terms (``stage_terms``); this module holds their rules:

[D-TENSOR]  tensor peak = the stage's largest instant (the optimizer step included) + library workspaces
            (cuBLAS, Transformer Engine: handed out by the caching allocator, so they count as allocated;
            ``workspaces``)
[D-SLACK]   allocator slack = reserved − allocated of the caching-allocator replay (``allocator``) of the
            stage's allocation trace (``trace``), at the steady-state step; band: the same with every transient
            tensor 1 % smaller and 1 % larger (best fit is that sensitive); 0 for MindSpore's static plan
[D-CONTEXT] runtime context = the preset's figure for the runtime (CUDA/CANN context and library handles)
[D-COMM]    communication-library buffers = Σ communicators × the library's documented bytes (``communicators``)
[D-DEVICE]  device peak = tensor peak + slack + context + communication-library buffers (+ a fixed reserve)
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from ..messages import Message, msg
from ..options import RunOptions
from ..resolve import Resolved
from ..stage import Row, StagePricer
from ..units import GiB
from .allocator import AllocatorConfig, Program, compile_events, replay
from .knobs import parse_alloc_conf
from .trace import stage_ops, stage_trace
from .workspaces import LibraryWorkspaces

# torchtitan's launcher (run_train.sh) exports PYTORCH_ALLOC_CONF="expandable_segments:True"
FRAMEWORK_ALLOC_CONF = {"torchtitan": "expandable_segments:True"}
DEFAULT_CONTEXT = 1 * GiB   # when a preset states none for the runtime: provisional
BAND = (0.99, 1.01)


def allocator_kind(r: Resolved) -> tuple[str, AllocatorConfig, Message]:
    """(caching | expandable | static, the replayed configuration, where it came from)."""
    return allocator_kind_for(r.flags.framework, r.options.alloc_conf)


def replays_allocator(r: Resolved) -> bool:
    """Whether a plan's allocator slack comes from replaying its stages' traces [D-SLACK]: not under a static pool
    (MindSpore's) nor where the plan is priced with a given slack per dynamic byte (``options.allocator_slack_ratio``:
    the search's candidates, the balancer). Read by ``device.stages`` (which stages to replay), ``stage_terms.slack``
    and ``stage_terms.terms_key`` (what a kept stage term depends on)."""
    return r.options.allocator_slack_ratio is None and allocator_kind(r)[0] != "static"


@lru_cache(maxsize=64)
def allocator_kind_for(framework: str, alloc_conf: str | None) -> tuple[str, AllocatorConfig, Message]:
    """``allocator_kind`` of a framework and alloc_conf (kept: every stage term of every stage asks, and the answer
    is immutable)."""
    if framework == "mindformers":
        return "static", AllocatorConfig(), msg("device.allocator-static")
    text = alloc_conf
    source = msg("device.allocator-from-plan")
    if text is None:
        text = FRAMEWORK_ALLOC_CONF.get(framework, "")
        source = msg("device.allocator-from-launcher", framework=framework) if text else \
            msg("device.allocator-from-pytorch")
    config = parse_alloc_conf(text).config
    conf: Message | str = text or msg("device.allocator-default-conf")
    return ("expandable" if config.expandable_segments else "caching"), config, \
        msg("device.allocator-source", conf=conf, source=source)


_PAUSE_LOCK = threading.Lock()
_pauses = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector paused while a stage's trace is built or replayed: tens of thousands of event tuples
    and allocator blocks, none of them garbage until the replay ends, would otherwise set off collections that walk
    every object of the process (a fifth of a cold estimate). Re-entrant and shared by threads: the collector
    resumes when the last one leaves, and only if it was running when the first came in."""
    global _pauses, _resume
    with _PAUSE_LOCK:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


# Kept traces and replays (P-REPLAY-STAGES; docs/model.md#what-an-edit-re-prices). A stage's trace reads the plan's
# records but the micro-batch count m, the accumulation steps n_acc and the options that only scale the slack
# (``SLACK_OPTIONS``), γ (which reads m·n_acc), the family profile and registered layer kinds its rows are priced
# with, the stage, its library workspaces and the operation order the stage runs (``trace.stage_ops``: all it reads
# of m) — kept under those (``_EVENTS``), so an edit of m that keeps a stage's order, undo and re-estimates find it.
# Traces are interned by value (``_REPLAYS``: two plans whose traces are equal share one object), and a replay's
# result is kept with its trace under the allocator configuration and the scale; a replay reads nothing else.
_EVENTS: OrderedDict[tuple, Program] = OrderedDict()  # what a trace reads → the interned trace
_REPLAYS: OrderedDict[Program, tuple[Program, dict]] = OrderedDict()  # trace → (itself, replay results)
_EVENTS_KEPT = 64
_EVENTS_LOCK = threading.Lock()  # estimates run on several worker threads in the app
TRACE_PLAN = "trace-plan"  # the pricer's memo key of what its stages' traces read of the plan
# options that scale the slack, not the tensors: a trace does not depend on them (the search's ratio, priced with
# allocator_slack_ratio 0, finds the trace and the replay of the plan's own estimate)
SLACK_OPTIONS = frozenset({"allocator_slack_ratio", "allocator_slack_factor", "allocator_slack_fraction"})


def _interned(trace: Program) -> tuple[Program, dict]:
    """The kept entry of a trace equal to ``trace`` (made the most recently used), a new one if none; under
    ``_EVENTS_LOCK``."""
    got = _REPLAYS.get(trace)
    if got is None:
        got = _REPLAYS[trace] = (trace, {})
        while len(_REPLAYS) > _EVENTS_KEPT:
            _REPLAYS.popitem(last=False)
    else:
        _REPLAYS.move_to_end(trace)
    return got


def replayed_slack(events: Program | tuple, config: AllocatorConfig, scale: float) -> float:
    """Reserved − allocated of a trace at its steady step, transient tensors × ``scale``; kept with the trace (an
    edit that does not change a stage's tensors does not replay it again, and the search's ratio reuses the
    estimate's replay) under the configuration and the scale, by value and type. ``scale`` has no default. The
    trace as its ``Program`` (``stage_events``) or as event tuples."""
    key = (config, tuple(map(type, (config.expandable_segments, config.max_split_size,
                                    config.roundup_power2_divisions))), scale, type(scale))
    program = events if type(events) is Program else compile_events(events)
    with _EVENTS_LOCK:
        results = _interned(program)[1]
        got = results.get(key)
    if got is None:
        with collector_paused():
            steady = replay(program, config, scale)[-1]
        got = float(steady.max_reserved - steady.max_allocated)
        with _EVENTS_LOCK:
            results[key] = got
    return got


class _TraceKey:
    """What a stage's trace reads (``stage_events``) as an ``_EVENTS`` key, equal by value, whose hash is worked out
    once: its operation order is a tuple of hundreds of operations, which a lookup, a move and an insert would each
    hash again (``_ops_hash`` keeps that tuple's hash)."""

    __slots__ = ("_hash", "parts")

    def __init__(self, parts: tuple, hashed: int) -> None:
        self.parts = parts
        self._hash = hashed

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is _TraceKey and self._hash == other._hash and self.parts == other.parts)


_OPS_HASHES: dict[int, tuple[tuple, int]] = {}  # id of an operation order (``trace.stage_ops``'s) → (it, its hash)


def _ops_hash(ops: tuple) -> int:
    """hash(ops), kept per order object (``stage_ops`` hands out the same tuple for the same arguments)."""
    got = _OPS_HASHES.get(id(ops))
    if got is None or got[0] is not ops:
        if len(_OPS_HASHES) >= _EVENTS_KEPT * 4:
            _OPS_HASHES.clear()  # one dict operation each: threads see a whole entry or none
        got = _OPS_HASHES[id(ops)] = (ops, hash(ops))
    return got[1]


def _trace_key(plan: tuple, stage: int, workspace: LibraryWorkspaces, ops: tuple) -> _TraceKey:
    return _TraceKey((plan, stage, workspace, ops), hash((plan, stage, workspace, _ops_hash(ops))))


def stage_events(pricer: StagePricer, stage: int, rows: list[Row], workspace: LibraryWorkspaces) -> Program:
    """The stage's allocation trace (as its allocator ``Program``), interned by value, and kept (``_EVENTS``) under
    what it reads when the pricer's maker says what its plan's traces read (``pricer.memo[TRACE_PLAN]``:
    ``device.trace_key``, which the estimate and the search's ratio set; a pricer without it has its traces built
    again). Such a pricer also keeps it in its memo: the stage terms ask for it twice per estimate (``stage_terms``'
    slack and ``terms_key``)."""
    r = pricer.r
    plan = pricer.memo.get(TRACE_PLAN)
    if plan is None:
        key = None
    else:
        mine = ("stage-events", stage, workspace)
        got = pricer.memo.get(mine)
        if got is not None and got[0] is plan:
            return got[1]  # type: ignore[no-any-return]
        key = _trace_key(plan, stage, workspace, stage_ops(r, stage))
        with _EVENTS_LOCK:
            got = _EVENTS.get(key)
            if got is not None:
                _EVENTS.move_to_end(key)
                pricer.memo[mine] = (plan, got)
                return got
    with collector_paused():
        events = stage_trace(pricer, stage, rows, workspace).program()
    with _EVENTS_LOCK:
        got = _interned(events)[0]
        if key is not None:
            _EVENTS[key] = got
            while len(_EVENTS) > _EVENTS_KEPT:
                _EVENTS.popitem(last=False)
            pricer.memo[mine] = (plan, got)
    return got


def forget_replays() -> None:
    """Drop every kept trace and replay (benchmarks timing a cold estimate; tests comparing with nothing kept)."""
    with _EVENTS_LOCK:
        _EVENTS.clear()
        _REPLAYS.clear()
        _OPS_HASHES.clear()


def allocator_slack(pricer: StagePricer, stage: int, rows: list[Row], config: AllocatorConfig,
                    workspace: LibraryWorkspaces) -> tuple[float, float, float]:
    """[D-SLACK] (nominal, low, high): the replay, and the replays with the transient tensors over BAND; kept in
    the memo of a pricer whose traces are kept (``stage_events``) under the stage, its workspaces and the
    configuration by value and type, as ``replayed_slack`` keys it (the stage terms ask twice per estimate)."""
    mine = None
    if TRACE_PLAN in pricer.memo:
        mine = ("allocator-slack", stage, workspace, config, tuple(map(type, (
            config.expandable_segments, config.max_split_size, config.roundup_power2_divisions))))
        got = pricer.memo.get(mine)
        if got is not None:
            return got  # type: ignore[no-any-return]
    events = stage_events(pricer, stage, rows, workspace)
    values = [replayed_slack(events, config, scale) for scale in (1.0, *BAND)]
    band = values[0], min(values), max(values)
    if mine is not None:
        pricer.memo[mine] = band
    return band


def calibrated_options(r: Resolved) -> RunOptions:
    """The options with a calibration's terms only when the plan runs on the calibration's device."""
    opts = r.options
    if opts.calibration_device is None or opts.calibration_device.lower() == (r.hardware.id or "").lower():
        return opts
    return opts.replace(allocator_slack_factor=None, allocator_slack_fraction=None, comm_library_factor=None,
                        runtime_context=None)




__all__ = ["BAND", "DEFAULT_CONTEXT", "FRAMEWORK_ALLOC_CONF", "allocator_kind", "allocator_kind_for",
           "allocator_slack", "calibrated_options", "collector_paused", "forget_replays", "replayed_slack",
           "replays_allocator", "stage_events"]
