"""Device-level memory (issue 10): the caching-allocator rules derived by hand from PyTorch's
CUDACachingAllocator, communicator counts and the libraries' documented buffer rules, the launch-script knobs,
and the whole model against the H200 measurements (../shared/measurements, skipped without them).

No constant of the model was fitted to these measurements: the allocator and FSDP2 rules are PyTorch's source,
the runtime context of the H200 preset is config 1's (the test quotes all seven)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.device.allocator import AllocatorConfig, CachingAllocator, allocation_size, replay, round_size
from estimator.device.communicators import library_bytes, library_rule, nvls_bytes, nvls_rule, rank_groups
from estimator.device.knobs import env_options, parse_alloc_conf
from estimator.device.trace import stage_trace
from estimator.device.workspaces import library_workspaces
from estimator.errors import ConfigError
from estimator.estimate import estimate, layout_inputs
from estimator.formats import parse
from estimator.hardware import find_preset
from estimator.layout import build_layout
from estimator.model import ModelSpec
from estimator.options import RunOptions
from estimator.resolve import resolve
from estimator.stage import StagePricer, stage_rows
from estimator.strategy import Strategy
from estimator.units import MiB

KiB = 1024


# ----------------------------------------------------------------------------------------- allocator rules
def test_request_rounding_and_segment_sizes() -> None:
    assert round_size(1) == 512 and round_size(513) == 1024 and round_size(512) == 512
    assert allocation_size(1 * MiB) == 2 * MiB           # ≤ 1 MiB: small pool, 2 MiB segments
    assert allocation_size(1 * MiB + 512) == 20 * MiB    # 1–10 MiB: a 20 MiB segment
    assert allocation_size(10 * MiB) == 10 * MiB         # ≥ 10 MiB: rounded up to 2 MiB
    assert allocation_size(11 * MiB) == 12 * MiB


def test_small_requests_share_a_small_segment() -> None:
    a = CachingAllocator()
    for i in range(4):
        a.malloc(i, 300 * KiB)
    assert a.reserved == 2 * MiB and a.allocated == 4 * 300 * KiB  # 4 × 300 KiB fit one 2 MiB segment
    a.malloc(8, 800 * KiB)  # 1,200 KiB used, 848 KiB left: 800 KiB still fits
    assert a.reserved == 2 * MiB
    a.malloc(9, 100 * KiB)  # 48 KiB left: a second segment
    assert a.reserved == 4 * MiB


def test_large_pool_split_and_best_fit() -> None:
    a = CachingAllocator()
    a.malloc(1, 3 * MiB)                 # one 20 MiB segment, split: 17 MiB free behind it
    assert a.reserved == 20 * MiB
    a.malloc(2, 16 * MiB)                # fits the 17 MiB remainder; 1 MiB left is not > 1 MiB: not split
    assert a.reserved == 20 * MiB and a.allocated == 3 * MiB + 17 * MiB
    a.malloc(3, 40 * MiB)                # nothing fits: a 40 MiB segment
    a.malloc(4, 50 * MiB)                # a 50 MiB segment
    a.free(3)
    a.free(4)
    a.malloc(5, 39 * MiB)                # best fit: the 40 MiB block, not the 50 MiB one
    a.malloc(6, 45 * MiB)                # then the 50 MiB block serves 45 MiB (remainder 5 MiB is split off)
    assert a.reserved == 110 * MiB and a.allocated == 20 * MiB + 40 * MiB + 45 * MiB


def test_equal_free_blocks_go_lowest_address_first_at_any_size() -> None:
    """Best fit ties to the lower address, also for segments beyond 2**48 bytes (segments take consecutive
    address ranges, so a free block's size and address name it)."""
    for unit in (MiB, 1 << 50):
        a = CachingAllocator()
        for handle in range(4):
            a.malloc(handle, 40 * unit)   # four segments of the same size
        addr = [a.address(h) for h in range(4)]
        assert addr == sorted(addr) and len(set(addr)) == 4
        a.free(2)
        a.free(0)
        a.free(3)
        a.malloc(4, 30 * unit)            # three equal free blocks: the lowest address, split
        assert a.address(4) == addr[0]
        a.malloc(5, 40 * unit)            # the 10-unit remainder does not fit: the next lowest
        a.malloc(6, 40 * unit)
        assert (a.address(5), a.address(6)) == (addr[2], addr[3]) and a.reserved == 160 * unit
        for handle in (1, 4, 5, 6):
            a.free(handle)
        a.malloc(7, 40 * unit)            # the split block merged back whole: the lowest address again
        assert a.address(7) == addr[0] and a.allocated == 40 * unit and a.reserved == 160 * unit


def test_freed_neighbours_merge_and_streams_do_not_share() -> None:
    a = CachingAllocator()
    a.malloc(1, 30 * MiB)
    a.free(1)
    a.malloc(2, 10 * MiB)
    a.malloc(3, 20 * MiB)                # both carved from the cached 30 MiB segment
    assert a.reserved == 30 * MiB
    a.free(2)
    a.free(3)                            # merged back into one 30 MiB block
    a.malloc(4, 30 * MiB)
    assert a.reserved == 30 * MiB
    a.malloc(5, 30 * MiB, stream=1)      # another stream never takes this stream's blocks
    assert a.reserved == 60 * MiB


def test_fragmentation_default_vs_expandable() -> None:
    # 100 + 100 MiB live, the first freed, then 150 MiB: the default allocator needs a third segment (350 MiB),
    # expandable segments map only the 150 − 100 MiB missing at the end… rounded to 20 MiB pages
    events = [("step", 0), ("a", 1, 100 * MiB, 0), ("a", 2, 100 * MiB, 0), ("f", 1), ("a", 3, 150 * MiB, 0)]
    default = replay(events)[-1]
    expandable = replay(events, AllocatorConfig(expandable_segments=True))[-1]
    assert default.max_reserved == 350 * MiB and default.max_allocated == 250 * MiB
    # pages: 100 → 100, 200 → 200; the 150 MiB request finds no free block that fits (the 100 MiB hole is too
    # small) and grows the tail: 200 + 160 MiB (150 rounded to 20 MiB pages)
    assert expandable.max_reserved == 360 * MiB


def test_max_split_size_keeps_oversize_blocks_whole() -> None:
    a = CachingAllocator(AllocatorConfig(max_split_size=64 * MiB))
    a.malloc(1, 100 * MiB)
    a.free(1)
    a.malloc(2, 30 * MiB)                # a small request may not take the oversize cached block
    assert a.reserved == 130 * MiB


# ----------------------------------------------------------------------------------------- knobs
def test_alloc_conf_and_env_knobs() -> None:
    conf = parse_alloc_conf("expandable_segments:True, max_split_size_mb:512,garbage_collection_threshold:0.6")
    assert conf.config.expandable_segments and conf.config.max_split_size == 512 * MiB and not conf.warnings
    assert "did you mean 'expandable_segments'" in str(parse_alloc_conf("expandable_segment:True").warnings[0])
    with pytest.raises(ConfigError, match="expandable_segments takes True or False"):
        parse_alloc_conf("expandable_segments:maybe")
    options, _ = env_options({"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True", "HCCL_BUFFSIZE": "120",
                              "P2P_HCCL_BUFFSIZE": "0"}, "run.sh")
    assert options == {"options.alloc_conf": "expandable_segments:True", "options.hccl_buffsize": 120 * MiB,
                       "options.p2p_hccl_buffsize": 0.0}
    with pytest.raises(ConfigError, match=r"run\.sh: HCCL_BUFFSIZE"):
        env_options({"HCCL_BUFFSIZE": "big"}, "run.sh")


# ----------------------------------------------------------------------------------------- communicators
MOE = ModelSpec(name="m", hidden_size=2048, num_layers=8, num_attention_heads=16, vocab_size=32000,
                ffn_hidden_size=5632, num_experts=16, moe_ffn_hidden_size=1408, experts_per_token=2)


def _groups(strategy: Strategy, stage: int, framework: str = "megatron", device: str = "A2") -> dict:
    r = resolve(MOE, strategy, find_preset(device), RunOptions(framework=framework))
    return {g.name: (g.size, g.count) for g in rank_groups(r, stage)}


def test_communicators_a_rank_belongs_to() -> None:
    st = Strategy(seq_length=4096, dp=4, tp=2, pp=4, ep=4, micro_batches=8)
    first, middle = _groups(st, 0), _groups(st, 1)
    assert first["world"][0] == 32 and first["TP"][0] == 2 and first["DP"][0] == 4 and first["EP"][0] == 4
    assert first["PP p2p"] == (2, 1) and middle["PP p2p"] == (2, 2)  # one neighbour at the ends, two inside
    # HCCL: 2 × 200 MiB per collective communicator (world, TP, DP, EP, ETP (= tp under Megatron), EDP),
    # 2 × 20 MiB per point-to-point communicator under torch_npu
    r = resolve(MOE, st, find_preset("A2"), RunOptions(framework="megatron"))
    groups = rank_groups(r, 1)
    edp = 4 * 2 / (4 * 2)  # d·t/(ep·etp) = 1: no expert-DP communicator
    collective = 1 + 1 + 1 + 1 + 1 + (1 if edp > 1 else 0)
    rule = library_rule("hccl", "pytorch")
    assert library_bytes(groups, rule) == collective * 400 * MiB + 2 * 40 * MiB
    assert library_bytes(groups, library_rule("hccl", "pytorch", hccl_buffsize=100 * MiB)) == \
        collective * 200 * MiB + 2 * 40 * MiB
    # NCCL: 32 channels × 2 connections × (4 MiB + 4,915,200 + 524,288 bytes) = 588 MiB
    assert library_rule("nccl", "pytorch").per_collective == 32 * 2 * (4 * MiB + 4915200 + 524288)
    assert 544e6 <= library_rule("nccl", "pytorch").per_collective <= 688e6  # NVIDIA/nccl issue 964, 4 A100


# ----------------------------------------------------------------------------------------- H200 measurements
def _plans(shared_dir: Path) -> list[tuple[dict, Path]]:
    folder = shared_dir / "measurements"
    if not (folder / "h200_allocator.jsonl").is_file():
        pytest.skip("no H200 measurements")
    out = []
    for line in (folder / "h200_allocator.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out.append((rec, folder / rec["plan"]))
    return out


def _device(plan: Path, alloc_conf: str):
    parsed = parse([str(plan)])
    options = parsed.options.replace(alloc_conf=alloc_conf)
    res = estimate(parsed.model, parsed.strategy, parsed.hardware, options)
    r = resolve(parsed.model, parsed.strategy, parsed.hardware, options)
    return res.stages[0], StagePricer(r, build_layout(layout_inputs(r)))


def test_tensor_peak_matches_max_memory_allocated(shared_dir: Path) -> None:
    for rec, plan in _plans(shared_dir):
        dm, _ = _device(plan, "")
        measured = rec["default_allocator"]["max_allocated"]
        # 64 MiB of cuBLAS workspace included; config 1 (0.6 GB of small tensors) is 0.7 % under: block rounding
        assert dm.tensor_peak == pytest.approx(measured, rel=0.01), plan.name


@pytest.mark.parametrize("mode,conf", [("default_allocator", ""), ("expandable_segments", "expandable_segments:True")])
def test_reserved_and_device_use_within_ten_percent(shared_dir: Path, mode: str, conf: str) -> None:
    rows = []
    for rec, plan in _plans(shared_dir):
        dm, _ = _device(plan, conf)
        meas = rec[mode]
        reserved_error = dm.allocator_peak / meas["max_reserved"] - 1
        device_error = dm.device_peak / meas["device_used_after_run"] - 1
        rows.append((plan.name, reserved_error, device_error))
        assert abs(reserved_error) <= 0.10, (plan.name, mode, reserved_error)
        assert abs(device_error) <= 0.10, (plan.name, mode, device_error)
    print(*(f"{n}: reserved {a:+.1%}, device {b:+.1%}" for n, a, b in rows), sep="\n")


def test_trace_reproduces_the_estimate_at_its_peak(shared_dir: Path) -> None:
    """The allocation trace's own live-byte maximum is the estimate's tensor peak (the trace follows the
    estimate's instants), so the slack it measures is the slack of the estimated peak."""
    for _rec, plan in _plans(shared_dir):
        dm, pricer = _device(plan, "")
        assert library_workspaces(pricer.r).total == dm.bytes_by_category["library_workspaces"]
        events = stage_trace(pricer, 0, stage_rows(pricer, 0), library_workspaces(pricer.r)).events
        steady = replay(events)[-1]
        assert steady.max_allocated == pytest.approx(dm.tensor_peak, rel=0.01), plan.name  # block rounding


def test_device_notes_speak_english_and_chinese() -> None:
    """The notes of [D-COMM] and [D-SLACK] are catalogue messages: English as before, Chinese in the Chinese app."""
    from types import SimpleNamespace

    from estimator.device.stage_terms import note_comm, note_slack
    from estimator.messages import CHINESE

    st = Strategy(seq_length=4096, dp=4, tp=2, pp=4, ep=4, micro_batches=8)
    npu = SimpleNamespace(r=resolve(MOE, st, find_preset("A2"), RunOptions(framework="megatron")), stage=1, pricer=None)
    comm = note_comm(npu)  # type: ignore[arg-type]
    assert str(comm) == ("5 communicators + 2 point-to-point (2 × HCCL_BUFFSIZE per communicator, "
                         "2 × P2P_HCCL_BUFFSIZE per point-to-point communicator)")
    assert comm.localized(CHINESE) == ("5 个通信域 + 2 个点对点（每个通信域 2 × HCCL_BUFFSIZE，"
                                       "每个点对点通信域 2 × P2P_HCCL_BUFFSIZE）")
    gpu = SimpleNamespace(r=resolve(MOE, st, find_preset("H200"), RunOptions(framework="megatron")),
                          stage=0, pricer=None)
    assert ("(32 channels × 2 connections × (NCCL_BUFFSIZE + LL128 + LL) per communicator, 2 channels per "
            "point-to-point communicator); NCCL NVLS buffers") in str(note_comm(gpu))  # type: ignore[arg-type]
    assert str(note_slack(gpu)) == "default (PyTorch's default)"  # type: ignore[arg-type]
    assert note_slack(gpu).localized(CHINESE) == "默认（PyTorch 的默认值）"  # type: ignore[arg-type]
    titan = SimpleNamespace(r=resolve(MOE, st, find_preset("H200"), RunOptions(framework="torchtitan")),
                            stage=0, pricer=None)
    assert str(note_slack(titan)) == "expandable_segments:True (torchtitan's launcher default)"  # type: ignore[arg-type]
    mind = SimpleNamespace(r=resolve(MOE, st, find_preset("A2"), RunOptions(framework="mindformers")),
                           stage=0, pricer=None)
    assert str(note_slack(mind)).startswith("MindSpore graph mode plans device memory statically (SOMAS)")  # type: ignore[arg-type]
    assert note_slack(mind).localized(CHINESE).startswith("MindSpore 图模式静态规划设备内存")  # type: ignore[arg-type]
    assert str(note_comm(mind)) == ("5 communicators + 1 point-to-point (2 × HCCL_BUFFSIZE per communicator "  # type: ignore[arg-type]
                                    "(MindSpore sends through HCCL communicators))")


def test_nvls_buffers_priced_from_nccls_source() -> None:
    """[D-NVLS] NCCL src/transport/nvls.cc: per communicator with L ranks in a node, channels × 2 × (chunk × 8 steps)
    × L heads of unicast buffer plus channels × 2 × 64 B × L of credits, each rounded up to 2 MiB; 16 channels on
    cc 9.x, 24 (one node) / 32 (across nodes) on cc ≥ 10; L > 2 (NCCL ≤ 2.28), L = 2 too from 2.29 (the high end);
    allocated when an NVLS algorithm first runs (the low end holds none)."""

    def comm(L: int, channels: int, chunk: int = 128 * KiB) -> int:
        up = 2 * MiB
        return -(-channels * 2 * chunk * 8 * L // up) * up + -(-channels * 2 * 64 * L // up) * up

    assert comm(8, 16) == 258 * MiB  # H100/H200, 8 ranks a node
    st = Strategy(seq_length=4096, dp=2, tp=4, pp=2, micro_batches=4, sequence_parallel=True)  # 2 nodes of 8
    h200 = resolve(MOE, st, find_preset("H200"), RunOptions(framework="megatron"))
    groups = rank_groups(h200, 0)
    # world: 8 ranks a node; TP 4; DP 2 (stride 4: both in one node); expert TP 4; EDP 2; no NVLS for p2p
    assert nvls_bytes(groups, nvls_rule(h200)) == comm(8, 16) + comm(4, 16) + comm(4, 16)
    assert nvls_bytes(groups, nvls_rule(h200), min_local=2) == \
        comm(8, 16) + comm(4, 16) + comm(4, 16) + comm(2, 16) + comm(2, 16)
    b200 = resolve(MOE, st, find_preset("B200"), RunOptions(framework="megatron"))
    assert nvls_bytes(rank_groups(b200, 0), nvls_rule(b200)) == comm(8, 32) + comm(4, 24) + comm(4, 24)
    big = resolve(MOE, st, find_preset("H200"), RunOptions(framework="megatron", nccl_nvls_chunksize=256 * KiB,
                                                           nccl_nvls_nchannels=8))
    assert nvls_bytes(groups, nvls_rule(big)) == comm(8, 8, 256 * KiB) + 2 * comm(4, 8, 256 * KiB)
    for device, options in (("H200", RunOptions(framework="megatron", nccl_nvls_enable=False)),
                            ("A100", RunOptions(framework="megatron")), ("A2", RunOptions(framework="megatron"))):
        assert nvls_rule(resolve(MOE, st, find_preset(device), options)) is None, device
    # the estimate: nominal in the device peak (outside the allocator), band from none to the 2-rank groups too
    # (NCCL ≥ 2.29; an unstated version: test_old_nccl_allocates_larger_nvls_buffers_at_start)
    on = estimate(MOE, st, find_preset("H200"), RunOptions(framework="megatron", nccl_version="2.29.2"))
    off = estimate(MOE, st, find_preset("H200"), RunOptions(framework="megatron", nccl_nvls_enable=False))
    nominal = comm(8, 16) + 2 * comm(4, 16)
    s_on, s_off = on.stages[0], off.stages[0]
    assert s_on.device_peak - s_off.device_peak == pytest.approx(nominal)
    assert s_on.allocator_peak == pytest.approx(s_off.allocator_peak)
    assert s_on.device_peak_low == pytest.approx(s_off.device_peak_low)
    assert s_on.device_peak_high - s_off.device_peak_high == pytest.approx(nominal + 2 * comm(2, 16))
    assert not [w for w in on.warnings if w.code == "W-NVLS"]  # priced, not warned


def test_nvls_note_speaks_english_and_chinese() -> None:
    from types import SimpleNamespace

    from estimator.device.stage_terms import note_comm
    from estimator.messages import CHINESE

    st = Strategy(seq_length=4096, dp=2, tp=4, pp=2, micro_batches=4, sequence_parallel=True)
    view = SimpleNamespace(r=resolve(MOE, st, find_preset("H200"), RunOptions(framework="megatron")),
                           stage=0, pricer=None)
    note = note_comm(view)  # type: ignore[arg-type]
    assert ("; NCCL NVLS buffers 518 MiB for 3 communicator(s) with more than 2 ranks in a node, allocated when an "
            "NVLS algorithm first runs on one (") in str(note)
    new = SimpleNamespace(r=resolve(MOE, st, find_preset("H200"), RunOptions(framework="megatron",
                                                                             nccl_version="2.29.2")),
                          stage=0, pricer=None)
    assert ("(NCCL 2.29.2; band: none until then, up to 650 MiB with NCCL ≥ 2.29's 2-rank communicators; "
            "NCCL_NVLS_ENABLE=0 removes them)") in str(note_comm(new))  # type: ignore[arg-type]
    assert "NCCL NVLS 缓冲区 518 MiB，用于 3 个节点内多于 2 个 rank 的通信域" in note.localized(CHINESE)
    # the NCCL versions the sizes hold for are said, and that the high end is older NCCL's eager buffers
    assert "sizes of NCCL ≥ 2.22 (PyTorch ≥ 2.7), options.nccl_version not stated; band: none until then, up to " \
           "6.00 GiB: the larger of NCCL ≥ 2.29" in str(note)
    assert "NCCL 2.17–2.21 (PyTorch ≤ 2.6), which allocates larger buffers for every such communicator at start" \
        in str(note)
    assert "未给出 options.nccl_version；区间：此前为零，最多 6.00 GiB" in note.localized(CHINESE)
    old = SimpleNamespace(r=resolve(MOE, st, find_preset("H200"), RunOptions(framework="megatron",
                                                                             nccl_version="2.21.5")),
                          stage=0, pricer=None)
    eager = note_comm(old)  # type: ignore[arg-type]
    assert ("NCCL 2.21.5 allocates NVLS buffers when a communicator is created: 3.00 GiB for 3 communicator(s) "
            "(32 channels × 2 × (1 MiB + 2 MiB) × ranks in a node each") in str(eager)
    assert "NCCL 2.21.5 在创建通信域时即分配 NVLS 缓冲区：3 个通信域共 3.00 GiB" in eager.localized(CHINESE)


def test_old_nccl_allocates_larger_nvls_buffers_at_start() -> None:
    """[D-NVLS] NCCL 2.17–2.21 ``ncclNvlsSetup`` (src/transport/nvls.cc at each tag) allocates, when a communicator
    is created, channels × 2 × (buffer + NVLS_MEM_ALIGN_SIZE 2 MiB) × L per rank: 16 channels and NCCL_BUFFSIZE
    (4 MiB) in 2.17–2.19, the communicator's collective channels (≤ MAXCHANNELS 32) and NCCL_BUFFSIZE in 2.20,
    those channels and NCCL_NVLS_CHUNKSIZE × 8 (1 MiB) in 2.21; L ≥ 2 within one node in 2.17, L > 2 from 2.18.
    A stated old version holds them at every end of the band; an unstated one on cc 9.x reaches them at the high
    end only (nominal stays NCCL ≥ 2.22's, said as an assumption)."""
    st = Strategy(seq_length=4096, dp=2, tp=4, pp=2, micro_batches=4, sequence_parallel=True)  # 2 nodes of 8
    # stage 0's communicators (rank_groups): world 16 (8 in a node, spans 2 nodes), TP 4, DP 2 (in a node),
    # expert TP 4, expert DP 2 (in a node); ranks in a node L = 8, 4, 2, 4, 2
    per_rank = {  # MiB per communicator of L ranks in a node, by hand from the rule above
        "2.18.3": {8: 16 * 2 * 6 * 8, 4: 16 * 2 * 6 * 4},   # 1536, 768
        "2.20.5": {8: 32 * 2 * 6 * 8, 4: 32 * 2 * 6 * 4},   # 3072, 1536
        "2.21.5": {8: 32 * 2 * 3 * 8, 4: 32 * 2 * 3 * 4},   # 1536, 768
    }
    held = {version: (size[8] + 2 * size[4]) * MiB for version, size in per_rank.items()}  # world, TP, ETP
    held["2.17.1"] = 16 * 2 * 6 * (4 + 2 + 4 + 2) * MiB  # one node only: not the world; 2-rank DP and EDP too
    assert held == {"2.18.3": 3072 * MiB, "2.20.5": 6144 * MiB, "2.21.5": 3072 * MiB, "2.17.1": 2304 * MiB}
    off = estimate(MOE, st, find_preset("H200"), RunOptions(framework="megatron", nccl_nvls_enable=False)).stages[0]
    for version, nvls in held.items():
        got = estimate(MOE, st, find_preset("H200"), RunOptions(framework="megatron", nccl_version=version))
        s = got.stages[0]
        assert s.device_peak - off.device_peak == pytest.approx(nvls), version
        assert s.device_peak_low - off.device_peak_low == pytest.approx(nvls), version   # held from the start
        assert s.device_peak_high - off.device_peak_high == pytest.approx(nvls), version
        assert not [a for a in got.assumptions if a.field == "options.nccl_version"]
    # not stated: nominal NCCL ≥ 2.22's (3 communicators × 258 MiB … 172 MiB), high end the largest: 2.20's
    unknown = estimate(MOE, st, find_preset("H200"), RunOptions(framework="megatron"))
    s = unknown.stages[0]
    assert s.device_peak - off.device_peak == pytest.approx((258 + 2 * 130) * MiB)
    assert s.device_peak_low == pytest.approx(off.device_peak_low)
    assert s.device_peak_high - off.device_peak_high == pytest.approx(6144 * MiB)
    assert [a.value for a in unknown.assumptions if a.field == "options.nccl_version"] == ["≥ 2.22"]
    # NCCL 2.22–2.28: lazy, no 2-rank communicators at the high end; before 2.17: no NVLS at all
    lazy = estimate(MOE, st, find_preset("H200"), RunOptions(framework="megatron", nccl_version="2.26.2")).stages[0]
    assert lazy.device_peak_high - off.device_peak_high == pytest.approx((258 + 2 * 130) * MiB)
    none = estimate(MOE, st, find_preset("H200"), RunOptions(framework="megatron", nccl_version="2.16.5")).stages[0]
    assert none.device_peak_high == pytest.approx(off.device_peak_high)
    # cc ≥ 10 (B200): no NCCL before 2.25 runs there, so the high end stays NCCL ≥ 2.29's 2-rank communicators
    b_off = estimate(MOE, st, find_preset("B200"), RunOptions(framework="megatron", nccl_nvls_enable=False))
    b = estimate(MOE, st, find_preset("B200"), RunOptions(framework="megatron"))
    two_rank = nvls_bytes(rank_groups(resolve(MOE, st, find_preset("B200"), RunOptions(framework="megatron")), 0),
                          nvls_rule(resolve(MOE, st, find_preset("B200"), RunOptions(framework="megatron"))),
                          min_local=2)
    assert b.stages[0].device_peak_high - b_off.stages[0].device_peak_high == pytest.approx(two_rank)
    # no NVLS switch (A100), no assumption
    a100 = estimate(MOE, st, find_preset("A100"), RunOptions(framework="megatron"))
    assert not [a for a in a100.assumptions if a.field == "options.nccl_version"]


def test_search_prices_old_nccls_eager_nvls_buffers_as_the_estimate() -> None:
    """A stated NCCL 2.20 holds its eager NVLS buffers in the search's arrays too: every ranked row's device peak is
    its own estimate's, and above the same row under an unstated version (lazy buffers, nominally)."""
    from estimator.parsed import ParsedConfig
    from estimator.search import SearchSpace, parse_dims, search

    st = Strategy(seq_length=4096, dp=2, tp=4, pp=2, micro_batches=4, sequence_parallel=True)
    space = SearchSpace(devices=16, global_batch=32, dims=parse_dims(["tp=auto", "pp=auto"]))
    peaks = {}
    for version in (None, "2.20.5"):
        parsed = ParsedConfig(model=MOE, strategy=st, hardware=find_preset("H200"),
                              options=RunOptions(framework="megatron", nccl_version=version))
        rows = search(parsed, space).ranked
        assert rows
        for row in rows:
            assert row.result is not None
            assert row.peak_bytes == pytest.approx(row.result.device_peak_bytes, rel=1e-9)
        peaks[version] = {(row.strategy.tp, row.strategy.pp): row.peak_bytes for row in rows}
    shared = peaks[None].keys() & peaks["2.20.5"].keys()
    assert shared and all(peaks["2.20.5"][k] > peaks[None][k] for k in shared)


def test_nccl_version_read_as_text(tmp_path: Path) -> None:
    from estimator.device.communicators import nccl_version

    assert nccl_version("2.21.5") == (2, 21)
    assert nccl_version(" 2.27 ") == (2, 27)
    assert nccl_version("2.21.5-1") == (2, 21)
    assert nccl_version("2.26.2+cuda12.8") == (2, 26)
    assert nccl_version(None) is None
    st = Strategy(seq_length=4096, dp=2, tp=4, pp=2, micro_batches=4, sequence_parallel=True)
    with pytest.raises(ConfigError, match=r"options.nccl_version takes a version like 2.21.5, not 'two'"):
        estimate(MOE, st, find_preset("H200"), RunOptions(framework="megatron", nccl_version="two"))
    plan = tmp_path / "p.plan.yaml"
    plan.write_text("model: {name: m, hidden_size: 2048, num_layers: 8, num_attention_heads: 16, vocab_size: 32000}\n"
                    "strategy: {dp: 8, seq_length: 4096}\nhardware: {device: H200}\n"
                    "options: {framework: megatron, nccl_version: 2.20}\n")
    with pytest.raises(ConfigError, match=r"got the number 2.2 \(YAML reads 2.20 as 2.2\): quote it"):
        parse([str(plan)])
    plan.write_text(plan.read_text().replace("2.20}", '"2.20"}'))
    assert parse([str(plan)]).options.nccl_version == "2.20"


def test_nvls_knobs_read_from_launch_scripts(tmp_path: Path) -> None:
    options, _ = env_options({"NCCL_NVLS_ENABLE": "0", "NCCL_NVLS_CHUNKSIZE": "262144", "NCCL_NVLS_NCHANNELS": "8"},
                             "run.sh")
    assert options == {"options.nccl_nvls_enable": False, "options.nccl_nvls_chunksize": 262144.0,
                       "options.nccl_nvls_nchannels": 8}
    assert env_options({"NCCL_NVLS_ENABLE": "2"}, "run.sh")[0] == {"options.nccl_nvls_enable": True}
    with pytest.raises(ConfigError, match=r"run.sh: NCCL_NVLS_ENABLE.*takes 0, 1 or 2, not 'yes'"):
        env_options({"NCCL_NVLS_ENABLE": "yes"}, "run.sh")
    script = tmp_path / "train.sh"
    script.write_text("export NCCL_NVLS_ENABLE=0\n"
                      "torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
                      "--num-attention-heads 8 --seq-length 2048 --max-position-embeddings 2048 --vocab-size 32000 "
                      "--micro-batch-size 1 --global-batch-size 32 --bf16 --tensor-model-parallel-size 8\n")
    parsed = parse([str(script)])
    assert parsed.options.nccl_nvls_enable is False
    assert "train.sh:1" in str(parsed.provenance["options.nccl_nvls_enable"])
    res = estimate(parsed.model, parsed.strategy, find_preset("H200"), parsed.options)
    assert all(s.device.get("comm_library_low", 0.0) == 0.0 for s in res.stages)


# ----------------------------------------------------------------------------------------- calibrated bands
@pytest.mark.parametrize("terms", [{"allocator_slack_fraction": 0.05},
                                   {"allocator_slack_factor": 2.0, "allocator_slack_fraction": 0.05}])
def test_a_calibrated_static_pools_band_is_its_slack(terms: dict) -> None:
    """A MindSpore plan (static pool: no modelled slack) calibrated with a slack fraction holds that fraction of
    its tensors as slack, with no band of its own: its device peak's ends are the nominal peak. (Before, the note's
    ends were the slack scaled and added twice, so even the 'low' end sat above the nominal.)"""
    p = parse([str(Path(__file__).resolve().parents[1] / "resources/examples/mindformers_deepseek_v3_671b.yaml")])
    plain = estimate(p.model, p.strategy, p.hardware, p.options)
    got = estimate(p.model, p.strategy, p.hardware, p.options.replace(**terms))
    for before, stage in zip(plain.stages, got.stages, strict=True):
        assert stage.device["allocator"] == "static"
        assert before.allocator_slack == 0.0 and stage.allocator_slack > 0.0
        # the fraction of what the stage's tensors hold (the factor scales the static pool's zero)
        assert stage.allocator_slack == pytest.approx(0.05 * before.tensor_peak, rel=0.02)
        assert stage.device_peak_low == stage.device_peak == stage.device_peak_high
        assert stage.allocator_peak_low == stage.allocator_peak == stage.allocator_peak_high
