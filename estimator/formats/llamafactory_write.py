"""Writing a strategy back into a LLaMA-Factory YAML (docs/model.md#frameworks): the Trainer keys (micro-batch,
accumulation, cutoff_len, precision, gradient checkpointing), the LoRA / QLoRA keys and, for MCoreAdapter runs, the
Megatron keys, patched in place. What the DeepSpeed config it names decides (ZeRO stage, offload, buckets) is refused
with the file to edit; the new text is read again."""

from __future__ import annotations

from typing import Any

from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .common import load_yaml
from .flag_source import ArgsMapping
from .llamafactory import ALL_LINEAR, LORA_TARGETS, megatron_keys, read
from .support import changed_fields, refusal
from .yaml_patch import YamlPatch

TRAINER_FIELDS = {"dp", "micro_batch_size", "micro_batches", "seq_length", "peft", "lora_rank", "lora_targets",
                  "lora_dropout", "qlora_double_quant", "recompute.default_mode", "param_bytes", "compute_bytes",
                  "grad_bytes", "master_bytes", "lora_param_bytes"}
DEEPSPEED_FIELDS = {"sharding.mode", "offload_optimizer", "offload_params", "reduce_bucket", "allgather_bucket",
                    "prefetch_bucket", "max_live_params", "overlap_comm", "tp"}


def write_yaml(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    old = parsed.baseline_strategy
    if old == strategy:
        return source.text
    path = source.path
    data = load_yaml(source.text, path)
    changed = changed_fields(old, strategy)
    mcore = megatron_keys(data)
    owned = [k for k in changed if k in DEEPSPEED_FIELDS]
    if owned and not mcore:
        where = data.get("deepspeed")
        raise refusal(f"{', '.join(owned)}: set by the DeepSpeed config" + (f" {where}" if where else
                                                                           " (none is named: add deepspeed:)")
                      + "; edit that file", path)
    patch = YamlPatch(source.text, path)
    if mcore:
        _megatron(path, data, old, strategy, parsed, patch)
    extra = sorted(set(changed) - TRAINER_FIELDS - (set(changed) if mcore else set()))
    if extra:
        raise refusal(f"a LLaMA-Factory YAML cannot express {', '.join(extra)}", path)
    if "micro_batch_size" in changed:
        patch.set(("per_device_train_batch_size",), strategy.micro_batch_size)
    if "micro_batches" in changed:
        patch.set(("gradient_accumulation_steps",), strategy.micro_batches)
    if "seq_length" in changed:
        patch.set(("cutoff_len",), strategy.seq_length)
    if changed.keys() & {"peft", "lora_rank", "lora_targets", "lora_dropout", "qlora_double_quant"}:
        _peft(path, data, strategy, patch)
    if "recompute.default_mode" in changed:
        if strategy.recompute.default_mode not in ("none", "full"):
            raise refusal("the Trainer's gradient checkpointing recomputes whole layers (full) or nothing", path)
        patch.set(("disable_gradient_checkpointing",), strategy.recompute.default_mode == "none")
    if changed.keys() & {"param_bytes", "compute_bytes"}:
        half = strategy.compute_bytes == 2
        key = "fp16" if data.get("fp16") else "bf16"
        patch.set((key,), half)
    text = patch.result()
    _verify(text, source, parsed, strategy)
    return text


def _peft(path: str, data: dict[str, Any], new: Strategy, patch: YamlPatch) -> None:
    if new.peft == "none":
        patch.set(("finetuning_type",), "full")
        if data.get("quantization_bit") is not None:  # LLaMA-Factory quantizes only under LoRA
            patch.set(("quantization_bit",), None)
        return
    patch.set(("finetuning_type",), "lora")
    patch.set(("lora_rank",), new.lora_rank)
    targets = tuple(new.lora_targets)
    if set(targets) == set(ALL_LINEAR):
        value: Any = "all"
    else:
        names = {v: k for k, v in LORA_TARGETS.items()}
        missing = [t for t in targets if t not in names]
        if missing:
            raise refusal(f"LoRA targets {', '.join(missing)} have no LLaMA-Factory module name", path)
        value = ",".join(names[t] for t in targets)
    if value != data.get("lora_target", "all"):
        patch.set(("lora_target",), value)
    if new.lora_dropout:
        patch.set(("lora_dropout",), new.lora_dropout)
    if new.peft == "qlora":
        patch.set(("quantization_bit",), 4)
        if not new.qlora_double_quant or "double_quantization" in data:
            patch.set(("double_quantization",), new.qlora_double_quant)
    elif "quantization_bit" in data:
        patch.set(("quantization_bit",), None)


def _megatron(path: str, data: dict[str, Any], old: Strategy, new: Strategy, parsed: ParsedConfig,
              patch: YamlPatch) -> None:
    from .mindspeed_script_write import desired_flags

    args = ArgsMapping({k: data[k] for k in megatron_keys(data)}, path)
    for flag, value in desired_flags(path, args, old, new, parsed, "megatron").items():
        if flag in ("--global-batch-size", "--micro-batch-size", "--seq-length"):
            continue  # the Trainer keys state the batch and the length
        key = flag[2:].replace("-", "_")
        if value is None:
            if key in data and data[key] not in (None, False):
                patch.set((key,), False if data[key] is True else None)
        elif value is True:
            if data.get(key) is not True:
                patch.set((key,), True)
        else:
            patch.set((key,), int(value) if value.isdigit() else value)


def _verify(text: str, source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> None:
    from .mindspeed_script_write import same_plan_as_read

    reading = read(text, source.path, load_yaml(text, source.path), strategy.world_size)
    same_plan_as_read(reading.values, source, parsed, strategy)


__all__ = ["write_yaml"]
