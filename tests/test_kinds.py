"""Layer kinds and formulas as data (estimator/kinds): the formula grammar, a user slot override and a user kind
changing the estimate exactly as stated (and said in the assumptions and in Explain), the shipped gpt-oss and
sliding-window kinds against hand counts of transformers' modules, and broken files named, never fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator import kinds
from estimator.cli import main
from estimator.errors import ConfigError
from estimator.hardware import find_preset
from estimator.kinds.expr import parse_formula
from estimator.model import ModelSpec
from estimator.options import RunOptions
from estimator.params import block, parameter_counts
from estimator.resolve import resolve
from estimator.single_layer import layer_activation
from estimator.strategy import Strategy

PLAN = (Path(__file__).parent / "fixtures" / "kinds" / "house_llama.plan.yaml").read_text()


@pytest.fixture
def user_kinds(tmp_path, monkeypatch):
    """An empty user config folder, with the kinds registry reset before and after."""
    monkeypatch.setenv("SAPP_CONFIG_DIR", str(tmp_path))
    (tmp_path / "kinds").mkdir()
    saved = list(kinds._DIRS)
    kinds._DIRS.clear()
    kinds.registry.cache_clear()
    yield tmp_path / "kinds"
    kinds._DIRS[:] = saved
    kinds.registry.cache_clear()


def _plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    return path


def _estimate(path: Path, *extra: str) -> dict:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["estimate", str(path), "--json", *extra]) == 0
    return json.loads(out.getvalue())


# ------------------------------------------------------------------------------------------- formulas
def test_formulas_are_arithmetic_only():
    f = parse_formula("b_sm * a * min(s, window) if not flash else 4 * a")
    assert f({"b_sm": 2, "a": 8, "s": 100, "window": 16, "flash": False}) == 256
    assert f({"b_sm": 2, "a": 8, "s": 100, "window": 16, "flash": True}) == 32
    assert parse_formula(12)({}) == 12
    for bad in ("__import__('os')", "a.b", "x[0]", "'text'", "(lambda: 1)()", "open('f')", "min(a, key=b)"):
        with pytest.raises(ConfigError):
            parse_formula(bad, "k.yaml")
    with pytest.raises(ConfigError, match="unknown symbol"):
        parse_formula("h * nope", "k.yaml")({"h": 1})


# ------------------------------------------------------------------------------------------- user override
def test_user_slot_override_changes_the_estimate_exactly(user_kinds, tmp_path, capsys):
    plan = _plan(tmp_path)
    before = _estimate(plan)
    (user_kinds / "my_attention.yaml").write_text(
        "# the unfused scores with 1,000 bytes per token more (a stand-in for a kernel's extra buffer)\n"
        "overrides:\n  - {kind: dense, slot: a.scores, bytes: 'b_sm * a * s + 1000'}\n")
    kinds.add_kinds_dir(user_kinds)  # what the CLI and the app do at start
    after = _estimate(plan)
    # a.scores is class TP: per layer and micro-batch T·1000/t more, T = 2048 tokens, t = 2
    d_slot = 2048 * 1000 / 2
    model = ModelSpec(1024, 4, 16, 32000, num_kv_heads=4, ffn_hidden_size=2816, model_type="llama")
    st = Strategy(seq_length=2048, dp=2, tp=2, micro_batches=4, flash_attention=False)
    hw, opt = find_preset("H100-80G"), RunOptions(framework="megatron")
    a = layer_activation(model, st, hw, opt)
    kinds.remove_kinds_dir(user_kinds)
    a0 = layer_activation(model, st, hw, opt)
    assert a - a0 == d_slot
    # pp 1: the one stage holds the 4 layers, one micro-batch each in flight at the peak (1F1B, p − i = 1)
    assert after["stages"][0]["bytes_by_category"]["activations"] - \
        before["stages"][0]["bytes_by_category"]["activations"] == 4 * d_slot
    said = [x for x in after["assumptions"] if x["field"] == "slot a.scores of dense"]
    assert said and said[0]["value"] == "b_sm * a * s + 1000"
    assert said[0]["source"] == f"overridden by {user_kinds / 'my_attention.yaml'}"


def test_override_shown_in_explain_and_text(user_kinds, tmp_path, capsys):
    (user_kinds / "my_attention.yaml").write_text("overrides:\n  - {kind: '*', slot: a.scores, bytes: '4*a*s'}\n")
    kinds.add_kinds_dir(user_kinds)
    assert main(["estimate", str(_plan(tmp_path)), "--explain", "--depth", "9"]) == 0
    out = capsys.readouterr().out
    assert "slot a.scores overridden by" in out and "my_attention.yaml" in out
    assert "slot a.scores of dense = 4*a*s (overridden by" in out  # said as written, not as a Python repr


# ------------------------------------------------------------------------------------------- user kind
def test_user_kind_by_model_type(user_kinds, tmp_path):
    (user_kinds / "house.yaml").write_text("""kind:
  name: house_dense
  base: dense
  description: a gate on the attention output and a learned per-head temperature
  match: {model_types: [llama]}
  slots:
    - {id: a.gate2, bytes: "b_c * o_w", class: tp}
  params:
    - {name: temperature, class: rep, elements: "a"}
    - {name: output gate, class: tp, elements: "h * o_w"}
