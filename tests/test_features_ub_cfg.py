"""Megatron's ``--tp-comm-overlap-cfg`` (issue 11, [D-UB], docs/decisions.md P-UB): the YAML Megatron hands
Transformer Engine's ``initialize_ub`` as ``ub_cfgs`` is read from beside the script (never executed) and each
GEMM's method, is_reduce_scatter and fp8_buf priced as TE ≥ 2.10 builds the buffers. Hand derivations from TE's
``initialize_ub`` (transformer_engine/pytorch/module/base.py) and ``CommOverlapP2PBase::initialize``
(common/comm_gemm_overlap/comm_gemm_overlap.cpp: a ring_exchange reduce-scatter holds 2t − 1 chunks of S/t rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator.errors import ConfigError
from estimator.estimate import estimate
from estimator.export import export
from estimator.formats import parse
from estimator.parsed import apply_changes

S, H, T, WORLD = 4096, 1024, 4, 8  # seq 4096 × micro-batch 1 / cp 1 rows, hidden 1024, tp 4, 8 ranks
UB_FIXED = 3_223_808 + 2 * 65_536 + 132 * WORLD  # region 0, flag pages, ids per rank (test_features_overlap_buffers)

SCRIPT = """#!/bin/bash
GPT_ARGS=(
    --num-layers 4
    --hidden-size 1024
    --num-attention-heads 16
    --seq-length 4096
    --max-position-embeddings 4096
    --micro-batch-size 1
    --global-batch-size 16
    --tensor-model-parallel-size 4
    --sequence-parallel
    --tp-comm-overlap
    --tp-comm-overlap-cfg ub_cfg.yaml
    --bf16
)
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py "${GPT_ARGS[@]}" \\
    --vocab-size 32000 --tokenizer-type NullTokenizer
"""
# qkv_dgrad moved off bulk onto ring_exchange (it now reduce-scatters, qkv_wgrad all-gathers), proj_fprop on
# ring_exchange (a reduce-scatter), fc2_fprop pipeline with an FP8 buffer; the other settings change no size
CFG = """qkv_dgrad:
  method: ring_exchange
  num_sm: 1
proj_fprop:
  method: ring_exchange
  num_splits: 4
fc2_fprop:
  method: pipeline
  fp8_buf: true
fc1_fprop:
  method: ring_exchange
  aggregate: 1
"""


def _plan(tmp_path: Path, cfg: str | None = CFG, extra: str = ""):
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT.replace("    --bf16\n", "    --bf16\n" + extra), encoding="utf-8")
    if cfg is not None:
        (tmp_path / "ub_cfg.yaml").write_text(cfg, encoding="utf-8")
    return parse([str(script)])


def _userbuffers(parsed) -> float:
    res = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    rows = [lr.total for s in res.stages for lr in s.layers if lr.kind == "userbuffers"]
    assert len(rows) == 1
    return rows[0]


def test_the_config_file_is_read_and_priced(tmp_path) -> None:
    """bf16: 12 buffers; qkv_dgrad and proj_fprop are ring_exchange reduce-scatters, (2t − 1)/t = 7/4 of the
    shape each, the other 10 the shape: 2 B × (10 + 2 × 7/4) = 27 B per element row (TE's defaults: 24)."""
    parsed = _plan(tmp_path)
    got = {g.name: (g.method, g.is_reduce_scatter, g.fp8_buf) for g in parsed.strategy.tp_comm_overlap_cfg}
    assert got == {"qkv_dgrad": ("ring_exchange", None, None), "proj_fprop": ("ring_exchange", None, None),
                   "fc2_fprop": ("pipeline", None, True), "fc1_fprop": ("ring_exchange", None, None)}
    assert not [w for w in parsed.warnings if w.code in ("W-UB-CFG", "W-FLAG-UNPRICED")]
    assert _userbuffers(parsed) == pytest.approx(27 * S * H + UB_FIXED)
    default = _plan(tmp_path, cfg="")  # an empty file: TE's defaults
    assert _userbuffers(default) == pytest.approx(24 * S * H + UB_FIXED)


def test_fp8_buffers_follow_te_rules(tmp_path) -> None:
    """FP8: the all-gather GEMMs less the moved qkv_dgrad (7) and the pipeline fc2_fprop asking fp8_buf are uint8;
    qkv_dgrad and proj_fprop (7/4 each), qkv_wgrad and fc1_wgrad stay bf16: 8 × 1 + 2 × (7/4 + 7/4 + 1 + 1) = 19."""
    parsed = _plan(tmp_path, extra="    --fp8-format hybrid\n    --fp8-recipe tensorwise\n")
    assert _userbuffers(parsed) == pytest.approx(19 * S * H + UB_FIXED)


def test_a_file_that_cannot_be_read_is_said_and_defaults_priced(tmp_path) -> None:
    parsed = _plan(tmp_path, cfg=None)
    said = [w.text for w in parsed.warnings if w.code == "W-UB-CFG"]
    assert said and "--tp-comm-overlap-cfg" in said[0] and "ub_cfg.yaml" in said[0] and "file not found" in said[0]
    assert parsed.strategy.tp_comm_overlap_cfg == ()
    assert _userbuffers(parsed) == pytest.approx(24 * S * H + UB_FIXED)
    broken = _plan(tmp_path, cfg="qkv_fprop: [method, ring_exchange\n")
    assert any(w.code == "W-UB-CFG" and "ub_cfg.yaml" in w.text for w in broken.warnings)


def test_entries_te_would_ignore_or_refuse_are_said(tmp_path) -> None:
    """An unknown GEMM (TE ignores it), an unknown setting (TE's add_ub would fail), a method name TE does not
    have: each said naming the file and key, that GEMM priced with TE's default; a wgrad set while its dgrad left
    bulk (TE raises): the whole file priced with the defaults."""
    parsed = _plan(tmp_path, cfg="qkv_fprop:\n  method: ring_exchange\n  turbo: true\nfc9_fprop:\n  method: bulk\n"
                                 "fc1_fprop:\n  method: warp\nproj_fprop:\n  method: bulk\n")
    said = [w.text for w in parsed.warnings if w.code == "W-UB-CFG"]
    assert len(said) == 3 and all("ub_cfg.yaml" in s for s in said)
    assert any("qkv_fprop" in s and "turbo" in s for s in said) and any("fc9_fprop" in s for s in said)
    assert [g.name for g in parsed.strategy.tp_comm_overlap_cfg] == ["proj_fprop"]
    refused = _plan(tmp_path, cfg="fc1_dgrad:\n  method: ring_exchange\nfc1_wgrad:\n  method: bulk\n")
    assert any(w.code == "W-UB-CFG" and "fc1_wgrad" in w.text for w in refused.warnings)
    assert refused.strategy.tp_comm_overlap_cfg == ()


def test_an_export_keeps_the_file_and_refuses_a_changed_setting(tmp_path) -> None:
    parsed = _plan(tmp_path)
    script = Path(parsed.sources[0].path)
    text = export(apply_changes(parsed, {"strategy.micro_batch_size": 2}))[str(script)]
    assert "--tp-comm-overlap-cfg ub_cfg.yaml" in text
    with pytest.raises(ConfigError, match="tp_comm_overlap_cfg"):
        export(apply_changes(parsed, {"strategy.tp_comm_overlap_cfg": {"qkv_fprop": {"method": "bulk"}}}))
