"""The search space (docs/model.md#search): dimensions that are fixed, a list, or auto within
bounds, with the device count N and the global batch G fixed."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from ..limits import (
    MAX_DEVICES,
    MAX_DIM_VALUES,
    MAX_GLOBAL_BATCH,
    MAX_LAYERS,
    MAX_MICRO_BATCH_SIZE,
    MAX_MICRO_BATCHES,
    Bound,
    check_number,
)
from ..messages import msg

# dimension name -> what it is (CLI names: dp tp pp cp ep etp vpp mb mbs os sp rec)
DIMENSIONS = {
    "dp": "data-parallel degree (derived N/(tp·pp·cp) unless listed)",
    "tp": "tensor-parallel degree", "pp": "pipeline stages", "cp": "context-parallel degree",
    "ep": "expert-parallel degree", "etp": "expert tensor-parallel degree", "vpp": "virtual chunks per stage",
    "mb": "micro-batches per flush (derived G/(dp·mbs) unless listed)", "mbs": "micro-batch size",
    "os": "optimizer/FSDP shard group size", "sp": "sequence parallel (0/1)",
    "rec": "uniform recompute mode (none, selective, full)",
}
# the values a dimension may list (the degrees: a parallel degree, 1 … MAX_DEVICES)
DIM_BOUNDS = {"mbs": Bound(1, MAX_MICRO_BATCH_SIZE, "a micro-batch size"),
              "mb": Bound(1, MAX_MICRO_BATCHES, "a micro-batch count"),
              "vpp": Bound(1, MAX_LAYERS, "a virtual pipeline degree"), "sp": Bound(0, 1, "sequence parallel (0/1)")}
RECOMPUTE_CODES = {"none": 0, "selective": 1, "full": 2}
RECOMPUTE_NAMES = {v: k for k, v in RECOMPUTE_CODES.items()}


@dataclass(frozen=True)
class Dim:
    """``auto`` (within bounds) or explicit values (one value = fixed)."""

    auto: bool = False
    values: tuple[int, ...] = ()

    @property
    def fixed(self) -> bool:
        return not self.auto and len(self.values) == 1


@dataclass(frozen=True)
class Bounds:
    """Editable bounds of the auto dimensions (docs/model.md#search)."""

    tp_max: int | None = None   # default: min(devices per node, heads)
    vpp_max: int = 4
    mbs_max: int = 8
    mb_max: int = 4096
    cp_tokens: int = 1024      # cp ≤ s / cp_tokens
    pp_max: int | None = None  # default: the upstream bound of docs/model.md#search


@dataclass(frozen=True)
class SearchSpace:
    devices: int
    global_batch: int
    dims: dict[str, Dim] = field(default_factory=dict)
    bounds: Bounds = field(default_factory=Bounds)
    schedules: tuple[str, ...] | None = None  # None: the parsed schedule (interleaved implied by vpp > 1)
    top_k: int = 10

    def __post_init__(self) -> None:
        """The device count and global batch within their bounds (estimator/limits.py), before any divisor or
        candidate is computed from them."""
        check_number(self.devices, Bound(1, MAX_DEVICES, "a device count"), key="search devices")
        check_number(self.global_batch, Bound(1, MAX_GLOBAL_BATCH, "a global batch"), key="search global batch")
        check_number(self.top_k, Bound(1, 10_000, "a number of ranked strategies"), key="search top")

    def dim(self, name: str) -> Dim | None:
        return self.dims.get(name)


def parse_dim(text: str) -> tuple[str, Dim]:
    """``tp=1,2,4`` / ``pp=auto`` / ``cp=1`` / ``rec=full,selective`` / ``sp=0,1``."""
    if "=" not in text:
        raise ConfigError(msg("space.dims-expected-name", text=text, DIMENSIONS=', '.join(DIMENSIONS)))
    name, raw = (x.strip() for x in text.split("=", 1))
    name = name.lower()
    if name not in DIMENSIONS:
        from ..nearest import suggest

        near = suggest(name, DIMENSIONS)
        raise ConfigError(msg("space.unknown-dimension.near", name=name, near=near) if near else
                          msg("space.unknown-dimension", name=name, known=", ".join(DIMENSIONS)))
    if raw.lower() == "auto":
        return name, Dim(auto=True)
    values: list[int] = []
    for part in raw.split(","):
        part = part.strip().lower()
        if not part:
            continue
        if name == "rec":
            if part not in RECOMPUTE_CODES:
                raise ConfigError(msg("space.dims-rec-none", part=part))
            values.append(RECOMPUTE_CODES[part])
        elif name == "sp" and part in ("on", "off", "true", "false"):
            values.append(1 if part in ("on", "true") else 0)
        else:
            try:
                value = int(part)
            except ValueError:
                raise ConfigError(msg("space.dims-integer-use", name=name, part=part)) from None
            check_number(value, DIM_BOUNDS.get(name, Bound(1, MAX_DEVICES, "a parallel degree")),
                         key=f"--dims {name}")
            values.append(value)
    if not values:
        raise ConfigError(msg("space.dims-values-given", name=name))
    if len(values) > MAX_DIM_VALUES:
        raise ConfigError(msg("space.dims-values-most", name=name, n_values=len(values), MAX_DIM_VALUES=MAX_DIM_VALUES))
    return name, Dim(values=tuple(dict.fromkeys(values)))


def parse_dims(items: list[str]) -> dict[str, Dim]:
    """Several ``NAME=…`` items (also space- or semicolon-separated inside one item); ``all=auto`` sets every
    dimension to auto except dp and mb, which are derived."""
    out: dict[str, Dim] = {}
    for item in items:
        for piece in item.replace(";", " ").split():
            if piece.lower() == "all=auto":
                for name in DIMENSIONS:
                    if name not in ("dp", "mb"):
                        out[name] = Dim(auto=True)
                continue
            name, dim = parse_dim(piece)
            out[name] = dim
    return out
