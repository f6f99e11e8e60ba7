"""The Compare tab: strategies from the forms, the pinned baseline, a search row and another file, drawn as
per-stage stacked bars grouped per stage (a stage only one strategy has is drawn alone) with a table of
differences; every number equals the estimator's."""

from __future__ import annotations

import numpy as np
import pytest
from gui_helpers import edit_and_wait, open_and_wait, run_search, type_into
from PySide6.QtCore import Qt

from estimator.estimate import estimate
from estimator.formats import parse
from estimator.result import CATEGORIES
from estimator.units import GiB


def check_bars(chart_data: dict, results: list) -> None:
    """Every drawn bar is (strategy k, stage i) with the estimate's per-category GiB, grouped around its group:
    stage i with equal depths; with different depths the shallowest plan's stage holding its layers' middle."""
    entries, stages, xs = chart_data["entry"], chart_data["stage"], chart_data["x"]
    expected_bars = sum(len(r.stages) for r in results)
    assert len(xs) == expected_bars
    depths = [len(r.stages) for r in results]
    shallow = min(depths) if len(set(depths)) > 1 else None
    groups = []
    for bar, (k, i, x) in enumerate(zip(entries, stages, xs, strict=True)):
        stage = results[k].stages[i]
        for cat in CATEGORIES:
            assert chart_data["by_category_gib"][cat][bar] == pytest.approx(stage.bytes_by_category[cat] / GiB)
        group = i if shallow is None else (2 * i + 1) * shallow // (2 * depths[k])
        assert abs(x - group) < 0.5
        groups.append(group)
    for g in set(groups):  # within a group: in order left to right, side by side around x = g
        order = [(k, i) for k, i, gg in zip(entries, stages, groups, strict=True) if gg == g]
        assert order == sorted(order)
        positions = [x for x, gg in zip(xs, groups, strict=True) if gg == g]
        assert positions == sorted(positions)
        assert np.mean(positions) == pytest.approx(g)
        assert np.all(np.diff(positions) >= chart_data["width"] * 0.99)  # no overlap


def test_compare_current_pinned_and_a_search_row(qtbot, window, dsv3_plan) -> None:
    first = open_and_wait(qtbot, window, [dsv3_plan])
    window.pin_baseline()
    # an edit (tp 8) becomes the current plan; the pinned baseline stays the tp 4 one
    current = edit_and_wait(qtbot, window, lambda: type_into(qtbot, window.forms.row("strategy.tp").editor, "8"))
    compare = window.workspace_tabs.compare
    assert window.compare_current()
    assert window.compare_pinned()
    search = run_search(qtbot, window, {"tp": "auto", "pp": "auto", "rec": "auto"})
    panel = window.workspace_tabs.search
    pareto_only = next((k for k, r in enumerate(panel.rows) if r.rank is None), None)
    row_index = pareto_only if pareto_only is not None else 0
    panel.select_row(row_index)
    row = panel.rows[row_index].row
    with qtbot.waitSignal(compare.compared, timeout=30000):
        qtbot.mouseClick(panel.compare_button, Qt.MouseButton.LeftButton)
    third = estimate(window.doc.parsed.model, row.strategy, window.doc.parsed.hardware, window.doc.parsed.options)
    results = [current, first, third]
    data = compare.data()
    assert data["tags"] == ["A", "B", "C"]
    check_bars(data["chart"], results)
    table = data["table"]
    for tag, result in zip("ABC", results, strict=True):
        assert table[("peak", tag)] == pytest.approx(result.peak_bytes / GiB)
        assert table[("step", tag)] == pytest.approx(result.step_time_s)
        assert table[("tokens", tag)] == pytest.approx(result.tokens_per_s_per_device)
        assert table[("stages", tag)] == len(result.stages)
        peak_stage = result.stages[result.peak_stage]
        for cat in CATEGORIES:
            assert table[(f"cat:{cat}", tag)] == pytest.approx(peak_stage.bytes_by_category[cat] / GiB)
    for tag, result in (("B", first), ("C", third)):
        assert table[("peak", f"{tag} − A")] == pytest.approx((result.peak_bytes - current.peak_bytes) / GiB)
        assert table[("step", f"{tag} − A")] == pytest.approx(result.step_time_s - current.step_time_s)
        assert table[("cat:activations", f"{tag} − A")] == pytest.approx(
            (result.stages[result.peak_stage].bytes_by_category["activations"]
             - current.stages[current.peak_stage].bytes_by_category["activations"]) / GiB)
    assert compare.table.rowCount() == len(data["table"]) // compare.table.columnCount()
    assert search.ranked
    # step, tokens/s and MFU at the precision the band allows; a difference at the reference's decimal places
    from sapp_gui.compare_view import ROWS

    keys = [key for key, _r, _d in ROWS]
    cell = {key: compare.table.item(keys.index(key), 0).text() for key in ("step", "tokens", "mfu")}
    shown = current.throughput
    assert cell == {"step": shown.step.with_band(), "tokens": shown.tokens.text, "mfu": shown.mfu.text}
    assert compare.table.item(keys.index("step"), 2).text() == shown.step.delta(first.step_time_s -
                                                                                 current.step_time_s)


