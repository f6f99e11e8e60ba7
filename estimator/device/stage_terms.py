"""The device-level memory terms as stage terms of the assembler (``assembly.terms.STAGE_TERMS``): library
workspaces [D-WORKSPACE], the caching allocator's slack [D-SLACK], the runtime context [D-CONTEXT] and the
communication libraries' buffers [D-COMM]. One plan (numbers) replays the caching allocator on the stage's
trace; the search and the balancer (arrays over candidates) scale their dynamic bytes by
``options.allocator_slack_ratio``, the slack the current plan's replay gives per byte of activations, working sets
and transient buffers (set by ``base_slack_ratio`` before they price)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..arr import Num, gt, is_array
from ..hardware import runtime_of
from ..messages import Message, joined, msg
from ..result import TENSOR_CATEGORIES
from ..units import fmt_bytes
from .communicators import (
    LibraryRule,
    NvlsRule,
    communicator_count,
    library_bytes,
    library_rule,
    local_ranks,
    nvls_bytes,
    nvls_rule,
    rank_groups,
)
from .memory import DEFAULT_CONTEXT, allocator_kind, allocator_slack, calibrated_options
from .workspaces import library_workspaces, uses_transformer_engine

if TYPE_CHECKING:
    from ..resolve import Resolved
    from ..stage import StagePricer


class StageView(Protocol):
    """What the device terms read of the assembler's stage view (``assembly.terms.StageView``; named here, not
    imported, so that the assembler can import these terms)."""

    r: Resolved
    stage: int
    categories: dict[str, Num]
    pricer: StagePricer | None

    @property
    def dynamic(self) -> Num: ...


def _runtime(view: StageView) -> str:
    return runtime_of(view.r.flags.framework)


def workspaces(view: StageView) -> Num:
    """[D-WORKSPACE] library workspaces handed out by the caching allocator (PyTorch's cuBLAS handles, Transformer
    Engine's cuBLASLt workspaces; ``workspaces``): part of the tensor peak."""
    return library_workspaces(view.r).total


def context(view: StageView) -> Num:
    """[D-CONTEXT] runtime context and library handles outside the allocator."""
    opts = calibrated_options(view.r)
    value = opts.runtime_context if opts.runtime_context is not None else \
        view.r.hardware.context_bytes(_runtime(view))
    return DEFAULT_CONTEXT if value is None else value


def comm_library(view: StageView) -> Num:
    """[D-COMM] Σ communicators × the library's documented bytes (× a calibration's factor), + NCCL's NVLS buffers
    [D-NVLS] with their band (none allocated … also the 2-rank communicators of NCCL ≥ 2.29)."""
    r = view.r
    opts = calibrated_options(r)
    rule = library_rule(r.hardware.comm_library, _runtime(view), opts.hccl_buffsize, opts.p2p_hccl_buffsize,
                        opts.nccl_buffsize)
    factor = 1.0 if opts.comm_library_factor is None else opts.comm_library_factor  # 0 is a stated value
    nvls = nvls_rule(r)
    library, nominal, high = _comm_bytes(r, view.stage, rule, nvls, view.pricer)
    pricer = view.pricer
    if nvls is not None and pricer is not None and not is_array(nominal):
        pricer.memo.setdefault(("device", view.stage), {}).update(
            {"comm_library_low": float(-nominal * factor), "comm_library_high": float((high - nominal) * factor)})
    return (library + nominal) * factor


def _comm_bytes(r: Resolved, stage: int, rule: LibraryRule, nvls: NvlsRule | None,
                pricer: StagePricer | None) -> tuple[Num, Num, Num]:
    """(library bytes, NVLS bytes, NVLS bytes at the band's high end) of a rank of ``stage``: its communicators
    differ between the end stages and the others only (``rank_groups``), so a pricer keeps one of each."""
    p = r.par.p
    key = ("comm-bytes", stage in (0, p - 1)) if pricer is not None and isinstance(p, int) else None
    got = pricer.memo.get(key) if pricer is not None and key is not None else None
    if got is None:
        groups = rank_groups(r, stage)
        nominal = nvls_bytes(groups, nvls)
        high = nvls_bytes(groups, nvls, min_local=2) if nvls is not None and not is_array(nominal) else nominal
        got = (library_bytes(groups, rule), nominal, high)
        if pricer is not None and key is not None:
            pricer.memo[key] = got
    return got  # type: ignore[return-value]


def symmetric_memory(view: StageView) -> Num:
    """[D-SYMM] PyTorch async TP's symmetric-memory workspace (torchtitan ``enable_async_tensor_parallel``):
    ``get_symm_mem_workspace`` keeps one buffer per TP group, grown to the largest request and never freed — a
    shard (β_c·h·T/t) for all-gather-matmul, two output chunks (2·β_c·h·T/t) for matmul-reduce-scatter — so
    2·β_c·h·T/t (torch/distributed/_symmetric_memory). ``empty_strided_p2p`` maps it outside the caching
    allocator: part of the device peak, not of max allocated."""
    r = view.r
    if not (r.flags.feat.async_tp and r.fw.fsdp_native):
        return 0.0
    t = r.par.t
    return gt(t, 1) * 2 * r.widths.c * r.model.hidden_size * r.par.T / t


def inputs_symmetric_memory(view: StageView) -> dict[str, Any]:
    r = view.r
    return {"async_tp": r.flags.feat.async_tp, "symmetric_memory": r.fw.fsdp_native, "beta_c": r.widths.c,
            "h": r.model.hidden_size, "T": r.par.T, "t": r.par.t}


def _tensors(view: StageView) -> Num:
    out: Num = 0.0
    for name in TENSOR_CATEGORIES:
        out = out + view.categories.get(name, 0.0)
    return out


def _dynamic(view: StageView) -> Num:
    return view.dynamic + view.categories["communication_buffers"]


# pricer memo keys set by ``device.stages.price_stages``: the stages replayed exactly, and for the others the slack
# per dynamic byte of those (with the band's relative ends and a note naming them)
REPLAYED = "allocator-replayed"
STAGE_RATIO = "allocator-stage-ratio"


def slack(view: StageView) -> Num:
    """[D-SLACK] the caching allocator's slack: replayed for the stages of one plan that can decide its peak, their
    slack per dynamic byte for its other stages, the current plan's ratio in the search and the balancer."""
    r = view.r
    opts = calibrated_options(r)
    kind, config, source = allocator_kind(r)
    ratio = r.options.allocator_slack_ratio
    pricer = view.pricer
    vector = is_array(r.par.d, r.par.t, r.par.cp, r.par.b, r.par.m, view.dynamic)
    replayed = pricer.memo.get(REPLAYED) if pricer is not None and not vector else None
    band: tuple[float, float, float] | None = None
    if kind == "static":
        value: Num = 0.0
    elif ratio is None and pricer is not None and not vector and (replayed is None or view.stage in replayed):
        from ..stage import stage_rows

        band = allocator_slack(pricer, view.stage, stage_rows(pricer, view.stage), config,
                               library_workspaces(r))
        value = band[0]
    else:
        low_rel = high_rel = 1.0
        if ratio is None and replayed is not None:  # a stage this estimate did not replay
            ratio, low_rel, high_rel, note = pricer.memo[STAGE_RATIO]  # type: ignore[index]
            source = msg("device.allocator-ratio", source=source, ratio=ratio, note=note)
        else:
            source = msg("device.allocator-ratio", source=source, ratio=ratio or 0.0,
                         note=msg("device.allocator-ratio-current"))
        value = (ratio or 0.0) * _dynamic(view)
        if not vector:
            band = (float(value), float(value) * low_rel, float(value) * high_rel)
    factor = opts.allocator_slack_factor
    fraction = opts.allocator_slack_fraction
    scale = (lambda x: x * factor) if factor is not None else (lambda x: x)
    extra = fraction * _tensors(view) if fraction is not None else 0.0
    value = scale(value) + extra
    if pricer is not None and not vector:
        low, high = (band[1], band[2]) if band else (value, value)
        pricer.memo[("device", view.stage)] = {
            "allocator": kind, "allocator_slack_low": float(scale(low) + extra),
            "allocator_slack_high": float(scale(high) + extra), "allocator_source": str(source),
            "allocator_replayed": bool(kind != "static" and ratio is None and
                                       (replayed is None or view.stage in replayed)),
            **({"calibration": r.options.calibration} if r.options.calibration else {})}
    return value


def inputs_workspaces(view: StageView) -> dict[str, Any]:
    r = view.r
    ws = library_workspaces(r)
    return {"runtime": _runtime(view), "cublas": ws.cublas, "transformer_engine": uses_transformer_engine(r)[0],
            "compute_capability": r.hardware.compute_capability, "te_workspaces": len(ws.te),
            "te_workspace": ws.te[0] if ws.te else 0.0, "ub_workspace": ws.ub}


def note_workspaces(view: StageView) -> Message:
    r = view.r
    ws = library_workspaces(r)
    te = msg("device.te-workspaces", count=len(ws.te), size=fmt_bytes(ws.te[0])) if ws.te else msg("device.te-none")
    if ws.ub and not is_array(ws.ub):
        te = msg("device.te-ub-workspace", te=te, size=fmt_bytes(float(ws.ub)))
    return msg("device.note-workspaces", cublas=fmt_bytes(ws.cublas), te=te, why=uses_transformer_engine(r)[1])


def inputs_context(view: StageView) -> dict[str, Any]:
    return {"runtime": _runtime(view), "device": view.r.hardware.id}


def inputs_comm(view: StageView) -> dict[str, Any]:
    opts = calibrated_options(view.r)
    rule = library_rule(view.r.hardware.comm_library, _runtime(view), opts.hccl_buffsize, opts.p2p_hccl_buffsize,
                        opts.nccl_buffsize)
    groups = rank_groups(view.r, view.stage)
    collective, p2p = communicator_count(groups)
    nvls = nvls_rule(view.r)
    return {"library": rule.library, "communicators": collective, "p2p_communicators": p2p,
            "per_communicator": rule.per_collective, "per_p2p": rule.per_p2p,
            "factor": 1.0 if opts.comm_library_factor is None else opts.comm_library_factor,
            "nvls": nvls is not None, "nvls_bytes": nvls_bytes(groups, nvls),
            "nvls_chunk": nvls.chunk if nvls else 0.0, "nvls_channels": nvls.channels if nvls else None}


def inputs_slack(view: StageView) -> dict[str, Any]:
    kind, _config, _source = allocator_kind(view.r)
    return {"allocator": kind, "ratio": view.r.options.allocator_slack_ratio,
            "calibration_factor": calibrated_options(view.r).allocator_slack_factor}


def note_comm(view: StageView) -> Message | str:
    opts = calibrated_options(view.r)
    rule = library_rule(view.r.hardware.comm_library, _runtime(view), opts.hccl_buffsize, opts.p2p_hccl_buffsize,
                        opts.nccl_buffsize)
    groups = rank_groups(view.r, view.stage)
    collective, p2p = communicator_count(groups)
    if is_array(collective, p2p):
        return ""
    note = msg("device.note-comm", collective=int(collective), p2p=int(p2p), rule=rule.rule)
    nvls = nvls_rule(view.r)
    nominal = nvls_bytes(groups, nvls)
    if nvls is None or not nominal:
        return note
    count = sum(int(g.count) for g in groups if not g.p2p and local_ranks(g, nvls.per_node) > 2)
    return joined([note, msg("device.note-nvls", nvls=fmt_bytes(nominal), count=count,
                                  high=fmt_bytes(nvls_bytes(groups, nvls, min_local=2)))])


def note_slack(view: StageView) -> Message:
    return allocator_kind(view.r)[2]


__all__ = ["comm_library", "context", "slack", "workspaces"]
