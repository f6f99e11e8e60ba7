"""Issue 11 fields: choices are checked with a did-you-mean, FP8 is refused by rule where no FP8 matmul exists,
and all-gather context parallelism is priced (hand derivations from Transformer Engine's
AttnFuncWithCPAndKVAllGather: the forward all-gathers K/V, the backward gathers them again and holds full-length
dK/dV)."""

from __future__ import annotations

import pytest

from estimator import ModelSpec, RunOptions, Strategy, estimate, find_preset
from estimator import comm as C
from estimator.errors import ConfigError, StrategyError
from estimator.fields import coerce, lookup
from estimator.steptime import estimate_step_time

LLAMA_8B = ModelSpec(name="Llama-3-8B", family="llama2", hidden_size=4096, num_layers=4, num_attention_heads=32,
                     num_kv_heads=8, head_dim=128, ffn_hidden_size=14336, vocab_size=128256)
H100 = find_preset("H100-80G")


@pytest.mark.parametrize(("key", "value", "near"), [("strategy.cp_algo", "rign", "ring"),
                                                     ("strategy.fp8", "mxfp", "mxfp8"),
                                                     ("strategy.peft", "qlroa", "qlora"),
                                                     ("strategy.lora_targets", ["q", "vv"], "v")])
def test_text_choices_name_the_nearest(key, value, near):
    with pytest.raises(ConfigError, match=f"did you mean '{near}'"):
        coerce(lookup(key), value)


def test_choices_accept_their_values():
    assert coerce(lookup("strategy.lora_targets"), "q, v") == ("q", "v")
    assert coerce(lookup("strategy.compile"), ["model", "loss"]) == ("model", "loss")
    assert coerce(lookup("strategy.offload_counts"), [2, 1]) == (2, 1)


@pytest.mark.parametrize("device", ["A2", "A3", "A100-80G"])
def test_fp8_refused_without_fp8_matmuls(device):
    st = Strategy(seq_length=4096, fp8="tensorwise")
    with pytest.raises(StrategyError, match="R-FP8-DEVICE"):
        estimate(LLAMA_8B, st, find_preset(device), RunOptions(framework="megatron"))


def test_mxfp8_needs_an_mxfp8_device():
    st = Strategy(seq_length=4096, fp8="mxfp8")
    with pytest.raises(StrategyError, match="no MXFP8"):
        estimate(LLAMA_8B, st, H100, RunOptions(framework="megatron"))
    estimate(LLAMA_8B, st, find_preset("B200-192G"), RunOptions(framework="megatron"))


def test_fp8_refused_in_an_unmodelled_framework():
    with pytest.raises(StrategyError, match="mindformers is not modelled"):
        estimate(LLAMA_8B, Strategy(seq_length=4096, fp8="tensorwise"), H100, RunOptions(framework="mindformers"))


def _cp_buffer(result) -> float:
    return result.stages[0].bytes_by_category["communication_buffers"]


def test_allgather_cp_holds_the_full_sequence_kv_and_its_gradients():
    cp, t, s = 4, 2, 32768
    st = Strategy(seq_length=s, cp=cp, tp=t, cp_algo="allgather", sequence_parallel=True)
    got = estimate(LLAMA_8B, st, H100, RunOptions(framework="megatron"))
    T = s / cp
    kv_local = 2 * 8 * (128 + 128) * T / t  # β_c·n_kv·(dqk + dv)·T/t
    sp_gather = 2 * 2 * 4096 * T  # the layer's other transient term: Megatron's double-buffered SP gather
    # backward: k_ag, v_ag (cp blocks) + dk, dv (cp blocks)
    assert _cp_buffer(got) == pytest.approx(sp_gather + 2 * cp * kv_local)
    ring = estimate(LLAMA_8B, st.replace(cp_algo="ring"), H100, RunOptions(framework="megatron"))
    assert _cp_buffer(ring) == pytest.approx(sp_gather + 2 * kv_local)  # the ring's two KV blocks


def test_allgather_cp_comm_is_exposed_all_gathers():
    cp, s = 8, 65536
    st = Strategy(seq_length=s, cp=cp, cp_algo="allgather")
    got = estimate_step_time(LLAMA_8B, st, H100, RunOptions(framework="megatron"))
    T = s / cp
    M_kv = 2 * 8 * 256 * T
    nvlink = H100.levels[0]
    bw, alpha = nvlink.bandwidth * nvlink.efficiency, nvlink.latency
    gather = (cp - 1) / cp * (cp * M_kv) / bw + (cp - 1) * alpha  # all-gather of the full K/V
    link = C.Link(cp, bw, alpha)
    assert C.cp_allgather(M_kv, link) == pytest.approx((gather, 2 * gather))
    per_layer = 3 * gather  # forward + backward, nothing hidden (TE: "KV all-gather between CP ranks is exposed")
    assert got.stages[0].comm["cp"] == pytest.approx(4 * per_layer)


def test_partly_priced_features_are_said_out_loud():
    st = Strategy(seq_length=4096, offload_optimizer=True)
    got = estimate(LLAMA_8B, st, H100, RunOptions(framework="megatron"))
    assert any(w.code == "W-UNMODELLED" and "CPU compute is not" in w.text for w in got.warnings)


@pytest.mark.parametrize("key", ["strategy.trainable_layers", "strategy.vision_partition"])
def test_an_optional_list_of_integers_checks_its_entries(key) -> None:
    """tuple[int, ...] | None fields: entries are whole numbers (text digits converted), names refused naming the
    key — the optional wrapper once hid the element type, so ('one', 'two') was kept as layer indices."""
    info = lookup(key)
    assert coerce(info, ["1", 2]) == (1, 2)
    assert coerce(info, None) is None
    with pytest.raises(ConfigError, match=f"{key}.*expected an integer, got 'one'"):
        coerce(info, "one, two")
