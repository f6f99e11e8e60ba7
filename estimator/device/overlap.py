"""The buffers of overlapped tensor-parallel communication that are not PyTorch's symmetric memory [D-SYMM]:
Transformer Engine's userbuffers behind Megatron-LM's ``--tp-comm-overlap`` [D-UB] (registered outside the caching
allocator, held all run) and the op workspace of MindSpeed's MC2 fused matmul-communication kernels
(``--use-ascend-mc2``) [C-BUF.mc2] (handed out by the caching allocator for one op, a transient of the layer).
Both sizes are read from the libraries' sources; docs/decisions.md P-UB and P-MC2 say which version and what is
left out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..arr import Num, gt, maximum
from ..params import linear_modules

if TYPE_CHECKING:
    from ..resolve import Resolved

# ----------------------------------------------------------------------------------------- TE userbuffers [D-UB]
# transformer_engine/pytorch/module/base.py ``initialize_ub`` (TE ≥ 2.10): one communicator object per overlapped
# GEMM of a transformer layer, each with one registered buffer of the ``shape`` Megatron passes,
# (seq_length · micro_batch_size / cp, hidden) (megatron/training/initialize.py ``_initialize_tp_communicators``).
# Default methods: ring_exchange qkv_fprop fc1_fprop proj_dgrad fc2_dgrad (all-gather, CommOverlapP2P: tp chunks of
# shape[0]/tp rows, the full shape), pipeline proj_fprop fc2_fprop, bulk qkv_dgrad qkv_wgrad fc1_dgrad fc1_wgrad,
# external proj_wgrad fc2_wgrad (CommOverlap: the full shape). ``fp8_buf`` (the all-gather names) makes the buffer
# uint8 when Megatron runs FP8; the others keep ``dtype``, bfloat16 by default (Megatron passes none).
UB_GEMMS: tuple[tuple[str, bool], ...] = (  # (GEMM name, fp8_buf)
    ("qkv_fprop", True), ("fc1_fprop", True), ("proj_dgrad", True), ("fc2_dgrad", True),
    ("proj_fprop", False), ("fc2_fprop", False),
    ("qkv_dgrad", True), ("qkv_wgrad", False), ("fc1_dgrad", True), ("fc1_wgrad", False),
    ("proj_wgrad", True), ("fc2_wgrad", True),
)
UB_DTYPE_BYTES = 2  # initialize_ub(dtype=torch.bfloat16)
UB_FP8_BYTES = 1    # torch.uint8
# userbuffers-host.cpp ``create_communicator_grouped2`` (once per process): region 0, LOCALSIZE =
# 4·(NVTE_REG0_OFFSET + NVTE_REG0_FLAGS) with userbuffers.h's constants (op types 5, regions 32, SMs 32, NVLink 32,
# peers 8192): 4·(14 400 + 791 552) = 3 223 808 bytes; the flags, 2 GPU pages of 64 KiB; send/recv ids,
# 4·(1 + NVTE_MAX_REGIONS) bytes per rank of the job.
UB_REGION0_BYTES = 4 * ((2 * 32) * 32 + (2 * 32 * 32 + 32) * 2 + 8192 + 1024 * 5 + 8192 * 32 * 3)
UB_FLAG_BYTES = 2 * 65536
UB_ID_BYTES_PER_RANK = 4 * (1 + 32)


def ub_buffer_tokens(r: Resolved) -> Num:
    """shape[0] of every userbuffer: seq_length · micro_batch_size / context_parallel_size."""
    par = r.par
    return par.s * par.b / par.cp


def ub_bytes_per_token_row(r: Resolved) -> float:
    """Σ over the GEMMs of their buffer's bytes per element row (× hidden): 24 in bf16, 16 under FP8."""
    fp8 = r.flags.feat.fp8_on
    return float(sum(UB_FP8_BYTES if (fp8 and fp8_buf) else UB_DTYPE_BYTES for _, fp8_buf in UB_GEMMS))


