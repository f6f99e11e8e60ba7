"""MindFormers ``base_config:`` includes (docs/model.md#frameworks): the named YAML files next to a config are merged
under it, nested mappings merged and everything else replaced, as MindFormers ``MindFormerConfig._file2dict`` does.

Includes are bounded (estimator/limits.py): at most MAX_INCLUDE_DEPTH levels, and at most MAX_INCLUDED_FILES
inclusions in all, counting a file again each time another path includes it (a diamond of 30 levels has 2^30
paths)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..limits import MAX_INCLUDE_DEPTH, MAX_INCLUDED_FILES
from ..messages import msg
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


def resolve_base(data: dict[str, Any], path: str, seen: tuple[str, ...] = (),
                 included: list[str] | None = None) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """(merged data, [(base path, its merged data)]) with ``base_config:`` files resolved next to ``path``.
    ``seen``: the includes above this file; ``included``: every inclusion so far (shared by the whole tree)."""
    if "base_config" not in data:
        return data, []
    included = [] if included is None else included
    if len(seen) >= MAX_INCLUDE_DEPTH:
        raise ConfigError(msg("mindformers_base.base_config-includes-nest", MAX_INCLUDE_DEPTH=MAX_INCLUDE_DEPTH,
                              name=' → '.join(Path(s).name for s in seen)),
                          path=path, key="base_config")
    raw = data["base_config"]
    names = raw if isinstance(raw, list) else [raw]
    merged_base: dict[str, Any] = {}
    bases: list[tuple[str, Any]] = []
    folder = Path(path).parent
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(msg("mindformers_base.base_config-must-name", raw=raw), path=path,
                              key="base_config")
        target = folder / name
        if not target.is_file():
            raise ConfigError(msg("mindformers_base.base_config-names-which", name=name, target=target), path=path,
                              key="base_config")
        resolved = str(target.resolve())
        if resolved in seen:
            raise ConfigError(msg("mindformers_base.base_config-includes-loop", name=name), path=path,
                              key="base_config")
        included.append(resolved)
        if len(included) > MAX_INCLUDED_FILES:
            raise ConfigError(msg("mindformers_base.base_config-includes-pull", MAX_INCLUDED_FILES=MAX_INCLUDED_FILES,
                                  n_set=len(set(included))), path=path, key="base_config")
        base_data = load_yaml(read_text(target), str(target))
        if not isinstance(base_data, dict):
            raise ConfigError(msg("mindformers_base.base_config-file-must"), path=str(target))
        sub, sub_bases = resolve_base(base_data, str(target), (*seen, resolved), included)
        merged_base.update(sub)
        bases.extend(sub_bases)
        bases.append((str(target), sub))
    own = {k: v for k, v in data.items() if k != "base_config"}
    return merge_into(own, merged_base), bases
