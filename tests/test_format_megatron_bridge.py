"""Megatron-Bridge / NeMo 2 configs (issue 13): override YAMLs and serialised run configs read as the Megatron
arguments they are, recipes read statically (base recipe settings from the bundled table, the model from
AutoBridge, what cannot be read named), YAML export in place, Python export refused; fuzzing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from format_helpers import check_mutated, mutate, read_estimate_export, roundtrip
from fuzzing import fuzz_settings
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from estimator.errors import ConfigError
from estimator.estimate import estimate
from estimator.export import export
from estimator.formats import parse
from estimator.parsed import apply_changes

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "megatron_bridge"
OVERRIDE, RUN, RECIPES = FIX / "llama3_8b_override.yaml", FIX / "gpt_run_config.yaml", FIX / "llama_recipes.py"
LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def warning_texts(parsed, code: str) -> list[str]:
    return [w.text for w in parsed.warnings if w.code == code]


def test_an_override_file_is_read_as_megatron_arguments_with_the_model_from_model(tmp_path):
    misspelt = tmp_path / "override.yaml"
    misspelt.write_text(OVERRIDE.read_text() + "modle:\n  num_layers: 2\n")
    parsed = parse([str(misspelt)], devices=16, model=LLAMA)
    s = parsed.strategy
    assert parsed.options.framework == "megatron" and parsed.model.hidden_size == 4096
    assert (s.tp, s.pp, s.dp, s.sequence_parallel, s.seq_length) == (2, 2, 4, True, 8192)
    assert (s.micro_batch_size, s.micro_batches, s.sharding.mode) == (1, 16, "zero1")
    assert s.recompute.default_mode == "full" and (s.param_bytes, s.compute_bytes) == (2, 2)
    assert parsed.provenance["strategy.tp"].key == "model.tensor_model_parallel_size"
    assert parsed.provenance["strategy.sharding"].key == "ddp.use_distributed_optimizer"
    assert any("did you mean 'model'" in w for w in warning_texts(parsed, "W-KEY-UNKNOWN"))
    assert warning_texts(parsed, "W-MODEL")  # the recipe it overrides is not named


def test_a_serialised_run_config_states_the_model_itself():
    parsed = parse([str(RUN)], devices=16)
    m, s = parsed.model, parsed.strategy
    assert (m.num_layers, m.hidden_size, m.num_kv_heads, m.ffn_hidden_size, m.gated_ffn) == (24, 2048, 4, 5632, True)
    assert (m.norm, m.tie_embeddings, m.qkv_bias) == ("rms", False, False)
    assert (s.tp, s.cp, s.dp, s.fp8, s.fp8_param) == (2, 2, 4, "tensorwise", True)
    assert not warning_texts(parsed, "W-GQA")  # num_query_groups is GQA in a provider, no switch needed


def test_a_recipe_reads_its_base_its_model_and_its_assignments():
    parsed = parse([f"{RECIPES}:llama3_8b_pretrain_config"], devices=16)
    s = parsed.strategy
    assert parsed.model.num_layers == 32 and parsed.model.vocab_size == 128256  # AutoBridge's Hub id
    assert (s.tp, s.pp, s.dp, s.seq_length, s.micro_batch_size, s.micro_batches) == (2, 2, 4, 8192, 1, 32)
    # _pretrain_common(): distributed optimizer and bf16_mixed, said where they come from
    assert s.sharding.mode == "zero1" and "_pretrain_common() in Megatron-Bridge recipes/common.py" in \
        parsed.provenance["strategy.sharding"].key
    assert s.optimizer_state_bytes == 2  # precision-aware optimizer with bf16 moments (torch.bfloat16)
    assert any(a.field == "recipe base" for a in parsed.assumptions)


def test_a_layout_built_from_lists_and_what_code_changes_is_named():
    parsed = parse([f"{RECIPES}:llama3_8b_layout_helper"], devices=16)
    est = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert [st.layer_counts for st in est.stages] == [(15,), (17,)]
    unresolved = warning_texts(parsed, "W-PY-UNRESOLVED")
    assert any("line 32: apply_layout(cfg.model, LAYOUT)" in w for w in unresolved)
    assert any("llama_recipes.py, line 34: model.context_parallel_size — assigned inside an if block" in w and
               "--set strategy.cp=" in w for w in unresolved)


def _recipe_with(tmp_path, body: str):
    """The fixture recipes plus ``override()``: the 8B pretrain recipe, then ``body`` (one statement a line)."""
    recipe = tmp_path / "recipes.py"
    lines = "".join(f"    {line}\n" for line in body.splitlines())
    recipe.write_text(RECIPES.read_text() + "\n\ndef override() -> ConfigContainer:\n"
                      "    cfg = llama3_8b_pretrain_config()\n" + lines + "    return cfg\n")
    first = len(RECIPES.read_text().splitlines()) + 5  # the line of body's first statement
    return parse([f"{recipe}:override"], devices=16), first


def test_a_model_field_assigned_after_the_hub_call_wins_over_the_hub(tmp_path):
    parsed, line = _recipe_with(tmp_path, "cfg.model.num_layers = 40\ncfg.model.ffn_hidden_size = 16384")
    m = parsed.model
    assert (m.num_layers, m.ffn_hidden_size) == (40, 16384)
    assert (m.hidden_size, m.vocab_size, m.num_kv_heads) == (4096, 128256, 8)  # the rest stays the Hub's
    prov = parsed.provenance["model.num_layers"]
    assert prov.path.endswith("recipes.py:override") and prov.key == f"model.num_layers (line {line})"
    assert parsed.provenance["model.ffn_hidden_size"].key == f"model.ffn_hidden_size (line {line + 1})"
    assert parsed.provenance["model.hidden_size"].path == LLAMA  # not re-stated: still the Hub's
    est = estimate(m, parsed.strategy, parsed.hardware, parsed.options)
    assert sum(st.layer_counts[0] for st in est.stages) == 40
    # an assignment before the Hub call is replaced by the Hub's provider, as Python would
    before = tmp_path / "before.py"
    before.write_text(RECIPES.read_text().replace(
        '    cfg = _pretrain_common()\n    cfg.model = AutoBridge',
        '    cfg = _pretrain_common()\n    cfg.model.num_layers = 40\n    cfg.model = AutoBridge', 1))
    assert parse([f"{before}:llama3_8b_pretrain_config"], devices=16).model.num_layers == 32


def test_the_override_wins_when_the_bridge_is_a_variable(tmp_path):
    recipe = tmp_path / "two_step.py"
    recipe.write_text(RECIPES.read_text() + "\n\ndef two_step() -> ConfigContainer:\n"
                      "    cfg = _pretrain_common()\n"
                      f"    bridge = AutoBridge.from_hf_pretrained({LLAMA!r}, trust_remote_code=True)\n"
                      "    cfg.model = bridge.to_megatron_provider(load_weights=False)\n"
                      "    cfg.model.num_layers = 40\n    return cfg\n")
    parsed = parse([f"{recipe}:two_step"], devices=16)
    assert (parsed.model.num_layers, parsed.model.hidden_size) == (40, 4096)
    assert not warning_texts(parsed, "W-MODEL")


@pytest.mark.parametrize(("statement", "said"), [
    ("cfg.model.seq_length = {'train': 16384}", "model.seq_length = {'train': 16384} is a mapping"),
    ("cfg.model.num_layers = layers_for('8b')", "model.num_layers = layers_for() is code"),
    ("cfg.model.num_layers = LAYERS", "model.num_layers — LAYERS is defined outside the recipe"),
    ("cfg.model.num_layers = torch.int32", "model.num_layers = torch.int32 is a name from an imported module"),
])
def test_a_value_the_static_reading_cannot_resolve_is_warned_with_file_line_key_and_fix(tmp_path, statement, said):
    parsed, line = _recipe_with(tmp_path, statement)
    texts = warning_texts(parsed, "W-PY-UNRESOLVED")
    field = "strategy.seq_length" if "seq_length" in statement else "model.num_layers"
    assert any(w.startswith(f"{tmp_path / 'recipes.py'}, line {line}: {said}") and f"--set {field}=" in w
               for w in texts), texts
    assert (parsed.model.num_layers, parsed.strategy.seq_length) != (None, None)  # priced at the Hub's / base's
    zh = [w.localized("zh_CN") for w in parsed.warnings if w.code == "W-PY-UNRESOLVED"]
    assert any(f"第 {line} 行" in w and f"--set {field}=" in w for w in zh)


def test_an_unreadable_value_for_a_key_the_estimator_does_not_read_is_not_warned(tmp_path):
    parsed, _ = _recipe_with(tmp_path, "cfg.model.init_method = make_init(0.02)")
    assert not any("init_method" in w for w in warning_texts(parsed, "W-PY-UNRESOLVED"))


def test_recipe_parameters_and_the_lora_base():
    s = parse([f"{RECIPES}:llama3_8b_peft_config"], devices=16).strategy
    assert (s.peft, s.lora_rank, s.lora_targets) == ("lora", 16, ("qkv", "o"))  # rank: the parameter's default
    assert (s.micro_batch_size, s.global_batch_size, s.seq_length) == (1, 32, 4096)


def test_yaml_export_patches_keys_in_their_sections(tmp_path):
    target, run = tmp_path / "override.yaml", tmp_path / "run.yaml"
    shutil.copy(OVERRIDE, target)
    shutil.copy(RUN, run)
    _, changed = roundtrip([str(target)], {"strategy.tp": 4, "strategy.pp": 1, "strategy.micro_batches": 16,
                                               "strategy.sharding": "none"}, devices=16, model=LLAMA)
    assert sorted(changed) == sorted(["-  tensor_model_parallel_size: 2", "+  tensor_model_parallel_size: 4",
                                      "-  pipeline_model_parallel_size: 2", "+  pipeline_model_parallel_size: 1",
                                      "-  use_distributed_optimizer: true", "+  use_distributed_optimizer: false"])
    _files, changed = roundtrip([str(run)], {"strategy.cp": 1, "strategy.micro_batches": 32}, devices=16)
    assert sorted(changed) == sorted(["-  context_parallel_size: 2", "+  context_parallel_size: 1",
                                      "-  global_batch_size: 128", "+  global_batch_size: 512"])


def test_python_export_is_refused_with_the_values():
    parsed = parse([f"{RECIPES}:llama3_8b_pretrain_config"], devices=16)
    with pytest.raises(ConfigError, match=r"recipe is code: .*tp = 4"):
        export(apply_changes(parsed, {"strategy.tp": 4, "strategy.micro_batches": 64}))


def test_devices_are_required():
    with pytest.raises(ConfigError, match="--devices"):
        parse([str(RUN)])


@pytest.mark.parametrize("section", ["optimizer", "ddp", "train"])
def test_a_section_written_as_a_scalar_is_refused_by_name(tmp_path, section):
    """Only ``mixed_precision`` may name a recipe by a string; any other section given as a scalar (a lost colon,
    ``optimizer:\n  lr 0.0003``) is refused naming the section, not a traceback (found by the fuzzer)."""
    text = RUN.read_text(encoding="utf-8")
    assert f"\n{section}:\n" in text
    path = tmp_path / "run.yaml"  # the section's own lines move under a key of their own
    path.write_text(text.replace(f"\n{section}:\n", f"\n{section}: lr 0.0003\nmoved:\n", 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=f"{section} must be a mapping"):
        parse([str(path)], devices=16)


_SOURCES = [OVERRIDE, RUN, RECIPES]


@st.composite
def _mutations(draw):
    path = draw(st.sampled_from(_SOURCES))
    return path.suffix, mutate(draw, path.read_text(encoding="utf-8"),
                               ["(", ")", "[", "]", ":", "\n  ", "-1", "1e400", "'x'", "null", " * 99999", "cfg.model.",
                                "true"])


@fuzz_settings(100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_mutations())
def test_fuzzed_inputs_raise_only_sapp_errors(tmp_path, case):
    suffix, text = case
    if suffix == ".yaml":
        read_estimate_export(tmp_path, suffix, text, devices=16, model=LLAMA)
        return
    for name in ("llama3_8b_pretrain_config", "llama3_8b_layout_helper", "llama3_8b_peft_config"):
        check_mutated(tmp_path / "recipes.py", text, name, devices=16)


def test_a_mapping_where_a_value_belongs_is_said_with_file_key_and_fix(tmp_path):
    """A YAML mapping for a key the estimator reads is said (the key is priced at what it was); one for a key it does
    not read is listed with the keys it does not read."""
    text = OVERRIDE.read_text().replace("  seq_length: 8192\n", "  seq_length: {train: 16384}\n", 1)
    assert text != OVERRIDE.read_text()
    override = tmp_path / "override.yaml"
    override.write_text(text + "comm_overlap:\n  tp_comm_overlap_cfg: {qkv_fprop: {method: ring}}\n")
    parsed = parse([str(override)], devices=16, model=LLAMA)
    said = warning_texts(parsed, "W-VALUE-MAPPING")
    assert said == [f"{override}: model.seq_length = {{'train': 16384}} is a mapping where a single value belongs, "
                    "so it is priced at the value it had before (the Hub model's, the base recipe's or Megatron's "
                    "default); give its value with --set strategy.seq_length=…"]
    assert any("comm_overlap.tp_comm_overlap_cfg" in w for w in warning_texts(parsed, "W-FLAG-UNPRICED"))
    zh = [w.localized("zh_CN") for w in parsed.warnings if w.code == "W-VALUE-MAPPING"]
    assert "是一个映射" in zh[0] and "--set strategy.seq_length=" in zh[0]


def test_an_override_file_s_model_keys_are_applied_over_model(tmp_path):
    override = tmp_path / "override.yaml"
    override.write_text(OVERRIDE.read_text().replace("model:\n", "model:\n  num_layers: 16\n  ffn_hidden_size: 8192\n",
                                                     1))
    parsed = parse([str(override)], devices=16, model=LLAMA)
    m = parsed.model
    assert (m.num_layers, m.ffn_hidden_size, m.hidden_size, m.num_kv_heads) == (16, 8192, 4096, 8)
    assert parsed.provenance["model.num_layers"].key == "model.num_layers"
    overridden = warning_texts(parsed, "W-MODEL-OVERRIDE")
    assert any(w.startswith(f"model.num_layers: {LLAMA} says 32, {override} overrides it with 16") for w in overridden)


PROVIDER_RECIPE = '''from megatron.bridge.models.llama import Llama3ModelProvider8B
from megatron.bridge.training.config import ConfigContainer, TrainingConfig


def model_config(tensor_parallelism: int = 2) -> Llama3ModelProvider8B:
    return Llama3ModelProvider8B(tensor_model_parallel_size=tensor_parallelism, sequence_parallel=True,
                                 num_layers=16, seq_length=4096)


def pretrain_config() -> ConfigContainer:
    model_cfg = model_config()
    return ConfigContainer(model=model_cfg, train=TrainingConfig(micro_batch_size=1, global_batch_size=64))


def changed_config() -> ConfigContainer:
    cfg = pretrain_config()
    cfg.model.ffn_hidden_size = 8192
    cfg.model.kv_lora_rank = 256
    return cfg
'''


def test_a_provider_recipe_s_model_fields_are_applied_over_model(tmp_path):
    """A provider-class recipe (Megatron-Bridge v0.2 style) states part of the model: what it states wins over
    ``--model``, said as an override; the rest is the model's."""
    recipe = tmp_path / "provider.py"
    recipe.write_text(PROVIDER_RECIPE)
    parsed = parse([f"{recipe}:pretrain_config"], devices=8, model=LLAMA)
    assert (parsed.model.num_layers, parsed.model.hidden_size, parsed.model.ffn_hidden_size) == (16, 4096, 14336)
    assert any("says 32" in w and "overrides it with 16" in w for w in warning_texts(parsed, "W-MODEL-OVERRIDE"))
    assert any(w.endswith("the model fields the recipe states are applied over it")
               for w in warning_texts(parsed, "W-MODEL"))
    est = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert sum(sum(st.layer_counts) for st in est.stages) == 16
    # each keyword of the provider call names its own line (the call starts on line 6, num_layers is on line 7)
    assert parsed.provenance["strategy.tp"].key == "model.tensor_model_parallel_size (line 6)"
    assert parsed.provenance["model.num_layers"].key == "model.num_layers (line 7)"
    assert parsed.provenance["strategy.seq_length"].key == "model.seq_length (line 7)"
    changed = parse([f"{recipe}:changed_config"], devices=8, model="deepseek-ai/DeepSeek-V3")
    # an MLA field names an MLA config: it is applied (over DeepSeek-V3's 512) rather than dropped
    assert (changed.model.ffn_hidden_size, changed.model.kv_lora_rank, changed.model.q_lora_rank) == (8192, 256, 1536)


