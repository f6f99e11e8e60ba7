"""Models named by Hub id: the shipped catalogue, the local Hugging Face cache and model directories, and their use
as --model, as a fine-tuning config's model and as a launch script's tokenizer (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator import catalogue
from estimator.errors import ConfigError
from estimator.estimate import estimate
from estimator.formats import parse, read_file
from estimator.formats.hf import looks_like_hf

ROOT = Path(__file__).resolve().parents[1]
STRATEGY = ROOT / "tests" / "fixtures" / "hyperparallel" / "auto_hub_model.yaml"  # FSDP 8, model from --model
ARRAYS = ROOT / "tests" / "fixtures" / "megatron" / "train_moe_mla_arrays.sh"


def test_every_entry_is_a_model_config_with_its_source():
    ids = [e.id for e in catalogue.entries()]
    assert len(ids) == len(set(ids)) >= 45
    names = [n.lower() for n in catalogue.all_ids()]
    assert len(names) == len(set(names))  # an alias never names two entries
    for entry in catalogue.entries():
        assert entry.source == f"https://huggingface.co/{entry.id}/blob/main/config.json"
        assert entry.copy and looks_like_hf(entry.config), entry.id
        parsed = parse([STRATEGY], model=entry.id)
        assert parsed.model.vocab_size > 0 and parsed.model.num_layers > 0, entry.id


@pytest.mark.parametrize("name", ["meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
                                  "META-LLAMA/llama-3.1-8b", "/models/Meta-Llama-3.1-8B/"])
def test_lookup_by_id_alias_and_name(name):
    entry, how = catalogue.lookup(name)
    assert entry.id == "meta-llama/Meta-Llama-3.1-8B"
    assert ("matched by the model name" in how) == name.startswith("/")


@pytest.mark.parametrize("hub_id", [
    # the families issue 13 names: Llama 2/3/3.1/4, Qwen2.5/3/3.5 dense, MoE and VL, DeepSeek-V2/V3/R1, Mixtral,
    # Mistral, Gemma 2/3, gpt-oss, Kimi-K2, GLM-4.5
    "meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-70B",
    "meta-llama/Meta-Llama-3.1-70B", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "Qwen/Qwen2.5-7B", "Qwen/Qwen3-8B",
    "Qwen/Qwen3-30B-A3B",
    "Qwen/Qwen3-VL-8B-Instruct", "Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-35B-A3B", "deepseek-ai/DeepSeek-V2",
    "deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1", "mistralai/Mixtral-8x7B-v0.1", "mistralai/Mistral-7B-v0.3",
    "google/gemma-2-9b", "google/gemma-3-1b-it", "openai/gpt-oss-120b", "moonshotai/Kimi-K2-Instruct",
    "zai-org/GLM-4.5", "zai-org/GLM-4.5-Air"])
def test_the_issue_families_are_catalogued(hub_id):
    entry = catalogue.lookup(hub_id)[0]
    assert hub_id in (entry.id, *entry.aliases)


def test_glm_4_5_reads_its_q_k_norm_and_biases():
    big = parse([STRATEGY], model="zai-org/GLM-4.5").model
    air = parse([STRATEGY], model="zai-org/GLM-4.5-Air").model
    assert (big.qk_norm, big.qkv_bias, big.first_k_dense, big.num_experts, big.mtp_layers) == (True, True, 3, 160, 1)
    assert (air.qk_norm, air.first_k_dense, air.num_experts) == (False, 1, 128)


def test_unknown_names_are_refused_with_the_nearest():
    assert catalogue.lookup("Qwen/Qwen3-8X") is None
    with pytest.raises(ConfigError, match="did you mean Qwen/Qwen3-8B") as err:
        read_file("Qwen/Qwen3-8X")
    assert "Hugging Face cache" in str(err.value)


def _layer_params(h, q, kv, ffn_matrices, norms):
    return h * q + 2 * h * kv + q * h + ffn_matrices + norms


@pytest.mark.parametrize("hub_id, total", [
    # hand derivations from the published shapes: attention (q, k, v, o), SwiGLU (3 matrices), 2 norms per layer,
    # untied embedding and head, final norm
    ("meta-llama/Meta-Llama-3.1-8B",
     32 * _layer_params(4096, 4096, 1024, 3 * 4096 * 14336, 2 * 4096) + 2 * 128256 * 4096 + 4096),  # 8.03 B
    ("Qwen/Qwen3-8B",  # + q/k norms (2 × head_dim 128)
     36 * _layer_params(4096, 4096, 1024, 3 * 4096 * 12288, 2 * 4096 + 256) + 2 * 151936 * 4096 + 4096),  # 8.19 B
    ("Qwen/Qwen3-30B-A3B",  # 128 experts of 3 × 2048 × 768, router 2048 × 128
     48 * _layer_params(2048, 4096, 512, 128 * 3 * 2048 * 768 + 2048 * 128, 2 * 2048 + 256)
     + 2 * 151936 * 2048 + 2048),  # 30.5 B
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct",  # 16 routed experts + 1 shared of 3 × 5120 × 8192, router
     48 * _layer_params(5120, 5120, 1024, 17 * 3 * 5120 * 8192 + 5120 * 16, 2 * 5120) + 2 * 202048 * 5120 + 5120),
    ("zai-org/GLM-4.5-Air",  # 96 heads of 128 (q wider than h), q/k/v biases; 1 dense layer, then 45 of 128 experts
     # + 1 shared of 3 × 4096 × 1408, router 4096 × 128; the MTP layer is not counted
     _layer_params(4096, 12288, 1024, 3 * 4096 * 10944, 2 * 4096 + 12288 + 2 * 1024)
     + 45 * _layer_params(4096, 12288, 1024, 129 * 3 * 4096 * 1408 + 4096 * 128, 2 * 4096 + 12288 + 2 * 1024)
     + 2 * 151552 * 4096 + 4096),  # 106.85 B (published: 106 B)
])
def test_catalogue_shapes_give_the_published_parameter_counts(hub_id, total):
    parsed = parse([STRATEGY], model=hub_id)
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.parameters_total == total
    assert any(a.field == "model" and hub_id in a.source for a in parsed.assumptions)


def _fake_cache(root: Path, hub_id: str, config: dict) -> Path:
    repo = root / "hub" / ("models--" + hub_id.replace("/", "--"))
    commit = "a1b2c3d4" * 5  # refs/main holds the 40-hex commit of the snapshot
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot / "config.json"


def test_local_hugging_face_cache_wins_over_the_catalogue(tmp_path, monkeypatch):
    config = dict(catalogue.lookup("Qwen/Qwen3-8B")[0].config, num_hidden_layers=12)
    cached = _fake_cache(tmp_path, "Qwen/Qwen3-8B", config)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    parsed = parse([STRATEGY], model="Qwen/Qwen3-8B")
    assert parsed.model.num_layers == 12
    assert any(str(cached) in a.source for a in parsed.assumptions)
    private = _fake_cache(tmp_path / "other", "acme/Private-7B", config)
    monkeypatch.setenv("HF_HUB_CACHE", str(private.parents[3]))
    assert parse([STRATEGY], model="acme/Private-7B").model.num_layers == 12


def test_cache_roots_follow_huggingface_hub(tmp_path, monkeypatch):
    """huggingface_hub's constants: HF_HUB_CACHE, else the legacy HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, else
    $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert catalogue.cache_roots() == [tmp_path / "home" / ".cache" / "huggingface" / "hub"]
    config = dict(catalogue.lookup("Qwen/Qwen3-8B")[0].config, num_hidden_layers=7)
    _fake_cache(tmp_path / "home" / ".cache" / "huggingface", "acme/Home-7B", config)
    assert parse([STRATEGY], model="acme/Home-7B").model.num_layers == 7
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _fake_cache(tmp_path / "xdg" / "huggingface", "acme/Xdg-7B", config)
    assert catalogue.cache_roots()[0] == tmp_path / "xdg" / "huggingface" / "hub"
    assert parse([STRATEGY], model="acme/Xdg-7B").model.num_layers == 7
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "legacy"))
    assert catalogue.cache_roots()[0] == tmp_path / "legacy"


