"""Work the GUI thread never does: reading files and pricing plans.

Estimates: a one-thread QThreadPool, a short debounce, and a generation counter so that a result computed for
an older state is dropped instead of drawn. ``EstimateRunner.request(parsed)`` bumps the generation; an edit
after a pause (nothing requested for the debounce interval) is priced on the next turn of the event loop, which
still merges the edits one action makes together, and an edit that follows another within the interval
(re)starts the debounce timer, so that a burst is priced once, at its end; the newest plan is priced on the
pool. A job that starts after a newer request skips its work; a job that finishes for an old generation is
counted in ``discarded`` and not emitted.

Opening: ``OpenRunner`` reads files (``estimator.session.read_plan``) on a thread of its own per request, so a
file that takes long or never ends (a FIFO with no writer, a pathological include chain) never freezes the
window and never blocks the next open: Cancel, or a newer request, drops it and its thread is left to end
on its own (a daemon thread).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from estimator.estimate import estimate as _estimate
from estimator.parsed import ParsedConfig
from estimator.result import Result
from estimator.session import Opened, OpenRequest, read_plan

DEBOUNCE_MS = 20  # ≤ 30 ms between the last edit of a burst and the start of its estimate

EstimateFn = Callable[..., Result]


@dataclass(frozen=True)
class Outcome:
    generation: int
    kind: str                    # "estimate" | "explain"
    parsed: ParsedConfig
    result: Result | None = None
    error: BaseException | None = None
    elapsed: float = 0.0         # seconds spent in estimate()
    skipped: bool = False        # stale before it started: no work done


class _Signals(QObject):
    done = Signal(object)


class EstimateJob(QRunnable):
    """Prices one plan on a pool thread and reports an Outcome through a queued signal."""

    def __init__(self, generation: int, kind: str, parsed: ParsedConfig, signals: _Signals,
                 latest: Callable[[], int], fn: EstimateFn) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self.generation, self.kind, self.parsed = generation, kind, parsed
        self._signals, self._latest, self._fn = signals, latest, fn

    def run(self) -> None:
        if self.kind == "estimate" and self._latest() != self.generation:
            self._signals.done.emit(Outcome(self.generation, self.kind, self.parsed, skipped=True))
            return
        p = self.parsed
        start = time.perf_counter()
        try:
            result = self._fn(p.model, p.strategy, p.hardware, p.options, explain=self.kind == "explain")
            outcome = Outcome(self.generation, self.kind, p, result=result, elapsed=time.perf_counter() - start)
        except Exception as exc:  # a layout error names the file and key to fix, as the CLI's does
            outcome = Outcome(self.generation, self.kind, p, error=p.locate(exc), elapsed=time.perf_counter() - start)
        self._signals.done.emit(outcome)


class EstimateRunner(QObject):
    """Debounced, generation-checked estimates. Signals carry an ``Outcome`` of the current generation."""

    finished = Signal(object)        # Outcome with result or error, current generation only
    explain_finished = Signal(object)
    started = Signal(int)            # generation submitted to the pool

    def __init__(self, parent: QObject | None = None, *, debounce_ms: int = DEBOUNCE_MS,
                 estimate_fn: EstimateFn | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self.generation = 0
        self.discarded = 0
        self.submitted_at: dict[int, float] = {}
        self._fn: EstimateFn = estimate_fn or _estimate
        self._pending: ParsedConfig | None = None
        self._signals = _Signals()
        self._signals.done.connect(self._on_done)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._debounce_ms = debounce_ms
        self._timer.timeout.connect(self._launch)
        self._explain_pending: set[int] = set()
        self.requested_at: float = 0.0

    def request(self, parsed: ParsedConfig) -> int:
        """Schedule an estimate of ``parsed``; any older request or running job becomes stale."""
        self.generation += 1
        self._pending = parsed
        now, before = time.perf_counter(), self.requested_at
        self.requested_at = now
        if self._timer.isActive() and self._timer.interval() == 0:
            return self.generation  # priced on this turn's launch, which takes the newest plan
        after_pause = (now - before) * 1000 >= self._debounce_ms
        self._timer.start(0 if after_pause else self._debounce_ms)
        return self.generation

    def request_now(self, parsed: ParsedConfig) -> int:
        """Like ``request`` without the debounce (opening a file)."""
        gen = self.request(parsed)
        self._timer.stop()
        self._launch()
        return gen

    def request_explain(self, parsed: ParsedConfig, generation: int) -> None:
        """Price ``parsed`` (the plan of the result drawn for ``generation``) again with Explain traces, on
        demand because traces make an estimate ~5× slower. The receiver checks the generation."""
        if generation in self._explain_pending:
            return
        self._explain_pending.add(generation)
        self.pool.start(EstimateJob(generation, "explain", parsed, self._signals, self._current, self._fn))

    def _current(self) -> int:
        return self.generation

    def _launch(self) -> None:
        if self._pending is None:
            return
        parsed, self._pending = self._pending, None
        self.submitted_at[self.generation] = time.perf_counter()
        self.started.emit(self.generation)
        self.pool.start(EstimateJob(self.generation, "estimate", parsed, self._signals, self._current, self._fn))

    def _on_done(self, outcome: Outcome) -> None:
        if outcome.kind == "explain":
            self._explain_pending.discard(outcome.generation)
            self.explain_finished.emit(outcome)
            return
        if outcome.generation != self.generation or outcome.skipped:
            self.discarded += 1
            return
        self.finished.emit(outcome)

    @property
    def busy(self) -> bool:
        return self._timer.isActive() or self.pool.activeThreadCount() > 0

    def cancel(self) -> None:
        """Forget pending work (closing the document): running jobs finish and are discarded."""
        self._timer.stop()
        self._pending = None
        self.generation += 1

    def shutdown(self, timeout_ms: int = 10000) -> None:
        self.cancel()
        self.pool.waitForDone(timeout_ms)

    def debug_state(self) -> dict[str, Any]:
        return {"generation": self.generation, "discarded": self.discarded, "busy": self.busy}


# ------------------------------------------------------------------------------------------ opening
@dataclass(frozen=True)
class OpenOutcome:
    generation: int
    request: OpenRequest
    opened: Opened | None = None
    error: BaseException | None = None
    elapsed: float = 0.0
    tag: Any = None                  # what the caller attached to the request


ReadFn = Callable[[OpenRequest], Opened]


class OpenRunner(QObject):
    """Reads files off the GUI thread, one daemon thread per request; ``finished`` carries the newest request's
    OpenOutcome only. ``cancel`` forgets the request in flight (its thread may still be blocked in the
    reader: it is abandoned, and what it returns is dropped)."""

    finished = Signal(object)   # OpenOutcome
    started = Signal(int)

    def __init__(self, parent: QObject | None = None, *, read: ReadFn = read_plan) -> None:
        super().__init__(parent)
        self.generation = 0
        self.discarded = 0
        self._read = read
        self._lock = threading.Lock()
        self._running: dict[int, threading.Thread] = {}
        self._signals = _Signals()
        self._signals.done.connect(self._on_done)

    def submit(self, request: OpenRequest, tag: Any = None) -> int:
        """Read ``request`` on a new thread; any earlier request is dropped. Returns the generation."""
        with self._lock:
            self.generation += 1
            generation = self.generation
        thread = threading.Thread(target=self._run, args=(generation, request, tag), daemon=True,
                                  name=f"sapp-open-{generation}")
        with self._lock:
            self._running[generation] = thread
        thread.start()
        self.started.emit(generation)
        return generation

    def _run(self, generation: int, request: OpenRequest, tag: Any) -> None:
        start = time.perf_counter()
        opened: Opened | None = None
        error: BaseException | None = None
        try:
            opened = self._read(request)
        except Exception as exc:  # delivered to the window, which shows it
            error = exc
        with self._lock:
            self._running.pop(generation, None)
        self._signals.done.emit(OpenOutcome(generation, request, opened, error, time.perf_counter() - start, tag))

    def _on_done(self, outcome: OpenOutcome) -> None:
        if outcome.generation != self.generation:
            self.discarded += 1
            return
        self.finished.emit(outcome)

    def cancel(self) -> None:
        """Forget the request in flight (nothing is delivered for it)."""
        with self._lock:
            self.generation += 1

    @property
    def busy(self) -> bool:
        """A request that has not been delivered or cancelled is being read."""
        with self._lock:
            return self.generation in self._running

    @property
    def abandoned(self) -> int:
        """Reader threads still running for requests that no longer count."""
        with self._lock:
            return sum(1 for g in self._running if g != self.generation)

    def shutdown(self, timeout_s: float = 2.0) -> None:
        """Forget everything and give the readers a bounded moment to return (a blocked one is left behind)."""
        self.cancel()
        with self._lock:
            threads = list(self._running.values())
        deadline = time.perf_counter() + timeout_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.perf_counter()))
