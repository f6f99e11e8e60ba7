"""Strategy search (docs/model.md#search): enumeration, refusal codes, vectorised pricing equal to the scalar estimate,
ranking, Pareto front, cancellation, and the empty-space message."""

from __future__ import annotations

import dataclasses
import gc
import itertools
import threading

import numpy as np
import pytest

from estimator import StrategyError, estimate
from estimator.errors import ConfigError, SappError
from estimator.parsed import build_plan
from estimator.search import SearchSpace, candidate_at, default_time_fn, parse_dims, search
from estimator.search.candidates import enumerate_candidates
from estimator.search.filters import CODES, refusals, resolve_columns
from estimator.search.pricing import price_candidates


def plan(framework: str, model: dict, strategy: dict, device: str = "H100-80G"):
    values = {f"model.{k}": v for k, v in model.items()}
    values.update({f"strategy.{k}": v for k, v in strategy.items()})
    values["options.framework"] = framework
    values["hardware.device"] = device
    return build_plan(values)


LLAMA8B = {"name": "llama3-8b", "hidden_size": 4096, "num_layers": 32, "num_attention_heads": 32, "num_kv_heads": 8,
           "head_dim": 128, "ffn_hidden_size": 14336, "vocab_size": 128256}
MIXTRAL = {"name": "mixtral-8x7b", "hidden_size": 4096, "num_layers": 32, "num_attention_heads": 32,
           "num_kv_heads": 8, "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden_size": 14336,
           "vocab_size": 32000}


def priced_space(parsed, space):
    cands = enumerate_candidates(parsed, space)
    derived = resolve_columns(cands, parsed)
    reason = refusals(cands, derived, parsed, space)
    alive = np.nonzero(reason < 0)[0]
    surv = cands.take(alive)
    surv_derived = {k: (v if k == "schedule_names" else v[alive]) for k, v in derived.items()}
    return cands, reason, surv, surv_derived, price_candidates(parsed, surv, surv_derived, default_time_fn())


CASES = [
    ("megatron", LLAMA8B, {"seq_length": 4096, "dp": 64, "sharding": "zero1"}, 64, 512),
    ("torchtitan", LLAMA8B, {"seq_length": 8192, "dp": 32, "sharding": "fsdp"}, 32, 64),
    ("mindformers", MIXTRAL, {"seq_length": 4096, "dp": 16, "ep": 8, "sharding": "mf_op"}, 16, 128),
    ("mindspeed", MIXTRAL, {"seq_length": 4096, "dp": 16, "ep": 4, "sharding": "zero1", "sequence_parallel": True},
     16, 64),
]


@pytest.mark.parametrize(("framework", "model", "strategy", "devices", "batch"), CASES, ids=[c[0] for c in CASES])
def test_vectorised_search_equals_scalar_estimate(framework, model, strategy, devices, batch):
    parsed = plan(framework, model, strategy, "A2" if framework.startswith("mind") else "H100-80G")
    # the search prices the allocator slack by the plan's ratio, one estimate replays it (P-SLACK-RATIO): with the
    # ratio stated, both price the same bytes
    parsed = dataclasses.replace(parsed, options=parsed.options.replace(allocator_slack_ratio=0.125))
    space = SearchSpace(devices=devices, global_batch=batch, dims=parse_dims(["all=auto"]))
    cands, reason, surv, derived, priced = priced_space(parsed, space)
    assert len(surv) > 50
    rng = np.random.default_rng(7)
    sample = rng.choice(len(surv), size=min(120, len(surv)), replace=False)
    for k in sample:
        strategy_k = candidate_at(parsed, surv, derived, int(k))
        result = estimate(parsed.model, strategy_k, parsed.hardware, parsed.options)
        assert abs(result.peak_bytes - priced.peak[k]) <= 1.0, strategy_k
        assert abs(result.optimizer_step_peak - priced.optimizer_step_peak[k]) <= 1.0
        assert result.peak_stage == priced.peak_stage[k]
        assert abs(result.step_time_s - priced.step_time[k]) <= 1e-9 * result.step_time_s
        assert abs(result.mfu - priced.mfu[k]) <= 1e-9 * max(result.mfu, 1e-12)
    # refused candidates really are refused by the scalar validator, with that code among its violations
    for code_index in np.unique(reason[reason >= 0]):
        code = CODES[code_index]
        if code in ("R-BOUND", "R-GBS", "R-FW", "R-SP-T1"):  # estimate treats SP at TP 1 as off (P-SP-T1)
            continue
        k = int(np.nonzero(reason == code_index)[0][0])
        strategy_k = candidate_at(parsed, cands, resolve_columns(cands, parsed), k)
        with pytest.raises(StrategyError) as err:
            estimate(parsed.model, strategy_k, parsed.hardware, parsed.options)
        assert code in err.value.codes


