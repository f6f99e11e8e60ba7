"""The buffers of overlapped tensor-parallel communication that are not PyTorch's symmetric memory [D-SYMM]:
Transformer Engine's userbuffers behind Megatron-LM's ``--tp-comm-overlap`` [D-UB] (registered outside the caching
allocator, held all run) and the op workspace of MindSpeed's MC2 fused matmul-communication kernels
(``--use-ascend-mc2``) [C-BUF.mc2] (handed out by the caching allocator for one op, a transient of the layer).
Both sizes are read from the libraries' sources; docs/decisions.md P-UB and P-MC2 say which version and what is
left out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..arr import Num, gt, maximum
from ..messages import msg
from ..params import linear_modules

if TYPE_CHECKING:
    from ..resolve import Resolved
    from ..strategy import UbGemm

# ----------------------------------------------------------------------------------------- TE userbuffers [D-UB]
# transformer_engine/pytorch/module/base.py ``initialize_ub`` (TE ≥ 2.10): one communicator object per overlapped
# GEMM of a transformer layer, each with one registered buffer of the ``shape`` Megatron passes,
# (seq_length · micro_batch_size / cp, hidden) (megatron/training/initialize.py ``_initialize_tp_communicators``).
# Default methods: ring_exchange qkv_fprop fc1_fprop proj_dgrad fc2_dgrad (all-gather, CommOverlapP2P: tp chunks of
# shape[0]/tp rows, the full shape), pipeline proj_fprop fc2_fprop, bulk qkv_dgrad qkv_wgrad fc1_dgrad fc1_wgrad,
# external proj_wgrad fc2_wgrad (CommOverlap: the full shape). ``fp8_buf`` (the all-gather names) makes the buffer
# uint8 when Megatron runs FP8; the others keep ``dtype``, bfloat16 by default (Megatron passes none).
UB_DTYPE_BYTES = 2  # initialize_ub(dtype=torch.bfloat16)
UB_FP8_BYTES = 1    # torch.uint8
# userbuffers-host.cpp ``create_communicator_grouped2`` (once per process): region 0, LOCALSIZE =
# 4·(NVTE_REG0_OFFSET + NVTE_REG0_FLAGS) with userbuffers.h's constants (op types 5, regions 32, SMs 32, NVLink 32,
# peers 8192): 4·(14 400 + 791 552) = 3 223 808 bytes; the flags, 2 GPU pages of 64 KiB; send/recv ids,
# 4·(1 + NVTE_MAX_REGIONS) bytes per rank of the job.
UB_REGION0_BYTES = 4 * ((2 * 32) * 32 + (2 * 32 * 32 + 32) * 2 + 8192 + 1024 * 5 + 8192 * 32 * 3)
UB_FLAG_BYTES = 2 * 65536
UB_ID_BYTES_PER_RANK = 4 * (1 + 32)


# initialize_ub's per-GEMM defaults: the method lists, which GEMMs reduce-scatter, which all-gather (fp8_buf), the
# dgrads a user config may move off ``bulk`` (their wgrad then all-gathers), the wgrads that need ``external``
UB_METHODS = (("ring_exchange", ("qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad")),
              ("pipeline", ("proj_fprop", "fc2_fprop")),
              ("bulk", ("qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad")),
              ("external", ("proj_wgrad", "fc2_wgrad")))
UB_REDUCE_SCATTER = ("proj_fprop", "fc2_fprop", "qkv_wgrad", "fc1_wgrad")
UB_MOVABLE_DGRADS = ("qkv_dgrad", "fc1_dgrad")
UB_EXTERNAL = {"proj_wgrad": "proj_dgrad", "fc2_wgrad": "fc2_dgrad"}
# initialize_ub's add_ub keywords: a user setting outside them makes TE fail (TypeError); those besides method,
# is_reduce_scatter and fp8_buf change no buffer size (stream, SM and split counts)
UB_SETTINGS = ("method", "is_reduce_scatter", "num_sm", "cga_size", "set_sm_margin", "num_splits", "aggregate",
               "atomic_gemm", "use_ce", "fp8_buf", "comm_priority", "gemm_priority", "pipeline_rs_overlap_first_gemm")


def ub_gemms(settings: tuple[UbGemm, ...] = ()) -> list[tuple[str, str, bool, bool]]:
    """(name, method, is_reduce_scatter, fp8_buf) of every userbuffer communicator ``initialize_ub`` creates with
    the user settings ``settings`` (``--tp-comm-overlap-cfg``), as TE ≥ 2.10 applies them: a qkv/fc1 dgrad moved
    off ``bulk`` reduce-scatters (and stops all-gathering) while its wgrad all-gathers; a user setting replaces the
    default; fp8_buf stays TE's rule — the all-gather GEMMs, and a ``pipeline`` GEMM whose setting asks for it.
    Raises ValueError where TE does (``ub_problem`` says it in words)."""
    user = {g.name: g for g in settings}
    methods = {m: list(names) for m, names in UB_METHODS}
    reduce_scatter = list(UB_REDUCE_SCATTER)
    all_gather = [n for _m, names in UB_METHODS for n in names if n not in UB_REDUCE_SCATTER]
    for name in UB_MOVABLE_DGRADS:
        got = user.get(name)
        if got is not None and got.method not in (None, "bulk"):
            wgrad = name.replace("dgrad", "wgrad")
            if wgrad in user:
                raise ValueError(msg("W-UB-CFG.wgrad", wgrad=wgrad, dgrad=name, method=got.method))
            reduce_scatter.remove(wgrad)
            all_gather.remove(name)
            reduce_scatter.append(name)
            methods["bulk"].remove(name)
            methods[got.method].append(name)
    out = []
    for method in ("ring_exchange", "pipeline", "bulk", "external"):
        for name in methods[method]:
            got = user.get(name)
            chosen = got.method if got is not None and got.method is not None else method
            rs = got.is_reduce_scatter if got is not None and got.is_reduce_scatter is not None else \
                name in reduce_scatter
            fp8_buf = name in all_gather or bool(got is not None and got.fp8_buf and name in methods["pipeline"])
            if chosen == "pipeline" and not rs:
                raise ValueError(msg("W-UB-CFG.pipeline-ag", name=name))
            if name in UB_EXTERNAL and (chosen != "external" or UB_EXTERNAL[name] not in methods["ring_exchange"]):
                raise ValueError(msg("W-UB-CFG.external", name=name, dgrad=UB_EXTERNAL[name]))
            out.append((name, chosen, rs, fp8_buf))
    return out


# TE's defaults: (GEMM name, fp8_buf)
UB_GEMMS: tuple[tuple[str, bool], ...] = tuple((name, fp8_buf) for name, _m, _rs, fp8_buf in ub_gemms())


def ub_buffer_tokens(r: Resolved) -> Num:
    """shape[0] of every userbuffer: seq_length · micro_batch_size / context_parallel_size."""
    par = r.par
    return par.s * par.b / par.cp


def ub_bytes_per_token_row(r: Resolved) -> Num:
    """Σ over the GEMMs of their buffer's bytes per element row (× hidden): 24 in bf16, 16 under FP8 with TE's
    defaults. A ``ring_exchange`` reduce-scatter (CommOverlapP2P) holds 2t − 1 chunks of S/t rows: (2t − 1)/t of
    the shape (``comm_gemm_overlap.cpp``); every other buffer the shape itself."""
    fp8, t = r.flags.feat.fp8_on, r.par.t
    out: Num = 0.0
    for _name, method, rs, fp8_buf in ub_gemms(r.strategy.tp_comm_overlap_cfg):
        width = UB_FP8_BYTES if (fp8 and fp8_buf) else UB_DTYPE_BYTES
        out = out + (width * (2 * t - 1) / t if (method == "ring_exchange" and rs) else width)
    return out


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


__all__ = ["MC2_FIXED_BYTES", "UB_GEMMS", "UB_SETTINGS", "inputs_te_userbuffers", "mc2_workspace", "te_userbuffers",
           "ub_buffer_tokens", "ub_gemms"]