def test_the_cache_reads_the_snapshot_main_points_at_and_names_a_broken_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    pinned = _fake_cache(tmp_path, "acme/Pinned-7B", dict(catalogue.lookup("Qwen/Qwen3-8B")[0].config,
                                                           num_hidden_layers=5))
    newer = pinned.parents[1] / "fff999"
    newer.mkdir()
    (newer / "config.json").write_text("{ not json")  # a newer snapshot main does not point at: not read
    assert parse([STRATEGY], model="acme/Pinned-7B").model.num_layers == 5
    pinned.write_text("{ not json")
    with pytest.raises(ConfigError) as err:
        parse([STRATEGY], model="acme/Pinned-7B")
    assert err.value.path == str(pinned)


def test_local_model_directory(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(catalogue.lookup("Qwen/Qwen3-4B")[0].config))
    parsed = parse([STRATEGY], model=str(folder))
    assert parsed.model.hidden_size == 2560 and parsed.model.tie_embeddings is True


def test_a_script_naming_only_a_tokenizer_gets_its_vocabulary(tmp_path):
    text = ARRAYS.read_text().replace("    --tokenizer-type NullTokenizer\n    --vocab-size 32000\n",
                                      "    --tokenizer-type HuggingFaceTokenizer\n"
                                      "    --tokenizer-model Qwen/Qwen3-30B-A3B-Instruct-2507\n")
    script = tmp_path / "train.sh"
    script.write_text(text)
    parsed = parse([str(script)])
    assert parsed.model.vocab_size == 151936
    source = next(a.source for a in parsed.assumptions if a.field == "model.vocab_size")
    assert "--tokenizer-model Qwen/Qwen3-30B-A3B-Instruct-2507" in source and "Qwen/Qwen3-30B-A3B" in source


