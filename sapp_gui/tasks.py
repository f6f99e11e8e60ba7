"""Background jobs of the analysis panels: one job at a time per runner, with a generation counter so that
only the newest request's outcome is delivered. ``TaskRunner`` runs short jobs (schedule, compare, one
estimate) on a daemon thread; ``ProcessRunner`` runs the long CPU-bound ones (search, balance) in a child
process, so that they neither starve the GUI thread of the GIL nor outlive a Cancel.

Why not the estimate runner's QThreadPool: a balance can run for tens of seconds and cannot be interrupted,
and a pool's destructor waits for its jobs, so quitting would hang. A daemon thread dies with the process;
``shutdown`` still joins (bounded) so tests end with no job running.

``submit(fn, *args)`` supersedes any earlier request: a queued one is dropped, a running one is told to stop
(its ``cancel`` event is set) and its outcome is discarded. ``cancel()`` asks the running job to stop and
*keeps* its outcome (a cancelled search returns what it priced so far, flagged ``cancelled``).
Jobs that accept ``progress``/``cancel`` keywords get them (``controls=True``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal

from estimator.errors import SappError
from estimator.messages import ENGLISH


class WorkerError(SappError):
    """An estimator error raised in a worker process, with its message in each language the app speaks."""

    def __init__(self, text: str, said: dict[str, str] | None = None) -> None:
        super().__init__(text)
        self.said = dict(said or {})

    def localized(self, language: str = ENGLISH) -> str:
        return self.said.get(language) or str(self)


@dataclass(frozen=True)
class TaskOutcome:
    generation: int
    value: Any = None
    error: BaseException | None = None
    elapsed: float = 0.0
    cancelled: bool = False     # the user asked the job to stop (the value may be partial)
    tag: Any = None             # what the caller attached to the request


class _Bridge(QObject):
    """Lives in the GUI thread; signals emitted from the job thread are queued to it."""

    done = Signal(object)
    progress = Signal(int, int, int, str)  # generation, done, total, phase


class _RunnerBase(QObject):
    """What both runners share: the signals, the bridge from worker threads to the GUI thread, and delivering
    only the newest generation's outcome and progress."""

    finished = Signal(object)            # TaskOutcome of the current generation
    progress = Signal(int, int, str)     # done, total, phase (current generation only)
    started = Signal(int)                # generation that started running

    def __init__(self, parent: QObject | None, name: str) -> None:
        super().__init__(parent)
        self.name = name
        self.generation = 0
        self.discarded = 0
        self._lock = threading.Lock()
        self._user_cancelled: set[int] = set()
        self._bridge = _Bridge()  # no parent: it must outlive a window destroyed while a job still runs
        self._bridge.done.connect(self._on_done)
        self._bridge.progress.connect(self._on_progress)

    # ------------------------------------------------------------------------------ GUI thread side
    def _on_done(self, outcome: TaskOutcome) -> None:
        if outcome.generation != self.generation:
            self.discarded += 1
            return
        self.finished.emit(outcome)

    def _on_progress(self, generation: int, done: int, total: int, phase: str) -> None:
        if generation == self.generation:
            self.progress.emit(done, total, phase)


@dataclass
class _Job:
    generation: int
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    controls: bool
    tag: Any
    cancel: threading.Event


