"""torchtitan's Python config registry read statically (issue 13): recipes named FILE.py:FUNCTION, variants
editing a base recipe, the 2026 token-counted batch, converters (float8, LoRA), what cannot be read named, the
module never imported or executed, export refused with the values to type in; fuzzing."""

from __future__ import annotations

from pathlib import Path

import pytest
from format_helpers import check_mutated, mutate
from fuzzing import fuzz_settings
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from estimator.errors import ConfigError
from estimator.estimate import estimate
from estimator.export import export
from estimator.formats import parse
from estimator.formats.py_static import Call, Module, Unresolved
from estimator.parsed import apply_changes

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "tests" / "fixtures" / "torchtitan_py" / "models" / "llama3" / "config_registry.py"


def recipe(name: str, devices: int = 64, **kwargs):
    return parse([f"{REGISTRY}:{name}"], devices=devices, **kwargs)


def warning_texts(parsed, code: str) -> list[str]:
    return [w.text for w in parsed.warnings if w.code == code]


def test_a_recipe_is_the_toml_job_it_stands_for():
    parsed = recipe("llama3_8b")
    s, m = parsed.strategy, parsed.model
    assert parsed.options.framework == "torchtitan" and m.name == "llama3-8B" and m.num_layers == 32
    # num_tokens_per_microbatch_per_dp_rank 2·8192 over max_context_length 8192: 2 sequences per rank
    assert (s.dp, s.micro_batch_size, s.seq_length, s.sharding.mode) == (64, 2, 8192, "fsdp")
    assert s.recompute.default_mode == "selective" and s.loss_fusion == "chunked"
    assert parsed.provenance["strategy.micro_batch_size"].key == \
        "training.num_tokens_per_microbatch_per_dp_rank / training.max_context_length"


def test_variants_edit_the_base_recipe_through_attributes_and_parameters():
    parsed = recipe("llama3_70b_pp")
    s = parsed.strategy
    assert (s.tp, s.pp, s.vpp, s.dp, s.micro_batch_size, s.micro_batches) == (8, 4, 2, 2, 2, 4)
    assert s.recompute.default_mode == "full" and s.compile == ("model", "loss") and s.async_tp is True
    estimate(parsed.model, s, parsed.hardware, parsed.options)


def test_converters_in_the_model_registry_call():
    s = recipe("llama3_8b_float8_lora").strategy
    assert (s.fp8, s.fp8_param) == ("tensorwise", True)
    assert (s.peft, s.lora_rank, s.lora_targets) == ("lora", 16, ("q", "k", "v", "o"))


def test_a_converter_keyword_points_at_its_own_line(tmp_path):
    """LoRAConverter.Config written over several lines: rank and target_modules name the lines they are on."""
    text = REGISTRY.read_text().replace(
        'LoRAConverter.Config(rank=16, alpha=32.0, target_modules=["wq", "wkv", "wo"])',
        'LoRAConverter.Config(\n                alpha=32.0,\n                rank=16,\n'
        '                target_modules=["wq", "wkv", "wo"],\n            )')
    path = tmp_path / "config_registry.py"
    path.write_text(text)
    lines = text.splitlines()
    call = next(i for i, line in enumerate(lines, 1) if "LoRAConverter.Config(" in line)
    assert lines[call + 1].strip() == "rank=16,"  # the fixture as rewritten: call, alpha, rank, target_modules
    parsed = parse([f"{path}:llama3_8b_float8_lora"], devices=64)
    assert parsed.provenance["strategy.lora_rank"].key == f"LoRAConverter rank (line {call + 2})"
    assert parsed.provenance["strategy.lora_targets"].key == f"LoRAConverter target_modules (line {call + 3})"


def test_what_the_static_reading_cannot_know_is_named_with_its_line(tmp_path):
    parsed = recipe("llama3_8b_unresolved")
    unresolved = warning_texts(parsed, "W-PY-UNRESOLVED")
    assert any("tensor_parallel_degree: line" in w and "TP is defined outside the recipe" in w for w in unresolved)
    assert any("context_parallel_degree" in w and "inside an if block" in w for w in unresolved)
    assert (parsed.strategy.tp, parsed.strategy.cp) == (1, 1)
    batch = tmp_path / "registry.py"
    batch.write_text(REGISTRY.read_text().replace("max_context_length=8192", "max_context_length=SEQ"))
    with pytest.raises(ConfigError, match=r"training\.max_context_length: line \d+: SEQ is defined outside"):
        parse([f"{batch}:llama3_8b"], devices=8)


