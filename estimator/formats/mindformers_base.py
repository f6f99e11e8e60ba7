"""MindFormers ``base_config:`` includes (spec §11.1): the named YAML files next to a config are merged under it,
nested mappings merged and everything else replaced, as MindFormers ``MindFormerConfig._file2dict`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .common import load_yaml, read_text


def merge_into(top: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """``top`` merged over ``base`` (nested mappings merged, everything else replaced), as MindFormers does."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_into(value, out[key])
        else:
            out[key] = value
    return out


def resolve_base(data: dict[str, Any], path: str, seen: tuple[str, ...] = ()) -> tuple[dict[str, Any],
                                                                                         list[tuple[str, Any]]]:
    """(merged data, [(base path, its merged data)]) with ``base_config:`` files resolved next to ``path``."""
    if "base_config" not in data:
        return data, []
    raw = data["base_config"]
    names = raw if isinstance(raw, list) else [raw]
    merged_base: dict[str, Any] = {}
    bases: list[tuple[str, Any]] = []
    folder = Path(path).parent
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"base_config must name one YAML file or a list of them; got {raw!r}", path=path,
                              key="base_config")
        target = folder / name
        if not target.is_file():
            raise ConfigError(f"base_config names {name!r}, which is not next to this file (looked for {target}); "
                              "MindFormers merges that file under this one and its values are needed — put it "
                              "there, or remove base_config and state its keys in this file", path=path,
                              key="base_config")
        resolved = str(target.resolve())
        if resolved in seen:
            raise ConfigError(f"base_config includes loop back to {name!r}", path=path, key="base_config")
        base_data = load_yaml(read_text(target), str(target))
        if not isinstance(base_data, dict):
            raise ConfigError("a base_config file must be a mapping of sections", path=str(target))
        sub, sub_bases = resolve_base(base_data, str(target), (*seen, resolved))
        merged_base.update(sub)
        bases.extend(sub_bases)
        bases.append((str(target), sub))
    own = {k: v for k, v in data.items() if k != "base_config"}
    return merge_into(own, merged_base), bases
