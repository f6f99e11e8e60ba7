"""Writing a strategy back into a LLaMA-Factory YAML (docs/model.md#frameworks): the Trainer keys (micro-batch,
accumulation, cutoff_len, precision, gradient checkpointing), the LoRA / QLoRA keys, the freeze keys and, for
MCoreAdapter runs, the Megatron keys, patched in place. What the DeepSpeed config it names decides (ZeRO stage,
offload, buckets) is refused with the file to edit; the new text is read again."""

from __future__ import annotations

from typing import Any

from ..layer_states import trainable_indices
from ..messages import msg
from ..parsed import ParsedConfig, SourceFile
from ..strategy import TRAINABLE_PARTS, Strategy
from .common import load_yaml
from .flag_source import ArgsMapping
from .llamafactory import ALL_LINEAR, FREEZE_EXTRAS, FREEZE_MODULES, LORA_TARGETS, megatron_keys, read
from .support import changed_fields, refusal
from .yaml_patch import YamlPatch

TRAINER_FIELDS = {"dp", "micro_batch_size", "micro_batches", "seq_length", "peft", "lora_rank", "lora_targets",
                  "lora_dropout", "qlora_double_quant", "recompute.default_mode", "param_bytes", "compute_bytes",
                  "grad_bytes", "master_bytes", "lora_param_bytes"}
FREEZE_FIELDS = {"trainable_layers", "trainable_parts", "frozen_modules"}
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
    extra = sorted(set(changed) - TRAINER_FIELDS - FREEZE_FIELDS - (set(changed) if mcore else set()))
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
    if changed.keys() & FREEZE_FIELDS:
        _freeze(path, data, strategy, parsed.model.num_layers, patch)
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


def _freeze(path: str, data: dict[str, Any], new: Strategy, layers: int, patch: YamlPatch) -> None:
    """The freeze keys that make ``_setup_freeze_tuning`` (LLaMA-Factory model/adapter.py) train the layers, module
    groups and tables ``new`` names (D-FREEZE, read by llamafactory._freeze); a set it cannot produce is refused."""
    if new.peft != "none":
        return  # adapters with trainable layers are refused by the estimate (R-PEFT.freeze) before an export
    if new.trainable_layers is None:
        if not new.trainable_parts and not new.frozen_modules:  # every weight trains: full fine-tuning
            patch.set(("finetuning_type",), "full")
            return
        # every layer, some module groups or tables frozen: LLaMA-Factory states it as freeze over all L layers,
        # which reads back as the layers −L…−1; the plan must name them so (the exported file reads as written)
        raise refusal(msg("llamafactory-write.freeze-every-layer", layers=layers), path, "freeze_trainable_layers")
    patch.set(("finetuning_type",), "freeze")
    count = _freeze_layer_count(path, data, new.trainable_layers, layers, patch)
    if count != data.get("freeze_trainable_layers", 2):  # LLaMA-Factory's default: the last 2 layers
        patch.set(("freeze_trainable_layers",), count)
    names: dict[str, str] = {}
    for name, part in FREEZE_MODULES.items():  # each group's first (LLaMA/Qwen) module name
        names.setdefault(part, name)
    parts = tuple(new.trainable_parts)
    modules = "all" if not parts or set(parts) == set(TRAINABLE_PARTS) else ",".join(names[p] for p in parts)
    if modules != str(data.get("freeze_trainable_modules", "all")).replace(" ", ""):
        patch.set(("freeze_trainable_modules",), modules)
    tables: dict[str, str] = {}
    for name, row in FREEZE_EXTRAS.items():
        tables.setdefault(row, name)
    extras = [tables[row] for row in ("embedding", "output") if row not in new.frozen_modules]
    if extras or "freeze_extra_modules" in data:
        patch.set(("freeze_extra_modules",), ",".join(extras) if extras else None)


def _freeze_layer_count(path: str, data: dict[str, Any], trainable: tuple[int, ...], layers: int,
                        patch: YamlPatch) -> int:
    """``freeze_trainable_layers`` for the model-order layer set ``trainable`` (negative: from the last layer):
    n for the last n layers, −n for the first n, or n with ``use_llama_pro`` for every (L/n)-th layer."""
    chosen = sorted(trainable_indices(frozenset(trainable), layers))
    n = len(chosen)
    if n and chosen == list(range(layers - n, layers)):
        if data.get("use_llama_pro"):
            patch.set(("use_llama_pro",), False)
        return n
    if n and chosen == list(range(n)):
        if data.get("use_llama_pro"):
            patch.set(("use_llama_pro",), False)
        return -n
    if n and layers % n == 0 and chosen == _llama_pro(layers, n):
        if not data.get("use_llama_pro"):
            patch.set(("use_llama_pro",), True)
        return n
    raise refusal(msg("llamafactory-write.freeze-layers", layers=", ".join(str(i) for i in chosen) or "none"),
                  path, "freeze_trainable_layers")


def _llama_pro(layers: int, n: int) -> list[int]:
    """The layers ``use_llama_pro`` trains: the last of each of n equal blocks."""
    stride = layers // n
    return list(range(stride - 1, layers, stride))


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
    same_plan_as_read(reading.values, source, parsed, _as_read(strategy, parsed.model.num_layers))


def _as_read(strategy: Strategy, layers: int) -> Strategy:
    """``strategy`` in the form the reader gives the same training: the last n layers as −n…−1, and, when every
    weight trains, no frozen width and no trainable-only checkpointing (nothing is frozen for them to describe)."""
    if strategy.trainable_layers is None:
        if strategy.frozen_modules or strategy.trainable_parts:
            return strategy
        return strategy.replace(frozen_param_bytes=None, checkpoint_trainable_only=False)
    chosen = sorted(trainable_indices(frozenset(strategy.trainable_layers), layers))
    n = len(chosen)
    if n and chosen == list(range(layers - n, layers)):
        return strategy.replace(trainable_layers=tuple(range(-n, 0)))
    return strategy


__all__ = ["write_yaml"]
