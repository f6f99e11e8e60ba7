"""The estimate worker: off the GUI thread, debounced, and results of older requests discarded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from gui_helpers import DSV3_PLAN, open_and_wait

from estimator import estimate
from estimator.formats import parse
from estimator.parsed import apply_changes
from sapp_gui.worker import DEBOUNCE_MS, EstimateRunner


@pytest.fixture
def plans():
    base = parse([DSV3_PLAN])
    return base, apply_changes(base, {"strategy.tp": 8})


class GatedEstimate:
    """estimate() that blocks its first call until released, recording which thread ran each call."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls: list[tuple[int, int]] = []  # (tp, thread id)

    def __call__(self, model, strategy, hardware, options, explain=False):
        self.calls.append((strategy.tp, threading.get_ident()))
        if len(self.calls) == 1:
            self.started.set()
            assert self.release.wait(20)
        return estimate(model, strategy, hardware, options, explain=explain)


def test_stale_result_is_discarded(qtbot, plans) -> None:
    first, second = plans
    gate = GatedEstimate()
    runner = EstimateRunner(estimate_fn=gate)
    try:
        emitted = []
        runner.finished.connect(emitted.append)
        runner.request_now(first)                       # generation 1 starts and blocks in the pool
        assert gate.started.wait(20)
        gen2 = runner.request(second)                   # generation 2 while 1 is still running
        with qtbot.waitSignal(runner.finished, timeout=20000) as blocker:
            gate.release.set()
        outcome = blocker.args[0]
        assert outcome.generation == gen2 == 2
        assert outcome.result.stages and outcome.parsed.strategy.tp == 8
        qtbot.wait(50)
        assert [o.generation for o in emitted] == [2]   # the tp=4 result never reached the GUI
        assert runner.discarded == 1
        gui_thread = threading.get_ident()
        assert all(thread != gui_thread for _, thread in gate.calls)  # the GUI thread never computes
    finally:
        gate.release.set()
        runner.shutdown()


def test_rapid_requests_are_debounced_into_one_estimate(qtbot, plans) -> None:
    first, second = plans
    calls = []

    def counting(*args, **kwargs):
        calls.append(args[1].tp)
        return estimate(*args, **kwargs)

    runner = EstimateRunner(estimate_fn=counting)
    try:
        start = time.perf_counter()
        with qtbot.waitSignal(runner.finished, timeout=20000) as blocker:
            for plan in (first, second, first, second):
                runner.request(plan)
        assert calls == [8]                      # only the newest plan was priced
        assert blocker.args[0].generation == 4
        assert DEBOUNCE_MS <= 30
        assert time.perf_counter() - start < 10
    finally:
        runner.shutdown()


def test_an_edit_after_a_pause_starts_at_once_and_a_burst_waits_for_its_end(qtbot, plans) -> None:
    first, second = plans
    runner = EstimateRunner(debounce_ms=1000)  # long enough to tell the two apart under load
    try:
        started: list[float] = []
        runner.started.connect(lambda _g: started.append(time.perf_counter()))
        with qtbot.waitSignal(runner.finished, timeout=20000):
            asked = time.perf_counter()
            runner.request(first)
        assert started[0] - asked < 0.5  # the next turn of the event loop, not the debounce
        with qtbot.waitSignal(runner.finished, timeout=20000) as blocker:
            runner.request(second)  # right after the first: part of a burst
            qtbot.wait(300)
            asked = time.perf_counter()
            runner.request(first)   # and another: the debounce starts again from here
        # a coarse timer fires within 5 % of its interval: 0.95 s after the last request, not 0.7 after the one before
        assert len(started) == 2 and started[1] - asked >= 0.9
        assert blocker.args[0].parsed is first
    finally:
        runner.shutdown()


def test_errors_come_back_as_outcomes(qtbot, plans) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    runner = EstimateRunner(estimate_fn=broken)
    try:
        with qtbot.waitSignal(runner.finished, timeout=20000) as blocker:
            runner.request_now(plans[0])
        assert isinstance(blocker.args[0].error, RuntimeError)
    finally:
        runner.shutdown()


def test_window_drops_stale_results(qtbot, make_window) -> None:
    """Edits faster than the worker: only the newest state ends up on the chart."""
    gate = GatedEstimate()
    window = make_window(estimate_fn=gate)
    with qtbot.waitSignal(window.document_opened, timeout=20000):
        window.open_paths([str(DSV3_PLAN)])  # read on a worker
    assert gate.started.wait(20)  # the first estimate (tp 4) is running
    window.edit({"strategy.tp": 8}, "tp 8")
    window.edit({"strategy.tp": 2}, "tp 2")
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000) as blocker:
        gate.release.set()
    assert window.doc.parsed.strategy.tp == 2
    assert blocker.args[0].world_size == 1024 and window.result is blocker.args[0]
    assert window.summary.devices.sub.text().startswith("dp 32 × tp 2")
    assert window.runner.discarded >= 1


def test_pyside_is_not_the_release_that_drops_references() -> None:
    """PySide6-Essentials 6.12.0 frees None/True on CPython 3.11 after a few thousand Qt calls (exit 134);
    requirements/constraints.txt pins 6.11.3 and pyproject excludes 6.12.0."""
    import sys

    import PySide6

    if sys.version_info < (3, 12):
        assert PySide6.__version__ != "6.12.0"


def test_open_draws_within_the_timeout(qtbot, window) -> None:
    assert open_and_wait(qtbot, window, [DSV3_PLAN]).stages


def test_a_layout_refusal_names_the_file_and_key_in_the_app(qtbot, tmp_path) -> None:
    """The app's worker says where to fix a refused offset, as the CLI does (ParsedConfig.locate): a MindFormers
    mcore snippet whose 4 layers over 3 stages leave a remainder of 1 that offset 0 does not place."""
    source = (Path(__file__).resolve().parents[1] / "fixtures" / "mindformers" / "tiny_mcore_moe.yaml").read_text()
    path = tmp_path / "three.yaml"
    path.write_text(source.replace("    offset: [1, -1]", "    offset: 0").replace("  pipeline_stage: 2",
                    "  pipeline_stage: 3").replace("  data_parallel: 4", "  data_parallel: 2"))
    runner = EstimateRunner()
    try:
        with qtbot.waitSignal(runner.finished, timeout=60000) as blocker:
            runner.request_now(parse([path]))
        error = blocker.args[0].error
        assert str(error).startswith(f"{path}, key 'model.model_config.offset': [E-OFF-SCALAR]")
        assert error.localized("zh_CN").startswith(f"{path}，键 'model.model_config.offset'：[E-OFF-SCALAR]")
    finally:
        runner.shutdown()
