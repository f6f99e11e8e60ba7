"""Step time in the summary tiles (with its breakdown), File ▸ Export report (HTML and Markdown), chart exports
of the new panels, and the background task runner the panels share."""

from __future__ import annotations

import threading

import pytest
from gui_helpers import open_and_wait, run_search

from sapp_gui.tasks import TaskRunner


def test_the_mfu_tile_names_its_peak_and_an_fp8_plan_above_100_percent_says_why(qtbot, window, tmp_path) -> None:
    """P-MFU-PEAK: MFU is against the device's dense BF16 peak, for FP8 plans too; the tile says so, its tooltip
    gives the peak and, for an FP8 plan, how far above it the FP8 matmuls run; past 100 % the tile says why."""
    import dataclasses

    from gui_helpers import EXAMPLES

    path = tmp_path / "tt.toml"
    path.write_text((EXAMPLES / "torchtitan_llama3_70b.toml").read_text(encoding="utf-8"), encoding="utf-8")
    result = open_and_wait(qtbot, window, [path], devices=256)
    card = window.summary.mfu
    assert card.caption.text() == "MFU of BF16 peak" and result.mfu_peak == "bf16"
    assert "dense BF16 peak, 989.4 TFLOP/s" in card.toolTip() and "FP8" not in card.toolTip()
    from gui_helpers import edit_and_wait

    fp8 = edit_and_wait(qtbot, window, lambda: window.edit({"strategy.fp8": "tensorwise"}, "fp8"))
    assert fp8.mfu_peak == "bf16" and card.caption.text() == "MFU of BF16 peak"
    assert "FP8 matmuls run at up to 2× that peak" in card.toolTip()
    assert "above" not in card.sub.text()
    # an FP8 plan past 100 % of the BF16 peak (a calibrated fast device): a number that explains itself
    fast = dataclasses.replace(fp8, step=dataclasses.replace(fp8.step, mfu=1.3), step_band=None)
    window.summary.set_result(window.doc.shown.parsed, fast)
    assert card.value.text() == "130%" and card.sub.text().endswith("FP8 runs above the BF16 peak")
    window.set_language("zh_CN")
    assert "BF16" in card.caption.text() and card.caption.text() != "MFU of BF16 peak"


def test_summary_shows_step_time_throughput_and_mfu(qtbot, window, dsv3_plan) -> None:
    result = open_and_wait(qtbot, window, [dsv3_plan])
    tiles = window.summary.data()
    # the preset's efficiency band spans more than 10 % of the step: two significant digits, the band beneath
    fast, slow = result.step_band
    assert fast < result.step_time_s < slow and (slow - fast) / result.step_time_s > 0.10

    def two_digits(x: float) -> str:
        return f"{float(f'{x:.2g}'):,g}"

    assert tiles["step_time"] == (f"{two_digits(result.step_time_s)} s", f"{two_digits(fast)}–{two_digits(slow)} s")
    assert tiles["throughput"][0] == two_digits(result.tokens_per_s_per_device)
    assert tiles["mfu"][0] == f"{two_digits(result.mfu * 100)}%"
    # throughput and MFU scale as 1/step time
    low, high = result.tokens_band
    assert low == pytest.approx(result.tokens_per_s_per_device * result.step_time_s / slow)
    assert high == pytest.approx(result.tokens_per_s_per_device * result.step_time_s / fast)
    tip = window.summary.step_time.toolTip()
    largest = max(result.parts, key=result.parts.get)
    assert f"&nbsp;{two_digits(result.parts[largest])} s" in tip  # the parts at the step's precision too
    assert f"Step time {two_digits(result.step_time_s)} s ({two_digits(fast)}–{two_digits(slow)})" in tip
    assert tip.count("<tr>") == sum(1 for v in result.parts.values() if v > 0)
    # the tiles re-flow: one row when wide, more rows when narrow, never wider than the window allows
    window.summary.resize(1300, window.summary.height())
    assert window.summary.columns_for(1300) == 10
    assert window.summary.columns_for(600) == 5
    assert window.summary.minimumWidth() < 400


@pytest.mark.parametrize("plan", ["dense_plan", "dsv3_plan"])
def test_peak_and_headroom_tiles_agree(qtbot, window, plan, request) -> None:
    """Peak is the device peak (the optimizer step included); Headroom's caption names the limit it is measured
    against, so the two tiles add up: budget − peak, or with a framework pool the smaller of pool − allocator peak
    and device − peak."""
    result = open_and_wait(qtbot, window, [request.getfixturevalue(plan)])
    tiles = window.summary.data()

    def gib(text: str) -> float:
        return float(text.split()[0].replace(",", ""))

    peak, headroom = gib(tiles["peak"][0]), gib(tiles["headroom"][0])
    assert peak == pytest.approx(result.peak_bytes / 2**30, abs=0.006)
    caption = tiles["headroom"][1]
    if result.framework_limit is None:
        assert caption == f"budget {result.budget / 2**30:,.2f} GiB"
        assert peak + headroom == pytest.approx(result.budget / 2**30, abs=0.011)
    elif caption.startswith("pool"):
        pool, allocated = (float(part.split()[-2].replace(",", "")) for part in caption.split("−"))
        assert pool - allocated == pytest.approx(headroom, abs=0.011)
        assert allocated == pytest.approx(result.allocator_peak_bytes / 2**30, abs=0.006)
    else:
        device = float(caption.split()[1].replace(",", ""))
        assert device - peak == pytest.approx(headroom, abs=0.011)