class TaskRunner(_RunnerBase):
    """Runs one callable at a time off the GUI thread; ``finished`` carries the newest request's outcome."""

    def __init__(self, parent: QObject | None = None, name: str = "task") -> None:
        super().__init__(parent, name)
        self._pending: _Job | None = None
        self._running: _Job | None = None
        self._thread: threading.Thread | None = None
        self._active = False  # a thread is looping (set and cleared under the lock: no lost wake-up)

    # ------------------------------------------------------------------------------------ requests
    def submit(self, fn: Callable[..., Any], *args: Any, controls: bool = False, tag: Any = None) -> int:
        """Run ``fn(*args)`` (with ``progress=``/``cancel=`` keywords when ``controls``); returns its generation."""
        with self._lock:
            self.generation += 1
            job = _Job(self.generation, fn, args, controls, tag, threading.Event())
            if self._running is not None:
                self._running.cancel.set()  # superseded: stop early, the outcome is dropped anyway
            self._pending = job
            start = not self._active
            self._active = True
        if start:
            thread = threading.Thread(target=self._loop, name=f"sapp-{self.name}", daemon=True)
            self._thread = thread
            thread.start()
        return job.generation

    def cancel(self) -> None:
        """Ask the running job to stop; its (partial) outcome is still delivered, flagged ``cancelled``."""
        with self._lock:
            self._pending = None
            if self._running is not None:
                self._user_cancelled.add(self._running.generation)
                self._running.cancel.set()

    def discard(self) -> None:
        """Forget every request: nothing running or queued will be delivered."""
        with self._lock:
            self.generation += 1
            self._pending = None
            if self._running is not None:
                self._running.cancel.set()

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._active

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Discard everything and wait (bounded) for the running job to return."""
        self.discard()
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    # --------------------------------------------------------------------------------- the thread
    def _loop(self) -> None:
        while True:
            with self._lock:
                job, self._pending = self._pending, None
                self._running = job
                if job is None:
                    self._active = False
                    return
            self._run(job)
            with self._lock:
                self._running = None

    def _run(self, job: _Job) -> None:
        bridge = self._bridge
        start = time.perf_counter()
        kwargs: dict[str, Any] = {}
        if job.controls:
            def report(done: int, total: int, phase: str) -> None:
                bridge.progress.emit(job.generation, int(done), int(total), str(phase))
            kwargs = {"progress": report, "cancel": job.cancel}
        try:
            value, error = job.fn(*job.args, **kwargs), None
        except Exception as exc:  # delivered to the panel, which shows it
            value, error = None, exc
        cancelled = job.generation in self._user_cancelled
        bridge.done.emit(TaskOutcome(job.generation, value, error, time.perf_counter() - start, cancelled, job.tag))

    def _on_done(self, outcome: TaskOutcome) -> None:
        self._user_cancelled.discard(outcome.generation)
        super()._on_done(outcome)


class ProcessRunner(_RunnerBase):
    """Like TaskRunner, but each job runs in its own process (``jobs.child_main``): a CPU-bound search or
    balance then never competes with the GUI thread for the GIL (a worker *thread* would make every Python
    callback of a repaint wait for it), and a superseded or discarded job is stopped at once (terminated).
    ``cancel()`` still asks the job to stop itself, so a cancelled search returns its partial result.

    ``fn`` and its arguments must pickle (module-level functions, estimator records)."""

    def __init__(self, parent: QObject | None = None, name: str = "process") -> None:
        super().__init__(parent, name)
        self._running: dict[int, tuple[Any, Any, threading.Thread]] = {}  # generation -> (process, event, reader)

    def submit(self, fn: Callable[..., Any], *args: Any, controls: bool = False, tag: Any = None) -> int:
        from . import jobs

        self.discard()  # one job at a time: the older one is stopped now
        ctx = jobs.context()
        with self._lock:
            self.generation += 1
            generation = self.generation
        cancel = ctx.Event()
        # the process starts on the reader thread: the first start waits for the fork server to import the
        # estimator (~0.4 s), which the GUI thread must not
        reader = threading.Thread(target=self._run, args=(generation, ctx, fn, args, controls, cancel, tag),
                                  daemon=True, name=f"sapp-{self.name}-reader-{generation}")
        with self._lock:
            self._running[generation] = (None, cancel, reader)
        reader.start()
        self.started.emit(generation)
        return generation

    def cancel(self) -> None:
        """Ask the running job to stop; its (partial) outcome is delivered, flagged ``cancelled``."""
        with self._lock:
            for generation, (_process, event, _reader) in self._running.items():
                self._user_cancelled.add(generation)
                event.set()

    def discard(self) -> None:
        """Forget every request and stop the running job at once (one still starting stops as it starts)."""
        with self._lock:
            self.generation += 1
            running = list(self._running.values())
        for process, _event, _reader in running:
            if process is not None and process.is_alive():
                process.terminate()

    @property
    def busy(self) -> bool:
        with self._lock:
            return bool(self._running)

    def shutdown(self, timeout_s: float = 10.0) -> None:
        self.discard()
        with self._lock:
            readers = [reader for _p, _e, reader in self._running.values()]
        for reader in readers:
            reader.join(timeout_s)

    def _run(self, generation: int, ctx: Any, fn: Callable[..., Any], args: tuple[Any, ...], controls: bool,
             cancel: Any, tag: Any) -> None:
        """The reader thread: start the job's process, then relay its messages."""
        from . import jobs

        start = time.perf_counter()
        receive, send = ctx.Pipe(duplex=False)
        process = ctx.Process(target=jobs.child_main, args=(send, fn, args, controls, cancel),
                              name=f"sapp-{self.name}-{generation}", daemon=True)
        try:
            process.start()
        except Exception as exc:  # e.g. arguments that do not pickle: an outcome, not a silent thread death
            send.close()
            receive.close()
            with self._lock:
                self._running.pop(generation, None)
            self._bridge.done.emit(TaskOutcome(generation, None, RuntimeError(
                f"cannot start the worker process: {type(exc).__name__}: {exc}"), time.perf_counter() - start,
                False, tag))
            return
        send.close()
        with self._lock:
            superseded = generation != self.generation
            self._running[generation] = (process, cancel, threading.current_thread())
        if superseded:
            process.terminate()
        self._read(generation, receive, process, tag, start)

    def _read(self, generation: int, conn: Any, process: Any, tag: Any, start: float) -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            while True:
                message = conn.recv()
                if message[0] == "progress":
                    self._bridge.progress.emit(generation, *message[1:])
                    continue
                if message[0] == "done":
                    value = message[1]
                else:
                    _kind, is_sapp, type_name, text, said = message
                    error = WorkerError(text, said) if is_sapp else RuntimeError(f"{type_name}: {text}")
                break
        except (EOFError, OSError):
            error = RuntimeError("the worker process stopped" if process.exitcode in (None, 0)
                                 else f"the worker process stopped (exit code {process.exitcode})")
        finally:
            conn.close()
        process.join(5)
        with self._lock:
            self._running.pop(generation, None)
            cancelled = generation in self._user_cancelled
            self._user_cancelled.discard(generation)
        self._bridge.done.emit(TaskOutcome(generation, value, error, time.perf_counter() - start, cancelled, tag))
