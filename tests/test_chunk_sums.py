"""The chunk sums (``assembly.chunks``) add every column of a chunk's keys in one pass over the pairs
(``_linear``): each sum must be the one ``_lin`` makes of that column alone — Σ count·value over the pairs in the
form's order, from 0.0 — to the last bit and in type, for one plan's forms and for stacked forms (arrays over
the elements), with the columns in their places (row terms, their optimizer-step values, host terms, A1, the
offloaded activations)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, find_preset
from estimator.arr import maximum
from estimator.assembly import terms
from estimator.assembly.chunks import _lin, _linear, _present, chunk_sums
from estimator.assembly.form import stack_forms, stage_plan
from estimator.formats import parse
from estimator.layout import build_layout, layout_inputs
from estimator.resolve import resolve
from estimator.stage import StagePricer

ROOT = Path(__file__).resolve().parents[1]
H100 = find_preset("H100-80G")
DENSE = ModelSpec(name="llama3-8b", hidden_size=4096, num_layers=12, num_attention_heads=32, num_kv_heads=8,
                  ffn_hidden_size=14336, vocab_size=128256)
MEGA = RunOptions(framework="megatron", allocator_slack_ratio=0.09)


def _pricers() -> list[tuple[str, StagePricer]]:
    out = []
    for name in ("deepseek_v3_671b_mindformers", "llama3_70b_torchtitan_pp8_vpp5"):
        parsed = parse([str(ROOT / "benchmarks" / "inputs" / f"{name}.plan.yaml")])
        out.append((name, parsed.model, parsed.strategy, parsed.hardware, parsed.options))
    # offloaded activations and a swapped optimizer: host terms and offload columns that are not 0
    swapped = Strategy(seq_length=4096, tp=2, pp=4, dp=2, micro_batches=8, offload_activations=("layer",),
                       swap_optimizer=True, sharding=ShardingSpec(mode="zero1"))
    out.append(("offload+swap", DENSE, swapped, H100, MEGA))
    out.append(("zero3 upstream", DENSE, Strategy(seq_length=4096, tp=2, pp=2, dp=4, micro_batches=4,
                                                  sharding=ShardingSpec(mode="zero3")), H100, MEGA))
    pricers = []
    for name, model, st, hw, opts in out:
        r = resolve(model, st, hw, opts)
        pricers.append((name, StagePricer(r, build_layout(layout_inputs(r)))))
    return pricers


PRICERS = _pricers()


def _reference(pricer: StagePricer, form, j: int) -> dict:
    """What ``chunk_sums`` adds up, each column summed alone by ``_lin`` from the row costs' own terms."""
    pairs = form.counts[j]
    costs = [pricer.cost(item, with_head) for item, with_head in form.keys]
    forward = 0.0
    for k, n in pairs:
        forward = maximum(forward, _present(n, costs[k].gf))
    return {
        "rows": {t.id: _lin(pairs, [t.value(c, pricer) for c in costs]) for t in terms.ROW_TERMS},
        "step": {t.id: _lin(pairs, [(t.at_optimizer_step or t.value)(c, pricer) for c in costs])
                 for t in terms.ROW_TERMS},
        "host": {t.id: _lin(pairs, [t.value(c, pricer) for c in costs]) for t in terms.HOST_TERMS},
        "act": _lin(pairs, [c.act for c in costs]),
        "offload": _lin(pairs, [c.offload for c in costs]),
        "forward": forward,
    }


def _same(got, want, nan_equal: bool = False) -> None:
    """``got`` is ``want``: the same keys in the same order, the same types, equal values (NaN equal to NaN only
    with ``nan_equal``)."""
    if isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _same(got[key], want[key], nan_equal)
        return
    assert type(got) is type(want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    elif nan_equal:
        assert got == want or (got != got and want != want)
    else:
        assert got == want


@pytest.mark.parametrize("case", PRICERS, ids=[c[0] for c in PRICERS])
def test_chunk_sums_equal_each_column_summed_alone(case):
    _name, pricer = case
    plan = stage_plan(pricer.layout, pricer.r.dims.tie)
    forms = list({id(entry[0]): entry[0] for entry in plan}.values())
    seen = set()
    for form in forms:
        for j in range(form.vp):
            got = chunk_sums(pricer, form, j)
            want = _reference(pricer, form, j)
            for name, value in want.items():
                _same(getattr(got, name), value)
                if not isinstance(value, dict):
                    seen.add((name, bool(value)))
                else:
                    seen.update((name, bool(v)) for v in value.values())
    if _name == "offload+swap":  # the columns a swapped place would exchange are not all 0 here
        assert {("offload", True), ("host", True), ("act", True)} <= seen


@pytest.mark.parametrize("case", PRICERS[:1] + PRICERS[2:3], ids=["deepseek", "offload+swap"])
def test_stacked_chunk_sums_equal_each_column_summed_alone(case):
    """Stacked forms (the balancer's table rows): counts are arrays over the elements, a missing key's 0."""
    _name, pricer = case
    plan = stage_plan(pricer.layout, pricer.r.dims.tie)
    forms = [entry[0] for entry in plan]
    stacked = stack_forms(forms)
    for j in range(stacked.vp):
        got = chunk_sums(pricer, stacked, j)
        for name, value in _reference(pricer, stacked, j).items():
            _same(getattr(got, name), value)


def test_linear_sums_each_column_in_the_pairs_order():
    """Order matters in floating point: 1 + 1e16 − 1e16 is 0, −1e16 + 1e16 + 1 is 1."""
    values = [(1.0, 2.0), (1e16, 0.5), (-1e16, 0.25)]
    pairs = ((0, 1), (1, 1), (2, 1))
    got = _linear(pairs, values, 2)
    assert got == [_lin(pairs, [v[0] for v in values]), _lin(pairs, [v[1] for v in values])] == [0.0, 2.75]
    assert _linear((), values, 2) == [0.0, 0.0]
    arrays = ((0, np.array([1, 0])), (2, np.array([3, 1])))
    stacked = _linear(arrays, values, 2)
    assert all(np.array_equal(a, _lin(arrays, [v[i] for v in values])) for i, a in enumerate(stacked))

