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
  point-to-point communicator keeps 2 channels × the three buffers. NVLS (NVLink SHARP) buffers are not
  priced: on a preset with ``nvlink_sharp`` the estimate warns (W-NVLS), naming ``NCCL_NVLS_ENABLE=0``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arr import Num, gt, is_array
from ..messages import Message, msg
from ..resolve import Resolved, dense_domain
from ..units import MiB
from ..warnings import EstimateWarning

HCCL_BUFFSIZE = 200 * MiB
P2P_HCCL_BUFFSIZE = 20 * MiB
NCCL_BUFFSIZE = 4 * MiB
NCCL_LL128 = 120 * 640 * 8 * 8
NCCL_LL = 8 * 512 * 8 * 16
NCCL_CHANNELS = 32
NCCL_CONNECTIONS = 2
NCCL_P2P_CHANNELS = 2
LIBRARIES = ("hccl", "nccl")


@dataclass(frozen=True)
class Group:
    """One kind of communicator a rank belongs to: ``count`` of them (p2p links), each of ``size`` ranks."""

    name: str
    size: Num
    count: Num = 1
    p2p: bool = False


def rank_groups(r: Resolved, stage: int) -> list[Group]:
    """The communicators of a rank of ``stage`` (entries with size 1 or count 0 are kept: arrays in the
    search; ``communicator_count`` skips them)."""
    par, f, d = r.par, r.flags, r.dims
    groups = [Group("world", par.world), Group("TP", par.t), Group("CP", par.cp)]
    domain = dense_domain(f, par)
    if f.sharding_mode == "hsdp":
        groups += [Group("DP shard", domain / par.d_rep), Group("DP replicate", par.d_rep)]
    else:
        groups.append(Group("DP", domain))
    if d.moe:
        groups += [Group("EP", par.ep), Group("ETP", par.etp), Group("EDP", par.edp)]
    p = par.p
    if isinstance(p, (int, float)):
        ends = stage in (0, int(p) - 1)
        wraps = isinstance(par.vp, (int, float)) and par.vp > 1  # virtual stages: the last sends to the first
        neighbours: Num = 0 if p == 1 else (1 if p == 2 or (ends and not wraps) else 2)
        if d.tie and p > 1 and ends:
            groups.append(Group("embedding", 2))
    else:  # the search: arrays of pipeline degrees, priced for an end stage (its head or embedding lives there)
        neighbours = gt(p, 1) * 1
        groups.append(Group("embedding", 1 + gt(p, 1) if d.tie else 1))
    groups.append(Group("PP p2p", 2, neighbours, p2p=True))
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


def nvls_warning(r: Resolved) -> EstimateWarning | None:
    """NCCL on an NVLink SHARP device keeps NVLS buffers for communicators with more than 2 ranks inside a node
    (the world group has min(world, devices per node) there); they are not priced, so the estimate says so."""
    hw = r.hardware
    local = min(r.par.world, hw.devices_per_node)
    if hw.comm_library != "nccl" or not hw.nvlink_sharp or is_array(local) or local <= 2:
        return None
    return EstimateWarning("W-NVLS", msg("W-NVLS", device=hw.id or hw.name, local=int(local)))


def library_bytes(groups: list[Group], rule: LibraryRule) -> Num:
    collective, p2p = communicator_count(groups)
    return collective * rule.per_collective + p2p * rule.per_p2p


__all__ = [
    "LIBRARIES",
    "Group",
    "LibraryRule",
    "communicator_count",
    "library_bytes",
    "library_rule",
    "nvls_warning",
    "rank_groups",
]
