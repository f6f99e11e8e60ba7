"""MindFormers training YAML (mindspore-lab/mindformers): reader and writer (spec §11.1, §11.6).

Reading follows what MindFormers itself does with the file:

- values are the PyYAML (YAML 1.1) result, the way MindFormers loads them; ``base_config:`` includes are
  resolved from files next to the config and merged under it (MindFormers ``MindFormerConfig._file2dict``);
- both model dialects are understood: legacy (``num_layers``, ``num_heads``, ``n_kv_heads``,
  ``param_init_type``, a ``moe_config:`` block) and mcore (``num_hidden_layers``, ``num_attention_heads``,
  ``num_key_value_heads``, ``head_dim``, ``params_dtype``, MoE keys inside ``model_config``);
- the global batch is G = batch_size·d·micro_batch_num·gradient_accumulation_steps·micro_batch_interleave_num:
  with ``pipeline_stage`` > 1 the micro-batches per flush are ``micro_batch_num`` and the flushes per step
  ``gradient_accumulation_steps``; with one stage ``micro_batch_num`` is ignored and the accumulation steps are
  the micro-batches; a micro-batch holds batch_size·micro_batch_interleave_num sequences (its interleaved
  parts are all in memory);
- offsets are kept as written (int, list[p], list[vp][p]) with the MTP modules counted (``mtp_in_offset``);
  recompute settings are bools, per-stage lists, per-chunk lists or dicts of op regexes mapped by keyword onto
  the §6.3 switches.

Every value carries a ``Provenance`` naming its key; defaults the reader chose are ``Reading.assumptions``.
Writing (``write``) lives in ``mindformers_write``: it patches only the strategy keys of the user's text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..parsed import ParsedConfig, Provenance, SourceFile
from ..strategy import Strategy
from ..units import parse_size
from ..warnings import Assumption, EstimateWarning
from . import Reading
from .common import dig, load_yaml, read_text

FORMAT = "mindformers"

MC = ("model", "model_config")
PC = ("parallel_config",)
RC = ("recompute_config",)
RUN = ("runner_config",)
PAR = ("parallel",)
PIPE = ("parallel", "pipeline_config")
POC = ("parallel", "parallel_optimizer_config")
DATASET_SEQ = ("train_dataset", "data_loader", "config", "seq_length")

# Plausibility bounds: beyond them a value is a typo, and loops over layers or micro-batches would not end.
MAX_DEGREE = 1 << 16
MAX_LAYERS = 10_000
MAX_MICRO = 1 << 16
MAX_DIM = 1 << 22
MAX_VOCAB = 1 << 24
MAX_SEQ = 1 << 24
MAX_COUNT = 1 << 20

CP_ALGOS = {"colossalai_cp": "ring", "ulysses_cp": "ulysses", "hybrid_cp": "hybrid"}
SCHEDULERS = ("1f1b", "seqpipe", "seqvpp", "seqsmartvpp", "gpipe", "zero_bubble_v")
_DTYPES = {"float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2}

# §6.3: op-regex keywords of select_recompute / select_comm_recompute and the switch each one recomputes.
_SEL_KEYWORDS = (
    (re.compile(r"(?<![a-z0-9])(activate|activation|silu|gelu|mul)(?![a-z0-9])"), "act"),
    (re.compile(r"norm(?![a-z0-9])"), "norm_out"),
    (re.compile(r"(?<![a-z0-9])(flash_attention|softmax)(?![a-z0-9])"), "core"),
)
_COMM_KEYWORDS = re.compile(r"(?<![a-z0-9])(w_qkv|w_gate_hidden|reshape)(?![a-z0-9])|norm(?![a-z0-9])")
_DEVICE_COMMENT = re.compile(r"device[ _]?num(?:ber)?\s*(?:=|:|is)\s*(\d+)", re.IGNORECASE)
_GBS_COMMENT = re.compile(r"(?:global[ _]batch(?:[ _]size)?|\bgbs)\b.*[=:]\s*(\d+)\b(?!\s*[x×*·+/-])",
                          re.IGNORECASE)

_MISSING = object()


# ------------------------------------------------------------------------------------------- detect
def detect(data: Any, path: str) -> bool:
    """A MindFormers config has ``model.model_config`` and/or the ``parallel_config`` / ``runner_config`` /
    ``recompute_config`` sections (HyperParallel YAML has ``train:`` and ``model.config_overrides``)."""
    if not isinstance(data, dict):
        return False
    if isinstance(dig(data, *MC), dict):
        return True
    if any(isinstance(data.get(k), dict) for k in ("parallel_config", "runner_config", "recompute_config")):
        return True
    if "base_config" in data:
        return True
    return isinstance(data.get("context"), dict) and "train" not in data and any(
        k in data for k in ("trainer", "run_mode", "use_parallel", "parallel"))


# --------------------------------------------------------------------------------------- base_config
def merge_into(top: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """``top`` merged over ``base`` (nested mappings merged, everything else replaced), as MindFormers does."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_into(value, out[key])
        else:
            out[key] = value
    return out


