"""Model shapes from a Hugging Face ``config.json`` or a DeepSeek inference config (docs/model.md#frameworks).

Covers the plain decoder configs (Llama, Mistral, Qwen2/3), MoE configs (DeepSeek-V2/V3 ``n_routed_experts``,
Qwen-MoE ``num_experts`` with ``decoder_sparse_step`` / ``mlp_only_layers``, Mixtral ``num_local_experts``
whose experts use ``intermediate_size``), the Qwen3-Next / Qwen3.5 hybrids (``layer_types`` or
``full_attention_interval``, gated-delta ``linear_*`` keys, output gate, ``mtp_num_hidden_layers``), the
multimodal configs that nest the language model under ``text_config`` with a ``vision_config`` (Qwen2-VL,
Qwen2.5-VL, Qwen3-VL, Qwen3.5), GPT-2-style names (``n_embd``, ``n_layer``, ``n_head``, ``n_inner``: GPT-2, GPT-J,
CodeGen, GPT-BigCode), OPT (``ffn_dim``), and DeepSeek's own inference format (``dim``, ``n_layers``, …). File values
are used as written: DeepSeek-V3's vocabulary is 129280 here and 159744 in the hyper-parallel fixtures.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..kinds import claims_layer_type
from ..limits import MAX_SEQ_LENGTH
from ..messages import Text, msg
from ..parsed import Provenance
from ..warnings import EstimateWarning
from ..yamlio import load_data
from .known_keys import catalogue, unknown_names
from .support import MAX_LAYERS

# HF key -> canonical model field (first present wins for each field)
_HF_KEYS: tuple[tuple[str, str], ...] = (
    ("hidden_size", "hidden_size"), ("intermediate_size", "ffn_hidden_size"),
    ("num_hidden_layers", "num_layers"), ("num_attention_heads", "num_attention_heads"),
    # MLA: qk_nope_head_dim is the per-head q/k width; transformers' DeepSeek-style configs set head_dim to the
    # RoPE part (qk_rope_head_dim), so the nope width goes first
    ("num_key_value_heads", "num_kv_heads"), ("qk_nope_head_dim", "head_dim"), ("head_dim", "head_dim"),
    ("vocab_size", "vocab_size"), ("tie_word_embeddings", "tie_embeddings"), ("q_lora_rank", "q_lora_rank"),
    ("kv_lora_rank", "kv_lora_rank"), ("qk_rope_head_dim", "qk_rope_head_dim"), ("v_head_dim", "v_head_dim"),
    ("n_routed_experts", "num_experts"), ("num_experts", "num_experts"), ("num_local_experts", "num_experts"),
    ("num_experts_per_tok", "experts_per_token"), ("n_shared_experts", "num_shared_experts"),
    ("moe_intermediate_size", "moe_ffn_hidden_size"),
    ("shared_expert_intermediate_size", "shared_ffn_hidden_size"),
    ("first_k_dense_replace", "first_k_dense"), ("moe_layer_freq", "moe_layer_freq"),
    ("num_nextn_predict_layers", "mtp_layers"), ("mtp_num_hidden_layers", "mtp_layers"),
    ("linear_num_key_heads", "linear_num_key_heads"), ("linear_key_head_dim", "linear_key_head_dim"),
    ("linear_num_value_heads", "linear_num_value_heads"), ("linear_value_head_dim", "linear_value_head_dim"),
    ("linear_conv_kernel_dim", "linear_conv_kernel"), ("attention_bias", "qkv_bias"),
    ("mlp_bias", "mlp_bias"), ("attn_output_gate", "output_gate"), ("sliding_window", "sliding_window"),
    ("index_n_heads", "index_n_heads"), ("index_head_dim", "index_head_dim"), ("index_topk", "index_topk"),
    ("mamba_n_heads", "mamba_num_heads"), ("mamba_d_state", "mamba_state_dim"), ("mamba_n_groups", "mamba_num_groups"),
    ("mamba_d_conv", "mamba_conv_kernel"), ("mamba_conv_bias", "mamba_conv_bias"),
    ("mamba_proj_bias", "mamba_proj_bias"),
    # GPT-2-style names (GPT2Config and the configs modelled on it: GPT-J, CodeGen, GPT-BigCode; Bloom's n_layer /
    # n_head) and OPT's FFN width; after the common names, which win when a file states both
    ("n_embd", "hidden_size"), ("n_layer", "num_layers"), ("n_head", "num_attention_heads"),
    ("n_inner", "ffn_hidden_size"), ("ffn_dim", "ffn_hidden_size"),
)
# model types with a learned absolute position table: the key stating its rows, and the rows the framework adds
_LEARNED_POSITIONS = {"gpt2": ("n_positions", 0), "gpt_bigcode": ("n_positions", 0),
                      "opt": ("max_position_embeddings", 2)}  # OPTLearnedPositionalEmbedding: offset of 2 rows
# model types whose transformers configuration keeps PretrainedConfig's tie_word_embeddings = true
_TIED_BY_DEFAULT = {"gpt2", "opt"}
# DeepSeek's own inference format (inference/configs/config_*.json)
_DEEPSEEK_KEYS: tuple[tuple[str, str], ...] = (
    ("dim", "hidden_size"), ("inter_dim", "ffn_hidden_size"), ("moe_inter_dim", "moe_ffn_hidden_size"),
    ("n_layers", "num_layers"), ("n_dense_layers", "first_k_dense"), ("n_heads", "num_attention_heads"),
    ("n_routed_experts", "num_experts"), ("n_activated_experts", "experts_per_token"),
    ("n_shared_experts", "num_shared_experts"), ("vocab_size", "vocab_size"), ("q_lora_rank", "q_lora_rank"),
    ("kv_lora_rank", "kv_lora_rank"), ("qk_nope_head_dim", "head_dim"), ("qk_rope_head_dim", "qk_rope_head_dim"),
    ("v_head_dim", "v_head_dim"),
)
_LLAMA_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe"}
# hybrid gated-delta / gated-attention families (output gate, q/k norm, layer_types every 4th full)
_HYBRID_TYPES = {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}
# Mamba-2 / attention hybrids whose layer_types say mamba (or linear_attention, transformers' newer name) per layer
_MAMBA2_TYPES = {"granitemoehybrid"}
_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_moe", "qwen3_vl_text", "qwen3_vl_moe_text"} | \
    _HYBRID_TYPES


def looks_like_hf(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    return ("hidden_size" in data and ("num_hidden_layers" in data or "text_config" in data)) or \
        ("dim" in data and "n_layers" in data and "n_heads" in data) or \
        ("n_embd" in data and "n_layer" in data and "n_head" in data) or \
        isinstance(data.get("text_config"), dict)


def read_hf(data: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, Provenance], list[Text]]:
    """Model fields with their provenance, and notes for the user."""
    notes: list[Text] = []
    source, prefix = data, ""
    if isinstance(data.get("text_config"), dict) and "hidden_size" not in data:
        source, prefix = data["text_config"], "text_config."
    deepseek_native = "dim" in source and "n_layers" in source
    values: dict[str, Any] = {}
    prov: dict[str, Provenance] = {}

    def put(name: str, value: Any, key: str | None, how: str | None = None) -> None:
        values[f"model.{name}"] = value
        prov[f"model.{name}"] = Provenance("file", path=path, key=key, raw=value) if key else \
            Provenance("derived", path=path, key=how)

    for key, name in _DEEPSEEK_KEYS if deepseek_native else _HF_KEYS:
        if key in source and f"model.{name}" not in values and source[key] is not None:
            put(name, source[key], prefix + key)
    if prefix:  # a multimodal config may keep some language-model keys at the top level
        for key, name in _HF_KEYS:
            if f"model.{name}" not in values and data.get(key) is not None and key not in ("hidden_size",):
                put(name, data[key], key)
    for name, limit in (("num_layers", MAX_LAYERS), ("mtp_layers", MAX_LAYERS), ("num_experts", 1 << 20),
                        ("first_k_dense", MAX_LAYERS)):
        if f"model.{name}" in values:
            values[f"model.{name}"] = _int(values[f"model.{name}"], path, prov[f"model.{name}"].key, 0, limit)
    for key in ("decoder_sparse_step", "full_attention_interval"):
        if source.get(key) is not None:
            source = {**source, key: _int(source[key], path, prefix + key, 1, MAX_LAYERS)}
    only = source.get("mlp_only_layers")
    if only is not None:
        if not isinstance(only, list):
            raise ConfigError(msg("hf.expected-list-layer", only=only), path=path,
                              key=prefix + "mlp_only_layers")
        source = {**source, "mlp_only_layers": [_int(i, path, prefix + "mlp_only_layers", 0, MAX_LAYERS)
                                                for i in only]}
    arch = data.get("architectures") or source.get("architectures")
    if isinstance(arch, list) and arch:
        put("hf_architectures", tuple(str(a) for a in arch), "architectures")
    model_type = data.get("model_type") or source.get("model_type")
    if isinstance(model_type, str):
        put("model_type", model_type, "model_type")
    name = data.get("_name_or_path") or data.get("name_or_path")
    if isinstance(name, str) and name:
        values["model.name"] = name.rstrip("/").split("/")[-1]
    elif isinstance(model_type, str):
        values["model.name"] = model_type
    types = {str(model_type), str(source.get("model_type"))}
    if deepseek_native:
        _deepseek_native(values, put, source, notes)
    else:
        _gpt_style(values, prov, put, source, prefix, path, str(source.get("model_type") or model_type), notes)
    if types & {"llama4", "llama4_text"}:
        _llama4(values, put, source, prefix, path)
    _moe(values, put, source, path, notes)
    if types & _QK_NORM_TYPES:
        put("qk_norm", True, None, "Qwen3-family models have q/k RMSNorm")
    elif source.get("use_qk_norm") is True and not types & {"llama4", "llama4_text"}:
        put("qk_norm", True, prefix + "use_qk_norm")  # GLM-4.5; Llama 4's is a weightless L2 norm, not priced
    if types & _HYBRID_TYPES:
        _hybrid(values, put, source, prefix)
    elif types & _MAMBA2_TYPES:
        _mamba2_hybrid(values, put, source, prefix, path)
    elif isinstance(source.get("layer_types"), list):
        put("layer_types", tuple(str(x) for x in source["layer_types"]), prefix + "layer_types")
    _layer_pattern(values, put, source, prefix)
    if types & _LLAMA_TYPES and "model.ffn_hidden_size" not in values:
        notes.append("intermediate_size missing")
    quant = data.get("quantization_config") or source.get("quantization_config")
    if isinstance(quant, dict) or str(source.get("dtype", "")).lower().startswith("fp8"):
        method = quant.get("quant_method") if isinstance(quant, dict) else source.get("dtype")
        notes.append(f"the checkpoint is stored as {method}; training is priced with the plan's byte widths")
    vision = data.get("vision_config")
    if isinstance(vision, dict):
        spec = _vision(vision, values.get("model.hidden_size"), str(model_type), notes, path)
        if spec:
            values["model.vision"] = spec
            prov["model.vision"] = Provenance("file", path=path, key="vision_config")
    return values, prov, notes


def unknown_hf_keys(data: dict[str, Any], path: str) -> list[EstimateWarning]:
    """W-KEY-UNKNOWN for keys of the config (and of its text_config / vision_config) that no transformers
    configuration class, no model shipping its own code and no DeepSeek inference config takes."""
    own = catalogue("hf")
    known = {**catalogue("hf_config_keys").known(""), **own.known("")}
    known.update({key: name for key, name in (*_HF_KEYS, *_DEEPSEEK_KEYS)})
    found = unknown_names(path, "", data, known, cat=own)
    for section in ("text_config", "vision_config"):
        if isinstance(data.get(section), dict):
            found += unknown_names(path, section, data[section], known, cat=own)
    return found


def unmodelled_features(data: dict[str, Any], path: str) -> list[EstimateWarning]:
    """W-MODEL-FEATURE for every architecture feature the config states that SAPP does not model
    (``keys/hf_features.yaml``: sliding windows, attention sinks …), with how it is priced instead."""
    table = hf_features()
    source = data["text_config"] if isinstance(data.get("text_config"), dict) and "hidden_size" not in data \
        else data
    kinds = [str(k) for k in source.get("layer_types") or ()] if isinstance(source.get("layer_types"), list) else []
    found: list[tuple[str, str]] = []
    for key, entry in table["keys"].items():
        value = source.get(key)
        if value is None or value is False or entry.get("said_by_layer_type") in kinds or any(
                source.get(switch) == off for switch, off in (entry.get("off_when") or {}).items()):
            continue
        found.append((entry["feature"].format(value=value), entry["priced"]))
    model_type = str(source.get("model_type") or data.get("model_type") or "")
    for kind, entry in table["layer_types"].items():
        if kind in kinds and not claims_layer_type(kind, model_type):  # a layer kind as data prices it
            found.append((entry["feature"].format(count=kinds.count(kind), total=len(kinds),
                                                  sliding_window=source.get("sliding_window")), entry["priced"]))
    found += [(entry["feature"], entry["priced"]) for entry in table["model_types"].get(model_type, ())]
    return [EstimateWarning("W-MODEL-FEATURE", msg("W-MODEL-FEATURE", path=path, feature=feature, priced=priced))
            for feature, priced in found]


@cache
def hf_features() -> dict[str, Any]:
    return load_data((Path(__file__).with_name("keys") / "hf_features.yaml").read_text(encoding="utf-8"))


def _int(value: Any, path: str, key: str | None, minimum: int = 0, maximum: int = 1 << 40) -> int:
    """An integer in [minimum, maximum], else a ConfigError naming the key."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (isinstance(value, float) and not value.is_integer()):
        raise ConfigError(msg("fields.expected-integer-got", value=value), path=path, key=key)
    number = int(value)
    if number < minimum:
        raise ConfigError(msg("hf.must-least-got", minimum=minimum, number=number), path=path, key=key)
    if number > maximum:
        raise ConfigError(msg("hf.implausibly-large-limit", number=number, maximum=maximum), path=path, key=key)
    return number


