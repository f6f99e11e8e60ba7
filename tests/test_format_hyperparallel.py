"""HyperParallel YAML (Hyper V2 and auto_models schemas): the real files, fixtures, and export round trips
(docs/model.md#frameworks, docs/model.md#frameworks)."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
import yaml

from estimator.errors import ConfigError
from estimator.estimate import estimate
from estimator.export import export
from estimator.formats import parse, read_file
from estimator.formats.hyperparallel import detect, schema
from estimator.parsed import apply_changes
from estimator.units import GiB

FIXTURES = Path(__file__).parent / "fixtures" / "hyperparallel"
HF = Path(__file__).parent / "fixtures" / "hf"
EXAMPLE = Path(__file__).resolve().parents[1] / "resources" / "examples" / "hyperparallel_qwen3_fsdp.yaml"


def _real(shared_dir: Path, name: str) -> Path:
    return shared_dir / "real-configs" / "hyperparallel" / name


def _estimate(parsed):
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert len(result.stages) == parsed.strategy.pp and result.peak_bytes > 0
    return result


# ------------------------------------------------------------------------------------- real files
def test_v2_mixtral_fixture(shared_dir):
    parsed = parse([_real(shared_dir, "hp_v2_sapp_testcase_mixtral_8x7b.yaml")])
    st, model = parsed.strategy, parsed.model
    assert st.world_size == 16  # d·t·p as SOURCES.md states
    assert (st.dp, st.tp, st.pp, st.ep, st.micro_batch_size, st.micro_batches) == (8, 1, 2, 8, 1, 16)
    assert (st.global_batch_size, st.seq_length, st.recompute.default_mode) == (128, 4096, "full")
    assert (st.sharding.mode, st.param_bytes, st.compute_bytes, st.softmax_bytes) == ("fsdp", 2, 2, 2)
    assert st.recompute_slice_activation is True and st.offset is None
    assert (model.num_experts, model.experts_per_token, model.moe_ffn_hidden_size) == (8, 2, 14336)
    assert model.capacity_factor == 1.1
    assert parsed.options.max_device_memory == 58 * GiB
    assert parsed.provenance["strategy.micro_batches"].key == "train.micro_batch_num"
    result = _estimate(parsed)
    assert result.parameters_total == 46_702_792_704  # V7 Mixtral-8x7B


def test_v2_deepseek_honours_config_overrides(shared_dir):
    parsed = parse([_real(shared_dir, "hp_v2_nd_hyper_deepseek_v3.yaml")])
    st, model = parsed.strategy, parsed.model
    assert st.world_size == 1024
    assert (st.dp, st.tp, st.pp, st.ep, st.micro_batches, st.seq_length) == (16, 4, 16, 8, 32, 4096)
    assert st.sequence_parallel and st.recompute.default_mode == "full" and st.recompute_slice_activation
    assert st.offset == (1,) * 15 + (-1,) and st.mtp_in_offset
    assert (st.sharding.mode, st.sharding.os) == ("hsdp", 4)  # optimizer_weight_shard_size 4 over dp 16
    assert (model.vocab_size, model.mtp_layers, model.capacity_factor, model.head_dim) == (159744, 1, 1.5, 128)
    assert (model.kv_lora_rank, model.q_lora_rank, model.first_k_dense, model.num_shared_experts) == (512, 1536, 3, 1)
    assert (st.param_bytes, st.compute_bytes, st.softmax_bytes, st.reduce_bytes) == (4, 2, 4, 4)
    _estimate(parsed)


def test_v2_qwen3_72b_per_stage_full_recompute(shared_dir):
    parsed = parse([_real(shared_dir, "hp_v2_nd_hyper_qwen3_72b.yaml")])
    st = parsed.strategy
    assert (st.dp, st.tp, st.pp, st.micro_batches, st.global_batch_size) == (32, 4, 8, 144, 4608)
    assert st.recompute.full_counts == (8, 6, 6, 6, 4, 4, 2, 2)
    assert (st.sharding.mode, st.sharding.os) == ("hsdp", 8)
    assert parsed.model.qk_norm and parsed.model.ffn_hidden_size == 29696
    assert parsed.options.max_device_memory == 54 * GiB
    _estimate(parsed)


@pytest.mark.parametrize("name", ["hp_v2_qwen3_5_0_8b_base_train.yaml",  # Qwen3.5-0.8B-Base: not catalogued
                                  "hp_am_qwen3_8_27b_fsdp8_train.yaml", "hp_am_dryrun_pp2_fsdp2.yaml"])
def test_model_in_code_or_on_a_hub_needs_a_model_file(shared_dir, name):
    with pytest.raises(ConfigError, match=r"--model config\.json .*--model ORG/NAME for a model in the local") as exc:
        parse([_real(shared_dir, name)])
    assert exc.value.path == str(_real(shared_dir, name))
    reading = read_file(str(_real(shared_dir, name)))
    assert reading.role == "strategy"
    assert any(w.code == "W-MODEL-SOURCE" for w in reading.warnings)


def test_a_model_named_by_hub_id_or_local_copy_comes_from_the_catalogue(shared_dir, tmp_path):
    """pretrained_model_name_or_path (auto_models) and weights_path (v2) name the model: resolved offline like
    --model, under the file's config_overrides (which the framework applies over the model's config)."""
    v2 = parse([_real(shared_dir, "hp_v2_qwen3_5_35b_a3b_base_train.yaml")])  # weights_path …/Qwen3.5-35B-A3B-Base
    assert (v2.model.hidden_size, v2.model.num_experts, v2.model.num_layers) == (2048, 256, 1)  # overrides: 1 layer
    assert v2.provenance["model.num_layers"].key == "model.config_overrides.num_hidden_layers"
    assert any(a.field == "model" and "Qwen/Qwen3.5-35B-A3B" in a.source for a in v2.assumptions)
    hub = tmp_path / "hub.yaml"
    hub.write_text((FIXTURES / "auto_hub_model.yaml").read_text().replace("someorg/SomeModel-7B", "Qwen/Qwen3-8B"))
    parsed = parse([str(hub)])
    assert (parsed.model.hidden_size, parsed.model.num_layers, parsed.model.qk_norm) == (4096, 36, True)
    assert not [w for w in parsed.warnings if w.code == "W-MODEL-SOURCE"]
    _estimate(parsed)
    unknown = read_file(str(FIXTURES / "auto_hub_model.yaml"))  # someorg/SomeModel-7B: said, the fix named
    assert [w.code for w in unknown.warnings if w.code.startswith("W-MODEL")] == ["W-MODEL-SOURCE"]


def test_model_source_warning_names_the_model_file_given_rather_than_asking_for_it():
    """W-MODEL-SOURCE asks for --model only while no model file states what the strategy file leaves out."""
    strategy = FIXTURES / "auto_hub_model.yaml"  # someorg/SomeModel-7B: not in the catalogue
    config = Path(__file__).parent / "fixtures" / "hf" / "llama_small.json"
    alone = [w for w in read_file(str(strategy)).warnings if w.code == "W-MODEL-SOURCE"]
    assert len(alone) == 1 and "--model" in str(alone[0]) and "--model" in alone[0].localized("zh_CN")
    parsed = parse([strategy], model=config)
    said = [w for w in parsed.warnings if w.code == "W-MODEL-SOURCE"]
    assert len(said) == 1 and "--model" not in str(said[0]) and "--model" not in said[0].localized("zh_CN")
    assert f"taken from {config}" in str(said[0]) and "someorg/SomeModel-7B" in str(said[0])
    assert str(config) in said[0].localized("zh_CN")


@pytest.mark.parametrize("name", ["hp_am_qwen3_moe_tp2_ep2_cp4_hybrid.yaml", "hp_am_deepseekv3_codegen_ep8.yaml"])
def test_world_not_stated_needs_devices(shared_dir, name):
    with pytest.raises(ConfigError, match="pass --devices N") as exc:
        parse([_real(shared_dir, name)])
    assert exc.value.line is not None and exc.value.key == "fsdp_config.dp_shard_size"


def test_qwen3_5_truncated_files_with_a_model_file(shared_dir):
    parsed = parse([_real(shared_dir, "hp_v2_qwen3_5_0_8b_base_train.yaml")], model=HF / "qwen3_5_hybrid_vl.json")
    st = parsed.strategy
    assert (st.world_size, st.dp, st.micro_batches, st.seq_length, st.recompute.default_mode) == (4, 4, 1, 64,
                                                                                                   "none")
    assert (st.sharding.mode, st.compute_bytes, st.reduce_bytes) == ("fsdp", 2, 4)
    # config_overrides truncate the HF model (num_hidden_layers: 4) and win over the model file
    assert any(w.code == "W-MODEL-OVERRIDE" and "model.num_layers" in w.text for w in parsed.warnings)
    assert parsed.model.num_layers == 4
    assert parsed.model.has_linear_attention
    _estimate(parsed)


def test_auto_models_hybrid_cp(shared_dir):
    parsed = parse([_real(shared_dir, "hp_am_qwen3_moe_tp2_ep2_cp4_hybrid.yaml")], devices=8,
                   model=HF / "qwen3_moe_tiny.json")
    st = parsed.strategy
    assert (st.dp, st.tp, st.cp, st.ep, st.cp_algo, st.ulysses_degree) == (1, 2, 4, 2, "hybrid", 2)
    assert (st.sharding.mode, st.sharding.os, st.sharding.os_e) == ("hsdp", 2, 2)
    assert st.sequence_parallel and st.vocab_parallel_loss and st.sharding.reshard_after_forward
    assert (st.micro_batches, st.seq_length, st.recompute.default_mode) == (8, 16, "none")  # mode: off
    assert parsed.provenance["strategy.ulysses_degree"].key == "plan_overrides[1].inner_wrapper.ulysses_degree"
    _estimate(parsed)


def test_auto_models_fsdp8_and_dry_run(shared_dir):
    parsed = parse([_real(shared_dir, "hp_am_qwen3_8_27b_fsdp8_train.yaml")], model=HF / "llama_small.json")
    st = parsed.strategy
    assert (st.world_size, st.sharding.mode, st.seq_length, st.recompute.default_mode) == (8, "fsdp", 4096, "full")
    assert (st.param_bytes, st.vocab_parallel_loss, st.micro_batches) == (2, False, 1)
    assert any(a.field == "strategy.dp" for a in parsed.assumptions)
    _estimate(parsed)
    dry = parse([_real(shared_dir, "hp_am_dryrun_pp2_fsdp2.yaml")], model=HF / "llama_small.json").strategy
    assert (dry.world_size, dry.dp, dry.pp, dry.micro_batches, dry.n_acc, dry.seq_length) == (4, 2, 2, 2, 1, 512)


def test_deepseek_codegen_with_the_hf_config(shared_dir):
    hf = shared_dir / "real-configs" / "hf_config" / "hf_deepseek_v3_config.json"
    parsed = parse([_real(shared_dir, "hp_am_deepseekv3_codegen_ep8.yaml")], devices=8, model=hf)
    st = parsed.strategy
    assert (st.dp, st.ep, st.sharding.mode, st.sharding.os, st.sharding.os_e) == (8, 8, "hsdp", 1, 1)
    assert (st.micro_batches, st.seq_length, st.param_bytes) == (4, 8192, 2)
    assert parsed.model.vocab_size == 129280
    _estimate(parsed)


def test_vocab_difference_between_fixture_and_hf_config_is_named(shared_dir):
    hf = shared_dir / "real-configs" / "hf_config" / "hf_deepseek_v3_config.json"
    yaml_path = _real(shared_dir, "hp_v2_nd_hyper_deepseek_v3.yaml")
    parsed = parse([yaml_path], model=hf)
    # docs/model.md#frameworks: the file value is used and a warning names the difference; config_overrides are applied
    # on top of the loaded model by HyperParallel, so the fixture's 159744 wins over the HF config's 129280
    assert parsed.model.vocab_size == 159744
    diff = [w.text for w in parsed.warnings if w.code == "W-MODEL-OVERRIDE" and "vocab_size" in w.text]
    assert len(diff) == 1 and "129280" in diff[0] and "159744" in diff[0] and str(hf) in diff[0]


# ------------------------------------------------------------------------------------------ fixtures
def test_v2_moe_cp_fixture():
    parsed = parse([FIXTURES / "v2_moe_cp.yaml"])
    st = parsed.strategy
    assert (st.world_size, st.dp, st.cp, st.cp_algo, st.ep, st.n_acc) == (32, 4, 2, "ulysses", 4, 2)
    assert st.recompute.full_counts == (2, 1) and st.recompute.sel_counts is True
    assert st.offset == (1, -1) and parsed.model.capacity_factor == 1.25
    assert parsed.model.moe_ffn_hidden_size == 1024 and parsed.options.max_device_memory == 60 * GiB
    with pytest.raises(ConfigError, match=r"differs from context\.device_num"):
        parse([FIXTURES / "v2_moe_cp.yaml"], devices=16)
    _estimate(parsed)


def test_auto_inline_model_fixture():
    parsed = parse([FIXTURES / "auto_inline_model.yaml"])
    st = parsed.strategy
    assert (st.dp, st.tp, st.cp, st.pp, st.cp_algo, st.ulysses_degree) == (2, 2, 4, 2, "hybrid", 2)
    assert (st.sharding.mode, st.sharding.os, st.micro_batches, st.n_acc) == ("hsdp", 4, 4, 2)  # 4 of dp·cp 8
    assert st.sharding.reshard_after_forward is False and st.recompute.default_mode == "none"
    assert (st.param_bytes, st.reduce_bytes, st.seq_length) == (4, 4, 8192)
    assert parsed.model.hidden_size == 1024
    _estimate(parsed)



# D-HP-UNREAD: keys the catalogue knew but the reader did not read: read, or said naming the key and the direction
def test_auto_models_etp_size_is_read(tmp_path):
    path = tmp_path / "etp.yaml"
    path.write_text((FIXTURES / "auto_inline_model.yaml").read_text(encoding="utf-8").replace(
        "  ep_size: 1\n", "  ep_size: 1\n  etp_size: 1\n"), encoding="utf-8")
    parsed = parse([path])
    assert parsed.strategy.etp == 1 and parsed.provenance["strategy.etp"].key == "accelerator.etp_size"
    assert parse([FIXTURES / "auto_inline_model.yaml"]).strategy.etp is None


@pytest.mark.parametrize("extra, key, said", [
    ("compile:\n  enabled: true\n", "compile.enabled", "either way"),
    ("fsdp_config:\n  reshard_after_backward: false\n", "fsdp_config.reshard_after_backward",
     "device memory a lower bound"),
    ("fsdp_config:\n  forward_prefetch_depth: 2\n", "fsdp_config.forward_prefetch_depth",
     "device memory a lower bound"),
    ("activation_swap:\n  layers: all\n", "activation_swap", "device memory an upper bound"),
])
def test_auto_models_unpriced_keys_are_said(tmp_path, extra, key, said):
    data = yaml.safe_load((FIXTURES / "auto_inline_model.yaml").read_text(encoding="utf-8"))
    for name, value in yaml.safe_load(extra).items():
        data[name] = {**data.get(name, {}), **value} if isinstance(value, dict) else value
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    texts = [w.text for w in parse([path]).warnings if w.code == "W-NOT-PRICED" and w.text.startswith(f"{key} is")]
    assert len(texts) == 1 and said in texts[0]
    assert not [w for w in parse([FIXTURES / "auto_inline_model.yaml"]).warnings if w.code == "W-NOT-PRICED"]

def test_positions_only_warns_and_hub_model_needs_a_file():
    parsed = parse([FIXTURES / "v2_positions_only.yaml"])
    assert parsed.strategy.seq_length == 2048
    assert [w.code for w in parsed.warnings] == ["W-SEQ-FROM-POSITIONS"]
    with pytest.raises(ConfigError, match="--model"):
        parse([FIXTURES / "auto_hub_model.yaml"])
    reading = read_file(str(FIXTURES / "auto_hub_model.yaml"))
    assert "someorg/SomeModel-7B" in reading.warnings[0].text
    parsed = parse([FIXTURES / "auto_hub_model.yaml"], model=HF / "llama_small.json")
    assert (parsed.strategy.micro_batch_size, parsed.strategy.micro_batches) == (2, 1)


def test_malformed_yaml_points_at_line_and_column():
    with pytest.raises(ConfigError) as exc:
        parse([FIXTURES / "broken.yaml"])
    assert (exc.value.line, exc.value.column) == (4, 6)
    assert str(exc.value).startswith(f"{FIXTURES / 'broken.yaml'}:4:6:")


@pytest.mark.parametrize(("patch", "match"), [
    (("    tp_degree: 2", "    tp_degree: two"), "expected an integer"),
    (("    activation_checkpoint: selective", "    activation_checkpoint: partial"), "activation checkpoint"),
    (("  max_seq_len: 16384", "  max_seq_len: -3"), "must be an integer"),
    (("    context_parallel_algo: ulysses_cp", "    context_parallel_algo: spiral"), "context_parallel_algo"),
])
def test_bad_values_carry_their_line(tmp_path, patch, match):
    original = (FIXTURES / "v2_moe_cp.yaml").read_text()
    line = original.splitlines().index(patch[0]) + 1
    path = tmp_path / "job.yaml"
    path.write_text(original.replace(*patch))
    with pytest.raises(ConfigError, match=match) as exc:
        parse([path])
    assert exc.value.line == line and str(exc.value).startswith(f"{path}:{line}:")


def test_detection_by_content():
    assert schema({"train": {"accelerator": {}}}) == "v2"
    assert schema({"accelerator": {"tp_size": 2}}) == "auto_models"
    assert schema({"training": {}, "model": {"pretrained_model_name_or_path": "x"}}) == "auto_models"
    assert not detect({"parallel_config": {"data_parallel": 2}, "model": {"model_config": {}}}, "mf.yaml")
    assert not detect({"strategy": {"tp": 2}}, "plan.yaml") and not detect([1, 2], "x.yaml")


# ------------------------------------------------------------------------------------------- export
def _round_trip(parsed, changes, tmp_path, devices=None, model=None):
    edited = apply_changes(parsed, changes)
    files = export(edited)
    (src_path, text), = files.items()
    original = next(s.text for s in parsed.sources if s.path == src_path)
    old_lines, new_lines = original.splitlines(), text.splitlines()
    removed = [line for line in difflib.unified_diff(old_lines, new_lines, lineterm="", n=0)
               if line.startswith("-") and not line.startswith("---")]
    for line in removed:  # only value tokens of strategy keys change; comments stay on their lines
        key = line[1:].strip().split(":")[0].lstrip("{ ")
        assert key in STRATEGY_KEYS or line[1:].lstrip().startswith(("accelerator:", "training:", "dataset:")), line
    out = tmp_path / Path(src_path).name
    out.write_text(text)
    again = parse([out], devices=devices, model=model)
    assert again.strategy == edited.strategy
    return original, text


STRATEGY_KEYS = {"dp_shard", "dp_replicate", "tp_degree", "pipeline_parallel_degree", "context_parallel_degree",
                 "expert_parallel_degree", "use_seq_parallel", "micro_batch_num", "micro_batch_size",
                 "global_batch_size", "max_seq_len", "activation_checkpoint", "full_rec", "sel_rec", "offset",
                 "optimizer_weight_shard_size", "tp_size", "pp_size", "cp_size", "pp_micro_batch_num",
                 "sequence_parallel", "dp_shard_size", "mode", "seq_length", "reshard_after_forward",
                 "ulysses_degree", "recompute_slice_activation", "enable_parallel_optimizer", "loss_parallel"}


@pytest.mark.parametrize(("name", "changes"), [
    ("hp_v2_nd_hyper_deepseek_v3.yaml", {"strategy.tp": 2}),
    ("hp_v2_nd_hyper_deepseek_v3.yaml", {"strategy.recompute": "none", "strategy.seq_length": 8192}),
    ("hp_v2_nd_hyper_qwen3_72b.yaml", {"strategy.recompute": [8, 8, 8, 6, 4, 4, 2, 0]}),
    ("hp_v2_nd_hyper_qwen3_72b.yaml", {"strategy.pp": 4, "strategy.recompute": [10, 8, 6, 4]}),
    ("hp_v2_sapp_testcase_mixtral_8x7b.yaml", {"strategy.tp": 2, "strategy.sequence_parallel": True}),
    ("hp_v2_sapp_testcase_mixtral_8x7b.yaml", {"strategy.micro_batch_size": 2}),
])
def test_export_round_trip_v2(shared_dir, tmp_path, name, changes):
    source = tmp_path / "src" / name
    source.parent.mkdir()
    shutil.copy(_real(shared_dir, name), source)
    parsed = parse([source])
    assert export(parsed) == {}
    original, text = _round_trip(parsed, changes, tmp_path)
    assert text.count("\n") == original.count("\n")  # values replaced in place
    assert original.splitlines()[0] == text.splitlines()[0]


def test_export_round_trip_auto_models(shared_dir, tmp_path):
    source = tmp_path / "src" / "dry.yaml"
    source.parent.mkdir()
    shutil.copy(_real(shared_dir, "hp_am_dryrun_pp2_fsdp2.yaml"), source)
    model = HF / "llama_small.json"
    parsed = parse([source], model=model)
    assert export(parsed) == {}
    _, text = _round_trip(parsed, {"strategy.tp": 2, "strategy.sequence_parallel": True}, tmp_path, model=model)
    assert "accelerator: {tp_size: 2, cp_size: 1, ep_size: 1, pp_size: 2, pp_micro_batch_num: 4, pp_schedule: " \
           "1f1b, pp_vpp: 1, sequence_parallel: true}" in text
    source = tmp_path / "src" / "moe.yaml"
    shutil.copy(_real(shared_dir, "hp_am_qwen3_moe_tp2_ep2_cp4_hybrid.yaml"), source)
    model = HF / "qwen3_moe_tiny.json"
    parsed = parse([source], devices=8, model=model)
    _, text = _round_trip(parsed, {"strategy.ulysses_degree": 4, "strategy.seq_length": 32}, tmp_path, devices=8,
                          model=model)
    assert "      ulysses_degree: 4" in text and "    seq_length: 32" in text


def test_export_keeps_comments(tmp_path):
    source = tmp_path / "example.yaml"
    shutil.copy(EXAMPLE, source)
    parsed = parse([source])
    _, text = _round_trip(parsed, {"strategy.recompute": "selective"}, tmp_path)
    assert "    activation_checkpoint: selective   # recompute every decoder layer in backward" in text


@pytest.mark.parametrize(("changes", "what"), [
    ({"strategy.sharding": "zero1"}, "sharding 'zero1'"),
    ({"strategy.recompute_ranges": [{"first": 0, "count": 2, "option": "full"}]}, "recompute ranges"),
    ({"strategy.param_bytes": 2}, "param_bytes"),
])
def test_export_refusals(tmp_path, changes, what):
    source = tmp_path / "example.yaml"
    shutil.copy(EXAMPLE, source)
    parsed = parse([source])
    with pytest.raises(ConfigError, match="R-FW") as exc:
        export(apply_changes(parsed, changes))
    assert what in str(exc.value)


def test_export_refuses_cp_algorithm_without_wrapper(shared_dir, tmp_path):
    source = tmp_path / "moe.yaml"
    shutil.copy(_real(shared_dir, "hp_am_qwen3_moe_tp2_ep2_cp4_hybrid.yaml"), source)
    parsed = parse([source], devices=8, model=HF / "qwen3_moe_tiny.json")
    with pytest.raises(ConfigError, match=r"R-FW.*inner_wrapper"):
        export(apply_changes(parsed, {"strategy.cp_algo": "ring", "strategy.ulysses_degree": None}))


def test_example_estimates_fits_and_exports(tmp_path):
    source = tmp_path / "example.yaml"
    shutil.copy(EXAMPLE, source)
    parsed = parse([source])
    st = parsed.strategy
    assert (st.dp, st.sharding.mode, st.seq_length, st.micro_batches, st.recompute.default_mode) == (8, "fsdp", 8192,
                                                                                                    8, "full")
    assert parsed.model.num_layers == 36 and parsed.model.qk_norm
    result = _estimate(parsed)
    assert result.fits
    _round_trip(parsed, {"strategy.micro_batch_size": 2}, tmp_path)


# --------------------------------------------------------------------------------------------- fuzz
try:
    from fuzzing import fuzz_settings
    from hypothesis import HealthCheck, given
    from hypothesis import strategies as hs
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    hs = None

FUZZ_FILES = [*sorted(FIXTURES.glob("*.yaml")), EXAMPLE]


def _paths(tree, prefix=()):
    if isinstance(tree, dict):
        items = tree.items()
    elif isinstance(tree, list):
        items = enumerate(tree)
    else:
        return
    for key, value in items:
        yield (*prefix, key)
        yield from _paths(value, (*prefix, key))


if hs is not None:
    SCALARS = hs.one_of(hs.integers(-(2 ** 63), 2 ** 63 - 1), hs.none(),
                        hs.sampled_from([0, -1, 1, 2, 3, 7, 8, 64, 2 ** 31, 2 ** 40, 10 ** 15]),
                        hs.floats(allow_nan=False, allow_infinity=False), hs.text(max_size=12),
                        hs.sampled_from(["off", "full", "none", "selective", "1f1b", "zero_bubble_v", "ulysses_cp",
                                         "hybrid_cp", "float32", "bfloat16", "58GB", "sdpa_hf_ulysses"]),
                        hs.booleans())
    VALUES = hs.recursive(SCALARS, lambda inner: hs.one_of(hs.lists(inner, max_size=3),
                                                           hs.dictionaries(hs.text(min_size=1, max_size=8), inner,
                                                                           max_size=3)), max_leaves=6)

    @fuzz_settings(150, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
    @given(data=hs.data())
    def test_fuzzed_yamls_fail_only_with_sapp_errors(tmp_path, data):
        """Wrong types, deletions, huge/negative numbers and broken nesting: only SappError escapes."""
        import yaml

        from estimator.errors import SappError

        source = data.draw(hs.sampled_from(FUZZ_FILES))
        text = source.read_text()
        try:
            tree = yaml.safe_load(text)
        except yaml.YAMLError:
            tree = None
        if isinstance(tree, dict):
            for _ in range(data.draw(hs.integers(1, 4))):
                paths = list(_paths(tree))
                if not paths:
                    break
                path = data.draw(hs.sampled_from(paths))
                parent = tree
                for key in path[:-1]:
                    parent = parent[key]
                if data.draw(hs.booleans()):
                    del parent[path[-1]]
                else:
                    parent[path[-1]] = data.draw(VALUES)
            text = yaml.safe_dump(tree, sort_keys=False)
        if data.draw(hs.integers(0, 9)) == 0:  # truncated or garbled text
            cut = data.draw(hs.integers(0, len(text)))
            text = text[:cut] + data.draw(hs.sampled_from(["", "]", ":", "{", "\t", "&a *b", "\x00"]))
        path = tmp_path / "fuzz.yaml"
        path.write_text(text, encoding="utf-8")
        devices = data.draw(hs.sampled_from([None, 1, 8, 32, 1024, 0, -4, 2 ** 40]))
        model = data.draw(hs.sampled_from([None, HF / "llama_small.json", HF / "qwen3_moe_tiny.json"]))
        try:
            parsed = parse([path], devices=devices, model=model)
            estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
        except SappError:
            pass
