"""The device-level memory terms as stage terms of the assembler (``assembly.terms.STAGE_TERMS``): library
workspaces [D-WORKSPACE], the caching allocator's slack [D-SLACK], the runtime context [D-CONTEXT] and the
communication libraries' buffers [D-COMM]. One plan (numbers) replays the caching allocator on the stage's
trace; the search and the balancer (arrays over candidates) scale their dynamic bytes by
``options.allocator_slack_ratio``, the slack the current plan's replay gives per byte of activations, working sets
and transient buffers (set by ``base_slack_ratio`` before they price)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..arr import Num, gt, is_array
from ..hardware import runtime_of
from ..messages import Message, joined, msg
from ..result import TENSOR_CATEGORIES
from ..units import fmt_bytes
from .allocator import AllocatorConfig
from .communicators import (
    Group,
    LibraryRule,
    NvlsRule,
    communicator_count,
    eager_nvls_bytes,
    library_bytes,
    library_rule,
    local_ranks,
    nvls_band,
    nvls_rule,
    rank_groups,
)
from .memory import DEFAULT_CONTEXT, allocator_kind, allocator_slack, calibrated_options, replays_allocator
from .workspaces import LibraryWorkspaces, library_workspaces, uses_transformer_engine

if TYPE_CHECKING:
    from ..options import RunOptions
    from ..resolve import Resolved
    from ..stage import StagePricer


class StageView(Protocol):
    """What the device terms read of the assembler's stage view (``assembly.terms.StageView``; named here, not
    imported, so that the assembler can import these terms)."""

    r: Resolved
    stage: int | np.ndarray  # an array of one plan's stage indices where its stages are priced at once
    categories: dict[str, Num]
    pricer: StagePricer | None

    @property
    def dynamic(self) -> Num: ...


def _runtime(view: StageView) -> str:
    return runtime_of(view.r.flags.framework)


@dataclass(frozen=True)
class _Rules:
    """What the device terms read of a plan that does not depend on the stage: every stage of every pricing pass
    asks, so a pricer keeps one (``_rules``)."""

    options: RunOptions           # calibrated_options
    runtime: str
    workspaces: LibraryWorkspaces
    library: LibraryRule
    comm_factor: float
    nvls: NvlsRule | None
    allocator: tuple[str, AllocatorConfig, Message]  # allocator_kind
    replays: bool                 # replays_allocator
    vector: bool                  # the plan's d, t, cp, b or m an array (the search's candidates): no notes


_RULES = "device-rules"  # the pricer's memo key of its _Rules


def _rules(view: StageView) -> _Rules:
    return _plan_rules(view.r, view.pricer)


def _plan_rules(r: Resolved, pricer: StagePricer | None) -> _Rules:
    got = pricer.memo.get(_RULES) if pricer is not None else None
    if got is None:
        opts = calibrated_options(r)
        runtime = runtime_of(r.flags.framework)
        got = _Rules(opts, runtime, library_workspaces(r),
                     library_rule(r.hardware.comm_library, runtime, opts.hccl_buffsize, opts.p2p_hccl_buffsize,
                                  opts.nccl_buffsize),
                     1.0 if opts.comm_library_factor is None else opts.comm_library_factor,  # 0 is a stated value
                     nvls_rule(r), allocator_kind(r), replays_allocator(r),
                     is_array(r.par.d, r.par.t, r.par.cp, r.par.b, r.par.m))
        if pricer is not None:
            pricer.memo[_RULES] = got
    return got  # type: ignore[return-value]


def workspaces(view: StageView) -> Num:
    """[D-WORKSPACE] library workspaces handed out by the caching allocator (PyTorch's cuBLAS handles, Transformer
    Engine's cuBLASLt workspaces; ``workspaces``): part of the tensor peak."""
    return _rules(view).workspaces.total


def context(view: StageView) -> Num:
    """[D-CONTEXT] runtime context and library handles outside the allocator."""
    rules = _rules(view)
    value = rules.options.runtime_context if rules.options.runtime_context is not None else \
        view.r.hardware.context_bytes(rules.runtime)
    return DEFAULT_CONTEXT if value is None else value


def comm_library(view: StageView) -> Num:
    """[D-COMM] Σ communicators × the library's documented bytes (× a calibration's factor), + NCCL's NVLS buffers
    [D-NVLS] with their band by the NCCL version (``nvls_band``)."""
    r = view.r
    rules = _rules(view)
    pricer = view.pricer
    stage = view.stage
    if not isinstance(stage, np.ndarray):
        value, note = _comm_library(r, stage, rules, pricer)
        if note is not None:
            pricer.memo.setdefault(("device", stage), {}).update(note)  # type: ignore[union-attr]
        return value
    # one plan's stages as array elements (``assembly.stages``): an end stage's value or another's, each once
    last = int(r.par.p) - 1
    index = stage.tolist()
    ends = [i == 0 or i == last for i in index]
    by_end = {end: _comm_library(r, 0 if end else 1, rules, pricer) for end in set(ends)}
    if any(got[1] is not None for got in by_end.values()):
        for i, end in zip(index, ends, strict=True):
            note = by_end[end][1]
            if note is not None:
                pricer.memo.setdefault(("device", i), {}).update(note)  # type: ignore[union-attr]
    return np.array([by_end[end][0] for end in ends])


def _comm_library(r: Resolved, stage: int, rules: _Rules, pricer: StagePricer | None) -> tuple[Num, dict | None]:
    """``comm_library`` of one stage: its value and the NVLS band's note (None: no note)."""
    factor, nvls = rules.comm_factor, rules.nvls
    library, low, nominal, high = _comm_bytes(r, stage, rules.library, nvls, pricer)
    note = None
    if nvls is not None and pricer is not None and not is_array(nominal):
        note = {"comm_library_low": float((low - nominal) * factor),
                "comm_library_high": float((high - nominal) * factor)}
    return (library + nominal) * factor, note


def _comm_bytes(r: Resolved, stage: int, rule: LibraryRule, nvls: NvlsRule | None,
                pricer: StagePricer | None) -> tuple[Num, Num, Num, Num]:
    """(library bytes, NVLS bytes at the band's low end, nominal, at the high end) of a rank of ``stage``: its
    communicators differ between the end stages and the others only, and not at all over an array of pipeline
    degrees (``rank_groups``), so a pricer keeps one of each."""
    p = r.par.p
    key = ("comm-bytes", stage in (0, int(p) - 1) if isinstance(p, (int, float)) else None)
    got = pricer.memo.get(key) if pricer is not None else None
    if got is None:
        groups = rank_groups(r, stage)
        if _arrays(groups):  # the search's arrays: nominal only
            got = (library_bytes(groups, rule), *nvls_band(groups, nvls, band=False))
        else:
            got = _scalar_comm_bytes(tuple(groups), rule, nvls)
        if pricer is not None:
            pricer.memo[key] = got
    return got  # type: ignore[return-value]


def _arrays(groups: list[Group]) -> bool:
    for g in groups:  # noqa: SIM110 — a plain loop: any() over a generator costs more than the tests
        if is_array(g.size, g.count, g.stride):
            return True
    return False


@lru_cache(maxsize=256)
def _scalar_comm_bytes(groups: tuple[Group, ...], rule: LibraryRule, nvls: NvlsRule | None) -> tuple:
    """``_comm_bytes`` of one plan's rank, kept across estimates (every edit that keeps the communicators)."""
    return library_bytes(list(groups), rule), *nvls_band(list(groups), nvls)


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
# per dynamic byte of those (with the band's relative ends and a note naming them; None in the pass that prices
# every stage without slack to choose them: nothing is said of that pass)
REPLAYED = "allocator-replayed"
STAGE_RATIO = "allocator-stage-ratio"


def slack(view: StageView) -> Num:
    """[D-SLACK] the caching allocator's slack: replayed for the stages of one plan that can decide its peak, their
    slack per dynamic byte for its other stages, the current plan's ratio in the search and the balancer."""
    r = view.r
    pricer = view.pricer
    rules = _plan_rules(r, pricer)  # what it reads of the plan alone, kept per pricer: every stage asks, twice
    opts = rules.options
    kind, config, source = rules.allocator
    ratio = r.options.allocator_slack_ratio
    # one plan's stages as array elements (``assembly.stages``, a plan without replay): a note per stage
    stages = isinstance(view.stage, np.ndarray)
    dynamic = view.dynamic
    vector = rules.vector or (not stages and is_array(dynamic))
    replayed = pricer.memo.get(REPLAYED) if pricer is not None and not vector else None
    exact = rules.replays and pricer is not None and not vector and \
        (replayed is None or (not replayed.isdisjoint(view.stage.tolist()) if stages else view.stage in replayed))
    band: tuple[float, float, float] | None = None
    entry: tuple | None = None  # the replayed stages' ratio this stage takes
    said = pricer is not None and not vector
    if stages and exact:  # replayed stages are priced one by one (``device.stages``)
        raise ValueError("a replayed allocator's slack is priced stage by stage")
    if kind == "static":
        value: Num = 0.0
    elif exact:
        from ..stage import stage_rows

        band = allocator_slack(pricer, view.stage, stage_rows(pricer, view.stage), config,  # type: ignore[arg-type]
                               rules.workspaces)
        value = band[0]
    else:
        low_rel = high_rel = 1.0
        if ratio is None and replayed is not None:  # a stage this estimate did not replay
            entry = pricer.memo[STAGE_RATIO]  # type: ignore[union-attr]
            if entry is None:  # the pass without slack
                ratio, said = 0.0, False
            else:
                ratio, low_rel, high_rel, _note = entry
        value = (ratio or 0.0) * _dynamic(view)
        if stages:
            band = (value, value * low_rel, value * high_rel)
        elif not vector:
            band = (float(value), float(value) * low_rel, float(value) * high_rel)
    factor = opts.allocator_slack_factor
    fraction = opts.allocator_slack_fraction
    extra = fraction * _tensors(view) if fraction is not None else 0.0
    value = (value if factor is None else value * factor) + extra
    if said:
        if band:
            low, high = (band[1], band[2]) if factor is None else (band[1] * factor, band[2] * factor)
            low, high = low + extra, high + extra
        else:  # no band of its own (a static pool: only a calibrated fraction): its ends are the value itself
            low = high = value
        said_source = _said(pricer, source, kind == "static" or exact, entry, ratio)  # type: ignore[arg-type]
        if not stages:
            pricer.memo[("device", view.stage)] = _slack_note(r, kind, low, high, said_source, exact)  # type: ignore
        else:
            memo = pricer.memo  # type: ignore[union-attr]
            if isinstance(low, np.ndarray) or isinstance(high, np.ndarray):
                n = len(view.stage)
                lows = low.tolist() if isinstance(low, np.ndarray) else [low] * n
                highs = high.tolist() if isinstance(high, np.ndarray) else [high] * n
                for i, lo, hi in zip(view.stage.tolist(), lows, highs, strict=True):
                    memo[("device", i)] = _slack_note(r, kind, lo, hi, said_source, exact)
            else:  # one band for every stage (a static pool): one note, a copy each
                note = _slack_note(r, kind, low, high, said_source, exact)
                for i in view.stage.tolist():
                    memo[("device", i)] = dict(note)
    return value


def _slack_note(r: Resolved, kind: str, low: Num, high: Num, source: str, exact: bool) -> dict[str, Any]:
    note = {"allocator": kind, "allocator_slack_low": float(low), "allocator_slack_high": float(high),
            "allocator_source": source, "allocator_replayed": exact}
    if r.options.calibration:
        note["calibration"] = r.options.calibration
    return note


def terms_key(pricer: StagePricer, stage: int) -> tuple | None:
    """What the stage terms of one plan's stage read besides the plan's rows (the row book's key: the plan but m and
    n_acc) and the stage's tensors: none of them reads m but the allocator replay, so a stage replayed exactly
    gives its replay's band (its trace and replays are kept, ``memory.stage_events``), and another stage of a
    replaying plan the replayed stages' ratio (None in the pass that prices every stage without slack to choose
    them: ``device.stages``); a plan whose allocator is not replayed nothing. Numbers only (the search's
    arrays: None)."""
    r = pricer.r
    if is_array(r.par.m, r.par.d, r.par.t, r.par.p):
        return None
    rules = _plan_rules(r, pricer)
    if not rules.replays:
        return ()
    replayed = pricer.memo.get(REPLAYED)
    if replayed is None or stage in replayed:
        from ..stage import stage_rows

        return "replayed", allocator_slack(pricer, stage, stage_rows(pricer, stage), rules.allocator[1],
                                           rules.workspaces)
    return "ratio", pricer.memo[STAGE_RATIO]


def terms_keys(pricer: StagePricer, stages: list[int]) -> list[tuple | None]:
    """``terms_key`` of each of one plan's stages ``stages``, the replayed stages' ratio read once for those not
    replayed."""
    r = pricer.r
    replayed = pricer.memo.get(REPLAYED)
    if replayed is None or not _plan_rules(r, pricer).replays or is_array(r.par.m, r.par.d, r.par.t, r.par.p):
        return [terms_key(pricer, i) for i in stages]
    ratio = ("ratio", pricer.memo[STAGE_RATIO])
    return [terms_key(pricer, i) if i in replayed else ratio for i in stages]


def _said(pricer: StagePricer, source: Message, plain: bool, entry: tuple | None, ratio: float | None) -> str:
    """``_allocator_said``, kept in the pricer's memo where it reads the plan (``source``: its allocator) and the
    replayed stages' ratio (``entry``, by identity) alone: every stage priced by that ratio says the same."""
    if not plain and entry is None:  # the current plan's ratio (the options'): as said
        return _allocator_said(source, plain, entry, ratio)
    key = ("allocator-said", plain)
    got = pricer.memo.get(key)
    if got is None or got[0] is not entry or got[1] is not source:  # type: ignore[index]
        got = pricer.memo[key] = (entry, source, _allocator_said(source, plain, entry, ratio))
    return got[2]  # type: ignore[index]


def _allocator_said(source: Message, plain: bool, entry: tuple | None, ratio: float | None) -> str:
    """The allocator note of a stage: where the allocator's configuration came from, and for a stage priced by a
    ratio which one (the replayed stages', ``entry``, or the current plan's)."""
    if plain:
        return _english(source)
    if entry is not None:
        return _english(msg("device.allocator-ratio", source=source, ratio=entry[0], note=entry[3]))
    return _english(msg("device.allocator-ratio", source=source, ratio=ratio or 0.0,
                        note=msg("device.allocator-ratio-current")))


@lru_cache(maxsize=64)
def _english(message: Message) -> str:
    """A note rendered once for the stages (and the estimates) that share it."""
    return str(message)


def inputs_workspaces(view: StageView) -> dict[str, Any]:
    r = view.r
    ws = _rules(view).workspaces
    return {"runtime": _runtime(view), "cublas": ws.cublas, "transformer_engine": uses_transformer_engine(r)[0],
            "compute_capability": r.hardware.compute_capability, "te_workspaces": len(ws.te),
            "te_workspace": ws.te[0] if ws.te else 0.0, "ub_workspace": ws.ub}


def note_workspaces(view: StageView) -> Message:
    r = view.r
    ws = _rules(view).workspaces
    te = msg("device.te-workspaces", count=len(ws.te), size=fmt_bytes(ws.te[0])) if ws.te else msg("device.te-none")
    if ws.ub and not is_array(ws.ub):
        te = msg("device.te-ub-workspace", te=te, size=fmt_bytes(float(ws.ub)))
    return msg("device.note-workspaces", cublas=fmt_bytes(ws.cublas), te=te, why=uses_transformer_engine(r)[1])


def inputs_context(view: StageView) -> dict[str, Any]:
    return {"runtime": _runtime(view), "device": view.r.hardware.id}


def inputs_comm(view: StageView) -> dict[str, Any]:
    rules = _rules(view)
    rule, nvls = rules.library, rules.nvls
    groups = rank_groups(view.r, view.stage)
    collective, p2p = communicator_count(groups)
    return {"library": rule.library, "communicators": collective, "p2p_communicators": p2p,
            "per_communicator": rule.per_collective, "per_p2p": rule.per_p2p, "factor": rules.comm_factor,
            "nvls": nvls is not None, "nvls_bytes": nvls_band(groups, nvls)[1],
            "nccl_version": view.r.options.nccl_version,
            "nvls_chunk": nvls.chunk if nvls else 0.0, "nvls_channels": nvls.channels if nvls else None}


def inputs_slack(view: StageView) -> dict[str, Any]:
    kind, _config, _source = allocator_kind(view.r)
    return {"allocator": kind, "ratio": view.r.options.allocator_slack_ratio,
            "calibration_factor": _rules(view).options.allocator_slack_factor}


def note_comm(view: StageView) -> Message | str:
    rules = _rules(view)
    groups = rank_groups(view.r, view.stage)
    collective, p2p = communicator_count(groups)
    if is_array(collective, p2p):
        return ""
    note = msg("device.note-comm", collective=int(collective), p2p=int(p2p), rule=rules.library.rule)
    nvls = rules.nvls
    if nvls is None:
        return note
    _low, nominal, high = nvls_band(groups, nvls)
    if not nominal and not high:
        return note
    era = nvls.eager()
    stated = (view.r.options.nccl_version or "").strip()
    if era is not None:
        count = sum(int(eager_nvls_bytes([g], nvls, era) > 0) * int(g.count) for g in groups if not g.p2p)
        channels, buffer = nvls.eager_sizes(era)
        return joined([note, msg("device.note-nvls-eager", version=stated, nvls=fmt_bytes(nominal),
                                 count=count, channels=channels, buffer=fmt_bytes(buffer))])
    count = sum(int(g.count) for g in groups if not g.p2p and local_ranks(g, nvls.per_node) > 2)
    version = msg("device.nvls-version-assumed") if nvls.version is None else \
        msg("device.nvls-version-stated", version=stated)
    if high == nominal:
        why: Message | str = ""
    elif nvls.version is None and nvls.compute_capability < 10:
        why = msg("device.nvls-high-eager")
    else:
        why = msg("device.nvls-high-two-rank")
    return joined([note, msg("device.note-nvls", nvls=fmt_bytes(nominal), count=count, version=version,
                             high=fmt_bytes(high), why=why)])



def note_slack(view: StageView) -> Message:
    return allocator_kind(view.r)[2]


__all__ = ["comm_library", "context", "slack", "terms_key", "terms_keys", "workspaces"]
