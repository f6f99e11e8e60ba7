"""The search's coarse-first sieve (P-SEARCH-SPEED): the cheap rules run on one row per (b, ep, etp, vp, sp) of a
block and count the candidates each refused row stands for; the result must be the one of every rule over every
enumerated candidate — the same count per rule, the same first example, the same survivors in the same order."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from estimator.formats import parse
from estimator.parsed import build_plan
from estimator.search import SearchSpace, parse_dims, search
from estimator.search.candidates import enumerate_candidates
from estimator.search.filters import CODES, refusals, resolve_columns
from estimator.search.sieve import FINE_COLUMNS, FIRST_FINE_RULE, sieve

ROOT = Path(__file__).resolve().parents[1]
LLAMA8B = {"name": "llama3-8b", "hidden_size": 4096, "num_layers": 32, "num_attention_heads": 32, "num_kv_heads": 8,
           "head_dim": 128, "ffn_hidden_size": 14336, "vocab_size": 128256}
MIXTRAL = {**LLAMA8B, "name": "mixtral-8x7b", "num_experts": 8, "experts_per_token": 2, "ffn_hidden_size": None,
           "moe_ffn_hidden_size": 14336, "vocab_size": 32000}


def plan(framework: str, model: dict, strategy: dict):
    values = {f"model.{k}": v for k, v in model.items() if v is not None}
    values.update({f"strategy.{k}": v for k, v in strategy.items()})
    values["options.framework"] = framework
    values["hardware.device"] = "A2" if framework.startswith("mind") else "H100-80G"
    return build_plan(values)


def reference(parsed, space):
    """Every candidate enumerated and judged by every rule: counts per code, the first candidate per code, the
    survivors and their derived columns."""
    cands = enumerate_candidates(parsed, space)
    derived = resolve_columns(cands, parsed)
    reason = refusals(cands, derived, parsed, space)
    counts = np.bincount(reason[reason >= 0], minlength=len(CODES))
    first = {int(k): cands.row(int(np.argmax(reason == k))) for k in np.unique(reason[reason >= 0])}
    alive = np.flatnonzero(reason < 0)
    return counts, first, cands.take(alive), {k: (v if k == "schedule_names" else v[alive]) for k, v in derived.items()}


def assert_same_as_reference(parsed, space):
    counts, first, survivors, derived = reference(parsed, space)
    got = sieve(parsed, space)
    assert got.total == int(counts.sum()) + len(survivors)
    assert got.counts.tolist() == counts.tolist()
    assert {k: table.row(row) for k, (table, _derived, row) in got.examples.items()} == first
    assert got.survivors.columns.keys() == survivors.columns.keys()
    for name, column in survivors.columns.items():
        assert np.array_equal(got.survivors.columns[name], column), name
    assert got.derived.keys() == derived.keys()
    for name, column in derived.items():
        assert np.array_equal(got.derived[name], column), name
    return got


def counted(sieved) -> dict[str, int]:
    return {CODES[k]: int(n) for k, n in enumerate(sieved.counts) if n}


SMALL_DIMS = ["tp=1,2", "pp=1,2", "cp=1", "sp=0,1", "mbs=1,2,3", "rec=none,full", "vpp=1,2"]


def test_refusal_counts_per_rule_on_a_space_counted_by_hand():
    """Llama-3-8B (32 layers, 32 heads, 8 KV heads) on 8 devices, G = 8, Megatron, 1F1B (interleaved at vpp 2).
    Blocks (t, p) = (1, 1), (1, 2), (2, 1), (2, 2) with d = 8, 4, 4, 2; each block 3 b × 2 vp × 2 sp × 2 rec = 24
    candidates, 96 in all. In rule order:
    * R-SP-T1 (sp = 1 at t = 1): the half of the two t = 1 blocks → 24;
    * R-VPP-SCHED (vpp 2 at p = 1): block (1, 1) 6 of its 12 left, block (2, 1) 12 of 24 → 18;
    * R-GBS (m = 8/(d·b) not an integer): b 2, 3 of block (1, 1) (4 of 6 left), b = 3 elsewhere: 4 + 4 + 8 → 20;
    * R-MB-PP (m < p): block (1, 2) at b = 2 has m = 1 → 2 vp × 2 rec = 4;
    survivors 96 − 24 − 18 − 20 − 4 = 30 (2 + 4 + 8 + 16 by block)."""
    parsed = plan("megatron", LLAMA8B, {"seq_length": 4096, "dp": 8})
    space = SearchSpace(devices=8, global_batch=8, dims=parse_dims(SMALL_DIMS))
    got = assert_same_as_reference(parsed, space)
    assert got.total == 96
    assert counted(got) == {"R-SP-T1": 24, "R-VPP-SCHED": 18, "R-GBS": 20, "R-MB-PP": 4}
    assert len(got.survivors) == 30
    result = search(parsed, space)
    assert result.candidates == 96 and result.survivors == 30
    assert {k: v for k, v in result.refusals.items() if k != "R-MEM"} == counted(got)


def test_a_rule_after_the_coarse_ones_counts_the_expanded_candidates():
    """The same space with a listed optimizer shard size 1 or 3 (ZeRO-1): every count doubles, and R-OS-DIV —
    judged on the expanded survivors — refuses shard size 3 on all 30 (no block's d = 8, 4, 2 is a multiple)."""
    parsed = plan("megatron", LLAMA8B, {"seq_length": 4096, "dp": 8, "sharding": "zero1"})
    space = SearchSpace(devices=8, global_batch=8, dims=parse_dims([*SMALL_DIMS, "os=1,3"]))
    got = assert_same_as_reference(parsed, space)
    assert got.total == 192
    assert counted(got) == {"R-SP-T1": 48, "R-VPP-SCHED": 36, "R-GBS": 40, "R-MB-PP": 8, "R-OS-DIV": 30}
    assert set(got.survivors.columns["os"].tolist()) == {1}
    example_table, _derived, row = got.examples[CODES.index("R-OS-DIV")]
    assert example_table.row(row)["os"] == 3


CASES = [
    ("megatron", LLAMA8B, {"seq_length": 4096, "dp": 64, "sharding": "zero1"}, 64, 512, ["all=auto"]),
    ("torchtitan", LLAMA8B, {"seq_length": 8192, "dp": 32, "sharding": "fsdp"}, 32, 64, ["all=auto"]),
    ("mindformers", MIXTRAL, {"seq_length": 4096, "dp": 16, "ep": 8, "sharding": "mf_op"}, 16, 128, ["all=auto"]),
    ("mindspeed", MIXTRAL, {"seq_length": 4096, "dp": 16, "ep": 4, "sharding": "zero1", "sequence_parallel": True},
     64, 256, ["all=auto"]),
    ("megatron", LLAMA8B, {"seq_length": 4096, "dp": 96}, 96, 384, ["tp=auto", "dp=auto", "mb=1,2,4,8,16,32"]),
    ("mindspeed", MIXTRAL, {"seq_length": 4096, "dp": 16, "ep": 4, "sharding": "zero1", "schedule": "zbv",
                            "vpp": 2}, 32, 128, ["tp=auto", "pp=auto", "vpp=auto", "os=auto", "mbs=1,2"]),
]


@pytest.mark.parametrize(("framework", "model", "strategy", "devices", "batch", "dims"), CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_the_sieve_is_every_rule_over_every_candidate(framework, model, strategy, devices, batch, dims):
    parsed = plan(framework, model, strategy)
    assert_same_as_reference(parsed, SearchSpace(devices=devices, global_batch=batch, dims=parse_dims(dims)))


def test_the_sieve_on_deepseek_v3():
    """The benchmark's DeepSeek-V3 plan (MindFormers, MTP, MLA, 256 experts) on 256 devices."""
    parsed = parse([str(ROOT / "benchmarks" / "inputs" / "deepseek_v3_671b_mindformers.plan.yaml")])
    space = SearchSpace(devices=256, global_batch=1024, dims=parse_dims(["tp=auto", "pp=auto", "rec=auto",
                                                                          "mbs=1,2", "os=auto", "sp=auto"]))
    got = assert_same_as_reference(parsed, space)
    assert len(got.survivors) and got.counts.sum()


def test_no_coarse_rule_reads_a_shard_size():
    """The rules before R-OS-DIV are judged on one shard size per coarse row, so none of them may read one: the
    coarse pass takes those columns away, and a rule that read them would fail here."""
    assert CODES[FIRST_FINE_RULE] == "R-OS-DIV"
    parsed = plan("mindspeed", MIXTRAL, {"seq_length": 4096, "dp": 16, "ep": 4, "sharding": "zero1"})
    space = SearchSpace(devices=64, global_batch=256, dims=parse_dims(["all=auto"]))
    cands = enumerate_candidates(parsed, space)
    derived = resolve_columns(cands, parsed)
    coarse = refusals(cands, derived, parsed, space, stop=FIRST_FINE_RULE, unread=FINE_COLUMNS)
    assert np.array_equal(coarse, np.where(refusals(cands, derived, parsed, space) < FIRST_FINE_RULE,
                                           refusals(cands, derived, parsed, space), -1))
    with pytest.raises(AttributeError, match="os"):
        refusals(cands, derived, parsed, space, unread=FINE_COLUMNS)


def test_an_empty_space_is_empty_in_the_sieve_too():
    parsed = plan("megatron", LLAMA8B, {"seq_length": 4096, "dp": 96})
    got = sieve(parsed, dataclasses.replace(SearchSpace(devices=96, global_batch=384), dims=parse_dims(["tp=3"])))
    assert counted(got) == {"R-TP-HEADS": 1} and len(got.survivors) == 0 and got.total == 1
