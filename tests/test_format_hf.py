"""Hugging Face config.json and DeepSeek inference configs as model sources (docs/model.md#frameworks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.errors import ConfigError
from estimator.estimate import estimate
from estimator.formats import parse
from estimator.formats.hf import looks_like_hf, read_hf
from estimator.hardware import find_preset
from estimator.model import LayerGroup, ModelSpec
from estimator.options import RunOptions
from estimator.params import parameter_counts
from estimator.resolve import resolve
from estimator.strategy import Strategy

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
STRATEGY = Path(__file__).parent / "fixtures" / "hyperparallel" / "auto_hub_model.yaml"  # FSDP 8, model from --model


def _spec(path: Path) -> tuple[ModelSpec, list[str]]:
    data = json.loads(path.read_text())
    assert looks_like_hf(data)
    values, prov, notes = read_hf(data, str(path))
    for key in values:
        if key in prov:
            assert prov[key].path == str(path)
    fields = {k.split(".", 1)[1]: v for k, v in values.items() if k != "model.vision"}
    if "layers" in fields:
        fields["layers"] = tuple(LayerGroup.from_dict(g) for g in fields["layers"])
    return ModelSpec(**fields), notes


def _counts(model: ModelSpec):
    r = resolve(model, Strategy(seq_length=4096), find_preset("A2"), RunOptions(framework="hyperparallel"))
    return parameter_counts(model, r.dims)


# ------------------------------------------------------------------------------------- real configs
@pytest.mark.parametrize(("name", "total", "active", "vocab", "mtp"), [
    ("hf_deepseek_v3_config.json", 671_026_404_352, 37_552_282_624, 129280, 1),
    ("ds_official_inference_config_671B.json", 671_026_404_352, 37_552_282_624, 129280, 0),
    ("ds_official_inference_config_v3.1.json", 671_026_404_352, 37_552_282_624, 129280, 0),
    ("ds_official_inference_config_236B.json", 235_741_434_880, 21_375_800_320, 102400, 0),
    ("ds_official_inference_config_16B.json", 15_706_484_224, 2_661_150_208, 102400, 0),
])
def test_real_deepseek_configs(shared_dir, name, total, active, vocab, mtp):
    path = shared_dir / "real-configs" / "hf_config" / name
    model, notes = _spec(path)
    counts = _counts(model)
    assert (counts.total, counts.active, model.vocab_size, model.mtp_layers) == (total, active, vocab, mtp)
    assert model.is_mla and model.is_moe and model.qk_rope_head_dim == 64 and model.head_dim == 128
    if "official" in name:
        assert model.family == "deepseek" and any("no MTP" in n for n in notes)
    if name in ("hf_deepseek_v3_config.json", "ds_official_inference_config_671B.json"):
        assert any("fp8" in n for n in notes)  # checkpoint dtype noted, training priced with plan widths
    # combined with a strategy file, the config estimates (its dimensions win)
    parsed = parse([STRATEGY], model=path)
    assert parsed.model.vocab_size == vocab and parsed.provenance["model.num_layers"].path == str(path)
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.parameters_total == total


def test_hf_deepseek_mtp_is_counted_separately(shared_dir):
    model, _ = _spec(shared_dir / "real-configs" / "hf_config" / "hf_deepseek_v3_config.json")
    assert _counts(model).mtp == 11_507_286_016 + 2 * 7168 ** 2 + 3 * 7168  # a MoE layer, eh_proj, 3 norms
    assert model.first_k_dense == 3 and model.num_kv_heads == 128 and not model.tie_embeddings


# ----------------------------------------------------------------------------------------- fixtures
def test_hybrid_qwen3_5_with_vision():
    path = FIXTURES / "qwen3_5_hybrid_vl.json"
    values, _prov, _notes = read_hf(json.loads(path.read_text()), str(path))
    assert values["model.layer_types"] == ("linear_attention",) * 3 + ("full_attention",) + \
        ("linear_attention",) * 3 + ("full_attention",)
    assert values["model.output_gate"] and values["model.qk_norm"] and values["model.mtp_layers"] == 1
    assert values["model.model_type"] == "qwen3_5"  # the family comes from the outer config
    assert (values["model.linear_num_key_heads"], values["model.linear_value_head_dim"]) == (16, 128)
    vision = values["model.vision"]
    assert (vision["num_layers"], vision["hidden_size"], vision["ffn_hidden_size"], vision["out_hidden_size"]) == \
        (12, 768, 3072, 1024)
    assert (vision["gated_ffn"], vision["norm"], vision["patch_size"], vision["num_position_embeddings"]) == \
        (False, "layer", 16, 2304)
    parsed = parse([STRATEGY], model=path)
    assert parsed.model.has_linear_attention and parsed.model.vision is not None
    assert [g.kind for g in parsed.model.layer_stack()] == ["lin_dense", "dense", "lin_dense", "dense", "dense"]
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.peak_bytes > 0


@pytest.mark.parametrize(("name", "width", "ffn", "out", "gated", "norm"), [
    ("qwen2_vl_style.json", 640, 2560, 1536, False, "layer"),      # embed_dim tower, hidden_size = merger out
    ("qwen2_5_vl_style.json", 640, 1728, 2048, True, "rms"),       # gated SiLU FFN, RMSNorm
])
def test_qwen_vl_vision_towers(name, width, ffn, out, gated, norm):
    path = FIXTURES / name
    values, _, _ = read_hf(json.loads(path.read_text()), str(path))
    vision = values["model.vision"]
    assert (vision["hidden_size"], vision["ffn_hidden_size"], vision["out_hidden_size"]) == (width, ffn, out)
    assert (vision["gated_ffn"], vision["norm"]) == (gated, norm)
    parsed = parse([STRATEGY], model=path)
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.peak_bytes > 0


def test_moe_layer_placement():
    sparse, _ = _spec(FIXTURES / "qwen_moe_sparse.json")  # decoder_sparse_step 2: layers 1, 3, 5, 7 are MoE
    assert sparse.body_kinds() == ("dense", "moe") * 4
    mlp_only, _ = _spec(FIXTURES / "qwen_moe_mlp_only.json")  # mlp_only_layers [0, 5]
    assert mlp_only.body_kinds() == ("dense", "moe", "moe", "moe", "moe", "dense")
    mixtral, _ = _spec(FIXTURES / "mixtral_like.json")  # experts use intermediate_size
    assert mixtral.moe_ffn_hidden_size == 3584 and mixtral.body_kinds() == ("moe",) * 4
    tiny, _ = _spec(FIXTURES / "qwen3_moe_tiny.json")
    assert tiny.qk_norm and tiny.head_dim == 32 and tiny.body_kinds() == ("moe",) * 4


def test_implausible_layer_count_is_refused(tmp_path):
    data = json.loads((FIXTURES / "llama_small.json").read_text())
    data["num_hidden_layers"] = 10 ** 7
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="implausibly large") as exc:
        parse([STRATEGY], model=path)
    assert exc.value.key == "num_hidden_layers"


def test_malformed_json_points_at_the_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{\n  "hidden_size": 512,\n  "num_hidden_layers": ,\n}\n')
    with pytest.raises(ConfigError) as exc:
        parse([STRATEGY], model=path)
    assert (exc.value.line, exc.value.path) == (3, str(path))


# --------------------------------------------------------------------------------------------- fuzz
try:
    from fuzzing import fuzz_settings
    from hypothesis import HealthCheck, given
    from hypothesis import strategies as hs
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    hs = None

if hs is not None:
    SCALARS = hs.one_of(hs.integers(-(2 ** 63), 2 ** 63 - 1), hs.none(), hs.booleans(),
                        hs.sampled_from([0, -1, 1, 2, 3, 4, 7, 64, 2 ** 31, 2 ** 40]),
                        hs.floats(allow_nan=False, allow_infinity=False), hs.text(max_size=12),
                        hs.sampled_from(["linear_attention", "full_attention", "silu", "qwen3_5", "qwen3_moe",
                                         "deepseek_v3", "mixtral"]))
    VALUES = hs.recursive(SCALARS, lambda inner: hs.one_of(hs.lists(inner, max_size=4),
                                                           hs.dictionaries(hs.text(min_size=1, max_size=8), inner,
                                                                           max_size=3)), max_leaves=6)

    @fuzz_settings(200, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
    @given(data=hs.data())
    def test_fuzzed_model_configs_fail_only_with_sapp_errors(tmp_path, data):
        """A mutated config.json combined with a strategy file: only SappError escapes parse and estimate."""
        from estimator.errors import SappError

        source = data.draw(hs.sampled_from(sorted(FIXTURES.glob("*.json"))))
        tree = json.loads(source.read_text())
        for _ in range(data.draw(hs.integers(1, 4))):
            target = tree
            if isinstance(tree.get("text_config"), dict) and data.draw(hs.booleans()):
                target = tree["text_config"]
            elif isinstance(tree.get("vision_config"), dict) and data.draw(hs.booleans()):
                target = tree["vision_config"]
            key = data.draw(hs.sampled_from([*sorted(target), "layer_types", "mlp_only_layers", "moe_layer_freq"]))
            if data.draw(hs.booleans()) and key in target:
                del target[key]
            else:
                target[key] = data.draw(VALUES)
        path = tmp_path / "config.json"
        path.write_text(json.dumps(tree))
        try:
            parsed = parse([STRATEGY], model=path)
            estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
        except SappError:
            pass


def test_mla_qk_nope_head_dim_wins_over_head_dim(tmp_path):
    """transformers' DeepSeek-style configs set ``head_dim`` to the RoPE width (qk_rope_head_dim); the per-head q/k
    width MLA prices is qk_nope_head_dim (a GLM-5-shaped snippet: nope 192, rope 64, head_dim 64)."""
    config = {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "hidden_size": 1024,
              "intermediate_size": 2048, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
              "head_dim": 64, "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256,
              "q_lora_rank": 256, "kv_lora_rank": 128, "vocab_size": 1000}
    values, prov, _ = read_hf(config, "glm.json")
    assert (values["model.head_dim"], values["model.qk_rope_head_dim"], values["model.v_head_dim"]) == (192, 64, 256)
    assert prov["model.head_dim"].key == "qk_nope_head_dim"
    # without MLA, head_dim is the head width as before
    plain = {k: v for k, v in config.items() if k not in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                                                           "q_lora_rank", "kv_lora_rank")}
    assert read_hf(plain, "plain.json")[0]["model.head_dim"] == 64


# ------------------------------------------------------------------------- GPT-2-style and OPT configs
def test_gpt2_style_keys_are_read_with_their_provenance():
    """GPT2Config's names (n_embd, n_layer, n_head, n_positions, n_inner null) are read; the total matches
    transformers' count for gpt2 (124,439,808: 12·(4h²+4h + 8h²+5h + 4h) + 50257h + 1024h + 2h, h = 768)."""
    path = FIXTURES / "gpt2_style_small.json"
    values, prov, notes = read_hf(json.loads(path.read_text()), str(path))
    assert {k: prov[f"model.{k}"].key for k in ("hidden_size", "num_layers", "num_attention_heads",
                                                 "learned_positions")} == \
        {"hidden_size": "n_embd", "num_layers": "n_layer", "num_attention_heads": "n_head",
         "learned_positions": "n_positions"}
    assert prov["model.ffn_hidden_size"].source == "derived" and values["model.ffn_hidden_size"] == 4 * 768
    assert prov["model.tie_embeddings"].source == "derived" and values["model.tie_embeddings"] is True and not notes
    model, _ = _spec(path)
    h = 768
    assert _counts(model).total == 12 * (4 * h * h + 4 * h + 8 * h * h + 5 * h + 4 * h) + 50257 * h + 1024 * h + 2 * h \
        == 124_439_808
    parsed = parse([STRATEGY], model=path)  # detected as a config.json, not refused as an unknown kind
    assert parsed.model.hidden_size == 768 and parsed.model.learned_positions == 1024
    assert not [w for w in parsed.warnings if w.code == "W-KEY-UNKNOWN"]


