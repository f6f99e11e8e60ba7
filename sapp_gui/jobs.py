"""The child side of ``tasks.ProcessRunner``: runs one job (a search, a balance) in a separate process and
reports progress and the outcome over a pipe. No Qt imports, so a child starts fast and never loads Qt.

Messages (child → parent): ``("progress", done, total, phase)`` and finally ``("done", value)`` or
``("error", is_sapp_error, type_name, message, said)`` — exceptions travel as text because not every exception
pickles back (ConfigError takes keyword arguments); ``said`` is an estimator error's message in each language the
app speaks (``{language: text}``, empty for other errors).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from collections.abc import Callable
from typing import Any

PRELOAD = ["numpy", "estimator.estimate", "estimator.search", "estimator.balance", "sapp_gui.jobs"]
_context: Any = None


def context() -> Any:
    """The multiprocessing context: a fork server with the estimator preloaded on Linux (a job starts in a few
    milliseconds and never inherits the GUI's threads), spawn elsewhere."""
    global _context
    if _context is None:
        # a job computes on one core at a lower priority, so the window keeps the other and stays responsive
        # on a two-core machine (numpy reads these when the fork server imports it)
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, "1")
        if sys.platform.startswith("linux"):
            _context = multiprocessing.get_context("forkserver")
            _context.set_forkserver_preload(PRELOAD)
        else:
            _context = multiprocessing.get_context("spawn")
    return _context


def warm_up() -> None:
    """Start the fork server now (it imports the estimator in the background) so the first job starts fast."""
    ctx = context()
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def search_job(parsed: Any, space: Any, progress: Any = None, cancel: Any = None) -> Any:
    """``estimator.search.search`` for the worker process. A re-estimated row whose Result cannot travel back
    (the Results of FSDP2 plans keep a closure that prices their layers on demand) loses it; the Search tab
    estimates such a row when it is selected."""
    import pickle

    from estimator.search import search

    result = search(parsed, space, progress=progress, cancel=cancel)
    current = [result.current.row] if result.current is not None else []
    for row in (*result.ranked, *result.pareto, *current):
        if row.result is not None:
            try:
                pickle.dumps(row.result)
            except Exception:
                row.result = None
    return result


def child_main(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...], controls: bool, cancel: Any) -> None:
    """Entry point of the child process."""
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: no os.nice on Windows
        os.nice(5)
    try:
        kwargs: dict[str, Any] = {}
        if controls:
            def progress(done: int, total: int, phase: str) -> None:
                conn.send(("progress", int(done), int(total), str(phase)))

            kwargs = {"progress": progress, "cancel": cancel.is_set}
        value = fn(*args, **kwargs)
        try:
            conn.send(("done", value))
        except Exception as exc:  # the value does not pickle: say so instead of a broken pipe
            conn.send(("error", False, type(exc).__name__, f"the result cannot be sent back from the worker: {exc}",
                       {}))
    except BaseException as exc:  # everything goes back to the GUI, which shows it
        from estimator.errors import SappError
        from estimator.messages import LANGUAGES

        said = {language: exc.localized(language) for language in LANGUAGES} if isinstance(exc, SappError) else {}
        conn.send(("error", isinstance(exc, SappError), type(exc).__name__, str(exc), said))
    finally:
        conn.close()
