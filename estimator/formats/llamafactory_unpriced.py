"""LLaMA-Factory keys the catalogue knows that change memory or step time but are not priced (D-LF-UNREAD): each
is said when it departs from what the estimate assumes (an SFT step of the Trainer with AdamW's two states),
naming the key and which way the estimate errs."""

from __future__ import annotations

from typing import Any

from ..messages import Text, msg
from .support import Collector

# switches said when on: key -> what is not priced
SWITCHES: dict[str, Text] = {
    "use_unsloth_gc": msg("llamafactory_unpriced.unsloth-gc"),
    "use_unsloth": msg("llamafactory_unpriced.unsloth"),
    "enable_liger_kernel": msg("llamafactory_unpriced.liger"),
    "use_liger_kernel": msg("llamafactory_unpriced.liger"),
    "use_galore": msg("llamafactory_unpriced.low-memory-optimizer"),
    "use_apollo": msg("llamafactory_unpriced.low-memory-optimizer"),
    "use_badam": msg("llamafactory_unpriced.low-memory-optimizer"),
    "use_adam_mini": msg("llamafactory_unpriced.low-memory-optimizer"),
    "use_muon": msg("llamafactory_unpriced.muon"),
    "use_dora": msg("llamafactory_unpriced.dora"),
    "use_kt": msg("llamafactory_unpriced.kt"),
    "use_hyper_parallel": msg("llamafactory_unpriced.hyper-parallel"),
    "shift_attn": msg("llamafactory_unpriced.shift-attn"),
    "upcast_lmhead_output": msg("llamafactory_unpriced.upcast-lmhead"),
    "neat_packing": msg("llamafactory_unpriced.neat-packing"),
    "torch_compile": msg("llamafactory_unpriced.compile"),
}
# stages other than pt / sft: what they hold that an SFT step does not
STAGES: dict[str, Text] = {
    "rm": msg("llamafactory_unpriced.pairs"),
    "dpo": msg("llamafactory_unpriced.pairs-and-reference"),
    "kto": msg("llamafactory_unpriced.pairs-and-reference"),
    "ppo": msg("llamafactory_unpriced.ppo"),
}
# the Trainer's optim names priced as they are (AdamW, two fp32 states) …
ADAMW = frozenset({"adamw_torch", "adamw_torch_fused", "adamw_hf", "adamw_apex_fused", "adamw_torch_xla",
                   "adamw_torch_npu_fused", "adamw"})


def _optim_effect(name: str) -> Text:
    """… and what an other one keeps: fewer or narrower states (an upper bound), or unknown."""
    if "8bit" in name or name.startswith(("adafactor", "lion", "sgd", "galore", "apollo", "lomo", "adalomo")):
        return msg("llamafactory_unpriced.optim-smaller")
    return msg("llamafactory_unpriced.optim-other")


def read_unpriced(out: Collector, data: dict[str, Any], deepspeed_optimizer: bool) -> None:
    """W-NOT-PRICED for each of these keys that departs from what is priced; ``optim`` only when no DeepSpeed
    config names its own optimizer (the Trainer then builds DeepSpeed's)."""
    for key, effect in SWITCHES.items():
        if data.get(key) is True:
            out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.llamafactory-key", key=key, value=True, effect=effect))
    for key in ("fsdp", "parallelism_config", "mixture_of_depths"):
        value = data.get(key)
        if value not in (None, False, "", [], {}):
            out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.llamafactory-key", key=key, value=value,
                                         effect=_VALUED[key]))
    stage = str(data.get("stage", "sft")).strip().lower()
    if stage in STAGES:
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.llamafactory-key", key="stage", value=stage,
                                     effect=STAGES[stage]))
    if data.get("fp8") is True:  # Accelerate's FP8 (training_args.py Fp8Arguments); fp8_backend names the library
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.llamafactory-key", key="fp8", value=True,
                                     effect=msg("llamafactory_unpriced.fp8", backend=str(data.get("fp8_backend",
                                                                                                  "auto")))))
    optim = data.get("optim")
    if isinstance(optim, str) and optim.strip().lower() not in ADAMW and not deepspeed_optimizer:
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.llamafactory-key", key="optim", value=optim,
                                     effect=_optim_effect(optim.strip().lower())))


_VALUED: dict[str, Text] = {
    "fsdp": msg("llamafactory_unpriced.fsdp"),
    "parallelism_config": msg("llamafactory_unpriced.parallelism-config"),
    "mixture_of_depths": msg("llamafactory_unpriced.mod"),
}

__all__ = ["ADAMW", "STAGES", "SWITCHES", "read_unpriced"]
