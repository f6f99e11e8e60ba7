"""Pricing surviving candidates group by group (docs/model.md#search, docs/model.md#stage-assembly): candidates that
share a layout and the group-level flags (pp, vpp, recompute mode, schedule, sharding mode) are priced at once by the
scalar code with numpy arrays of degrees, memory and step time alike."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import SappError
from ..hardware import Hardware
from ..layout import Layout, build_layout, layout_inputs
from ..model import ModelSpec
from ..options import RunOptions
from ..parsed import ParsedConfig
from ..rescale import rescale, rescale_vision
from ..resolve import DEGREES, Par, Resolved, Settled, resolve, resolve_settled, settle
from ..result import OUTSIDE_ALLOCATOR
from ..reuse import typed
from ..strategy import RecomputePlan, Strategy
from ..vector import price_group, with_par
from .candidates import KEEP_PARSED_REC, Candidates
from .space import RECOMPUTE_NAMES

GROUP_KEY = ("p", "vp", "rec", "schedule", "hsdp")


@dataclass
class Priced:
    """Per candidate (arrays aligned with the candidates given)."""

    peak: np.ndarray
    peak_stage: np.ndarray
    optimizer_step_peak: np.ndarray
    step_time: np.ndarray
    tokens_per_s_per_device: np.ndarray
    mfu: np.ndarray
    allocator_peak: np.ndarray | None = None  # per candidate: max over stages of what the allocator holds
    host: np.ndarray | None = None  # [H-DEVICE] host memory per device (the largest stage's), offload and swap
    # each stage's device peak, kept as each priced group computed it ([p, its candidates]; a [candidates, p_max]
    # table would be ~60 MB of fresh memory for DeepSeek-V3 on 1,024 devices, read for a few ranked rows)
    group_stages: list[np.ndarray] = dataclasses.field(default_factory=list)
    group: np.ndarray | None = None   # per candidate: its index into group_stages (-1: not priced)
    column: np.ndarray | None = None  # per candidate: its column there

    def stage_peaks(self, k: int) -> np.ndarray:
        """Candidate ``k``'s device peak per stage (its p stages); a candidate not priced (a cancelled search) has
        none."""
        group = int(self.group[k])
        if group < 0:
            raise ValueError(f"candidate {k} was not priced")
        return self.group_stages[group][:, int(self.column[k])]


class Resolver:
    """``resolve`` for the candidates of one search (``parsed``: the search's plan, its slack ratio set). They
    differ from the plan in ``resolve.DEGREES`` and the sharding alone, so ``settle`` — what resolving reads but
    the degrees and, of the recompute plan, only its rule (~0.4 ms) — is made once per distinct rest of the
    strategy (a shard size, mostly) instead of once per priced group and ranked row: 170 times per search of
    DeepSeek-V3 on 1,024 devices, 46–80 ms (2026-12-02). Keyed as ``reuse.settled`` keys it, by value and type
    (``reuse.typed``), on the strategy without DEGREES and on the rule; the model and options are the plan's."""

    def __init__(self, parsed: ParsedConfig) -> None:
        self.parsed = parsed
        self._settled: dict[tuple, Settled] = {}

    def __call__(self, strategy: Strategy) -> Resolved:
        parsed, rule = self.parsed, strategy.recompute.rule
        key = (typed(strategy, DEGREES), rule, type(rule))
        got = self._settled.get(key)
        if got is None:
            got = self._settled[key] = settle(parsed.model, strategy, parsed.options)
        return resolve_settled(got, parsed.model, strategy, parsed.hardware, parsed.options)


def candidate_strategy(parsed: ParsedConfig, row: dict[str, int], schedule: str, as_written: bool = True,
                       resolver: Resolver | None = None) -> Strategy:
    """The Strategy of one candidate, exactly as ``estimate`` would price it; ``as_written``: with the framework's
    defaults left unstated as the plan leaves them (``_defaults_unstated``: what a ranked row applies). Without,
    it resolves to the same degrees and flags — all that pricing reads of the difference — for two resolves less."""
    st = parsed.strategy
    fsdp_native = parsed.options.framework in ("torchtitan", "hyperparallel") and \
        st.sharding.mode in ("fsdp", "hsdp")
    sharding = st.sharding
    changes: dict = {"dp": row["d"], "tp": row["t"], "pp": row["p"], "vpp": row["vp"], "cp": row["cp"],
                     "ep": row["ep"], "micro_batch_size": row["b"], "micro_batches": row["m"],
                     "sequence_parallel": bool(row["sp"]), "schedule": schedule}
    if parsed.model.is_moe:
        changes["etp"] = row["etp"]
    if st.cp_algo == "ulysses":
        changes["ulysses_degree"] = None
    if fsdp_native:
        d_rep = row["d"] // row["d_sh"] if row["d_sh"] and row["d"] % row["d_sh"] == 0 else 1
        mode = "hsdp" if d_rep > 1 else "fsdp"
        changes["d_rep"] = d_rep if mode == "hsdp" else None
        changes["d_sh"] = row["d_sh"] if mode == "hsdp" else None
        sharding = dataclasses.replace(sharding, mode=mode, os=row["os"], os_e=None)
    elif sharding.mode != "none":
        sharding = dataclasses.replace(sharding, os=row["os"], os_e=sharding.os_e)
    changes["sharding"] = sharding
    if st.vision_partition is not None and row["p"] != st.pp:
        changes["vision_partition"] = rescale_vision(st.vision_partition, row["p"])
    candidate = st.replace(**changes)
    if as_written:
        candidate = _defaults_unstated(parsed, candidate, resolver or Resolver(parsed))
    # the plan's own layer layout (offsets, partition) and recompute lists stay where the dimensions allow:
    # as written at the plan's pp/vpp, mapped onto the candidate's otherwise (docs/model.md#rescaling)
    keeps_layout = st.offset is not None or st.partition is not None
    if (row["p"], row["vp"]) != (st.pp, st.vpp) and (keeps_layout or row["rec"] == KEEP_PARSED_REC):
        candidate = dataclasses.replace(candidate, **dict(_rescaled(parsed.model, st, parsed.hardware,
                                                                     parsed.options, row["p"], row["vp"])))
    if row["rec"] == KEEP_PARSED_REC:
        return candidate
    # a uniform recompute mode replaces the plan's recompute; noop layers stay: they pad the stack so that
    # PP×VPP divides it (the filters count them too)
    return candidate.replace(recompute=RecomputePlan(default_mode=RECOMPUTE_NAMES[row["rec"]], rule=st.recompute.rule,
                                                     switches=st.recompute.switches))


@lru_cache(maxsize=8)
def plan_layout(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions) -> Layout:
    """The plan's own layout, which every candidate at other pipeline degrees is mapped from (kept: one search
    asks for it once per group and per ranked row)."""
    return build_layout(layout_inputs(resolve(model, strategy, hardware, options)))


@lru_cache(maxsize=64)
def _rescaled(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions, p: int,
              vp: int) -> tuple[tuple[str, object], ...]:
    """The fields ``rescale`` changes when it maps the plan's layout onto (p, vp): its offsets, partition and
    recompute lists, which it computes from those of the plan and the plan's layout alone — so every candidate
    at (p, vp), which keeps them from the plan, takes the same (kept: a search asks once per group and row)."""
    ours = rescale(strategy, plan_layout(model, strategy, hardware, options), p, vp)
    return tuple((name, getattr(ours, name)) for name in ("offset", "partition", "recompute")
                 if getattr(ours, name) is not getattr(strategy, name))


def _defaults_unstated(parsed: ParsedConfig, candidate: Strategy, resolver: Resolver) -> Strategy:
    """The candidate with expert TP, optimizer shard size and schedule left unstated where the plan leaves them
    to the framework and the framework's default gives the candidate's value: applying or exporting the row then
    writes only what changes (a launch script cannot state a shard size, for one)."""
    st = parsed.strategy
    same_schedule = candidate.replace(schedule=st.schedule).schedule_name == candidate.schedule_name
    plain = candidate.replace(etp=st.etp if st.etp is None else candidate.etp,
                              schedule=st.schedule if same_schedule else candidate.schedule,
                              sharding=dataclasses.replace(candidate.sharding, os=None)
                              if st.sharding.os is None else candidate.sharding)
    if plain == candidate:
        return candidate
    try:
        ours, plains = (resolver(s) for s in (candidate, plain))
    except SappError:
        return candidate
    return plain if (ours.par, ours.flags) == (plains.par, plains.flags) else candidate


def group_keys(cands: Candidates, derived: dict[str, np.ndarray]) -> np.ndarray:
    c = cands.columns
    hsdp = (derived["d_rep"] > 1).astype(np.int64)
    sched = derived["schedule_code"]
    key = c["p"]
    for column, size in ((c["vp"], 64), (c["rec"] + 1, 4), (sched, 8), (hsdp, 2)):
        key = key * size + column
    return key


def price_candidates(parsed: ParsedConfig, cands: Candidates, derived: dict[str, np.ndarray],
                     time_fn: Callable | None, should_stop: Callable[[], bool] | None = None,
                     on_group: Callable[[int], None] | None = None, chunk: int = 16_384,
                     resolver: Resolver | None = None) -> Priced:
    """Memory and step time of every candidate; groups are priced in turn, in chunks of at most ``chunk``
    candidates (``should_stop`` is polled between chunks; unpriced candidates stay NaN). ``resolver``: the
    search's (made here when not given)."""
    resolver = resolver or Resolver(parsed)
    size = len(cands)
    c = cands.columns
    out = Priced(peak=np.full(size, np.nan), peak_stage=np.zeros(size, dtype=np.int64),
                 optimizer_step_peak=np.full(size, np.nan),
                 step_time=np.full(size, np.nan), tokens_per_s_per_device=np.full(size, np.nan),
                 mfu=np.full(size, np.nan), allocator_peak=np.full(size, np.nan), host=np.full(size, np.nan),
                 group=np.full(size, -1, dtype=np.int64), column=np.zeros(size, dtype=np.int64))
    keys = group_keys(cands, derived)
    # by group, then by micro-batch count: each count's candidates form one slice of the group (cheap masks)
    order = np.lexsort((c["m"], keys))
    bounds = np.flatnonzero(np.diff(keys[order])) + 1
    for members in np.split(order, bounds) if size else []:
        for start in range(0, len(members), chunk):
            if should_stop is not None and should_stop():
                return out
            idx = members[start:start + chunk]
            _price_group(parsed, cands, derived, idx, time_fn, out, resolver)
            if on_group is not None:
                on_group(len(idx))
    return out


def _price_group(parsed: ParsedConfig, cands: Candidates, derived: dict[str, np.ndarray], idx: np.ndarray,
                 time_fn: Callable | None, out: Priced, resolver: Resolver) -> None:
    c = cands.columns
    first = cands.row(int(idx[0]))
    first["etp"] = int(derived["etp"][idx[0]])
    schedule = str(derived["schedule"][idx[0]])
    rep = candidate_strategy(parsed, first, schedule, as_written=False)
    r = resolver(rep)
    layout = build_layout(layout_inputs(r))
    n_s = r.par.n_s
    par = Par(d=c["d"][idx].astype(float), t=c["t"][idx].astype(float), p=int(first["p"]), vp=int(first["vp"]),
              cp=c["cp"][idx].astype(float), ep=c["ep"][idx].astype(float), etp=derived["etp"][idx].astype(float),
              b=c["b"][idx].astype(float), m=c["m"][idx].astype(float), n_acc=r.par.n_acc, s=r.par.s,
              sp=c["sp"][idx].astype(float), u=derived["u"][idx].astype(float), n_s=n_s,
              d_rep=derived["d_rep"][idx].astype(float), os=c["os"][idx].astype(float),
              os_e=derived["os_e"][idx].astype(float))
    rv = with_par(r, par)
    cats, pricer = price_group(rv, layout, vpp_group=rep.vpp_group, overlap_moe_ep_comm=rep.overlap_moe_ep_comm,
                               return_pricer=True)
    totals = cats["total"]  # [p, n]
    device = np.fmax(totals, cats["optimizer_step_peak"])  # [D-DEVICE] each stage's largest instant, as estimate
    out.peak[idx] = device.max(axis=0)
    out.peak_stage[idx] = device.argmax(axis=0)
    out.group[idx] = len(out.group_stages)
    out.column[idx] = np.arange(len(idx))
    out.group_stages.append(device)
    out.optimizer_step_peak[idx] = cats["optimizer_step_peak"].max(axis=0)
    outside = sum(cats[k] for k in OUTSIDE_ALLOCATOR)  # the device holds these beside the allocator's pool
    out.allocator_peak[idx] = (device - outside).max(axis=0)
    out.host[idx] = cats["host"].max(axis=0)
    if time_fn is not None:
        step = time_fn(pricer)
        out.step_time[idx] = np.broadcast_to(step.step_time_s, idx.shape)
        out.tokens_per_s_per_device[idx] = np.broadcast_to(step.tokens_per_s_per_device, idx.shape)
        out.mfu[idx] = np.broadcast_to(step.mfu, idx.shape)
    # released with the group (its step-time contexts refer back to it), the group's book and arrays are freed at
    # once instead of piling up until the collector runs (DeepSeek-V3 on 1,024 devices: its pricing peaked at
    # 295 MB traced instead of 159, a cold search faulted twice the pages)
    pricer.book.release()
