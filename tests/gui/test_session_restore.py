"""Issue 12 "Session": the search space, the pinned baseline and the compare set survive a restart (kept by
the library's session in the user config folder, estimator/session/keeping.py); the baseline and the compared
plans come back priced again from their files, never as stored numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gui_helpers import edit_and_wait, open_and_wait
from PySide6.QtCore import Qt


def _kept_file() -> Path:
    return Path(os.environ["SAPP_CONFIG_DIR"]) / "session.json"


def test_space_baseline_and_compare_set_survive_a_restart(qtbot, make_window, dense_plan, tmp_path) -> None:
    first = make_window()
    open_and_wait(qtbot, first, [dense_plan])
    edit_and_wait(qtbot, first, lambda: first.edit({"strategy.tp": 8}))
    first.pin_baseline()
    pinned = first.doc.pinned
    assert pinned is not None
    first.show_tab("search")
    space = first.workspace_tabs.search.space
    space.set_dims({"tp": ("list", "2,4"), "pp": "fixed", "rec": "auto", "cp": "auto"})
    space.top_k.setValue(7)
    edit_and_wait(qtbot, first, lambda: first.edit({"strategy.tp": 2}))
    assert first.compare_current()
    qtbot.waitUntil(lambda: not first.workspace_tabs.compare.pending, timeout=20000)
    assert first.compare_pinned()
    first.shutdown_workers()  # what closing the window does: the pending state is written
    kept = json.loads(_kept_file().read_text(encoding="utf-8"))
    assert [c["name"] for c in kept["compare"]] == ["Current", "Pinned baseline"]

    second = make_window(tmp_path / "second.ini")
    assert second.doc.pinned is None and not second.doc.compared  # nothing before the document opens
    open_and_wait(qtbot, second, [dense_plan])
    qtbot.waitUntil(lambda: second.doc.pinned is not None and len(second.doc.compared) == 2, timeout=20000)
    assert second.doc.pinned.parsed.strategy == pinned.parsed.strategy  # tp 8, while the forms hold tp 4
    assert second.doc.parsed.strategy.tp == 4
    assert second.doc.pinned.result.peak_bytes == pinned.result.peak_bytes  # priced again: the same plan
    assert second.chart.data()["pinned_stages"] == len(pinned.result.stages)  # drawn beside the bars
    restored = second.workspace_tabs.search.space
    assert restored.dims["tp"].current_mode == "list" and restored.dims["tp"].values.text() == "2,4"
    assert restored.dims["cp"].current_mode == "auto" and restored.dims["pp"].current_mode == "fixed"
    assert restored.top_k.value() == 7
    compare = second.workspace_tabs.compare
    qtbot.waitUntil(lambda: not compare.pending, timeout=20000)
    assert [e.name for e in second.doc.compared] == ["Current", "Pinned baseline"]
    assert [e.plan.strategy.tp for e in second.doc.compared] == [2, 8]
    assert all(e.result is not None for e in second.doc.compared)
    assert "restored" in second.statusBar().currentMessage()

    second.clear_baseline()  # clearing is kept too
    second.workspace_tabs.compare.clear()
    second.shutdown_workers()
    kept = json.loads(_kept_file().read_text(encoding="utf-8"))
    assert kept["compare"] == [] and kept["documents"][0]["pinned"] is None


def test_a_broken_session_file_is_named_not_fatal(qtbot, make_window, dense_plan) -> None:
    _kept_file().parent.mkdir(parents=True, exist_ok=True)
    _kept_file().write_text("{broken", encoding="utf-8")
    window = make_window()
    open_and_wait(qtbot, window, [dense_plan])
    errors = window.notes._last["errors"]
    assert any("session.json" in str(e) and "ignored" in str(e) for e in errors)
    window.pin_baseline()
    window.shutdown_workers()
    assert json.loads(_kept_file().read_text(encoding="utf-8"))["documents"][0]["pinned"] is not None


def test_a_config_changed_on_disk_is_offered_for_reload(qtbot, window, dense_plan) -> None:
    """Another program's edit of the open file brings a bar naming it; Reload reads it through the session
    (the new value in the forms and the tiles); the same text saved again offers nothing."""
    open_and_wait(qtbot, window, [dense_plan])
    bar = window.file_watch
    dense_plan.write_text(dense_plan.read_text(encoding="utf-8"), encoding="utf-8")  # saved, not changed
    qtbot.wait(800)
    assert not bar.isVisible()
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.tp": 8}))
    dense_plan.write_text(dense_plan.read_text(encoding="utf-8").replace("seq_length: 4096", "seq_length: 8192"),
                          encoding="utf-8")
    qtbot.waitUntil(bar.isVisible, timeout=10000)
    assert "dense.plan.yaml changed on disk" in bar.label.text()
    assert "Reload drops the strategy edits in the forms" in bar.label.text()  # said before the click
    assert window.doc.parsed.strategy.seq_length == 4096  # nothing changes until the user chooses
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        qtbot.mouseClick(bar.reload_button, Qt.MouseButton.LeftButton)
    assert window.doc.parsed.strategy.seq_length == 8192 and window.doc.parsed.strategy.tp == 4
    assert window.doc.freshness().state == "current"
    assert not bar.isVisible() and not window.doc.can_undo

    dense_plan.write_text(dense_plan.read_text(encoding="utf-8").replace("seq_length: 8192", "seq_length: 2048"),
                          encoding="utf-8")
    qtbot.waitUntil(bar.isVisible, timeout=10000)
    assert "undo history starts again" in bar.label.text()
    qtbot.mouseClick(bar.ignore_button, Qt.MouseButton.LeftButton)
    assert not bar.isVisible() and window.doc.parsed.strategy.seq_length == 8192  # kept as read
