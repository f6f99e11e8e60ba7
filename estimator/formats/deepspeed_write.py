"""Writing a strategy back into a DeepSpeed JSON (docs/model.md#frameworks): the ZeRO stage, offload devices, buckets
and prefetch limits, micro-batch, accumulation, precision and AutoTP degree, edited in place; ``"auto"`` values
belong to the launching Trainer and are refused (change them where the Trainer gets them). The new text is read
again."""

from __future__ import annotations

from typing import Any

from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .common import load_json
from .deepspeed import STAGES, ZERO, TrainerArgs, read_deepspeed
from .json_patch import json_edit, json_members
from .support import Collector, changed_fields, refusal, refuse_unwritable
from .text_edits import Editor

WRITABLE = {"dp", "micro_batch_size", "micro_batches", "sharding.mode", "offload_optimizer", "offload_params",
            "reduce_bucket", "allgather_bucket", "prefetch_bucket", "max_live_params", "overlap_comm",
            "param_bytes", "compute_bytes", "grad_bytes", "master_bytes", "tp", "sharding.os"}


def write_json(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    old = parsed.baseline_strategy
    if old == strategy:
        return source.text
    text, path = source.text, source.path
    refuse_unwritable("DeepSpeed config", old, strategy, WRITABLE, path)
    if strategy.sharding.os not in (None, strategy.dp * strategy.cp):
        raise refusal("DeepSpeed shards over every data-parallel rank (no partial shard size)", path)
    data = load_json(text, path)
    changed = changed_fields(old, strategy)
    want: dict[tuple[str, ...], Any] = {}

    def put(keys: tuple[str, ...], value: Any, what: str) -> None:
        current: Any = data
        for key in keys:
            current = current.get(key) if isinstance(current, dict) else None
        if isinstance(current, str) and current.strip().lower() == "auto":
            raise refusal(f"{'.'.join(keys)} is \"auto\": the Trainer sets {what}; change it there (the "
                          "fine-tuning config or the Trainer's arguments)", path)
        want[keys] = value

    if "micro_batch_size" in changed:
        put(("train_micro_batch_size_per_gpu",), strategy.micro_batch_size, "the micro-batch size")
    if "micro_batches" in changed:
        put(("gradient_accumulation_steps",), strategy.micro_batches, "the gradient accumulation")
    if changed.keys() & {"micro_batch_size", "micro_batches", "dp", "tp"} and "train_batch_size" in data:
        put(("train_batch_size",), strategy.micro_batch_size * strategy.micro_batches * strategy.dp, "the batch")
    if "tp" in changed:
        put(("tensor_parallel", "autotp_size"), strategy.tp, "the AutoTP degree")
    if strategy.offload_params and strategy.sharding.mode != "zero3":
        raise refusal("DeepSpeed offloads parameters (offload_param) at ZeRO stage 3 only: set "
                      "strategy.offload_params=false with a lower stage", path)
    if "sharding.mode" in changed:
        stage = next((k for k, v in STAGES.items() if v == strategy.sharding.mode), None)
        if stage is None:
            raise refusal(f"sharding {strategy.sharding.mode}: DeepSpeed has ZeRO stages 0-3 only", path)
        put((ZERO, "stage"), stage, "the ZeRO stage")
    for name, key in (("offload_optimizer", "offload_optimizer"), ("offload_params", "offload_param")):
        if name in changed:
            put((ZERO, key, "device"), "cpu" if getattr(strategy, name) else "none", "offload")
    for name, key in (("reduce_bucket", "reduce_bucket_size"), ("allgather_bucket", "allgather_bucket_size"),
                      ("prefetch_bucket", "stage3_prefetch_bucket_size"),
                      ("max_live_params", "stage3_max_live_parameters"), ("overlap_comm", "overlap_comm")):
        if name in changed:
            put((ZERO, key), getattr(strategy, name), key)
    if changed.keys() & {"param_bytes", "compute_bytes", "grad_bytes", "master_bytes"}:
        half = strategy.param_bytes == 2 and strategy.compute_bytes == 2
        if not half and (strategy.param_bytes, strategy.compute_bytes) != (4, 4):
            raise refusal("DeepSpeed trains in bf16/fp16 (params and compute 2 bytes) or fp32 (4)", path)
        section = "fp16" if isinstance(data.get("fp16"), dict) and data["fp16"].get("enabled") is True else "bf16"
        put((section, "enabled"), half, "the precision")
    members = json_members(text)
    editor = Editor(text, path)
    for keys, value in want.items():
        for depth in range(1, len(keys)):  # a missing object is added with the value nested in it
            if keys[:depth] not in members:
                value = _nest(keys[depth:], value)
                keys = keys[:depth]
                break
        json_edit(text, members, editor, keys, value, path)
    new = editor.apply()
    _verify(new, source, parsed, strategy)
    return new


def _nest(keys: tuple[str, ...], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def _verify(text: str, source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> None:
    from .mindspeed_script_write import same_plan_as_read

    out = Collector(source.path)
    read_deepspeed(out, load_json(text, source.path), source.path, strategy.world_size, TrainerArgs())
    same_plan_as_read(out.values, source, parsed, strategy, lambda key: key not in out.values)


__all__ = ["write_json"]
