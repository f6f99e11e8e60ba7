"""Host memory (issue 11): what offload and swap keep in a node's RAM, per device and per node, against the node's
RAM from the device preset (``host_ram_per_node``).

Per device and stage [H-DEVICE]: the offloaded activations of the micro-batches in flight at the stage's peak point
(pinned buffers: MindSpeed swap-attention, MindFormers swap_config, Transformer Engine / Megatron activation
offloading), the optimizer states (and DeepSpeed's fp32 gradient partition) when they are swapped or offloaded, and
the parameters and gradients with ``offload_params``. Per node [H-NODE]: the largest stage's figure × devices per
node — a node's devices hold one stage when TP·CP·DP fill it (placement TP, CP, DP, PP innermost first), so this is
exact then and an upper bound otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from .records import at_once

if TYPE_CHECKING:
    from .explain import Quantity
    from .resolve import Resolved
    from .result import StageResult


@dataclass(frozen=True)
class HostStage:
    """Host bytes one device of a stage keeps, by kind."""

    activations: float = 0.0
    optimizer_states: float = 0.0
    parameters: float = 0.0
    gradients: float = 0.0

    @property
    def total(self) -> float:
        return self.activations + self.optimizer_states + self.parameters + self.gradients

    def to_dict(self) -> dict[str, float]:
        return {"activations": self.activations, "optimizer_states": self.optimizer_states,
                "parameters": self.parameters, "gradients": self.gradients, "total": self.total}


@dataclass(frozen=True)
class HostMemory:
    stages: tuple[HostStage, ...]
    devices_per_node: int
    ram_per_node: float | None  # from the device preset; None when the preset does not state it

    @property
    def per_device(self) -> float:
        return max((s.total for s in self.stages), default=0.0)

    @property
    def per_node(self) -> float:
        return self.per_device * self.devices_per_node

    @property
    def fits(self) -> bool | None:
        return None if self.ram_per_node is None else self.per_node <= self.ram_per_node

    @property
    def used(self) -> bool:
        return self.per_device > 0

    def to_dict(self) -> dict[str, object]:
        return {"per_device": self.per_device, "per_node": self.per_node, "devices_per_node": self.devices_per_node,
                "ram_per_node": self.ram_per_node, "fits": self.fits,
                "stages": [s.to_dict() for s in self.stages]}


def host_text(host: HostMemory | None) -> str | None:
    """One line for reports: per device × devices per node = per node, against the node's RAM (None: no host
    memory used)."""
    if host is None or not host.used:
        return None
    gib = 1 << 30
    ram = (f" of {host.ram_per_node / gib:,.0f} GiB RAM: " + ("fits" if host.fits else "DOES NOT FIT")
           if host.ram_per_node is not None else " (the preset states no host RAM)")
    return (f"{host.per_device / gib:,.2f} GiB per device × {host.devices_per_node} devices = "
            f"{host.per_node / gib:,.2f} GiB per node{ram}")


def host_explain(host: HostMemory) -> Quantity:
    """[H-NODE] the host-memory figure as an Explain tree: per node = per device × devices per node, the device
    figure (the largest stage's) split by kind [H-DEVICE]."""
    from .explain import Quantity
    from .messages import msg
    from .units import fmt_bytes

    index = max(range(len(host.stages)), key=lambda i: host.stages[i].total)
    stage = host.stages[index]
    labels = {"activations": msg("host.kind.activations"), "optimizer_states": msg("host.kind.optimizer_states"),
              "parameters": msg("host.kind.parameters"), "gradients": msg("host.kind.gradients")}
    in_flight, all_step = msg("host.in-flight"), msg("host.all-step")
    kinds = [Quantity(labels[kind], value, note=in_flight if kind == "activations" else all_step)
             for kind, value in stage.to_dict().items() if kind != "total" and value]
    device = Quantity(msg("host.per-device", stage=index), stage.total, "H-DEVICE", children=kinds, op="sum")
    if host.ram_per_node is None:
        ram = msg("host.no-ram")
    else:
        gib = f"{host.ram_per_node / 2**30:,.0f}"
        ram = msg("host.ram-fits", ram=gib) if host.fits else msg("host.ram-over", ram=gib)
    # byte inputs as the reader reads them (GiB), not raw byte counts, in the substituted formula
    inputs: dict[str, object] = {"devices_per_node": host.devices_per_node, "H-DEVICE": fmt_bytes(stage.total)}
    if host.ram_per_node is not None:
        inputs["host_ram_per_node"] = fmt_bytes(host.ram_per_node)
    return Quantity(msg("host.per-node"), host.per_node, "H-NODE", inputs, children=[device], note=ram)


def host_memory(r: Resolved, stages: Sequence[StageResult]) -> HostMemory:
    """[H-NODE] the plan's host memory: per device (the largest stage, whose figure the assembler priced:
    ``StageResult.host_bytes``) and per node, against the preset's RAM."""
    # a stage sharing the previous one's host-bytes dict shares its (frozen) record: a plan's stages priced at once
    # share a dict per stage form (``assembly.stages``), and the stages of a form are neighbours
    out = []
    given: dict | None = None
    record: HostStage | None = None
    for stage in stages:
        if stage.host_bytes is not given:
            given, record = stage.host_bytes, _host_stage(stage)
        out.append(record)
    return HostMemory(tuple(out), r.hardware.devices_per_node, r.hardware.host_ram_per_node)  # type: ignore[arg-type]


_KINDS = {f.name: f.default for f in fields(HostStage)}


def _host_stage(stage: StageResult) -> HostStage:
    """``HostStage(**{k: float(v) for k, v in stage.host_bytes.items()})``, its instance dict set at once (the
    frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; every stage of every estimate
    makes one). Bytes of a kind HostStage has no field for are refused by its ``__init__``, as before."""
    given = stage.host_bytes
    if not given.keys() <= _KINDS.keys():
        return HostStage(**{k: float(v) for k, v in given.items()})
    values = _KINDS.copy()
    for kind, value in given.items():
        values[kind] = float(value)
    return at_once(HostStage, **values)


__all__ = ["HostMemory", "HostStage", "host_explain", "host_memory", "host_text"]
