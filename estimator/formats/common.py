"""Safe loading of config text with precise error locations (file, line, column).

YAML is read the way the frameworks read it: PyYAML's safe loader (YAML 1.1: ``yes``/``off`` are booleans,
``1e-5`` is a string), which never constructs objects from tags.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError

_ABSENT = object()


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", path=str(path)) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a config file", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=str(path)) from None


def load_yaml(text: str, path: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path) from None
    except RecursionError:
        raise ConfigError("malformed YAML: nesting too deep", path=path) from None


def yaml_error(exc: yaml.YAMLError, path: str) -> ConfigError:
    """The ConfigError for a PyYAML error, at the line and column PyYAML marks."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        return ConfigError(f"malformed YAML: {problem}", path=path, line=mark.line + 1 if mark else None,
                           column=mark.column + 1 if mark else None)
    return ConfigError(f"malformed YAML: {exc}", path=path)


def load_json(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"malformed JSON: {exc.msg}", path=path, line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise ConfigError("malformed JSON: nesting too deep", path=path) from None


def load_toml(text: str, path: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        col = getattr(exc, "colno", None)
        msg = getattr(exc, "msg", None) or str(exc)
        if line is None:  # Python 3.11 puts the location only into the message: "… (at line 7, column 11)"
            match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", msg)
            if match:
                line, col = int(match.group(1)), int(match.group(2))
                msg = msg[: match.start()]
        raise ConfigError(f"malformed TOML: {msg}", path=path, line=line, column=col) from None


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
