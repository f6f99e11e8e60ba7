"""The search keeps the plan on screen in its ranking (issue 12 item 4): the plan as opened is always a row,
candidates keep the plan's per-stage layout where the dimensions allow, the counts agree, and a cancelled search
says how far it got."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator import estimate
from estimator.cli import main
from estimator.formats import parse
from estimator.search import SearchSpace, parse_dims, search
from estimator.search.report import ranked_cells, render_search

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"
DSV3_MF = EXAMPLES / "mindformers_deepseek_v3_671b.yaml"
DSV3_PLAN = EXAMPLES / "deepseek_v3_671b.plan.yaml"


def space_of(parsed, dims: list[str], top_k: int = 50) -> SearchSpace:
    st = parsed.strategy
    return SearchSpace(st.world_size, st.global_batch_size, parse_dims(dims), top_k=top_k)


@pytest.mark.parametrize("path", [DSV3_MF, DSV3_PLAN])
def test_the_plan_is_a_row_and_no_row_ranked_first_is_slower_than_it(path: Path) -> None:
    """DeepSeek-V3 (offsets + per-stage recompute lists): the #1 row used to be slower than the plan as opened,
    because every candidate with a recompute mode dropped the file's offsets and lists."""
    parsed = parse([path])
    result = search(parsed, space_of(parsed, ["tp=auto", "pp=auto", "rec=auto"]))
    current = result.current
    assert current is not None and current.fits
    own = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert current.row.step_time_s == pytest.approx(own.step_time_s)
    assert current.row.peak_bytes == pytest.approx(own.peak_bytes)
    # the plan is one of the candidates (its own recompute lists are a value of rec=auto), so it is ranked …
    assert current.ranked_index is not None
    assert result.ranked[current.ranked_index].step_time_s == pytest.approx(own.step_time_s, rel=1e-9)
    # … and nothing ranked above it is slower
    assert result.ranked[0].step_time_s <= current.row.step_time_s
    assert current.rank == current.ranked_index + 1
    faster = sum(1 for r in result.ranked if r.step_time_s < current.row.step_time_s)
    assert current.rank == faster + 1


def test_candidates_keep_the_plan_layout_at_its_pipeline_degree() -> None:
    parsed = parse([DSV3_PLAN])
    result = search(parsed, space_of(parsed, ["tp=auto", "rec=auto"]))
    at_plan_pp = [r for r in result.ranked if r.strategy.pp == parsed.strategy.pp]
    assert at_plan_pp and all(r.strategy.offset == parsed.strategy.offset for r in at_plan_pp)
    modes = {r.strategy.recompute.default_mode for r in at_plan_pp if r.strategy.recompute.full_counts is None}
    assert "full" in modes
    assert any(r.strategy.recompute == parsed.strategy.recompute for r in at_plan_pp)  # the plan's own lists


def test_the_plan_outside_the_space_is_still_a_row_with_its_rank() -> None:
    parsed = parse([DSV3_MF])
    st = parsed.strategy
    result = search(parsed, space_of(parsed, [f"tp={st.tp * 2}", "pp=auto"], top_k=3))
    current = result.current
    assert current is not None and current.ranked_index is None
    faster = sum(1 for r in result.ranked if r.step_time_s < current.row.step_time_s)
    assert current.rank is not None and current.rank >= faster + 1
    cells = ranked_cells(result)
    assert sum(1 for row in cells if row[0].endswith("*")) == 1
    assert len(cells) == len(result.ranked) + 1
    assert cells[-1][0] == f"{current.rank}*" or cells[current.rank - 1][0] == f"{current.rank}*"
    # the row reads like the candidates': the expert TP and shard size it runs with, as resolved
    assert current.row.strategy is parsed.strategy and current.row.etp == 4 and current.row.shard_size == 16


def test_a_plan_that_does_not_fit_is_a_row_too() -> None:
    parsed = parse([DSV3_MF], overrides={"strategy.recompute": "none"})
    result = search(parsed, space_of(parsed, ["tp=auto", "pp=auto", "rec=auto"]))
    assert result.current is not None and not result.current.fits and result.current.rank is None
    assert "the plan as opened does not fit" in render_search(parsed, space_of(parsed, []), result)


