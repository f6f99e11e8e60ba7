"""The Features form (issue 11: FP8, compile, async TP, LoRA/QLoRA, offload/swap, CP load balance) and the
host-memory tile: values read from the config with their provenance, edits that re-price the plan and undo,
invalid names refused under the field, and an edit exported back into a launch script."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gui_helpers import edit_and_wait, open_and_wait, type_into
from PySide6.QtCore import Qt

from estimator.formats import parse
from estimator.units import GiB

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SWAP_FLAGS = "--swap-attention --swap-optimizer \\\n    --microbatch-group-size-per-virtual-pipeline-stage 4"


def _swap_script(tmp_path: Path) -> Path:
    text = (FIXTURES / "mindspeed" / "selective_dense.sh").read_text()
    path = tmp_path / "swap.sh"
    path.write_text(text.replace("--microbatch-group-size-per-virtual-pipeline-stage 4", SWAP_FLAGS))
    return path


def _choose(editor, value) -> None:
    index = editor.find_value(value)
    assert index >= 0, value
    editor.setCurrentIndex(index)
    editor.activated.emit(index)


def test_host_memory_tile_and_offload_fields(qtbot, window, tmp_path: Path) -> None:
    result = open_and_wait(qtbot, window, [_swap_script(tmp_path)], device="A2")
    host = result.host
    assert host.used and host.ram_per_node == window.doc.parsed.hardware.host_ram_per_node
    value, sub = window.summary.data()["host"]
    assert value == f"{host.per_node / GiB:,.2f} GiB/node"
    assert f"{host.per_device / GiB:,.2f} GiB per device × {host.devices_per_node}" in sub
    assert "offloaded activations" in window.summary.host.toolTip()
    qtbot.mouseClick(window.summary.host, Qt.MouseButton.LeftButton)  # its Explain: how the figure is made
    assert window.explain.quantity is not None and window.explain.quantity.formula_id == "H-NODE"
    assert window.explain.quantity.value == pytest.approx(host.per_node)
    row = window.forms.row("strategy.offload_activations")
    assert row.editor.text() == "input_norm, self_attention, post_attention_norm"
    assert "--swap-attention" in row.editor.toolTip()  # where the value came from
    # no activation offload: the host keeps only the swapped optimizer states
    after = edit_and_wait(qtbot, window, lambda: (row.editor.clear(), row.editor.editingFinished.emit()))
    assert window.doc.value("strategy.offload_activations") == ()
    assert after.host.stages[0].activations == 0 and after.host.stages[0].optimizer_states > 0
    assert window.summary.data()["host"][0] == f"{after.host.per_node / GiB:,.2f} GiB/node"
    assert window.explain.quantity.value == pytest.approx(after.host.per_node)  # the trace follows the result
    assert row.mark == "edited"
    assert after.stages[0].bytes_by_category["activations"] > result.stages[0].bytes_by_category["activations"]
    edit_and_wait(qtbot, window, window.undo_stack.undo)
    assert window.doc.value("strategy.offload_activations") == ("input_norm", "self_attention",
                                                                 "post_attention_norm")


def test_unknown_offload_group_is_refused_under_the_field(qtbot, window, tmp_path: Path) -> None:
    open_and_wait(qtbot, window, [_swap_script(tmp_path)], device="A2")
    row = window.forms.row("strategy.offload_activations")
    type_into(qtbot, row.editor, "mlp, attention")
    qtbot.waitUntil(lambda: bool(row.error.text()), timeout=5000)
    assert "'attention' is not one of" in row.error.text()
    assert window.doc.value("strategy.offload_activations") == ("input_norm", "self_attention",
                                                                 "post_attention_norm")


def test_fp8_recipe_edit_reprices_undoes_and_exports(qtbot, window, tmp_path: Path) -> None:
    script = tmp_path / "fp8.sh"
    shutil.copy(FIXTURES / "mindspeed" / "fp8_llama3_8b.sh", script)
    before = open_and_wait(qtbot, window, [script], device="H100-80G")
    form = window.forms.features
    recipe = form.rows["strategy.fp8"].editor
    assert recipe.field_value() == "tensorwise"
    assert "--fp8-recipe" in recipe.toolTip()
    bf16 = edit_and_wait(qtbot, window, lambda: _choose(recipe, "none"))
    assert bf16.step_time_s > before.step_time_s  # bf16 matmuls at half the FP8 peak
    assert form.rows["strategy.fp8"].mark == "edited"
    edit_and_wait(qtbot, window, window.undo_stack.undo)
    assert window.doc.value("strategy.fp8") == "tensorwise"
    edit_and_wait(qtbot, window, lambda: _choose(recipe, "blockwise"))
    dialog = window.export_strategy()
    assert dialog is not None
    assert "+    --fp8-recipe blockwise" in dialog.view.toPlainText()
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        qtbot.mouseClick(dialog.write_button, Qt.MouseButton.LeftButton)
    assert parse([script]).strategy.fp8 == "blockwise"


def test_lora_fields_edit_as_one_plan(qtbot, window, tmp_path: Path) -> None:
    script = tmp_path / "lora.sh"
    shutil.copy(FIXTURES / "mindspeed" / "lora_llama2_7b.sh", script)
    open_and_wait(qtbot, window, [script], device="A2")
    form = window.forms.features
    assert form.rows["strategy.peft"].editor.field_value() == "lora"
    targets = form.rows["strategy.lora_targets"].editor
    assert targets.text() == "qkv, o, fc1, down"  # --lora-target-modules linear_qkv linear_proj linear_fc1 linear_fc2
    assert "--lora-target-modules" in targets.toolTip()
    rank = form.rows["strategy.lora_rank"].editor
    result = edit_and_wait(qtbot, window, lambda: type_into(qtbot, rank, "64"))
    assert window.doc.value("strategy.lora_rank") == 64
    grads = result.stages[0].bytes_by_category["gradients"]
    edit_and_wait(qtbot, window, lambda: type_into(qtbot, rank, "8"))
    assert window.doc.mark("strategy.lora_rank") == "edited"
    # gradients are the adapters': 8× fewer at rank 8 than at 64
    assert window.doc.shown.result.stages[0].bytes_by_category["gradients"] * 8 == pytest.approx(grads)
    edit_and_wait(qtbot, window, lambda: type_into(qtbot, targets, "qkv, o"))
    assert window.doc.value("strategy.lora_targets") == ("qkv", "o")


FREEZE_YAML = (FIXTURES / "llamafactory" / "qwen3_freeze_sft.yaml").read_text(encoding="utf-8") + \
    "freeze_trainable_layers: 2\n"  # stated, so the field's provenance names the key


def test_trainable_layers_edit_reprices_and_exports(qtbot, window, tmp_path: Path) -> None:
    """Freeze fine-tuning (D-FREEZE) on the form: the trainable layers and parts read from the LLaMA-Factory YAML
    with their key, an edit to the last four layers doubles the gradients (two trainable layers' worth each), a
    set LLaMA-Factory cannot train is refused at export, and the last four are written as freeze_trainable_layers."""
    path = tmp_path / "freeze.yaml"
    path.write_text(FREEZE_YAML, encoding="utf-8")
    before = open_and_wait(qtbot, window, [path], devices=8)
    form = window.forms.features
    layers = form.rows["strategy.trainable_layers"].editor
    assert layers.text() == "-2, -1"
    assert "freeze_trainable_layers" in layers.toolTip()
    assert form.rows["strategy.trainable_parts"].editor.text() == ""  # all module groups
    grads = before.stages[0].bytes_by_category["gradients"]
    after = edit_and_wait(qtbot, window, lambda: type_into(qtbot, layers, "-4, -3, -2, -1"))
    assert window.doc.value("strategy.trainable_layers") == (-4, -3, -2, -1)
    assert after.stages[0].bytes_by_category["gradients"] == pytest.approx(2 * grads)
    assert form.rows["strategy.trainable_layers"].mark == "edited"
    dialog = window.export_strategy()
    assert dialog is not None
    assert "freeze_trainable_layers: 4" in dialog.view.toPlainText()
    dialog.close()
    type_into(qtbot, layers, "one, two")
    qtbot.waitUntil(lambda: bool(form.rows["strategy.trainable_layers"].error.text()), timeout=5000)
    assert window.doc.value("strategy.trainable_layers") == (-4, -3, -2, -1)


def test_offload_layers_field_shows_and_edits_the_swap_lists(qtbot, window) -> None:
    """MindFormers swap_config layer lists (D-SWAP-LAYERS) on the form: shown per group; naming fewer layers for a
    group offloads less: layer 4 (stage 4 of 8, one layer per stage) no longer swaps, so that stage's host holds
    nothing and its device keeps the layer's activations."""
    before = open_and_wait(qtbot, window, [FIXTURES / "mindformers" / "swap_layers.yaml"])
    editor = window.forms.features.rows["strategy.offload_layers"].editor
    assert editor.text() == "layer: 0, 4; self_attention: 5, 6"
    assert "swap_config" in editor.toolTip()
    after = edit_and_wait(qtbot, window, lambda: type_into(qtbot, editor, "layer: 0; self_attention: 5, 6"))
    assert [(g.group, g.layers) for g in window.doc.value("strategy.offload_layers")] == \
        [("layer", (0,)), ("self_attention", (5, 6))]
    assert before.host.stages[4].activations > 0 and after.host.stages[4].activations == 0
    assert after.stages[4].bytes_by_category["activations"] > before.stages[4].bytes_by_category["activations"]
    assert after.host.stages[0].activations == before.host.stages[0].activations  # layer 0 still swaps
