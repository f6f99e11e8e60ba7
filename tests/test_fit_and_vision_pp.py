"""``sapp fit --max micro_batches`` on pipeline plans and a pipeline-degree change on a MindSpeed-MM vision plan
(issue 12 item 5): values the rules refuse are skipped, not read as "does not fit"; a vision tower's layers per
stage follow a new pp as the search maps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator import estimate
from estimator.cli import main
from estimator.errors import SappError
from estimator.fit import fit_max, fit_min_devices
from estimator.formats import parse
from estimator.parsed import apply_changes

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"
QWEN3_MF = EXAMPLES / "mindformers_qwen3_32b.yaml"        # pp 4 × vpp 2, interleaved: m in groups of 4
DSV3_PLAN = EXAMPLES / "deepseek_v3_671b.plan.yaml"       # pp 16, 1F1B
MM_PAIR = [EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh", EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json"]


@pytest.mark.parametrize("path", [QWEN3_MF, DSV3_PLAN])
def test_max_micro_batches_on_a_pipeline_plan(path: Path) -> None:
    """Used to fail on every pipeline plan: 1 micro-batch (below the pipeline depth) was taken as not fitting."""
    parsed = parse([path])
    res = fit_max(parsed, "micro_batches")
    assert res.value is not None and res.value >= parsed.strategy.pp and res.result.fits
    # 1F1B-like schedules hold at most pp micro-batches in flight: memory stops growing, the bound is reached
    assert res.bound_reached


GPIPE_PLAN = """\
model: {name: dense-8b, hidden_size: 4096, num_layers: 32, num_attention_heads: 32, num_kv_heads: 8,
        ffn_hidden_size: 14336, vocab_size: 128256}
strategy: {dp: 4, tp: 4, pp: 4, micro_batch_size: 1, micro_batches: 8, seq_length: 8192, sequence_parallel: true,
           schedule: gpipe}
hardware: {device: A2}
options: {framework: megatron}
"""


def test_max_micro_batches_with_gpipe_finds_the_edge(tmp_path: Path) -> None:
    """GPipe holds every micro-batch of a flush: memory grows with m, so there is a largest m that fits, and the
    next valid one does not."""
    plan = tmp_path / "gpipe.yaml"
    plan.write_text(GPIPE_PLAN, encoding="utf-8")
    parsed = parse([plan])
    res = fit_max(parsed, "micro_batches")
    assert res.value is not None and not res.bound_reached and res.next_value > res.value
    over = estimate(*_parts(apply_changes(parsed, {"strategy.micro_batches": res.next_value}, hold="dp")))
    assert not over.fits and res.limiting_stage == over.peak_stage
    assert res.result.fits


def test_interleaved_counts_are_skipped_not_failed() -> None:
    parsed = parse([QWEN3_MF])
    # 6 micro-batches break the interleaved groups of 4 (R-VPP-MB): invalid, not "does not fit"
    with pytest.raises(SappError, match="R-VPP-MB"):
        estimate(*_parts(apply_changes(parsed, {"strategy.micro_batches": 6}, hold="dp")))
    assert fit_max(parsed, "micro_batches").value % parsed.strategy.pp == 0


def test_min_devices_skips_refused_degrees() -> None:
    res = fit_min_devices(parse([QWEN3_MF]))
    assert res.value is not None and res.result.fits


def test_cli_fit_micro_batches(capsys) -> None:
    assert main(["fit", str(DSV3_PLAN), "--max", "micro_batches", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["field"] == "micro_batches" and data["value"] >= 16


def test_vision_plan_takes_a_new_pipeline_degree() -> None:
    """Changing pp on a MindSpeed-MM vision plan failed with E-PART-SUM while the search handled it."""
    parsed = parse(MM_PAIR)
    vision = parsed.strategy.vision_partition
    assert vision is not None and len(vision) == parsed.strategy.pp == 2
    edited = apply_changes(parsed, {"strategy.pp": 4}, hold="devices")
    assert len(edited.strategy.vision_partition) == 4 and sum(edited.strategy.vision_partition) == sum(vision)
    assert edited.strategy.vision_partition[0] == max(edited.strategy.vision_partition)  # it stays up front
    result = estimate(*_parts(edited))
    assert len(result.stages) == 4
    texts = [w.text for w in edited.warnings if w.code == "W-LAYOUT-RESCALED"]
    assert texts and "vision tower" in texts[0]


def test_cli_set_pp_on_a_vision_plan(capsys) -> None:
    assert main(["estimate", *map(str, MM_PAIR), "--set", "strategy.pp=4"]) == 0
    assert "vision tower" in capsys.readouterr().out


def _parts(parsed):
    return parsed.model, parsed.strategy, parsed.hardware, parsed.options
