"""What deep fuzzing found (issue 16), kept as plain regression tests: each input must end in a SappError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.formats import parse

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "tests" / "fixtures" / "hf"
STRATEGY = ROOT / "tests" / "fixtures" / "hyperparallel" / "auto_hub_model.yaml"


@pytest.mark.parametrize(("fixture", "section", "key", "value"), [
    ("qwen2_vl_style.json", "vision_config", "mlp_ratio", "Infinity"),  # json reads it as inf: int(inf) overflowed
    ("qwen2_vl_style.json", "vision_config", "mlp_ratio", "NaN"),
    ("qwen2_vl_style.json", "vision_config", "mlp_ratio", "1e400"),
    ("llama_small.json", None, "num_hidden_layers", "999999999999999999999992"),
    ("llama_small.json", None, "hidden_size", "1e400"),
    ("llama_small.json", None, "vocab_size", "-Infinity"),
    ("qwen_moe_sparse.json", None, "decoder_sparse_step", "1e308"),
    ("qwen_moe_sparse.json", None, "num_experts", "1e30"),
])
def test_extreme_numbers_in_a_config_json_are_refused(tmp_path: Path, fixture: str, section: str | None, key: str,
                                                     value: str) -> None:
    tree = json.loads((HF / fixture).read_text())
    (tree[section] if section else tree)[key] = "__VALUE__"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tree).replace('"__VALUE__"', value))
    with pytest.raises(SappError) as info:
        parsed = parse([STRATEGY], model=path)
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert "config.json" in str(info.value)


@pytest.mark.parametrize("value", ["!!float softmaxcomputetype", "!!int 0x", "!!float 1:2:x", "!!timestamp 0000-01-01"])
def test_tagged_values_the_yaml_loader_cannot_build_are_errors_at_their_line(tmp_path: Path, value: str) -> None:
    text = (ROOT / "resources" / "examples" / "mindformers_llama3_70b.yaml").read_text()
    path = tmp_path / "config.yaml"
    path.write_text(text + f"\nsoftmax_compute_type: {value}\n")
    with pytest.raises(SappError) as info:
        parse([path])
    assert f"config.yaml:{text.count(chr(10)) + 2}:" in str(info.value) and "put it in quotes" in str(info.value)
