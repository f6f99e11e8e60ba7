"""Writing a chosen strategy back into the user's own files (docs/model.md#inputs-and-outputs ``export``,
docs/model.md#frameworks).

``export(parsed, strategy)`` returns the new text of every source file it changes (the caller writes them
all-or-none with ``write_atomic``, estimator/atomic.py); format modules in ``estimator/formats/`` provide
``write``.
"""

from __future__ import annotations

import importlib

from .atomic import write_atomic
from .errors import ConfigError
from .messages import msg
from .parsed import ParsedConfig, SourceFile
from .strategy import Strategy

MODEL_WITH_LAYOUT = ("mindspeed_model",)
# format → (writer module, its function): a writer builds on its reader, never the other way round
WRITER_MODULES = {"mindformers": ("mindformers_write", "write_strategy"), "mindspeed_script": ("mindspeed", "write"),
                  "mindspeed_model": ("mindspeed", "write"),
                  "megatron_script": ("mindspeed_script_write", "write_script"),
                  "megatron_recipe": ("megatron_recipe_write", "write_recipe"),
                  "torchtitan": ("torchtitan_write", "write_toml"),
                  "hyperparallel": ("hyperparallel_write", "write_yaml"), "plan": ("plan_writer", "write"),
                  "deepspeed": ("deepspeed_write", "write_json"), "llamafactory": ("llamafactory_write", "write_yaml"),
                  "torchtitan_py": ("torchtitan_py", "write"),
                  "megatron_bridge": ("megatron_bridge_write", "write_bridge"),
                  "megatron_bridge_py": ("megatron_bridge_write", "write_bridge")}


def _writer(fmt: str):
    module_name, function = WRITER_MODULES.get(fmt, (None, None))
    if module_name is None:
        return None
    try:
        module = importlib.import_module(f"estimator.formats.{module_name}")
    except ModuleNotFoundError:
        return None
    return getattr(module, function, None)


def export(parsed: ParsedConfig, strategy: Strategy | None = None) -> dict[str, str]:
    """New text per changed source file. Model sources are rewritten only when their format states part of
    the strategy (a MindSpeed-MM model.json's layer lists); a config.json never is."""
    strategy = strategy or parsed.strategy
    out: dict[str, str] = {}
    writable = [s for s in parsed.sources if s.role in ("strategy", "both") or s.format in MODEL_WITH_LAYOUT]
    if not writable:
        raise ConfigError(msg("export.nothing-export-strategy"))
    for source in writable:
        write = _writer(source.format)
        if write is None:
            raise ConfigError(msg("export.writing-files-supported", format=source.format), path=source.path)
        new_text = write(source, parsed, strategy)
        if new_text != source.text:
            out[source.path] = new_text
    return out


__all__ = ["SourceFile", "export", "write_atomic"]
