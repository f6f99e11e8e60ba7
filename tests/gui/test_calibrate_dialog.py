"""Hardware ▸ Calibrate from log… and logs dropped on the window (issue 10): the dialog fits on a worker, shows
the fitted terms and every stage before → after, refuses a log of another plan with the reason (nothing
written), and Save writes the profile beside the presets and reads the plan again so that it applies."""

from __future__ import annotations

from pathlib import Path

import pytest
from gui_helpers import open_and_wait
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from test_calibrate import PLAN, SLACK, synthesise

from sapp_gui.calibrate_dialog import CalibrateDialog


@pytest.fixture
def calib_plan(tmp_path: Path) -> Path:
    path = tmp_path / "calib.plan.yaml"
    path.write_text(PLAN)
    return path


def _fitted(qtbot, dialog) -> None:
    qtbot.waitUntil(lambda: dialog.calibration is not None or "Not calibrated" in dialog.status.text(),
                    timeout=60000)


def test_calibrate_fits_shows_and_applies(qtbot, window, calib_plan: Path, tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    logs = synthesise(calib_plan, tmp_path / "run")
    open_and_wait(qtbot, window, [calib_plan])
    menu = window.actions_.menus["hardware"]
    assert [a.objectName() for a in menu.actions()] == ["calibrate"] and "Calibrate" in menu.actions()[0].text()
    dialog = window.calibrate_from_log(logs)
    _fitted(qtbot, dialog)
    terms = {dialog.terms.item(r, 0).text(): dialog.terms.item(r, 1).text() for r in range(dialog.terms.rowCount())}
    assert terms["allocator slack × (measured / modelled)"] == f"{SLACK:.4g}"
    assert "runtime context" in terms and "matmul efficiency" in terms
    assert dialog.stages.rowCount() == 2 and "→" in dialog.stages.item(0, 5).text()
    assert dialog.save_button.isEnabled() and "term(s) fitted" in dialog.status.text()
    dialog.name.setText("h-run")
    with qtbot.waitSignal(window.estimate_drawn, timeout=30000) as drawn:
        dialog.save_button.click()
    saved = tmp_path / "calibrations" / "h-run.yaml"
    assert saved.is_file() and dialog.saved == saved
    result = drawn.args[0]
    assert window.doc.parsed.options.calibration == "h-run"
    assert any(a.field == "options.calibration" for a in window.doc.parsed.assumptions)
    stage = result.stages[0]
    assert stage.bytes_by_category["runtime_context"] == pytest.approx(3.25 * 2 ** 30, rel=1e-6)


def test_a_log_of_another_plan_is_refused(qtbot, window, calib_plan: Path, tmp_path: Path) -> None:
    logs = synthesise(calib_plan, tmp_path, tp=4)
    open_and_wait(qtbot, window, [calib_plan])
    dialog = window.calibrate_from_log(logs)
    _fitted(qtbot, dialog)
    assert dialog.calibration is None and not dialog.save_button.isEnabled()
    assert "Not calibrated" in dialog.status.text() and "the run had tp = 4, the config has 2" in dialog.status.text()
    assert not (tmp_path / "calibrations").exists()
    dialog.reject()


def test_dropped_logs_open_the_dialog(qtbot, window, calib_plan: Path, tmp_path: Path) -> None:
    logs = synthesise(calib_plan, tmp_path)
    open_and_wait(qtbot, window, [calib_plan])
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(p) for p in logs])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    dialogs = window.findChildren(CalibrateDialog)
    assert len(dialogs) == 1
    dialog = dialogs[0]
    assert dialog.paths() == logs
    _fitted(qtbot, dialog)
    assert dialog.calibration is not None
    dialog.reject()


def test_calibrate_needs_an_open_plan(qtbot, window) -> None:
    assert window.calibrate_from_log() is None
    assert "Open the config of the run first" in window.statusBar().currentMessage()