def test_export_report_html_and_markdown(qtbot, window, dsv3_plan, tmp_path) -> None:
    result = open_and_wait(qtbot, window, [dsv3_plan])
    html = window.export_report(tmp_path / "out" / "plan.html")
    assert html == [str(tmp_path / "out" / "plan.html")]
    text = (tmp_path / "out" / "plan.html").read_text(encoding="utf-8")
    assert "<svg" in text and "Memory per stage" in text and window.doc.parsed.model.name in text
    assert f"{result.peak_bytes / 2**30:.2f} GiB" in text
    assert "Step time" in text and "Assumptions" in text
    md = window.export_report(tmp_path / "plan.md")
    assert sorted(md) == sorted([str(tmp_path / "plan.md"), str(tmp_path / "plan.svg")])
    body = (tmp_path / "plan.md").read_text(encoding="utf-8")
    assert "![per-stage memory](plan.svg)" in body and "| stage |" in body
    assert (tmp_path / "plan.svg").read_text(encoding="utf-8").startswith("<svg")
    # a name without a suffix gets .html
    assert window.export_report(tmp_path / "noext") == [str(tmp_path / "noext.html")]
    assert window.actions_.report.isEnabled()


def test_every_chart_exports_png_and_svg(qtbot, window, dsv3_plan, tmp_path) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    run_search(qtbot, window, {"tp": "auto", "pp": "auto", "rec": "fixed"})
    window.compare_current()
    for k, (_title, chart) in enumerate(window.exportable_charts()):
        for kind in chart.export_kinds():
            path = tmp_path / f"chart{k}.{kind}"
            getattr(chart, f"export_{kind}")(path)
            assert path.stat().st_size > 50, (chart.objectName(), kind)


def test_task_runner_delivers_only_the_newest_request(qtbot) -> None:
    runner = TaskRunner(name="test")
    gate = threading.Event()
    outcomes = []
    runner.finished.connect(outcomes.append)

    def slow(x, progress=None, cancel=None):
        gate.wait(10)
        return x

    runner.submit(slow, 1, controls=True)
    runner.submit(slow, 2, controls=True)          # supersedes 1
    with qtbot.waitSignal(runner.finished, timeout=10000) as blocker:
        runner.submit(slow, 3, controls=True)      # supersedes 2 (dropped before it ran)
        gate.set()
    assert blocker.args[0].value == 3 and not blocker.args[0].cancelled
    qtbot.waitUntil(lambda: not runner.busy, timeout=10000)
    assert [o.value for o in outcomes] == [3]

    def until_cancelled(progress=None, cancel=None):
        progress(1, 2, "price")
        assert cancel.wait(10)
        return "partial"

    with qtbot.waitSignal(runner.progress, timeout=10000):
        runner.submit(until_cancelled, controls=True)
    with qtbot.waitSignal(runner.finished, timeout=10000) as blocker:
        runner.cancel()
    assert blocker.args[0].value == "partial" and blocker.args[0].cancelled

    def fails():
        raise ValueError("boom")

    with qtbot.waitSignal(runner.finished, timeout=10000) as blocker:
        runner.submit(fails)
    assert isinstance(blocker.args[0].error, ValueError)
    runner.shutdown()
    assert not runner.busy


@pytest.mark.parametrize("name", ["memory", "search", "compare", "balance", "schedule"])
def test_analysis_actions_follow_the_document(qtbot, window, dense_plan, name) -> None:
    actions = window.actions_
    assert not actions.named["run_search"].isEnabled() and not actions.report.isEnabled()
    open_and_wait(qtbot, window, [dense_plan])
    assert actions.named["run_search"].isEnabled() and actions.report.isEnabled()
    actions.named[f"show_{name}"].trigger()
    assert window.workspace_tabs.currentWidget() is window.workspace_tabs.page(name)


def test_process_runner_starts_off_the_gui_thread_and_keeps_only_the_newest(qtbot) -> None:
    from sapp_gui.tasks import ProcessRunner

    runner = ProcessRunner(name="test")
    outcomes = []
    runner.finished.connect(outcomes.append)
    runner.submit(pow, 2, 5)                       # superseded while its process may still be starting
    with qtbot.waitSignal(runner.finished, timeout=30000) as blocker:
        runner.submit(pow, 2, 10)
    assert blocker.args[0].value == 1024 and blocker.args[0].error is None
    qtbot.waitUntil(lambda: not runner.busy, timeout=10000)
    assert [o.value for o in outcomes] == [1024]
    # arguments that cannot travel to the worker are an outcome naming the problem, not a dead thread
    with qtbot.waitSignal(runner.finished, timeout=10000) as blocker:
        runner.submit(pow, lambda: 0, 2)
    assert "cannot start the worker process" in str(blocker.args[0].error)
    runner.shutdown()
    assert not runner.busy


def test_panels_built_late_catch_up_with_the_document(qtbot, make_window, dense_plan) -> None:
    window = make_window()
    tabs = window.workspace_tabs
    tabs.build_all = lambda: None  # keep them unbuilt: only use builds them here
    open_and_wait(qtbot, window, [dense_plan])
    assert not tabs._panels
    assert tabs.search.space.devices.value() == 64  # dp 4 × tp 4 × pp 4 of the open plan
    assert tabs.schedule.parsed is window.doc.parsed
    # a panel built late is wired like the others: Apply from the search lands in the forms
    with qtbot.waitSignal(window.estimate_drawn, timeout=10000):
        tabs.search.apply_requested.emit({"strategy.tp": 2}, "Apply test")
    assert window.doc.parsed.strategy.tp == 2 and window.doc.parsed.strategy.dp == 8
