"""Hardware: device capacity, interconnect levels, compute rates, efficiencies with their band, host memory and
the device-level memory the runtime holds (docs/model.md#inputs-and-outputs, issues 10 and 11).

Shipped presets are YAML files in ``estimator/presets/``; user presets (YAML of the same shape) can be
loaded from any directory with ``load_presets(extra_dirs)``. Every figure names its source (``sources`` +
``provenance``, see ``estimator/sources.py``); a figure nobody vouches for is provisional and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from .data_cache import cached_files
from .errors import ConfigError
from .inputs import load_yaml, read_text
from .messages import msg, reason
from .records import Record
from .sources import Source, Vouch, read_sources, resolve_source
from .units import parse_size
from .yamlio import load_data

# Efficiencies that have a low–high band (issue 11): matmul and HBM absolute, comm a factor on every level's.
BAND_NAMES = ("matmul", "hbm", "comm")
# Runtime families whose context and library workspaces a preset states (frameworks map onto them).
RUNTIMES = ("pytorch", "mindspore")
_SHIPPED = Path(__file__).parent / "presets"  # importlib.resources: the same folder, ~5 ms of imports


def runtime_of(framework: str) -> str:
    """The runtime family a framework runs on: MindFormers on MindSpore, the others on PyTorch (torch_npu on
    Ascend)."""
    return "mindspore" if framework == "mindformers" else "pytorch"


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
    host_ram_per_node: float | None = None
    eff_attention: float | None = None  # attention-kernel efficiency (None: eff_matmul)
    # (name, low, high) per BAND_NAMES entry; an absent band is the nominal value on both sides
    efficiency_band: tuple[tuple[str, float, float], ...] = ()
    # per runtime family: memory outside the caching allocator (CUDA/CANN context, library handles), and the
    # library workspaces the allocator itself hands out (so they count as allocated: cuBLAS, ...)
    runtime_context: tuple[tuple[str, float], ...] = ()
    workspaces: tuple[tuple[str, float], ...] = ()
    comm_library: str = "nccl"   # the collective library whose buffer rules apply (nccl | hccl)
    nvlink_sharp: bool = False   # NVSwitch with NVLink SHARP: NCCL keeps NVLS buffers per communicator [D-NVLS]
    # CUDA compute capability (9.0 Hopper, 10.0 Blackwell): sizes Transformer Engine's cuBLASLt workspace and NCCL's
    # NVLS channels; None on devices without CUDA (Ascend)
    compute_capability: float | None = None
    sources: tuple[Source, ...] = ()
    provenance: tuple[Vouch, ...] = ()

    _nested: ClassVar = {"levels": Level, "sources": Source, "provenance": Vouch}

    @property
    def devices_per_node(self) -> int:
        if not self.levels or math.isinf(self.levels[0].devices):
            return 8
        return int(self.levels[0].devices)

    def flops(self, dtype_bytes: float) -> float:
        return self.mfu_peak(dtype_bytes)[1]

    def mfu_peak(self, dtype_bytes: float) -> tuple[str, float]:
        """(precision, dense peak FLOP/s) that MFU and the bf16 GEMM time divide by for compute at ``dtype_bytes``:
        fp32 at 4 B where the preset states it, else bf16 — also for FP8 plans (P-MFU-PEAK)."""
        table = dict(self.peak_flops)
        if dtype_bytes >= 4 and table.get("fp32"):
            return "fp32", float(table["fp32"])
        return "bf16", float(table.get("bf16") or 0.0)

    def peak(self, precision: str) -> float | None:
        """Dense peak FLOP/s of ``precision`` (bf16, fp16, fp8, mxfp8, fp32, tf32), or None when the device has
        no such matmul path (fp8 on Ascend A2/A3, mxfp8 before Blackwell)."""
        return dict(self.peak_flops).get(precision)

    def band(self, name: str) -> tuple[float, float]:
        """(low, high) of an efficiency band; matmul and hbm are absolute, comm a factor on level efficiency."""
        for key, low, high in self.efficiency_band:
            if key == name:
                return low, high
        nominal = {"matmul": self.eff_matmul, "hbm": self.eff_hbm, "comm": 1.0}[name]
        return nominal, nominal

    def at_band(self, end: str) -> Hardware:
        """The device at one end ("low" or "high") of its efficiency bands: matmul and HBM efficiencies set to that
        end, each link level's efficiency scaled by the comm factor (at most 1)."""
        index = {"low": 0, "high": 1}[end]
        comm = self.band("comm")[index]
        levels = tuple(replace(lv, efficiency=min(1.0, lv.efficiency * comm)) for lv in self.levels)
        return replace(self, eff_matmul=self.band("matmul")[index], eff_hbm=self.band("hbm")[index], levels=levels)

    @property
    def has_band(self) -> bool:
        return any(low != high for _, low, high in self.efficiency_band)

    def context_bytes(self, runtime: str) -> float | None:
        return dict(self.runtime_context).get(runtime)

    def workspace_bytes(self, runtime: str) -> float | None:
        return dict(self.workspaces).get(runtime)

    def source_of(self, path: str) -> Source:
        """Where figure ``path`` (``capacity``, ``peak_flops.fp8``, ``levels[1].bandwidth``, ...) comes from."""
        return resolve_source(self.sources, self.provenance, path, figures(self).get(path))

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["peak_flops"] = dict(self.peak_flops)
        out["efficiency_band"] = {k: [lo, hi] for k, lo, hi in self.efficiency_band}
        out["runtime_context"] = dict(self.runtime_context)
        out["workspaces"] = dict(self.workspaces)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hardware:
        data = dict(data)
        if isinstance(data.get("peak_flops"), dict):
            data["peak_flops"] = tuple((str(k), float(v)) for k, v in data["peak_flops"].items())
        if isinstance(data.get("efficiency_band"), dict):
            data["efficiency_band"] = tuple((str(k), float(v[0]), float(v[1]))
                                            for k, v in data["efficiency_band"].items())
        for key in ("runtime_context", "workspaces"):
            if isinstance(data.get(key), dict):
                data[key] = tuple((str(k), float(v)) for k, v in data[key].items())
        return super().from_dict(data)


