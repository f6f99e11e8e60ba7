"""MindSpeed-LLM / MindSpeed-MM launch scripts and MindSpeed-MM ``model.json`` (docs/model.md#frameworks).

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

from pathlib import Path
from typing import Any

from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .mindspeed_flags import MARKERS, MODEL
from .mindspeed_model import is_model_json, read_model_json, write_model_json
from .mindspeed_script import read_script
from .mindspeed_script_write import write_script
from .support import Reading

FORMAT = "mindspeed"


def detect(data: Any, path: str) -> bool:
    """A launch script (``.sh`` with Megatron flags) or a MindSpeed-MM model.json (objects with model_id)."""
    if isinstance(data, dict):
        return is_model_json(data)
    if data is None and str(path).endswith(".sh"):
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        return any(marker in text for marker in MARKERS)
    return False


def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    if isinstance(data, dict):
        return read_model_json(data, text, path)
    return read_script(text, path, devices)


def write(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """New text of ``source`` for ``strategy``: only the flags, variables or keys of changed fields are touched;
    what MindSpeed cannot express is refused with a ConfigError naming R-FW."""
    if source.format == MODEL:
        return write_model_json(source, parsed, strategy)
    return write_script(source, parsed, strategy)


__all__ = ["FORMAT", "detect", "read", "write"]
