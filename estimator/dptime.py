"""A stage's per-step data-parallel collectives and optimizer step (docs/model.md#step-time): the DP gradient
reductions and parameter gathers from the stage's elements [T-COMM.dp], kept per what they read, the part of them
left exposed [T-COMM.dp_overlap], and the optimizer step's time [T-OPT] — what ``steptime`` adds once per stage and
step to its pipeline time."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import comm as C
from .arr import Num, maximum

if TYPE_CHECKING:
    from .rowtime import TimeContext


def exposed_dp(ctx: TimeContext, dp: C.DPTimes, compute: dict[str, Num], layers: Num) -> Num:
    """[T-COMM.dp_overlap] The per-step DP collectives left exposed. With ``overlap_grad_reduce`` the gradient
    reduction runs bucket by bucket under the last micro-batch's backward: max(t_rs − Bk, t_rs/L) exposed, the
    last bucket (about one layer's gradients, L the stage's layers) always; without it, all of t_rs. Likewise
    ``overlap_param_gather`` hides the parameter all-gather under the next step's first forward: max(t_ag − F,
    t_ag/L). A plan that states neither keeps the knob (docs/model.md#knobs): (1 − o_dp)·(t_rs + t_ag)."""
    feat = ctx.r.flags.feat
    if feat.overlap_grad_reduce is None and feat.overlap_param_gather is None:
        return (1 - ctx.k.o_dp) * dp.per_step
    n = maximum(1, layers)
    slices = ctx.r.par.n_s  # compute is per micro-batch (per slice for sliced schedules)
    backward = (compute["bwd"] + compute["recompute"]) * slices
    forward = compute["fwd"] * slices
    reduce, gather = dp.reduce, dp.gather
    out_r = maximum(reduce - backward, reduce / n) if feat.overlap_grad_reduce else reduce
    out_g = maximum(gather - forward, gather / n) if feat.overlap_param_gather else gather
    return out_r + out_g


_DP: dict = {}  # per ``dp_reads`` of a context (its DP links and what selects the collectives): its kept DP times


def dp_reads(ctx: TimeContext) -> tuple | None:
    """What ``make_dp`` reads of a context apart from the stage's elements, by value and type: the collectives'
    selection (sharding mode and its flags, MoE, the gradient width) and the six DP links (a link is its size,
    bandwidth and latency: the device enters through them only). None with arrays (the search's candidates)."""
    r = ctx.r
    f = r.flags
    g = r.widths.g
    links = (*ctx.dp_shard, *ctx.dp_replicas, *ctx.dp_domain, *ctx.edp_shard, *ctx.edp_replicas, *ctx.edp_domain)
    kinds = tuple(map(type, links))
    if np.ndarray in kinds or type(g) is np.ndarray:
        return None
    return (f.sharding_mode, f.reshard_after_forward, f.fsdp_sync, f.keep_gathered, r.dims.moe, g, type(g), links,
            kinds)


def stage_dp(ctx: TimeContext, elements: list[Num], key: tuple | None) -> C.DPTimes:
    """[T-COMM.dp] ``make_dp`` of the stage's elements, kept per what it reads (``dp_reads``) and the elements by
    value and type (``key``: ``steptime.StageSums.dp_key``, None with arrays): a band end's three devices time
    the same stages again on every estimate whose DP groups and element counts recur (a tp or pp edit and its
    undo)."""
    table = ctx.dp_kept
    if table is None:
        reads = dp_reads(ctx)
        if reads is None:
            return make_dp(ctx, elements)
        table = ctx.dp_kept = C.kept_entry(_DP, reads, dict)
    if key is None:
        return make_dp(ctx, elements)
    got = table.get(key)
    if got is None:
        got = C.kept_entry(table, key, lambda: make_dp(ctx, elements))
    return got  # type: ignore[no-any-return]


def make_dp(ctx: TimeContext, elements: list[Num]) -> C.DPTimes:
    """[T-COMM.dp] dense part on D and expert part on D_e from the stage's local elements."""
    r = ctx.r
    w, f = r.widths, r.flags
    trainable_d, trainable_e, gathered_d, gathered_e, params_d, params_e = elements
    mode = f.sharding_mode
    reshard = True if mode == "zero3" else f.reshard_after_forward
    sync = True if mode == "zero3" else f.fsdp_sync
    dense = C.dp_times(mode, w.g * trainable_d, params_d, gathered_d, ctx.dp_shard, ctx.dp_replicas,
                       keep_gathered=f.keep_gathered, reshard=reshard, sync_every_mb=sync,
                       reduce_domain=ctx.dp_domain)
    if not r.dims.moe:  # no expert parameters: no expert-data-parallel collectives at all
        return dense
    expert = C.dp_times(mode, w.g * trainable_e, params_e, gathered_e, ctx.edp_shard, ctx.edp_replicas,
                        keep_gathered=f.keep_gathered, reshard=reshard, sync_every_mb=sync,
                        reduce_domain=ctx.edp_domain)
    return dense + expert


def optimizer_time(ctx: TimeContext, static: Num, states: Num) -> Num:
    """[T-OPT] t_opt = 2·(parameter + gradient + optimizer bytes of the stage)/(hbm_Bps·eff_hbm), + the states over
    the host link with ``swap_optimizer``. [T-OPT.offload] A step on the host (``offload_optimizer``,
    ``offload_params``) moves the gradients to the host and the parameters back over the host link instead, its
    CPU compute not priced (W-UNMODELLED)."""
    feat = ctx.r.flags.feat
    if feat.offload_optimizer or feat.offload_params:
        return (static - states) / ctx.r.hardware.host_link_bandwidth
    out = 2 * static / ctx.rate_hbm
    if ctx.r.flags.swap_optimizer:
        out = out + states / ctx.r.hardware.host_link_bandwidth
    return out


__all__ = ["dp_reads", "exposed_dp", "make_dp", "optimizer_time", "stage_dp"]