def figures(hw: Hardware) -> dict[str, float]:
    """Every number of a preset by its dotted path (the keys ``provenance`` may name)."""
    out: dict[str, float] = {"capacity": hw.capacity, "eff_matmul": hw.eff_matmul, "hbm_bandwidth": hw.hbm_bandwidth,
                             "eff_hbm": hw.eff_hbm, "host_link_bandwidth": hw.host_link_bandwidth}
    if hw.capacity_smi is not None:
        out["capacity_smi"] = hw.capacity_smi
    if hw.host_ram_per_node is not None:
        out["host_ram_per_node"] = hw.host_ram_per_node
    if hw.compute_capability is not None:
        out["compute_capability"] = hw.compute_capability
    for i, level in enumerate(hw.levels):
        for name in ("devices", "bandwidth", "latency", "efficiency"):
            out[f"levels[{i}].{name}"] = getattr(level, name)
    for key, value in hw.peak_flops:
        out[f"peak_flops.{key}"] = value
    for key, low, high in hw.efficiency_band:
        out[f"efficiency_band.{key}.low"] = low
        out[f"efficiency_band.{key}.high"] = high
    for key, value in hw.runtime_context:
        out[f"runtime_context.{key}"] = value
    for key, value in hw.workspaces:
        out[f"workspaces.{key}"] = value
    return out