def test_search_ranks_by_step_time_and_reports_counts():
    parsed = plan("megatron", LLAMA8B, {"seq_length": 4096, "dp": 64, "sharding": "zero1"})
    space = SearchSpace(devices=64, global_batch=512, dims=parse_dims(["tp=1,2,4,8", "pp=auto", "rec=auto",
                                                                         "mbs=1,2", "sp=auto"]), top_k=5)
    res = search(parsed, space)
    assert res.candidates == sum(res.refusals.get(c, 0) for c in CODES) + res.survivors
    assert res.fitting + res.refusals.get("R-MEM", 0) == res.survivors
    assert 0 < len(res.ranked) <= 5
    times = [row.step_time_s for row in res.ranked]
    assert times == sorted(times)
    for row in res.ranked:
        assert row.result is not None and row.result.fits
        assert row.result.step_time_s == pytest.approx(row.step_time_s, rel=1e-9)
        assert row.strategy.world_size == 64 and row.strategy.global_batch_size == 512
    # the Pareto front: faster points have higher peaks, and no fitting candidate dominates a front point
    front = [(r.step_time_s, max(r.peak_bytes, r.optimizer_step_peak)) for r in res.pareto]
    assert all(a[0] <= b[0] and a[1] > b[1] for a, b in itertools.pairwise(front))
    assert res.ranked[0].step_time_s == pytest.approx(front[0][0])
    assert "R-SP-T1" in res.refusals and "R-SP-T1" in res.examples


def test_empty_space_names_the_filters():
    """Every candidate refused: the plan on screen is still a row (it prices), and the refusals are named with
    an example each; a plan that cannot be priced either makes the search a refusal naming the filters."""
    parsed = plan("megatron", LLAMA8B, {"seq_length": 4096, "dp": 96})
    space = SearchSpace(devices=96, global_batch=384, dims=parse_dims(["tp=3"]))
    result = search(parsed, space)
    assert result.ranked == [] and result.fitting == 0 and result.survivors == 0
    assert result.current is not None and result.current.row.strategy is parsed.strategy
    assert result.refusals == {"R-TP-HEADS": 1} and "t=3" in result.examples["R-TP-HEADS"]
    broken = dataclasses.replace(parsed, strategy=dataclasses.replace(parsed.strategy, tp=5))  # 32 heads / 5
    with pytest.raises(SappError) as err:
        search(broken, space)
    assert "no candidate survives" in str(err.value) and "R-TP-HEADS: 1" in str(err.value)
    assert "t=3" in str(err.value)  # an example candidate per reason


def test_degrees_that_cannot_split_the_devices():
    parsed = plan("megatron", LLAMA8B, {"seq_length": 4096, "dp": 64})
    with pytest.raises(SappError, match="tp=3,5 does not divide the 64 devices"):
        search(parsed, SearchSpace(devices=64, global_batch=512, dims=parse_dims(["tp=3,5"])))


def test_cancel_returns_partial_result():
    parsed = plan("megatron", LLAMA8B, {"seq_length": 4096, "dp": 64, "sharding": "zero1"})
    space = SearchSpace(devices=64, global_batch=512, dims=parse_dims(["all=auto"]))
    event = threading.Event()
    calls = []

    def progress(done, total, phase):
        calls.append(phase)
        if phase == "price":
            event.set()

    res = search(parsed, space, progress=progress, cancel=event)
    assert res.cancelled
    assert "enumerate" in calls and "filter" in calls


def test_parse_dims_errors():
    with pytest.raises(ConfigError, match="unknown dimension 'tpp'"):
        parse_dims(["tpp=2"])
    with pytest.raises(ConfigError, match="not an integer"):
        parse_dims(["tp=two"])
    dims = parse_dims(["tp=1,2 pp=auto", "rec=full,none"])
    assert dims["tp"].values == (1, 2) and dims["pp"].auto and dims["rec"].values == (2, 0)


EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[1] / "resources" / "examples"


