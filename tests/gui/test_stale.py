"""Nothing stale (issue 12 item 3) and the CLI/app divergences (item 5): what no longer describes the forms is
greyed with the reason and no verdict is shown for a plan the forms do not hold; the app and ``sapp --set``
follow one edit rule."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from gui_helpers import DSV3_PLAN, edit_and_wait, gated_window, open_and_wait, type_into

from estimator.cli import main as cli_main

BROKEN_PLAN = DSV3_PLAN.read_text().replace("  ep: 8\n", "  ep: 3\n")  # reads fine, cannot be priced


def frames(window):
    return (window.summary_frame, window.charts_frame, window.explain_frame)


def assert_current(window) -> None:
    for frame in frames(window):
        assert not frame.stale and not frame.veil.isVisible(), frame.objectName()
    assert window.summary.verdict.value.text() in ("Fits", "Does not fit")


def assert_stale(window, words: str) -> None:
    for frame in frames(window):
        assert frame.stale and words in frame.reason, (frame.objectName(), frame.reason)
        assert frame.veil.isVisibleTo(window), frame.objectName()
    assert window.summary_frame.caption.isVisibleTo(window)
    assert window.summary.verdict.value.text() == "No verdict"  # never "Fits" for a plan the forms do not hold
    assert window.summary.fits is None


def test_an_invalid_edit_greys_the_numbers_and_drops_the_verdict(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    assert_current(window)
    before = window.chart.data()
    type_into(qtbot, window.forms.row("strategy.tp").editor, "3")  # refused: dp would not be an integer
    assert window.forms.row("strategy.tp").editor.value() == 3  # the forms hold the refused value…
    assert window.doc.parsed.strategy.tp == 4                    # …the plan does not
    assert_stale(window, "the last edit was not applied")
    assert "tp 4" in window.summary_frame.reason  # says which plan the greyed numbers are of
    np.testing.assert_allclose(window.chart.data()["totals_gib"], before["totals_gib"])  # kept, greyed
    edit_and_wait(qtbot, window, lambda: type_into(qtbot, window.forms.row("strategy.tp").editor, "8"))
    assert_current(window)


def test_an_edit_that_cannot_be_priced_greys_the_last_estimate(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    with qtbot.waitSignal(window.estimate_failed, timeout=20000):
        type_into(qtbot, window.forms.row("strategy.ep").editor, "3")
    assert window.doc.parsed.strategy.ep == 3
    assert_stale(window, "it cannot be priced")
    assert "ep 8" in window.summary_frame.reason
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        window.undo_stack.undo()
    assert_current(window)
    assert window.summary.verdict.value.text() == "Fits"


def test_a_file_that_cannot_be_priced_shows_none_of_the_previous_files_bars(qtbot, window, dense_plan,
                                                                             tmp_path) -> None:
    open_and_wait(qtbot, window, [dense_plan])
    assert window.chart.data()["stages"] == 4
    broken = tmp_path / "broken.plan.yaml"
    broken.write_text(BROKEN_PLAN, encoding="utf-8")
    with qtbot.waitSignal(window.estimate_failed, timeout=20000):
        assert window.open_paths([str(broken)])
    assert window.doc.paths == (str(broken),)
    data = window.chart.data()
    assert data["stages"] == 0 and np.asarray(data["totals_gib"]).size == 0  # not the dense plan's 4 bars
    assert window.layer_chart.stage is None
    assert window.summary.verdict.value.text() == "–" and window.summary.fits is None
    assert "R-EP-EXP" in window.banner.text()
    assert window.workspace_tabs.schedule.parsed is None


def test_a_file_that_cannot_be_read_leaves_the_open_one_said_so(qtbot, window, dense_plan, tmp_path) -> None:
    open_and_wait(qtbot, window, [dense_plan])
    bad = tmp_path / "bad.yaml"
    bad.write_text("strategy: [unclosed\n", encoding="utf-8")
    with qtbot.waitSignal(window.open_failed, timeout=20000):
        window.open_paths([str(bad)])
    assert window.doc.paths == (str(dense_plan),)  # the bars and the forms still describe the same plan
    assert "bad.yaml" in window.banner.text() and f"{dense_plan.name} stays open" in window.banner.text()
    assert_current(window)


def test_a_slow_estimate_is_announced_after_a_grace(qtbot, make_window, dsv3_plan) -> None:
    window, gate = gated_window(qtbot, make_window, [dsv3_plan])
    window.edit({"strategy.tp": 8}, "tp 8")
    assert not window.summary_frame.stale  # within the grace nothing flickers
    qtbot.waitUntil(lambda: window.summary_frame.stale, timeout=5000)
    assert_stale(window, "Estimating the plan in the forms")
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        gate.set()
    assert_current(window)


# ------------------------------------------------------------------------------------ divergences
def test_pp_change_gives_the_bars_sapp_estimate_set_gives(qtbot, window, dsv3_plan, capsys) -> None:
    """pp 16 → 8: the app rescales the per-stage offsets and recompute counts exactly as the CLI does."""
    open_and_wait(qtbot, window, [dsv3_plan])
    result = edit_and_wait(qtbot, window, lambda: window.edit({"strategy.pp": 8}, "pp 8"))
    assert cli_main(["estimate", str(dsv3_plan), "--set", "strategy.pp=8", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["peak_stage"] == result.peak_stage
    np.testing.assert_allclose(window.chart.data()["totals_gib"], [s["total"] / 2**30 for s in payload["stages"]],
                               rtol=1e-12)
    assert window.doc.parsed.strategy.offset == (1, 1, 1, 1, 1, 1, 1, -1)


def test_the_app_refuses_to_export_what_sapp_export_refuses(qtbot, window, dsv3_plan, capsys) -> None:
    text = dsv3_plan.read_text()
    open_and_wait(qtbot, window, [dsv3_plan])
    with qtbot.waitSignal(window.estimate_failed, timeout=20000):
        window.edit({"strategy.ep": 3}, "ep 3")
    assert window.export_strategy() is None
    assert cli_main(["export", str(dsv3_plan), "--set", "strategy.ep=3", "--in-place"]) == 1
    cli_error = capsys.readouterr().err
    for code in ("R-EP-EXP", "R-EP-LAYOUT"):
        assert code in window.banner.text() and code in cli_error
    assert dsv3_plan.read_text() == text and not Path(f"{dsv3_plan}.bak").exists()


# ---------------------------------------------------------------------------------- open on a worker
def assert_event_loop_runs(qtbot) -> None:
    """open_paths returned, and the GUI thread goes on handling events (timers fire, repeatedly)."""
    from PySide6.QtCore import QTimer

    fired: list[int] = []
    for k in range(3):
        QTimer.singleShot(10 * k, lambda k=k: fired.append(k))
    qtbot.waitUntil(lambda: len(fired) == 3, timeout=10000)


def test_a_reader_that_never_returns_does_not_freeze_the_window(qtbot, window, dense_plan) -> None:
    release = threading.Event()
    real = window.opener.runner._read

    def stuck(request):
        if request.paths[0].endswith("stuck.yaml"):
            release.wait(30)  # an include diamond, a FIFO with no writer…
        return real(request)

    window.opener.runner._read = stuck
    try:
        assert window.open_paths(["/nowhere/stuck.yaml"])
        assert window.opener.box.isVisibleTo(window) and "stuck.yaml" in window.opener.label.text()
        assert_event_loop_runs(qtbot)
        window.cancel_open()
        assert not window.opener.box.isVisibleTo(window) and not window.opener.runner.busy
        open_and_wait(qtbot, window, [dense_plan])  # the next open is not blocked behind the stuck one
        assert window.doc.paths == (str(dense_plan),)
        assert window.opener.runner.abandoned == 1
    finally:
        release.set()
    qtbot.waitUntil(lambda: window.opener.runner.abandoned == 0, timeout=5000)
    assert window.doc.paths == (str(dense_plan),)  # what the abandoned reader returned was dropped


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs here")
def test_a_fifo_never_freezes_the_window(qtbot, window, dense_plan, tmp_path) -> None:
    import os

    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)
    failed: list[str] = []
    window.open_failed.connect(failed.append)
    assert window.open_paths([str(fifo)])
    assert_event_loop_runs(qtbot)  # still reading (blocked on the FIFO) or refused at once: never frozen
    window.cancel_open()
    open_and_wait(qtbot, window, [dense_plan])
    assert window.doc.paths == (str(dense_plan),)
    try:  # let a reader blocked in open() go
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass  # nobody is reading it (the reader refused the FIFO)