def test_mla_fields_assigned_over_a_hub_mla_model_reach_the_model(tmp_path):
    parsed, line = _recipe_with(tmp_path, "cfg.model = AutoBridge.from_hf_pretrained('deepseek-ai/DeepSeek-V3')"
                                ".to_megatron_provider(load_weights=False)\n"
                                "cfg.model.num_layers = 8\ncfg.model.q_lora_rank = 768\ncfg.model.kv_lora_rank = 256\n"
                                "cfg.model.qk_head_dim = 96\ncfg.model.qk_pos_emb_head_dim = 32\n"
                                "cfg.model.v_head_dim = 64\ncfg.model.expert_model_parallel_size = 8\n"
                                "cfg.model.sequence_parallel = True")
    m = parsed.model
    assert (m.q_lora_rank, m.kv_lora_rank, m.head_dim, m.qk_rope_head_dim, m.v_head_dim) == (768, 256, 96, 32, 64)
    assert parsed.provenance["model.kv_lora_rank"].key == f"model.kv_lora_rank (line {line + 3})"
    assert not warning_texts(parsed, "W-MLA")
    lite, _ = _recipe_with(tmp_path, "cfg.model = AutoBridge.from_hf_pretrained('deepseek-ai/DeepSeek-V3')"
                           ".to_megatron_provider(load_weights=False)\ncfg.model.q_lora_rank = None")
    assert lite.model.q_lora_rank == 0 and lite.model.kv_lora_rank == 512  # no query compression, as stated


