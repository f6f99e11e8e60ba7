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


def test_the_fuzzing_budget_is_a_profile() -> None:
    """Every fuzz test takes its example count from tests/fuzzing.py (CI: the test's own count; deep: 230 times),
    so scripts/fuzz.sh can raise it: no test hard-codes max_examples."""
    import re
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from fuzzing import PROFILE, PROFILES, fuzz_settings

    assert fuzz_settings(7).max_examples == 7 * PROFILES[PROFILE]
    tests = [p for p in (ROOT / "tests").rglob("*.py") if p.name != "fuzzing.py"]
    hard_coded = [str(p.relative_to(ROOT)) for p in tests if re.search(r"max_examples\s*=(?!=)", p.read_text())]
    assert not hard_coded, hard_coded
    users = [p for p in tests if "fuzz_settings(" in p.read_text() and p.name.startswith("test_format_")]
    assert len(users) >= 8, [p.name for p in users]


def test_what_the_verification_fuzzing_found(tmp_path: Path) -> None:
    """tests/hostile/test_fuzz_more.py under the deep profile found these (each was an escaped exception)."""
    from estimator.calibrate.logs import LogError, read_log
    from estimator.kinds import _load_file
    from estimator.kinds.expr import parse_formula
    from estimator.profiles import add_profile_dir, remove_profile_dir

    stats = tmp_path / "stats.json"  # a 400-digit integer: math.isfinite raised OverflowError
    stats.write_text('{"allocated_bytes.all.peak": ' + "9" * 400 + "}")
    with pytest.raises(LogError, match=r"stats\.json\[0\], key 'allocated_bytes\.all\.peak': .* is not a byte count"):
        read_log(stats)
    with pytest.raises(SappError, match=r"user\.yaml: unknown key\(s\) None"):  # a null key: sorted() of None
        _load_file("overrides: []\n? \n", "user.yaml", "user")
    with pytest.raises(SappError, match="the number inf is not a finite number"):  # 641e308 reads as inf
        parse_formula("641e308", "user.yaml")
    folder = tmp_path / "profiles"  # a user profile with a number as a key: sorted() of mixed types
    folder.mkdir()
    (folder / "p.yaml").write_text("name: mine\n5: 1\n")
    try:
        with pytest.raises(SappError, match=r"unknown profile field\(s\) 5"):
            add_profile_dir(folder)
    finally:
        remove_profile_dir(folder)
