"""The Qt-free parts of the app: edit rules (document.py), bundled examples, user presets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gui_helpers import DSV3_PLAN, ROOT

from estimator.errors import ConfigError
from estimator.hardware import shipped_presets
from estimator.units import GiB
from sapp_gui.document import HOLD_DP, Document, FieldError, divisors
from sapp_gui.presets import preset_mapping, save_preset, user_preset_ids
from sapp_gui.resources import load_examples


@pytest.fixture
def doc(tmp_path: Path) -> Document:
    d = Document(preset_dirs=(tmp_path / "presets",))
    d.open([DSV3_PLAN])
    return d


def test_tp_edit_keeps_devices_and_batch(doc: Document) -> None:
    state = doc.propose({"strategy.tp": 8})
    st = state.parsed.strategy
    assert (st.tp, st.dp, st.micro_batches) == (8, 8, 64)
    assert (st.world_size, st.global_batch_size) == (1024, 512)
    doc.set_state(state)
    assert doc.mark("strategy.tp") == "edited"
    assert doc.mark("strategy.dp") == "derived"
    assert doc.mark("strategy.pp") is None
    assert "the file gives 4" in doc.describe("strategy.tp")
    assert "derived" in doc.describe("strategy.dp")
    assert "deepseek_v3_671b.plan.yaml" in doc.describe("strategy.pp")
    assert doc.is_modified()
    doc.set_state(doc.original_state())
    assert not doc.is_modified()


def test_hold_dp_lets_the_device_count_follow(doc: Document) -> None:
    doc.hold = HOLD_DP
    st = doc.propose({"strategy.tp": 8}).parsed.strategy
    assert (st.tp, st.dp, st.world_size, st.global_batch_size) == (8, 16, 2048, 512)


def test_impossible_tp_names_the_field(doc: Document) -> None:
    with pytest.raises(FieldError) as info:
        doc.propose({"strategy.tp": 3})
    assert "strategy.tp" in info.value.errors
    assert "not an integer" in info.value.errors["strategy.tp"]
    assert doc.parsed.strategy.tp == 4  # unchanged


def test_pp_change_rescales_per_stage_lists_as_the_library_does(doc: Document) -> None:
    state = doc.propose({"strategy.pp": 8})
    st = state.parsed.strategy
    assert st.pp == 8 and st.dp == 32
    assert st.offset == (1, 1, 1, 1, 1, 1, 1, -1)  # the CLI's --set strategy.pp=8 gives the same (test_session)
    assert st.recompute.full_counts == (7, 8, 8, 8, 8, 8, 7, 2)  # the same 56 recomputed layers, per stage
    assert len(state.notes) == 2 and "offset" in state.notes[0]
    doc.set_state(state)
    assert doc.mark("strategy.offset") == "derived"


def test_estimator_violations_map_to_fields(doc: Document) -> None:
    from estimator import estimate
    from estimator.errors import StrategyError

    parsed = doc.propose({"strategy.ep": 3}).parsed
    with pytest.raises(StrategyError) as info:
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    fields = doc.error_fields(info.value, ["strategy.ep"])
    assert "strategy.ep" in fields and "R-EP-EXP" in fields["strategy.ep"]
    err = ConfigError("bad", key="strategy.tp")
    assert doc.error_fields(err, ["strategy.pp"]) == {"strategy.tp": "bad", "strategy.pp": "bad"}


def test_hardware_edits_and_user_presets(doc: Document, tmp_path: Path) -> None:
    state = doc.propose({"hardware.device": "H100-80G"})
    doc.set_state(state)
    assert doc.parsed.hardware.id == "H100-80G"
    assert doc.mark("hardware.device") == "edited"
    assert doc.mark("hardware.capacity") == "derived"
    doc.set_state(doc.propose({"hardware.capacity": 70 * GiB}))
    assert doc.parsed.hardware.capacity == 70 * GiB
    # an unrelated edit keeps the edited hardware
    doc.set_state(doc.propose({"strategy.tp": 8}))
    assert doc.parsed.hardware.capacity == 70 * GiB
    save_preset(tmp_path / "presets", doc.parsed.hardware, "H100-70G", "trimmed H100")
    assert "h100-70g" in user_preset_ids(tmp_path / "presets")
    doc.set_state(doc.propose({"hardware.device": "H100-70G"}))
    assert doc.parsed.hardware.id == "H100-70G" and doc.parsed.hardware.capacity == 70 * GiB
    with pytest.raises(FieldError) as info:
        doc.propose({"hardware.device": "no-such-device"})
    assert "hardware.device" in info.value.errors


def test_user_preset_files(tmp_path: Path) -> None:
    a2 = next(p for p in shipped_presets() if p.id == "A2")
    path = save_preset(tmp_path, a2.replace(capacity=62 * GiB), "A2-62G")
    data = yaml.safe_load(path.read_text())
    assert data["capacity"] == "63488MiB" and data["levels"][-1]["devices"] == "inf"
    assert set(preset_mapping(a2, "x")) >= {"id", "name", "capacity", "levels", "peak_flops"}
    with pytest.raises(ConfigError):
        save_preset(tmp_path, a2, "A2")  # a shipped id
    with pytest.raises(ConfigError):
        save_preset(tmp_path, a2, "bad name/with slash")


def test_step_candidates_keep_the_device_count_integral(doc: Document) -> None:
    assert doc.step_candidates("strategy.tp") == divisors(1024 // 16)
    assert doc.step_candidates("strategy.ep") == divisors(256)
    assert doc.step_candidates("strategy.seq_length") is None
    assert divisors(12) == [1, 2, 3, 4, 6, 12]


def test_recompute_changes_keep_mode_and_counts_apart(doc: Document) -> None:
    changes = doc.recompute_changes(mode="selective")
    assert changes["strategy.recompute"] == "selective"
    assert changes["strategy.full_counts"][0] == 3  # the counts survive a mode change
    plan = doc.propose(changes).parsed.strategy.recompute
    assert plan.default_mode == "selective" and plan.full_counts[0] == 3
    plan = doc.propose(doc.recompute_changes(counts=2)).parsed.strategy.recompute
    assert plan.full_counts == 2 and plan.default_mode == "none"


def test_examples_index(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("x: 1\n")
    (tmp_path / "b.sh").write_text("#!/bin/sh\n")
    (tmp_path / "index.yaml").write_text(yaml.safe_dump({"examples": [
        {"title": "A friendly title", "files": ["a.yaml"], "devices": 16},
        {"title": "Missing", "files": ["gone.toml"]},
    ]}))
    found = load_examples(tmp_path)
    assert [e.title for e in found] == ["A friendly title", "b.sh"]
    assert found[0].open_args() == {"devices": 16}
    shipped = load_examples(ROOT / "resources" / "examples")
    assert any(e.paths[0].name == DSV3_PLAN.name for e in shipped)
    assert all(all(p.is_file() for p in e.paths) for e in shipped)
    # the A3 launch script opens on the A3 preset its title promises
    a3 = next(e for e in shipped if e.paths[0].name == "mindspeed_deepseek_v3_671b_pretrain.sh")
    assert a3.open_args() == {"device": "A3"} and "A3" in a3.title
    doc = Document()
    parsed = doc.open(a3.paths, **a3.open_args())
    assert parsed.hardware.name.startswith("Ascend A3") and doc.open_args["device"] == "A3"
    assert doc.reread().hardware.name.startswith("Ascend A3")


def test_qt_free_modules_do_not_import_qt() -> None:
    code = ("import sys; import sapp_gui.document, sapp_gui.resources, sapp_gui.presets, sapp_gui.style; "
            "import estimator.cli; estimator.cli.build_parser(); "
            "assert not [m for m in sys.modules if m.startswith('PySide6')], 'Qt imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
