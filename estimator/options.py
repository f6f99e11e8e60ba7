"""RunOptions: framework semantics and accounting switches (docs/model.md#inputs-and-outputs).

``None`` means "the framework's default" (``frameworks.py``), resolved per estimate and reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from .records import Record

FRAMEWORKS = ("mindformers", "mindspeed", "megatron", "torchtitan", "hyperparallel", "hf_trainer")
GRAD_PERSISTENCE = ("persistent", "upstream_rule", "progressive")
OPTIMIZER_IMPLS = ("fused", "foreach", "forloop")
VPP_VARIANTS = ("megatron", "upstream_big", "upstream_less")
COMM_BUFFER_MODES = ("transient_max", "upstream_sum")


@dataclass(frozen=True)
class RunOptions(Record):
    framework: str = "megatron"
    grad_persistence: str | None = None
    reserve: float = 0.0  # reserve_fixed (D6): a fixed allowance on top of the device-level parts (issue 10)
    frag_fraction: float = 0.0
    comm_lib_per_group: float = 0.0
    margin: float = 0.0
    budget_override: float | None = None
    max_device_memory: float | None = None  # framework memory limit, e.g. MindFormers context.max_device_memory
    rho: float = 1.0
    keep_weight_casts: bool | None = None
    cp_keeps_kv: bool = False
    dataloader_mask: bool = False  # [W-MASK] Megatron-LM's data loader: b×1×(s/cp)×s booleans during the forward
    vpp_variant: str = "megatron"
    comm_buffer_mode: str = "transient_max"
    params_divided_by_cp: bool = False
    causal_factor: float | None = None
    allow_underfilled_pipeline: bool = False
    strict: bool = False
    explain: bool = False
    optimizer_impl: str | None = None
    fused_gated_act: bool | None = None
    fused_gated_act_experts: bool | None = None
    kv_repeat: bool | None = None
    norm_stats: bool | None = None
    fsdp_sync_every_microbatch: bool | None = None
    saves_gathered_input: bool | None = None  # gather switch kept: SP norm outputs saved full-length
    # step-time overlaps and elementwise factors (docs/model.md#knobs); None: the documented default
    # (estimator/steptime.py)
    overlap_tp: float | None = None
    overlap_cp: float | None = None
    overlap_ep: float | None = None
    overlap_pp: float | None = None
    overlap_dp: float | None = None
    overlap_fsdp: float | None = None
    k_ew_fwd: float | None = None
    k_ew_bwd: float | None = None
    pp_scatter_gather: bool | None = None  # Megatron ≤ 2022: p2p tensors split over TP ranks without SP
    # device-level memory (issue 10, estimator/device): the caching allocator's configuration as the launch
    # script sets it (PYTORCH_CUDA_ALLOC_CONF / PYTORCH_NPU_ALLOC_CONF text; None: the framework's default), the
    # communication libraries' buffer sizes (None: documented defaults) and the runtime context (None: preset)
    alloc_conf: str | None = None
    hccl_buffsize: float | None = None
    p2p_hccl_buffsize: float | None = None
    nccl_buffsize: float | None = None
    runtime_context: float | None = None
    # NCCL's NVLink SHARP buffers [D-NVLS]: NCCL_NVLS_ENABLE (None: NCCL's default, on where the switch has it),
    # NCCL_NVLS_CHUNKSIZE (bytes) and NCCL_NVLS_NCHANNELS (None: NCCL's defaults)
    nccl_nvls_enable: bool | None = None
    nccl_nvls_chunksize: float | None = None
    nccl_nvls_nchannels: int | None = None
    nccl_version: str | None = None  # "2.21.5": NCCL ≤ 2.21 allocates its NVLS buffers at start; None: not stated
    # Transformer Engine's layers (Megatron --transformer-impl transformer_engine): its cuBLASLt workspaces
    # [D-WORKSPACE]; None: the framework's default on a CUDA device
    transformer_engine: bool | None = None
    # a calibration profile's terms (sapp calibrate, estimator/calibrate): they apply to the profile's device
    allocator_slack_factor: float | None = None    # × the modelled allocator slack
    allocator_slack_fraction: float | None = None  # slack as a fraction of the tensor peak (static planners)
    comm_library_factor: float | None = None       # × the communication libraries' documented buffers
    calibration: str | None = None
    calibration_device: str | None = None
    # the search and the balancer: allocator slack per byte of activations, working sets and transient buffers
    # (the current plan's replay), instead of replaying each candidate
    allocator_slack_ratio: float | None = None
