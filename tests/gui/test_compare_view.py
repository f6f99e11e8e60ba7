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
    """Every drawn bar is (strategy k, stage i) with the estimate's per-category GiB, grouped around x = i."""
    entries, stages, xs = chart_data["entry"], chart_data["stage"], chart_data["x"]
    expected_bars = sum(len(r.stages) for r in results)
    assert len(xs) == expected_bars
    for bar, (k, i, x) in enumerate(zip(entries, stages, xs, strict=True)):
        stage = results[k].stages[i]
        for cat in CATEGORIES:
            assert chart_data["by_category_gib"][cat][bar] == pytest.approx(stage.bytes_by_category[cat] / GiB)
        members = [kk for kk, r in enumerate(results) if len(r.stages) > i]
        if len(members) == 1:
            assert x == pytest.approx(i)  # drawn alone, centred on its stage
        assert abs(x - i) < 0.5
    for i in set(stages.tolist()):  # within a stage: in order left to right, side by side around x = i
        order = [k for k, s in zip(entries, stages, strict=True) if s == i]
        assert order == sorted(order)
        positions = [x for x, s in zip(xs, stages, strict=True) if s == i]
        assert positions == sorted(positions)
        assert np.mean(positions) == pytest.approx(i)
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


def test_compare_with_another_file_draws_lone_stages_alone(qtbot, window, dsv3_plan, dense_plan) -> None:
    dsv3 = open_and_wait(qtbot, window, [dsv3_plan])
    compare = window.workspace_tabs.compare
    window.compare_current()
    with qtbot.waitSignal(compare.compared, timeout=30000):
        assert compare.add_files([str(dense_plan)])
    plan = parse([str(dense_plan)])
    dense = estimate(plan.model, plan.strategy, plan.hardware, plan.options)
    data = compare.data()
    check_bars(data["chart"], [dsv3, dense])
    chart = data["chart"]
    lone = [x for x, s in zip(chart["x"], chart["stage"], strict=True) if s >= len(dense.stages)]
    assert lone == [float(i) for i in range(len(dense.stages), len(dsv3.stages))]
    assert data["table"][("stages", "B − A")] == len(dense.stages) - len(dsv3.stages)
    assert window.workspace_tabs.compare.chart.legend.text().count("=") >= 2
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