def te_userbuffers(r: Resolved) -> Num:
    """[D-UB] Transformer Engine userbuffers of Megatron's ``--tp-comm-overlap`` (t > 1): Σ_GEMMs β_buf · S · h
    with S = s·b/cp, plus the communicator's region 0, flags and per-rank ids. Registered with
    ``register_user_buffer_collective`` (cuMemCreate with CUDA multicast, else cudaMalloc): outside the caching
    allocator, held for the whole run."""
    if not (r.flags.feat.async_tp and r.fw.name == "megatron"):
        return 0.0
    par = r.par
    world = par.d * par.t * par.p * par.cp
    buffers = ub_bytes_per_token_row(r) * ub_buffer_tokens(r) * r.dims.h
    return gt(par.t, 1) * (buffers + UB_REGION0_BYTES + UB_FLAG_BYTES + UB_ID_BYTES_PER_RANK * world)


def inputs_te_userbuffers(r: Resolved) -> dict[str, Any]:
    par = r.par
    return {"async_tp": r.flags.feat.async_tp, "framework": r.fw.name, "bytes_per_row": ub_bytes_per_token_row(r),
            "S": ub_buffer_tokens(r), "h": r.dims.h,
            "t": par.t, "fixed": UB_REGION0_BYTES + UB_FLAG_BYTES,
            "world": par.d * par.t * par.p * par.cp}


# ---------------------------------------------------------------------------------- MC2 op workspace [C-BUF.mc2]
# CANN ops-transformer (hicann/ops-transformer) mc2/all_gather_matmul and mc2/matmul_reduce_scatter op tiling,
# ``MC2SetWorkspace``: workspace = ND2NZ copy of the weight, ceil(k, 256 B)·ceil(n, 256 B)·β + the gathered input
# (all_gather_matmul without gather_output, as MindSpeed calls it: rank_dim·align512(m·k·β)) or the unreduced
# output (matmul_reduce_scatter: align512(m·n·β)) + a fixed 16 MiB. MindSpeed's
# ``mc2_linears_seq_parallel`` runs the column-parallel forwards as all_gather_matmul (gather_output False) and the
# row-parallel forwards as matmul_reduce_scatter; both hold S·h·β of activations besides the weight copy.
MC2_FIXED_BYTES = 16 * 1024 * 1024
MC2_ALIGN_BYTES = 256


def _nd2nz(k: Num, n: Num, beta: float) -> Num:
    import numpy as np

    align = MC2_ALIGN_BYTES / beta
    return np.ceil(k / align) * align * np.ceil(n / align) * align * beta


def mc2_workspace(r: Resolved, kind: str, tokens: Num) -> Num:
    """[C-BUF.mc2] the largest MC2 op workspace of a layer of ``kind`` (MindSpeed ``--use-ascend-mc2`` with
    sequence parallelism, t > 1): max over its TP linears fed by or reducing into the hidden states of
    nd2nz(local weight) + T·h·β_c + 16 MiB. 0 when MC2 is not in use."""
    f, par = r.flags, r.par
    if not (f.feat.async_tp and r.fw.name == "mindspeed"):
        return 0.0
    d, beta = r.dims, r.widths.c
    copies = [_nd2nz(k, n / par.t, beta) if placement == "col" else _nd2nz(k / par.t, n, beta)
              for k, n, placement in linear_modules(d, kind).values()
              if (placement == "col" and k == d.h) or (placement == "row" and n == d.h)]
    if not copies:
        return 0.0
    weights = copies[0]
    for copy in copies[1:]:
        weights = maximum(weights, copy)
    return gt(par.t, 1) * par.sp * (weights + tokens * d.h * beta + MC2_FIXED_BYTES)


__all__ = ["MC2_FIXED_BYTES", "UB_GEMMS", "inputs_te_userbuffers", "mc2_workspace", "te_userbuffers",
           "ub_buffer_tokens"]
