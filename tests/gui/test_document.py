"""The Qt-free parts of the app: what it says about the session's values (document.py), bundled examples, user
presets. The edit rules themselves are the library's (tests/test_session.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gui_helpers import DSV3_PLAN, ROOT

from estimator.errors import ConfigError
from estimator.hardware import shipped_presets
from estimator.session import EditError, PlanSession
from estimator.units import GiB
from sapp_gui.document import describe
from sapp_gui.presets import preset_mapping, save_preset, user_preset_ids
from sapp_gui.resources import load_examples


@pytest.fixture
def doc(tmp_path: Path) -> PlanSession:
    d = PlanSession(preset_dirs=(tmp_path / "presets",))
    d.open([DSV3_PLAN])
    return d


def test_field_tooltips_say_where_the_value_came_from(doc: PlanSession) -> None:
    doc.apply({"strategy.tp": 8})
    assert doc.mark("strategy.tp") == "edited"
    assert doc.mark("strategy.dp") == "derived"
    assert doc.mark("strategy.pp") is None
    assert "the file gives 4" in describe(doc, "strategy.tp")
    assert "derived" in describe(doc, "strategy.dp")
    assert "deepseek_v3_671b.plan.yaml" in describe(doc, "strategy.pp")
    assert doc.is_modified()
    doc.undo()
    assert not doc.is_modified()


def test_hardware_edits_and_user_presets(doc: PlanSession, tmp_path: Path) -> None:
    doc.apply({"hardware.device": "H100-80G"})
    assert doc.parsed.hardware.id == "H100-80G"
    assert doc.mark("hardware.device") == "edited"
    assert doc.mark("hardware.capacity") == "derived"
    doc.apply({"hardware.capacity": 70 * GiB})
    assert doc.parsed.hardware.capacity == 70 * GiB
    # an unrelated edit keeps the edited hardware
    doc.apply({"strategy.tp": 8})
    assert doc.parsed.hardware.capacity == 70 * GiB
    save_preset(tmp_path / "presets", doc.parsed.hardware, "H100-70G", "trimmed H100")
    assert "h100-70g" in user_preset_ids(tmp_path / "presets")
    doc.apply({"hardware.device": "H100-70G"})
    assert doc.parsed.hardware.id == "H100-70G" and doc.parsed.hardware.capacity == 70 * GiB
    # the device facts the device-level parts read survive the user preset (NVLS buffers, TE workspace)
    assert doc.parsed.hardware.nvlink_sharp and doc.parsed.hardware.compute_capability == 9.0
    with pytest.raises(EditError) as info:
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
    doc = PlanSession()
    parsed = doc.open(a3.paths, **a3.open_args())
    assert parsed.hardware.name.startswith("Ascend A3") and doc.open_args["device"] == "A3"
    assert doc.reread().hardware.name.startswith("Ascend A3")


def test_qt_free_modules_do_not_import_qt() -> None:
    code = ("import sys; import sapp_gui.document, sapp_gui.resources, sapp_gui.presets, sapp_gui.style; "
            "import estimator.cli; estimator.cli.build_parser(); "
            "assert not [m for m in sys.modules if m.startswith('PySide6')], 'Qt imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
