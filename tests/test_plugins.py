"""Plug-ins through the entry-point group sapp_planner.plugins: listed by `sapp plugins`, their presets usable in
an estimate, a broken one named and skipped (never fatal). The plug-ins are path-based distributions made in a
temporary folder on sys.path (a dist-info with entry_points.txt, as pip installs it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator import plugins
from estimator.cli import main
from estimator.formats import READERS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "resources" / "examples" / "mindformers_llama3_70b.yaml"

PLUGIN = '''
from pathlib import Path

HERE = Path(__file__).parent


def register(context):
    context.add_presets_dir(HERE / "demo_presets")


def register_broken(context):
    context.add_reader("demo_format", lambda data, path: False, lambda *a: None)
    raise RuntimeError("demo failure after adding a reader")
'''

PRESET = """id: DEMO-GPU
name: Demo accelerator
capacity: 40000MiB
levels:
  - {devices: 8, bandwidth: 400e9, latency: 10e-6, efficiency: 0.7, name: fabric}
  - {devices: inf, bandwidth: 25e9, latency: 20e-6, efficiency: 0.9, name: network}
peak_flops: {bf16: 400e12, fp16: 400e12, fp32: 40e12}
eff_matmul: 0.6
hbm_bandwidth: 2e12
eff_hbm: 0.8
host_link_bandwidth: 50e9
"""


@pytest.fixture
def installed(tmp_path, monkeypatch):
    (tmp_path / "sapp_demo_plugin.py").write_text(PLUGIN)
    (tmp_path / "demo_presets").mkdir()
    (tmp_path / "demo_presets" / "DEMO-GPU.yaml").write_text(PRESET)
    info = tmp_path / "sapp_demo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sapp-demo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[sapp_planner.plugins]\ndemo = sapp_demo_plugin:register\n"
                                           "demo_broken = sapp_demo_plugin:register_broken\n"
                                           "demo_missing = sapp_no_such_module:register\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.load_plugins.cache_clear()
    yield tmp_path
    for p in plugins.load_plugins():
        if p.ok:
            plugins.PluginContext(p)  # nothing to undo globally but the preset folder list
    plugins._PRESET_DIRS.clear()
    plugins.load_plugins.cache_clear()


def test_plugins_listed_and_broken_ones_named(installed, capsys):
    assert main(["plugins", "--json"]) == 0
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert listed["demo"]["ok"] and listed["demo"]["added"] == [f"presets {installed / 'demo_presets'}"]
    assert listed["demo"]["distribution"] == "sapp-demo-plugin 0.1"
    assert not listed["demo_broken"]["ok"] and "demo failure" in listed["demo_broken"]["error"]
    assert "demo_format" not in READERS  # what a failing plug-in added is taken back
    assert not listed["demo_missing"]["ok"] and "sapp_no_such_module" in listed["demo_missing"]["error"]
    assert main(["plugins"]) == 0
    text = capsys.readouterr().out
    assert "demo  (sapp_demo_plugin:register; sapp-demo-plugin 0.1)  loaded" in text and "SKIPPED" in text


def test_plugin_preset_in_an_estimate(installed, capsys):
    assert main(["estimate", str(EXAMPLE), "--device", "DEMO-GPU", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["capacity"] == 40000 * 2**20
    # the broken plug-ins are named on every command, and the estimate still runs
    assert "plug-in demo_broken (sapp_demo_plugin:register_broken) skipped" in captured.err