def _number(value: Any, where: str, key: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(msg("fields.expected-number-got", value=value), path=where, key=key)
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity", ".inf"):
        return math.inf
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(msg("fields.expected-number-got", value=value), path=where, key=key) from None


PRESET_KEYS = ("id", "name", "aliases", "capacity", "capacity_smi", "levels", "peak_flops", "eff_matmul",
               "hbm_bandwidth", "eff_hbm", "host_link_bandwidth", "host_ram_per_node", "efficiency_band",
               "runtime_context", "workspaces", "comm_library", "nvlink_sharp", "sources", "provenance",
               "eff_attention", "compute_capability")


def _size(data: dict[str, Any], key: str, where: str) -> float | None:
    if data.get(key) is None:
        return None
    try:
        return parse_size(data[key])
    except ValueError as exc:
        raise ConfigError(reason(exc), path=where, key=key) from None


def _per_runtime(data: dict[str, Any], key: str, where: str) -> tuple[tuple[str, float], ...]:
    table = data.get(key) or {}
    if not isinstance(table, dict):
        raise ConfigError(msg("hardware.must-map-runtime", key=key, RUNTIMES=', '.join(RUNTIMES)), path=where, key=key)
    out = []
    for runtime in table:
        if runtime not in RUNTIMES:
            raise ConfigError(msg("hardware.unknown-runtime-one", runtime=runtime, RUNTIMES=', '.join(RUNTIMES)),
                              path=where,
                              key=f"{key}.{runtime}")
        size = _size(table, runtime, where)
        assert size is not None
        out.append((str(runtime), size))
    return tuple(out)


def _bands(data: dict[str, Any], where: str, nominal: dict[str, float]) -> tuple[tuple[str, float, float], ...]:
    table = data.get("efficiency_band") or {}
    if not isinstance(table, dict):
        raise ConfigError(msg("hardware.efficiency_band-must-map"), path=where,
                          key="efficiency_band")
    out = []
    for name, pair in table.items():
        key = f"efficiency_band.{name}"
        if name not in BAND_NAMES:
            raise ConfigError(msg("hardware.unknown-efficiency-band", name=name, BAND_NAMES=', '.join(BAND_NAMES)),
                              path=where,
                              key=key)
        if not isinstance(pair, list) or len(pair) != 2:
            raise ConfigError(msg("hardware.band-low-high"), path=where, key=key)
        low, high = _number(pair[0], where, key), _number(pair[1], where, key)
        if not 0 < low <= nominal[name] <= high:
            raise ConfigError(msg("hardware.band-must-satisfy", low=low, high=high, nominal=nominal[name]),
                              path=where, key=key)
        out.append((str(name), low, high))
    return tuple(out)


def _vouches(data: dict[str, Any], where: str, hw: Hardware) -> tuple[Vouch, ...]:
    """``provenance: {path: source id}``; a group path (``peak_flops``, ``levels``) vouches for each figure under
    it, each vouch remembering the value it describes."""
    table = data.get("provenance") or {}
    if not isinstance(table, dict):
        raise ConfigError(msg("hardware.provenance-must-map"), path=where,
                          key="provenance")
    known = {s.id for s in hw.sources} | {"provisional"}
    values = figures(hw)
    out: dict[str, Vouch] = {}
    # groups first, so a leaf's own entry wins over its group's
    for path, source in sorted(table.items(), key=lambda kv: kv[0].count(".") + kv[0].count("[")):
        if source not in known:
            raise ConfigError(msg("hardware.provenance-names-unknown", source=source, known=', '.join(sorted(known))),
                              path=where, key=f"provenance.{path}")
        leaves = [p for p in values if p == path or p.startswith(path + ".") or p.startswith(path + "[")]
        if not leaves:
            raise ConfigError(msg("hardware.provenance-names-which", path=path), path=where,
                              key=f"provenance.{path}")
        for leaf in leaves:
            out[leaf] = Vouch(leaf, str(source), values[leaf])
    return tuple(out.values())


def _library(data: dict[str, Any], where: str) -> str:
    library = str(data.get("comm_library", "nccl")).lower()
    if library not in ("nccl", "hccl"):
        raise ConfigError(msg("hardware.comm_library-nccl-hccl", library=library), path=where, key="comm_library")
    return library


def _nvlink_sharp(data: dict[str, Any], where: str) -> bool:
    value = data.get("nvlink_sharp", False)
    if not isinstance(value, bool):
        raise ConfigError(msg("hardware.nvlink_sharp-bool", value=value), path=where, key="nvlink_sharp")
    return value


def hardware_from_mapping(data: dict[str, Any], where: str) -> Hardware:
    """Build a Hardware record from a preset mapping (as written in the YAML files)."""
    if not isinstance(data, dict):
        raise ConfigError(msg("hardware.device-preset-must"), path=where)
    for required in ("id", "capacity"):
        if required not in data:
            raise ConfigError(msg("hardware.device-preset-needs", required=required), path=where, key=required)
    unknown = sorted(set(data) - set(PRESET_KEYS))
    if unknown:
        raise ConfigError(msg("hardware.unknown-device-preset-2", map=', '.join(map(str, unknown)),
                              PRESET_KEYS=', '.join(PRESET_KEYS)), path=where, key=str(unknown[0]))
    capacity = _size(data, "capacity", where)
    assert capacity is not None
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
    eff_matmul = _number(data.get("eff_matmul", 0.5), where, "eff_matmul")
    eff_hbm = _number(data.get("eff_hbm", 0.8), where, "eff_hbm")
    hw = Hardware(
        id=str(data["id"]),
        name=str(data.get("name", data["id"])),
        aliases=tuple(str(a) for a in data.get("aliases") or ()),
        capacity=capacity,
        capacity_smi=_size(data, "capacity_smi", where),
        levels=tuple(levels),
        peak_flops=flops,
        eff_matmul=eff_matmul,
        hbm_bandwidth=_number(data.get("hbm_bandwidth", 1.6e12), where, "hbm_bandwidth"),
        eff_hbm=eff_hbm,
        host_link_bandwidth=_number(data.get("host_link_bandwidth", 16e9), where, "host_link_bandwidth"),
        host_ram_per_node=_size(data, "host_ram_per_node", where),
        eff_attention=_number(data["eff_attention"], where, "eff_attention") if data.get("eff_attention") is not None
        else None,
        efficiency_band=_bands(data, where, {"matmul": eff_matmul, "hbm": eff_hbm, "comm": 1.0}),
        runtime_context=_per_runtime(data, "runtime_context", where),
        workspaces=_per_runtime(data, "workspaces", where),
        comm_library=_library(data, where),
        nvlink_sharp=_nvlink_sharp(data, where),
        compute_capability=_number(data["compute_capability"], where, "compute_capability")
        if data.get("compute_capability") is not None else None,
        sources=read_sources(data.get("sources"), where),
    )
    return hw.replace(provenance=_vouches(data, where, hw))


@cache
def shipped_presets() -> tuple[Hardware, ...]:
    files = sorted((e for e in _SHIPPED.iterdir() if e.name.endswith(".yaml")), key=lambda e: e.name)
    docs = cached_files("presets", files, lambda path: load_data(path.read_text(encoding="utf-8")))
    return tuple(hardware_from_mapping(doc, f"estimator/presets/{path.name}")
                 for path, doc in zip(files, docs, strict=True))


def load_presets(extra_dirs: tuple[Path, ...] = ()) -> tuple[Hardware, ...]:
    """Shipped presets followed by user presets found in ``extra_dirs`` (a user preset with the id of a
    shipped one replaces it)."""
    by_id = {p.id.lower(): p for p in shipped_presets() if p.id}
    for folder in extra_dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")):
            data = load_yaml(read_text(path), str(path))  # bounded, regular files only (docs/limits.md)
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
    raise ConfigError(msg("hardware.unknown-device-preset", name=name, known=known), key="hardware.device")
