"""Step time, tokens/s and MFU at the precision their efficiency band allows (issue 11 "honest precision"): one
rule (estimator.honest) for the CLI, the reports, the search tables and the app; the JSON keeps the full values
and the band's ends."""

from __future__ import annotations

import csv
import itertools
import json
import re
from pathlib import Path

import pytest

from estimator.cli import main
from estimator.formats import parse
from estimator.honest import digits_for, honest, relative_change, sig, throughput, versus_best
from estimator.search import SearchSpace, parse_dims, search
from estimator.search.report import render_search

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"
QWEN3 = EXAMPLES / "mindformers_qwen3_32b.yaml"
THREE_DECIMALS = re.compile(r"\b\d+\.\d{3}\b")


def test_digits_follow_the_band_width() -> None:
    assert digits_for(1.0, 0.9, 1.1) == 2      # ±10 %: two significant digits
    assert digits_for(1.0, 0.99, 1.01) == 3    # 2 % wide
    assert digits_for(1.0, 0.999, 1.001) == 4  # 0.2 % wide
    assert digits_for(1.0) == 3                # no band: the model is not better than a few per cent
    assert sig(112.378, 2) == "110" and sig(0.026123, 2) == "0.026" and sig(12_345, 3) == "12,300"


def test_a_figure_shows_its_band_at_its_own_precision() -> None:
    step = honest(112.378, (136.1, 90.67))  # either order
    assert step.band == (90.67, 136.1)
    assert (step.text, step.band_text, step.with_band(" s")) == ("110", "91–140", "110 s (91–140)")
    assert step.places == 0 and step.delta(-1.6) == "-2"
    small = honest(1.234, (1.0, 1.5))
    assert small.text == "1.2" and small.places == 1 and small.delta(0.06) == "+0.1"
    assert honest(1.234, None).with_band(" s") == "1.23 s"  # three significant digits without a band


def test_throughput_and_mfu_bands_follow_the_step_band() -> None:
    """Tokens/s and MFU are the step's work over the step time: the slow end of the step is the low end of both,
    and all three share the step's precision."""
    shown = throughput(2.0, 4000.0, 0.40, (1.6, 2.5))
    assert shown.tokens.band == pytest.approx((4000 * 2.0 / 2.5, 4000 * 2.0 / 1.6))  # 3,200 – 5,000
    assert shown.mfu.band == pytest.approx((0.40 * 2.0 / 2.5, 0.40 * 2.0 / 1.6))    # 32 % – 50 %
    assert shown.step.digits == shown.tokens.digits == shown.mfu.digits == 2
    assert shown.line == "step time 2.0 s (1.6–2.5) · tokens/s/device 4,000 (3,200–5,000) · MFU 40 % (32–50)"
    assert shown.to_dict() == pytest.approx({
        "step_time_s_low": 1.6, "step_time_s_high": 2.5, "tokens_per_s_per_device_low": 3200.0,
        "tokens_per_s_per_device_high": 5000.0, "mfu_low": 0.32, "mfu_high": 0.5})
    assert throughput(2.0, 4000.0, 0.40, None).to_dict() == {}


def test_relative_change_keeps_a_decimal() -> None:
    assert relative_change(100.0, 98.8) == "−1.2 %"
    assert relative_change(100.0, 103.0) == "+3.0 %"
    assert relative_change(100.0, 100.001) == "0.0 %"


def test_versus_best_has_the_decimals_that_tell_rows_apart() -> None:
    assert versus_best(15.0, 15.0) == "0 %"
    assert versus_best(15.06, 15.0) == "+0.40 %"    # both step times show as "15"
    assert versus_best(15.0045, 15.0) == "+0.030 %"
    assert versus_best(15.00009, 15.0) == "+<0.001 %"
    assert versus_best(15.6, 15.0) == "+4.0 %"
    assert versus_best(34.3, 15.0) == "+128.7 %"
    assert versus_best(14.0, 15.0) == "−6.7 %"      # the plan as opened may be priced faster than no row
    assert versus_best(15.0, 0.0) == ""


def test_rows_whose_step_times_round_alike_differ_in_the_vs_best_column(searched) -> None:
    """The search table's "vs best" column (issue 11): rows showing the same step time at the band's precision
    are told apart, in the CLI table and its Pareto table alike, and the CSV keeps the full values instead."""
    parsed, space, result = searched
    from estimator.search.report import COLUMNS, TIMES, csv_text, ranked_cells

    best = result.ranked[0].step_time_s
    cells = ranked_cells(result)
    column = COLUMNS.index("vs best")
    assert column == COLUMNS.index("step s (low–high)") + 1
    assert cells[0][column] == "0 %"
    for row, line in zip(result.ranked, cells, strict=False):
        assert line[column] == versus_best(row.step_time_s, best)
    same = [(a, b) for a, b in itertools.pairwise(result.ranked)
            if a.throughput.step.text == b.throughput.step.text and a.step_time_s != b.step_time_s]
    for a, b in same:
        assert versus_best(a.step_time_s, best) != versus_best(b.step_time_s, best)
    text = render_search(parsed, space, result)
    assert "vs best" in text.split("Pareto front")[1]
    header = next(csv.reader(csv_text(result).splitlines()))
    assert "vs best" not in header and header[-7:] == ["step s", "step s low", "step s high", "tok/s/dev", "MFU",
                                                       "peak bytes", "headroom bytes"]
    assert header[1:-7] == list(COLUMNS[1:-TIMES])


