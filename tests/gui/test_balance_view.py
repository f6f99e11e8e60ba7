"""The Balance tab: one button runs the balancer on a worker; the before/after bars, offsets and recompute
lists equal ``estimator.balance.balance``'s; Apply is one undoable edit; plans it cannot balance get its
message."""

from __future__ import annotations

import numpy as np
import pytest
from gui_helpers import ARTIFACTS, EXAMPLES, edit_and_wait, open_and_wait
from PySide6.QtCore import Qt

from estimator.balance import balance
from estimator.result import CATEGORIES
from estimator.units import GiB


def run_balance(qtbot, window):
    view = window.workspace_tabs.balance
    with qtbot.waitSignal(view.balanced, timeout=120000) as blocker:
        assert window.run_balance() is not None
    return blocker.args[0]


def test_balance_shows_before_and_after_and_applies_undoably(qtbot, window, dense_plan) -> None:
    original = open_and_wait(qtbot, window, [dense_plan])
    view = window.workspace_tabs.balance
    shown = run_balance(qtbot, window)
    expected = balance(window.doc.parsed)
    assert shown.counts == expected.counts and shown.offsets == expected.offsets
    assert shown.recompute == expected.recompute
    data = view.data()
    chart = data["chart"]
    p = len(expected.after.stages)
    assert list(chart["entry"]) == [0, 1] * p and list(chart["stage"]) == [i for i in range(p) for _ in (0, 1)]
    for bar, (k, i) in enumerate(zip(chart["entry"], chart["stage"], strict=True)):
        stage = (expected.before, expected.after)[k].stages[i]
        for cat in CATEGORIES:
            assert chart["by_category_gib"][cat][bar] == pytest.approx(stage.bytes_by_category[cat] / GiB)
    assert data["offsets"] == [f"{o:+d}" for o in expected.offsets]
    assert data["recompute"] == [f"{f} / {s} / {c}" for f, s, c in zip(
        expected.recompute["full"], expected.recompute["selective"], expected.recompute["comm"], strict=True)]
    for key, value in expected.snippets.items():
        assert f"{key}: {value}" in data["snippets"]
    assert view.apply_button.isEnabled()
    # apply: one undoable edit that puts the balanced layout into the plan
    applied = edit_and_wait(qtbot, window, lambda: qtbot.mouseClick(view.apply_button, Qt.MouseButton.LeftButton))
    assert window.doc.changes_to(expected.strategy) == {}
    np.testing.assert_allclose([s.total for s in applied.stages], [s.total for s in expected.after.stages])
    assert applied.step_time_s == pytest.approx(expected.after.step_time_s)
    assert window.undo_stack.count() == 1 and window.undo_stack.undoText() == "Balance pipeline"
    assert view.applied and not view.apply_button.isEnabled()
    restored = edit_and_wait(qtbot, window, window.undo_stack.undo)
    np.testing.assert_allclose([s.total for s in restored.stages], [s.total for s in original.stages])
    assert not window.doc.is_modified()
    assert view.apply_button.isEnabled()  # the result fits the restored plan again


def test_balance_of_a_mindformers_plan_gives_offsets_and_recompute_lists(qtbot, window) -> None:
    open_and_wait(qtbot, window, [EXAMPLES / "mindformers_deepseek_v3_671b.yaml"])
    shown = run_balance(qtbot, window)
    expected = balance(window.doc.parsed)
    assert shown.offsets == expected.offsets and shown.recompute == expected.recompute
    text = window.workspace_tabs.balance.snippets.toPlainText()
    assert "model.model_config.offset" in text and "recompute_config.recompute" in text


def test_a_plan_the_balancer_cannot_handle_gets_its_message(qtbot, window) -> None:
    open_and_wait(qtbot, window, [EXAMPLES / "torchtitan_llama3_70b.toml"], devices=256)
    view = window.workspace_tabs.balance
    with qtbot.waitSignal(view.failed, timeout=30000) as blocker:
        window.run_balance()
    assert "torchtitan" in blocker.args[0]
    assert "Cannot balance this plan" in view.message.text()
    assert view.result is None and not view.apply_button.isEnabled()
    assert view.run_button.isEnabled()


def test_a_stale_result_cannot_be_applied(qtbot, window, dense_plan) -> None:
    open_and_wait(qtbot, window, [dense_plan])
    view = window.workspace_tabs.balance
    run_balance(qtbot, window)
    from gui_helpers import type_into

    edit_and_wait(qtbot, window, lambda: type_into(qtbot, window.forms.row("strategy.tp").editor, "2"))
    assert view.stale and not view.apply_button.isEnabled()
    assert "changed since" in view.message.text()


def test_cancel_stops_a_long_balance_at_once(qtbot, window) -> None:
    """Llama-3-70B on MindFormers takes tens of seconds to balance; Cancel ends its worker process now."""
    open_and_wait(qtbot, window, [EXAMPLES / "mindformers_llama3_70b.yaml"])
    view = window.workspace_tabs.balance
    with qtbot.waitSignal(view.runner.started, timeout=10000):
        window.run_balance()
    assert view.cancel_button.isEnabled() and not view.run_button.isEnabled()
    # the process starts on the runner's reader thread (the GUI thread never waits for the fork server)
    qtbot.waitUntil(lambda: all(p is not None for p, _e, _r in view.runner._running.values()), timeout=10000)
    processes = [p for p, _e, _r in view.runner._running.values()]
    assert processes
    qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not view.runner.busy, timeout=10000)
    assert all(not p.is_alive() for p in processes)
    assert view.result is None and view.message.text() == "Cancelled."
    assert view.run_button.isEnabled() and not view.cancel_button.isEnabled()


def test_an_interleaved_plan_is_balanced_per_chunk_and_applied(qtbot, window) -> None:
    """Qwen3-32B on MindFormers, pp 4 × vpp 2: offsets and recompute lists per [chunk][stage], applied as one
    undoable edit, then exported into the YAML with the nested lists."""
    from estimator.export import export

    open_and_wait(qtbot, window, [EXAMPLES / "mindformers_qwen3_32b.yaml"])
    view = window.workspace_tabs.balance
    shown = run_balance(qtbot, window)
    assert shown.chunk_offsets is not None and len(shown.chunk_offsets) == 2
    text = view.snippets.toPlainText()
    assert "model.model_config.offset: [[" in text and "[vpp][pp]" in text
    after = shown.after.stages[0].layer_counts
    assert view.table.item(0, 1).text() == f"8+8 → {after[0]}+{after[1]}"  # layers per chunk
    applied = edit_and_wait(qtbot, window, lambda: qtbot.mouseClick(view.apply_button, Qt.MouseButton.LeftButton))
    assert window.doc.parsed.strategy.offset == shown.chunk_offsets
    np.testing.assert_allclose([s.total for s in applied.stages], [s.total for s in shown.after.stages])
    written = export(window.doc.parsed, window.doc.parsed.strategy)
    (text_out,) = written.values()
    assert "offset: [[" in text_out and "recompute: [[" in text_out
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / "gui_panel_balance_interleaved_en.png"))