def test_compare_with_another_file_aligns_other_depths_and_labels_them(qtbot, window, dsv3_plan,
                                                                      dense_plan) -> None:
    """Issue 12: bars of plans with different pp are aligned by the layers they hold and labelled with their
    stage; every entry says what it is (degrees, sequence length, global batch, devices)."""
    dsv3 = open_and_wait(qtbot, window, [dsv3_plan])
    compare = window.workspace_tabs.compare
    window.compare_current()
    with qtbot.waitSignal(compare.compared, timeout=30000):
        assert compare.add_files([str(dense_plan)])
    plan = parse([str(dense_plan)])
    dense = estimate(plan.model, plan.strategy, plan.hardware, plan.options)
    n_a, n_b = len(dsv3.stages), len(dense.stages)
    assert n_a > n_b  # 16 stages beside 4
    data = compare.data()
    chart = data["chart"]
    assert len(chart["x"]) == n_a + n_b
    for bar, (k, i, x) in enumerate(zip(chart["entry"], chart["stage"], chart["x"], strict=True)):
        stage = (dsv3, dense)[k].stages[i]
        assert chart["totals_gib"][bar] == pytest.approx(stage.total / GiB)
        n = (n_a, n_b)[k]
        group = (2 * i + 1) * n_b // (2 * n)  # the shallow plan's stage holding the middle of this one's layers
        assert abs(x - group) < 0.5
    for g in range(n_b):  # group g: B's stage g beside the A stages holding the same layers, no overlap
        members = sorted((x, k, i) for x, k, i in zip(chart["x"], chart["entry"], chart["stage"], strict=True)
                         if abs(x - g) < 0.5)
        assert [(k, i) for _x, k, i in members] == [(0, j) for j in range(g * n_a // n_b, (g + 1) * n_a // n_b)] \
            + [(1, g)]
        assert np.all(np.diff([x for x, *_ in members]) >= chart["width"] * 0.99)
    view = compare.chart
    view.resize(1600, 700)
    view._redraw_tags()
    assert sorted(chart_tags := view.data()["tags"]) == sorted([f"A{i}" for i in range(n_a)] +
                                                               [f"B{i}" for i in range(n_b)]), chart_tags
    legend = view.legend.text()
    assert f"A: pp {n_a}" in legend and f"B: pp {n_b}" in legend
    assert f"(pp {n_b})" in view.plot.getPlotItem().getAxis("bottom").labelText
    assert data["table"][("stages", "B − A")] == n_b - n_a
    rows = [compare.list.item(k).text() for k in range(2)]
    st = plan.strategy
    assert f"seq {st.seq_length:,} · global batch {st.global_batch_size:,} · {st.world_size:,} × A2" in rows[1]
    assert f"pp {len(dsv3.stages)}" in rows[0] and "global batch" in rows[0]
    # remove and clear
    compare.list.setCurrentRow(1)
    compare.remove_selected()
    assert len(compare.entries) == 1 and compare.table.columnCount() == 1
    compare.clear()
    assert compare.entries == [] and len(compare.chart.data()["x"]) == 0


def test_a_file_that_cannot_be_read_is_a_message(qtbot, window, dsv3_plan, tmp_path) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    bad = tmp_path / "bad.yaml"
    bad.write_text("just: text\n", encoding="utf-8")
    compare = window.workspace_tabs.compare
    with qtbot.waitSignal(compare.status, timeout=20000):
        assert compare.add_files([str(bad)])  # read on a worker: the refusal arrives as a message
    assert "bad.yaml" in compare.message.text()
    assert compare.entries == []
    assert np.asarray(compare.chart.data()["x"]).size == 0
