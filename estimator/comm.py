"""Topology, collective costs and communication volumes (docs/model.md#collectives [T-COLL],
docs/model.md#communication-volumes).

A group of n_g ranks with stride σ spans n_g·σ ranks and talks over the smallest interconnect level holding at
least n_g·σ devices (rank placement TP, CP, DP, PP innermost first, D33). With bw = level bandwidth × efficiency and
α = level latency:

* all-reduce      2·(n_g−1)/n_g·M/bw + 2·(n_g−1)·α
* all-gather, reduce-scatter (M = full size), all-to-all (M = bytes sent per device)  (n_g−1)/n_g·M/bw + (n_g−1)·α
* point-to-point  M/bw + α (0 when n_g = 1)

Degrees may be numpy arrays: level choice and every formula use ``arr`` helpers, never Python ``if``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

import numpy as np

from .arr import Num, gt, where
from .hardware import Hardware, Level
from .records import at_once

T = TypeVar("T")

_FALLBACK = Level(devices=math.inf, bandwidth=math.inf, latency=0.0, efficiency=1.0, name="ideal")


class Link(NamedTuple):
    """A communication group: its size n_g and the bandwidth/latency of the level it runs on."""

    n: Num
    bw: Num
    alpha: Num


def level_link(hw: Hardware, n: Num, stride: Num) -> Link:
    """[T-COLL.level] The smallest level with devices ≥ n_g·σ (the outermost one when none is large enough)."""
    levels = hw.levels or (_FALLBACK,)
    span = n * stride
    if not isinstance(span, np.ndarray):  # one plan: the first level large enough, as the loop below picks it
        for level in levels[:-1]:
            if span <= level.devices:
                return Link(n, level.bandwidth * level.efficiency, level.latency)
        return Link(n, levels[-1].bandwidth * levels[-1].efficiency, levels[-1].latency)
    last = levels[-1]
    bw: Num = last.bandwidth * last.efficiency
    alpha: Num = last.latency
    for level in reversed(levels[:-1]):
        fits = span <= level.devices
        bw = where(fits, level.bandwidth * level.efficiency, bw)
        alpha = where(fits, level.latency, alpha)
    return Link(n=n, bw=bw, alpha=alpha)


def kept_entry(table: dict, key: tuple, make: Callable[[], T]) -> T:
    """``table[key]``, made by ``make`` when missing; the table is emptied when it holds 512 entries."""
    got = table.get(key)
    if got is None:
        if len(table) >= 512:  # group sizes come and go with the search's candidates; keep the table small
            table.clear()
        got = table[key] = make()
    return got  # type: ignore[no-any-return]


def kept_link(table: dict, hw: Hardware, n: Num, stride: Num) -> Link:
    """``level_link`` of a group, kept in ``table`` (the device's) by size and stride, by value and type: an int
    and an equal float would make the same floats but not always the same types."""
    if isinstance(n, np.ndarray) or isinstance(stride, np.ndarray):
        return level_link(hw, n, stride)
    key = (type(n), n, type(stride), stride)
    got = table.get(key)
    if got is None:
        got = kept_entry(table, key, lambda: level_link(hw, n, stride))
    return got  # type: ignore[no-any-return]


def plan_links(table: dict, hw: Hardware, t: Num, cp: Num, u: Num, ep: Num, etp: Num, p: Num, d: Num, D: Num,
               stride: Num, os: Num, os_e: Num, edp: Num) -> tuple[Link, ...]:
    """A plan's twelve groups' links on ``hw`` (TP, CP ring, Ulysses, EP, ETP, PP, the dense DP domain, its shard
    and shard replicas, the expert shard, its replicas and the EDP domain; ``D`` the dense domain, ``stride`` its
    members' distance), kept in ``table`` (the device's) by the degrees they are made of, by value and type, so a
    plan's context finds them with one look-up."""
    sizes = (t, cp, u, ep, etp, p, d, D, stride, os, os_e, edp)
    kinds = tuple(map(type, sizes))
    if np.ndarray in kinds:
        return _plan_links(table, hw, *sizes)
    key = ("links", sizes, kinds)
    got = table.get(key)
    if got is None:
        got = kept_entry(table, key, lambda: _plan_links(table, hw, *sizes))
    return got  # type: ignore[no-any-return]


def _plan_links(table: dict, hw: Hardware, t: Num, cp: Num, u: Num, ep: Num, etp: Num, p: Num, d: Num, D: Num,
                stride: Num, os: Num, os_e: Num, edp: Num) -> tuple[Link, ...]:
    return tuple(kept_link(table, hw, n, s) for n, s in (
        (t, 1), (cp / u, t * u), (u, t), (ep, etp), (etp, 1), (p, t * cp * d), (D, stride), (os, stride),
        (D / os, stride * os), (os_e, etp * ep), (edp / os_e, etp * ep * os_e), (edp, etp * ep)))


def all_reduce(M: Num, link: Link) -> Num:
    """[T-COLL.ar] 2·(n−1)/n·M/bw + 2·(n−1)·α."""
    n = link.n
    return 2 * (n - 1) / n * M / link.bw + 2 * (n - 1) * link.alpha


def all_gather(M: Num, link: Link) -> Num:
    """[T-COLL.ag] (n−1)/n·M/bw + (n−1)·α, M the gathered (full) size; also reduce-scatter."""
    n = link.n
    return (n - 1) / n * M / link.bw + (n - 1) * link.alpha


reduce_scatter = all_gather


def all_to_all(M: Num, link: Link) -> Num:
    """[T-COLL.a2a] (n−1)/n·M/bw + (n−1)·α, M the bytes one device sends."""
    return all_gather(M, link)


def p2p(M: Num, link: Link) -> Num:
    """[T-COLL.p2p] M/bw + α, 0 when the group has one rank."""
    return gt(link.n, 1) * (M / link.bw + link.alpha)


# ------------------------------------------------------------------------------------------ volumes
# (docs/model.md#communication-volumes)
def tp_layer(M_h: Num, link: Link, sp: Num, regathers: Num) -> tuple[Num, Num]:
    """[T-COMM.tp] One body layer, M_h = β_c·h·T. Without SP: 2 all-reduces forward, 2 backward. With SP: 2
    all-gathers + 2 reduce-scatters forward, the same backward plus ``regathers`` all-gathers of saved sharded inputs
    (Megatron re-gathers both norm outputs for the weight gradients). Returns (forward, backward)."""
    ag = all_gather(M_h, link)
    ar = all_reduce(M_h, link)
    fwd = where(sp, 4 * ag, 2 * ar)
    bwd = where(sp, (4 + regathers) * ag, 2 * ar)
    return fwd, bwd


def tp_embedding(M_h: Num, link: Link, sp: Num, positions: bool = False) -> tuple[Num, Num]:
    """Vocabulary-parallel embedding: one all-reduce (reduce-scatter with SP) forward; with SP the backward
    all-gathers the output gradient (every rank's vocabulary slice needs every token's), without SP nothing.
    With learned positions Megatron all-reduces even under SP: the position table is added to the full
    sequence before the scatter to the sequence-parallel region."""
    fwd = all_reduce(M_h, link) if positions else where(sp, reduce_scatter(M_h, link), all_reduce(M_h, link))
    return fwd, where(sp, all_gather(M_h, link), 0.0)


def tp_head(M_h: Num, link: Link, sp: Num) -> tuple[Num, Num]:
    """Column-parallel head: with SP an all-gather forward and a reduce-scatter backward; without SP the
    input-gradient all-reduce backward."""
    return where(sp, all_gather(M_h, link), 0.0), where(sp, reduce_scatter(M_h, link), all_reduce(M_h, link))


def cp_ring(M_kv: Num, link: Link) -> tuple[Num, Num]:
    """[T-COMM.cp] Ring attention: (n−1) point-to-point steps of the KV block M_kv = β_c·n_kv·(dqk + dv)·T/t
    forward, twice that backward (KV and their gradients)."""
    step = p2p(M_kv, link)
    fwd = (link.n - 1) * step
    return fwd, 2 * fwd


def cp_allgather(M_kv: Num, link: Link) -> tuple[Num, Num]:
    """[T-COMM.cp_ag] All-gather context parallelism (Llama 3 §3.3.2; Transformer Engine's
    AttnFuncWithCPAndKVAllGather, torchtitan's rotate method "allgather"): forward all-gathers the local K/V,
    M = n·M_kv in full; backward gathers them again and reduce-scatters their gradients."""
    ag = all_gather(link.n * M_kv, link)
    return ag, 2 * ag


def cp_ulysses(M_qkv: Num, M_o: Num, link: Link) -> tuple[Num, Num]:
    """Ulysses: an all-to-all of q, k, v (β_c·(q_w + k_w + v_w)·T/t) and one of the output (β_c·o_w·T/t) each
    way."""
    one_way = all_to_all(M_qkv, link) + all_to_all(M_o, link)
    return one_way, one_way


def ep_layer(M_r: Num, ep: Link, etp: Link) -> tuple[Num, Num]:
    """[T-COMM.ep] Dispatch + combine all-to-alls of M_r = β_c·h·R per pass; ETP > 1 adds a gather and a scatter
    of M_r over etp."""
    one_way = 2 * all_to_all(M_r, ep) + all_gather(M_r, etp) + reduce_scatter(M_r, etp)
    return one_way, one_way


def pp_boundary(M_p: Num, link: Link) -> Num:
    """[T-COMM.pp] One activation (or gradient) hand-over, M_p = β_c·h·T/sp_div."""
    return p2p(M_p, link)


@dataclass(frozen=True)
class DPTimes:
    """Data-parallel communication of one stage (raw, before overlap). ``per_step`` = ``gather`` (the parameter
    all-gather after the optimizer step, ZeRO-1/2 and kept-gathered mf_op) + the gradient reduction."""

    per_step: Num = 0.0
    per_mb_fwd: Num = 0.0
    per_mb_bwd: Num = 0.0
    gather: Num = 0.0

    @property
    def reduce(self) -> Num:
        return self.per_step - self.gather

    def __add__(self, other: DPTimes) -> DPTimes:
        return _dp_times(self.per_step + other.per_step, self.per_mb_fwd + other.per_mb_fwd,
                         self.per_mb_bwd + other.per_mb_bwd, self.gather + other.gather)


def _dp_times(per_step: Num = 0.0, per_mb_fwd: Num = 0.0, per_mb_bwd: Num = 0.0, gather: Num = 0.0) -> DPTimes:
    """``DPTimes(...)`` of the same, its instance dict set at once (the frozen dataclass's ``__init__`` sets the
    fields one by one; every stage of every step time makes two or three)."""
    return at_once(DPTimes, per_step=per_step, per_mb_fwd=per_mb_fwd, per_mb_bwd=per_mb_bwd, gather=gather)


def dp_times(mode: str, grads: Num, params: Num, gathered: Num, shard: Link, replicas: Link, *,
             keep_gathered: bool = False, reshard: bool = True, sync_every_mb: bool = True,
             reduce_domain: Link | None = None) -> DPTimes:
    """[T-COMM.dp] Per stage, from local element counts converted to bytes by the caller: ``grads`` β_g·E,
    ``params`` β_p·E, ``gathered`` β_c·E. ``shard`` is the os-rank shard group, ``replicas`` the D/os group of
    shard replicas (HSDP's d_rep), ``reduce_domain`` the whole domain D (mode none).

    none — all-reduce of the gradients per step; zero1/zero2 — reduce-scatter of the gradients and all-gather of
    the β_p parameters per step; mf_op — reduce-scatter per step and all-gather of β_c parameters per step with
    keep_gathered_weights, else per micro-batch forward and backward; zero3/fsdp/hsdp — all-gather of β_c parameters
    per micro-batch forward (and backward when resharding), reduce-scatter per micro-batch (sync_every_mb) or per
    step. Shard replicas (os < D, HSDP) add an all-reduce of the reduced shard per step."""
    replica_ar = all_reduce(grads / shard.n, replicas)
    if mode == "none":
        return _dp_times(per_step=all_reduce(grads, reduce_domain or shard))
    if mode in ("zero1", "zero2"):
        gather = all_gather(params, shard)
        return _dp_times(per_step=reduce_scatter(grads, shard) + gather + replica_ar, gather=gather)
    if mode == "mf_op":
        gather = all_gather(gathered, shard)
        if keep_gathered:
            return _dp_times(per_step=reduce_scatter(grads, shard) + gather + replica_ar, gather=gather)
        return _dp_times(per_step=reduce_scatter(grads, shard) + replica_ar, per_mb_fwd=gather, per_mb_bwd=gather)
    gather = all_gather(gathered, shard)
    rs = reduce_scatter(grads, shard)
    bwd = (gather if reshard else 0.0) + (rs if sync_every_mb else 0.0)
    return _dp_times(per_step=(0.0 if sync_every_mb else rs) + replica_ar, per_mb_fwd=gather, per_mb_bwd=bwd)


__all__ = ["DPTimes", "Link", "all_gather", "all_reduce", "all_to_all", "cp_allgather", "cp_ring", "cp_ulysses",
           "dp_times", "ep_layer", "kept_entry", "kept_link", "level_link", "p2p", "plan_links", "pp_boundary",
           "reduce_scatter", "tp_embedding", "tp_head", "tp_layer"]
