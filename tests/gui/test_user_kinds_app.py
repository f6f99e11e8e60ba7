"""A user layer kind and a user slot override change the app's estimate exactly as stated, and exactly as they change
the CLI's (issue 15 proof): the same files in the config folder's kinds/, the same numbers, both said in the app's
assumptions list."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from gui_helpers import open_and_wait

from estimator import kinds
from estimator.cli import main as cli_main

PLAN = (Path(__file__).parents[1] / "fixtures" / "kinds" / "house_llama.plan.yaml").read_text()
# the unfused scores with 1,000 bytes per token more, on every kind
OVERRIDE = "overrides:\n  - {kind: '*', slot: a.scores, bytes: 'b_sm * a * s + 1000'}\n"
# every llama layer becomes house_dense: an extra saved gate (β_c·o_w per token, class tp) and two parameters
KIND = """kind:
  name: house_dense
  base: dense
  description: a gate on the attention output and a learned per-head temperature
  match: {model_types: [llama]}
  slots:
    - {id: a.gate2, bytes: "b_c * o_w", class: tp}
  params:
    - {name: temperature, class: rep, elements: "a"}
    - {name: output gate, class: tp, elements: "h * o_w"}
"""


@pytest.fixture
def folders(tmp_path: Path):
    """An empty config folder and one with the user's kind files; the kinds registry restored afterwards."""
    saved = list(kinds._DIRS)
    empty, full = tmp_path / "empty", tmp_path / "config"
    (full / "kinds").mkdir(parents=True)
    (full / "kinds" / "my_attention.yaml").write_text(OVERRIDE)
    (full / "kinds" / "house.yaml").write_text(KIND)
    yield empty, full
    kinds._DIRS[:] = saved
    kinds._changed()


def _cli(plan: Path) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(["estimate", str(plan), "--json"]) == 0
    return json.loads(out.getvalue())


def test_user_kind_and_override_in_the_app_as_in_the_cli(qtbot, make_window, tmp_path, folders) -> None:
    empty, full = folders
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    before = open_and_wait(qtbot, make_window(presets_dir=empty / "presets"), [plan])
    kinds.remove_kinds_dir(empty / "kinds")
    window = make_window(presets_dir=full / "presets")  # the app reads kinds/ beside its presets folder
    after = open_and_wait(qtbot, window, [plan])
    # as stated: per layer and micro-batch T·(1000 + β_c·o_w)/t more activations (T = 2048 tokens, o_w = 1024,
    # t = 2), 4 layers, one micro-batch in flight on the one stage; a + h·o_w/t more parameters per layer on a
    # device, with their gradients and optimizer states
    T, t, o_w, h, a = 2048, 2, 1024, 1024, 16
    (stage_before,), (stage_after,) = before.stages, after.stages
    activations = stage_after.bytes_by_category["activations"] - stage_before.bytes_by_category["activations"]
    assert activations == 4 * T * (1000 + 2 * o_w) / t
    assert after.parameters_total - before.parameters_total == 4 * (a + h * o_w)
    # the CLI, reading the same folder ($SAPP_CONFIG_DIR is tests/gui/conftest.py's tmp_path/config), agrees to
    # the byte, stage by stage and category by category
    cli = _cli(plan)
    assert cli["peak_bytes"] == pytest.approx(after.peak_bytes, abs=1)  # the JSON rounds to whole bytes
    assert cli["stages"][0]["bytes_by_category"] == {k: pytest.approx(v, abs=1) for k, v in
                                                     stage_after.bytes_by_category.items()}
    assert cli["model"]["parameters_total"] == after.parameters_total
    said = {x["field"]: x for x in cli["assumptions"]}
    assert said["slot a.scores of house_dense"]["source"] == f"overridden by {full / 'kinds' / 'my_attention.yaml'}"
    assert "house.yaml (user)" in said["layer kind house_dense"]["source"]
    # and the app says both in its warnings and assumptions list
    lines = window.notes.lines()
    assert any("slot a.scores of house_dense" in line and "my_attention.yaml" in line for line in lines), lines
    assert any("layer kind house_dense" in line and "house.yaml" in line for line in lines), lines