def test_cancelled_search_says_how_far_it_got() -> None:
    parsed = parse([DSV3_MF])
    calls = [0]

    def cancel_after_first_group() -> bool:
        calls[0] += 1
        return calls[0] > 2

    result = search(parsed, space_of(parsed, ["tp=auto", "pp=auto", "rec=auto", "mbs=auto"]),
                    cancel=cancel_after_first_group)
    assert result.cancelled and 0 < result.priced < result.survivors
    assert result.progress_text == f"cancelled after {result.priced:,} of {result.survivors:,} priced"
    assert result.to_dict()["priced"] == result.priced


def test_applying_a_row_writes_only_what_changes(tmp_path: Path) -> None:
    """A row used to state the defaults it ran with (shard size, expert TP, schedule): a MindSpeed launch script
    cannot state a shard size, so exporting the fastest row was refused."""
    from estimator.session import PlanSession

    script = EXAMPLES / "mindspeed_qwen3_32b_pretrain.sh"
    session = PlanSession()
    session.open([script])
    st = session.parsed.strategy
    result = search(session.parsed, space_of(session.parsed, ["tp=auto", "pp=auto"], top_k=5))
    for row in result.ranked:
        changes = session.changes_to(row.strategy, pin=("dp", "micro_batches"))
        assert not {"strategy.shard_size", "strategy.etp", "strategy.schedule"} & set(changes)
        assert row.shard_size is not None  # … while the row still shows the size it runs with
    session.apply(session.changes_to(result.ranked[0].strategy, pin=("dp", "micro_batches")))
    assert session.prepare_export().files  # exportable
    assert st.sharding.os is None


def test_cli_marks_the_plan_and_agrees_on_the_counts(capsys) -> None:
    main(["search", str(DSV3_MF), "--dims", "tp=auto", "pp=auto", "rec=auto", "--top", "5"])
    out = capsys.readouterr().out
    header = out.split("fastest strategies that fit:")[1].splitlines()[0]
    fitting = int(out.split("fitting ")[1].split()[0].replace(",", ""))
    assert f"5 of {fitting:,} shown" in header
    assert "* the plan as opened: rank" in out


def test_accumulation_steps_are_kept_so_the_global_batch_is_too() -> None:
    """MindFormers with pipeline stages: micro_batch_num per flush × gradient_accumulation_steps flushes. The
    search set m = G/(d·b) and kept n_acc, doubling the global batch of every candidate (and so never met the plan
    itself)."""
    parsed = parse([EXAMPLES / "mindformers_qwen3_32b.yaml"])
    assert parsed.strategy.n_acc == 2
    result = search(parsed, space_of(parsed, ["tp=auto", "pp=auto", "rec=auto"]))
    assert {row.strategy.global_batch_size for row in result.ranked} == {parsed.strategy.global_batch_size}
    assert result.current is not None and result.current.ranked_index is not None


def test_a_plan_with_sequence_parallel_at_tp_1_is_a_candidate_of_its_own_space() -> None:
    """A Megatron/MindSpeed plan at TP 1 that states --sequence-parallel (Megatron turns it off there): with sp
    not searched, the TP 1 candidates run with SP off instead of all being refused as duplicates (R-SP-T1),
    which left the plan out of a tp=auto search of its own space."""
    parsed = parse([DSV3_PLAN], overrides={"strategy.tp": 1, "strategy.sequence_parallel": True})
    assert parsed.strategy.tp == 1 and parsed.strategy.sequence_parallel
    result = search(parsed, space_of(parsed, ["tp=auto"]))
    assert "R-SP-T1" not in result.refusals
    # priced (DeepSeek-V3 at TP 1 does not fit: over the budget, with SP off), not refused unpriced
    assert any(" t=1 " in text and "sp=0" in text for text, _excess in result.over_budget), result.over_budget
    assert all(not r.strategy.sequence_parallel for r in result.ranked if r.strategy.tp == 1)
    listed = search(parsed, space_of(parsed, ["tp=auto", "sp=0,1"]))
    assert listed.refusals.get("R-SP-T1")  # listed: sp=1 at t=1 is the duplicate of sp=0 and refused
