"""Model shapes from a Hugging Face ``config.json`` or a DeepSeek inference config (spec §11.5)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..parsed import Provenance

# HF key -> canonical model field (first present wins for each field)
_HF_KEYS: tuple[tuple[str, str], ...] = (
    ("hidden_size", "hidden_size"), ("intermediate_size", "ffn_hidden_size"),
    ("num_hidden_layers", "num_layers"), ("num_attention_heads", "num_attention_heads"),
    ("num_key_value_heads", "num_kv_heads"), ("head_dim", "head_dim"), ("vocab_size", "vocab_size"),
    ("tie_word_embeddings", "tie_embeddings"), ("q_lora_rank", "q_lora_rank"),
    ("kv_lora_rank", "kv_lora_rank"), ("qk_rope_head_dim", "qk_rope_head_dim"),
    ("qk_nope_head_dim", "head_dim"), ("v_head_dim", "v_head_dim"),
    ("n_routed_experts", "num_experts"), ("num_experts", "num_experts"), ("num_local_experts", "num_experts"),
    ("num_experts_per_tok", "experts_per_token"), ("n_shared_experts", "num_shared_experts"),
    ("moe_intermediate_size", "moe_ffn_hidden_size"),
    ("shared_expert_intermediate_size", "shared_ffn_hidden_size"),
    ("first_k_dense_replace", "first_k_dense"), ("moe_layer_freq", "moe_layer_freq"),
    ("num_nextn_predict_layers", "mtp_layers"), ("layer_types", "layer_types"),
    ("linear_num_key_heads", "linear_num_key_heads"), ("linear_key_head_dim", "linear_key_head_dim"),
    ("linear_num_value_heads", "linear_num_value_heads"), ("linear_value_head_dim", "linear_value_head_dim"),
    ("linear_conv_kernel_dim", "linear_conv_kernel"), ("attention_bias", "qkv_bias"),
    ("mlp_bias", "mlp_bias"), ("attn_output_gate", "output_gate"), ("model_type", "model_type"),
)
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


def looks_like_hf(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    return ("hidden_size" in data and ("num_hidden_layers" in data or "text_config" in data)) or \
        ("dim" in data and "n_layers" in data and "n_heads" in data) or \
        isinstance(data.get("text_config"), dict)


def read_hf(data: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, Provenance], list[str]]:
    """Model fields with their provenance, and notes for the user."""
    notes: list[str] = []
    source = data
    prefix = ""
    if isinstance(data.get("text_config"), dict) and "hidden_size" not in data:
        source, prefix = data["text_config"], "text_config."
    deepseek_native = "dim" in source and "n_layers" in source
    table = _DEEPSEEK_KEYS if deepseek_native else _HF_KEYS
    values: dict[str, Any] = {}
    prov: dict[str, Provenance] = {}
    for key, name in table:
        if key in source and f"model.{name}" not in values and source[key] is not None:
            values[f"model.{name}"] = source[key]
            prov[f"model.{name}"] = Provenance("file", path=path, key=prefix + key, raw=source[key])
    arch = data.get("architectures") or source.get("architectures")
    if isinstance(arch, list) and arch:
        values["model.hf_architectures"] = tuple(str(a) for a in arch)
        prov["model.hf_architectures"] = Provenance("file", path=path, key="architectures", raw=arch)
    if "model.model_type" not in values and isinstance(data.get("model_type"), str):
        values["model.model_type"] = data["model_type"]
    name = data.get("_name_or_path") or data.get("name_or_path")
    if isinstance(name, str) and name:
        values["model.name"] = name.rstrip("/").split("/")[-1]
    elif values.get("model.model_type"):
        values["model.name"] = str(values["model.model_type"])
    if deepseek_native:
        values.setdefault("model.name", "deepseek")
        values["model.family"] = "deepseek"
        if int(values.get("model.num_experts") or 0) and values.get("model.num_experts") and \
                "model.first_k_dense" not in values:
            values["model.first_k_dense"] = 1
        notes.append("DeepSeek inference config: no MTP modules are stated (set model.mtp_layers if trained)")
    if values.get("model.model_type") in ("qwen3_moe", "qwen2_moe") and source.get("decoder_sparse_step", 1) != 1:
        values["model.moe_layer_freq"] = int(source["decoder_sparse_step"])
    if source.get("shared_expert_intermediate_size") and "model.num_shared_experts" not in values:
        values["model.num_shared_experts"] = 1
        values["model.shared_expert_gate"] = True
    if values.get("model.model_type") in ("qwen3", "qwen3_moe", "qwen3_next", "qwen3_5", "qwen3_5_moe"):
        values["model.qk_norm"] = True
        prov["model.qk_norm"] = Provenance("derived", key="Qwen3 family has q/k RMSNorm")
    if "layer_types" in source and isinstance(source["layer_types"], list):
        values["model.layer_types"] = tuple(str(x) for x in source["layer_types"])
    if values.get("model.model_type") in _LLAMA_TYPES and "model.ffn_hidden_size" not in values:
        notes.append("intermediate_size missing")
    if isinstance(values.get("model.moe_layer_freq"), list):
        raise ConfigError("moe_layer_freq as a list is not supported; give model.layers explicitly",
                          path=path, key="moe_layer_freq")
    vision = data.get("vision_config")
    if isinstance(vision, dict) and vision.get("depth") and vision.get("hidden_size"):
        values["model.vision"] = {
            "num_layers": int(vision["depth"]), "hidden_size": int(vision["hidden_size"]),
            "ffn_hidden_size": int(vision.get("intermediate_size") or 4 * vision["hidden_size"]),
            "num_attention_heads": int(vision.get("num_heads") or vision.get("num_attention_heads") or 16),
            "patch_size": int(vision.get("patch_size", 14)), "in_channels": int(vision.get("in_chans", 3)),
            "temporal_patch_size": int(vision.get("temporal_patch_size", 2)),
            "spatial_merge_size": int(vision.get("spatial_merge_size", 2)),
            "out_hidden_size": int(vision.get("out_hidden_size") or values.get("model.hidden_size") or 0) or None,
            "gated_ffn": vision.get("hidden_act") in ("silu", "swiglu"),
            "norm": "rms" if "rms" in str(vision.get("norm_type", "layer")).lower() else "layer",
        }
        prov["model.vision"] = Provenance("file", path=path, key="vision_config")
    return values, prov, notes
