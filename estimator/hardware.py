"""Hardware: device capacity, interconnect levels and compute rates (spec §2.5).

Shipped presets are YAML files in ``estimator/presets/``; user presets (YAML of the same shape) can be
loaded from any directory with ``load_presets(extra_dirs)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import yaml

from .errors import ConfigError
from .records import Record
from .units import parse_size
from .yamlio import load_data


@dataclass(frozen=True)
class Level(Record):
    """One interconnect level: groups up to ``devices`` ranks talk at ``bandwidth`` bytes/s per device."""

    devices: float
    bandwidth: float
    latency: float = 10e-6
    efficiency: float = 0.7
    name: str = ""


@dataclass(frozen=True)
class Hardware(Record):
    name: str
    capacity: float
    levels: tuple[Level, ...] = ()
    peak_flops: tuple[tuple[str, float], ...] = ()
    eff_matmul: float = 0.5
    hbm_bandwidth: float = 1.6e12
    eff_hbm: float = 0.8
    host_link_bandwidth: float = 16e9
    capacity_smi: float | None = None
    id: str | None = None
    aliases: tuple[str, ...] = field(default=())

    _nested: ClassVar = {"levels": Level}

    @property
    def devices_per_node(self) -> int:
        if not self.levels or math.isinf(self.levels[0].devices):
            return 8
        return int(self.levels[0].devices)

    def flops(self, dtype_bytes: float) -> float:
        table = dict(self.peak_flops)
        key = "fp32" if dtype_bytes >= 4 else "bf16"
        return table.get(key) or table.get("bf16") or 0.0

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["peak_flops"] = dict(self.peak_flops)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hardware:
        data = dict(data)
        if isinstance(data.get("peak_flops"), dict):
            data["peak_flops"] = tuple((str(k), float(v)) for k, v in data["peak_flops"].items())
        return super().from_dict(data)


def _number(value: Any, where: str, key: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"expected a number, got {value!r}", path=where, key=key)
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity", ".inf"):
        return math.inf
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"expected a number, got {value!r}", path=where, key=key) from None


def hardware_from_mapping(data: dict[str, Any], where: str) -> Hardware:
    """Build a Hardware record from a preset mapping (as written in the YAML files)."""
    if not isinstance(data, dict):
        raise ConfigError("a device preset must be a mapping", path=where)
    for required in ("id", "capacity"):
        if required not in data:
            raise ConfigError(f"device preset needs '{required}'", path=where, key=required)
    try:
        capacity = parse_size(data["capacity"])
        smi = parse_size(data["capacity_smi"]) if data.get("capacity_smi") is not None else None
    except ValueError as exc:
        raise ConfigError(str(exc), path=where, key="capacity") from None
    levels = []
    for i, level in enumerate(data.get("levels") or []):
        key = f"levels[{i}]"
        levels.append(Level(
            devices=_number(level.get("devices"), where, key + ".devices"),
            bandwidth=_number(level.get("bandwidth"), where, key + ".bandwidth"),
            latency=_number(level.get("latency", 10e-6), where, key + ".latency"),
            efficiency=_number(level.get("efficiency", 0.7), where, key + ".efficiency"),
            name=str(level.get("name", "")),
        ))
    if levels and not math.isinf(levels[-1].devices):
        levels.append(Level(math.inf, levels[-1].bandwidth, levels[-1].latency, levels[-1].efficiency))
    flops = tuple((str(k), _number(v, where, f"peak_flops.{k}"))
                  for k, v in (data.get("peak_flops") or {}).items())
    return Hardware(
        id=str(data["id"]),
        name=str(data.get("name", data["id"])),
        aliases=tuple(str(a) for a in data.get("aliases") or ()),
        capacity=capacity,
        capacity_smi=smi,
        levels=tuple(levels),
        peak_flops=flops,
        eff_matmul=_number(data.get("eff_matmul", 0.5), where, "eff_matmul"),
        hbm_bandwidth=_number(data.get("hbm_bandwidth", 1.6e12), where, "hbm_bandwidth"),
        eff_hbm=_number(data.get("eff_hbm", 0.8), where, "eff_hbm"),
        host_link_bandwidth=_number(data.get("host_link_bandwidth", 16e9), where, "host_link_bandwidth"),
    )


@cache
def shipped_presets() -> tuple[Hardware, ...]:
    folder = resources.files("estimator") / "presets"
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            out.append(hardware_from_mapping(load_data(entry.read_text(encoding="utf-8")),
                                             f"estimator/presets/{entry.name}"))
    return tuple(out)


def load_presets(extra_dirs: tuple[Path, ...] = ()) -> tuple[Hardware, ...]:
    """Shipped presets followed by user presets found in ``extra_dirs`` (a user preset with the id of a
    shipped one replaces it)."""
    by_id = {p.id.lower(): p for p in shipped_presets() if p.id}
    for folder in extra_dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                raise ConfigError(f"malformed YAML: {getattr(exc, 'problem', exc)}", path=str(path),
                                  line=mark.line + 1 if mark else None,
                                  column=mark.column + 1 if mark else None) from None
            preset = hardware_from_mapping(data, str(path))
            by_id[preset.id.lower()] = preset  # type: ignore[union-attr]
    return tuple(by_id.values())


def find_preset(name: str, presets: tuple[Hardware, ...] | None = None) -> Hardware:
    """Look a preset up by id or alias, case-insensitively."""
    presets = presets or shipped_presets()
    wanted = name.strip().lower()
    for preset in presets:
        if (preset.id or "").lower() == wanted or wanted in (a.lower() for a in preset.aliases):
            return preset
    known = ", ".join(p.id or p.name for p in presets)
    raise ConfigError(f"unknown device preset {name!r}; known presets: {known}", key="hardware.device")