def _deepseek_native(values: dict[str, Any], put: Any, source: dict[str, Any], notes: list[Text]) -> None:
    """DeepSeek's inference format: MLA everywhere, no MTP module stated, fp8 weights."""
    values.setdefault("model.name", "deepseek")
    put("family", "deepseek", None, "DeepSeek inference config")
    if int(values.get("model.num_experts") or 0) and "model.first_k_dense" not in values:
        put("first_k_dense", 1, None, "DeepSeek inference default n_dense_layers = 1")
    notes.append("DeepSeek inference config: no MTP modules are stated (set model.mtp_layers if trained)")


def _gpt_style(values: dict[str, Any], prov: dict[str, Provenance], put: Any, source: dict[str, Any], prefix: str,
               path: str, model_type: str, notes: list[Text]) -> None:
    """What GPT-2-style and OPT configs leave to transformers' code: the MLP width when ``n_inner`` is null
    (4·n_embd in GPT2MLP, GPT-J, CodeGen, GPT-BigCode), the learned position table, the tied output layer, and
    OPT's ``word_embed_proj_dim`` projections (not priced: said)."""
    hidden = values.get("model.hidden_size")
    read_as = prov["model.hidden_size"].key if "model.hidden_size" in prov else None
    if read_as == prefix + "n_embd" and "model.ffn_hidden_size" not in values and isinstance(hidden, int) \
            and not isinstance(hidden, bool):
        put("ffn_hidden_size", 4 * hidden, None, "n_inner not given: 4·n_embd, as transformers builds GPT-2-style MLPs")
    if model_type in _LEARNED_POSITIONS:
        key, offset = _LEARNED_POSITIONS[model_type]
        if source.get(key) is not None:
            rows = _int(source[key], path, prefix + key, 1, MAX_SEQ_LENGTH) + offset
            if offset:
                put("learned_positions", rows, None, f"{key} + {offset} rows (OPTLearnedPositionalEmbedding)")
            else:
                put("learned_positions", rows, prefix + key)
    if model_type in _TIED_BY_DEFAULT and source.get("tie_word_embeddings") is None:
        put("tie_embeddings", True, None, f"tie_word_embeddings absent: transformers' {model_type} default is true")
    projection = source.get("word_embed_proj_dim")
    if model_type == "opt" and projection is not None and projection != hidden:
        notes.append(msg("hf.opt-projection", width=projection, hidden=hidden))


