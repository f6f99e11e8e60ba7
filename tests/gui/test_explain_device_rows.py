"""Explain of a per-layer row: a device row that shares its category with another is its own trace (async TP's
symmetric memory is priced in the communication-library category beside NCCL's buffers, [D-SYMM] not [D-COMM]),
also under FSDP2, whose stage trace keeps the device parts as separate nodes."""

from __future__ import annotations

import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from sapp_gui.explain_view import find_trace

# a 4-layer Llama-3-8B-shaped model (the layer count does not change the stage-level device rows)
MODEL = ModelSpec(name="Llama-3-8B", family="llama2", hidden_size=4096, num_layers=4, num_attention_heads=32,
                  num_kv_heads=8, head_dim=128, ffn_hidden_size=14336, vocab_size=128256)


@pytest.mark.parametrize("sharding", ["none", "fsdp"])
def test_the_symmetric_memory_row_explains_its_own_formula(qtbot, sharding: str) -> None:
    st = Strategy(seq_length=8192, dp=4, tp=2, sequence_parallel=True, async_tp=True,
                  sharding=ShardingSpec(mode=sharding))
    result = estimate(MODEL, st, find_preset("H100-80G"), RunOptions(framework="torchtitan"), explain=True)
    stage = result.stages[0]
    kinds = [row.kind for row in stage.layers]
    symm, nccl = kinds.index("symmetric_memory"), kinds.index("comm_library")
    node, note = find_trace(stage.explain, "comm_library", stage, symm)
    assert (node.formula_id, note) == ("D-SYMM", "")
    # 2·β_c·h·T/t by hand: 2 × 2 B × 4096 × 8192 / 2
    assert node.value == pytest.approx(stage.layers[symm].total) == pytest.approx(2 * 2 * 4096 * 8192 / 2)
    node, _note = find_trace(stage.explain, "comm_library", stage, nccl)  # NCCL's own row keeps its trace
    assert node.formula_id == "D-COMM" and node.value == pytest.approx(stage.layers[nccl].total)
