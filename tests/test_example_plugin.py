"""The example plug-in examples/plugins/sapp-swa-sinks, installed as pip installs it (a dist-info with its
entry point on sys.path, the package's own folder importable): it appears in `sapp plugins` and prices the layers
of a model that names its layer type, said in the estimate's assumptions."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from estimator import kinds, plugins, profiles
from estimator.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "plugins" / "sapp-swa-sinks"

PLAN = """model:
  name: swa-sinks-demo
  model_type: llama_swa_sinks
  hidden_size: 1024
  num_layers: 4
  num_attention_heads: 16
  num_kv_heads: 4
  ffn_hidden_size: 2816
  vocab_size: 32000
  sliding_window: 256
  layer_types: [sliding_attention_sinks, full_attention, sliding_attention_sinks, full_attention]
strategy: {seq_length: 4096, dp: 2, micro_batch_size: 1, micro_batches: 4, flash_attention: false}
hardware: {device: H100-80G}
options: {framework: megatron}
"""


@pytest.fixture
def installed(tmp_path, monkeypatch):
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    (entry,) = project["entry-points"]["sapp_planner.plugins"].items()
    info = tmp_path / f"sapp_swa_sinks-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text(f"[sapp_planner.plugins]\n{entry[0]} = {entry[1]}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    saved_kinds, saved_profiles = list(kinds._DIRS), list(profiles._USER_DIRS)
    plugins.load_plugins.cache_clear()
    yield entry
    kinds._DIRS[:] = saved_kinds
    profiles._USER_DIRS[:] = saved_profiles
    kinds.registry.cache_clear()
    profiles.all_profiles.cache_clear()
    plugins._PRESET_DIRS.clear()
    plugins.load_plugins.cache_clear()


def test_example_plugin_listed(installed, capsys):
    assert main(["plugins", "--json"]) == 0
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    got = listed["swa_sinks"]
    assert got["ok"], got["error"]
    assert got["target"] == "sapp_swa_sinks:register" and got["distribution"] == "sapp-swa-sinks 0.1.0"
    assert [a.split()[0:2] for a in got["added"]] == [["layer", "kinds"], ["profiles", str(EXAMPLE / "sapp_swa_sinks"
                                                                                      / "profiles")]]


def test_example_plugin_prices_its_layers(installed, tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    assert main(["estimate", str(plan), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    said = {a["field"]: a for a in payload["assumptions"]}
    assert said["layer kind sinks_swa_dense"]["value"] == "dense"
    assert "sapp_swa_sinks/kinds/swa_sinks.yaml (plug-in swa_sinks)" in said["layer kind sinks_swa_dense"]["source"]
    family = [a for a in payload["assumptions"] if a["field"] == "model.family"]
    assert family and family[0]["value"] == "llama_swa_sinks"
    # the unfused scores carry one more column per row (the sink): β_sm·a per token per sliding layer, and one
    # sink logit per head in their parameters
    from estimator.hardware import find_preset
    from estimator.model import ModelSpec
    from estimator.options import RunOptions
    from estimator.resolve import resolve
    from estimator.single_layer import layer_activation
    from estimator.strategy import Strategy

    model = ModelSpec(1024, 4, 16, 32000, num_kv_heads=4, ffn_hidden_size=2816, model_type="llama_swa_sinks",
                      sliding_window=256, layer_types=("sliding_attention_sinks", "full_attention") * 2)
    st = Strategy(seq_length=4096, dp=2, micro_batches=4, flash_attention=False)
    hw, opt = find_preset("H100-80G"), RunOptions(framework="megatron")
    r = resolve(model, st, hw, opt)
    extra = layer_activation(model, st, hw, opt, kind="sinks_swa_dense") - layer_activation(model, st, hw, opt)
    assert extra == 4096 * (r.widths.sm + (r.widths.c if r.widths.sm != r.widths.c else 0)) * 16
    from estimator.params import block

    assert block(r.dims, "sinks_swa_dense").total - block(r.dims, "dense").total == 16


OFFLINE = ("No matching distribution", "Could not find a version", "Failed to establish a new connection",
           "Temporary failure in name resolution", "Network is unreachable", "Max retries exceeded")


def test_example_plugin_pip_installs_into_a_venv(tmp_path):
    """`pip install examples/plugins/sapp-swa-sinks` into a fresh virtual environment (which sees this project and its
    dependencies through a .pth file): the plug-in is listed by `sapp plugins` and prices its layers in `sapp
    estimate`, run by that environment's Python. Skipped when pip cannot fetch the plug-in's build backend
    (setuptools ≥ 77, an isolated build) because the machine is offline."""
    import subprocess
    import sys
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True, timeout=60).stdout.strip())
    (site / "sapp_project.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n{ROOT}\n")
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
                          "--disable-pip-version-check", "--no-input", str(EXAMPLE)],
                         capture_output=True, text=True, timeout=600)
    if pip.returncode != 0 and any(word in pip.stdout + pip.stderr for word in OFFLINE):
        pytest.skip(f"pip cannot fetch the plug-in's build backend offline: {pip.stderr.strip()[-300:]}")
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert (site / "sapp_swa_sinks-0.1.0.dist-info" / "entry_points.txt").is_file()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SAPP_CONFIG_DIR": str(tmp_path / "config")}
    listed = subprocess.run([python, "-m", "estimator.cli", "plugins", "--json"], capture_output=True, text=True,
                            timeout=120, env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    got = {p["name"]: p for p in json.loads(listed.stdout)}["swa_sinks"]
    assert got["ok"] and got["distribution"] == "sapp-swa-sinks 0.1.0"
    assert got["added"][0] == f"layer kinds {site / 'sapp_swa_sinks' / 'kinds'}"
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    estimate = subprocess.run([python, "-m", "estimator.cli", "estimate", str(plan), "--json"], capture_output=True,
                              text=True, timeout=300, env=env, cwd=tmp_path)
    assert estimate.returncode == 0, estimate.stderr
    said = {a["field"]: a for a in json.loads(estimate.stdout)["assumptions"]}
    assert said["layer kind sinks_swa_dense"]["source"].startswith(
        f"described by {site / 'sapp_swa_sinks' / 'kinds' / 'swa_sinks.yaml'} (plug-in swa_sinks)")