def _llama4(values: dict[str, Any], put: Any, source: dict[str, Any], prefix: str, path: str) -> None:
    """Llama 4 (transformers' Llama4TextConfig): layer i is MoE when (i + 1) % interleave_moe_layer_step == 0;
    a MoE layer adds one shared expert of ``intermediate_size``; dense layers use ``intermediate_size_mlp``."""
    if not values.get("model.num_experts"):
        return
    step = _int(source.get("interleave_moe_layer_step", 1), path, prefix + "interleave_moe_layer_step", 1, MAX_LAYERS)
    expert = values.get("model.ffn_hidden_size")
    put("moe_ffn_hidden_size", expert, prefix + "intermediate_size")
    put("num_shared_experts", 1, None, "Llama 4 MoE layers have one shared expert")
    put("shared_ffn_hidden_size", expert, prefix + "intermediate_size")
    if source.get("intermediate_size_mlp") is not None:
        put("ffn_hidden_size", source["intermediate_size_mlp"], prefix + "intermediate_size_mlp")
    if step > 1:
        put("first_k_dense", step - 1, None, "interleave_moe_layer_step: the first MoE layer")
        put("moe_layer_freq", step, prefix + "interleave_moe_layer_step")


def _moe(values: dict[str, Any], put: Any, source: dict[str, Any], path: str, notes: list[Text]) -> None:
    experts = values.get("model.num_experts")
    if not isinstance(experts, int) or isinstance(experts, bool) or experts <= 0:
        for name in ("num_experts", "experts_per_token", "num_shared_experts", "moe_ffn_hidden_size",
                     "shared_ffn_hidden_size", "first_k_dense", "moe_layer_freq"):
            values.pop(f"model.{name}", None)
        return
    if "model.moe_ffn_hidden_size" not in values and values.get("model.ffn_hidden_size"):
        put("moe_ffn_hidden_size", values["model.ffn_hidden_size"], None,
            "no moe_intermediate_size: experts use intermediate_size (Mixtral)")
    if source.get("shared_expert_intermediate_size") and "model.num_shared_experts" not in values:
        put("num_shared_experts", 1, None, "one gated shared expert (shared_expert_intermediate_size)")
        put("shared_expert_gate", True, None, "Qwen-MoE shared expert gate")
    if isinstance(values.get("model.moe_layer_freq"), list):
        raise ConfigError(msg("hf.moe_layer_freq-list-supported"),
                          path=path, key="moe_layer_freq")
    if "model.moe_layer_freq" in values:
        values["model.moe_layer_freq"] = _int(values["model.moe_layer_freq"], path, "moe_layer_freq", 1, MAX_LAYERS)
    if "decoder_sparse_step" in source:
        step = source.get("decoder_sparse_step") or 1
        if step > 1:
            notes.append(f"decoder_sparse_step {step}: layers {step - 1}, {2 * step - 1}, … are MoE")


