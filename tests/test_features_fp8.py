"""FP8 and MXFP8 training (issue 11 feature 1) against derivations written here from the frameworks' sources:

* Transformer Engine's Linear saves its quantised input, columnwise only, for the weight gradient
  (``inputmat.update_usage(rowwise_usage=False, columnwise_usage=True)``): 1 B per element (MXFP8: + an E8M0 scale
  per 32 elements; blockwise: + an fp32 scale per 128); flash attention still reads the bf16 attention output, so
  the output projection's FP8 copy comes on top;
* TE caches the FP8 weight (rowwise and columnwise) across micro-batches; with ``--fp8-param-gather`` the weight
  itself is FP8 and only the columnwise copy is extra;
* torchao's Float8Linear saves ``input_hp`` and ``weight_hp_t`` (``matmul_with_hp_or_float8_args``): activations
  unchanged; with ``enable_fsdp_float8_all_gather`` FSDP gathers FP8 weights: half the bf16 bytes;
* FP8 GEMMs run at the device's FP8 peak (H100: 2× bf16).
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from estimator import comm as C
from estimator.errors import ConfigError
from estimator.estimate import layout_inputs
from estimator.export import export
from estimator.formats import parse
from estimator.layout import Item, build_layout
from estimator.parsed import apply_changes
from estimator.resolve import resolve
from estimator.stage import StagePricer
from estimator.steptime import estimate_step_time

H100, B200 = find_preset("H100-80G"), find_preset("B200-192G")
H, F, A, KV, DH, V = 4096, 14336, 32, 8, 128, 128256
LLAMA3_8B = ModelSpec(name="Llama-3-8B", family="llama2", hidden_size=H, num_layers=4, num_attention_heads=A,
                      num_kv_heads=KV, head_dim=DH, ffn_hidden_size=F, vocab_size=V)
Q, KV_W = A * DH, KV * DH
LINEAR = H * (Q + 2 * KV_W) + Q * H + H * 2 * F + F * H  # qkv, proj, fc1, fc2 weights of one layer
MEGATRON = RunOptions(framework="megatron")
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _pricer(st: Strategy, hw=H100, options=MEGATRON) -> StagePricer:
    r = resolve(LLAMA3_8B, st, hw, options)
    return StagePricer(r, build_layout(layout_inputs(r)))


def _per_token(st: Strategy, hw=H100, options=MEGATRON) -> float:
    sums = _pricer(st, hw, options).acts.sums("dense", "none")
    return sums.sp + sums.tp + sums.rep


# one Llama-3 layer in bf16, Megatron rule (flash attention, fused SwiGLU, t = 1), bytes per token
BF16_LAYER = 2 * H * 4 + 2 * (Q + 2 * KV_W) + 2 * Q + 4 * A + 2 * F * 3 + 2 * 4


def test_bf16_layer_by_hand():
    assert _per_token(Strategy(seq_length=8192)) == BF16_LAYER


@pytest.mark.parametrize(("recipe", "b8", "hw"), [("tensorwise", 1.0, H100), ("delayed", 1.0, H100),
                                                   ("blockwise", 1 + 4 / 128, H100), ("mxfp8", 1 + 1 / 32, B200)])
def test_te_saves_fp8_linear_inputs(recipe, b8, hw):
    # the two norm outputs and the fc2 input drop from 2 B to β_8; the proj input gets an FP8 copy beside O
    expected = BF16_LAYER - (2 - b8) * (H + H + F) + b8 * Q
    assert _per_token(Strategy(seq_length=8192, fp8=recipe), hw) == pytest.approx(expected)


def test_torchao_saves_high_precision_inputs():
    options = RunOptions(framework="torchtitan")
    bf16 = _per_token(Strategy(seq_length=8192), options=options)
    assert _per_token(Strategy(seq_length=8192, fp8="tensorwise"), options=options) == bf16


def _params(st: Strategy) -> float:
    return estimate(LLAMA3_8B, st, H100, MEGATRON).stages[0].bytes_by_category["parameters"]


def test_te_caches_rowwise_and_columnwise_fp8_weights():
    bf16 = _params(Strategy(seq_length=8192))
    assert _params(Strategy(seq_length=8192, fp8="tensorwise")) - bf16 == pytest.approx(4 * 2 * 1.0 * LINEAR)
    # FP8 weights: 1 B stored + 1 B columnwise copy instead of 2 B bf16 + 2 B of cached copies
    assert _params(Strategy(seq_length=8192, fp8="tensorwise", fp8_param=True)) == pytest.approx(bf16)


def test_delayed_scaling_keeps_an_amax_history_per_gemm():
    plain = _params(Strategy(seq_length=8192, fp8="delayed"))
    long = _params(Strategy(seq_length=8192, fp8="delayed", fp8_amax_history=1024))
    # 4 GEMMs per layer, fp32 history and scale/scale_inv of 3 forward + 2 backward tensors each
    assert long - plain == pytest.approx(4 * 4 * 20 * (1024 - 1))


def test_fp8_gathered_weights_are_half_the_bf16_size():
    """ZeRO-3 / FSDP gathers: a layer's gathered weights at β_c = 2 B, FP8 ones at 1 B with FP8 gathers."""
    st = Strategy(seq_length=8192, dp=8, sharding=ShardingSpec(mode="zero3"))
    layer = Item("dense", "dense", index=0)
    bf16 = _pricer(st).gathered_bytes(layer)
    fp8 = _pricer(st.replace(fp8="tensorwise", fp8_param=True)).gathered_bytes(layer)
    norms = 2 * H
    assert bf16 == pytest.approx(2 * (LINEAR + norms))
    assert fp8 == pytest.approx(1 * LINEAR + 2 * norms)
    assert fp8 / bf16 == pytest.approx(0.5, abs=1e-3)