def test_the_recipe_must_be_named_when_the_file_has_several():
    with pytest.raises(ConfigError, match=r"config_registry.py:FUNCTION \(this file has 4: llama3_8b, "):
        parse([str(REGISTRY)], devices=8)
    with pytest.raises(ConfigError, match="no function llama3_9b"):
        recipe("llama3_9b")


def test_the_module_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    evil = tmp_path / "registry.py"
    evil.write_text(REGISTRY.read_text() + f"\nopen({str(marker)!r}, 'w').write('x')\n"
                    "def llama3_side_effect() -> Trainer.Config:\n"
                    f"    open({str(marker)!r}, 'w').write('x')\n    return llama3_8b()\n")
    reading = parse([f"{evil}:llama3_side_effect"], devices=8)
    assert reading.strategy.micro_batch_size == 2 and not marker.exists()
    # outside models/llama3/ the model comes from the recipe's name, said as an assumption
    assert reading.model.num_layers == 32 and any("recipe's name llama3_side_effect()" in a.source
                                                   for a in reading.assumptions if a.field == "model.name")


def test_export_is_refused_with_the_values_to_type_in(tmp_path):
    """The refusal names the file, the function and the Trainer.Config keyword arguments to type in: the very
    keys the TOML writer writes for the job config the function stands for."""
    import tomlkit

    from estimator.formats.support import Collector
    from estimator.formats.torchtitan_py import _job_of

    parsed = recipe("llama3_8b")
    with pytest.raises(ConfigError, match=r"code: .* in config_registry\.py:llama3_8b set the Trainer\.Config "
                                          r"keyword arguments parallelism\.tensor_parallel_degree=2\b.* by hand"
                                          r".*the plan: dp = 32, tp = 2") as refused:
        export(apply_changes(parsed, {"strategy.tp": 2}))
    # the same job as a TOML file, exported with the same edit: the keys it changes are the ones named
    job, _function, _module = _job_of(REGISTRY.read_text(), f"{REGISTRY}:llama3_8b", Collector(str(REGISTRY)))
    toml = tmp_path / "job.toml"
    toml.write_text(tomlkit.dumps(job))
    as_toml = parse([toml], devices=64)
    written = tomlkit.parse(export(apply_changes(as_toml, {"strategy.tp": 2}))[str(toml)])
    changed = {f"{section}.{key}": value for section, table in written.items() if isinstance(table, dict)
               for key, value in table.items() if job.get(section, {}).get(key) != value}
    named = str(refused.value).split("keyword arguments ")[1].split(" by hand")[0]
    assert changed and sorted(named.split(", ")) == sorted(f"{k}={v!r}" for k, v in changed.items())


def test_static_evaluation_rules():
    module = Module("def f(a, b=3):\n    x = a * b\n    return Cfg(x=x, y=[b, -b], z=g(), w=a.attr)\n"
                    "def g2():\n    c = f(2)\n    c.v = 7\n    for i in range(3):\n        c.w = i\n    return c\n",
                    "m.py")
    value = module.evaluate("g2")
    assert isinstance(value, Call) and value.name == "Cfg"
    assert (value.kwargs["x"], value.kwargs["y"], value.kwargs["v"]) == (6, [3, -3], 7)
    assert isinstance(value.kwargs["z"], Call) and isinstance(value.kwargs["w"], Unresolved)
    assert "for block" in str(value.kwargs["w"])
    with pytest.raises(ConfigError, match="not valid Python"):
        Module("def f(:\n", "bad.py")


_SOURCE = REGISTRY.read_text(encoding="utf-8")


@st.composite
def _mutations(draw):
    text = mutate(draw, _SOURCE, ["(", ")", "[", "]", ",", "=", "\n    ", "-1", "1e400", "'x'", "None", "*", "/0",
                                  "config.", "f()"])
    return text, draw(st.sampled_from(["llama3_8b", "llama3_70b_pp", "llama3_8b_float8_lora", "llama3_8b_unresolved"]))


@fuzz_settings(100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_mutations())
def test_fuzzed_inputs_raise_only_sapp_errors(tmp_path, case):
    text, name = case
    folder = tmp_path / "models" / "llama3"  # the flavor table's model from the folder, as in torchtitan
    folder.mkdir(parents=True, exist_ok=True)
    check_mutated(folder / "config_registry.py", text, name, devices=64)
