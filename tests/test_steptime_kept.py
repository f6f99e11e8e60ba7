"""What the step time keeps across plans by what it reads (P-SCALAR-SPEED 'Seventh session — step time'): the
knobs per run options, framework overlap, schedule and module defaults (``rowtime.kept_knobs``) equal ``knobs``
made afresh, for plans one field apart and after the module defaults change; a key missing the schedule fails
the check (the seeded fault below)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from estimator import ModelSpec, RunOptions, Strategy, find_preset, rowtime
from estimator.errors import SappError
from estimator.resolve import resolve

H100 = find_preset("H100-80G")
MODEL = ModelSpec(name="m", hidden_size=2048, num_layers=8, num_attention_heads=16, num_kv_heads=4,
                  ffn_hidden_size=5632, vocab_size=32000)
BASE = Strategy(seq_length=4096, tp=2, pp=2, dp=2, micro_batches=8)
OPTIONS = RunOptions(framework="megatron")
PLANS = [(BASE, OPTIONS), (replace(BASE, tp=4), OPTIONS), (BASE, RunOptions(framework="mindformers")),
         (BASE, RunOptions(framework="megatron", overlap_tp=0.3)),
         (BASE, RunOptions(framework="megatron", k_ew_bwd=3.0)),
         (replace(BASE, schedule="dualpipev", pp=2, micro_batches=8), OPTIONS),
         (replace(BASE, schedule="interleaved", vpp=2), OPTIONS)]


@pytest.fixture(autouse=True)
def _no_kept_knobs(monkeypatch):
    monkeypatch.setattr(rowtime, "_KNOBS", {})


def _differ() -> list[int]:
    out = []
    for i, (strategy, options) in enumerate(PLANS):
        try:
            r = resolve(MODEL, strategy, H100, options)
        except SappError:  # a refused plan has no knobs to compare
            continue
        if rowtime.kept_knobs(r) != rowtime.knobs(r):
            out.append(i)
    return out


def test_kept_knobs_equal_knobs_made_afresh(monkeypatch):
    assert _differ() == []
    assert _differ() == []  # and found again
    monkeypatch.setitem(rowtime.KNOBS, "overlap_dp", 0.5)  # a module default edited in place
    assert _differ() == []
    assert len(rowtime._KNOBS) > 1


def test_a_knobs_key_without_the_schedule_fails_the_check(monkeypatch):
    made = rowtime.knobs
    seen: dict = {}

    def without_schedule(r):
        key = (id(r.options), r.fw.o_tp)
        if key not in seen:
            seen[key] = (r.options, made(r))
        return seen[key][1]

    monkeypatch.setattr(rowtime, "kept_knobs", without_schedule)
    assert _differ() != []


def test_row_flops_made_at_once_equal_the_dataclass_s_own():
    """``flops.flops_with`` (the rows' FLOPs records with their instance dict set at once) makes what
    ``RowFlops(…)`` and ``dataclasses.replace`` make: the same fields, equal and hashing alike."""
    import dataclasses

    from estimator.flops import ZERO, RowFlops, flops_with

    given = {f.name: float(i + 1) for i, f in enumerate(dataclasses.fields(RowFlops))}
    made = RowFlops(**given)
    assert flops_with(ZERO, **given) == made and hash(flops_with(ZERO, **given)) == hash(made)
    assert flops_with(made, duplicate=0.5) == dataclasses.replace(made, duplicate=0.5)
    assert vars(flops_with(ZERO, rc=2.0)) == vars(RowFlops(rc=2.0))