def test_fsdp2_float8_all_gather_halves_the_gather_time_and_buffers():
    options = RunOptions(framework="torchtitan", overlap_fsdp=0.0)
    st = Strategy(seq_length=8192, dp=8, sharding=ShardingSpec(mode="fsdp"), fp8="tensorwise")
    plain = estimate_step_time(LLAMA3_8B, st, H100, options).stages[0].comm["fsdp"]
    fp8 = estimate_step_time(LLAMA3_8B, st.replace(fp8_param=True), H100, options).stages[0].comm["fsdp"]
    nvlink = H100.levels[0]
    link = C.Link(8, nvlink.bandwidth * nvlink.efficiency, nvlink.latency)
    rest = 2 * (4 * 2 * H + 2 * V * H + H)  # norms, embedding, head and final norm stay bf16
    # forward gather + backward re-gather (reshard after forward at pp 1) + the reduce-scatter (unchanged)
    gather = (lambda M: 2 * C.all_gather(M, link))  # noqa: E731
    assert plain - fp8 == pytest.approx(gather(2 * 4 * LINEAR + rest) - gather(1 * 4 * LINEAR + rest))
    # with blocks kept gathered between forward and backward, the loss instant holds every block unsharded
    kept = st.replace(sharding=ShardingSpec(mode="fsdp", reshard_after_forward=False))
    mem = {p: estimate(LLAMA3_8B, kept.replace(fp8_param=p), H100, options).stages[0].bytes_by_category
           for p in (False, True)}
    assert mem[False]["communication_buffers"] - mem[True]["communication_buffers"] == pytest.approx(4 * LINEAR)