def _hybrid(values: dict[str, Any], put: Any, source: dict[str, Any], prefix: str) -> None:
    """Qwen3-Next / Qwen3.5: gated full attention every ``full_attention_interval`` layers, gated-delta linear
    attention elsewhere (HF default interval 4)."""
    n = values.get("model.num_layers")
    if isinstance(source.get("layer_types"), list):
        put("layer_types", tuple(str(x) for x in source["layer_types"]), prefix + "layer_types")
    elif isinstance(n, int):
        interval = int(source.get("full_attention_interval") or 4)
        kinds = tuple("linear_attention" if (i + 1) % interval else "full_attention" for i in range(n))
        put("layer_types", kinds, None, f"full attention every {interval} layers (full_attention_interval)")
    if "model.output_gate" not in values:
        put("output_gate", True, None, "gated attention (Qwen3-Next / Qwen3.5)")


def _mamba2_hybrid(values: dict[str, Any], put: Any, source: dict[str, Any], prefix: str, path: str) -> None:
    """IBM Granite 4.0-H (transformers' GraniteMoeHybridConfig): Mamba-2 layers and attention layers by
    ``layer_types`` (``layers_block_type`` in older files; ``mamba``/``attention``, or ``linear_attention``/
    ``full_attention`` as transformers now writes them; all Mamba-2 when absent, its default); every layer has the
    ``shared_mlp`` FFN of ``shared_intermediate_size`` — the dense FFN, or one shared expert beside the routed
    experts (``num_local_experts`` of ``intermediate_size``). Mamba-2 defaults are transformers'."""
    key = "layer_types" if isinstance(source.get("layer_types"), list) else "layers_block_type"
    n = values.get("model.num_layers")
    spelled = {"linear_attention": "mamba", "attention": "full_attention"}
    if isinstance(source.get(key), list):
        put("layer_types", tuple(spelled.get(str(x), str(x)) for x in source[key]), prefix + key)
    elif isinstance(n, int):
        put("layer_types", ("mamba",) * n, None, "no layer_types: every layer is Mamba-2 (transformers' default)")
    for name, default in (("mamba_num_heads", 128), ("mamba_state_dim", 256), ("mamba_num_groups", 1),
                          ("mamba_conv_kernel", 4), ("mamba_conv_bias", True), ("mamba_proj_bias", False)):
        if f"model.{name}" not in values:
            put(name, default, None, f"transformers' GraniteMoeHybridConfig default {name} = {default}")
    heads = values["model.mamba_num_heads"] = _int(values["model.mamba_num_heads"], path, prefix + "mamba_n_heads", 1)
    head_dim = source.get("mamba_d_head", "auto")
    if head_dim in (None, "auto"):
        expand = _int(source.get("mamba_expand", 2), path, prefix + "mamba_expand", 1, 1024)
        hidden = values.get("model.hidden_size")
        if isinstance(hidden, int) and not isinstance(hidden, bool):
            put("mamba_head_dim", expand * hidden // heads, None, "mamba_d_head auto: mamba_expand·hidden_size / "
                "mamba_n_heads")
    else:
        put("mamba_head_dim", _int(head_dim, path, prefix + "mamba_d_head", 1), prefix + "mamba_d_head")
    shared = source.get("shared_intermediate_size")
    if shared is not None:
        if values.get("model.num_experts"):
            put("num_shared_experts", 1, None, "Granite's shared_mlp is a shared expert beside the routed ones")
            put("shared_ffn_hidden_size", shared, prefix + "shared_intermediate_size")
        else:
            put("ffn_hidden_size", shared, prefix + "shared_intermediate_size")


