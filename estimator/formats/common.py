"""What the format readers share: bounded loading of config text (``estimator/inputs.py``: regular files up to
a size limit, YAML/JSON/TOML within their nesting, digit and alias bounds, errors at file:line:column) and
small helpers for reading nested mappings."""

from __future__ import annotations

from typing import Any

from ..inputs import file_kind, load_json, load_toml, load_yaml, read_text, yaml_error

_ABSENT = object()


def dig(data: Any, *keys: str, default: Any = None) -> Any:
    """data[k1][k2]… or ``default`` when any level is missing or not a mapping."""
    cur = data
    for key in keys:
        if not isinstance(cur, dict) or key not in cur:
            return default
        cur = cur[key]
    return cur


def has_key(data: Any, *keys: str) -> bool:
    """Whether data[k1][k2]… exists (its value may be null)."""
    return dig(data, *keys, default=_ABSENT) is not _ABSENT


__all__ = ["dig", "file_kind", "has_key", "load_json", "load_toml", "load_yaml", "read_text", "yaml_error"]
