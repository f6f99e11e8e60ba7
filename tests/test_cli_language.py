"""The CLI speaks one language (docs/decisions.md P-MESSAGES): English table headers and English warnings together,
whatever the locale — it never half-translates a run because LANG says Chinese (the app translates its own table
headers, e.g. the Search tab's "vs best", and renders the same warnings in its interface language)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from estimator.cli import main

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "resources" / "examples" / "deepseek_v3_671b.plan.yaml"
MEGATRON = ROOT / "tests" / "fixtures" / "megatron" / "train_gpt3_defaults.sh"
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


@pytest.fixture
def chinese_locale(monkeypatch):
    for name in ("LANG", "LC_ALL", "LC_MESSAGES", "LANGUAGE"):
        monkeypatch.setenv(name, "zh_CN.UTF-8")


def test_search_table_headers_and_warnings_stay_english_in_a_chinese_locale(capsys, chinese_locale):
    assert main(["search", str(PLAN), "--dims", "tp=4,8", "--top", "3"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("rank "))
    assert "vs best" in header and "step s (low–high)" in header
    assert not CJK.search(out)


def test_estimate_warnings_stay_english_in_a_chinese_locale(capsys, chinese_locale):
    assert main(["estimate", str(MEGATRON)]) == 0
    out = capsys.readouterr().out
    assert "boolean mask" in out and not CJK.search(out)  # the [W-MASK] assumption, in English
