"""The communicators a rank belongs to, and what the communication library holds for each (issue 10).

Counted from the strategy: the world group; TP, CP and the dense data-parallel domain (the FSDP shard group, and
under HSDP the replicate group); for MoE models EP, expert TP and expert DP; the tied-embedding group on the
first and last stage; and pipeline point-to-point links (one 2-rank communicator per neighbouring stage, as
PyTorch's ProcessGroupNCCL/HCCL create them for send/recv; the first and last stage have one neighbour unless
the schedule wraps around with virtual stages). A group of one rank has no communicator.

Priced by the libraries' documented rules:

- HCCL: each communicator holds 2 × ``HCCL_BUFFSIZE`` (default 200 MB, the CANN environment-variable
  reference); under PyTorch (torch_npu ≥ 7.1.0) each point-to-point communicator holds 2 × ``P2P_HCCL_BUFFSIZE``
  (default 20 MB). MB here is 2^20 bytes.
- NCCL: a communicator keeps, per channel and connection, one buffer per protocol: ``NCCL_BUFFSIZE`` (Simple,
  default 4 MiB), LL128 (120·640·8·8 = 4,915,200 B) and LL (8·512·8·16 = 524,288 B) (NCCL ``src/init.cc``).
  With NCCL's 32 channels and two connections (ring and tree) that is 588 MiB per communicator, between the
  544 MB and 688 MB measured per communicator on 4 A100 (NVIDIA/nccl issue 964, 2- and 4-rank groups). A
  point-to-point communicator keeps 2 channels × the three buffers.
- NCCL's NVLink SHARP (NVLS) buffers [D-NVLS], on a device whose NVSwitch has NVLS (``nvlink_sharp``) and compute
  capability ≥ 9.0, unless ``NCCL_NVLS_ENABLE=0`` (NCCL ``src/transport/nvls.cc``, 2.22 to 2.30): a communicator
  with L of its ranks in one node (NVLS needs L > 2 up to NCCL 2.28, L ≥ 2 from 2.29) keeps, per rank, a unicast
  buffer of channels × 2 × (``NCCL_NVLS_CHUNKSIZE`` × ``NCCL_STEPS``) × heads and a credit buffer of channels × 2 ×
  64 B × heads, each rounded up to the 2 MiB allocation granularity (``nvlsAllocateMem``); heads = L (the
  intra-node NVLS graph pulls from every GPU), channels = 16 on cc 9.x, 24 on cc ≥ 10 in one node and 32 across
  nodes (``ncclNvlsTuning``), ``NCCL_NVLS_NCHANNELS`` overrides. H100/H200 with 8 ranks a node: 258 MiB per
  communicator. NCCL allocates them when an NVLS algorithm first runs on the communicator (runtime connect), so the
  band's low end holds none; the nominal value holds them for every communicator with L > 2, the high end also for
  L = 2 (NCCL ≥ 2.29).
- NCCL 2.17–2.21 allocated its NVLS buffers when a communicator was created, larger (``ncclNvlsSetup``, read at
  each tag): channels × 2 × (buffer + ``NVLS_MEM_ALIGN_SIZE`` 2 MiB) × heads per rank, with channels =
  ``NCCL_NVLS_NCHANNELS`` (16) and buffer = ``NCCL_BUFFSIZE`` in 2.17–2.19, the communicator's collective channels
  (at most ``MAXCHANNELS`` = 32: NCCL doubles its rings) and ``NCCL_BUFFSIZE`` in 2.20, those channels and
  ``NCCL_NVLS_CHUNKSIZE`` × ``NCCL_STEPS`` in 2.21; L ≥ 2 and one node in 2.17, L > 2 from 2.18 (``gpuCount <=
  2`` turns NVLS off); no NCCL before 2.25 runs on cc ≥ 10. ``options.nccl_version`` says which NCCL the run
  uses: an old one holds them at every end of the band; unknown, the nominal value is NCCL ≥ 2.22's and the high
  end the largest any version allocates (``nvls_band``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..arr import Num, ceil_div, gt, is_array, maximum, minimum
from ..errors import ConfigError
from ..messages import Message, msg
from ..resolve import Resolved, dense_domain
from ..units import KiB, MiB
from ..warnings import Assumption

HCCL_BUFFSIZE = 200 * MiB
P2P_HCCL_BUFFSIZE = 20 * MiB
NCCL_BUFFSIZE = 4 * MiB
NCCL_LL128 = 120 * 640 * 8 * 8
NCCL_LL = 8 * 512 * 8 * 16
NCCL_CHANNELS = 32
NCCL_CONNECTIONS = 2
NCCL_P2P_CHANNELS = 2
NVLS_CHUNKSIZE = 128 * KiB      # NCCL_NVLS_CHUNKSIZE default
NCCL_STEPS = 8
NVLS_CREDIT = 64                # bytes per channel, direction and head
NVLS_GRANULARITY = 2 * MiB      # cuMemGetAllocationGranularity (recommended) of device memory
NVLS_CHANNELS_SM90 = 16
NVLS_CHANNELS_SM100_NVL = 24    # cc ≥ 10, the communicator inside one node
NVLS_CHANNELS_SM100 = 32        # cc ≥ 10, across nodes
NVLS_MEM_ALIGN = 2 * MiB        # NCCL 2.17–2.21: head and tail credits beside each eager NVLS buffer
NCCL_MAX_CHANNELS = 32          # MAXCHANNELS of NCCL ≤ 2.21: a communicator's collective channels at most
LIBRARIES = ("hccl", "nccl")


class Group(NamedTuple):
    """One kind of communicator a rank belongs to: ``count`` of them (p2p links), each of ``size`` ranks placed
    ``stride`` ranks apart (TP, CP, DP, PP innermost first, D33). A NamedTuple: every estimate makes ~16 and
    hashes them (``stage_terms._scalar_comm_bytes``), where a frozen dataclass makes and hashes each in Python."""

    name: str
    size: Num
    count: Num = 1
    p2p: bool = False
    stride: Num = 1


_GROUPS: dict = {}  # one plan's rank groups per what ``_rank_groups`` reads (``_groups_reads``)


def _groups_reads(r: Resolved, stage: int) -> tuple | None:
    """What ``_rank_groups`` reads, by value and type: the degrees, the sharding mode, whether DP spans CP, MoE,
    tied embeddings and whether ``stage`` is an end stage. None with arrays (the search's candidates)."""
    par, f, d = r.par, r.flags, r.dims
    p = par.p
    degrees = (par.t, par.d, p, par.cp, par.d_rep, par.ep, par.etp, par.vp)
    kinds = tuple(map(type, degrees))
    if np.ndarray in kinds:
        return None
    return (degrees, kinds, f.sharding_mode, f.span_cp, d.moe, d.tie, stage in (0, int(p) - 1))


def rank_groups(r: Resolved, stage: int) -> list[Group]:
    """The communicators of a rank of ``stage`` (entries with size 1 or count 0 are kept: arrays in the
    search; ``communicator_count`` skips them); one plan's are kept per what they read (``_groups_reads``): every
    estimate asks for an end stage's and another's."""
    key = _groups_reads(r, stage)
    if key is None:
        return _rank_groups(r, stage)
    got = _GROUPS.get(key)
    if got is None:
        if len(_GROUPS) >= 256:
            _GROUPS.clear()
        got = _GROUPS[key] = tuple(_rank_groups(r, stage))
    return list(got)


def _rank_groups(r: Resolved, stage: int) -> list[Group]:
    par, f, d = r.par, r.flags, r.dims
    t = par.t
    groups = [Group("world", par.world), Group("TP", t), Group("CP", par.cp, stride=t)]
    domain = dense_domain(f, par)
    stride = t if f.span_cp else t * par.cp
    if f.sharding_mode == "hsdp":
        shard = domain / par.d_rep
        groups += [Group("DP shard", shard, stride=stride), Group("DP replicate", par.d_rep, stride=stride * shard)]
    else:
        groups.append(Group("DP", domain, stride=stride))
    if d.moe:
        groups += [Group("EP", par.ep, stride=par.etp), Group("ETP", par.etp),
                   Group("EDP", par.edp, stride=par.etp * par.ep)]
    p = par.p
    if isinstance(p, (int, float)):
        ends = stage in (0, int(p) - 1)
        wraps = isinstance(par.vp, (int, float)) and par.vp > 1  # virtual stages: the last sends to the first
        neighbours: Num = 0 if p == 1 else (1 if p == 2 or (ends and not wraps) else 2)
        if d.tie and p > 1 and ends:
            groups.append(Group("embedding", 2, stride=t * par.cp * par.d * (p - 1)))
    else:  # the search: arrays of pipeline degrees, priced for an end stage (its head or embedding lives there)
        neighbours = gt(p, 1) * 1
        groups.append(Group("embedding", 1 + gt(p, 1) if d.tie else 1, stride=t * par.cp * par.d * (p - 1)))
    groups.append(Group("PP p2p", 2, neighbours, p2p=True, stride=t * par.cp * par.d))
    return groups


def communicator_count(groups: list[Group]) -> tuple[Num, Num]:
    """(collective communicators, point-to-point communicators) of groups with more than one rank."""
    collective: Num = 0
    p2p: Num = 0
    for g in groups:
        n = gt(g.size, 1) * g.count
        if g.p2p:
            p2p = p2p + n
        else:
            collective = collective + n
    return collective, p2p


@dataclass(frozen=True)
class LibraryRule:
    library: str
    per_collective: float    # bytes one collective communicator holds
    per_p2p: float           # bytes one point-to-point communicator holds
    rule: Message            # the formula, for Explain


def library_rule(library: str, framework_runtime: str, hccl_buffsize: float | None = None,
                 p2p_hccl_buffsize: float | None = None, nccl_buffsize: float | None = None) -> LibraryRule:
    if library == "hccl":
        buff = HCCL_BUFFSIZE if hccl_buffsize is None else hccl_buffsize
        if framework_runtime == "pytorch":
            p2p_buff = P2P_HCCL_BUFFSIZE if p2p_hccl_buffsize is None else p2p_hccl_buffsize
            per_p2p = 2 * p2p_buff if p2p_buff > 0 else 2 * buff  # 0: send/recv in a full HCCL communicator
            rule = msg("device.rule-hccl-torch")
        else:
            per_p2p = 2 * buff
            rule = msg("device.rule-hccl-mindspore")
        return LibraryRule("hccl", 2 * buff, per_p2p, rule)
    simple = NCCL_BUFFSIZE if nccl_buffsize is None else nccl_buffsize
    per_channel = simple + NCCL_LL128 + NCCL_LL
    return LibraryRule("nccl", NCCL_CHANNELS * NCCL_CONNECTIONS * per_channel, NCCL_P2P_CHANNELS * per_channel,
                       msg("device.rule-nccl", channels=NCCL_CHANNELS, connections=NCCL_CONNECTIONS,
                           p2p_channels=NCCL_P2P_CHANNELS))


@dataclass(frozen=True)
class EagerNvls:
    """How an NCCL release that allocated the NVLS buffers at communicator creation sized them."""

    first: tuple[int, int]
    last: tuple[int, int]
    channels: int | None      # NCCL_NVLS_NCHANNELS' default; None: the communicator's collective channels
    chunked: bool             # buffer = NCCL_NVLS_CHUNKSIZE × NCCL_STEPS, else NCCL_BUFFSIZE
    min_local: int            # ranks of the communicator in a node NVLS needs
    one_node: bool            # only communicators inside one node


EAGER_NVLS = (EagerNvls((2, 17), (2, 17), 16, False, 2, True), EagerNvls((2, 18), (2, 19), 16, False, 3, False),
              EagerNvls((2, 20), (2, 20), None, False, 3, False), EagerNvls((2, 21), (2, 21), None, True, 3, False))
TWO_RANK_NVLS = (2, 29)  # from this release on (lazy, as from 2.22): communicators with 2 ranks in a node too


def nccl_version(text: str | None) -> tuple[int, int] | None:
    """``options.nccl_version`` ("2.21.5", "2.27") → (2, 21); None when not stated."""
    if text is None:
        return None
    got = re.fullmatch(r"\s*(\d+)\.(\d+)(\.\d+)?([-+][\w.+-]*)?\s*", text)
    if got is None:
        raise ConfigError(msg("device.nccl-version-form", value=text), key="options.nccl_version")
    return int(got.group(1)), int(got.group(2))


@dataclass(frozen=True)
class NvlsRule:
    """[D-NVLS] what NCCL's NVLS transport keeps per communicator, by its ranks in one node."""

    enabled: bool
    chunk: float
    channels: int | None      # NCCL_NVLS_NCHANNELS, None: NCCL's default by compute capability
    compute_capability: float
    per_node: int
    version: tuple[int, int] | None = None  # options.nccl_version; None: not stated
    simple: float = NCCL_BUFFSIZE           # NCCL_BUFFSIZE (the eager buffers of NCCL 2.17–2.20)

    def eager(self) -> EagerNvls | None:
        """The eager rule of the stated NCCL version, None when it allocates lazily (or has no NVLS)."""
        v = self.version
        return next((e for e in EAGER_NVLS if v is not None and e.first <= v <= e.last), None)

    def eager_sizes(self, era: EagerNvls) -> tuple[int, float]:
        """(channels, buffer per channel and direction) of ``era``'s eager NVLS buffers."""
        channels = NCCL_MAX_CHANNELS if era.channels is None else \
            era.channels if self.channels is None else self.channels
        return channels, self.chunk * NCCL_STEPS if era.chunked else self.simple

    def eager_bytes(self, era: EagerNvls, local: Num) -> Num:
        """What ``era`` allocates per rank for a communicator with ``local`` ranks in a node (heads = local)."""
        channels, buffer = self.eager_sizes(era)
        return ceil_div(channels * 2 * (buffer + NVLS_MEM_ALIGN) * local, NVLS_GRANULARITY) * NVLS_GRANULARITY

    def channels_for(self, nodes_spanned: Num) -> Num:
        if self.channels is not None:
            return self.channels
        if self.compute_capability < 10:
            return NVLS_CHANNELS_SM90
        return np.where(nodes_spanned > 1, NVLS_CHANNELS_SM100, NVLS_CHANNELS_SM100_NVL) if is_array(nodes_spanned) \
            else (NVLS_CHANNELS_SM100 if nodes_spanned > 1 else NVLS_CHANNELS_SM100_NVL)

    def bytes_for(self, local: Num, nodes_spanned: Num) -> Num:
        """Unicast buffer + credit buffer of one communicator with ``local`` ranks in a node (heads = local)."""
        channels = self.channels_for(nodes_spanned)
        buffers = ceil_div(channels * 2 * self.chunk * NCCL_STEPS * local, NVLS_GRANULARITY) * NVLS_GRANULARITY
        credit = ceil_div(channels * 2 * NVLS_CREDIT * local, NVLS_GRANULARITY) * NVLS_GRANULARITY
        return buffers + credit


def nvls_rule(r: Resolved) -> NvlsRule | None:
    """NCCL keeps NVLS buffers on an NVLink SHARP switch with cc ≥ 9.0 unless NCCL_NVLS_ENABLE=0 (None: none)."""
    hw, opts = r.hardware, r.options
    cc = hw.compute_capability
    if hw.comm_library != "nccl" or not hw.nvlink_sharp or cc is None or cc < 9.0 or opts.nccl_nvls_enable is False:
        return None
    chunk = NVLS_CHUNKSIZE if opts.nccl_nvls_chunksize is None else opts.nccl_nvls_chunksize
    version = nccl_version(opts.nccl_version)
    if version is not None and version < EAGER_NVLS[0].first:  # before NVLS existed
        return None
    return NvlsRule(True, chunk, opts.nccl_nvls_nchannels, cc, hw.devices_per_node, version,
                    NCCL_BUFFSIZE if opts.nccl_buffsize is None else opts.nccl_buffsize)


def nvls_assumption(r: Resolved) -> Assumption | None:
    """The assumption said when NVLS buffers are priced and the NCCL version is not stated."""
    rule = nvls_rule(r)
    if r.options.nccl_version is not None or rule is None:
        return None
    return Assumption("options.nccl_version", "≥ 2.22", msg("device.nccl-version-assumed")
                      if rule.compute_capability < 10 else msg("device.nccl-version-assumed-new"))


def _floor(x: Num) -> Num:
    return np.floor(x) if is_array(x) else float(int(x))


def local_ranks(group: Group, per_node: int) -> Num:
    """Ranks of one communicator of ``group`` inside a node: the group's members are ``stride`` apart."""
    return maximum(1, minimum(group.size, _floor(per_node / maximum(group.stride, 1))))


def nvls_bytes(groups: list[Group], rule: NvlsRule | None, min_local: int = 3) -> Num:
    """[D-NVLS] Σ over collective communicators with at least ``min_local`` ranks in a node of their NVLS buffers
    (``min_local`` 3: NCCL ≤ 2.28, the nominal value; 2: NCCL ≥ 2.29, the band's high end)."""
    if rule is None:
        return 0.0
    out: Num = 0.0
    for g in groups:
        if g.p2p:
            continue
        local = local_ranks(g, rule.per_node)
        spanned = ceil_div(g.size * g.stride, rule.per_node)
        out = out + gt(local, min_local - 1) * g.count * rule.bytes_for(local, spanned)
    return out


def eager_nvls_bytes(groups: list[Group], rule: NvlsRule, era: EagerNvls) -> Num:
    """Σ over the collective communicators NVLS serves in ``era`` of what it allocated at their creation."""
    out: Num = 0.0
    for g in groups:
        if g.p2p:
            continue
        local = local_ranks(g, rule.per_node)
        served = gt(local, era.min_local - 1) * g.count
        if era.one_node:
            served = served * gt(2, ceil_div(g.size * g.stride, rule.per_node))
        out = out + served * rule.eager_bytes(era, local)
    return out


def nvls_band(groups: list[Group], rule: NvlsRule | None, band: bool = True) -> tuple[Num, Num, Num]:
    """[D-NVLS] (low, nominal, high) NVLS bytes of a rank by ``options.nccl_version``: NCCL 2.17–2.21 holds its
    eager buffers at every end; NCCL ≥ 2.22 none until an NVLS algorithm runs, nominally the communicators with more
    than 2 ranks in a node, the 2-rank ones too at the high end from 2.29; an unstated version takes NCCL ≥ 2.22's
    nominal value and the largest any version allocates at the high end (NCCL ≤ 2.21 never runs on cc ≥ 10).
    Without ``band`` the nominal value only (arrays of the search)."""
    if rule is None:
        return 0.0, 0.0, 0.0
    era = rule.eager()
    if era is not None:
        held = eager_nvls_bytes(groups, rule, era)
        return held, held, held
    nominal = nvls_bytes(groups, rule)
    if not band:
        return nominal, nominal, nominal
    v = rule.version
    high = nvls_bytes(groups, rule, min_local=2) if v is None or v >= TWO_RANK_NVLS else nominal
    if v is None and rule.compute_capability < 10:
        high = max([high, *(eager_nvls_bytes(groups, rule, e) for e in EAGER_NVLS)])
    return 0.0, nominal, high


def library_bytes(groups: list[Group], rule: LibraryRule) -> Num:
    collective, p2p = communicator_count(groups)
    return collective * rule.per_collective + p2p * rule.per_p2p


__all__ = [
    "EAGER_NVLS",
    "LIBRARIES",
    "EagerNvls",
    "Group",
    "LibraryRule",
    "NvlsRule",
    "communicator_count",
    "eager_nvls_bytes",
    "library_bytes",
    "library_rule",
    "local_ranks",
    "nccl_version",
    "nvls_assumption",
    "nvls_band",
    "nvls_bytes",
    "nvls_rule",
    "rank_groups",
]