""")
    kinds.add_kinds_dir(user_kinds)
    model = ModelSpec(1024, 4, 16, 32000, num_kv_heads=4, ffn_hidden_size=2816, model_type="llama")
    assert model.body_kinds() == ("house_dense",) * 4
    st = Strategy(seq_length=2048, dp=2, tp=2, micro_batches=4, flash_attention=False)
    r = resolve(model, st, find_preset("H100-80G"), RunOptions(framework="megatron"))
    assert block(r.dims, "house_dense").total - block(r.dims, "dense").total == 16 + 1024 * 1024
    a = layer_activation(model, st, find_preset("H100-80G"), RunOptions(framework="megatron"), kind="house_dense")
    a0 = layer_activation(model, st, find_preset("H100-80G"), RunOptions(framework="megatron"), kind="dense")
    assert a - a0 == 2048 * 2 * 1024 / 2  # T·β_c·o_w/t
    assert any(x.field == "layer kind house_dense" for x in r.assumptions)


def test_broken_kind_file_is_named_not_fatal(user_kinds, tmp_path, capsys):
    (user_kinds / "bad.yaml").write_text("kind: {name: bad_dense, base: dense, slots: [{id: x, bytes: 'h.real'}]}\n")
    plan = _plan(tmp_path)
    assert main(["estimate", str(plan), "--json"]) == 0
    err = capsys.readouterr().err
    assert "user layer kinds ignored" in err and "bad.yaml" in err and "Attribute" in err
    (user_kinds / "bad.yaml").write_text("kind: {name: dense, base: dense}\n")
    with pytest.raises(ConfigError, match="not be a shipped kind"):
        kinds.add_kinds_dir(user_kinds)


# ------------------------------------------------------------------------------------------- shipped kinds
GPT_OSS_TINY = {"model_type": "gpt_oss", "hidden_size": 256, "num_layers": 2, "num_attention_heads": 8,
                "num_kv_heads": 2, "head_dim": 32, "vocab_size": 1000, "num_experts": 8, "experts_per_token": 2,
                "moe_ffn_hidden_size": 256, "sliding_window": 16,
                "layer_types": ("sliding_attention", "full_attention")}


def _gpt_oss(**kw) -> tuple[ModelSpec, object]:
    model = ModelSpec(**{**GPT_OSS_TINY, **kw})
    r = resolve(model, Strategy(seq_length=64), find_preset("H100-80G"), RunOptions(framework="megatron"))
    return model, r


def test_gpt_oss_layers_and_parameters():
    model, r = _gpt_oss()
    assert r.profile.name == "gpt_oss"
    assert model.body_kinds() == ("gpt_oss_swa_moe", "gpt_oss_moe")
    # transformers' GptOssDecoderLayer (h 256, 8 heads of 32, 2 KV heads, 8 experts of 256), counted by hand:
    # q, k, v, o with biases; a sink per head; router weight and bias; experts' gate_up and down with biases;
    # two norms — 1,746,064, the count `sapp measure` reads off the built module
    attn = (256 * 256 + 256) + 2 * (256 * 64 + 64) + (256 * 256 + 256) + 8
    router = 8 * 256 + 8
    experts = 8 * (256 * 512 + 512) + 8 * (256 * 256 + 256)
    assert attn + router + experts + 2 * 256 == 1_746_064
    for kind in model.body_kinds():
        assert block(r.dims, kind).total == 1_746_064


def test_gpt_oss_120b_total_parameters():
    """gpt-oss-120b (config.json: 36 layers, h 2880, 64 heads of 64, 8 KV heads, 128 experts of 2880, vocabulary
    201,088, untied): 116.83 B parameters, the model card's figure (the gpt3 profile priced it at 78.6 B)."""
    types = tuple(["sliding_attention", "full_attention"] * 18)
    model = ModelSpec(hidden_size=2880, num_layers=36, num_attention_heads=64, vocab_size=201088,
                      model_type="gpt_oss", num_kv_heads=8, head_dim=64, num_experts=128, experts_per_token=4,
                      moe_ffn_hidden_size=2880, sliding_window=128, layer_types=types, name="gpt-oss-120b")
    r = resolve(model, Strategy(seq_length=4096), find_preset("H100-80G"), RunOptions(framework="megatron"))
    h, a, kv, dh, e, i = 2880, 64, 8, 64, 128, 2880
    layer = (h * a * dh + a * dh) + 2 * (h * kv * dh + kv * dh) + (a * dh * h + h) + a + (e * h + e) + \
        e * (h * 2 * i + 2 * i) + e * (i * h + h) + 2 * h
    assert parameter_counts(model, r.dims).total == 36 * layer + 2 * 201088 * h + h == 116_829_156_672


