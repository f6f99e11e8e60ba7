"""Device-level memory of one pipeline stage (issue 10): from the tensor peak (what ``max_memory_allocated``
shows) to the allocator peak (``max_memory_reserved``: tensors plus the caching allocator's slack) to the device
peak (what the device shows: the allocator plus the runtime context and the communication libraries' buffers).

[D-TENSOR]  tensor peak = the estimate's largest instant (the optimizer step included) + library workspaces
            (cuBLAS and the like are handed out by the caching allocator, so they count as allocated)
[D-SLACK]   allocator slack = reserved − allocated of the caching-allocator replay (``allocator``) of the
            stage's allocation trace (``trace``), at the steady-state step; band: the same with every transient
            tensor 1 % smaller and 1 % larger (best fit is that sensitive); 0 for MindSpore's static plan
[D-CONTEXT] runtime context = the preset's figure for the runtime (CUDA/CANN context and library handles)
[D-COMM]    communication-library buffers = Σ communicators × the library's documented bytes (``communicators``)
[D-DEVICE]  device peak = tensor peak + slack + context + communication-library buffers
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..hardware import Hardware, runtime_of
from ..layout import build_layout
from ..model import ModelSpec
from ..options import RunOptions
from ..records import Record
from ..resolve import Resolved, resolve
from ..result import Result
from ..stage import Row, StagePricer
from ..strategy import Strategy
from ..units import GiB
from .allocator import AllocatorConfig, replay
from .communicators import communicator_count, library_bytes, library_rule, rank_groups
from .knobs import parse_alloc_conf
from .trace import stage_trace

# torchtitan's launcher (run_train.sh) exports PYTORCH_ALLOC_CONF="expandable_segments:True"
FRAMEWORK_ALLOC_CONF = {"torchtitan": "expandable_segments:True"}
DEFAULT_CONTEXT = 1 * GiB   # when a preset states none for the runtime: provisional
BAND = (0.99, 1.01)


@dataclass(frozen=True)
class DeviceMemory(Record):
    """The device-level parts of one stage, in bytes, with the band where the allocator's behaviour varies."""

    runtime: str
    allocator: str             # caching | expandable | static
    tensor_peak: float         # workspaces included
    workspaces: float
    allocator_slack: float
    allocator_slack_low: float
    allocator_slack_high: float
    context: float
    comm_library: float
    library: str
    communicators: int = 0
    p2p_communicators: int = 0
    notes: tuple[str, ...] = ()

    @property
    def allocator_peak(self) -> float:
        return self.tensor_peak + self.allocator_slack

    @property
    def allocator_peak_low(self) -> float:
        return self.tensor_peak + self.allocator_slack_low

    @property
    def allocator_peak_high(self) -> float:
        return self.tensor_peak + self.allocator_slack_high

    @property
    def fixed(self) -> float:
        """What the device holds outside the allocator."""
        return self.context + self.comm_library

    @property
    def device_peak(self) -> float:
        return self.allocator_peak + self.fixed

    @property
    def device_peak_low(self) -> float:
        return self.allocator_peak_low + self.fixed

    @property
    def device_peak_high(self) -> float:
        return self.allocator_peak_high + self.fixed


def allocator_kind(r: Resolved) -> tuple[str, AllocatorConfig, str]:
    """(caching | expandable | static, the replayed configuration, where it came from)."""
    opts = r.options
    if r.flags.framework == "mindformers":
        return "static", AllocatorConfig(), ("MindSpore graph mode plans device memory statically (SOMAS): the "
                                             "planned peak is what the pool holds, no caching-allocator slack")
    text = opts.alloc_conf
    source = "the launch script / plan"
    if text is None:
        text = FRAMEWORK_ALLOC_CONF.get(r.flags.framework, "")
        source = f"{r.flags.framework}'s launcher default" if text else "PyTorch's default"
    config = parse_alloc_conf(text).config
    return ("expandable" if config.expandable_segments else "caching"), config, f"{text or 'default'} ({source})"


