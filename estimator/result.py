"""Result records (docs/model.md#inputs-and-outputs): per stage → per layer → the seven categories, and the plan-level
verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .explain import Quantity
from .messages import Message, Text, english
from .units import round_half_up
from .warnings import Assumption, EstimateWarning

CATEGORIES = ("parameters", "gradients", "optimizer_states", "activations", "communication_buffers",
              "working_overhead", "reserve")


@dataclass(frozen=True)
class LayerRow:
    """One row of a stage's per-layer table. ``bytes`` follows CATEGORIES order."""

    kind: str                 # embedding | output | mtp | embedding_copy | noop | vision | dense | moe | ... |
    #                           working | buffers | reserve (synthetic stage-level rows)
    bytes: tuple[float, ...]
    index: int | None = None  # model-order index over body + MTP layers
    chunk: int = 0
    option: str = "none"
    inflight: int = 0         # micro-batches (slices) whose activations the row holds at the peak point
    note: Text = ""           # English (as the JSON); a catalogue message is kept in ``said`` for the app
    said: Message | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.note, Message):
            object.__setattr__(self, "said", self.note)
            object.__setattr__(self, "note", english(self.note))

    @property
    def total(self) -> float:
        return sum(self.bytes)

    def by_category(self) -> dict[str, float]:
        return dict(zip(CATEGORIES, self.bytes, strict=True))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "index": self.index, "chunk": self.chunk, "option": self.option,
                "inflight": self.inflight, "note": self.note,
                "bytes_by_category": {k: round_half_up(v) for k, v in self.by_category().items()},
                "total": round_half_up(self.total)}


@dataclass(frozen=True)
class StageResult:
    index: int
    layer_source: Callable[[], tuple[LayerRow, ...]] = field(repr=False, compare=False)  # built on demand
    bytes_by_category: dict[str, float] = field(default_factory=dict)
    total: float = 0.0
    peak_vector: tuple[int, ...] = ()
    peak_instant: str = ""
    optimizer_step_peak: float = 0.0
    peak_said: Message | None = field(default=None, compare=False, repr=False)  # peak_instant, to say in the app
    layer_counts: tuple[int, ...] = ()  # body/MTP/noop positions per chunk
    kinds: frozenset[str] = frozenset()  # row kinds present (embedding, output, mtp, ...)
    explain: Quantity | None = None
    host_bytes: dict[str, float] = field(default_factory=dict)  # [H-DEVICE] host memory of one device, by kind

    @cached_property
    def layers(self) -> tuple[LayerRow, ...]:
        """Per-layer rows (and the synthetic working/buffers/reserve rows); Σ rows = bytes_by_category."""
        return self.layer_source()

    def to_dict(self, with_layers: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index, "total": round_half_up(self.total), "peak_instant": self.peak_instant,
            "peak_vector": list(self.peak_vector), "optimizer_step_peak": round_half_up(self.optimizer_step_peak),
            "layer_counts": list(self.layer_counts),
            "bytes_by_category": {k: round_half_up(v) for k, v in self.bytes_by_category.items()},
        }
        if with_layers:
            out["layers"] = [row.to_dict() for row in self.layers]
        return out


@dataclass(frozen=True)
class Result:
    stages: tuple[StageResult, ...]
    peak_stage: int
    peak_bytes: float
    budget: float
    capacity: float
    fits: bool
    headroom: float
    limit: str                  # "peak" or "optimizer_step": which maximum decides the fit
    world_size: int
    global_batch_size: int
    parameters_total: int
    parameters_mtp: int
    parameters_active: int
    warnings: tuple[EstimateWarning, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    echo_source: Callable[[], dict[str, Any]] = field(default=dict, repr=False, compare=False)
    step: Any = None  # steptime.StepTime, or None when priced without time
    host: Any = None  # host.HostMemory: what offload and swap keep in host RAM (None: nothing)

    @property
    def step_time_s(self) -> float | None:
        return float(self.step.step_time_s) if self.step is not None else None

    @property
    def parts(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.step.parts.items()} if self.step is not None else {}

    @property
    def tokens_per_s_per_device(self) -> float | None:
        return float(self.step.tokens_per_s_per_device) if self.step is not None else None

    @property
    def mfu(self) -> float | None:
        return float(self.step.mfu) if self.step is not None else None

    @cached_property
    def echo(self) -> dict[str, Any]:
        """model / strategy / hardware / options as resolved (built on demand)."""
        return self.echo_source()

    @property
    def optimizer_step_peak(self) -> float:
        return max(s.optimizer_step_peak for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        """The ``sapp.estimate/1`` JSON object (integers in bytes)."""
        out: dict[str, Any] = {"schema": "sapp.estimate/1"}
        out.update(self.echo)
        out.update({
            "budget": round_half_up(self.budget), "capacity": round_half_up(self.capacity),
            "peak_bytes": round_half_up(self.peak_bytes), "peak_stage": self.peak_stage, "fits": self.fits,
            "headroom": round_half_up(self.headroom), "limit": self.limit,
            "optimizer_step_peak": round_half_up(self.optimizer_step_peak),
            "stages": [s.to_dict() for s in self.stages],
            **({"step_time_s": self.step_time_s, "parts": self.parts,
                "tokens_per_s_per_device": self.tokens_per_s_per_device, "mfu": self.mfu}
               if self.step is not None else {}),
            **({"host_memory": self.host.to_dict()} if self.host is not None and self.host.used else {}),
            "warnings": [w.to_dict() for w in self.warnings],
            "assumptions": [a.to_dict() for a in self.assumptions],
        })
        return out