def test_what_an_override_file_leaves_to_its_recipe_is_an_assumption(tmp_path):
    """An override file does not name its recipe: the priced settings it leaves out are Megatron's defaults, said
    (the recipes' _pretrain_common() turns the distributed optimizer on, which the file may rely on)."""
    parsed = parse([str(OVERRIDE)], devices=16, model=LLAMA)
    said = [a for a in parsed.assumptions if a.field == "recipe settings"]
    assert [a.value for a in said] == ["model.context_parallel_size, model.expert_model_parallel_size"]
    bare = tmp_path / "bare.yaml"
    bare.write_text("model:\n  seq_length: 4096\ntrain:\n  global_batch_size: 32\n  micro_batch_size: 1\n")
    parsed = parse([str(bare)], devices=8, model=LLAMA)
    said = next(a for a in parsed.assumptions if a.field == "recipe settings")
    assert "ddp.use_distributed_optimizer" in said.value and "model.tensor_model_parallel_size" in said.value
    assert parsed.strategy.sharding.mode == "none" and "_pretrain_common()" in str(said.source)
    assert not [a for a in parse([str(RUN)], devices=16).assumptions if a.field == "recipe settings"]  # whole config


def test_a_misspelt_key_is_named_with_the_key_it_stands_for(tmp_path):
    text = OVERRIDE.read_text().replace("  tensor_model_parallel_size: 2\n", "  tensor_model_paralel_size: 2\n", 1)
    override = tmp_path / "override.yaml"
    override.write_text(text.replace("train:\n", "train:\n  my_own_setting: 3\n", 1))
    parsed = parse([str(override)], devices=16, model=LLAMA)
    assert parsed.strategy.tp == 1  # the misspelt key is not read: Megatron's default, said
    assert warning_texts(parsed, "W-KEY-UNKNOWN") == [
        "model.tensor_model_paralel_size is not a Megatron-Bridge key; did you mean 'tensor_model_parallel_size'? "
        "(not read: what it stands for keeps its default)"]
    assert any(w.endswith("train.my_own_setting") for w in warning_texts(parsed, "W-FLAG-UNPRICED"))


def test_megatron_fsdp_without_a_strategy_is_the_ddp_configs_no_shard(tmp_path):
    # Megatron-Bridge builds DistributedDataParallelConfig directly: its default no_shard, not the parser's
    # optim_grads_params (Megatron-LM #3691)
    path = tmp_path / "fsdp.yaml"
    path.write_text(RUN.read_text(encoding="utf-8").replace(
        "  use_distributed_optimizer: true\n", "  use_distributed_optimizer: true\n  use_megatron_fsdp: true\n"),
        encoding="utf-8")
    parsed = parse([str(path)], devices=16)
    assert parsed.strategy.sharding.mode == "none"
    assert "DistributedDataParallelConfig" in " ".join(a.source for a in parsed.assumptions
                                                       if a.field == "strategy.sharding")