def _layer_pattern(values: dict[str, Any], put: Any, source: dict[str, Any], prefix: str) -> None:
    """Qwen-MoE ``decoder_sparse_step`` / ``mlp_only_layers`` and DeepSeek ``moe_layer_freq`` placements that
    first_k_dense + moe_layer_freq cannot say are written as explicit layer groups."""
    n = values.get("model.num_layers")
    if not values.get("model.num_experts") or not isinstance(n, int) or n <= 0 or n > 100_000:
        return
    step = source.get("decoder_sparse_step")
    only = source.get("mlp_only_layers") or []
    first = int(values.get("model.first_k_dense") or 0)
    freq = values.get("model.moe_layer_freq") or 1
    if isinstance(step, int) and step >= 1:
        moe = [i not in only and (i + 1) % step == 0 for i in range(n)]
    else:
        moe = [i >= first and i % max(1, int(freq)) == 0 for i in range(n)]
    implied = [i >= first and (freq <= 1 or (i - first) % freq == 0) for i in range(n)]
    if moe == implied:
        return
    if isinstance(step, int) and step > 1 and not only:
        put("first_k_dense", step - 1, None, "decoder_sparse_step: first MoE layer")
        put("moe_layer_freq", step, prefix + "decoder_sparse_step")
        return
    linear = values.get("model.layer_types") or ()
    kinds = [("lin_" if i < len(linear) and str(linear[i]).startswith("linear") else "") +
             ("moe" if moe[i] else "dense") for i in range(n)]
    groups: list[dict[str, Any]] = []
    for kind in kinds:
        if groups and groups[-1]["kind"] == kind:
            groups[-1]["count"] += 1
        else:
            groups.append({"kind": kind, "count": 1})
    mtp = values.get("model.mtp_layers")
    if isinstance(mtp, int) and mtp > 0:
        groups.append({"kind": "moe", "count": mtp, "is_mtp": True})
    put("layers", groups, None, "explicit layer groups (mlp_only_layers / decoder_sparse_step / moe_layer_freq)")


