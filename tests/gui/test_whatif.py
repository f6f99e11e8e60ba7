"""What-if editing by keyboard: new bars after TP/PP edits, invalid edits marked on the field with the last valid
chart kept, undo/redo, reset to file, the hold lock."""

from __future__ import annotations

import numpy as np
from gui_helpers import edit_and_wait, open_and_wait, type_into
from PySide6.QtCore import Qt


def editor(window, key: str):
    return window.forms.row(key).editor


def test_tp_typed_on_the_keyboard_redraws_the_bars(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    before = window.chart.data()
    tp = editor(window, "strategy.tp")
    result = edit_and_wait(qtbot, window, lambda: type_into(qtbot, tp, "8"))
    after = window.chart.data()
    assert window.doc.parsed.strategy.tp == 8
    assert editor(window, "strategy.dp").value() == 8  # re-derived: 1024 devices held
    assert editor(window, "strategy.micro_batches").value() == 64  # global batch 512 held
    assert after["stages"] == 16
    np.testing.assert_allclose(after["totals_gib"], [s.total / 2**30 for s in result.stages])
    assert not np.allclose(after["totals_gib"], before["totals_gib"])
    assert window.forms.row("strategy.tp").mark == "edited"
    assert window.forms.row("strategy.dp").mark == "derived"
    assert "the file gives 4" in tp.toolTip()
    assert window.isWindowModified()


def test_pp_stepped_with_the_arrow_key(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    pp = editor(window, "strategy.pp")
    pp.setFocus()
    edit_and_wait(qtbot, window, lambda: qtbot.keyClick(pp, Qt.Key.Key_Down))
    assert pp.value() == 8  # steps to the next value that keeps dp an integer
    data = window.chart.data()
    assert data["stages"] == 8
    assert len(data["by_category_gib"]["activations"]) == 8
    notes = window.notes.lines()
    # the per-stage offsets follow the new depth by the library's rule (as sapp estimate --set strategy.pp=8)
    assert any(line.startswith("offset [1, 1,") and "→ [1, 1, 1, 1, 1, 1, 1, -1] (pp 8 × vpp 1)" in line
               for line in notes)


def test_invalid_tp_marks_the_field_and_keeps_the_chart(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    before = window.chart.data()
    row = window.forms.row("strategy.tp")
    type_into(qtbot, row.editor, "3")
    assert row.error.text() and "not an integer" in row.error.text()
    assert row.editor.property("sappInvalid") is True
    assert window.banner.isVisibleTo(window)
    assert window.doc.parsed.strategy.tp == 4
    np.testing.assert_allclose(window.chart.data()["totals_gib"], before["totals_gib"])
    assert window.undo_stack.count() == 0
    # typing a valid value clears the mark
    edit_and_wait(qtbot, window, lambda: type_into(qtbot, row.editor, "8"))
    assert not row.error.text()
    assert row.editor.property("sappInvalid") is False


def test_rule_violation_from_the_estimator_is_shown_on_the_field(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    before = window.chart.data()
    ep = window.forms.row("strategy.ep")
    with qtbot.waitSignal(window.estimate_failed, timeout=20000):
        type_into(qtbot, ep.editor, "3")
    assert "R-EP-EXP" in ep.error.text()
    assert "last valid estimate" in window.banner.text()
    np.testing.assert_allclose(window.chart.data()["totals_gib"], before["totals_gib"])
    assert window.undo_stack.count() == 1  # the edit itself is kept (and undoable)
    edit_and_wait(qtbot, window, lambda: qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier))
    assert not ep.error.text()
    assert window.doc.parsed.strategy.ep == 8


def test_undo_redo_and_reset(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    original = window.chart.data()["totals_gib"]
    edit_and_wait(qtbot, window, lambda: type_into(qtbot, editor(window, "strategy.tp"), "8"))
    edited = window.chart.data()["totals_gib"]
    ctrl = Qt.KeyboardModifier.ControlModifier
    edit_and_wait(qtbot, window, lambda: qtbot.keyClick(window, Qt.Key.Key_Z, ctrl))
    assert window.doc.parsed.strategy.tp == 4 and editor(window, "strategy.tp").value() == 4
    np.testing.assert_allclose(window.chart.data()["totals_gib"], original)
    assert not window.isWindowModified()
    edit_and_wait(qtbot, window, lambda: qtbot.keyClick(window, Qt.Key.Key_Z, ctrl | Qt.KeyboardModifier.ShiftModifier))
    assert window.doc.parsed.strategy.tp == 8
    np.testing.assert_allclose(window.chart.data()["totals_gib"], edited)
    edit_and_wait(qtbot, window, window.reset_to_file)
    assert window.doc.parsed.strategy.tp == 4 and not window.doc.is_modified()
    assert window.undo_stack.count() == 2  # reset is undoable too
    edit_and_wait(qtbot, window, window.undo_stack.undo)
    assert window.doc.parsed.strategy.tp == 8


def test_hold_dp_lock(qtbot, window, dense_plan) -> None:
    open_and_wait(qtbot, window, [dense_plan])
    qtbot.mouseClick(window.forms.parallel.hold_dp, Qt.MouseButton.LeftButton)
    assert window.doc.hold == "dp"
    edit_and_wait(qtbot, window, lambda: type_into(qtbot, editor(window, "strategy.tp"), "8"))
    st = window.doc.parsed.strategy
    assert (st.dp, st.tp, st.world_size) == (4, 8, 128)
    assert "128" in window.forms.parallel.devices_label.text()
    assert window.settings.hold() == "dp"


def test_memory_and_hardware_fields(qtbot, window, dense_plan) -> None:
    from estimator.units import GiB

    open_and_wait(qtbot, window, [dense_plan])
    recompute = editor(window, "strategy.recompute")
    index = recompute.find_value("full")
    edit_and_wait(qtbot, window, lambda: (recompute.setCurrentIndex(index), recompute.activated.emit(index)))
    assert window.doc.parsed.strategy.recompute.default_mode == "full"
    capacity = editor(window, "hardware.capacity")
    result = edit_and_wait(qtbot, window, lambda: type_into(qtbot, capacity, "32"))
    assert result.capacity == 32 * GiB
    assert window.forms.row("hardware.capacity").mark == "edited"
    assert "32.00 GiB" in window.forms.hardware.budget_label.text()


def test_model_fields_are_read_only_until_edit_model(qtbot, window, dense_plan) -> None:
    open_and_wait(qtbot, window, [dense_plan])
    layers = editor(window, "model.num_layers")
    assert layers.isReadOnly()
    window.forms.model.edit_toggle.setChecked(True)
    assert not layers.isReadOnly()
    result = edit_and_wait(qtbot, window, lambda: type_into(qtbot, layers, "40"))
    assert window.doc.parsed.model.num_layers == 40
    assert sum(len([r for r in s.layers if r.index is not None]) for s in result.stages) == 40
    assert window.forms.row("model.num_layers").mark == "edited"