def test_fp8_matmuls_run_at_the_fp8_peak():
    st = Strategy(seq_length=8192)
    base = estimate_step_time(LLAMA3_8B, st, H100, MEGATRON).stages[0]
    eight = estimate_step_time(LLAMA3_8B, st.replace(fp8="tensorwise"), H100, MEGATRON).stages[0]
    (f16, b16, w16), (f8, b8, w8) = (base.F, base.B, base.W), (eight.F, eight.B, eight.W)
    T = 8192
    eff = H100.eff_matmul
    saved = 2 * T * LINEAR * (1 / (H100.peak("bf16") * eff) - 1 / (H100.peak("fp8") * eff))
    hbm = H100.hbm_bandwidth * H100.eff_hbm
    # TE quantises each linear input rowwise + columnwise (read 2 B, write 2 × 1 B): qkv/fc1 read h, proj q_w, fc2 ffn
    cast = T * (H + Q + H + F) * (2 + 2) / hbm
    # the layer's elementwise traffic follows its saved bytes (T-COMP.ew: k_ew = 1 forward, 2 backward)
    ew = T * ((2 - 1) * (H + H + F) - 1 * Q) / hbm
    assert f8 == pytest.approx(f16 - 4 * saved + 4 * cast - 4 * ew)
    grads = T * ((Q + 2 * KV_W) + H + 2 * F + H) * (2 + 2) / hbm  # output gradients, both ways
    assert w8 == pytest.approx(w16 - 4 * saved)
    assert b8 == pytest.approx(b16 - 4 * saved + 4 * grads - 2 * 4 * ew)