def _vision(v: dict[str, Any], lm_hidden: Any, model_type: str, notes: list[Text],
            path: str) -> dict[str, Any] | None:
    """VisionSpec fields: Qwen2-VL (``embed_dim`` tower, ``hidden_size`` = merger output, ``mlp_ratio``),
    Qwen2.5-VL (gated SiLU FFN, RMSNorm, ``out_hidden_size``), Qwen3-VL / Qwen3.5 (GeLU FFN,
    ``num_position_embeddings``)."""
    def field(key: str, default: int | None, *alternatives: str) -> int | None:
        for name in (key, *alternatives):
            if v.get(name) is not None:
                return _int(v[name], path, f"vision_config.{name}", 1, MAX_LAYERS * 1000)
        return default

    depth = field("depth", None, "num_hidden_layers")
    if "embed_dim" in v:  # Qwen2-VL: hidden_size is the merger's output width
        width = field("embed_dim", None)
        ratio = v.get("mlp_ratio") or 4
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1024:
            raise ConfigError(msg("hf.mlp_ratio-must-number", ratio=ratio), path=path,
                              key="vision_config.mlp_ratio")
        ffn = int((width or 0) * ratio)
        out = field("hidden_size", None) if v.get("hidden_size") != width else lm_hidden
    else:
        width = field("hidden_size", None)
        ffn = field("intermediate_size", 4 * (width or 0))
        out = field("out_hidden_size", None) or lm_hidden
    if not depth or not width:
        return None
    if v.get("deepstack_visual_indexes"):
        notes.append("vision deepstack mergers are not priced (a few small MLPs)")
    gated = str(v.get("hidden_act", "")).lower() in ("silu", "swiglu")
    return {
        "num_layers": depth, "hidden_size": width, "ffn_hidden_size": ffn,
        "num_attention_heads": field("num_heads", 16, "num_attention_heads"),
        "patch_size": field("patch_size", 14), "in_channels": field("in_chans", 3, "in_channels"),
        "temporal_patch_size": field("temporal_patch_size", 2), "spatial_merge_size": field("spatial_merge_size", 2),
        "out_hidden_size": out if isinstance(out, int) and not isinstance(out, bool) and out > 0 else None,
        "gated_ffn": gated,
        "norm": "rms" if model_type.startswith("qwen2_5_vl") or "rms" in str(v.get("norm_type", "")).lower()
        else "layer",
        "num_position_embeddings": field("num_position_embeddings", None),
    }
