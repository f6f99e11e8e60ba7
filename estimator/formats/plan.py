"""Plan files: YAML or JSON with ``model:``, ``strategy:``, ``hardware:`` and ``options:`` sections using the
canonical field names (DECISION D54)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..fields import SECTIONS, coerce, lookup
from ..messages import msg
from ..parsed import Provenance
from .common import load_json, load_yaml


def looks_like_plan(data: Any) -> bool:
    return isinstance(data, dict) and bool(data) and set(data) <= set(SECTIONS) and (
        "strategy" in data or "options" in data)


def read_plan(text: str, path: str) -> tuple[dict[str, Any], dict[str, Provenance]]:
    data = load_json(text, path) if path.endswith(".json") else load_yaml(text, path)
    if not isinstance(data, dict):
        raise ConfigError(msg("plan.plan-file-must"), path=path)
    values: dict[str, Any] = {}
    provenance: dict[str, Provenance] = {}
    for section, body in data.items():
        if section not in SECTIONS:
            raise ConfigError(msg("plan.unknown-section-plan", section=section, SECTIONS=', '.join(SECTIONS)),
                              path=path,
                              key=str(section))
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ConfigError(msg("plan.section-must-mapping", section=section), path=path, key=section)
        for name, raw in body.items():
            info = lookup(f"{section}.{name}", path)
            values[info.qualified] = coerce(info, raw, path)
            provenance[info.qualified] = Provenance("file", path=path, key=f"{section}.{name}", raw=raw)
    return values, provenance
