"""The Schedule tab: the timeline of one flush per stage (forward, recompute, backward, weight-gradient blocks)
with the stage's memory beneath and the peak instant marked; it agrees with the estimator's in-flight profile
(the most micro-batches in flight per stage) and marks the instant where the simulated memory is highest."""

from __future__ import annotations

import numpy as np
import pytest
from gui_helpers import MF_DSV3, MF_QWEN3, MS_DSV3, edit_and_wait, open_and_wait, type_into

from estimator.schedules import inflight_profile
from estimator.timeline import estimate_timeline

CASES = [(MF_DSV3, "1f1b"), (MF_QWEN3, "interleaved"), (MS_DSV3, "dualpipev")]


def show_schedule(qtbot, window):
    view = window.workspace_tabs.schedule
    with qtbot.waitSignal(view.drawn, timeout=60000) as blocker:
        window.show_tab("schedule")
    return view, blocker.args[0]


@pytest.mark.parametrize(("path", "schedule"), CASES, ids=[c[1] for c in CASES])
def test_the_timeline_agrees_with_the_inflight_profile(qtbot, window, path, schedule) -> None:
    if not path.is_file():
        pytest.skip(f"{path.name} is not in resources/examples")
    result = open_and_wait(qtbot, window, [path])
    view, timeline = show_schedule(qtbot, window)
    st = window.doc.parsed.strategy
    assert timeline.schedule == schedule
    profile = inflight_profile(schedule, st.pp, st.vpp, st.micro_batches, vpp_group=st.vpp_group, n_s=st.n_s,
                               overlap_moe_ep_comm=st.overlap_moe_ep_comm)
    data = view.data()
    assert data["stages"] == st.pp == len(result.stages)
    assert data["max_inflight"] == [p.total for p in profile]
    expected = estimate_timeline(window.doc.parsed.model, st, window.doc.parsed.hardware, window.doc.parsed.options)
    for i, stage in enumerate(expected.stages):
        memory = [op.memory for op in stage.ops]
        k = int(np.argmax(memory))
        assert data["peak_op"][i] == k  # the first instant of the highest memory
        assert data["peak_memory"][i] == pytest.approx(max(memory))
        assert data["peak_time"][i] == pytest.approx(stage.ops[k].end)
        assert data["marker_x"][i] == pytest.approx(stage.ops[k].end)  # where the mark is drawn
    # every operation is drawn; a backward with recompute is split into its recompute and backward parts
    ops = sum(len(s.ops) for s in expected.stages)
    recomputed = sum(1 for b in view.chart.blocks if b.kind == "R")
    assert data["blocks"] == ops + recomputed
    for st_timeline in expected.stages:
        busy = sum(b.end - b.start for b in view.chart.blocks if b.stage == st_timeline.stage)
        assert busy == pytest.approx(st_timeline.busy)
    assert view.stages.rowCount() == st.pp and view.parts.rowCount() >= 2


def test_the_timeline_follows_edits_and_shows_recompute(qtbot, window, dense_plan) -> None:
    open_and_wait(qtbot, window, [dense_plan])
    view, _ = show_schedule(qtbot, window)
    assert "R" in view.data()["kinds"]  # selective recompute re-runs part of the forward
    with qtbot.waitSignal(view.drawn, timeout=60000) as blocker:
        edit_and_wait(qtbot, window, lambda: type_into(qtbot, window.forms.row("strategy.micro_batches").editor,
                                                        "8"))
    assert blocker.args[0].stages[0].ops[-1].microbatch == 7
    assert view.data()["max_inflight"] == [p.total for p in inflight_profile("1f1b", 4, 1, 8)]
    html = view.chart.block_html(view.chart.blocks[0])
    assert "micro-batch 0" in html and "GiB" in html
    from estimator.honest import sig  # times at the step's honest precision

    block, digits = view.chart.blocks[0], view.result.throughput.step.digits
    assert f"{sig(block.start, digits)} – {sig(block.end, digits)} s" in html


def test_a_hidden_tab_simulates_only_when_shown(qtbot, window, dense_plan) -> None:
    open_and_wait(qtbot, window, [dense_plan])
    view = window.workspace_tabs.schedule
    assert view.timeline is None and not view.runner.busy
    show_schedule(qtbot, window)
    assert view.timeline is not None
