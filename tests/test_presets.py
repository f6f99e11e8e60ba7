"""Device presets: every figure names its source (issue 11 "Step time you can trust"), the new variants carry the
published figures, provenance follows edits, and bad preset files are refused by name."""

from __future__ import annotations

import json

import pytest

from estimator.cli import main
from estimator.errors import ConfigError
from estimator.hardware import figures, find_preset, hardware_from_mapping, shipped_presets
from estimator.hardware_figures import device_figures, figures_json
from estimator.sources import KINDS
from estimator.units import GiB, MiB

PLAN = """\
model: {name: tiny, family: llama2, hidden_size: 1024, num_layers: 2, num_attention_heads: 8,
        ffn_hidden_size: 2816, vocab_size: 32000}
strategy: {dp: 8, tp: 1, pp: 1, micro_batch_size: 1, micro_batches: 1, seq_length: 1024}
hardware: {device: A2}
options: {framework: megatron}
"""


def test_every_shipped_figure_has_a_known_source() -> None:
    for hw in shipped_presets():
        for path in figures(hw):
            source = hw.source_of(path)
            assert source.kind in KINDS, (hw.id, path)
            if source.kind in ("vendor", "measured"):
                assert source.title, (hw.id, path)
        # the figures that matter for a verdict and a step time are never silently provisional: each preset
        # has a documented peak and HBM bandwidth
        assert hw.source_of("peak_flops.bf16").kind in ("vendor", "derived"), hw.id
        assert hw.source_of("hbm_bandwidth").kind in ("vendor", "provisional"), hw.id


def test_the_variants_users_have_are_shipped() -> None:
    ids = {hw.id for hw in shipped_presets()}
    assert {"H100-80G", "H100-96G", "H200-141G", "B200-192G", "A2", "A3"} <= ids
    assert find_preset("atlas-900-a2-pod").id == "A2" and find_preset("atlas-800t-a2").id == "A2"
    assert find_preset("910c").id == "A3"


def test_published_peaks_per_precision() -> None:
    # Atlas A2 (910B2): 24 AI cores × 1.8 GHz × a 16×16×16 cube of MACs × 2 FLOPs per MAC
    assert find_preset("A2").peak("bf16") == pytest.approx(24 * 1.8e9 * 16 ** 3 * 2, rel=1e-3)
    # A3: one die of a 910C is half of CloudMatrix384's 752 TFLOP/s per package
    assert find_preset("A3").peak("bf16") == pytest.approx(752e12 / 2)
    h100, b200 = find_preset("H100-80G"), find_preset("B200-192G")
    assert h100.peak("fp8") == pytest.approx(2 * h100.peak("bf16"), rel=1e-3)  # Hopper FP8 is twice BF16
    assert b200.peak("mxfp8") == b200.peak("fp8") == pytest.approx(2 * b200.peak("bf16"))
    for ascend in ("A2", "A3"):
        assert find_preset(ascend).peak("fp8") is None  # no FP8 matmul on this generation
    assert h100.peak("mxfp8") is None  # MXFP8 arrives with Blackwell
    assert find_preset("H200-141G").peak("bf16") == h100.peak("bf16")  # same GH100 die
    assert find_preset("H200-141G").host_ram_per_node == 2 * 1024 * GiB


def test_efficiency_bands_hold_the_nominal_value() -> None:
    for hw in shipped_presets():
        low, high = hw.band("matmul")
        assert low <= hw.eff_matmul <= high, hw.id
        low, high = hw.band("comm")
        assert low <= 1.0 <= high, hw.id


def test_sustained_rates_kept_where_they_were_matched_to_upstream() -> None:
    # the A2/A3 efficiencies reproduce the sustained rates the upstream tool used (140 and 160 TFLOP/s)
    assert find_preset("A2").peak("bf16") * find_preset("A2").eff_matmul == pytest.approx(141.6e12, rel=1e-3)
    assert find_preset("A3").peak("bf16") * find_preset("A3").eff_matmul == pytest.approx(160e12, rel=1e-3)


def test_an_edited_figure_is_the_users() -> None:
    hw = find_preset("H200-141G")
    assert hw.source_of("capacity").kind == "measured"
    edited = hw.replace(capacity=100 * GiB)
    assert edited.source_of("capacity").kind == "user"
    assert edited.source_of("peak_flops.bf16").kind == "vendor"  # untouched figures keep theirs


def _base() -> dict:
    return {"id": "X", "capacity": "64GiB", "peak_flops": {"bf16": 1e15}, "eff_matmul": 0.5,
            "sources": [{"id": "doc", "kind": "vendor", "title": "a datasheet"}],
            "provenance": {"peak_flops": "doc"}}


def test_bad_preset_files_are_refused_by_key() -> None:
    hardware_from_mapping(_base(), "x.yaml")
    cases = [({"bogus": 1}, "bogus"),
             ({"provenance": {"peak_flops": "nobody"}}, "provenance.peak_flops"),
             ({"provenance": {"hbm_bw": "doc"}}, "provenance.hbm_bw"),
             ({"sources": [{"id": "doc", "kind": "rumour"}]}, "sources[0]"),
             ({"efficiency_band": {"matmul": [0.6, 0.7]}}, "efficiency_band.matmul"),
             ({"efficiency_band": {"speed": [0.1, 0.9]}}, "efficiency_band.speed"),
             ({"runtime_context": {"jax": "1GiB"}}, "runtime_context.jax")]
    for change, key in cases:
        data = {**_base(), **change}
        with pytest.raises(ConfigError) as err:
            hardware_from_mapping(data, "x.yaml")
        assert err.value.key == key and "x.yaml" in str(err.value)


def test_figures_reach_the_json_table_and_report(tmp_path, capsys) -> None:
    plan = tmp_path / "p.yaml"
    plan.write_text(PLAN)
    assert main(["estimate", str(plan), "--json"]) == 0
    echo = json.loads(capsys.readouterr().out)["hardware"]["figures"]
    by_path = {f["figure"]: f for f in echo}
    assert by_path["peak_flops.bf16"]["source"] == "vendor" and by_path["peak_flops.bf16"]["url"]
    assert by_path["host_link_bandwidth"]["source"] == "provisional"
    assert main(["estimate", str(plan)]) == 0
    table = capsys.readouterr().out
    assert "peak bf16 353.9 TFLOP/s [vendor]" in table and "provisional: " in table and "host link" in table
    out = tmp_path / "r.md"
    assert main(["report", str(plan), "-o", str(out)]) == 0
    text = out.read_text()
    assert "## Device figures" in text and "| peak bf16 | 353.9 TFLOP/s | [vendor document:" in text


def test_runtime_figures_follow_the_framework() -> None:
    hw = find_preset("H200-141G")
    paths = {f.path for f in device_figures(hw, "pytorch")}
    assert {"runtime_context.pytorch", "workspaces.pytorch"} <= paths
    assert hw.workspace_bytes("pytorch") == 64 * MiB
    assert not any(f["figure"].startswith("runtime_context") for f in figures_json(hw, "mindspore"))
