"""DeepSpeed JSON configs as the Hugging Face Trainer / accelerate run them (issue 13): ZeRO stage 0–3, optimizer
and parameter offload, the ZeRO buckets and ZeRO-3 prefetch limits, precision, micro-batch and gradient
accumulation. The model comes from a ``config.json`` or a Hub id given beside it (``--model``), the device count
from ``--devices``: a DeepSpeed file states neither. ``"auto"`` values are the Trainer's: taken from a
fine-tuning config read together with this file (LLaMA-Factory), else its defaults, each said as an assumption.
``write`` rewrites only the JSON values of a changed strategy (R-FW for what DeepSpeed cannot state).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..messages import msg
from .deepspeed_unpriced import read_unpriced
from .known_keys import catalogue, check_sections
from .support import Collector, Reading, check_micro_batches, to_int

FORMAT = "deepspeed"
ZERO = "zero_optimization"
STAGES = {0: "none", 1: "zero1", 2: "zero2", 3: "zero3"}
# Hugging Face Trainer's TrainingArguments defaults for what a DeepSpeed file leaves "auto"
TRAINER_MBS, TRAINER_GA = 8, 1
# DeepSpeed's own defaults (deepspeed/runtime/zero/config.py)
DS_REDUCE_BUCKET = DS_ALLGATHER_BUCKET = 500_000_000
DS_PREFETCH_BUCKET, DS_MAX_LIVE = 50_000_000, 1_000_000_000


@dataclass
class TrainerArgs:
    """What the launching Trainer fills ``"auto"`` with (a fine-tuning config's values, with where they are)."""

    micro_batch_size: int | None = None
    gradient_accumulation: int | None = None
    bf16: bool | None = None
    fp16: bool | None = None
    where: dict[str, str] = field(default_factory=dict)  # name -> file:key, for provenance


def is_deepspeed(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    if isinstance(data.get(ZERO), dict):
        return True
    return any(k in data for k in ("train_micro_batch_size_per_gpu", "train_batch_size")) and \
        any(k in data for k in ("fp16", "bf16", "bfloat16", "optimizer", "gradient_accumulation_steps"))


def detect(data: Any, path: str) -> bool:
    return is_deepspeed(data)


def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    out = Collector(path)
    read_deepspeed(out, data, path, devices, TrainerArgs())
    # a DeepSpeed file alone cannot say what the Trainer's own arguments do to activations: their defaults, said
    out.assume("strategy.recompute", "none", msg("deepspeed.trainer-no-gradient-checkpointing"))
    out.assume("strategy.flash_attention", True, msg("deepspeed.trainer-sdpa-attention"))
    return out.reading(FORMAT, "strategy", text, path)


def read_deepspeed(out: Collector, data: dict[str, Any], path: str, devices: int | None,
                   trainer: TrainerArgs) -> None:
    """The strategy a DeepSpeed config states, into ``out`` (``trainer`` fills its "auto" values)."""
    if devices is None:
        raise ConfigError(msg("deepspeed.deepspeed-config-does"), path=path)
    for section in (ZERO, "fp16", "bf16", "bfloat16", "optimizer", "tensor_parallel"):
        if section in data and not isinstance(data[section], dict):
            raise ConfigError(msg("deepspeed.must-object", section=section), path=path, key=section)
    out.warnings.extend(check_sections(data, catalogue("deepspeed"), path))
    out.assume("options.framework", "hf_trainer", msg("deepspeed.deepspeed-config-hugging"))
    tp = 1
    autotp = data.get("tensor_parallel", {}).get("autotp_size") if isinstance(data.get("tensor_parallel"), dict) \
        else None
    if autotp is not None:
        tp = to_int(autotp, path, "tensor_parallel.autotp_size")
        out.put("strategy.tp", tp, "tensor_parallel.autotp_size")
    if devices % tp:
        raise ConfigError(msg("deepspeed.devices-multiple-tensor_parallel", devices=devices, tp=tp), path=path,
                          key="tensor_parallel.autotp_size")
    dp = devices // tp
    out.derive("strategy.dp", dp, f"--devices {devices} / tp {tp}: DeepSpeed runs data parallel over every rank")
    if tp > 1:
        out.derive("strategy.sequence_parallel", False, "DeepSpeed AutoTP shards the linear layers only")
    _batch(out, data, path, dp, trainer)
    _precision(out, data, path, trainer)
    _zero(out, data, path)
    read_unpriced(out, data)
    optimizer = data.get("optimizer", {}).get("type") if isinstance(data.get("optimizer"), dict) else None
    if optimizer is not None and str(optimizer).lower() not in ("adam", "adamw", "fusedadam", "cpuadam"):
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.optimizer-priced-adamw", optimizer=optimizer))


def _auto(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "auto"


def _batch(out: Collector, data: dict[str, Any], path: str, dp: int, trainer: TrainerArgs) -> None:
    def value(key: str, given: int | None, default: int, what: str) -> int:
        raw = data.get(key)
        if raw is not None and not _auto(raw):
            number = to_int(raw, path, key)
            out.put(f"strategy.{what}", number, key, raw)
            return number
        if given is not None:
            where = trainer.where.get(what, "the fine-tuning config")
            out.put(f"strategy.{what}", given, f"{key} \"auto\" ← {where}", given)
            return given
        state = '"auto"' if raw is not None else "absent"
        said = msg("deepspeed.trainer-default-micro-batch", key=key, state=state, default=default) \
            if what == "micro_batch_size" else msg("deepspeed.trainer-s-default", key=key, state=state, default=default)
        out.assume(f"strategy.{what}", default, said)
        return default

    mbs = value("train_micro_batch_size_per_gpu", trainer.micro_batch_size, TRAINER_MBS, "micro_batch_size")
    ga = value("gradient_accumulation_steps", trainer.gradient_accumulation, TRAINER_GA, "micro_batches")
    check_micro_batches(ga, path, "gradient_accumulation_steps")
    out.derive("strategy.n_acc", 1, "one optimizer step after the accumulated micro-batches")
    total = data.get("train_batch_size")
    if total is not None and not _auto(total) and to_int(total, path, "train_batch_size") != mbs * ga * dp:
        raise ConfigError(msg("deepspeed.train_batch_size-micro-batch", total=total, mbs=mbs, ga=ga, dp=dp,
                              value=mbs * ga * dp), path=path, key="train_batch_size")


def _precision(out: Collector, data: dict[str, Any], path: str, trainer: TrainerArgs) -> None:
    def enabled(section: str) -> bool | None:
        block = data.get(section)
        if not isinstance(block, dict) or "enabled" not in block:
            return None if not isinstance(block, dict) else True
        flag = block["enabled"]
        if _auto(flag):
            return None
        if not isinstance(flag, bool):
            raise ConfigError(msg("deepspeed.enabled-must-true", section=section, flag=flag), path=path,
                              key=f"{section}.enabled")
        return flag

    bf16 = enabled("bf16") if "bf16" in data else enabled("bfloat16")
    fp16 = enabled("fp16")
    auto = any(_auto(data.get(s, {}).get("enabled")) for s in ("bf16", "bfloat16", "fp16")
               if isinstance(data.get(s), dict))
    if bf16 is None and auto:
        bf16 = trainer.bf16
    if fp16 is None and auto:
        fp16 = trainer.fp16
    key = "bf16.enabled" if "bf16" in data else "bfloat16.enabled" if "bfloat16" in data else "fp16.enabled"
    if bf16 or fp16:
        half = "bf16" if bf16 else "fp16"
        where = trainer.where.get(half, key)
        for name in ("strategy.param_bytes", "strategy.compute_bytes", "strategy.grad_bytes"):
            out.put(name, 2.0, f"{key} ({where})" if where != key else key, True)
        out.derive("strategy.master_bytes", 4.0, f"{half}: DeepSpeed keeps fp32 master weights in the optimizer")
        return
    if auto and trainer.bf16 is None and trainer.fp16 is None:
        for name in ("strategy.param_bytes", "strategy.compute_bytes", "strategy.grad_bytes"):
            out.assume(name, 2.0, msg("deepspeed.auto-trainer-s", key=key))
        out.assume("strategy.master_bytes", 4.0, msg("deepspeed.bf16-training-keeps"))
        return
    for name in ("strategy.param_bytes", "strategy.compute_bytes", "strategy.grad_bytes"):
        out.assume(name, 4.0, msg("deepspeed.neither-bf16-nor"))
    out.assume("strategy.master_bytes", 0.0, msg("deepspeed.fp32-training-keeps"))


def _size(zero: dict[str, Any], key: str, path: str) -> int | None:
    raw = zero.get(key)
    if raw is None or _auto(raw):
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw < 0:
        raise ConfigError(msg("deepspeed.must-number-elements", ZERO=ZERO, key=key, raw=raw), path=path,
                          key=f"{ZERO}.{key}")
    if raw > 1e13:
        raise ConfigError(msg("deepspeed.implausibly-large", ZERO=ZERO, key=key, raw=raw), path=path,
                          key=f"{ZERO}.{key}")
    return int(raw)


def _zero(out: Collector, data: dict[str, Any], path: str) -> None:
    zero = data.get(ZERO) or {}
    stage = to_int(zero.get("stage", 0), path, f"{ZERO}.stage", minimum=0, maximum=3)
    mode = STAGES[stage]
    if ZERO in data and "stage" in zero:
        out.put("strategy.sharding", mode, f"{ZERO}.stage", stage)
    else:
        out.assume("strategy.sharding", mode, msg("deepspeed.stage-deepspeed-s", ZERO=ZERO))
    for key, name in (("offload_optimizer", "strategy.offload_optimizer"),
                      ("offload_param", "strategy.offload_params")):
        block = zero.get(key)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise ConfigError(msg("deepspeed.must-object-2", ZERO=ZERO, key=key), path=path, key=f"{ZERO}.{key}")
        device = str(block.get("device", "none")).lower()
        if device not in ("none", "cpu", "nvme"):
            raise ConfigError(msg("deepspeed.device-must-none", ZERO=ZERO, key=key, device=device), path=path,
                              key=f"{ZERO}.{key}.device")
        if key == "offload_param" and stage != 3 and device != "none":
            out.warn("W-FLAG", msg("W-FLAG", ZERO=ZERO, stage=stage))
            out.derive(name, False, f"{ZERO}.offload_param is ignored below stage 3")
            continue
        out.put(name, device != "none", f"{ZERO}.{key}.device", device)
        if device == "nvme":
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.nvme-priced-host-2", ZERO=ZERO, key=key))
    # every stage's sizes are read (a plan moved to another stage keeps what the file says); an absent one is
    # DeepSpeed's default, "auto" is left unset for resolve to price as the Trainer fills it (from h)
    overlap = zero.get("overlap_comm")
    if overlap is not None:
        if not isinstance(overlap, bool):
            raise ConfigError(msg("deepspeed.overlap_comm-must-true", ZERO=ZERO, overlap=overlap), path=path,
                              key=f"{ZERO}.overlap_comm")
        out.put("strategy.overlap_comm", overlap, f"{ZERO}.overlap_comm", overlap)

    def bucket(name: str, key: str, default: int, stages: tuple[int, ...]) -> None:
        raw = zero.get(key)
        if raw is None:  # an assumption where this stage prices it, else kept quietly for a later stage change
            (out.assume if stage in stages else out.derive)(name, default, f"no {ZERO}.{key}: DeepSpeed's default "
                                                                           f"{default:.0e}")
        elif not _auto(raw):
            out.put(name, _size(zero, key, path), f"{ZERO}.{key}", raw)

    bucket("strategy.reduce_bucket", "reduce_bucket_size", DS_REDUCE_BUCKET, (1, 2, 3))
    bucket("strategy.allgather_bucket", "allgather_bucket_size", DS_ALLGATHER_BUCKET, (1, 2))
    bucket("strategy.prefetch_bucket", "stage3_prefetch_bucket_size", DS_PREFETCH_BUCKET, (3,))
    bucket("strategy.max_live_params", "stage3_max_live_parameters", DS_MAX_LIVE, (3,))


__all__ = ["FORMAT", "TrainerArgs", "detect", "is_deepspeed", "read", "read_deepspeed"]
