"""The model half of a MindFormers config (docs/model.md#frameworks): dimensions in either dialect (legacy
``num_layers``, ``num_heads``, ``n_kv_heads``, a ``moe_config:`` block; mcore ``num_hidden_layers``,
``num_attention_heads``, ``num_key_value_heads``, MoE keys inside ``model_config``), the model's flags and its
identity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..messages import msg
from ..warnings import Assumption
from .mindformers_schema import MAX_DEGREE, MAX_DIM, MAX_VOCAB, MC, llama_ffn
from .mindformers_source import MISSING, MindFormersSource
from .support import MAX_LAYERS


class ModelReader(MindFormersSource):
    """Reads ``model.model_config`` (and a legacy ``moe_config``) into ``model.*`` values."""

    def read_model(self) -> None:
        """Dimensions in either dialect (legacy names first, then the mcore / Hugging Face ones)."""
        for field, names, hi in (("hidden_size", ("hidden_size",), MAX_DIM),
                                 ("num_layers", ("num_layers", "num_hidden_layers"), MAX_LAYERS),
                                 ("num_attention_heads", ("num_heads", "num_attention_heads"), MAX_DIM),
                                 ("num_kv_heads", ("n_kv_heads", "num_key_value_heads", "num_query_groups"),
                                  MAX_DIM),
                                 ("vocab_size", ("vocab_size",), MAX_VOCAB),
                                 ("q_lora_rank", ("q_lora_rank",), MAX_DIM),
                                 ("kv_lora_rank", ("kv_lora_rank",), MAX_DIM),
                                 ("qk_rope_head_dim", ("qk_rope_head_dim",), MAX_DIM),
                                 ("v_head_dim", ("v_head_dim",), MAX_DIM)):
            keys, value = self.first(MC, names)
            if value is not MISSING:
                lo = 0 if field in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim") else 1
                self.put_at(f"model.{field}", self.as_int(keys, value, lo, hi), keys)
        mla = bool(self.values.get("model.kv_lora_rank"))
        keys, value = self.first(MC, ("qk_nope_head_dim", "head_dim", "kv_channels") if mla else
                                 ("head_dim", "kv_channels"))
        if value is not MISSING:
            self.put_at("model.head_dim", self.as_int(keys, value, 1, MAX_DIM), keys)
        self.read_ffn()
        self.read_moe()
        self.read_model_flags()
        self.read_identity()

    def read_model_flags(self) -> None:
        """MTP depth, q/k norm, tied embeddings, biases, gated FFN."""
        keys, value = self.first(MC, ("mtp_depth", "num_nextn_predict_layers", "mtp_num_layers"))
        if value is not MISSING:
            mtp = self.as_int(keys, value, 0, 64)
            self.put_at("model.mtp_layers", mtp, keys)
            if mtp and self.get(("use_legacy",)) is False:
                # mcore models (MindFormers r1.7.0+, commit b14a730): LayerSetting splits num_layers alone and the
                # MTP layer joins the last transformer layer's stage
                self.derive("strategy.mtp_in_offset", False, "MindFormers mcore models (use_legacy: False) place "
                            "MTP layers with the last layer, outside the offsets")
            elif mtp:
                self.derive("strategy.mtp_in_offset", True, "MindFormers counts MTP layers in the offsets")
        keys, value = self.first(MC, ("qk_layernorm", "use_qk_norm"))
        model_type = self.str_at((*MC, "model_type"))
        if value is not MISSING:
            self.put_at("model.qk_norm", self.bool_at(keys), keys)
        elif model_type in ("qwen3", "qwen3_moe"):
            self.derive("model.qk_norm", True, f"model_type {model_type}: Qwen3 has q/k RMSNorm")
        untie = self.bool_at((*MC, "untie_embeddings_and_output_weights"))
        tie = self.bool_at((*MC, "tie_word_embeddings"))
        if untie is not None:
            self.put_at("model.tie_embeddings", not untie, (*MC, "untie_embeddings_and_output_weights"))
        elif tie is not None:
            self.put_at("model.tie_embeddings", tie, (*MC, "tie_word_embeddings"))
        keys, value = self.first(MC, ("qkv_has_bias", "add_qkv_bias", "attention_bias"))
        if value is not MISSING:
            self.put_at("model.qkv_bias", self.bool_at(keys), keys)
        linear_bias = self.bool_at((*MC, "add_bias_linear"))
        if linear_bias is not None:
            for field in ("model.out_bias", "model.mlp_bias"):
                self.put_at(field, linear_bias, (*MC, "add_bias_linear"))
            self.values.setdefault("model.qkv_bias", linear_bias)
            self.provenance.setdefault("model.qkv_bias", self.provenance["model.out_bias"])
        gated = self.bool_at((*MC, "gated_linear_unit"))
        if gated is not None:
            self.put_at("model.gated_ffn", gated, (*MC, "gated_linear_unit"))

    def read_identity(self) -> None:
        """Name, model_type and architectures: they drive family detection (deepseekV3, llama2_7b …)."""
        model_type = self.str_at((*MC, "model_type"))
        name = self.str_at(("trainer", "model_name"))
        if name:
            self.put_at("model.name", name, ("trainer", "model_name"))
        else:
            self.derive("model.name", model_type or self.str_at((*MC, "type")) or Path(self.path).stem,
                        "model_type / model_config.type / file name")
        if model_type:
            self.put_at("model.model_type", model_type, (*MC, "model_type"))
        arch = self.get((*MC, "architectures"))
        if isinstance(arch, str):
            arch = [arch]
        if isinstance(arch, list) and all(isinstance(a, str) for a in arch) and arch:
            self.put_at("model.hf_architectures", tuple(arch), (*MC, "architectures"))

    def read_ffn(self) -> None:
        keys, value = self.first(MC, ("intermediate_size", "ffn_hidden_size"))
        if value is not MISSING:
            self.put_at("model.ffn_hidden_size", self.as_int(keys, value, 1, MAX_DIM), keys)
            return
        hidden = self.values.get("model.hidden_size")
        if hidden is None:
            return
        multiple = self.int_at((*MC, "multiple_of"), 1, MAX_DIM)
        multiplier = self.float_at((*MC, "ffn_dim_multiplier"))
        if multiplier is not None and not 0 < multiplier <= 64:
            raise self.fail((*MC, "ffn_dim_multiplier"), msg("mindformers_model.out-range-expected",
                                                             multiplier=multiplier))
        if multiple is None:
            multiple = 256
            self.assumptions.append(Assumption("model.ffn_hidden_size", "multiple_of 256",
                                               msg("mindformers_model.mindformers-llamaconfig-default")))
        hff = llama_ffn(hidden, multiple, multiplier)
        fdm = "—" if multiplier is None else f"{multiplier:g}"
        self.derive("model.ffn_hidden_size", hff, f"Llama rule from hidden_size {hidden}, multiple_of {multiple}, "
                                                  f"ffn_dim_multiplier {fdm} (no intermediate_size)")

    def moe_block(self) -> tuple[tuple[str, ...], dict[str, Any]] | None:
        for keys in (("moe_config",), (*MC, "moe_config")):
            block = self.get(keys)
            if isinstance(block, dict):
                return keys, block
            if block is not MISSING:
                raise self.fail(keys, msg("mindformers_model.expected-mapping-moe", block=block))
        return None

    def read_moe(self) -> None:
        legacy = self.moe_block()
        if legacy is not None:
            base = legacy[0]
            experts = self.int_at((*base, "expert_num"), 1, MAX_DIM)
            if experts and experts > 1:
                self.put_at("model.num_experts", experts, (*base, "expert_num"))
                self.put_or_default("model.experts_per_token", self.int_at((*base, "num_experts_chosen"), 1, MAX_DIM),
                                    (*base, "num_experts_chosen"), 1,
                                    msg("mindformers_model.moe_config-num_experts_chosen-absent"))
                shared = self.int_at((*base, "shared_expert_num"), 0, MAX_DIM)
                if shared is not None:
                    self.put_at("model.num_shared_experts", shared, (*base, "shared_expert_num"))
                width = self.int_at((*base, "moe_intermediate_size"), 1, MAX_DIM)
                if width is not None:
                    self.put_at("model.moe_ffn_hidden_size", width, (*base, "moe_intermediate_size"))
                elif self.values.get("model.ffn_hidden_size"):
                    self.derive("model.moe_ffn_hidden_size", self.values["model.ffn_hidden_size"],
                                "no moe_intermediate_size: experts use the dense FFN width")
                self.put_or_default("model.capacity_factor", self.float_at((*base, "capacity_factor")),
                                    (*base, "capacity_factor"), 1.1,
                                    msg("mindformers_model.moe_config-capacity_factor-absent"))
                first = self.int_at((*base, "first_k_dense_replace"), 0, MAX_LAYERS)
                if first is not None:
                    self.put_at("model.first_k_dense", first, (*base, "first_k_dense_replace"))
                etp = self.int_at((*base, "expert_model_parallel"), 1, MAX_DEGREE)
                if etp is not None:  # stated, 1 included: the experts' FFN split (P-MF-ETP)
                    self.put_at("strategy.etp", etp, (*base, "expert_model_parallel"))
                gmm = self.bool_at((*base, "use_gmm"))
                if gmm is not None:
                    self.put_at("strategy.grouped_gemm", gmm, (*base, "use_gmm"))
                return
        keys, value = self.first(MC, ("n_routed_experts", "num_experts", "num_local_experts"))
        if value is MISSING:
            return
        experts = self.as_int(keys, value, 0, MAX_DIM)
        if experts <= 1:
            return
        self.put_at("model.num_experts", experts, keys)
        for field, names, lo, hi in (("experts_per_token", ("num_experts_per_tok", "moe_router_topk"), 1, MAX_DIM),
                                     ("num_shared_experts", ("n_shared_experts",), 0, MAX_DIM),
                                     ("moe_ffn_hidden_size", ("moe_intermediate_size", "moe_ffn_hidden_size"), 1,
                                      MAX_DIM),
                                     ("shared_ffn_hidden_size", ("moe_shared_expert_intermediate_size",
                                                                 "shared_expert_intermediate_size"), 1, MAX_DIM),
                                     ("first_k_dense", ("first_k_dense_replace",), 0, MAX_LAYERS),
                                     ("moe_layer_freq", ("moe_layer_freq",), 1, MAX_LAYERS)):
            fkeys, fvalue = self.first(MC, names)
            if fvalue is not MISSING:
                if field == "moe_layer_freq" and isinstance(fvalue, list):
                    raise self.fail(fkeys, msg("mindformers_model.moe_layer_freq-list-supported"))
                self.put_at(f"model.{field}", self.as_int(fkeys, fvalue, lo, hi), fkeys)
        cap = self.float_at((*MC, "moe_expert_capacity_factor"))
        if cap is not None:
            self.put_at("model.capacity_factor", cap, (*MC, "moe_expert_capacity_factor"))
        gmm = self.bool_at((*MC, "moe_grouped_gemm"))
        if gmm is not None:
            self.put_at("strategy.grouped_gemm", gmm, (*MC, "moe_grouped_gemm"))