def test_sliding_window_attended_keys_in_the_flops():
    from estimator.flops import FlopContext, _core_flops

    _, r = _gpt_oss()
    c = FlopContext(dims=r.dims, flags=r.flags, T=64, R=128, s=64, t=1, etp=1, v_pad=1000, kappa=0.5, bwd_attn=2.5)
    full, sliding = _core_flops(c, "gpt_oss_moe"), _core_flops(c, "gpt_oss_swa_moe")
    assert full == 2 * 64 * 8 * 0.5 * 64 * (32 + 32)
    # a causal query attends min(s, w) − min(s, w)²/(2s) keys on average: 16 − 256/128 = 14 of 64
    assert sliding == 2 * 64 * 8 * 14 * (32 + 32)
    # without a window the model cannot be priced with these kinds, and says which field is missing
    with pytest.raises(Exception, match="sliding_window"):
        _gpt_oss(sliding_window=None)


def test_sliding_window_kind_for_other_models():
    model = ModelSpec(hidden_size=256, num_layers=2, num_attention_heads=8, vocab_size=1000, ffn_hidden_size=512,
                      model_type="gemma3_text", sliding_window=32, layer_types=("sliding_attention", "full_attention"))
    assert model.body_kinds() == ("swa_dense", "dense")


# ------------------------------------------------------------------------------------------- DeepSeek-V3.2 (DSA)
# DeepSeek-V3.2-Exp's config.json fields the estimator reads (the DeepSeek-V3 shape and the lightning indexer:
# 64 heads of 128, top-2048 keys; public copies of https://huggingface.co/deepseek-ai/DeepSeek-V3.2-Exp)
V32 = {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "hidden_size": 7168,
       "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
       "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280, "q_lora_rank": 1536,
       "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
       "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "first_k_dense_replace": 3,
       "moe_layer_freq": 1, "num_nextn_predict_layers": 1, "tie_word_embeddings": False,
       "index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048}
# per layer: wq_b 1536·64·128, wk 7168·128, the key LayerNorm 2·128, weights_proj 7168·64
INDEXER = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64


def _hf_model(data: dict) -> ModelSpec:
    from estimator.formats.hf import read_hf
    from estimator.model import LayerGroup

    values, _, _ = read_hf(data, "config.json")
    fields = {k.split(".", 1)[1]: v for k, v in values.items()}
    if "layers" in fields:
        fields["layers"] = tuple(LayerGroup.from_dict(g) for g in fields["layers"])
    return ModelSpec(**fields)


def test_deepseek_v32_config_is_priced_with_sparse_attention(tmp_path, capsys):
    model = _hf_model(V32)
    assert model.body_kinds() == ("dsa_dense",) * 3 + ("dsa_moe",) * 58 and model.mtp_kinds() == ("dsa_moe",)
    r = resolve(model, Strategy(seq_length=4096), find_preset("H100-80G"), RunOptions(framework="megatron"))
    assert r.profile.name == "deepseek"
    assert block(r.dims, "dsa_moe").total - block(r.dims, "moe").total == INDEXER == 13_959_424
    # DeepSeek-V3's 671,026,404,352 (tests/test_format_hf.py, MTP apart) plus one indexer per body layer
    assert parameter_counts(model, r.dims).total == 671_026_404_352 + 61 * INDEXER
    config = tmp_path / "config.json"
    config.write_text(json.dumps(V32))
    plan = tmp_path / "plan.yaml"
    plan.write_text("options: {framework: megatron}\nhardware: {device: H100-80G}\n"
                    "strategy: {seq_length: 8192, dp: 8, tp: 8, pp: 8, ep: 8, micro_batches: 16,"
                    " sequence_parallel: true}\n")
    assert main(["estimate", str(plan), "--model", str(config), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    said = {a["field"]: a for a in payload["assumptions"]}
    assert said["layer kind dsa_moe"]["value"] == "moe" and "estimator/kinds/dsa.yaml" in \
        said["layer kind dsa_moe"]["source"]
    assert not [w for w in payload["warnings"] if "index" in w["text"]]


def test_deepseek_v32_activations_and_flops():
    from estimator.flops import FlopContext, _core_flops

    model = _hf_model(V32)
    st = Strategy(seq_length=8192, tp=8, flash_attention=True)
    hw, opt = find_preset("H100-80G"), RunOptions(framework="megatron")
    r = resolve(model, st, hw, opt)
    # flash: q (β·64·128), key norm input and rotated key (2·β·128) and fp32 statistics, fp32 head weights,
    # int32 indices of the 2048 selected keys — class rep: every TP rank holds them for all T = 8192 tokens
    per_token = 2 * 64 * 128 + 2 * 2 * 128 + 8 + 4 * 64 + 4 * 2048
    extra = layer_activation(model, st, hw, opt, kind="dsa_moe") - layer_activation(model, st, hw, opt, kind="moe")
    assert extra == 8192 * per_token
    # the core attends k − k²/(2s) = 2048 − 256 = 1792 keys instead of κ·s = 4096; the indexer scores every
    # causal key on every TP rank: n_idx·(d_idx + 1)·s per token
    c = FlopContext(dims=r.dims, flags=r.flags, T=8192, R=8 * 8192, s=8192, t=8, etp=1, v_pad=129280, kappa=0.5,
                    bwd_attn=2.5)
    attn = 2 * 8192 * 128 * 1792 * (192 + 128) / 8
    assert _core_flops(c, "dsa_moe") == attn + 8192 * 64 * 129 * 8192
    assert _core_flops(c, "moe") == 2 * 8192 * 128 * 4096 * (192 + 128) / 8
    # the indexer's projections are matmul weights (2 FLOPs per element per token, on every TP rank)
    assert block(r.dims, "dsa_moe").rep_mm - block(r.dims, "moe").rep_mm == INDEXER - 2 * 128


def test_deepseek_v32_without_indexer_fields_is_refused_by_name():
    from estimator.errors import ModelSpecError

    model = _hf_model({k: v for k, v in V32.items() if k != "index_topk"})
    with pytest.raises(ModelSpecError, match="index_topk"):
        resolve(model, Strategy(seq_length=4096), find_preset("H100-80G"), RunOptions(framework="megatron"))


# ------------------------------------------------------------------------------------------- Mamba-2 hybrids
# IBM Granite 4.0-H-Micro's shape as public copies of its config.json state it (40 layers, attention at 5, 15, 25,
# 35, Mamba-2 elsewhere: 64 heads of 64, state 128, 1 group, conv 4; hidden 2048, 32 heads, 8 KV heads; the
# shared_mlp of 8192 is the FFN: num_local_experts 0), in the older layers_block_type spelling
GRANITE_H_MICRO = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
                   "hidden_size": 2048, "intermediate_size": 8192, "shared_intermediate_size": 8192,
                   "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "vocab_size": 100352, "num_local_experts": 0, "num_experts_per_tok": 0,
                   "layers_block_type": (["mamba"] * 5 + ["attention"] + ["mamba"] * 4) * 4,
                   "mamba_n_heads": 64, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 1,
                   "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True, "mamba_proj_bias": False,
                   "position_embedding_type": "nope", "tie_word_embeddings": True}


def test_granite_hybrid_config_is_priced_with_mamba2_layers():
    model = _hf_model(GRANITE_H_MICRO)
    kinds_ = model.body_kinds()
    assert [i for i, k in enumerate(kinds_) if k == "dense"] == [5, 15, 25, 35]
    assert kinds_.count("mamba2_dense") == 36 and model.ffn_hidden_size == 8192
    # transformers' newer spelling of the same layers prices the same
    renamed = {**{k: v for k, v in GRANITE_H_MICRO.items() if k != "layers_block_type"},
               "layer_types": [{"mamba": "linear_attention", "attention": "full_attention"}[x]
                               for x in GRANITE_H_MICRO["layers_block_type"]]}
    assert _hf_model(renamed).body_kinds() == kinds_
    r = resolve(model, Strategy(seq_length=4096), find_preset("H100-80G"), RunOptions(framework="megatron"))
    assert r.profile.name == "granite_hybrid"
    h, d_in, n, heads = 2048, 64 * 64, 128, 64
    mamba = h * (2 * d_in + 2 * n + heads) + (d_in + 2 * n) * (4 + 1) + 3 * heads + d_in + d_in * h
    ffn, norms = 3 * h * 8192, 2 * h
    assert block(r.dims, "mamba2_dense").total == mamba + ffn + norms
    attention = h * (2048 + 2 * 8 * 64) + 2048 * h  # q, k, v, o without biases
    assert block(r.dims, "dense").total == attention + ffn + norms
    # the in/out projections are matmul weights, split across TP
    assert block(r.dims, "mamba2_dense").tp_mm == h * (2 * d_in + 2 * n + heads) + d_in * h + ffn
    assert parameter_counts(model, r.dims).total == 36 * (mamba + ffn + norms) + 4 * (attention + ffn + norms) + \
        100352 * h + h


def test_mamba2_slots_and_flops():
    from estimator.activations import ActivationTable
    from estimator.flops import FlopContext, _core_flops
    from estimator.params import linear_modules

    model = _hf_model(GRANITE_H_MICRO)
    st = Strategy(seq_length=4096, tp=2)
    r = resolve(model, st, find_preset("H100-80G"), RunOptions(framework="megatron"))
    table = ActivationTable(r.dims, r.widths, r.flags, 4096.0, None)
    ids = [slot.id for slot in table.slots("mamba2_dense")]
    # the attention half keeps only its input norm; the Mamba-2 kernel's tensors replace the attention's
    assert [i for i in ids if i.startswith(("a.", "ssm.", "nstat.attn"))] == \
        ["a.norm_in", "a.norm_out", "nstat.attn", "ssm.in", "ssm.y", "ssm.rstd", "ssm.out_in"]
    got = {slot.id: slot.bytes for slot in table.slots("mamba2_dense")}
    assert got["ssm.in"] == 2 * (2 * 4096 + 2 * 128 + 64) and got["ssm.rstd"] == 4
    c = FlopContext(dims=r.dims, flags=r.flags, T=4096, R=4096, s=4096, t=2, etp=1, v_pad=100352, kappa=0.5,
                    bwd_attn=2.5)
    # Megatron-LM's scan count 7·d_in·d_state and the depthwise conv 2·d_conv·(d_in + 2·groups·state), ÷ t
    assert _core_flops(c, "mamba2_dense") == 4096 * (7 * 4096 * 128 + 2 * 4 * (4096 + 256)) / 2
    assert "qkv" not in linear_modules(r.dims, "mamba2_dense") and "qkv" in linear_modules(r.dims, "dense")


def test_mamba_layers_without_their_fields_are_refused_by_name():
    from estimator.errors import ModelSpecError

    model = ModelSpec(hidden_size=256, num_layers=2, num_attention_heads=8, vocab_size=1000, ffn_hidden_size=512,
                      layer_types=("mamba", "full_attention"))
    assert model.body_kinds() == ("mamba2_dense", "dense")
    with pytest.raises(ModelSpecError, match="mamba_num_heads"):
        resolve(model, Strategy(seq_length=64), find_preset("H100-80G"), RunOptions(framework="megatron"))


def test_tp_must_divide_the_mamba_heads_and_groups(tmp_path, capsys):
    """Megatron's MambaMixer splits heads and B/C groups across TP ranks: Granite 4.0-H-Micro's one group refuses
    TP 2 (R-TP-KIND, from the kind's tp_divides) in an estimate and in the search."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(GRANITE_H_MICRO))
    plan = tmp_path / "plan.yaml"
    plan.write_text("options: {framework: megatron}\nhardware: {device: H100-80G}\n"
                    "strategy: {seq_length: 4096, dp: 8, tp: 2, micro_batches: 8}\n")
    assert main(["estimate", str(plan), "--model", str(config)]) == 1
    assert "[R-TP-KIND] TP 2 does not divide mamba_num_groups 1" in capsys.readouterr().err
    assert main(["search", str(plan), "--model", str(config), "--dims", "tp=1,2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["refusals"].get("R-TP-KIND", 0) > 0
    assert {row["strategy"]["tp"] for row in data["ranked"]} == {1}


def test_hybrids_without_a_kind_are_named_not_priced_silently():
    """State-space hybrids no layer kind prices (Nemotron-H, Jamba, Falcon-H1, …) are named with how they are priced
    instead; the ones a shipped kind prices (Granite 4.0-H, DeepSeek-V3.2) are not."""
    from estimator.formats.hf import unmodelled_features

    nemotron = {"model_type": "nemotron_h", "hidden_size": 256, "num_hidden_layers": 4,
                "hybrid_override_pattern": "M-M*"}
    (said,) = [w.text for w in unmodelled_features(nemotron, "config.json")]
    assert "Mamba-2" in said and "priced as attention + MLP" in said
    for model_type in ("jamba", "falcon_h1", "bamba", "mamba2"):
        assert unmodelled_features({"model_type": model_type}, "config.json"), model_type
    assert unmodelled_features(GRANITE_H_MICRO, "config.json") == []
    assert unmodelled_features(V32, "config.json") == []
