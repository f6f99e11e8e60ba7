"""MindSpeed-LLM / MindSpeed-MM launch scripts and MindSpeed-MM ``model.json`` (docs/model.md#frameworks). Launch
scripts that run Megatron-LM are read by ``megatron`` (``launch_dialect`` tells them apart).

One registered format, ``mindspeed``: ``read`` returns a Reading whose ``format`` is ``mindspeed_script`` (a
``pretrain_*.sh``/``finetune_*.sh``, role ``both`` when it carries shape flags) or ``mindspeed_model`` (a
MindSpeed-MM ``model.json``, role ``model``: its dimensions win over the script's shape flags). ``write``
rewrites only the flags, shell variables or JSON keys that define a changed strategy and refuses (R-FW)
what the format cannot express. Nothing in a script is ever executed.

The parts: ``mindspeed_flags`` (the flag and variable vocabulary), ``mindspeed_script`` (reading a script),
``mindspeed_script_write`` (writing one), ``mindspeed_model`` (model.json both ways); the shell subset is
evaluated by ``shell`` and the launch command's flags are read by ``launch_command``.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..inputs import read_text
from ..messages import msg
from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .launch_dialect import script_dialect
from .mindspeed_flags import MARKERS, MODEL
from .mindspeed_model import is_model_json, read_model_json, write_model_json
from .mindspeed_script import read_script
from .mindspeed_script_write import write_script
from .support import Reading

FORMAT = "mindspeed"


def launch_script_text(data: Any, path: str) -> str | None:
    """The text of a ``.sh`` file that runs Megatron-style flags, else None."""
    if data is not None or not str(path).endswith(".sh"):
        return None
    try:
        text = read_text(path)  # regular files only, bounded (docs/limits.md)
    except ConfigError:
        return None
    return text if any(marker in text for marker in MARKERS) else None


def accepts(data: Any, path: str) -> bool:
    """Any Megatron-style launch script (read as MindSpeed when ``--framework mindspeed`` says so) or a
    MindSpeed-MM model.json."""
    return is_model_json(data) if isinstance(data, dict) else launch_script_text(data, path) is not None


def detect(data: Any, path: str) -> bool:
    """A MindSpeed launch script (``launch_dialect`` decides against Megatron-LM) or a MindSpeed-MM model.json
    (objects with model_id)."""
    if isinstance(data, dict):
        return is_model_json(data)
    text = launch_script_text(data, path)
    return text is not None and script_dialect(text)[0] == "mindspeed"


def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    if isinstance(data, dict):
        return read_model_json(data, text, path)
    chosen, why = script_dialect(text)
    if chosen != "mindspeed":
        why = msg("dialect.read-as-asked", framework="MindSpeed-LLM", why=why)
    return read_script(text, path, devices, "mindspeed", why)


def write(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """New text of ``source`` for ``strategy``: only the flags, variables or keys of changed fields are touched;
    what MindSpeed cannot express is refused with a ConfigError naming R-FW."""
    if source.format == MODEL:
        return write_model_json(source, parsed, strategy)
    return write_script(source, parsed, strategy)


__all__ = ["FORMAT", "accepts", "detect", "launch_script_text", "read", "write"]