def test_an_unknown_tokenizer_falls_back_to_a_catalogued_shape(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("GPUS_PER_NODE=8\nNNODES=16\ntorchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES "
                      "pretrain_gpt.py --num-layers 80 --hidden-size 8192 --num-attention-heads 64 "
                      "--group-query-attention --num-query-groups 8 --ffn-hidden-size 28672 --swiglu "
                      "--tokenizer-type PretrainedFromHF --tokenizer-name-or-path /data/tok "
                      "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --seq-length 4096 "
                      "--micro-batch-size 1 --global-batch-size 64 --bf16\n")
    with pytest.raises(ConfigError, match=r"model\.vocab_size"):  # 80 × 8192 × 64: Llama 2 70B and Llama 3 70B
        parse([str(script)])
    script.write_text(script.read_text().replace("--num-layers 80 --hidden-size 8192 --num-attention-heads 64",
                                                 "--num-layers 126 --hidden-size 16384 --num-attention-heads 128")
                      .replace("28672", "53248"))
    parsed = parse([str(script)])
    assert parsed.model.vocab_size == 128256
    assert "Meta-Llama-3.1-405B" in next(a.source for a in parsed.assumptions if a.field == "model.vocab_size")


def test_a_hub_model_s_unmodelled_features_and_unknown_keys_are_said(tmp_path, monkeypatch):
    """A model named by Hub id says what a config.json given as a file says: a sliding window it does not model,
    keys it does not know (here a cached config of my own with one of each)."""
    parsed = parse([STRATEGY], model="google/gemma-2-9b")
    assert any(w.code == "W-MODEL-FEATURE" and w.text.startswith("google/gemma-2-9b: sliding-window attention")
               for w in parsed.warnings)
    config = dict(catalogue.lookup("Qwen/Qwen3-8B")[0].config, sliding_window=1024, use_sliding_window=True,
                  attn_softcap_magic=3)
    cached = _fake_cache(tmp_path, "acme/Window-8B", config)
    monkeypatch.setenv("HF_HUB_CACHE", str(cached.parents[3]))
    parsed = parse([STRATEGY], model="acme/Window-8B")
    codes = {w.code for w in parsed.warnings if str(cached) in w.text}
    # the strategy file's W-MODEL-SOURCE names the model file its dimensions are taken from (cf91c1e)
    assert codes == {"W-MODEL-FEATURE", "W-KEY-UNKNOWN", "W-MODEL-SOURCE"}, [w.text for w in parsed.warnings]