def test_opt_ffn_dim_positions_and_tied_head():
    """OPT states its FFN width as ffn_dim and has a learned position table of max_position_embeddings + 2 rows;
    transformers' count for opt-125m is 125,239,296 (written out below)."""
    path = FIXTURES / "opt_style_small.json"
    values, prov, notes = read_hf(json.loads(path.read_text()), str(path))
    assert values["model.ffn_hidden_size"] == 3072 and prov["model.ffn_hidden_size"].key == "ffn_dim"
    assert values["model.learned_positions"] == 2050 and values["model.tie_embeddings"] is True and not notes
    model, _ = _spec(path)
    h, f = 768, 3072
    layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    assert _counts(model).total == 12 * layer + 50272 * h + 2050 * h + 2 * h == 125_239_296


def test_a_config_stating_both_names_uses_the_common_one():
    config = {"model_type": "gpt2", "hidden_size": 512, "n_embd": 768, "num_hidden_layers": 2, "n_layer": 3,
              "num_attention_heads": 8, "n_head": 12, "vocab_size": 1000, "tie_word_embeddings": False}
    values, _, _ = read_hf(config, "both.json")
    assert (values["model.hidden_size"], values["model.num_layers"], values["model.num_attention_heads"]) == (512, 2, 8)
    assert "model.ffn_hidden_size" not in values and values["model.tie_embeddings"] is False  # the file's word


def test_gpt_j_style_rotary_model_has_no_learned_positions():
    config = {"model_type": "gptj", "architectures": ["GPTJForCausalLM"], "n_embd": 256, "n_layer": 2, "n_head": 4,
              "n_inner": 1024, "n_positions": 2048, "rotary_dim": 64, "vocab_size": 1000}
    values, prov, _ = read_hf(config, "gptj.json")
    assert values["model.ffn_hidden_size"] == 1024 and prov["model.ffn_hidden_size"].key == "n_inner"
    assert "model.learned_positions" not in values and "model.tie_embeddings" not in values


def test_opt_embedding_projection_is_said(tmp_path):
    data = json.loads((FIXTURES / "opt_style_small.json").read_text())
    data["word_embed_proj_dim"] = 512
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    parsed = parse([STRATEGY], model=path)
    notes = [w for w in parsed.warnings if w.code == "W-MODEL-NOTE" and "word_embed_proj_dim" in str(w)]
    assert len(notes) == 1 and "512" in str(notes[0]) and "768" in str(notes[0])
    assert "未计入" in notes[0].localized("zh_CN")
