"""Estimates run off the GUI thread: a one-thread QThreadPool, a short debounce, and a generation counter so
that a result computed for an older state is dropped instead of drawn.

``EstimateRunner.request(parsed)`` bumps the generation and (re)starts the debounce timer; when it fires the
newest plan is priced on the pool. A job that starts after a newer request skips its work; a job that
finishes for an old generation is counted in ``discarded`` and not emitted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from estimator.estimate import estimate as _estimate
from estimator.parsed import ParsedConfig
from estimator.result import Result

DEBOUNCE_MS = 20  # ≤ 30 ms between the last edit and the start of its estimate

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
        except Exception as exc:
            outcome = Outcome(self.generation, self.kind, p, error=exc, elapsed=time.perf_counter() - start)
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
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self._launch)
        self._explain_pending: set[int] = set()
        self.requested_at: float = 0.0

    def request(self, parsed: ParsedConfig) -> int:
        """Schedule an estimate of ``parsed``; any older request or running job becomes stale."""
        self.generation += 1
        self._pending = parsed
        self.requested_at = time.perf_counter()
        self._timer.start()
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
