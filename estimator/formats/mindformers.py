"""MindFormers training YAML (mindspore-lab/mindformers): reader and writer (docs/model.md#frameworks).

Reading follows what MindFormers itself does with the file:

- values are the PyYAML (YAML 1.1) result, the way MindFormers loads them; ``base_config:`` includes are
  resolved from files next to the config and merged under it (``mindformers_base``);
- both model dialects are understood (``mindformers_model``): legacy (``num_layers``, ``num_heads``,
  ``n_kv_heads``, ``param_init_type``, a ``moe_config:`` block) and mcore (``num_hidden_layers``,
  ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``params_dtype``, MoE keys inside
  ``model_config``);
- the strategy is read as MindFormers applies it (``mindformers_read``): batch and accumulation, pipeline
  chunks and offsets, recompute lists and op patterns, the parallel optimizer, dtypes.

Every value carries a ``Provenance`` naming its key and the file that states it; defaults the reader chose are
``Reading.assumptions``. Where each setting lives is ``mindformers_schema``. Writing (``write``) lives in
``mindformers_write``: it patches only the strategy keys of the user's text.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..messages import msg
from .common import dig
from .known_keys import catalogue, check_sections
from .mindformers_base import resolve_base
from .mindformers_read import MindFormersReader
from .mindformers_schema import FORMAT, MC, comm_switch, llama_ffn, selective_switch
from .support import Reading


def detect(data: Any, path: str) -> bool:
    """A MindFormers config has ``model.model_config`` and/or the ``parallel_config`` / ``runner_config`` /
    ``recompute_config`` sections (HyperParallel YAML has ``train:`` and ``model.config_overrides``)."""
    if not isinstance(data, dict):
        return False
    if isinstance(dig(data, *MC), dict):
        return True
    if any(isinstance(data.get(k), dict) for k in ("parallel_config", "runner_config", "recompute_config")):
        return True
    if "base_config" in data:
        return True
    return isinstance(data.get("context"), dict) and "train" not in data and any(
        k in data for k in ("trainer", "run_mode", "use_parallel", "parallel"))


def read(text: str, path: str, data: Any, devices: int | None = None) -> Reading:
    """Canonical values with provenance from one MindFormers YAML (``data`` is its PyYAML load)."""
    if not isinstance(data, dict):
        raise ConfigError(msg("mindformers.mindformers-config-must"),
                          path=path)
    merged, bases = resolve_base(data, path)
    reader = MindFormersReader(text, path, merged, data, bases)
    reader.run(devices)
    reader.warnings.extend(check_sections(merged, catalogue(FORMAT), path, reader.origin))
    return reader.reading(FORMAT, reader.role(), text, path)


# comm_switch, llama_ffn and selective_switch are the schema's, exported here as the format's helpers
__all__ = ["FORMAT", "comm_switch", "detect", "llama_ffn", "read", "selective_switch"]