@pytest.mark.parametrize("files, overrides", [
    # DualPipeV with 3 noop layers padding 61 to 64: candidates keep the padding when their recompute changes
    (["mindspeed_deepseek_v3_671b_pretrain.sh"], {"hardware.device": "A3"}),
    # a vision tower on the first stage: its per-stage list follows a new pipeline degree
    (["mindspeed_qwen2_5vl_7b_finetune.sh", "mindspeed_qwen2_5vl_7b_model.json"], None),
])
def test_search_of_the_examples_with_layout_padding_and_a_vision_tower(files, overrides):
    from estimator.formats import parse

    parsed = parse([str(EXAMPLES / f) for f in files], overrides=overrides)
    # a stated slack ratio: the search's and the estimate's allocator slack alike (P-SLACK-RATIO)
    parsed = dataclasses.replace(parsed, options=parsed.options.replace(allocator_slack_ratio=0.125))
    st = parsed.strategy
    space = SearchSpace(devices=st.world_size, global_batch=st.global_batch_size,
                        dims=parse_dims(["tp=auto", "pp=auto", "rec=auto"]))
    _cands, _reason, surv, derived, priced = priced_space(parsed, space)
    assert len(surv) >= 10
    pps = set()
    for k in range(len(surv)):
        strategy_k = candidate_at(parsed, surv, derived, k)
        pps.add(strategy_k.pp)
        if st.noop_layers:
            assert strategy_k.noop_layers == st.noop_layers
        result = estimate(parsed.model, strategy_k, parsed.hardware, parsed.options)
        assert abs(result.peak_bytes - priced.peak[k]) <= 1.0, strategy_k
        assert abs(result.step_time_s - priced.step_time[k]) <= 1e-9 * result.step_time_s
    assert len(pps) > 1  # other pipeline degrees than the file's were priced
    outcome = search(parsed, space)
    assert outcome.ranked and outcome.fitting > 0


@pytest.mark.parametrize(("framework", "model", "strategy", "devices", "batch"), CASES, ids=[c[0] for c in CASES])
def test_pricing_frees_each_group_at_once(framework, model, strategy, devices, batch):
    """Pricing leaves no reference cycle behind: a group's row book, step-time context and arrays are freed by
    reference counting when the group is priced, not piled up until the garbage collector runs (DeepSeek-V3's
    pricing peaked at 295 MB traced instead of 159 MB, P-SEARCH-SPEED)."""
    parsed = plan(framework, model, strategy, "A2" if framework.startswith("mind") else "H100-80G")
    space = SearchSpace(devices=devices, global_batch=batch, dims=parse_dims(["all=auto"]))
    cands = enumerate_candidates(parsed, space)
    derived = resolve_columns(cands, parsed)
    alive = np.nonzero(refusals(cands, derived, parsed, space) < 0)[0][:2000]
    surv = cands.take(alive)
    surv_derived = {k: (v if k == "schedule_names" else v[alive]) for k, v in derived.items()}
    price_candidates(parsed, surv, surv_derived, default_time_fn())  # what a process builds once (catalogues)
    gc.collect()
    gc.disable()
    try:
        price_candidates(parsed, surv, surv_derived, default_time_fn())
        assert gc.collect() == 0
    finally:
        gc.enable()


@pytest.mark.parametrize(("framework", "model", "strategy", "devices", "batch"), CASES, ids=[c[0] for c in CASES])
def test_the_search_resolver_resolves_as_resolve(framework, model, strategy, devices, batch):
    """pricing.Resolver keeps ``settle`` per rest of the strategy (the sharding, mostly): every candidate, as
    priced (one per group) and as written (a ranked row's), resolves to what ``resolve`` gives, assumptions and
    warnings included — across shard sizes, sharding modes and recompute plans."""
    from estimator.resolve import resolve
    from estimator.search.pricing import Resolver, candidate_strategy

    parsed = plan(framework, model, strategy, "A2" if framework.startswith("mind") else "H100-80G")
    space = SearchSpace(devices=devices, global_batch=batch, dims=parse_dims(["all=auto"]))
    cands = enumerate_candidates(parsed, space)
    derived = resolve_columns(cands, parsed)
    alive = np.nonzero(refusals(cands, derived, parsed, space) < 0)[0]
    resolver = Resolver(parsed)
    shardings = set()
    for k in alive[::max(1, len(alive) // 60)]:
        row = cands.row(int(k))
        row["etp"] = int(derived["etp"][k])
        for as_written in (False, True):
            strategy_k = candidate_strategy(parsed, row, str(derived["schedule"][k]), as_written, resolver=resolver)
            ours = resolver(strategy_k)
            theirs = resolve(parsed.model, strategy_k, parsed.hardware, parsed.options)
            assert ours == theirs and ours.assumptions == theirs.assumptions
            assert [w.code for w in ours.warnings] == [w.code for w in theirs.warnings]
            shardings.add(strategy_k.sharding)
    assert len(resolver._settled) == len(shardings)  # one settle per shard size and mode, none per candidate
