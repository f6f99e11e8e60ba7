"""'Does not fit' comes with the nearest plans that fit (issue 12): same devices and global batch, fewest changed
settings first, each with the edit that makes it — and that edit, applied, gives the very numbers shown."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from estimator import estimate
from estimator.cli import main
from estimator.fixes import nearest_fixes
from estimator.formats import parse
from estimator.parsed import apply_changes

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"
CASES = [(EXAMPLES / "mindformers_deepseek_v3_671b.yaml", {"strategy.recompute": "none"}),
         (EXAMPLES / "mindformers_qwen3_32b.yaml", {"strategy.seq_length": 16384})]


@pytest.mark.parametrize(("path", "overrides"), CASES)
def test_fixes_fit_keep_the_job_and_reproduce(path: Path, overrides: dict) -> None:
    parsed = parse([path], overrides=overrides)
    assert not estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options).fits
    fixes = nearest_fixes(parsed)
    assert fixes
    assert [len(f.changed) for f in fixes] == sorted(len(f.changed) for f in fixes)  # fewest changes first
    for fix in fixes:
        plan = apply_changes(parsed, fix.changes, hold="dp")
        result = estimate(plan.model, plan.strategy, plan.hardware, plan.options)
        assert result.fits and result.step_time_s == pytest.approx(fix.step_time_s)
        assert max(result.peak_bytes, result.optimizer_step_peak) == pytest.approx(fix.peak_bytes)
        assert plan.strategy.world_size == parsed.strategy.world_size
        assert plan.strategy.global_batch_size == parsed.strategy.global_batch_size


def test_a_one_setting_fix_comes_first() -> None:
    parsed = parse([CASES[0][0]], overrides=CASES[0][1])
    first = nearest_fixes(parsed)[0]
    assert first.changed == ("recompute",) and first.summary == "recompute none → full"


def test_cli_nearest_prints_set_arguments_that_work(capsys) -> None:
    path, overrides = CASES[1]
    base = [str(path), *(f"--set={k}={v}" for k, v in overrides.items())]
    assert main(["fit", *base, "--nearest"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("--set")]
    assert lines
    for line in lines:
        assert main(["estimate", *base, *shlex.split(line), "--check"]) == 0
        capsys.readouterr()
    assert main(["fit", *base, "--nearest", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fixes"] and all(f["headroom"] >= 0 for f in data["fixes"])


def test_a_fix_states_the_recompute_it_leaves_and_the_margin_that_decides() -> None:
    """A plan with per-stage selective counts is not summarised as 'recompute none → none'; under a framework
    memory pool (max_device_memory) the device peak may exceed the pool, so a fix shows its headroom, not
    'peak of budget'."""
    from dataclasses import replace

    from estimator.fixes import _recompute

    parsed = parse([EXAMPLES / "mindformers_llama3_70b.yaml"])
    st = parsed.strategy
    pp = st.pp
    selective = replace(st, recompute=replace(st.recompute, full_counts=None, sel_counts=tuple(range(pp, 0, -1)),
                                              comm_counts=None, default_mode="none"))
    assert str(_recompute(selective)) == "per stage (selective " + ",".join(str(k) for k in range(pp, 0, -1)) + ")"
    assert _recompute(replace(st, recompute=replace(st.recompute, full_counts=None, sel_counts=None,
                                                    comm_counts=None, default_mode="full"))) == "full"
    fixes = nearest_fixes(parse([CASES[0][0]], overrides=CASES[0][1]))
    for fix in fixes:
        plan = apply_changes(parse([CASES[0][0]], overrides=CASES[0][1]), fix.changes, hold="dp")
        result = estimate(plan.model, plan.strategy, plan.hardware, plan.options)
        assert fix.headroom == pytest.approx(result.headroom)


def test_equal_counts_with_another_default_mode_are_told_apart() -> None:
    """Per-stage full counts that stay while the other layers go from none to selective: the summary says the
    mode of the other layers (it said 'per stage (full 2,2) → per stage (full 2,2)')."""
    from dataclasses import replace

    from estimator.fixes import _recompute, _summary
    from estimator.strategy import RecomputePlan

    st = parse([EXAMPLES / "mindformers_llama3_70b.yaml"]).strategy
    counts = (2,) * st.pp
    old = replace(st, recompute=replace(st.recompute, full_counts=counts, sel_counts=None, comm_counts=None,
                                        ranges=(), default_mode="none"))
    new = replace(old, recompute=replace(old.recompute, default_mode="selective"))
    stated = ",".join(map(str, counts))
    assert str(_summary(old, new, ("recompute",))) == \
        f"recompute per stage (full {stated}), other layers none → per stage (full {stated}), other layers selective"
    chinese = _summary(old, new, ("recompute",)).render("zh_CN")
    assert chinese == f"重计算 按阶段（full {stated}），其余层 none → 按阶段（full {stated}），其余层 selective"
    # a default the counts leave no layer to (selective beside selective counts) is not said as the rest's mode
    sel = replace(old, recompute=replace(old.recompute, full_counts=None, sel_counts=counts, default_mode="selective"))
    assert str(_recompute(sel)) == f"per stage (selective {stated})"
    assert str(_summary(sel, replace(sel, recompute=RecomputePlan(default_mode="full")), ("recompute",))) == \
        f"recompute per stage (selective {stated}) → full"


def test_a_fix_is_summarised_in_the_apps_language() -> None:
    parsed = parse([CASES[1][0]], overrides=CASES[1][1])
    fixes = nearest_fixes(parsed)
    assert fixes
    for fix in fixes:
        chinese = fix.summary_in("zh_CN")
        assert fix.summary_in("en") == fix.summary == fix.to_dict()["summary"]  # English in the CLI and the JSON
        assert chinese != fix.summary and "recompute" not in chinese and "follow" not in chinese
        assert ("重计算" in chinese) == ("recompute" in fix.summary)
        assert ("随之变化" in chinese) == ("follow" in fix.summary)