def test_megatron_fp8_flags_are_read_and_written(tmp_path):
    path = tmp_path / "fp8.sh"
    shutil.copy(FIXTURES / "mindspeed" / "fp8_llama3_8b.sh", path)
    parsed = parse([path], framework="megatron")
    st = parsed.strategy
    assert (st.fp8, st.fp8_param) == ("tensorwise", True)
    assert parsed.provenance["strategy.fp8"].key.startswith("--fp8-recipe")
    edited = apply_changes(parsed, {"strategy.fp8": "delayed", "strategy.fp8_param": False,
                                    "strategy.fp8_amax_history": 1024})
    old = path.read_text()
    new = export(edited)[str(path)]
    lines = [d for d in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
             if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    assert "-    --fp8-recipe tensorwise \\" in lines and "+    --fp8-recipe delayed \\" in lines
    assert "-    --fp8-param-gather" in lines and any("--fp8-amax-history-len 1024" in x for x in lines)
    path.write_text(new)
    assert parse([path], framework="megatron").strategy == edited.strategy
    off = export(apply_changes(parse([path], framework="megatron"), {"strategy.fp8": "none"}))[str(path)]
    assert "--fp8-format" not in off and "--fp8-recipe" not in off


def test_fp8_experts_cannot_be_set_apart_in_a_launch_script(tmp_path):
    path = tmp_path / "fp8.sh"
    shutil.copy(FIXTURES / "mindspeed" / "fp8_llama3_8b.sh", path)
    edited = apply_changes(parse([path], framework="megatron"), {"strategy.fp8_experts": False})
    with pytest.raises(ConfigError, match="fp8_experts"):
        export(edited)


# vendor dense peaks (TFLOP/s): H100/H200 SXM datasheet 989.4 bf16 / 1,978.9 FP8; B200 (HGX B200, per GPU) 2,250 bf16 /
# 4,500 FP8 and MXFP8; Ascend 910B/910C state no FP8 matmul
FP8_DEVICES = {"H100-80G": 2.0, "H100-96G": 2.0, "H200-141G": 2.0, "B200-192G": 2.0}


@pytest.mark.parametrize("device", sorted(FP8_DEVICES))
def test_every_fp8_preset_runs_fp8_at_twice_bf16(device):
    hw = find_preset(device)
    assert hw.peak("fp8") == pytest.approx(FP8_DEVICES[device] * hw.peak("bf16"), rel=1e-3)  # datasheets round
    assert (hw.peak("mxfp8") or 0) == (hw.peak("fp8") if device.startswith("B200") else 0)
    base = estimate_step_time(LLAMA3_8B, Strategy(seq_length=8192), hw, MEGATRON).stages[0]
    recipe = "mxfp8" if device.startswith("B200") else "tensorwise"
    eight = estimate_step_time(LLAMA3_8B, Strategy(seq_length=8192, fp8=recipe), hw, MEGATRON).stages[0]
    saved = 2 * 8192 * LINEAR * (1 / hw.peak("bf16") - 1 / hw.peak("fp8")) / hw.eff_matmul
    assert pytest.approx(4 * saved) == base.W - eight.W  # the weight gradients are matmuls only


@pytest.mark.parametrize("device", ["A2", "A3"])
@pytest.mark.parametrize("framework", ["mindspeed", "megatron"])
def test_ascend_refuses_every_fp8_recipe(device, framework):
    from estimator.errors import StrategyError

    for recipe in ("tensorwise", "delayed", "blockwise", "mxfp8"):
        with pytest.raises(StrategyError, match="FP8"):
            estimate(LLAMA3_8B, Strategy(seq_length=4096, fp8=recipe), find_preset(device),
                     RunOptions(framework=framework))


TT_FLOAT8 = """[model]
name = "llama3"
flavor = "8B"
# converters = ["float8"]

[training]
local_batch_size = 1
seq_len = 8192

[parallelism]
data_parallel_shard_degree = -1

[float8]
enable_fsdp_float8_all_gather = false  # kept: the user's comment
filter_fqns = ["output"]
"""


def _tt(tmp_path, text: str, name: str = "job.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path, parse([path], devices=8)


def test_torchtitan_float8_is_written_back(tmp_path):
    path, parsed = _tt(tmp_path, TT_FLOAT8)
    assert parsed.strategy.fp8 == "none"
    new = export(apply_changes(parsed, {"strategy.fp8": "rowwise", "strategy.fp8_param": True}))[str(path)]
    assert 'converters = ["float8"]' in new and 'recipe_name = "rowwise"' in new
    assert "enable_fsdp_float8_all_gather = true  # kept: the user's comment" in new
    path.write_text(new)
    again = parse([path], devices=8).strategy
    assert (again.fp8, again.fp8_param) == ("rowwise", True)
    off = export(apply_changes(parse([path], devices=8), {"strategy.fp8": "none"}))[str(path)]
    assert "converters = []" in off
    path.write_text(off)
    assert parse([path], devices=8).strategy.fp8 == "none"
    with pytest.raises(ConfigError, match="delayed"):
        export(apply_changes(parsed, {"strategy.fp8": "delayed"}))


def test_torchtitan_quantize_converters_keep_their_names(tmp_path):
    text = TT_FLOAT8.replace("# converters", 'converters = ["quantize.linear.float8", "quantize.grouped_mm.float8"]\n#')
    text = text.replace("[float8]", "[quantize.linear.float8]")
    path = tmp_path / "q.toml"
    path.write_text(text)
    parsed = parse([path], devices=8)
    assert parsed.strategy.fp8 == "tensorwise"
    mx = export(apply_changes(parsed, {"strategy.fp8": "mxfp8"}))[str(path)]
    assert 'converters = ["quantize.grouped_mm.float8", "quantize.linear.mx"]' in mx
    (tmp_path / "mx.toml").write_text(mx)
    assert parse([tmp_path / "mx.toml"], devices=8).strategy.fp8 == "mxfp8"
    rowwise = export(apply_changes(parsed, {"strategy.fp8": "rowwise"}))[str(path)]
    assert 'converters = ["quantize.linear.float8", "quantize.grouped_mm.float8"]' in rowwise
    assert '[quantize.linear.float8]\nenable_fsdp_float8_all_gather = false' in rowwise
    assert 'recipe_name = "rowwise"' in rowwise.split("[quantize.linear.float8]")[1]


def test_torchtitan_2024_schema_switches_float8_linear(tmp_path):
    text = ('[model]\nname = "llama3"\nflavor = "8B"\n[training]\nbatch_size = 1\nseq_len = 8192\n'
            "data_parallel_shard_degree = -1\n[float8]\nenable_float8_linear = false\n")
    path, parsed = _tt(tmp_path, text)
    new = export(apply_changes(parsed, {"strategy.fp8": "tensorwise"}))[str(path)]
    assert "enable_float8_linear = true" in new
    path.write_text(new)
    assert parse([path], devices=8).strategy.fp8 == "tensorwise"
    with pytest.raises(ConfigError, match="2024-12"):
        export(apply_changes(parsed, {"strategy.fp8": "rowwise"}))


def test_megatron_llama3_8b_h100_fp8_example_by_hand(shared_dir):
    """NVIDIA's examples/llama/train_llama3_8b_h100_fp8.sh (``--fp8-param-gather``, distributed optimizer, t = p =
    c = 1 on 8 H100) counted by hand, category by category. The FP8 weights cost 2 B per parameter on Hopper, not 1:
    the rowwise FP8 data (1 B, a view into the DDP uint8 parameter buffer that is all-gathered) plus its columnwise
    (transposed) copy, which Megatron has TE build right after each all-gather (megatron/core/fp8_utils.py
    ``post_all_gather_processing``: "tensorwise: may need to create a transposed view to match backend GEMM") or
    TE's Linear builds in the next forward; Hopper's FP8 GEMMs take TN layouts only, so dgrad needs it. The
    example's README states Context Parallel 2 for this configuration (its FP8 performance row: TP 1, PP 1, CP 2);
    at the script's CP_SIZE=1 the count is over the 80 GB device, at CP 2 it fits."""
    parsed = parse([shared_dir / "real-configs/megatron_lm/mlm_llama3_8b_h100_fp8_train.sh"], devices=8)
    assert (parsed.strategy.fp8, parsed.strategy.fp8_param, parsed.strategy.cp) == ("delayed", True, 1)
    L, T, GIB = 32, 8192, 2**30
    emb, out = V * H, V * H + H  # untied; the output row carries the final norm
    norms = 2 * H
    n = emb + out + L * (LINEAR + norms)
    params = 2 * (emb + out + L * norms) + L * (1 + 1) * LINEAR + L * 4 * 20 * (1024 + 2)  # amax history 1024
    grads = 2 * n  # --grad-reduce-in-bf16
    optim = (4 + 2 * 4) * n / 8  # fp32 main params + exp_avg + exp_avg_sq, sharded over dp = 8
    # per token: norm inputs 2·2h and rstd 2·4, FP8 inputs of qkv/proj/fc1 (h each) and fc2 (f), q/k/v after RoPE,
    # attention output O and its fp32 log-sum-exp per head, the SwiGLU input 2·2f
    layer = 2 * 2 * H + 2 * 4 + 3 * H + F + 2 * (Q + 2 * KV_W) + 2 * Q + 4 * A + 2 * 2 * F
    assert layer == 120_968
    acts = T * (8 + L * layer + (2 * H + 4 + 2 * H) + 4 * V)  # token ids; final norm in/out; fp32 softmax
    working = (4 + 2) * V * T  # [W-LOSS.megatron_fused]: fp32 clone + bf16 gradient beside the saved softmax
    hand = {"parameters": params, "gradients": grads, "optimizer_states": optim, "activations": acts,
            "working_overhead": working}
    stage = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options).stages[0]
    for key, value in hand.items():
        assert stage.bytes_by_category[key] == pytest.approx(value, rel=1e-12), key
    # the tensors by hand; the device-level parts (cuBLAS workspace, allocator slack, CUDA context, NCCL buffers,
    # issue 10) come on top of them
    device_parts = ("library_workspaces", "allocator_slack", "runtime_context", "comm_library")
    tensors = stage.total - sum(stage.bytes_by_category[k] for k in (*device_parts, "reserve"))
    assert tensors == pytest.approx(sum(hand.values()), rel=1e-12)
    assert tensors > 80.5 * GIB  # 80.58 GiB
    assert tensors > parsed.hardware.capacity  # 79.65 GiB: over at the script's CP_SIZE=1, tensors alone
    cp2 = estimate(parsed.model, parsed.strategy.replace(cp=2, dp=4), parsed.hardware, parsed.options).stages[0]
    assert cp2.bytes_by_category["activations"] == pytest.approx(acts / 2, rel=1e-3)
    assert cp2.device_peak < parsed.hardware.capacity  # with the device-level parts
