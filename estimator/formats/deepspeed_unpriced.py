"""DeepSpeed keys the catalogue knows that change memory or step time but are not priced (D-DS-UNREAD): each is
said when it departs from what the estimate assumes, naming the key and which way the estimate errs."""

from __future__ import annotations

from typing import Any

from ..messages import Text, msg
from .support import Collector

ZERO = "zero_optimization"
# DeepSpeed's default stage3_param_persistence_threshold: below it only norms and biases stay whole (not priced,
# a few MB); a larger threshold is said
DS_PERSISTENCE = 1e5


def _on(value: Any) -> bool:
    return value is True


def _above(limit: float) -> Any:
    return lambda value: not isinstance(value, bool) and isinstance(value, int | float) and value > limit


def _fp32(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in ("fp32", "float32", "float")


# ZeRO-3 features: said only at stage 3, where DeepSpeed uses them
STAGE3_ONLY = frozenset({"stage3_param_persistence_threshold", "zero_hpz_partition_size", "zero_quantized_weights",
                         "zero_quantized_gradients", "mics_shard_size"})
# (section, key, when it departs from the estimate, what is not priced)
UNPRICED: tuple[tuple[str, str, Any, Text], ...] = (
    (ZERO, "stage3_param_persistence_threshold", _above(DS_PERSISTENCE), msg("deepspeed_unpriced.persistence")),
    (ZERO, "zero_hpz_partition_size", _above(1), msg("deepspeed_unpriced.hpz")),
    (ZERO, "zero_quantized_weights", _on, msg("deepspeed_unpriced.quantized-comm")),
    (ZERO, "zero_quantized_gradients", _on, msg("deepspeed_unpriced.quantized-comm")),
    (ZERO, "mics_shard_size", _above(0), msg("deepspeed_unpriced.mics")),
    (f"{ZERO}.offload_optimizer", "ratio", lambda v: _above(-1)(v) and v < 1, msg("deepspeed_unpriced.ratio")),
    ("fp16", "fp16_master_weights_and_grads", _on, msg("deepspeed_unpriced.fp16-master")),
    ("data_types", "grad_accum_dtype", _fp32, msg("deepspeed_unpriced.grad-accum-fp32")),
    ("", "communication_data_type", _fp32, msg("deepspeed_unpriced.comm-fp32")),
    ("tensor_parallel", "tp_size", _above(1), msg("deepspeed_unpriced.tp-size")),
    # Apex AMP (DeepSpeed refuses it beside fp16 / bf16): priced as the fp32 training it then looks like
    ("amp", "enabled", _on, msg("deepspeed_unpriced.apex-amp")),
)


def _block(data: dict[str, Any], section: str) -> Any:
    node: Any = data
    for part in section.split(".") if section else ():
        node = node.get(part) if isinstance(node, dict) else None
    return node


def read_unpriced(out: Collector, data: dict[str, Any]) -> None:
    """W-NOT-PRICED for each key of ``UNPRICED`` whose value departs from what is priced (the fp32 gradient and
    communication dtypes only in half-precision training, where the estimate prices them in 16 bits), and
    ``zero_optimization.cpu_offload`` read as DeepSpeed reads it: ``offload_optimizer`` on the CPU."""
    half = out.values.get("strategy.grad_bytes") == 2.0
    for section, key, departs, effect in UNPRICED:
        block = _block(data, section)
        if not isinstance(block, dict) or key not in block or not departs(block[key]):
            continue
        if (key in ("grad_accum_dtype", "communication_data_type") and not half) or \
                (key in STAGE3_ONLY and out.values.get("strategy.sharding") != "zero3"):
            continue
        where = f"{section}.{key}" if section else key
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.deepspeed-key", key=where, value=block[key], effect=effect))
    zero = data.get(ZERO)
    if isinstance(zero, dict) and zero.get("cpu_offload") is True and "offload_optimizer" not in zero:
        # DeepSpeed's zero config maps the deprecated cpu_offload: true to offload_optimizer {device: cpu}
        out.put("strategy.offload_optimizer", True, f"{ZERO}.cpu_offload", True)


__all__ = ["STAGE3_ONLY", "UNPRICED", "read_unpriced"]
