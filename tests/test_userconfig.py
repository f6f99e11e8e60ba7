"""The user's config folder counts for the CLI as for the app: `sapp estimate --device MY-GPU` with a preset
in $SAPP_CONFIG_DIR/presets, and family profiles in $SAPP_CONFIG_DIR/profiles."""

from __future__ import annotations

import json
from pathlib import Path

from estimator.cli import main
from estimator.userconfig import user_config_dir, user_presets_dir, user_profiles_dir

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "resources" / "examples" / "mindformers_llama3_70b.yaml"

MY_GPU = """id: MY-GPU
name: My accelerator
aliases: [mine]
capacity: 50000MiB
levels:
  - {devices: 8, bandwidth: 400e9, latency: 10e-6, efficiency: 0.7, name: fabric}
  - {devices: inf, bandwidth: 25e9, latency: 20e-6, efficiency: 0.9, name: network}
peak_flops: {bf16: 500e12, fp16: 500e12, fp32: 50e12}
eff_matmul: 0.6
hbm_bandwidth: 2e12
eff_hbm: 0.8
host_link_bandwidth: 50e9
"""


def test_config_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SAPP_CONFIG_DIR", str(tmp_path))
    assert user_config_dir() == tmp_path and user_presets_dir() == tmp_path / "presets"
    assert user_profiles_dir() == tmp_path / "profiles"
    monkeypatch.delenv("SAPP_CONFIG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    # the folder Qt's AppConfigLocation names for organisation sapp-planner, application SAPP Planner
    assert user_config_dir() == tmp_path / "xdg" / "sapp-planner" / "SAPP Planner"


def test_cli_uses_a_user_device_preset(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SAPP_CONFIG_DIR", str(tmp_path))
    assert main(["estimate", str(EXAMPLE), "--device", "MY-GPU", "--json"]) == 1  # not there yet
    assert "MY-GPU" in capsys.readouterr().err
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "MY-GPU.yaml").write_text(MY_GPU)
    assert main(["estimate", str(EXAMPLE), "--device", "MY-GPU", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["capacity"] == 50000 * 2**20
    assert main(["estimate", str(EXAMPLE), "--device", "mine", "--json"]) == 0  # by alias
    assert json.loads(capsys.readouterr().out)["capacity"] == 50000 * 2**20


def test_cli_uses_user_profiles_and_names_a_broken_one(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SAPP_CONFIG_DIR", str(tmp_path))
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "house.yaml").write_text("name: house_llama\nextends: default\nffn_gated: false\n")
    args = ["estimate", str(EXAMPLE), "--set", "model.family=house_llama", "--json"]
    assert main(args) == 0
    gated = main(["estimate", str(EXAMPLE), "--json"])
    assert gated == 0
    out = capsys.readouterr().out
    first, second = out.split("\n}\n", 1)
    # an ungated FFN has one input branch fewer (weights and activations): a smaller peak than the shipped profile
    assert json.loads(first + "}")["peak_bytes"] < json.loads(second)["peak_bytes"]
    other = tmp_path / "other"
    (other / "profiles").mkdir(parents=True)
    (other / "profiles" / "broken.yaml").write_text("name: [unclosed\n")
    monkeypatch.setenv("SAPP_CONFIG_DIR", str(other))
    assert main(["estimate", str(EXAMPLE), "--json"]) == 0  # a broken user profile is named, not fatal
    err = capsys.readouterr().err
    assert "user profiles ignored" in err and "broken.yaml" in err
