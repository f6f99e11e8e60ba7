"""Offload and swap (issue 11 feature 5) with host memory per node, hand-derived:

* an offloaded module's saved activations leave the device after its forward and come back before its backward:
  the device keeps the rest, its backward holds the layer's own and the next layer's prefetch (2×), the host keeps
  them for every micro-batch in flight (pinned buffers);
* optimizer states swapped (MindSpeed --swap-optimizer) or offloaded (DeepSpeed offload_optimizer) live in host
  memory; FSDP2's CPUOffloadPolicy keeps parameters, gradients and states there and copies each shard in before
  its all-gather;
* host memory per node = the per-device figure × devices per node, against the preset's RAM;
* copies over the host link hide behind a layer's compute: max(0, copy − compute) stays exposed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from estimator.estimate import layout_inputs
from estimator.formats import parse
from estimator.layout import build_layout
from estimator.resolve import resolve
from estimator.stage import StagePricer
from estimator.steptime import estimate_step_time

A2, H100 = find_preset("A2"), find_preset("H100-80G")
H, F, A, KV, DH, V, L = 8192, 28672, 64, 8, 128, 128256, 8
LLAMA3_70B = ModelSpec(name="Llama-3-70B", family="llama2", hidden_size=H, num_layers=L, num_attention_heads=A,
                       num_kv_heads=KV, head_dim=DH, ffn_hidden_size=F, vocab_size=V)
Q, KV_W = A * DH, KV * DH
MINDSPEED = RunOptions(framework="mindspeed")
S, T_P = 8192, 8
BASE = Strategy(seq_length=S, tp=T_P, pp=2, micro_batches=8, sequence_parallel=True)
# the self-attention module's saved tensors per token (Megatron rule, SP over t = 8): norm output, q, k, v,
# flash statistics, attention output — all TP- or sequence-sharded
ATTENTION = (2 * H + 2 * (Q + 2 * KV_W) + 4 * A + 2 * Q) / T_P


def _pricer(st: Strategy, hw=A2, options=MINDSPEED) -> StagePricer:
    r = resolve(LLAMA3_70B, st, hw, options)
    return StagePricer(r, build_layout(layout_inputs(r)))


def test_offloaded_attention_leaves_the_device():
    from estimator.layout import Item

    layer = Item("dense", "dense", index=1)
    plain, swapped = _pricer(BASE), _pricer(BASE.replace(offload_activations=("self_attention",)))
    assert plain.activation(layer) - swapped.activation(layer) == pytest.approx(S * ATTENTION)
    assert swapped.offloaded(layer) == pytest.approx(S * ATTENTION)
    cost = swapped.cost(layer)
    assert cost.gw - plain.cost(layer).gw == pytest.approx(2 * S * ATTENTION)  # own + next prefetch
    assert cost.act_none == plain.cost(layer).act_none  # produced all the same (elementwise time, recompute)


def test_host_keeps_every_in_flight_micro_batch():
    st = BASE.replace(offload_activations=("self_attention",), swap_optimizer=True)
    got = estimate(LLAMA3_70B, st, A2, MINDSPEED)
    stage0 = got.host.stages[0]
    # stage 0 of 2 holds 2 micro-batches in flight (1F1B), 4 layers each
    assert stage0.activations == pytest.approx(2 * 4 * S * ATTENTION)
    assert stage0.optimizer_states == pytest.approx(sum(
        float(row.static.optimizer_states) for row in _stage_rows(st, 0)))
    assert got.host.per_node == pytest.approx(8 * got.host.per_device)
    assert got.host.ram_per_node == A2.host_ram_per_node and got.host.fits
    assert got.stages[0].bytes_by_category["optimizer_states"] == 0
    assert got.to_dict()["host_memory"]["per_node"] == pytest.approx(got.host.per_node)


def _stage_rows(st: Strategy, i: int):
    from estimator.stage import stage_rows

    return stage_rows(_pricer(st), i)


def test_host_ram_is_checked_per_node():
    small = A2.replace(host_ram_per_node=64 * 2**30)
    st = BASE.replace(offload_activations=("layer",), swap_optimizer=True)
    got = estimate(LLAMA3_70B, st, small, MINDSPEED)
    assert got.host.fits is False
    assert any(w.code == "W-HOST-RAM" for w in got.warnings)


def test_offloaded_optimizer_step_moves_gradients_and_weights_over_the_host_link():
    st = Strategy(seq_length=4096, dp=8, sharding=ShardingSpec(mode="zero1"), offload_optimizer=True)
    model = LLAMA3_70B.replace(num_layers=2)
    options = RunOptions(framework="megatron")
    got = estimate(model, st, H100, options)
    assert got.stages[0].bytes_by_category["optimizer_states"] == 0
    time = estimate_step_time(model, st, H100, options).stages[0]
    on_device = estimate_step_time(model, st.replace(offload_optimizer=False), H100, options).stages[0]
    assert time.optimizer == pytest.approx((on_device.optimizer * H100.hbm_bandwidth * H100.eff_hbm / 2 -
                                            got.host.stages[0].optimizer_states) / H100.host_link_bandwidth)
    assert any("CPU compute" in w.text for w in got.warnings)


def test_fsdp2_cpu_offload_keeps_shards_on_the_host():
    model = LLAMA3_70B.replace(num_layers=2)
    options = RunOptions(framework="torchtitan", overlap_fsdp=0.0)
    st = Strategy(seq_length=4096, dp=8, sharding=ShardingSpec(mode="fsdp"), offload_params=True,
                  offload_optimizer=True)
    got = estimate(model, st, H100, options)
    cats = got.stages[0].bytes_by_category
    assert cats["parameters"] == cats["optimizer_states"] == cats["gradients"] == 0
    host = got.host.stages[0]
    plain = estimate(model, st.replace(offload_params=False, offload_optimizer=False), H100, options)
    assert host.parameters == pytest.approx(plain.stages[0].bytes_by_category["parameters"])
    assert host.optimizer_states == pytest.approx(plain.stages[0].bytes_by_category["optimizer_states"])
    # each micro-batch: the shards in before the forward gather and the backward re-gather, the gradients out
    times = estimate_step_time(model, st, H100, options).stages[0]
    expected = (2 * host.parameters + host.gradients) / H100.host_link_bandwidth
    assert times.comm["host"] == pytest.approx(expected)


def test_slow_host_links_expose_the_copies():
    st = BASE.replace(offload_activations=("layer",))
    slow = A2.replace(host_link_bandwidth=2e9)
    fast = estimate_step_time(LLAMA3_70B, st, A2, MINDSPEED).stages[1].comm["host"]
    exposed = estimate_step_time(LLAMA3_70B, st, slow, MINDSPEED).stages[1].comm["host"]
    assert exposed > fast
    # stage 1: 4 layers; the forward copy minus the layer's forward, the backward copy minus its backward
    pricer = _pricer(st, slow)
    from estimator.layout import Item
    from estimator.rowtime import TimeContext, row_time
    from estimator.stage import Row

    item = Item("dense", "dense", index=5)
    row = Row(item, 0, pricer.cost(item))
    rt = row_time(TimeContext(pricer), row)
    copy = pricer.offloaded(item) / slow.host_link_bandwidth
    assert rt.comm["host"][0] == pytest.approx(max(0.0, copy - rt.F))
    assert exposed == pytest.approx(4 * (max(0.0, copy - rt.F) + max(0.0, copy - rt.B - rt.W)))


FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_mindformers_swap_config_is_read(tmp_path):
    text = (FIXTURES / "mindformers" / "lora_llama.yaml").read_text().replace(
        "    pet_config:", "    pet_config_unused:").replace("pet_type: lora", "pet_type: none")
    text += "swap_config:\n  swap: True\n  op_swap:\n    - op_name: 'attention'\n      backward_prefetch: 1\n" \
            "      layers: True\n"
    path = tmp_path / "swap.yaml"
    path.write_text(text)
    st = parse([path]).strategy
    assert st.offload_activations == ("self_attention",)
    default = tmp_path / "default.yaml"
    default.write_text(text.split("swap_config:")[0] + "swap_config:\n  swap: True\n")
    assert parse([default]).strategy.offload_activations == ("self_attention",)  # flash attention, every layer


def test_torchtitan_cpu_offload_is_read(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text('[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 1\nseq_len = 4096\n'
                    "enable_cpu_offload = true\n[parallelism]\ndata_parallel_shard_degree = -1\n")
    st = parse([path], devices=8).strategy
    assert st.offload_params and st.offload_optimizer


def _script(tmp_path: Path, name: str, flags: str = "") -> Path:
    path = tmp_path / name
    text = (FIXTURES / "mindspeed" / name).read_text()
    path.write_text(text.replace("    --micro-batch-size", f"    {flags}--micro-batch-size") if flags else text)
    return path


def test_mindspeed_swap_attention_is_written_back(tmp_path):
    from estimator.errors import ConfigError
    from estimator.export import export
    from estimator.parsed import apply_changes

    path = _script(tmp_path, "selective_dense.sh", "--swap-attention \\\n    ")
    parsed = parse([path])
    assert parsed.strategy.offload_activations == ("input_norm", "self_attention", "post_attention_norm")
    edited = apply_changes(parsed, {"strategy.offload_activations": ("self_attention",)})
    new = export(edited)[str(path)]
    assert "    --swap-attention \\\n    --swap-modules self_attention \\\n" in new
    path.write_text(new)
    assert parse([path]).strategy == edited.strategy
    off = export(apply_changes(parse([path]), {"strategy.offload_activations": ()}))[str(path)]
    assert "--swap-attention" not in off and "--swap-modules" not in off
    assert "\n    --micro-batch-size" in off  # the line keeps its indentation
    with pytest.raises(ConfigError, match="MindSpeed swaps the attention block"):
        export(apply_changes(parse([path]), {"strategy.offload_activations": ("mlp",)}))


def test_megatron_cpu_offloading_is_written_back(tmp_path):
    from estimator.errors import ConfigError
    from estimator.export import export
    from estimator.parsed import apply_changes

    path = _script(tmp_path, "fp8_llama3_8b.sh")
    parsed = parse([path], framework="megatron")
    edited = apply_changes(parsed, {"strategy.offload_activations": ("layer",), "strategy.offload_counts": 4})
    new = export(edited)[str(path)]
    assert "--cpu-offloading" in new and "--cpu-offloading-num-layers 4" in new
    path.write_text(new)
    again = parse([path], framework="megatron").strategy
    assert (again.offload_activations, again.offload_counts) == (("layer",), 4)
    attention = apply_changes(parse([path], framework="megatron"),
                              {"strategy.offload_activations": ("input_norm", "self_attention"),
                               "strategy.offload_counts": None})
    text = export(attention)[str(path)]
    assert "--cpu-offloading" not in text and "--fine-grained-activation-offloading" in text
    assert "--offload-modules attn_norm qkv_linear core_attn attn_proj" in text
    path.write_text(text)
    assert parse([path], framework="megatron").strategy.offload_activations == ("input_norm", "self_attention")
    with pytest.raises(ConfigError, match="--offload-modules cannot state"):
        export(apply_changes(parse([path], framework="megatron"), {"strategy.offload_activations": ("mlp",)}))


def test_host_memory_in_the_table_and_the_reports(tmp_path):
    from estimator.estimate import estimate as price
    from estimator.report import render_table
    from estimator.reports import render_html, render_markdown

    path = _script(tmp_path, "selective_dense.sh", "--swap-attention --swap-optimizer \\\n    ")
    parsed = parse([path])
    result = price(parsed.model, parsed.strategy, A2, parsed.options)
    host = result.host
    gib = 2 ** 30
    line = (f"{host.per_device / gib:,.2f} GiB per device × 8 devices = {host.per_node / gib:,.2f} GiB per node of "
            f"{A2.host_ram_per_node / gib:,.0f} GiB RAM: fits")
    assert f"host memory (offload and swap): {line}" in render_table(parsed, result)
    assert line in render_markdown(parsed, result, None) and line in render_html(parsed, result)
    plain = price(parsed.model, parsed.strategy.replace(offload_activations=(), swap_optimizer=False), A2,
                  parsed.options)
    assert "host memory" not in render_table(parsed, plain) and "host_memory" not in plain.to_dict()


MOE_FLAGS = "".join(f"{flag} \\\n    " for flag in (
    "--sequence-parallel", "--num-experts 8", "--moe-router-topk 2", "--moe-intermediate-size 1024",
    "--expert-model-parallel-size 2", "--moe-token-dispatcher-type alltoall"))


def test_moe_zero_memory_frees_the_dispatched_input_and_the_activation_output(tmp_path):
    """MindSpeed --moe-zero-memory level0 (its source: ``dispached_input.untyped_storage().resize_(0)``, the grouped
    MLP's ``intermediate_parallel`` freed by ``is_recompute_activation``): a MoE layer keeps R·(β_c·h + β_c·f_e·n/etp)
    bytes less (n = 1 with MindSpeed's fused SwiGLU, 2 unfused), holds them again in its backward (Gw), and its
    backward re-dispatches the tokens (one more all-to-all) and reruns the activation function."""
    from estimator import comm as C
    from estimator.layout import Item
    from estimator.rowtime import TimeContext, row_time
    from estimator.stage import Row

    path = _script(tmp_path, "selective_dense.sh", MOE_FLAGS + "--moe-zero-memory level0 \\\n    ")
    parsed = parse([path])
    assert parsed.strategy.moe_zero_memory == "level0"
    assert parsed.provenance["strategy.moe_zero_memory"].key.startswith("--moe-zero-memory")
    plain_st = parsed.strategy.replace(moe_zero_memory="disable")
    pricers = {}
    for name, st in (("zero", parsed.strategy), ("plain", plain_st)):
        r = resolve(parsed.model, st, A2, parsed.options)
        pricers[name] = StagePricer(r, build_layout(layout_inputs(r)))
    item = Item("moe", "moe", index=1)
    zero, plain = pricers["zero"], pricers["plain"]
    d, w, par = zero.r.dims, zero.r.widths, zero.r.par
    n_act = 1 if zero.r.flags.fused_act_experts or d.g == 1 else 2
    freed = zero.R * (w.c * d.h + w.c * d.hff_exp * n_act / par.etp)
    assert plain.cost(item).act - zero.cost(item).act == pytest.approx(freed)
    assert zero.cost(item).rebuilt == pytest.approx(freed)
    assert zero.cost(item).gw - plain.cost(item).gw == pytest.approx(freed)
    assert zero.cost(item).act_none == pytest.approx(plain.cost(item).act_none)  # produced all the same
    t_zero = row_time(TimeContext(zero), Row(item, 0, zero.cost(item)))
    t_plain = row_time(TimeContext(plain), Row(item, 0, plain.cost(item)))
    ctx = TimeContext(zero)
    redispatch = (1 - ctx.k.o_ep) * (C.all_to_all(ctx.M_r, ctx.ep) + C.all_gather(ctx.M_r, ctx.etp))
    assert t_zero.comm["ep"][1] - t_plain.comm["ep"][1] == pytest.approx(redispatch)
    assert pytest.approx(ctx.k.k_ew_fwd * freed / ctx.rate_hbm) == t_zero.B - t_plain.B
    assert pytest.approx(t_plain.F) == t_zero.F
    whole = estimate(parsed.model, parsed.strategy, A2, parsed.options)
    assert whole.stages[0].bytes_by_category["activations"] < \
        estimate(parsed.model, plain_st, A2, parsed.options).stages[0].bytes_by_category["activations"]


def test_moe_zero_memory_level1_layers_are_read_and_written_back(tmp_path):
    from estimator.errors import ConfigError
    from estimator.export import export
    from estimator.parsed import apply_changes

    path = _script(tmp_path, "selective_dense.sh", MOE_FLAGS + "--moe-zero-memory level1 \\\n    "
                   "--moe-zero-memory-num-layers 2 \\\n    ")
    parsed = parse([path])
    assert (parsed.strategy.moe_zero_memory, parsed.strategy.moe_zero_memory_layers) == ("level1", 2)
    assert parsed.provenance["strategy.moe_zero_memory_layers"].key.startswith("--moe-zero-memory-num-layers")
    assert not any(w.code == "W-UNMODELLED" and "zero" in w.text for w in parsed.warnings)
    three = export(apply_changes(parsed, {"strategy.moe_zero_memory_layers": 3}))[str(path)]
    assert "--moe-zero-memory-num-layers 3" in three and "--moe-zero-memory-num-layers 2" not in three
    new = export(apply_changes(parsed, {"strategy.moe_zero_memory": "level0"}))[str(path)]
    assert "--moe-zero-memory level0" in new and "--moe-zero-memory-num-layers 2" in new  # MindSpeed ignores it
    ignored = tmp_path / "ignored.sh"
    ignored.write_text(new)
    assert any(w.code == "W-MOE-ZERO-LAYERS" for w in parse([ignored]).warnings)
    with pytest.raises(ConfigError, match="moe_zero_memory_layers"):  # MindSpeed asserts a count needs the feature
        export(apply_changes(parsed, {"strategy.moe_zero_memory": "disable"}))
    off = export(apply_changes(parsed, {"strategy.moe_zero_memory": "disable",
                                        "strategy.moe_zero_memory_layers": None}))[str(path)]
    assert "--moe-zero-memory" not in off
    bad = tmp_path / "bad.sh"
    bad.write_text(new.replace("--moe-zero-memory level0", "--moe-zero-memory level2"))
    with pytest.raises(ConfigError, match="level2"):
        parse([bad])
    megatron = _script(tmp_path, "fp8_llama3_8b.sh")
    with pytest.raises(ConfigError, match="MindSpeed setting"):
        export(apply_changes(parse([megatron], framework="megatron"), {"strategy.moe_zero_memory": "level0"}))


def test_moe_zero_memory_level1_also_frees_the_fc1_outputs(tmp_path):
    """level1 (MindSpeed's grouped MLP: ``mm1_out.untyped_storage().resize_(0)``; the shared experts' fc1 and
    activation outputs freed and recomputed by moe_layer_overlap_all2all) frees, beyond level0, the routed
    experts' fc1 output R·β_c·g·f_e/etp and the shared experts' T·β_c·f_s·(g + n)/t (gate/up outputs, the
    activation's output n = 1 fused, 2 unfused), and its backward reruns both fc1 matmuls:
    2·R·g·h·f_e/etp + 2·T·g·h·f_s/t more recomputed FLOPs."""
    from estimator.layout import Item
    from estimator.rowtime import TimeContext, row_time
    from estimator.stage import Row

    path = _script(tmp_path, "selective_dense.sh", MOE_FLAGS + "--swiglu \\\n    "
                   "--moe-shared-expert-intermediate-size 2048 \\\n    --moe-zero-memory level1 \\\n    ")
    parsed = parse([path])
    pricers = {}
    for level in ("level0", "level1"):
        r = resolve(parsed.model, parsed.strategy.replace(moe_zero_memory=level), A2, parsed.options)
        pricers[level] = StagePricer(r, build_layout(layout_inputs(r)))
    item = Item("moe", "moe", index=1)
    zero, one = pricers["level0"], pricers["level1"]
    d, w, par, f = one.r.dims, one.r.widths, one.r.par, one.r.flags
    assert d.hff_sh == 2048 and d.g == 2
    n_shared = 1 if f.fused_act else 2
    extra = one.R * w.c * d.g * d.hff_exp / par.etp + one.T * w.c * d.hff_sh * (d.g + n_shared) / par.t
    assert zero.cost(item).act - one.cost(item).act == pytest.approx(extra)
    assert one.cost(item).rebuilt - zero.cost(item).rebuilt == pytest.approx(extra)
    t0 = row_time(TimeContext(zero), Row(item, 0, zero.cost(item)))
    t1 = row_time(TimeContext(one), Row(item, 0, one.cost(item)))
    fc1 = 2 * one.R * d.g * d.h * d.hff_exp / par.etp + 2 * one.T * d.g * d.h * d.hff_sh / par.t
    assert t1.flops.rc - t0.flops.rc == pytest.approx(fc1)
    assert t1.Rc > t0.Rc


def test_moe_zero_memory_num_layers_picks_level1_layers_by_priority():
    """MindSpeed's ``only_recompute_activation``: layer k of chunk j has priority k·vp + j; below
    --moe-zero-memory-num-layers it runs level1, the others level0."""
    from estimator.layer_states import zero_level

    assert [zero_level(k, 0, 1, 2) for k in range(4)] == ["level1", "level1", "level0", "level0"]
    # vpp 2, 3 level1 layers: chunk 0 layers 0 and 1 (priorities 0, 2), chunk 1 layer 0 (priority 1)
    assert [zero_level(k, 0, 2, 3) for k in range(3)] == ["level1", "level1", "level0"]
    assert [zero_level(k, 1, 2, 3) for k in range(3)] == ["level1", "level0", "level0"]
    assert zero_level(0, 0, 1, None) is None
    moe = LLAMA3_70B.replace(num_experts=8, experts_per_token=2, moe_ffn_hidden_size=1024)
    st = BASE.replace(moe_zero_memory="level1", moe_zero_memory_layers=1, ep=2)
    r = resolve(moe, st, A2, MINDSPEED)
    layout = build_layout(layout_inputs(r))
    levels = [[it.zero for it in slot.items if it.index >= 0] for slot in layout.slots]
    assert levels == [["level1", "level0", "level0", "level0"]] * 2
    pricer = StagePricer(r, layout)
    first, second = (it for it in layout.slots[0].items if it.index in (0, 1))
    assert pricer.cost(first).act < pricer.cost(second).act  # level1 frees more


def test_offload_counts_offload_the_first_layers_of_each_stage():
    """strategy.offload_counts n (Megatron --cpu-offloading-num-layers: the first n layers of the model chunk):
    on each stage of 4 layers only the first offloads its attention activations; the host keeps that layer's for
    each micro-batch in flight (2 on stage 0 of 2 under 1F1B) instead of all four layers'."""
    st = BASE.replace(offload_activations=("self_attention",), offload_counts=1)
    r = resolve(LLAMA3_70B, st, A2, MINDSPEED)
    layout = build_layout(layout_inputs(r))
    assert [[it.offload for it in slot.items if it.index >= 0] for slot in layout.slots] == \
        [[True, False, False, False]] * 2
    got = estimate(LLAMA3_70B, st, A2, MINDSPEED)
    every = estimate(LLAMA3_70B, st.replace(offload_counts=None), A2, MINDSPEED)
    assert got.host.stages[0].activations == pytest.approx(2 * 1 * S * ATTENTION)
    assert every.host.stages[0].activations == pytest.approx(2 * 4 * S * ATTENTION)
    assert not any("offload" in w.text and w.code == "W-UNMODELLED" for w in got.warnings)
    per_stage = estimate(LLAMA3_70B, st.replace(offload_counts=(2, 0)), A2, MINDSPEED)
    assert per_stage.host.stages[0].activations == pytest.approx(2 * 2 * S * ATTENTION)
    assert per_stage.host.stages[1].activations == 0
    none = estimate(LLAMA3_70B, st.replace(offload_counts=False), A2, MINDSPEED)
    assert none.host.stages[0].activations == 0


def test_torchtitan_cpu_offload_is_written_back(tmp_path):
    from estimator.errors import ConfigError
    from estimator.export import export
    from estimator.parsed import apply_changes

    path = tmp_path / "job.toml"
    path.write_text('[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 1\nseq_len = 4096\n'
                    "[parallelism]\ndata_parallel_shard_degree = -1\n")
    parsed = parse([path], devices=8)
    on = apply_changes(parsed, {"strategy.offload_params": True, "strategy.offload_optimizer": True})
    text = export(on)[str(path)]
    assert "enable_cpu_offload = true" in text
    path.write_text(text)
    again = parse([path], devices=8).strategy
    assert again.offload_params and again.offload_optimizer
    off = export(apply_changes(parse([path], devices=8), {"strategy.offload_params": False,
                                                          "strategy.offload_optimizer": False}))[str(path)]
    assert "enable_cpu_offload = false" in off
    with pytest.raises(ConfigError, match="together"):
        export(apply_changes(parsed, {"strategy.offload_optimizer": True}))


def test_mindformers_swap_config_is_written_back(tmp_path):
    from estimator.errors import ConfigError
    from estimator.export import export
    from estimator.parsed import apply_changes

    base = (FIXTURES / "mindformers" / "lora_llama.yaml").read_text().replace(
        "    pet_config:", "    pet_config_unused:").replace("pet_type: lora", "pet_type: none")
    path = tmp_path / "plain.yaml"
    path.write_text(base)
    on = export(apply_changes(parse([path]), {"strategy.offload_activations": ("self_attention",)}))[str(path)]
    assert "swap_config:\n  swap: True" in on
    path.write_text(on)
    assert parse([path]).strategy.offload_activations == ("self_attention",)
    with pytest.raises(ConfigError, match="add the lists by hand"):
        export(apply_changes(parse([path]), {"strategy.offload_activations": ("mlp",)}))
    listed = tmp_path / "listed.yaml"
    listed.write_text(base + "swap_config:\n  swap: True\n  op_swap:\n    - op_name: 'feed_forward'\n"
                      "      backward_prefetch: 1\n      layers: True\n")
    parsed = parse([listed])
    assert parsed.strategy.offload_activations == ("mlp",)
    off = export(apply_changes(parsed, {"strategy.offload_activations": ()}))[str(listed)]
    assert "swap: False" in off and "op_name: 'feed_forward'" in off  # the list stays as written
    listed.write_text(off)
    assert parse([listed]).strategy.offload_activations == ()
    with pytest.raises(ConfigError, match="edited by hand"):
        export(apply_changes(parsed, {"strategy.offload_activations": ("self_attention",)}))


def test_host_memory_explain(tmp_path, capsys):
    from estimator.cli import main
    from estimator.host import host_explain

    path = _script(tmp_path, "selective_dense.sh", "--swap-attention --swap-optimizer \\\n    ")
    parsed = parse([path])
    host = estimate(parsed.model, parsed.strategy, A2, parsed.options).host
    tree = host_explain(host)
    assert tree.formula_id == "H-NODE" and tree.value == pytest.approx(8 * tree.children[0].value)
    device = tree.children[0]
    assert device.value == pytest.approx(sum(c.value for c in device.children))
    assert {c.label for c in device.children} == {"activations", "optimizer states"}
    from estimator.units import fmt_bytes  # the substituted formula shows sizes, not raw byte counts

    assert tree.substituted() == (f"8 · max over stages of {fmt_bytes(device.value)} (against "
                                  f"{fmt_bytes(A2.host_ram_per_node)})")
    assert main(["estimate", str(path), "--device", "A2", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "host memory per node" in out and "[H-NODE]" in out and "[A-OFFLOAD]" in out


def test_the_balancer_prices_the_offloaded_layers_as_estimate_does(tmp_path):
    """The balancer's stage tables give each candidate slot's first n layers the offload (``layer_saving``): for
    the plan's own layout they price what estimate() prices, and fewer offloaded layers keep more on the device."""
    from estimator.balance.tables import StageTables

    path = _script(tmp_path, "fp8_llama3_8b.sh", "--cpu-offloading \\\n    --cpu-offloading-num-layers 4 \\\n    ")
    parsed = parse([path], framework="megatron")
    assert (parsed.strategy.offload_activations, parsed.strategy.offload_counts) == (("layer",), 4)
    tables = StageTables(parsed, ("full",))
    assign = next(iter(tables.assignments(32)))  # no recompute
    entries = tables.entries(0, 0, 32, assign)
    assert [e.item.offload for e in entries if e.item.index >= 0] == [True] * 4 + [False] * 28
    (_time,), (total,), (_opt,) = tables.price(0, [entries])
    got = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert total == pytest.approx(got.stages[0].total, rel=1e-12)
    every = estimate(parsed.model, parsed.strategy.replace(offload_counts=None), parsed.hardware, parsed.options)
    assert every.stages[0].bytes_by_category["activations"] < got.stages[0].bytes_by_category["activations"]


def test_mla_zero_memory_frees_the_attention_between_its_input_and_linear_proj():
    """MindSpeed-LLM --mla-zero-memory (tasks/models/transformer/multi_latent_attention.py): the MLA attention runs
    under CheckpointWithoutOutput from its input and its output (linear_proj's input) is discarded after
    linear_proj. A small DeepSeek-like layer, tp 2 with SP, s 4096, b 1 (T 4096), bf16, flash attention: freed per
    token q, k, v (β·a·dqk, β·a·dqk, β·a·dv), flash statistics 4·a and the attention output β·a·dv over t, the
    latents (w_n + β)·(dc_q + dc_kv) over sp_div, the shared rope key β·dhr; the backward reruns the projections
    and the core: 2·T·(h·dc_q + dc_q·a·dqk + h·(dc_kv + dhr) + dc_kv·a·(dh + dv))/t-or-not plus the core FLOPs."""
    from estimator.flops import attention_core_flops
    from estimator.layout import Item
    from estimator.rowtime import TimeContext, row_time
    from estimator.stage import Row

    mla = ModelSpec(name="mla", family="deepseek", hidden_size=2048, num_layers=4, num_attention_heads=16,
                    head_dim=192, v_head_dim=128, ffn_hidden_size=5632, vocab_size=32000, q_lora_rank=512,
                    kv_lora_rank=256, qk_rope_head_dim=64)
    st = Strategy(seq_length=4096, tp=2, sequence_parallel=True)
    pricers = {}
    for on in (False, True):
        r = resolve(mla, st.replace(mla_zero_memory=on), A2, MINDSPEED)
        pricers[on] = StagePricer(r, build_layout(layout_inputs(r)))
    plain, zero = pricers[False], pricers[True]
    item = Item("dense", "dense", index=1)
    d, w, par = zero.r.dims, zero.r.widths, zero.r.par
    assert (d.dc_q, d.dc_kv, d.dhr, d.a) == (512, 256, 64, 16)
    T = zero.T
    tp = w.c * (d.a * d.dqk + d.a * d.dqk + d.a * d.dv) + 4 * d.a + w.c * d.a * d.dv
    freed = T * tp / par.t + T * (w.n + w.c) * (d.dc_q + d.dc_kv) / par.sp_div + T * w.c * d.dhr
    assert plain.cost(item).act - zero.cost(item).act == pytest.approx(freed)
    assert zero.cost(item).rebuilt == pytest.approx(freed)
    assert zero.cost(item).act_none == pytest.approx(plain.cost(item).act_none)
    t_on = row_time(TimeContext(zero), Row(item, 0, zero.cost(item)))
    t_off = row_time(TimeContext(plain), Row(item, 0, plain.cost(item)))
    mm = 2 * T * ((d.dc_q * d.a * d.dqk + d.dc_kv * d.a * (d.dh + d.dv)) / par.t + d.h * d.dc_q +
                  d.h * (d.dc_kv + d.dhr))
    core = attention_core_flops(T, d.a, TimeContext(zero).fc.kappa, par.s, d.dqk, d.dv, par.t)
    assert t_on.flops.rc - t_off.flops.rc == pytest.approx(mm + core)
    assert t_on.flops.rc_attn - t_off.flops.rc_attn == pytest.approx(core)
    assert "ep" not in t_on.comm or t_on.comm["ep"] == t_off.comm.get("ep")  # no MoE re-dispatch


def test_mla_zero_memory_is_read_and_written_back(tmp_path):
    from estimator.errors import ConfigError
    from estimator.export import export
    from estimator.parsed import apply_changes

    path = _script(tmp_path, "selective_dense.sh", "--mla-zero-memory \\\n    ")
    parsed = parse([path])
    assert parsed.strategy.mla_zero_memory is True
    assert parsed.provenance["strategy.mla_zero_memory"].key.startswith("--mla-zero-memory")
    assert not any("mla-zero-memory" in w.text for w in parsed.warnings)
    off = export(apply_changes(parsed, {"strategy.mla_zero_memory": False}))[str(path)]
    assert "--mla-zero-memory" not in off
    path.write_text(off)
    on = export(apply_changes(parse([path]), {"strategy.mla_zero_memory": True}))[str(path)]
    assert "--mla-zero-memory" in on
    megatron = _script(tmp_path, "fp8_llama3_8b.sh")
    with pytest.raises(ConfigError, match="MindSpeed setting"):
        export(apply_changes(parse([megatron], framework="megatron"), {"strategy.mla_zero_memory": True}))