def resolve_base(data: dict[str, Any], path: str, seen: tuple[str, ...] = ()) -> tuple[dict[str, Any],
                                                                                         list[tuple[str, Any]]]:
    """(merged data, [(base path, its merged data)]) with ``base_config:`` files resolved next to ``path``."""
    if "base_config" not in data:
        return data, []
    raw = data["base_config"]
    names = raw if isinstance(raw, list) else [raw]
    merged_base: dict[str, Any] = {}
    bases: list[tuple[str, Any]] = []
    folder = Path(path).parent
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"base_config must name one YAML file or a list of them; got {raw!r}", path=path,
                              key="base_config")
        target = folder / name
        if not target.is_file():
            raise ConfigError(f"base_config names {name!r}, which is not next to this file (looked for {target}); "
                              "MindFormers merges that file under this one and its values are needed — put it "
                              "there, or remove base_config and state its keys in this file", path=path,
                              key="base_config")
        resolved = str(target.resolve())
        if resolved in seen:
            raise ConfigError(f"base_config includes loop back to {name!r}", path=path, key="base_config")
        base_data = load_yaml(read_text(target), str(target))
        if not isinstance(base_data, dict):
            raise ConfigError("a base_config file must be a mapping of sections", path=str(target))
        sub, sub_bases = resolve_base(base_data, str(target), (*seen, resolved))
        merged_base.update(sub)
        bases.extend(sub_bases)
        bases.append((str(target), sub))
    own = {k: v for k, v in data.items() if k != "base_config"}
    return merge_into(own, merged_base), bases


# ------------------------------------------------------------------------------------------ helpers
def dtype_bytes(name: Any, key: str, path: str) -> tuple[int, bool]:
    """(bytes, is_fp8) of a MindFormers dtype name; fp8 variants are priced as 2 bytes (spec §3.4)."""
    if not isinstance(name, str):
        raise ConfigError(f"expected a dtype name such as \"bfloat16\", got {name!r}", path=path, key=key)
    text = name.strip().lower()
    for prefix in ("mstype.", "mindspore.", "ms.", "torch."):
        text = text.removeprefix(prefix)
    if text in _DTYPES:
        return _DTYPES[text], False
    if "fp8" in text or "float8" in text or text.startswith("hif8"):
        return 2, True
    raise ConfigError(f"unknown dtype {name!r}; use float32, bfloat16 or float16", path=path, key=key)


