"""The issue-11 flags of Megatron-LM and MindSpeed launch scripts — LoRA/QLoRA (MindSpeed-LLM ``--lora-*``,
``--qlora``) — read into ``strategy.*`` and written back. Kept apart from the script reader so that each
feature's flags live in one place: ``FEATURE_FLAGS`` lists every flag read here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..features import MEGATRON_LORA_NAMES, lora_targets_of
from ..strategy import Strategy
from .launch_command import FlagSet
from .support import Collector, refusal

Put = Callable[[str, Any, str], None]

LORA_FLAGS = ("--lora-target-modules", "--lora-r", "--lora-alpha", "--lora-dropout", "--qlora", "--lora-fusion",
              "--lora-load", "--lora-modules-to-save", "--lora-register-forward-hook", "--lora-ckpt-filter",
              "--qlora-save-dequantize")
FEATURE_FLAGS = LORA_FLAGS
MINDSPEED_LORA_RANK = 16  # MindSpeed-LLM's --lora-r default


def read_feature_flags(fl: FlagSet, out: Collector, put: Put) -> None:
    """Every issue-11 flag of a Megatron/MindSpeed launch script."""
    _lora(fl, out, put)


def _lora(fl: FlagSet, out: Collector, put: Put) -> None:
    """MindSpeed-LLM turns LoRA on with a non-empty --lora-target-modules (linear_qkv linear_proj linear_fc1
    linear_fc2 …); --lora-alpha only scales the adapter output (no memory, no time)."""
    names = fl.values("--lora-target-modules")
    if not names:
        if fl.has("--qlora"):
            out.warn("W-LORA", "--qlora without --lora-target-modules: MindSpeed-LLM trains the full model")
        return
    targets, unknown = lora_targets_of(names)
    if unknown:
        out.warn("W-LORA-TARGET", f"--lora-target-modules {' '.join(unknown)}: not a module the estimator knows; "
                                  "not adapted")
    if not targets:
        return
    put("strategy.peft", "qlora" if fl.has("--qlora") else "lora", "--qlora" if fl.has("--qlora") else
        "--lora-target-modules")
    put("strategy.lora_targets", targets, "--lora-target-modules")
    rank = fl.int("--lora-r", minimum=1)
    if rank is None:
        out.assume("strategy.lora_rank", MINDSPEED_LORA_RANK, "MindSpeed-LLM's default --lora-r")
    else:
        put("strategy.lora_rank", rank, "--lora-r")
    dropout = fl.float("--lora-dropout")
    if dropout is None:
        out.assume("strategy.lora_dropout", 0.0, "MindSpeed-LLM builds its LoRA layers without dropout")
    else:
        put("strategy.lora_dropout", dropout, "--lora-dropout")


def feature_flag_edits(path: str, old: Strategy, new: Strategy, mla: bool) -> dict[str, Any]:
    """Flag -> new value (str), True (present) or None (absent) for every changed issue-11 field a launch script
    can state; a change it cannot state is refused (R-FW). ``mla``: the model's attention is MLA."""
    want: dict[str, Any] = {}
    if (old.peft, old.lora_rank, old.lora_targets) != (new.peft, new.lora_rank, new.lora_targets):
        want.update(_lora_edits(path, new, mla))
    if old.lora_dropout != new.lora_dropout:
        want["--lora-dropout"] = str(new.lora_dropout) if new.lora_dropout else None
    for name in ("lora_param_bytes", "qlora_double_quant"):
        if getattr(old, name) != getattr(new, name):
            raise refusal(f"a MindSpeed launch script cannot state strategy.{name} = {getattr(new, name)!r}", path)
    return want


def _lora_edits(path: str, new: Strategy, mla: bool) -> dict[str, Any]:
    if new.peft in (None, "none"):
        return {"--lora-target-modules": None, "--lora-r": None, "--qlora": None}
    names = []
    for target in new.lora_targets:
        name = MEGATRON_LORA_NAMES.get(target) if (mla or target != "q") else None
        if name is None:
            raise refusal(f"LoRA target {target!r}: Megatron fuses it into "
                          f"{'linear_qkv' if target in ('q', 'k', 'v') else 'linear_fc1'} (target that instead)",
                          path)
        names.append(name)
    return {"--lora-target-modules": " ".join(names), "--lora-r": str(new.lora_rank),
            "--qlora": True if new.peft == "qlora" else None}


__all__ = ["FEATURE_FLAGS", "feature_flag_edits", "read_feature_flags"]
