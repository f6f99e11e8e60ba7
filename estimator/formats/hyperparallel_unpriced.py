"""HyperParallel keys the catalogue knows that change memory or step time but are not priced (D-HP-UNREAD): each is
said when it departs from what the estimate assumes, naming the key and which way the estimate errs."""

from __future__ import annotations

from typing import Any

from ..messages import Text, msg
from .common import dig
from .support import Collector

_OFF = (None, False, "none", "None", "", {}, [])


def _depth(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 1


# (key path, when it departs from the estimate, what is not priced)
UNPRICED: tuple[tuple[tuple[str, ...], Any, Text], ...] = (
    (("compile", "enabled"), lambda v: v is True, msg("hyperparallel_unpriced.compile")),
    (("fsdp_config", "reshard_after_backward"), lambda v: v is False, msg("hyperparallel_unpriced.keep-after-bwd")),
    (("fsdp_config", "forward_prefetch_depth"), _depth, msg("hyperparallel_unpriced.prefetch")),
    (("fsdp_config", "backward_prefetch_depth"), _depth, msg("hyperparallel_unpriced.prefetch")),
    (("model", "attn_implementation"), lambda v: isinstance(v, str) and v.strip().lower() == "eager",
     msg("hyperparallel_unpriced.eager-attention")),
    (("fsdp_config", "replicate_params"), lambda v: v not in _OFF, msg("hyperparallel_unpriced.replicate-params")),
)


def read_unpriced(c: Collector, data: dict[str, Any]) -> None:
    for keys, departs, effect in UNPRICED:
        value = dig(data, *keys)
        if value is not None and departs(value):
            c.warn("W-NOT-PRICED", msg("W-NOT-PRICED.hyperparallel-key", key=".".join(keys), value=value,
                                       effect=effect))
    swap = data.get("activation_swap")
    if isinstance(swap, dict):
        swap = None if swap.get("enabled") is False else swap
    if swap not in _OFF:
        c.warn("W-NOT-PRICED", msg("W-NOT-PRICED.hyperparallel-key", key="activation_swap", value=swap,
                                   effect=msg("hyperparallel_unpriced.activation-swap")))


__all__ = ["UNPRICED", "read_unpriced"]