def llama_ffn(hidden: int, multiple_of: int, multiplier: float | None) -> int:
    """MindFormers ``LlamaFeedForward`` width without ``intermediate_size``: 4h, times (multiplier + 0.01)
    when given, times 2/3, rounded up to ``multiple_of`` (7B 11008, 70B with 1.3: 28672)."""
    width = 4 * hidden
    if multiplier is not None:
        width = int((multiplier + 0.01) * width)
    width = int(2 * width / 3)
    return multiple_of * ((width + multiple_of - 1) // multiple_of)


def selective_switch(pattern: str) -> str | None:
    """The §6.3 switch a ``select_recompute`` op regex recomputes, or None (not modelled)."""
    low = pattern.lower()
    for regex, switch in _SEL_KEYWORDS:
        if regex.search(low):
            return switch
    return None


def comm_switch(pattern: str) -> str | None:
    """``select_comm_recompute`` patterns recompute the SP all-gather (switch ``gather``)."""
    return "gather" if _COMM_KEYWORDS.search(pattern.lower()) else None


def comment_numbers(text: str, regex: re.Pattern[str]) -> list[tuple[int, int]]:
    """(line number, value) of every match of ``regex`` inside a ``#`` comment."""
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        hash_at = line.find("#")
        if hash_at < 0:
            continue
        for match in regex.finditer(line[hash_at:]):
            out.append((lineno, int(match.group(1))))
    return out


def _flat(offset: Any) -> list[int]:
    """Every entry of an int, list[p] or list[vp][p] offset."""
    if isinstance(offset, int):
        return [offset]
    return [x for row in offset for x in (row if isinstance(row, tuple) else (row,))]


# ------------------------------------------------------------------------------------------- reader
class _Reader:
    """Turns one merged MindFormers config into canonical values with provenance."""

    def __init__(self, text: str, path: str, data: dict[str, Any], own: dict[str, Any],
                 bases: list[tuple[str, Any]]) -> None:
        self.text, self.path, self.data, self.own, self.bases = text, path, data, own, bases
        self.values: dict[str, Any] = {}
        self.prov: dict[str, Provenance] = {}
        self.warnings: list[EstimateWarning] = []
        self.assumptions: list[Assumption] = []

    # -- raw access -----------------------------------------------------------------------------------
    def raw(self, keys: tuple[str, ...], data: Any = None) -> Any:
        cur = self.data if data is None else data
        for key in keys:
            if not isinstance(cur, dict) or key not in cur:
                return _MISSING
            cur = cur[key]
        return cur

    def origin(self, keys: tuple[str, ...]) -> str:
        """The file that states ``keys``: this one, else the last base_config file holding it."""
        if self.raw(keys, self.own) is not _MISSING:
            return self.path
        for base_path, base_data in reversed(self.bases):
            if self.raw(keys, base_data) is not _MISSING:
                return base_path
        return self.path

    def fail(self, keys: tuple[str, ...], message: str) -> ConfigError:
        return ConfigError(message, path=self.origin(keys), key=".".join(keys))

    def get(self, keys: tuple[str, ...]) -> Any:
        """The value at ``keys``, or _MISSING when absent or null; a parent that is not a mapping is an error."""
        cur: Any = self.data
        for n, key in enumerate(keys):
            if cur is None:
                return _MISSING
            if not isinstance(cur, dict):
                raise self.fail(keys[:n], f"expected a mapping of keys, got {cur!r}")
            if key not in cur:
                return _MISSING
            cur = cur[key]
        return _MISSING if cur is None else cur

    def first(self, base: tuple[str, ...], names: tuple[str, ...]) -> tuple[tuple[str, ...], Any]:
        """(keys, value) of the first of ``names`` present under ``base``; value _MISSING when none is."""
        for name in names:
            value = self.get((*base, name))
            if value is not _MISSING:
                return (*base, name), value
        return (*base, names[0]), _MISSING

    # -- typed access ---------------------------------------------------------------------------------
    def as_int(self, keys: tuple[str, ...], value: Any, lo: int, hi: int) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(keys, f"expected an integer, got {value!r}")
        if not lo <= value <= hi:
            raise self.fail(keys, f"{value} is out of range; expected {lo}..{hi}")
        return value

    def int_at(self, keys: tuple[str, ...], lo: int = 1, hi: int = MAX_DEGREE) -> int | None:
        value = self.get(keys)
        return None if value is _MISSING else self.as_int(keys, value, lo, hi)

    def bool_at(self, keys: tuple[str, ...]) -> bool | None:
        value = self.get(keys)
        if value is _MISSING:
            return None
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise self.fail(keys, f"expected True or False, got {value!r}")

    def float_at(self, keys: tuple[str, ...]) -> float | None:
        value = self.get(keys)
        if value is _MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or \
                abs(value) > 1e9:
            raise self.fail(keys, f"expected a number, got {value!r}")
        return float(value)

    def str_at(self, keys: tuple[str, ...]) -> str | None:
        value = self.get(keys)
        if value is _MISSING:
            return None
        if not isinstance(value, str):
            raise self.fail(keys, f"expected a string, got {value!r}")
        return value

    def section(self, keys: tuple[str, ...]) -> dict[str, Any]:
        value = self.get(keys)
        if value is _MISSING:
            return {}
        if not isinstance(value, dict):
            raise self.fail(keys, f"expected a mapping of keys, got {value!r}")
        return value

    # -- output ---------------------------------------------------------------------------------------
    def put(self, field: str, value: Any, keys: tuple[str, ...], raw: Any = _MISSING) -> None:
        self.values[field] = value
        shown = self.get(keys) if raw is _MISSING else raw
        self.prov[field] = Provenance("file", path=self.origin(keys), key=".".join(keys),
                                      raw=None if shown is _MISSING else shown)

    def derive(self, field: str, value: Any, why: str) -> None:
        self.values[field] = value
        self.prov[field] = Provenance("derived", path=self.path, key=why)

    def assume(self, field: str, value: Any, why: str) -> None:
        self.values[field] = value
        self.prov[field] = Provenance("default", path=self.path, key=why)
        self.assumptions.append(Assumption(field, value, why))

    def warn(self, code: str, text: str) -> None:
        self.warnings.append(EstimateWarning(code, text))

    # -- sections -------------------------------------------------------------------------------------
    def run(self, devices: int | None) -> None:
        self.section(MC)
        for keys in (PC, RC, RUN, PAR, PIPE, POC, ("context",)):
            self.section(keys)
        self.read_model()
        self.read_parallel()
        self.read_batch()
        self.read_pipeline()
        self.read_recompute()
        self.read_sharding()
        self.read_widths()
        self.read_options()
        self.check_statements(devices)

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
            if value is not _MISSING:
                lo = 0 if field in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim") else 1
                self.put(f"model.{field}", self.as_int(keys, value, lo, hi), keys)
        mla = bool(self.values.get("model.kv_lora_rank"))
        keys, value = self.first(MC, ("qk_nope_head_dim", "head_dim", "kv_channels") if mla else
                                 ("head_dim", "kv_channels"))
        if value is not _MISSING:
            self.put("model.head_dim", self.as_int(keys, value, 1, MAX_DIM), keys)
        self.read_ffn()
        self.read_moe()
        self.read_model_flags()
        self.read_identity()

    def read_model_flags(self) -> None:
        """MTP depth, q/k norm, tied embeddings, biases, gated FFN."""
        keys, value = self.first(MC, ("mtp_depth", "num_nextn_predict_layers", "mtp_num_layers"))
        if value is not _MISSING:
            mtp = self.as_int(keys, value, 0, 64)
            self.put("model.mtp_layers", mtp, keys)
            if mtp:
                self.derive("strategy.mtp_in_offset", True, "MindFormers counts MTP layers in the offsets")
        keys, value = self.first(MC, ("qk_layernorm", "use_qk_norm"))
        model_type = self.str_at((*MC, "model_type"))
        if value is not _MISSING:
            self.put("model.qk_norm", self.bool_at(keys), keys)
        elif model_type in ("qwen3", "qwen3_moe"):
            self.derive("model.qk_norm", True, f"model_type {model_type}: Qwen3 has q/k RMSNorm")
        untie = self.bool_at((*MC, "untie_embeddings_and_output_weights"))
        tie = self.bool_at((*MC, "tie_word_embeddings"))
        if untie is not None:
            self.put("model.tie_embeddings", not untie, (*MC, "untie_embeddings_and_output_weights"))
        elif tie is not None:
            self.put("model.tie_embeddings", tie, (*MC, "tie_word_embeddings"))
        keys, value = self.first(MC, ("qkv_has_bias", "add_qkv_bias", "attention_bias"))
        if value is not _MISSING:
            self.put("model.qkv_bias", self.bool_at(keys), keys)
        linear_bias = self.bool_at((*MC, "add_bias_linear"))
        if linear_bias is not None:
            for field in ("model.out_bias", "model.mlp_bias"):
                self.put(field, linear_bias, (*MC, "add_bias_linear"))
            self.values.setdefault("model.qkv_bias", linear_bias)
            self.prov.setdefault("model.qkv_bias", self.prov["model.out_bias"])
        gated = self.bool_at((*MC, "gated_linear_unit"))
        if gated is not None:
            self.put("model.gated_ffn", gated, (*MC, "gated_linear_unit"))

    def read_identity(self) -> None:
        """Name, model_type and architectures: they drive family detection (deepseekV3, llama2_7b …)."""
        model_type = self.str_at((*MC, "model_type"))
        name = self.str_at(("trainer", "model_name"))
        if name:
            self.put("model.name", name, ("trainer", "model_name"))
        else:
            self.derive("model.name", model_type or self.str_at((*MC, "type")) or Path(self.path).stem,
                        "model_type / model_config.type / file name")
        if model_type:
            self.put("model.model_type", model_type, (*MC, "model_type"))
        arch = self.get((*MC, "architectures"))
        if isinstance(arch, str):
            arch = [arch]
        if isinstance(arch, list) and all(isinstance(a, str) for a in arch) and arch:
            self.put("model.hf_architectures", tuple(arch), (*MC, "architectures"))

    def read_ffn(self) -> None:
        keys, value = self.first(MC, ("intermediate_size", "ffn_hidden_size"))
        if value is not _MISSING:
            self.put("model.ffn_hidden_size", self.as_int(keys, value, 1, MAX_DIM), keys)
            return
        hidden = self.values.get("model.hidden_size")
        if hidden is None:
            return
        multiple = self.int_at((*MC, "multiple_of"), 1, MAX_DIM)
        multiplier = self.float_at((*MC, "ffn_dim_multiplier"))
        if multiplier is not None and not 0 < multiplier <= 64:
            raise self.fail((*MC, "ffn_dim_multiplier"), f"{multiplier} is out of range; expected 0..64")
        if multiple is None:
            multiple = 256
            self.assumptions.append(Assumption("model.ffn_hidden_size", "multiple_of 256",
                                               "MindFormers LlamaConfig default multiple_of"))
        hff = llama_ffn(hidden, multiple, multiplier)
        fdm = "—" if multiplier is None else f"{multiplier:g}"
        self.derive("model.ffn_hidden_size", hff, f"Llama rule from hidden_size {hidden}, multiple_of {multiple}, "
                                                  f"ffn_dim_multiplier {fdm} (no intermediate_size)")

    def moe_block(self) -> tuple[tuple[str, ...], dict[str, Any]] | None:
        for keys in (("moe_config",), (*MC, "moe_config")):
            block = self.get(keys)
            if isinstance(block, dict):
                return keys, block
            if block is not _MISSING:
                raise self.fail(keys, f"expected a mapping of MoE keys, got {block!r}")
        return None

    def read_moe(self) -> None:
        legacy = self.moe_block()
        if legacy is not None:
            base = legacy[0]
            experts = self.int_at((*base, "expert_num"), 1, MAX_DIM)
            if experts and experts > 1:
                self.put("model.num_experts", experts, (*base, "expert_num"))
                topk = self.int_at((*base, "num_experts_chosen"), 1, MAX_DIM)
                if topk is None:
                    self.assume("model.experts_per_token", 1, "moe_config.num_experts_chosen absent: "
                                                              "MindFormers MoEConfig default 1")
                else:
                    self.put("model.experts_per_token", topk, (*base, "num_experts_chosen"))
                shared = self.int_at((*base, "shared_expert_num"), 0, MAX_DIM)
                if shared is not None:
                    self.put("model.num_shared_experts", shared, (*base, "shared_expert_num"))
                width = self.int_at((*base, "moe_intermediate_size"), 1, MAX_DIM)
                if width is not None:
                    self.put("model.moe_ffn_hidden_size", width, (*base, "moe_intermediate_size"))
                elif self.values.get("model.ffn_hidden_size"):
                    self.derive("model.moe_ffn_hidden_size", self.values["model.ffn_hidden_size"],
                                "no moe_intermediate_size: experts use the dense FFN width")
                cap = self.float_at((*base, "capacity_factor"))
                if cap is None:
                    self.assume("model.capacity_factor", 1.1, "moe_config.capacity_factor absent: "
                                                              "MindFormers MoEConfig default 1.1")
                else:
                    self.put("model.capacity_factor", cap, (*base, "capacity_factor"))
                first = self.int_at((*base, "first_k_dense_replace"), 0, MAX_LAYERS)
                if first is not None:
                    self.put("model.first_k_dense", first, (*base, "first_k_dense_replace"))
                etp = self.int_at((*base, "expert_model_parallel"), 1, MAX_DEGREE)
                if etp is not None and etp > 1:
                    self.put("strategy.etp", etp, (*base, "expert_model_parallel"))
                gmm = self.bool_at((*base, "use_gmm"))
                if gmm is not None:
                    self.put("strategy.grouped_gemm", gmm, (*base, "use_gmm"))
                return
        keys, value = self.first(MC, ("n_routed_experts", "num_experts", "num_local_experts"))
        if value is _MISSING:
            return
        experts = self.as_int(keys, value, 0, MAX_DIM)
        if experts <= 1:
            return
        self.put("model.num_experts", experts, keys)
        for field, names, lo, hi in (("experts_per_token", ("num_experts_per_tok", "moe_router_topk"), 1, MAX_DIM),
                                     ("num_shared_experts", ("n_shared_experts",), 0, MAX_DIM),
                                     ("moe_ffn_hidden_size", ("moe_intermediate_size", "moe_ffn_hidden_size"), 1,
                                      MAX_DIM),
                                     ("shared_ffn_hidden_size", ("moe_shared_expert_intermediate_size",
                                                                 "shared_expert_intermediate_size"), 1, MAX_DIM),
                                     ("first_k_dense", ("first_k_dense_replace",), 0, MAX_LAYERS),
                                     ("moe_layer_freq", ("moe_layer_freq",), 1, MAX_LAYERS)):
            fkeys, fvalue = self.first(MC, names)
            if fvalue is not _MISSING:
                if field == "moe_layer_freq" and isinstance(fvalue, list):
                    raise self.fail(fkeys, "moe_layer_freq as a list is not supported; give an integer")
                self.put(f"model.{field}", self.as_int(fkeys, fvalue, lo, hi), fkeys)
        cap = self.float_at((*MC, "moe_expert_capacity_factor"))
        if cap is not None:
            self.put("model.capacity_factor", cap, (*MC, "moe_expert_capacity_factor"))
        gmm = self.bool_at((*MC, "moe_grouped_gemm"))
        if gmm is not None:
            self.put("strategy.grouped_gemm", gmm, (*MC, "moe_grouped_gemm"))

    def degree(self, field: str, keys: tuple[str, ...], default: int = 1, note: bool = True) -> int:
        value = self.int_at(keys)
        if value is None:
            if note:
                self.assume(field, default, f"{'.'.join(keys)} absent: MindFormers default {default}")
            else:
                self.values[field] = default
            return default
        self.put(field, value, keys)
        return value

    def read_parallel(self) -> None:
        self.dp = self.degree("strategy.dp", (*PC, "data_parallel"))
        self.tp = self.degree("strategy.tp", (*PC, "model_parallel"))
        self.pp = self.degree("strategy.pp", (*PC, "pipeline_stage"))
        self.cp = self.degree("strategy.cp", (*PC, "context_parallel"), note=False)
        self.degree("strategy.ep", (*PC, "expert_parallel"), note=False)
        sp = self.bool_at((*PC, "use_seq_parallel"))
        if sp is not None:
            self.put("strategy.sequence_parallel", sp, (*PC, "use_seq_parallel"))
        emb = self.bool_at((*PC, "vocab_emb_dp"))
        if emb is None:
            self.assume("strategy.vocab_emb_dp", False, "parallel_config.vocab_emb_dp absent: False")
        else:
            self.put("strategy.vocab_emb_dp", emb, (*PC, "vocab_emb_dp"))
        algo = self.str_at((*PC, "context_parallel_algo"))
        if algo is not None:
            if algo not in CP_ALGOS:
                raise self.fail((*PC, "context_parallel_algo"),
                                f"unknown context_parallel_algo {algo!r}; use one of {', '.join(CP_ALGOS)}")
            self.put("strategy.cp_algo", CP_ALGOS[algo], (*PC, "context_parallel_algo"))
            if algo == "hybrid_cp":
                degree = self.int_at((*PC, "ulysses_degree_in_cp"))
                if degree is not None:
                    self.put("strategy.ulysses_degree", degree, (*PC, "ulysses_degree_in_cp"))

    def read_batch(self) -> None:
        """b = batch_size·micro_batch_interleave_num (the interleaved parts of one micro-batch are all held);
        p > 1: m = micro_batch_num, n_acc = gradient_accumulation_steps; p = 1: m = the accumulation steps."""
        batch_keys, gas_keys = (*RUN, "batch_size"), (*RUN, "gradient_accumulation_steps")
        b = self.int_at(batch_keys, 1, MAX_MICRO)
        gas = self.int_at(gas_keys, 1, MAX_MICRO)
        mbin = self.int_at(("micro_batch_interleave_num",), 1, 64) or 1
        mbn = self.int_at((*PC, "micro_batch_num"), 1, MAX_MICRO)
        if b is None:
            self.assume("strategy.micro_batch_size", mbin, "runner_config.batch_size absent: 1")
        elif mbin > 1:
            self.derive("strategy.micro_batch_size", b * mbin,
                        f"runner_config.batch_size {b} × micro_batch_interleave_num {mbin}")
        else:
            self.put("strategy.micro_batch_size", b, batch_keys)

        def steps(field: str) -> int:
            if gas is None:
                self.derive(field, 1, "runner_config.gradient_accumulation_steps absent: 1")
                return 1
            self.put(field, gas, gas_keys)
            return gas

        if self.pp > 1:
            if mbn is None:
                self.assume("strategy.micro_batches", 1, "parallel_config.micro_batch_num absent: 1")
            else:
                self.put("strategy.micro_batches", mbn, (*PC, "micro_batch_num"))
            steps("strategy.n_acc")
        else:
            m = steps("strategy.micro_batches")
            self.derive("strategy.n_acc", 1, "pipeline_stage 1: accumulation steps are the micro-batches")
            if mbn not in (None, 1):
                self.warn("W-MF-MBN-IGNORED", f"parallel_config.micro_batch_num {mbn} is ignored with "
                                              "pipeline_stage 1; the micro-batches per step are "
                                              f"runner_config.gradient_accumulation_steps = {m}")
        seq = self.int_at((*MC, "seq_length"), 1, MAX_SEQ)
        data_seq = self.int_at(DATASET_SEQ, 1, MAX_SEQ)
        if seq is not None:
            self.put("strategy.seq_length", seq, (*MC, "seq_length"))
            if data_seq is not None and data_seq != seq:
                self.warn("W-MF-SEQ", f"model.model_config.seq_length {seq} differs from the dataset's "
                                      f"{'.'.join(DATASET_SEQ)} {data_seq}; the model's value is used")
        elif data_seq is not None:
            self.put("strategy.seq_length", data_seq, DATASET_SEQ)
        else:
            raise ConfigError("no training sequence length: set model.model_config.seq_length (or "
                              f"{'.'.join(DATASET_SEQ)})", path=self.path, key="model.model_config.seq_length")

    def read_pipeline(self) -> None:
        interleave = bool(self.bool_at((*PIPE, "pipeline_interleave")))
        scheduler = self.str_at((*PIPE, "pipeline_scheduler"))
        chunks = self.int_at((*MC, "pp_interleave_num"), 1, 64)
        vp = chunks if (chunks and interleave) else 1
        if chunks and chunks > 1 and not interleave:
            self.warn("W-MF-VPP-IGNORED", f"model.model_config.pp_interleave_num {chunks} has no effect without "
                                          "parallel.pipeline_config.pipeline_interleave: True; priced with 1 chunk")
        if chunks is not None and interleave:
            self.put("strategy.vpp", vp, (*MC, "pp_interleave_num"))
        schedule = None
        if scheduler is not None:
            name = scheduler.strip().lower()
            if name not in SCHEDULERS:
                raise self.fail((*PIPE, "pipeline_scheduler"), f"unknown pipeline_scheduler {scheduler!r}; "
                                                                f"MindFormers takes {', '.join(SCHEDULERS)}")
            if not interleave:
                if name != "1f1b":
                    self.warn("W-MF-SCHED-IGNORED", f"pipeline_scheduler {scheduler!r} needs pipeline_interleave: "
                                                    "True; priced as 1F1B")
            elif name == "1f1b":
                schedule = "1f1b"
            elif name == "seqpipe":
                schedule = "seq1f1b"
            elif name in ("seqvpp", "seqsmartvpp"):
                schedule = "seqsmartvpp" if vp > 1 else "seq1f1b"
                if vp == 1:
                    self.assumptions.append(Assumption("strategy.schedule", "seq1f1b",
                                                       f"pipeline_scheduler {name} with pp_interleave_num 1 runs "
                                                       "as seqpipe (one chunk per stage)"))
            elif name == "gpipe":
                schedule = "gpipe"
            else:
                schedule = "zbv"
        if schedule is not None:
            self.put("strategy.schedule", schedule, (*PIPE, "pipeline_scheduler"))
        if schedule in ("seq1f1b", "seqsmartvpp"):
            n_s = self.int_at((*PC, "seq_split_num"), 1, 1024)
            if n_s is None:
                self.assume("strategy.n_s", 1, "parallel_config.seq_split_num absent: 1")
            else:
                self.put("strategy.n_s", n_s, (*PC, "seq_split_num"))
        self.read_offset(vp)

    def read_offset(self, vp: int) -> None:
        keys = (*MC, "offset")
        value = self.get(keys)
        if value is _MISSING:
            return
        bad = self.fail(keys, f"offset must be an integer, a list of integers (one per stage) or a list of "
                              f"lists (one per chunk); got {value!r}")

        def ints(seq: Any) -> tuple[int, ...]:
            if not isinstance(seq, list) or not seq:
                raise bad
            return tuple(self.as_int(keys, x, -MAX_LAYERS, MAX_LAYERS) for x in seq)

        if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            offset: Any = tuple(ints(v) for v in value)
        elif isinstance(value, list) and any(isinstance(v, list | dict) for v in value):
            raise bad
        elif isinstance(value, list):
            offset = ints(value)
        else:
            offset = self.as_int(keys, value, -MAX_LAYERS, MAX_LAYERS)
        if self.pp * vp <= 1:  # MindFormers ignores offsets with a single stage
            if any(_flat(offset)):
                self.warn("W-MF-OFFSET-IGNORED", f"offset {value!r} has no effect with a single pipeline stage")
            if offset != 0:
                return
        self.put("strategy.offset", offset, keys)
        self.check_offset_sum(offset, vp)

    def check_offset_sum(self, offset: Any, vp: int) -> None:
        """MindFormers refuses offsets that do not sum to the remainder (LayerSetting); say so with a fix."""
        layers = self.values.get("model.num_layers")
        if layers is None or self.pp * vp <= 1:
            return
        mtp = self.values.get("model.mtp_layers", 0)
        slots = self.pp * vp
        rem = (layers + mtp) % slots
        total = sum(_flat(offset))
        if total == rem:
            return
        text = (f"offset {offset!r} sums to {total}, but {layers} layers" + (f" + {mtp} MTP" if mtp else "") +
                f" over {slots} pipeline slots leave a remainder of {rem}; MindFormers refuses this too")
        if vp == 1:
            text += f" (an offset that fits: {[1 if k < rem else 0 for k in range(self.pp)]})"
        self.warn("W-MF-OFFSET-SUM", text)

    # -- recompute ------------------------------------------------------------------------------------
    def counts(self, keys: tuple[str, ...], value: Any) -> Any:
        """A bool, list[p] of ints/bools, or list[vp][p] of ints, validated."""
        if isinstance(value, bool):
            return value
        bad = f"expected True/False, a list of layer counts per stage or a list of such lists; got {value!r}"
        if not isinstance(value, list) or not value:
            raise self.fail(keys, bad)
        if all(isinstance(v, list) for v in value):
            rows = []
            for row in value:
                if not row:
                    raise self.fail(keys, bad)
                if any(isinstance(x, bool) for x in row):
                    raise self.fail(keys, "True/False inside per-chunk lists is not supported; give layer counts")
                rows.append(tuple(self.as_int(keys, x, 0, MAX_COUNT) for x in row))
            return tuple(rows)
        if any(isinstance(v, list) for v in value):
            raise self.fail(keys, bad)
        return tuple(v if isinstance(v, bool) else self.as_int(keys, v, 0, MAX_COUNT) for v in value)

    def merge_counts(self, keys: tuple[str, ...], found: list[tuple[str, Any]]) -> Any:
        """One count value from several op patterns; differing values are combined by the largest."""
        active = [(p, v) for p, v in found if v is not False]
        if not active:
            return None
        values = [v for _, v in active]
        if any(v is True for v in values):
            merged: Any = True
        elif all(v == values[0] for v in values):
            merged = values[0]
        else:
            shape = {(len(v), tuple(len(r) for r in v) if isinstance(v[0], tuple) else ()) for v in values}
            if len(shape) != 1:
                raise self.fail(keys, "the op patterns give per-stage lists of different shapes; give them all "
                                      "the same shape")
            if isinstance(values[0][0], tuple):
                merged = tuple(tuple(max(int(v[j][i]) for v in values) for i in range(len(values[0][j])))
                               for j in range(len(values[0])))
            else:
                merged = tuple(True if any(v[i] is True for v in values) else max(int(v[i]) for v in values)
                               for i in range(len(values[0])))
        if len({repr(v) for v in values}) > 1:
            self.warn("W-SEL-MIXED", f"{'.'.join(keys)}: the op patterns recompute different layer counts "
                                     f"({', '.join(repr(p) for p, _ in active)}); priced with the largest, {merged!r}")
        return merged

    def patterns(self, keys: tuple[str, ...], value: Any, comm: bool) -> tuple[Any, tuple[str, ...]]:
        """(counts, switches) of a dict (or list) of op regexes; unmatched patterns are warned about."""
        items = [(p, True) for p in value] if isinstance(value, list) else list(value.items())
        found: list[tuple[str, Any]] = []
        switches: set[str] = set()
        for pattern, raw in items:
            if not isinstance(pattern, str):
                raise self.fail(keys, f"op patterns must be strings; got {pattern!r}")
            counts = self.counts((*keys, pattern), raw) if raw is not None else False
            switch = comm_switch(pattern) if comm else selective_switch(pattern)
            if switch is None:
                self.warn("W-SEL-UNMATCHED", f"selective pattern '{pattern}' is not modelled; priced as kept")
                continue
            found.append((pattern, counts))
            if counts is not False:
                switches.add(switch)
        return self.merge_counts(keys, found), tuple(sorted(switches))

    def read_recompute(self) -> None:
        full_keys = (*RC, "recompute")
        full = self.get(full_keys)
        if full is not _MISSING:
            if isinstance(full, dict):
                raise self.fail(full_keys, "recompute takes True/False or per-stage layer counts, not op patterns "
                                           "(use select_recompute for those)")
            self.put("strategy.recompute", self.counts(full_keys, full), full_keys)
        for name, field, comm in (("select_recompute", "strategy.sel_counts", False),
                                  ("select_comm_recompute", "strategy.comm_counts", True)):
            keys = (*RC, name)
            value = self.get(keys)
            if value is _MISSING or value is False:
                continue
            if isinstance(value, dict) or (isinstance(value, list) and value and
                                           all(isinstance(v, str) for v in value)):
                counts, switches = self.patterns(keys, value, comm)
                if counts is None:
                    continue
                self.put(field, counts, keys)
                if not comm:
                    self.put("strategy.recompute_switches", switches, keys)
            else:
                self.put(field, self.counts(keys, value), keys)
        sliced = self.bool_at((*RC, "recompute_slice_activation"))
        if sliced is not None:
            self.put("strategy.recompute_slice_activation", sliced, (*RC, "recompute_slice_activation"))

    # -- sharding, widths, options --------------------------------------------------------------------
    def read_sharding(self) -> None:
        keys = (*PAR, "enable_parallel_optimizer")
        enabled = self.bool_at(keys)
        if enabled is None:
            self.assume("strategy.sharding", "none", "parallel.enable_parallel_optimizer absent: False")
        elif not enabled:
            self.put("strategy.sharding", "none", keys)
        else:
            self.put("strategy.sharding", "mf_op", keys)
        size = self.int_at((*POC, "optimizer_weight_shard_size"), -1, MAX_DEGREE)
        if size is not None and size > 0:
            self.put("strategy.shard_size", size, (*POC, "optimizer_weight_shard_size"))
        shard = self.bool_at((*POC, "gradient_accumulation_shard"))
        if shard is not None:
            self.put("strategy.grad_shard", shard, (*POC, "gradient_accumulation_shard"))
        elif enabled:
            self.assume("strategy.grad_shard", False, "gradient_accumulation_shard absent: False")
        keys = (*RC, "parallel_optimizer_comm_recompute")
        regather = self.bool_at(keys)
        if regather is not None:
            self.put("strategy.keep_gathered_weights", not regather, keys)
        elif enabled:
            self.assume("strategy.keep_gathered_weights", True,
                        "parallel_optimizer_comm_recompute absent: False (gathered weights kept)")

    def width(self, field: str, names: tuple[str, ...]) -> int | None:
        keys, value = self.first(MC, names)
        if value is _MISSING:
            return None
        size, fp8 = dtype_bytes(value, ".".join(keys), self.origin(keys))
        if fp8:
            self.warn("W-FP8", f"{'.'.join(keys)} {value!r}: FP8 tensors are priced as 2 bytes (spec §1.1)")
        if field:
            self.put(field, float(size), keys)
        return size

    def read_widths(self) -> None:
        self.width("strategy.param_bytes", ("param_init_type", "params_dtype"))
        self.width("strategy.compute_bytes", ("compute_dtype",))
        self.width("strategy.softmax_bytes", ("softmax_compute_type", "softmax_compute_dtype"))
        compute = self.values.get("strategy.compute_bytes")
        # β_n and β_r are 4 for float32, else the compute width (spec §3.4)
        keys, _ = self.first(MC, ("layernorm_compute_type", "layernorm_compute_dtype"))
        norm = self.width("", ("layernorm_compute_type", "layernorm_compute_dtype"))
        if norm == 4 or (norm is not None and compute is not None):
            self.put("strategy.norm_bytes", 4.0 if norm == 4 else compute, keys)
        residual = self.bool_at((*MC, "fp32_residual_connection"))
        keys, _ = self.first(MC, ("fp32_residual_connection",))
        if residual is None:
            keys, _ = self.first(MC, ("res_dtype",))
            size = self.width("", ("res_dtype",))
            residual = None if size is None else size == 4
        if residual or (residual is not None and compute is not None):
            self.put("strategy.residual_bytes", 4.0 if residual else compute, keys)

    def read_options(self) -> None:
        self.derive("options.framework", FORMAT, "MindFormers YAML")
        keys = ("context", "max_device_memory")
        memory = self.get(keys)
        if memory is not _MISSING:
            try:
                size = parse_size(memory)
            except ValueError as exc:
                raise self.fail(keys, str(exc)) from None
            if not 0 < size < 1 << 50:
                raise self.fail(keys, f"{memory!r} is not a plausible device memory")
            self.put("options.max_device_memory", size, keys)
        fa = self.bool_at((*MC, "use_flash_attention"))
        if fa is not None:
            self.put("strategy.flash_attention", fa, (*MC, "use_flash_attention"))
        fused = self.bool_at((*MC, "use_fused_swiglu"))
        act = self.get((*MC, "hidden_act"))
        act = act if isinstance(act, str) else None
        if fused:
            self.put("options.fused_gated_act", True, (*MC, "use_fused_swiglu"))
        elif act and act.lower() == "fusedswiglu":
            self.put("options.fused_gated_act", True, (*MC, "hidden_act"))

    def check_statements(self, devices: int | None) -> None:
        """Warn where the file's comments (or --devices) state a device count or global batch that the degrees
        do not give; the product of the degrees wins."""
        world = self.dp * self.tp * self.pp * self.cp
        product = (f"data_parallel {self.dp} × model_parallel {self.tp} × pipeline_stage {self.pp} × "
                   f"context_parallel {self.cp} = {world}")
        for lineno, stated in comment_numbers(self.text, _DEVICE_COMMENT):
            if stated != world:
                self.warn("W-MF-DEVICES", f"the comment on line {lineno} says device num = {stated}, but {product} "
                                          "devices; the product is used")
        if devices is not None and devices != world:
            self.warn("W-MF-DEVICES", f"--devices {devices} differs from {product}; the file's degrees are used")
        v = self.values
        batch = v["strategy.micro_batch_size"] * self.dp * v["strategy.micro_batches"] * v["strategy.n_acc"]
        stated_batches = comment_numbers(self.text, _GBS_COMMENT)
        for keys in ((*RUN, "global_batch_size"), ("global_batch_size",)):
            value = self.int_at(keys, 1, 1 << 40)
            if value is not None:
                stated_batches.append((0, value))
        for lineno, stated in stated_batches:
            if stated != batch:
                where = f"the comment on line {lineno}" if lineno else "the file"
                self.warn("W-MF-GBS", f"{where} states a global batch of {stated}, but batch_size × data_parallel × "
                                      f"micro-batches × accumulation steps = {batch}; the product is used")

    def role(self) -> str:
        needed = ("model.hidden_size", "model.num_layers", "model.num_attention_heads", "model.vocab_size")
        return "both" if all(k in self.values for k in needed) else "strategy"


def read(text: str, path: str, data: Any, devices: int | None = None) -> Reading:
    """Canonical values with provenance from one MindFormers YAML (``data`` is its PyYAML load)."""
    if not isinstance(data, dict):
        raise ConfigError("a MindFormers config must be a mapping of sections (model:, parallel_config:, …)",
                          path=path)
    merged, bases = resolve_base(data, path)
    reader = _Reader(text, path, merged, data, bases)
    reader.run(devices)
    return Reading(FORMAT, reader.role(), reader.values, reader.prov, reader.warnings, reader.assumptions,
                   text=text, path=path)


def write(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """The source text with only the strategy keys changed (see ``mindformers_write``)."""
    from .mindformers_write import write_strategy

    return write_strategy(source, parsed, strategy)


__all__ = ["FORMAT", "detect", "read", "write"]
