"""DeepSpeed JSON configs with a model named beside them, and LLaMA-Factory training YAMLs (issue 13): ZeRO stages,
offload, the ZeRO buckets and ZeRO-3 prefetch limits priced (C-BUF.zero), the Trainer's "auto" values, LoRA / QLoRA,
MCoreAdapter (Megatron) runs, writing back, fuzzing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from format_helpers import mutate, read_estimate_export, roundtrip
from fuzzing import fuzz_settings
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from estimator.errors import ConfigError
from estimator.estimate import estimate
from estimator.export import export
from estimator.formats import parse
from estimator.parsed import apply_changes
from estimator.zero_buffers import OVERLAP_FACTOR

ROOT = Path(__file__).resolve().parents[1]
DS = ROOT / "tests" / "fixtures" / "deepspeed"
LF = ROOT / "tests" / "fixtures" / "llamafactory"
LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # from the shipped catalogue (conftest hides any local cache)
SEQ = {"strategy.seq_length": 4096}
GiB = 2 ** 30


def open_ds(path: Path | str, devices: int = 16, **changes) -> object:
    return parse([str(path)], devices=devices, model=LLAMA, overrides={**SEQ, **changes})


def buffers(parsed) -> float:
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    return result.stages[0].bytes_by_category["communication_buffers"]


def assumed(parsed, field: str) -> str:
    return " ".join(a.source for a in parsed.assumptions if a.field == field)


def warning_texts(parsed, code: str) -> list[str]:
    return [w.text for w in parsed.warnings if w.code == code]


# ------------------------------------------------------------------------------------------ DeepSpeed
def test_zero3_settings_are_read_with_their_keys():
    parsed = open_ds(DS / "zero3_tuned.json")
    s = parsed.strategy
    assert parsed.options.framework == "hf_trainer"
    assert (s.sharding.mode, s.dp, s.micro_batch_size, s.micro_batches) == ("zero3", 16, 2, 4)
    assert (s.reduce_bucket, s.prefetch_bucket, s.max_live_params, s.overlap_comm) == (500_000_000, 500_000_000,
                                                                                       1_000_000_000, True)
    assert (s.param_bytes, s.compute_bytes, s.grad_bytes, s.master_bytes) == (2, 2, 2, 4)
    assert parsed.provenance["strategy.prefetch_bucket"].key == "zero_optimization.stage3_prefetch_bucket_size"



# D-DS-UNREAD: keys the catalogue knew but the reader did not read, said naming the key and the direction
@pytest.mark.parametrize("section, key, value, said", [
    ("zero_optimization", "stage3_param_persistence_threshold", 1e7, "device memory a lower bound"),
    ("zero_optimization", "zero_hpz_partition_size", 8, "device memory a lower bound"),
    ("zero_optimization", "zero_quantized_gradients", True, "step time an upper bound"),
    ("zero_optimization", "mics_shard_size", 8, "device memory a lower bound"),
    ("zero_optimization.offload_optimizer", "ratio", 0.3, "host memory an upper bound"),
    ("fp16", "fp16_master_weights_and_grads", True, "memory an upper bound"),
    ("data_types", "grad_accum_dtype", "fp32", "device memory a lower bound"),
    ("", "communication_data_type", "fp32", "step time a lower bound"),
    ("tensor_parallel", "tp_size", 2, "autotp_size"),
])
def test_known_but_unpriced_keys_are_said(tmp_path, section, key, value, said):
    data = json.loads((DS / "zero3_tuned.json").read_text(encoding="utf-8"))
    data["zero_optimization"]["stage3_param_persistence_threshold"] = 1e5  # DeepSpeed's default
    path = tmp_path / "ds.json"
    where = f"{section}.{key}" if section else key

    def said_here() -> list[str]:
        path.write_text(json.dumps(data), encoding="utf-8")
        return [t for t in warning_texts(open_ds(path), "W-NOT-PRICED") if t.startswith(where)]

    assert not said_here()
    node = data
    for part in section.split(".") if section else ():
        node = node.setdefault(part, {})
    node[key] = value
    texts = said_here()
    assert len(texts) == 1 and said in texts[0]


def test_old_cpu_offload_spelling_offloads_the_optimizer(tmp_path):
    data = json.loads((DS / "zero3_tuned.json").read_text(encoding="utf-8"))
    data["zero_optimization"].pop("offload_optimizer", None)
    data["zero_optimization"]["cpu_offload"] = True
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    parsed = open_ds(path)
    assert parsed.strategy.offload_optimizer is True
    assert parsed.provenance["strategy.offload_optimizer"].key == "zero_optimization.cpu_offload"
    data["zero_optimization"]["cpu_offload"] = False
    path.write_text(json.dumps(data), encoding="utf-8")
    assert not open_ds(path).strategy.offload_optimizer

def test_zero3_gathered_window_and_reduce_bucket_are_priced():
    """The largest row is the untied output head (128256 × 4096 elements): gathered window = min(head + prefetch,
    max(head, max_live)) at 2 bytes, plus the reduce bucket at 2 bytes."""
    head = 128256 * 4096 + 4096  # with the final norm
    tuned = open_ds(DS / "zero3_tuned.json")
    assert buffers(tuned) == pytest.approx(2 * min(head + 5e8, max(head, 1e9)) + 2 * 5e8)
    # the knobs users turn when ZeRO-3 runs out of memory lower the price
    small = open_ds(DS / "zero3_tuned.json", **{"strategy.prefetch_bucket": 10_000_000,
                                                "strategy.max_live_params": 0, "strategy.reduce_bucket": 10_000_000})
    assert buffers(small) == pytest.approx(2 * head + 2 * 1e7)
    assert buffers(small) < buffers(tuned) - 1.5 * GiB


def test_zero2_buckets_grow_4_5_times_with_overlap_comm_and_auto_sizes_follow_the_hidden_size():
    parsed = open_ds(DS / "zero2_auto.json")
    s = parsed.strategy
    assert s.reduce_bucket is None and s.allgather_bucket == 200_000_000 and s.overlap_comm is True
    result = estimate(parsed.model, s, parsed.hardware, parsed.options)
    assert "h² = 4096²" in " ".join(a.source for a in result.assumptions if a.field == "strategy.reduce_bucket")
    expected = OVERLAP_FACTOR * (2 * 4096 ** 2 + 2 * 2e8)
    assert result.stages[0].bytes_by_category["communication_buffers"] == pytest.approx(expected)
    off = open_ds(DS / "zero2_auto.json", **{"strategy.overlap_comm": False})
    assert buffers(off) == pytest.approx(expected / OVERLAP_FACTOR)


def test_auto_values_are_the_trainers_defaults_said_out_loud():
    parsed = open_ds(DS / "zero2_auto.json")
    s = parsed.strategy
    assert (s.micro_batch_size, s.micro_batches) == (8, 1)
    assert "the Trainer's default per_device_train_batch_size 8" in assumed(parsed, "strategy.micro_batch_size")
    assert "set train_micro_batch_size_per_gpu" in assumed(parsed, "strategy.micro_batch_size")
    assert "priced as bf16" in assumed(parsed, "strategy.param_bytes")
    assert s.offload_optimizer is True and s.offload_params is False  # offload_optimizer.device cpu, stage 2


def test_a_lone_deepspeed_file_prices_the_trainers_activation_defaults_and_says_them():
    """"auto" micro-batch with no fine-tuning config: 8 sequences × 4096 tokens per device, no gradient
    checkpointing, sdpa attention: each a stated assumption that names its fix, and the body layer's activations
    hand-derived for Llama-3.1-8B (h 4096, 32 heads of 128, 8 KV heads, SwiGLU f 14336, bf16)."""
    parsed = open_ds(DS / "zero2_auto.json", devices=8)
    assert parsed.strategy.recompute.default_mode == "none" and parsed.strategy.flash_attention is True
    assert "gradient_checkpointing=False" in assumed(parsed, "strategy.recompute")
    assert "--set strategy.recompute=full" in assumed(parsed, "strategy.recompute")
    assert "'sdpa'" in assumed(parsed, "strategy.flash_attention")
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    layer = next(row for row in result.stages[0].layers if row.kind == "dense")
    h, f, heads = 4096, 14336, 32
    tokens = 8 * 4096
    # transformers' eager LlamaRMSNorm keeps its input's fp32 upcast (4·h; not the bf16 input), the normalised
    # bf16 copy its weight's gradient reads (2·h), the output the projections read (2·h) and a fp32 rsqrt (4)
    per_token = (2 * (4 * h + 2 * h + 2 * h + 4)
                 + 2 * h * 3              # q, and k, v repeated to 32 heads (sdpa is given repeat_kv's copies)
                 + 4 * heads              # the fused kernel's fp32 log-sum-exp per head
                 + 2 * h                  # attention output (o_proj's input)
                 + 4 * 2 * f)             # SwiGLU: gate, up, silu(gate), silu(gate)·up (down_proj's input)
    assert per_token == 213_128  # 52.0·h
    assert layer.bytes[3] == pytest.approx(tokens * per_token)  # 6.50 GiB a layer, 208 GiB for 32
    fixed = open_ds(DS / "zero2_auto.json", devices=8, **{"strategy.recompute": "full"})  # the fix it names
    assert fixed.strategy.recompute.default_mode == "full"


def test_a_deepspeed_config_needs_the_device_count_and_a_model(tmp_path):
    with pytest.raises(ConfigError, match="--devices"):
        parse([str(DS / "zero3_tuned.json")], model=LLAMA, overrides=SEQ)
    with pytest.raises(ConfigError, match="seq_length"):
        parse([str(DS / "zero3_tuned.json")], devices=8, model=LLAMA)
    bad = tmp_path / "ds.json"
    bad.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
                               "train_batch_size": 7, "bf16": {"enabled": True}}))
    with pytest.raises(ConfigError, match="train_batch_size 7 is not micro-batch 2"):
        open_ds(bad, devices=8)


def test_unknown_and_misspelt_deepspeed_keys_are_named(tmp_path):
    data = json.loads((DS / "zero3_tuned.json").read_text())
    data["zero_optimization"]["stage3_prefetch_bucket_sise"] = 1
    target = tmp_path / "ds.json"
    target.write_text(json.dumps(data))
    unknown = warning_texts(open_ds(target), "W-KEY-UNKNOWN")
    assert unknown and "stage3_prefetch_bucket_size" in unknown[0]


def test_deepspeed_export_edits_values_in_place(tmp_path):
    target = tmp_path / "ds.json"
    shutil.copy(DS / "zero3_tuned.json", target)
    _, changed = roundtrip([str(target)], {"strategy.prefetch_bucket": 50_000_000,
                                               "strategy.max_live_params": 300_000_000,
                                               "strategy.micro_batch_size": 1, "strategy.micro_batches": 8},
                               devices=16, model=LLAMA, overrides=SEQ)
    assert sorted(changed) == sorted([
        '-    "stage3_prefetch_bucket_size": 5e8,', '+    "stage3_prefetch_bucket_size": 50000000,',
        '-    "stage3_max_live_parameters": 1e9,', '+    "stage3_max_live_parameters": 300000000,',
        '-  "gradient_accumulation_steps": 4,', '+  "gradient_accumulation_steps": 8,',
        '-  "train_micro_batch_size_per_gpu": 2,', '+  "train_micro_batch_size_per_gpu": 1,'])
    _files, changed = roundtrip([str(target)], {"strategy.sharding": "zero2"}, devices=16, model=LLAMA,
                               overrides=SEQ)
    assert changed == ['-    "stage": 3,', '+    "stage": 2,']


def test_deepspeed_export_refuses_what_the_trainer_or_deepspeed_cannot_state(tmp_path):
    target = tmp_path / "ds.json"
    shutil.copy(DS / "zero2_auto.json", target)
    parsed = open_ds(target)
    with pytest.raises(ConfigError, match="\"auto\""):
        export(apply_changes(parsed, {"strategy.micro_batch_size": 2}))
    with pytest.raises(ConfigError):
        export(apply_changes(parsed, {"strategy.pp": 2}))


# ------------------------------------------------------------------------------------------ LLaMA-Factory
def test_lora_yaml_with_its_deepspeed_config_beside_it():
    parsed = parse([str(LF / "qwen3_lora_sft_ds2.yaml")], devices=16)
    s, m = parsed.strategy, parsed.model
    assert m.hidden_size == 4096 and m.num_layers == 36  # Qwen/Qwen3-8B from the catalogue
    assert (s.peft, s.lora_rank, s.lora_targets, s.lora_dropout) == ("lora", 16, ("q", "k", "v", "o"), 0.05)
    assert (s.sharding.mode, s.overlap_comm, s.reduce_bucket, s.allgather_bucket) == ("zero2", False, 500_000_000,
                                                                                      500_000_000)
    assert (s.micro_batch_size, s.micro_batches, s.seq_length, s.dp) == (2, 4, 4096, 16)
    assert parsed.provenance["strategy.micro_batch_size"].key.endswith(
        "per_device_train_batch_size")  # "auto" filled from the YAML, said where
    assert s.recompute.default_mode == "full" and "gradient checkpointing" in assumed(parsed, "strategy.recompute")
    assert parsed.provenance["strategy.sharding"].path.endswith("ds_z2_config.json")



# D-LF-UNREAD: keys the catalogue knew but the reader did not read, said naming the key and the direction
@pytest.mark.parametrize("line, key, said", [
    ("stage: dpo", "stage", "device memory and step time lower bounds"),
    ("stage: ppo", "stage", "value head"),
    ("enable_liger_kernel: true", "enable_liger_kernel", "device memory an upper bound"),
    ("use_unsloth_gc: true", "use_unsloth_gc", "device memory an upper bound"),
    ("use_galore: true", "use_galore", "optimizer memory an upper bound"),
    ("use_dora: true", "use_dora", "device memory a lower bound"),
    ("fsdp: full_shard auto_wrap", "fsdp", "device memory an upper bound"),
    ("mixture_of_depths: convert", "mixture_of_depths", "upper bounds"),
    ("optim: adamw_bnb_8bit", "optim", "optimizer memory an upper bound"),
    ("optim: rmsprop", "optim", "either way"),
])
def test_llamafactory_known_but_unpriced_keys_are_said(tmp_path, line, key, said):
    for name in ("qwen3_lora_sft_ds2.yaml", "ds_z2_config.json"):
        shutil.copy(LF / name, tmp_path / name)
    yaml_path = tmp_path / "qwen3_lora_sft_ds2.yaml"

    def said_here(text: str) -> list[str]:
        yaml_path.write_text(text, encoding="utf-8")
        return [t for t in warning_texts(parse([str(yaml_path)], devices=16), "W-NOT-PRICED")
                if t.startswith(f"{key} is")]

    text = (LF / "qwen3_lora_sft_ds2.yaml").read_text(encoding="utf-8")
    assert not said_here(text)
    texts = said_here(text.replace("stage: sft\n", "") + line + "\n")
    assert len(texts) == 1 and said in texts[0]


def test_llamafactory_optim_is_not_said_when_deepspeed_names_the_optimizer(tmp_path):
    for name in ("qwen3_lora_sft_ds2.yaml", "ds_z2_config.json"):
        shutil.copy(LF / name, tmp_path / name)
    ds = tmp_path / "ds_z2_config.json"
    ds.write_text(json.dumps({**json.loads(ds.read_text()), "optimizer": {"type": "AdamW", "params": {}}}))
    yaml_path = tmp_path / "qwen3_lora_sft_ds2.yaml"
    yaml_path.write_text(yaml_path.read_text() + "optim: adamw_bnb_8bit\n")
    assert not [t for t in warning_texts(parse([str(yaml_path)], devices=16), "W-NOT-PRICED") if "optim" in t]

def test_qlora_and_disabled_checkpointing_and_misspelt_keys(tmp_path):
    misspelt = tmp_path / "qlora.yaml"
    misspelt.write_text((LF / "qwen3_qlora_sft.yaml").read_text() + "lora_targte: q_proj\n")
    parsed = parse([str(misspelt)], devices=8)
    s = parsed.strategy
    assert (s.peft, s.lora_rank, s.qlora_double_quant) == ("qlora", 64, False)
    assert set(s.lora_targets) == {"q", "k", "v", "o", "gate", "up", "down"}
    assert s.recompute.default_mode == "none" and s.sharding.mode == "none"
    assert any("did you mean 'lora_target'" in w for w in warning_texts(parsed, "W-KEY-UNKNOWN"))
    full = parse([str(LF / "qwen3_qlora_sft.yaml")], devices=8, overrides={"strategy.peft": "lora"})
    assert estimate(full.model, full.strategy, full.hardware, full.options).stages[0].bytes_by_category[
        "parameters"] > 2 * estimate(parsed.model, s, parsed.hardware, parsed.options).stages[0].bytes_by_category[
        "parameters"]


def test_bundled_deepspeed_example_is_used_and_named():
    parsed = parse([str(LF / "llama3_full_sft_ds3_offload.yaml")], devices=16)
    s = parsed.strategy
    assert (s.sharding.mode, s.offload_optimizer, s.offload_params, s.peft) == ("zero3", True, True, "none")
    named = warning_texts(parsed, "W-DEEPSPEED")
    assert named and "LLaMA-Factory's bundled examples/deepspeed/ds_z3_offload_config.json" in named[0]
    assert any("packing" in w for w in warning_texts(parsed, "W-UNMODELLED"))
    assert parsed.strategy.seq_length == 8192 and parsed.options.kv_repeat is False  # flash_attn: fa2


def test_mcore_adapter_yaml_is_priced_as_megatron():
    parsed = parse([str(LF / "qwen3_moe_mcore_full.yaml")], devices=16)
    s = parsed.strategy
    assert parsed.options.framework == "megatron"
    assert (s.tp, s.pp, s.ep, s.dp, s.sequence_parallel, s.sharding.mode) == (2, 2, 4, 4, True, "zero1")
    assert (s.micro_batch_size, s.micro_batches, s.global_batch_size) == (1, 16, 64)
    assert parsed.model.num_experts == 128


def test_llamafactory_export_patches_the_yaml_and_refuses_the_deepspeed_owned_fields(tmp_path):
    for name in ("qwen3_lora_sft_ds2.yaml", "ds_z2_config.json"):
        shutil.copy(LF / name, tmp_path / name)
    target = str(tmp_path / "qwen3_lora_sft_ds2.yaml")
    _files, changed = roundtrip([target], {"strategy.lora_rank": 32, "strategy.micro_batch_size": 1,
                                          "strategy.micro_batches": 8, "strategy.seq_length": 8192}, devices=16)
    assert sorted(changed) == sorted(["-lora_rank: 16", "+lora_rank: 32", "-cutoff_len: 4096", "+cutoff_len: 8192",
                                      "-per_device_train_batch_size: 2", "+per_device_train_batch_size: 1",
                                      "-gradient_accumulation_steps: 4", "+gradient_accumulation_steps: 8"])
    parsed = parse([target], devices=16)
    with pytest.raises(ConfigError, match=r"ds_z2_config\.json"):
        export(apply_changes(parsed, {"strategy.sharding": "zero3"}))


def test_llamafactory_needs_devices_and_a_known_model(tmp_path):
    with pytest.raises(ConfigError, match="--devices"):
        parse([str(LF / "qwen3_qlora_sft.yaml")])
    target = tmp_path / "lf.yaml"
    target.write_text((LF / "qwen3_qlora_sft.yaml").read_text().replace("Qwen/Qwen3-8B", "acme/Private-7B"))
    with pytest.raises(ConfigError):
        parse([str(target)], devices=8)
    parsed = parse([str(target)], devices=8, model=LLAMA)  # --model supplies it
    assert parsed.model.hidden_size == 4096


# ------------------------------------------------------------------------------------------ fuzzing
_SOURCES = sorted([*DS.glob("*.json"), *LF.glob("*.yaml")])


@st.composite
def _mutations(draw):
    path = draw(st.sampled_from(_SOURCES))
    return path.suffix, mutate(draw, path.read_text(encoding="utf-8"),
                               ['"auto"', "{", "}", ",", ": ", "\n", "null", "true", "-1", "1e400", "[", "nvme",
                                "stage: 3\n", "lora_target: x\n"])


@fuzz_settings(120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_mutations())
def test_fuzzed_inputs_raise_only_sapp_errors(tmp_path, case):
    suffix, text = case
    shutil.copy(LF / "ds_z2_config.json", tmp_path / "ds_z2_config.json")
    opening = {"model": LLAMA, "overrides": SEQ} if suffix == ".json" else {}
    read_estimate_export(tmp_path, suffix, text, devices=16, **opening)


def test_parameter_offload_below_stage_3_is_refused_on_export(tmp_path):
    target = tmp_path / "ds.json"
    data = json.loads((DS / "zero3_tuned.json").read_text())
    data["zero_optimization"]["offload_param"] = {"device": "cpu"}
    target.write_text(json.dumps(data, indent=2))
    parsed = open_ds(target)
    assert parsed.strategy.offload_params is True
    with pytest.raises(ConfigError, match="offload_param"):
        export(apply_changes(parsed, {"strategy.sharding": "zero2"}))
    moved = export(apply_changes(parsed, {"strategy.sharding": "zero2", "strategy.offload_params": False}))
    assert '"device": "none"' in moved[str(target)]


def test_zero_buffer_sizes_are_named_outside_deepspeed_and_refused_by_other_writers():
    mindformers = ROOT / "tests" / "fixtures" / "mindformers" / "tiny_legacy.yaml"
    parsed = parse([str(mindformers)], overrides={"strategy.reduce_bucket": 10_000_000})
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert any("reduce_bucket" in w.text and "no meaning" in w.text for w in result.warnings)
    with pytest.raises(ConfigError, match="reduce_bucket"):
        export(apply_changes(parse([str(mindformers)]), {"strategy.reduce_bucket": 10_000_000}))


def test_nvme_offload_is_said_to_be_priced_as_host_offload(tmp_path):
    target = tmp_path / "ds.json"
    data = json.loads((DS / "zero3_tuned.json").read_text())
    data["zero_optimization"]["offload_optimizer"] = {"device": "nvme", "nvme_path": "/local_nvme"}
    target.write_text(json.dumps(data, indent=2))
    parsed = open_ds(target)
    assert parsed.strategy.offload_optimizer is True
    said = [w.text for w in parsed.warnings if w.code == "W-UNMODELLED" and "NVMe" in w.text]
    assert said and "offload_optimizer" in said[0] and "host memory" in said[0]


@pytest.mark.parametrize("layers, trainable", [(None, (-2, -1)), (4, (-4, -3, -2, -1)), (-3, (0, 1, 2))])
def test_freeze_fine_tuning_reads_the_trainable_layers(tmp_path, layers, trainable):
    """LLaMA-Factory's _setup_freeze_tuning: freeze_trainable_layers n > 0 trains the last n layers (kept as
    indices from the end), n < 0 the first −n; the rest is priced frozen (tests/test_features_freeze.py)."""
    text = (LF / "qwen3_qlora_sft.yaml").read_text()
    text = text.replace("finetuning_type: lora", "finetuning_type: freeze")
    target = tmp_path / "freeze.yaml"
    target.write_text(text)
    with pytest.raises(ConfigError, match="only under LoRA") as err:  # LLaMA-Factory refuses it too
        parse([str(target)], devices=8)
    assert err.value.key == "quantization_bit"
    text = text.replace("quantization_bit: 4\n", "")
    if layers is not None:
        text += f"freeze_trainable_layers: {layers}\n"
    target = tmp_path / "freeze.yaml"
    target.write_text(text)
    parsed = parse([str(target)], devices=8)
    assert not [w for w in parsed.warnings if w.code == "W-NOT-PRICED" and "freeze" in w.text]
    assert parsed.strategy.peft in (None, "none", "")
    s = parsed.strategy
    assert s.trainable_layers == trainable and s.frozen_modules == ("embedding", "output")
    # trainable weights in fp32 with fp32 gradients under autocast, frozen ones in the load dtype (bf16)
    assert (s.param_bytes, s.grad_bytes, s.compute_bytes, s.master_bytes, s.frozen_param_bytes) == \
        (4.0, 4.0, 2.0, 0.0, 2.0)


def test_qlora_to_lora_writes_the_quantization_off(tmp_path):
    target = tmp_path / "qlora.yaml"
    shutil.copy(LF / "qwen3_qlora_sft.yaml", target)
    parsed = parse([str(target)], devices=8)
    text = export(apply_changes(parsed, {"strategy.peft": "lora"}))[str(target)]
    assert "finetuning_type: lora" in text and "quantization_bit: null" in text
    target.write_text(text)
    assert parse([str(target)], devices=8).strategy.peft == "lora"
