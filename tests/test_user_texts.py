"""Python reprs never reach the user (issue 12): the texts the estimator hands to the CLI and the app are words and
numbers, not tuples or dataclass reprs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from estimator import estimate
from estimator.formats import parse

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"
REPR = re.compile(r"\(\d+,\)|\(\d+, \d+\)|[A-Z][a-zA-Z]+\(\w+=")


@pytest.mark.parametrize("name", ["mindformers_deepseek_v3_671b.yaml", "mindformers_qwen3_32b.yaml",
                                  "deepseek_v3_671b.plan.yaml"])
def test_peak_points_read_as_words(name: str) -> None:
    parsed = parse([EXAMPLES / name])
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    for stage in result.stages:
        assert stage.peak_instant and not REPR.search(stage.peak_instant), stage.peak_instant
        assert "in flight" in stage.peak_instant
