"""Result records (docs/model.md#inputs-and-outputs): per stage → per layer → the categories, and the plan-level
verdict. The first seven categories are the tensors the framework holds and the fixed reserve; the device-level
ones (issue 10, ``estimator/device``) follow: library workspaces (allocated), the caching allocator's slack, the
runtime context and the communication libraries' buffers. Three peaks per stage: the tensor peak (what
``max_memory_allocated`` shows), the allocator peak (``max_memory_reserved``) and the device peak (what the
device shows); each the maximum over the stage's instants, the optimizer step included."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .explain import Quantity
from .honest import Throughput, throughput
from .messages import Message, Text, english
from .units import round_half_up
from .warnings import Assumption, EstimateWarning

CATEGORIES = ("parameters", "gradients", "optimizer_states", "activations", "communication_buffers",
              "working_overhead", "reserve", "library_workspaces", "allocator_slack", "runtime_context",
              "comm_library")
TENSOR_CATEGORIES = (*CATEGORIES[:6], "library_workspaces")
OUTSIDE_ALLOCATOR = ("reserve", "runtime_context", "comm_library")  # held by the device, not the allocator
SCHEMA = "sapp.estimate/1.1"


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
    layer_counts: tuple[int, ...] = ()  # body/MTP/noop positions per chunk (the embedding/output ones included
    # where the plan counts them as positions: emb_out_in_offset); what the balancer moves
    layers_per_chunk: tuple[int, ...] = ()  # decoder and MTP layers per chunk: what the tables show
    kinds: frozenset[str] = frozenset()  # row kinds present (embedding, output, mtp, ...)
    explain: Quantity | None = None
    host_bytes: dict[str, float] = field(default_factory=dict)  # [H-DEVICE] host memory of one device, by kind
    # the allocator slack's band and how the device-level parts were priced (allocator kind, notes)
    device: dict[str, Any] = field(default_factory=dict, compare=False)

    # ---------------------------------------------------------------------------------- the three peaks
    @property
    def device_peak(self) -> float:
        """[D-DEVICE] the largest instant, the optimizer step included."""
        return max(self.total, self.optimizer_step_peak)

    @property
    def outside_allocator(self) -> float:
        # the OUTSIDE_ALLOCATOR categories summed as a tuple, not a generator (the verdict asks it of every stage of
        # every estimate with a framework pool); tests/test_resolve_settled.py checks the names are those
        get = self.bytes_by_category.get
        return sum((get("reserve", 0.0), get("runtime_context", 0.0), get("comm_library", 0.0)))

    @property
    def allocator_peak(self) -> float:
        return max(self.total, self.optimizer_step_peak) - self.outside_allocator  # device_peak − outside

    @property
    def allocator_slack(self) -> float:
        return self.bytes_by_category.get("allocator_slack", 0.0)

    @property
    def tensor_peak(self) -> float:
        return self.allocator_peak - self.allocator_slack

    @property
    def tensor_peak_low(self) -> float:
        """The tensors have no band: they are priced exactly; the band is the allocator's."""
        return self.tensor_peak

    @property
    def tensor_peak_high(self) -> float:
        return self.tensor_peak

    def _band(self, end: str) -> float:
        return self.device.get(f"allocator_slack_{end}", self.allocator_slack) - self.allocator_slack

    def _outside_band(self, end: str) -> float:
        """The band of the parts outside the allocator: NCCL's NVLS buffers [D-NVLS], relative to the nominal."""
        return self.device.get(f"comm_library_{end}", 0.0)

    @property
    def allocator_peak_low(self) -> float:
        return self.allocator_peak + self._band("low")

    @property
    def allocator_peak_high(self) -> float:
        return self.allocator_peak + self._band("high")

    @property
    def device_peak_low(self) -> float:
        return self.device_peak + self._band("low") + self._outside_band("low")

    @property
    def device_peak_high(self) -> float:
        return self.device_peak + self._band("high") + self._outside_band("high")

    @cached_property
    def layers(self) -> tuple[LayerRow, ...]:
        """Per-layer rows (and the synthetic working/buffers/reserve rows); Σ rows = bytes_by_category."""
        return self.layer_source()

    def to_dict(self, with_layers: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index, "total": round_half_up(self.total), "peak_instant": self.peak_instant,
            "peak_vector": list(self.peak_vector), "optimizer_step_peak": round_half_up(self.optimizer_step_peak),
            "layer_counts": list(self.layer_counts), "layers_per_chunk": list(self.layers_per_chunk),
            "bytes_by_category": {k: round_half_up(v) for k, v in self.bytes_by_category.items()},
            **{peak_key(name): round_half_up(getattr(self, name)) for name in PEAK_FIELDS},
            "device": {k: (round_half_up(v) if isinstance(v, float) else v) for k, v in self.device.items()},
        }
        if with_layers:
            out["layers"] = [row.to_dict() for row in self.layers]
        return out


