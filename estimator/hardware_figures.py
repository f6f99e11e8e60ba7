"""The device figures a user should be able to check, each with its value in people's units and its source:
one list that the CLI table, the JSON, the HTML/Markdown report and the app's Hardware form all show."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .hardware import Hardware
from .sources import Source
from .units import GiB, MiB


@dataclass(frozen=True)
class Figure:
    path: str       # the preset path (``peak_flops.fp8``), also the key provenance names
    label: str      # what it is, for people
    value: float
    text: str       # the value with its unit
    source: Source
    band: tuple[float, float] | None = None  # an efficiency's low–high band
    per_device: bool = False                 # a link bandwidth, per device and direction

    @property
    def full_text(self) -> str:
        """The value as the CLI and the report print it (band and 'per device' spelled out)."""
        out = self.text + (" per device" if self.per_device else "")
        if self.band is not None:
            out += f" (band {self.band[0]:.2f}–{self.band[1]:.2f})"
        return out


def _rate(value: float) -> str:
    return f"{value / 1e12:,.1f} TFLOP/s"


def _bandwidth(value: float) -> str:
    return f"{value / 1e12:,.2f} TB/s" if value >= 1e12 else f"{value / 1e9:,.0f} GB/s"


def _size(value: float) -> str:
    if value >= 1024 * GiB:
        return f"{value / (1024 * GiB):,.2f} TiB"
    return f"{value / GiB:,.2f} GiB" if value >= GiB else f"{value / MiB:,.0f} MiB"


def device_figures(hw: Hardware, runtime: str | None = None) -> list[Figure]:
    """Capacity, peak FLOP/s per precision, HBM and link bandwidths, host link and RAM, efficiencies with their
    band, and (for ``runtime``) the runtime context and library workspaces."""
    out: list[Figure] = []

    def add(path: str, label: str, value: float | None, text: str, band: tuple[float, float] | None = None,
            per_device: bool = False) -> None:
        if value is not None:
            out.append(Figure(path, label, value, text, hw.source_of(path), band, per_device))

    add("capacity", "device memory", hw.capacity, _size(hw.capacity))
    for precision, value in hw.peak_flops:
        if precision in ("bf16", "fp8", "mxfp8", "fp32"):
            add(f"peak_flops.{precision}", f"peak {precision}", value, _rate(value))
    add("hbm_bandwidth", "HBM bandwidth", hw.hbm_bandwidth, _bandwidth(hw.hbm_bandwidth))
    for i, level in enumerate(hw.levels):
        if math.isinf(level.devices) and i and hw.levels[i - 1].bandwidth == level.bandwidth:
            continue  # the implicit last level repeating the one before
        reach = "beyond" if math.isinf(level.devices) else f"up to {int(level.devices)} devices"
        add(f"levels[{i}].bandwidth", f"{level.name or 'link'} ({reach})", level.bandwidth,
            _bandwidth(level.bandwidth), per_device=True)
    add("host_link_bandwidth", "host link", hw.host_link_bandwidth, _bandwidth(hw.host_link_bandwidth))
    add("host_ram_per_node", "host RAM per node", hw.host_ram_per_node,
        _size(hw.host_ram_per_node) if hw.host_ram_per_node is not None else "")
    add("eff_matmul", "matmul efficiency", hw.eff_matmul, f"{hw.eff_matmul:.2f}", hw.band("matmul"))
    add("eff_hbm", "HBM efficiency", hw.eff_hbm, f"{hw.eff_hbm:.2f}", hw.band("hbm"))
    if runtime is not None:
        context, work = hw.context_bytes(runtime), hw.workspace_bytes(runtime)
        add(f"runtime_context.{runtime}", f"{runtime} runtime context", context,
            _size(context) if context is not None else "")
        add(f"workspaces.{runtime}", f"{runtime} library workspaces", work, _size(work) if work is not None else "")
    return out


def figures_json(hw: Hardware, runtime: str | None = None) -> list[dict[str, Any]]:
    """The figures for ``sapp.estimate/1``: value in SI/bytes, and the source (kind, title, url)."""
    return [{"figure": f.path, "label": f.label, "value": f.value, "source": f.source.kind,
             **({"title": f.source.title} if f.source.title else {}),
             **({"url": f.source.url} if f.source.url else {})} for f in device_figures(hw, runtime)]


def provisional_summary(hw: Hardware, runtime: str | None = None) -> str:
    """``'provisional: host link, host RAM per node'`` — the figures no document or measurement backs."""
    names = [f.label for f in device_figures(hw, runtime) if f.source.kind == "provisional"]
    return "provisional: " + ", ".join(names) if names else ""


__all__ = ["Figure", "device_figures", "figures_json", "provisional_summary"]
