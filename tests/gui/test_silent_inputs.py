"""Nothing silent in the app (issue 12): a misspelt key in the opened file is in the warning list with its fix."""

from __future__ import annotations

from pathlib import Path

from gui_helpers import MF_QWEN3, open_and_wait


def test_misspelt_key_is_in_the_warning_list(qtbot, window, tmp_path: Path) -> None:
    path = tmp_path / "qwen3_typo.yaml"
    path.write_text(MF_QWEN3.read_text(encoding="utf-8").replace("  model_parallel:", "  model_paralel:", 1),
                    encoding="utf-8")
    open_and_wait(qtbot, window, [path])
    lines = window.notes.lines()
    assert any("[W-KEY-UNKNOWN]" in line and "did you mean 'model_parallel'" in line for line in lines)
