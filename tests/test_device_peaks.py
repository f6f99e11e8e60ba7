"""Two peaks, one verdict (issue 10): the three peaks with their bands in ``sapp.estimate/1.1`` at the top level and
per stage, ``peak_bytes`` as the largest instant of every stage (the optimizer step included), and the verdict and
headroom read on the device peak (and on the allocator peak against a framework pool)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.cli import main as cli_main
from estimator.estimate import estimate
from estimator.formats import parse
from estimator.parsed import build_plan
from estimator.result import PEAK_FIELDS, peak_key

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"
GiB = 2**30


def _estimate(name: str, devices: int | None = None, **options):
    parsed = parse([str(EXAMPLES / name)], devices=devices)
    return estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options.replace(**options))


def test_json_carries_the_three_peaks_with_their_bands_at_both_levels(capsys) -> None:
    assert cli_main(["estimate", str(EXAMPLES / "torchtitan_llama3_70b.toml"), "--devices", "256", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "sapp.estimate/1.1"
    keys = [f"{name}_bytes{end}" for name in ("tensor_peak", "allocator_peak", "device_peak")
            for end in ("", "_low", "_high")]
    assert [peak_key(f) for f in PEAK_FIELDS] == keys
    for where in (out, *out["stages"]):
        assert all(isinstance(where[k], int) for k in keys)
        for name in ("tensor_peak", "allocator_peak", "device_peak"):
            assert where[f"{name}_bytes_low"] <= where[f"{name}_bytes"] <= where[f"{name}_bytes_high"]
        assert where["tensor_peak_bytes"] <= where["allocator_peak_bytes"] <= where["device_peak_bytes"]
    # the top level is the largest stage; peak_bytes is the device peak, the optimizer step included
    for k in keys:
        assert out[k] == max(s[k] for s in out["stages"])
    assert out["peak_bytes"] == out["device_peak_bytes"]
    assert out["peak_bytes"] >= max(max(s["total"], s["optimizer_step_peak"]) for s in out["stages"])
    # torchtitan runs with expandable segments: a replayed, non-zero slack with a band
    assert out["allocator_peak_bytes"] > out["tensor_peak_bytes"]
    assert any(s["device_peak_bytes_high"] > s["device_peak_bytes_low"] for s in out["stages"])


def test_peak_is_the_optimizer_step_when_that_is_higher_and_headroom_agrees() -> None:
    """Llama-3-8B on one H200, unsharded fp32 AdamW, full recompute, 512 tokens: the optimizer step (weights,
    gradients, states and forloop temporaries) is higher than the forward/backward. peak_bytes is that instant, so
    Peak + Headroom is the limit (the app's Peak and Headroom tiles agree) and the verdict follows it."""
    values = {"model.name": "llama3-8b", "model.hidden_size": 4096, "model.num_layers": 32,
              "model.num_attention_heads": 32, "model.num_kv_heads": 8, "model.head_dim": 128,
              "model.ffn_hidden_size": 14336, "model.vocab_size": 128256, "strategy.seq_length": 512,
              "strategy.dp": 1, "strategy.recompute": "full", "strategy.micro_batches": 1,
              "options.framework": "torchtitan", "options.optimizer_impl": "forloop", "hardware.device": "H200-141G"}
    parsed = build_plan(values)
    res = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    (stage,) = res.stages
    assert res.limit == "optimizer_step" and stage.optimizer_step_peak > stage.total
    assert res.peak_bytes == stage.device_peak == stage.optimizer_step_peak
    assert res.device_limit == pytest.approx(res.budget)
    assert res.peak_bytes + res.headroom == pytest.approx(res.budget)
    assert res.fits and res.headroom > 0
    tight = estimate(parsed.model, parsed.strategy, parsed.hardware,
                     parsed.options.replace(budget_override=res.peak_bytes - GiB))
    assert not tight.fits and tight.headroom == pytest.approx(-GiB, abs=1)
    # ... and the band at the step is the allocator's band there
    assert stage.device_peak_low <= stage.device_peak <= stage.device_peak_high


def test_framework_pool_bounds_the_allocator_peak_and_the_device_the_capacity() -> None:
    """MindSpore max_device_memory (58 GB): the pool holds what the framework allocates, not the runtime context
    or HCCL's buffers; the headroom is the smaller of the two margins."""
    res = _estimate("deepseek_v3_671b.plan.yaml")
    assert res.framework_limit == pytest.approx(58 * GiB) and res.device_limit == pytest.approx(res.capacity)
    pool_margin = res.framework_limit - max(s.allocator_peak for s in res.stages)
    device_margin = res.device_limit - res.peak_bytes
    assert res.headroom == pytest.approx(min(pool_margin, device_margin))
    assert res.fits == (res.headroom >= 0)
    # MindSpore plans its memory statically: no allocator slack, so tensor = allocator peak
    assert all(s.allocator_slack == 0 and s.tensor_peak == s.allocator_peak for s in res.stages)
    assert all(s.device_peak - s.allocator_peak >= s.bytes_by_category["runtime_context"] for s in res.stages)
