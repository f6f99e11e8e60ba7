"""User device presets: YAML files of the same shape as ``estimator/presets/*.yaml`` in the user's config
directory (``estimator.userconfig``: ``$SAPP_CONFIG_DIR/presets`` or the app's config location; the CLI reads
the same folder).

``save_preset`` writes one from a Hardware record (typically the current device with an edited capacity);
``load_presets`` (estimator) lists them beside the shipped ones. The file functions are Qt-free.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from estimator.errors import ConfigError, SappError
from estimator.export import write_atomic
from estimator.hardware import Hardware, figures, hardware_from_mapping, shipped_presets
from estimator.inputs import load_yaml, read_text
from estimator.sources import Source
from estimator.units import MiB
from estimator.userconfig import register_user_kinds, user_config_dir, user_presets_dir
from estimator.userconfig import register_user_profiles as _register_profiles

from .document import tr
from .style import QT_TRANSLATE_NOOP

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


__all__ = ["preset_mapping", "register_user_profiles", "save_preset", "user_config_dir", "user_preset_ids",
           "user_presets_dir"]


def _number(value: float) -> Any:
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    return value


def preset_mapping(hw: Hardware, preset_id: str, name: str | None = None) -> dict[str, Any]:
    """The YAML mapping of a preset (the shape ``hardware_from_mapping`` reads)."""
    capacity = f"{hw.capacity / MiB:g}MiB"
    out: dict[str, Any] = {"id": preset_id, "name": name or preset_id, "aliases": [], "capacity": capacity}
    if hw.capacity_smi is not None:
        out["capacity_smi"] = f"{hw.capacity_smi / MiB:g}MiB"
    out["levels"] = [{"devices": _number(level.devices), "bandwidth": _number(level.bandwidth),
                      "latency": level.latency, "efficiency": level.efficiency, "name": level.name}
                     for level in hw.levels]
    out["peak_flops"] = {k: _number(v) for k, v in hw.peak_flops}
    out["eff_matmul"] = hw.eff_matmul
    out["hbm_bandwidth"] = _number(hw.hbm_bandwidth)
    out["eff_hbm"] = hw.eff_hbm
    out["host_link_bandwidth"] = _number(hw.host_link_bandwidth)
    if hw.host_ram_per_node is not None:
        out["host_ram_per_node"] = f"{hw.host_ram_per_node / MiB:g}MiB"
    if hw.efficiency_band:
        out["efficiency_band"] = {name: [low, high] for name, low, high in hw.efficiency_band}
    if hw.runtime_context:
        out["runtime_context"] = {k: f"{v / MiB:g}MiB" for k, v in hw.runtime_context}
    if hw.workspaces:
        out["workspaces"] = {k: f"{v / MiB:g}MiB" for k, v in hw.workspaces}
    out["comm_library"] = hw.comm_library
    if hw.nvlink_sharp:
        out["nvlink_sharp"] = True
    if hw.compute_capability is not None:
        out["compute_capability"] = hw.compute_capability
    # every figure keeps its source; one the user changed is the user's from now on
    sources = {s.id: s for s in hw.sources}
    provenance: dict[str, str] = {}
    for path in figures(hw):
        source = hw.source_of(path)
        if source.kind == "user":
            sources.setdefault("user", Source("user", "user", f"edited when {preset_id} was saved"))
            provenance[path] = "user"
        elif source.kind != "provisional":
            provenance[path] = source.id
    if sources:
        out["sources"] = [{k: v for k, v in s.to_dict().items() if v} for s in sources.values()]
    if provenance:
        out["provenance"] = provenance
    return out


def save_preset(folder: Path, hw: Hardware, preset_id: str, name: str | None = None) -> Path:
    """Write ``<folder>/<id>.yaml``; refuses ids that are not simple names or that shadow a shipped preset."""
    preset_id = preset_id.strip()
    if not _ID_RE.match(preset_id):
        raise ConfigError("a preset name uses letters, digits, '.', '_', '+' or '-' (up to 64 characters)",
                          key="hardware.device")
    shipped = {(p.id or "").lower() for p in shipped_presets()}
    if preset_id.lower() in shipped:
        raise ConfigError(f"{preset_id!r} is a shipped preset; choose another name", key="hardware.device")
    mapping = preset_mapping(hw, preset_id, name)
    path = folder / f"{preset_id}.yaml"
    hardware_from_mapping(mapping, str(path))  # the file must load back
    folder.mkdir(parents=True, exist_ok=True)
    header = "# SAPP Planner user device preset (same shape as estimator/presets/*.yaml)\n"
    write_atomic({str(path): header + yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)}, backup=True)
    return path


def user_preset_ids(folder: Path) -> set[str]:
    """Ids of the readable presets in ``folder`` (broken files are skipped here; the estimator reports them)."""
    ids: set[str] = set()
    if not folder.is_dir():
        return ids
    for path in folder.glob("*.yaml"):
        try:
            data = load_yaml(read_text(path), str(path))
        except SappError:  # bounded, regular files only (docs/limits.md)
            continue
        if isinstance(data, dict) and data.get("id"):
            ids.add(str(data["id"]).lower())
    return ids


def register_user_profiles(folder: Path) -> str:
    """Make the family profiles in ``folder`` (the user's edited copies, ``estimator.profiles.profile_yaml``
    shape), and the layer kinds in the ``kinds`` folder beside it, take part in every estimate; returns why
    they could not, or ""."""
    problem = _register_profiles(folder)
    if problem:
        return tr(QT_TRANSLATE_NOOP("Document", "user profiles ignored: {0}")).format(
            problem.removeprefix("user profiles ignored: "))
    # the user's layer kinds and slot overrides sit beside the profiles, as for the CLI
    problem = register_user_kinds(folder.parent / "kinds")
    if problem:
        return tr(QT_TRANSLATE_NOOP("Document", "user layer kinds ignored: {0}")).format(
            problem.removeprefix("user layer kinds ignored: "))
    return ""
