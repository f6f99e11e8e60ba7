"""Library workspaces the caching allocator hands out [D-WORKSPACE] (issue 10): they count as allocated, so they
are part of the tensor peak and of the allocator's trace.

- PyTorch's cuBLAS handles: the preset's figure per runtime (``workspaces``; 2 × 32 MiB on sm90+, one handle for
  the forward thread and one for the autograd engine's device thread, measured on the H200).
- Transformer Engine's cuBLASLt workspaces, when the layers are TE's (Megatron's default
  ``--transformer-impl transformer_engine``, MindSpeed on a CUDA device, FP8 through TE). TE sizes one workspace by
  the device's compute capability — 32 MiB + 1 KiB on cc ≥ 9.0 (TE ≥ 2.8: "32 MiB for NVFP4 GEMM, plus 1024 B for
  alignment and scales"; 32 MiB before), 4 MiB below — and keeps it for the process
  (``transformer_engine/pytorch/cpp_extensions/gemm.py`` ``get_cublas_workspace_size_bytes`` /
  ``get_cublas_workspace``; ``module/base.py`` ``get_workspace`` up to TE 2.9). Grouped GEMMs (MoE experts through
  ``TEGroupedLinear``, Megatron ``--moe-grouped-gemm``) add one workspace per compute stream,
  ``nvte_get_num_compute_streams()`` = 4 (``common/util/multi_stream.cpp``; ``get_multi_stream_cublas_workspace``).
  Userbuffer GEMMs (Megatron ``--tp-comm-overlap``, t > 1) take their own cached workspace of
  ``_NUM_MAX_UB_STREAMS`` = 3 sizes (``get_cublas_workspace(ub=True)``, TE ≥ 2.10; TE ≤ 2.9 replaced the
  process's by a 3 × copy), one more allocation here; the userbuffers themselves are [D-UB] (P-UB).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arr import Num, gt, is_array
from ..hardware import runtime_of
from ..messages import Message, msg
from ..resolve import Resolved
from ..units import KiB, MiB
from ..warnings import Assumption

TE_WORKSPACE_SM90 = 32 * MiB + 1 * KiB   # compute capability ≥ 9.0 (TE ≥ 2.8; 32 MiB before)
TE_WORKSPACE_OLDER = 4 * MiB
TE_COMPUTE_STREAMS = 4                   # grouped GEMM: one workspace per compute stream
TE_UB_STREAMS = 3                        # _NUM_MAX_UB_STREAMS: the userbuffer GEMMs' workspace is 3 sizes
TE_FRAMEWORKS = ("megatron", "mindspeed")  # TransformerConfig.transformer_impl defaults to transformer_engine


@dataclass(frozen=True)
class LibraryWorkspaces:
    """The workspaces one process holds: PyTorch's cuBLAS handles (two, one per thread that runs GEMMs) and
    Transformer Engine's cuBLASLt workspaces (each its own allocation)."""

    cublas: float = 0.0
    te: tuple[float, ...] = ()
    ub: Num = 0.0  # the userbuffer GEMMs' workspace (``ub_workspace``), one allocation

    @property
    def total(self) -> Num:
        return self.cublas + sum(self.te) + self.ub


def te_workspace_size(compute_capability: float) -> float:
    """TE's ``get_cublas_workspace_size_bytes``: 32 MiB + 1 KiB from Hopper on, 4 MiB before."""
    return TE_WORKSPACE_SM90 if compute_capability >= 9.0 else TE_WORKSPACE_OLDER


def uses_transformer_engine(r: Resolved) -> tuple[bool, Message]:
    """(whether the layers are Transformer Engine's, why): stated, the framework's default, FP8 through TE — never
    on a device without CUDA (Ascend)."""
    if r.hardware.compute_capability is None:
        return False, msg("device.te-no-cuda")
    if r.options.transformer_engine is not None:
        return r.options.transformer_engine, msg("device.te-stated")
    if r.flags.framework in TE_FRAMEWORKS:
        return True, msg("device.te-framework-default", framework=r.fw.title)
    feat = r.flags.feat
    if feat.fp8_on and feat.fp8_impl == "te":
        return True, msg("device.te-fp8")
    return False, msg("device.te-not-used", framework=r.fw.title)


def te_assumption(r: Resolved) -> Assumption | None:
    """The assumption said when TE is taken from the framework's default rather than stated."""
    if r.hardware.compute_capability is None or r.options.transformer_engine is not None or \
            r.flags.framework not in TE_FRAMEWORKS:
        return None
    return Assumption("options.transformer_engine", True, msg("device.te-framework-default", framework=r.fw.title))


def te_workspaces(r: Resolved) -> tuple[float, ...]:
    used, _why = uses_transformer_engine(r)
    cc = r.hardware.compute_capability
    if not used or cc is None:
        return ()
    size = te_workspace_size(cc)
    grouped = TE_COMPUTE_STREAMS if r.dims.moe and r.strategy.grouped_gemm else 0
    return (size,) * (1 + grouped)


def ub_workspace(r: Resolved) -> Num:
    """The userbuffer GEMMs' cuBLAS workspace, TE_UB_STREAMS sizes (Megatron ``--tp-comm-overlap``, t > 1)."""
    used, _why = uses_transformer_engine(r)
    cc = r.hardware.compute_capability
    if not (used and cc is not None and r.flags.feat.async_tp and r.fw.name == "megatron"):
        return 0.0
    t = r.par.t
    size = TE_UB_STREAMS * te_workspace_size(cc)
    if is_array(t):  # the search and the balancer: per candidate
        return size * gt(t, 1)
    return size if t > 1 else 0.0


_KEPT: dict = {}  # one plan's workspaces per what they read (``_reads``)


def _reads(r: Resolved) -> tuple | None:
    """What ``library_workspaces`` reads, by value and type: the device's workspace figures and compute capability,
    the framework, the stated TE use, FP8, async TP, MoE with grouped GEMMs and the TP degree. None with arrays."""
    hw, f, t = r.hardware, r.flags, r.par.t
    if is_array(t) or type(hw.workspaces) is not tuple:
        return None
    feat = f.feat
    cc = hw.compute_capability
    return (hw.workspaces, cc, type(cc), f.framework, r.fw.name, r.options.transformer_engine, feat.fp8_on,
            feat.fp8_impl, feat.async_tp, r.dims.moe, r.strategy.grouped_gemm, t, type(t))


def library_workspaces(r: Resolved) -> LibraryWorkspaces:
    """The workspaces of a rank of the plan, kept per what they read (every estimate asks)."""
    key = _reads(r)
    if key is None:
        return _library_workspaces(r)
    got = _KEPT.get(key)
    if got is None:
        if len(_KEPT) >= 64:
            _KEPT.clear()
        got = _KEPT[key] = _library_workspaces(r)
    return got


def _library_workspaces(r: Resolved) -> LibraryWorkspaces:
    cublas = r.hardware.workspace_bytes(runtime_of(r.flags.framework)) or 0.0
    return LibraryWorkspaces(cublas, te_workspaces(r), ub_workspace(r))


__all__ = ["TE_COMPUTE_STREAMS", "TE_FRAMEWORKS", "TE_UB_STREAMS", "TE_WORKSPACE_OLDER", "TE_WORKSPACE_SM90",
           "LibraryWorkspaces", "library_workspaces", "te_assumption", "te_workspace_size", "te_workspaces",
           "ub_workspace", "uses_transformer_engine"]
