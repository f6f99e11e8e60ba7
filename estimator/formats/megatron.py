"""Megatron-LM launch scripts and Megatron-LM recipe YAMLs (docs/model.md#frameworks).

One registered format, ``megatron``: ``read`` returns a Reading whose ``format`` is ``megatron_script`` (a bash
launch script running Megatron-LM's ``pretrain_gpt.py``; ``launch_dialect`` tells it from a MindSpeed script) or
``megatron_recipe`` (a YAML holding Megatron arguments under ``ARGS:``, as ``examples/moe_recipes`` does:
underscored names, ``true`` for switches). Both are priced by the same argument readers as MindSpeed scripts
(``megatron_model_args``, ``megatron_strategy_args``) with Megatron-LM's defaults. ``write`` rewrites only the
flags, shell variables or YAML keys of a changed strategy and refuses (R-FW) what Megatron cannot express.
Nothing in a script is ever executed.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import ConfigError
from ..messages import msg
from .flag_source import ArgsMapping
from .launch_dialect import script_dialect
from .megatron_model_args import read_model
from .megatron_strategy_args import READ_FLAGS, read_strategy
from .megatron_vocab import flag_warnings, read_dataloader_mask
from .mindspeed import launch_script_text
from .mindspeed_flags import MEGATRON_RECIPE
from .mindspeed_script import read_script
from .support import Collector, Reading

FORMAT = "megatron"
ARGS = "ARGS"
# keys that mark an ARGS mapping as Megatron arguments
_ARG_MARKERS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "num_layers", "micro_batch_size",
                "global_batch_size", "hidden_size")


def is_recipe(data: Any) -> bool:
    args = data.get(ARGS) if isinstance(data, dict) else None
    return isinstance(args, dict) and sum(1 for k in _ARG_MARKERS if k in args) >= 2


def accepts(data: Any, path: str) -> bool:
    """Any Megatron-style launch script (read as Megatron-LM when ``--framework megatron`` says so) or a recipe."""
    return is_recipe(data) or launch_script_text(data, path) is not None


def detect(data: Any, path: str) -> bool:
    """A Megatron-LM launch script (``launch_dialect`` decides against MindSpeed) or a Megatron-LM recipe YAML."""
    if is_recipe(data):
        return True
    text = launch_script_text(data, path)
    return text is not None and script_dialect(text)[0] == "megatron"


def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    if is_recipe(data):
        return read_recipe(text, path, data, devices)
    chosen, why = script_dialect(text)
    if chosen != "megatron":
        why = msg("dialect.read-as-asked", framework="Megatron-LM", why=why)
    return read_script(text, path, devices, "megatron", why)


def read_recipe(text: str, path: str, data: dict[str, Any], devices: int | None) -> Reading:
    """A Megatron-LM recipe YAML: the arguments under ``ARGS:`` (the world size comes from ``--devices``)."""
    fl = ArgsMapping(data[ARGS], path, ARGS)
    if devices is None:
        named = re.search(r"(\d+)\s*GPUs?", path, re.IGNORECASE)
        raise ConfigError(msg("megatron.recipe-devices.named", named=named.group(0)) if named else
                          msg("megatron.recipe-devices"), path=path, key=ARGS)
    out = Collector(path)
    out.assume("options.framework", "megatron", msg("megatron.megatron-lm-recipe"))
    read_model(fl, out, "megatron", "pretrain_gpt.py")  # the recipes run pretrain_gpt.py
    read_strategy(fl, out, devices, "--devices", "megatron")
    out.warnings.extend(flag_warnings(fl, READ_FLAGS, "megatron"))
    read_dataloader_mask(fl, out, "megatron")
    role = "both" if any(k.startswith("model.") for k in out.values) else "strategy"
    return out.reading(MEGATRON_RECIPE, role, text, path)


__all__ = ["FORMAT", "MEGATRON_RECIPE", "accepts", "detect", "is_recipe", "read", "read_recipe"]
