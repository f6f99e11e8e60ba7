"""Nothing silent in the app (issue 12): a misspelt key is in the warning list with its fix, unrelated files are
not one mixed plan, a vision plan takes a new pipeline degree."""

from __future__ import annotations

from pathlib import Path

from gui_helpers import EXAMPLES, MF_QWEN3, open_and_wait


def test_misspelt_key_is_in_the_warning_list(qtbot, window, tmp_path: Path) -> None:
    path = tmp_path / "qwen3_typo.yaml"
    path.write_text(MF_QWEN3.read_text(encoding="utf-8").replace("  model_parallel:", "  model_paralel:", 1),
                    encoding="utf-8")
    open_and_wait(qtbot, window, [path])
    lines = window.notes.lines()
    assert any("[W-KEY-UNKNOWN]" in line and "did you mean 'model_parallel'" in line for line in lines)


def test_unrelated_files_dropped_together_are_not_one_mixed_plan(qtbot, window) -> None:
    """A MindFormers YAML and an unrelated launch script: refused with both names, nothing priced."""
    script = MF_QWEN3.parent / "mindspeed_deepseek_v3_671b_pretrain.sh"
    with qtbot.waitSignal(window.open_failed, timeout=20000):
        assert window.open_paths([str(MF_QWEN3), str(script)])  # read on a worker: the refusal is a signal
    assert not window.doc.loaded
    message = window.start_page.message.text()
    assert "not one plan" in message and MF_QWEN3.name in message and script.name in message


def test_pp_change_on_a_vision_plan(qtbot, window) -> None:
    """MindSpeed-MM (vision tower in its own per-stage list): pp 2 → 4 used to fail with E-PART-SUM."""
    from gui_helpers import edit_and_wait, type_into

    pair = [EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh", EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json"]
    open_and_wait(qtbot, window, pair)
    pp = window.forms.row("strategy.pp").editor
    result = edit_and_wait(qtbot, window, lambda: type_into(qtbot, pp, "4"))
    assert window.doc.parsed.strategy.pp == 4 and len(result.stages) == 4
    assert len(window.doc.parsed.strategy.vision_partition) == 4
    assert window.chart.data()["stages"] == 4