@pytest.fixture(scope="module")
def searched():
    parsed = parse([QWEN3])
    st = parsed.strategy
    space = SearchSpace(st.world_size, st.global_batch_size, parse_dims(["tp=auto", "pp=auto", "rec=auto"]),
                        top_k=5)
    return parsed, space, search(parsed, space)


def test_every_search_row_carries_its_band(searched) -> None:
    """Ranked and front-only rows alike: the band is the row's own re-estimate at the device's fast and slow
    ends, and it brackets the row's step time."""
    _parsed, _space, result = searched
    assert result.ranked and result.pareto
    for row in [*result.ranked, *result.pareto]:
        assert row.step_band is not None
        fast, slow = row.step_band
        assert fast < row.step_time_s < slow
        data = row.to_dict()
        assert data["step_time_s"] == row.step_time_s  # the full value
        assert data["step_time_s_low"] == fast and data["step_time_s_high"] == slow
        assert data["mfu_low"] < data["mfu"] < data["mfu_high"]


def test_the_search_table_shows_two_significant_digits_and_the_band(searched, tmp_path) -> None:
    parsed, space, result = searched
    text = render_search(parsed, space, result)
    first = result.ranked[0]
    shown = first.throughput
    assert shown.step.digits == 2  # the preset's band spans more than 10 %
    assert shown.step.with_band() in text and "step s (low–high)" in text
    table = text[text.index("fastest strategies"):]
    assert not THREE_DECIMALS.search(table.split("\n", 1)[1].replace(" GiB", ""))  # no 3-decimal times
    # the CSV keeps the full values and the band
    from estimator.search.report import csv_text

    rows = list(csv.DictReader(csv_text(result).splitlines()))
    assert float(rows[0]["step s"]) == first.step_time_s
    assert float(rows[0]["step s low"]) == first.step_band[0] and float(rows[0]["step s high"]) == first.step_band[1]


def test_cli_estimate_text_and_json(capsys) -> None:
    assert main(["estimate", str(QWEN3), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["step_time_s_low"] < data["step_time_s"] < data["step_time_s_high"]
    assert main(["estimate", str(QWEN3)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("step time"))
    expected = honest(data["step_time_s"], (data["step_time_s_low"], data["step_time_s_high"])).with_band(" s")
    assert line.startswith(f"step time {expected} · tokens/s/device ")
    assert not THREE_DECIMALS.search(line)
    assert data["mfu_peak"] == "bf16" and " of the bf16 peak" in line  # P-MFU-PEAK: the MFU names its peak


def test_an_fp8_plan_keeps_its_mfu_against_the_bf16_peak(capsys) -> None:
    """P-MFU-PEAK: an FP8 plan's MFU divides by the dense BF16 peak (its FP8 matmuls run above it), and says so."""
    tt = EXAMPLES / "torchtitan_llama3_70b.toml"
    args = ["estimate", str(tt), "--devices", "256", "--json"]
    assert main(args) == 0
    bf16 = json.loads(capsys.readouterr().out)
    assert main([*args, "--set", "strategy.fp8=tensorwise"]) == 0
    fp8 = json.loads(capsys.readouterr().out)
    assert fp8["mfu_peak"] == bf16["mfu_peak"] == "bf16"
    assert fp8["step_time_s"] < bf16["step_time_s"]
    # same model FLOPs over the same bf16 peak: MFU scales exactly as 1/step time
    assert fp8["mfu"] * fp8["step_time_s"] == pytest.approx(bf16["mfu"] * bf16["step_time_s"], rel=1e-12)
    hw = parse([tt], devices=256).hardware
    assert hw.mfu_peak(2) == ("bf16", hw.peak("bf16")) and hw.peak("fp8") > 1.9 * hw.peak("bf16")


def test_reports_show_the_parts_at_the_step_precision(tmp_path, capsys) -> None:
    out = tmp_path / "r.md"
    assert main(["report", str(QWEN3), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    section = text[text.index("## Step time"):]
    section = section[:section.index("\n## ", 5)] if "\n## " in section[5:] else section
    assert "| part | seconds | share |" in section
    for line in section.splitlines()[4:]:
        if line.startswith("|"):
            seconds = line.split("|")[2].strip()
            assert len(seconds.replace(",", "").replace(".", "").lstrip("0")) <= 2, line  # two significant digits