def stage_result(*, index: int, layer_source: Callable[[], tuple[LayerRow, ...]],
                 bytes_by_category: dict[str, float], total: float, peak_vector: tuple[int, ...],
                 peak_instant: str, optimizer_step_peak: float, peak_said: Message | None,
                 layer_counts: tuple[int, ...], layers_per_chunk: tuple[int, ...], kinds: frozenset[str],
                 explain: Quantity | None, host_bytes: dict[str, float], device: dict[str, Any]) -> StageResult:
    """A StageResult with every field given, equal to ``StageResult(...)`` of the same: its instance dict set at
    once — the frozen dataclass's ``__init__`` sets the 14 fields one by one through ``object.__setattr__``
    (~1.5 µs against ~0.35, and every stage of every estimate makes one). A new field is a required argument here
    (tests/test_assembly.py checks the names against the dataclass's fields). The dict is written here, in field
    order, rather than passed through ``records.at_once`` (whose keyword repacking takes another ~0.6 µs)."""
    out = object.__new__(StageResult)
    object.__setattr__(out, "__dict__", {
        "index": index, "layer_source": layer_source, "bytes_by_category": bytes_by_category, "total": total,
        "peak_vector": peak_vector, "peak_instant": peak_instant, "optimizer_step_peak": optimizer_step_peak,
        "peak_said": peak_said, "layer_counts": layer_counts, "layers_per_chunk": layers_per_chunk, "kinds": kinds,
        "explain": explain, "host_bytes": host_bytes, "device": device})
    return out


PEAK_NAMES = ("tensor_peak", "allocator_peak", "device_peak")
PEAK_FIELDS = tuple(f"{name}{end}" for name in PEAK_NAMES for end in ("", "_low", "_high"))


def peak_key(name: str) -> str:
    """The JSON key of a peak field (``sapp.estimate/1.1``): tensor_peak_low → tensor_peak_bytes_low."""
    return name.replace("_peak", "_peak_bytes", 1)


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
    # the framework's memory pool (MindSpore max_device_memory) minus the margin: the allocator peak must fit it,
    # the device peak the capacity; None when the plan states no framework limit
    framework_limit: float | None = None
    step_band: tuple[float, float] | None = None  # step time at the efficiency band's high and low ends
    device_limit: float | None = None  # what the device peak must stay within (the budget, or capacity − margin)

    def over(self, stage: StageResult) -> bool:
        """[D-VERDICT] for one stage: its device peak over the device's limit, or its allocator peak over the
        framework's pool."""
        limit = self.budget if self.device_limit is None else self.device_limit
        return stage.device_peak > limit or (self.framework_limit is not None and
                                             stage.allocator_peak > self.framework_limit)

    def _over_stages(self, name: str) -> float:
        return max(getattr(s, name) for s in self.stages)

    @property
    def tensor_peak_bytes(self) -> float:
        return self._over_stages("tensor_peak")

    @property
    def allocator_peak_bytes(self) -> float:
        return self._over_stages("allocator_peak")

    @property
    def device_peak_bytes(self) -> float:
        return self._over_stages("device_peak")

    @property
    def device_peak_low_bytes(self) -> float:
        return self._over_stages("device_peak_low")

    @property
    def device_peak_high_bytes(self) -> float:
        return self._over_stages("device_peak_high")

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

    @property
    def tokens_band(self) -> tuple[float, float] | None:
        """Tokens/s/device at the slow and fast ends of the step band (throughput ∝ 1/step time)."""
        return self.throughput.tokens.band if self.throughput is not None else None

    @property
    def mfu_peak(self) -> str | None:
        """The precision whose dense peak MFU is against ("bf16"; "fp32" for 4-byte compute): FP8 matmuls run
        above it, so an FP8 plan's MFU can pass 100 % (P-MFU-PEAK)."""
        return str(self.step.mfu_peak) if self.step is not None else None

    @property
    def mfu_band(self) -> tuple[float, float] | None:
        return self.throughput.mfu.band if self.throughput is not None else None

    @property
    def throughput(self) -> Throughput | None:
        """Step time, tokens/s/device and MFU at the precision the step band allows (``honest``); None unpriced."""
        if self.step is None:
            return None
        return throughput(float(self.step.step_time_s), float(self.step.tokens_per_s_per_device),
                          float(self.step.mfu), self.step_band)

    @cached_property
    def echo(self) -> dict[str, Any]:
        """model / strategy / hardware / options as resolved (built on demand)."""
        return self.echo_source()

    @property
    def optimizer_step_peak(self) -> float:
        return max(s.optimizer_step_peak for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        """The ``sapp.estimate/1`` JSON object (integers in bytes)."""
        out: dict[str, Any] = {"schema": SCHEMA}
        out.update(self.echo)
        out.update({
            "budget": round_half_up(self.budget), "capacity": round_half_up(self.capacity),
            "framework_limit": None if self.framework_limit is None else round_half_up(self.framework_limit),
            "peak_bytes": round_half_up(self.peak_bytes), "peak_stage": self.peak_stage, "fits": self.fits,
            "headroom": round_half_up(self.headroom), "limit": self.limit,
            "optimizer_step_peak": round_half_up(self.optimizer_step_peak),
            **{peak_key(name): round_half_up(self._over_stages(name)) for name in PEAK_FIELDS},
            "stages": [s.to_dict() for s in self.stages],
            **({"step_time_s": self.step_time_s, "parts": self.parts,
                "tokens_per_s_per_device": self.tokens_per_s_per_device, "mfu": self.mfu, "mfu_peak": self.mfu_peak,
                **(self.throughput.to_dict() if self.throughput is not None else {})}
               if self.step is not None else {}),
            **({"host_memory": self.host.to_dict()} if self.host is not None and self.host.used else {}),
            "warnings": [w.to_dict() for w in self.warnings],
            "assumptions": [a.to_dict() for a in self.assumptions],
        })
        return out