@lru_cache(maxsize=256)
def _replay_slack(events: tuple, config: AllocatorConfig) -> int:
    peaks = replay(list(events), config)
    steady = peaks[-1]
    return steady.max_reserved - steady.max_allocated


def allocator_slack(pricer: StagePricer, stage: int, rows: list[Row], config: AllocatorConfig,
                    workspace: float) -> tuple[float, float, float]:
    """[D-SLACK] (nominal, low, high)."""
    values = []
    for scale in (1.0, *BAND):
        events = stage_trace(pricer, stage, rows, workspace, scale=scale).compact()
        values.append(float(_replay_slack(tuple(events), config)))
    return values[0], min(values), max(values)


def device_memory(pricer: StagePricer, stage: int, rows: list[Row], tensor_peak: float) -> DeviceMemory:
    """[D-DEVICE] the device-level parts of ``stage`` whose estimated tensor peak (without workspaces) is
    ``tensor_peak``."""
    r = pricer.r
    hw = r.hardware
    opts = calibrated_options(r)
    runtime = runtime_of(r.flags.framework)
    notes: list[str] = []
    if r.options.calibration:
        notes.append(f"calibration {r.options.calibration} applied" if opts is r.options else
                     f"calibration {r.options.calibration} is for {r.options.calibration_device}, not {hw.id}: "
                     "not applied")
    workspace = hw.workspace_bytes(runtime) or 0.0
    context = opts.runtime_context if opts.runtime_context is not None else hw.context_bytes(runtime)
    if context is None:
        context = DEFAULT_CONTEXT
        notes.append(f"{hw.name} states no {runtime} runtime context: 1 GiB assumed (provisional)")
    kind, config, source = allocator_kind(r)
    notes.append(f"allocator: {source}")
    tensors = tensor_peak + workspace
    if kind == "static":
        slack = (0.0, 0.0, 0.0)
    else:
        slack = allocator_slack(pricer, stage, rows, config, workspace)
    if opts.allocator_slack_factor is not None:
        slack = tuple(x * opts.allocator_slack_factor for x in slack)  # type: ignore[assignment]
    if opts.allocator_slack_fraction is not None:
        slack = tuple(x + opts.allocator_slack_fraction * tensors for x in slack)  # type: ignore[assignment]
    groups = rank_groups(r, stage)
    rule = library_rule(hw.comm_library, runtime, opts.hccl_buffsize, opts.p2p_hccl_buffsize, opts.nccl_buffsize)
    collective, p2p = communicator_count(groups)
    comm = float(library_bytes(groups, rule)) * (opts.comm_library_factor or 1.0)
    return DeviceMemory(runtime=runtime, allocator=kind, tensor_peak=tensors, workspaces=workspace,
                        allocator_slack=slack[0], allocator_slack_low=slack[1], allocator_slack_high=slack[2],
                        context=float(context), comm_library=comm, library=rule.library,
                        communicators=int(collective), p2p_communicators=int(p2p), notes=tuple(notes))


def calibrated_options(r: Resolved) -> RunOptions:
    """The options with a calibration's terms only when the plan runs on the calibration's device."""
    opts = r.options
    if opts.calibration_device is None or opts.calibration_device.lower() == (r.hardware.id or "").lower():
        return opts
    return opts.replace(allocator_slack_factor=None, allocator_slack_fraction=None, comm_library_factor=None,
                        runtime_context=None)




def plan_device_memory(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions,
                       with_time: bool = True) -> tuple[Result, tuple[DeviceMemory, ...]]:
    """The estimate and each stage's device-level memory; a stage's tensor peak is its largest instant, the
    optimizer step included, without the estimate's fixed reserve."""
    from ..estimate import estimate, layout_inputs, stage_rows

    result = estimate(model, strategy, hardware, options, with_time=with_time)
    r = resolve(model, strategy, hardware, options)
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    parts = tuple(device_memory(pricer, s.index, stage_rows(pricer, s.index),
                                max(s.total, s.optimizer_step_peak) - options.reserve) for s in result.stages)
    return result, parts


__all__ = ["BAND", "DeviceMemory", "allocator_kind", "allocator_slack", "calibrated_options", "device_memory",
           "plan_device_memory"]
