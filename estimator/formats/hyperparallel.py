"""HyperParallel training YAML (docs/model.md#frameworks): the "Hyper V2" schema (``train.accelerator``,
``model.config_overrides``) and the auto_models schema (``accelerator``, ``fsdp_config``, ``training``).

Model dimensions come from ``model.config_overrides`` or HF fields written inline under ``model``; a file
whose model lives on a hub or in code (a checkpoint name, a ``hyper_parallel.models`` module) gives the
strategy only, and the model comes from ``--model config.json``. Values are read with PyYAML (as the
framework reads them). Writing (``hyperparallel_write``) splices new values into the original text at the node
positions, so comments, order, quoting and indentation are kept byte for byte.
"""

from __future__ import annotations

from typing import Any

import yaml

from .. import flavors
from ..errors import ConfigError
from ..messages import Text, msg
from . import hub
from .common import dig
from .hyperparallel_unpriced import read_unpriced
from .known_keys import catalogue, check_sections
from .support import MAX_LAYERS, Collector, Reading, check_micro_batches, dtype_bytes, to_int

FORMAT = "hyperparallel"

# HF-style config_overrides / inline model keys -> canonical model fields (first present wins)
MODEL_KEYS: tuple[tuple[str, str], ...] = (
    ("hidden_size", "hidden_size"), ("num_hidden_layers", "num_layers"), ("num_layers", "num_layers"),
    ("num_attention_heads", "num_attention_heads"), ("num_key_value_heads", "num_kv_heads"),
    ("head_dim", "head_dim"), ("qk_nope_head_dim", "head_dim"), ("v_head_dim", "v_head_dim"),
    ("intermediate_size", "ffn_hidden_size"), ("vocab_size", "vocab_size"),
    ("tie_word_embeddings", "tie_embeddings"), ("q_lora_rank", "q_lora_rank"), ("kv_lora_rank", "kv_lora_rank"),
    ("qk_rope_head_dim", "qk_rope_head_dim"), ("num_experts", "num_experts"),
    ("n_routed_experts", "num_experts"), ("num_local_experts", "num_experts"),
    ("num_experts_per_tok", "experts_per_token"), ("num_shared_experts", "num_shared_experts"),
    ("n_shared_experts", "num_shared_experts"), ("moe_intermediate_size", "moe_ffn_hidden_size"),
    ("first_k_dense_replace", "first_k_dense"), ("mtp_depth", "mtp_layers"),
    ("num_nextn_predict_layers", "mtp_layers"), ("capacity_factor", "capacity_factor"),
)
REQUIRED = ("hidden_size", "num_layers", "num_attention_heads", "vocab_size")
SCHEDULES = {"1f1b": "1f1b", "gpipe": "gpipe", "interleaved": "interleaved", "interleaved1f1b": "interleaved",
             "interleaved_1f1b": "interleaved", "vpp": "interleaved", "zero_bubble_v": "zbv", "zbv": "zbv",
             "zbvzerobubble": "zbv", "dualpipev": "dualpipev", "dualpipe_v": "dualpipev", "seqpipe": "seq1f1b",
             "seq1f1b": "seq1f1b", "seqsmartvpp": "seqsmartvpp"}
CP_ALGOS = {"colossalai_cp": "ring", "ring": "ring", "megatron_cp_algo": "ring", "ulysses_cp": "ulysses",
            "ulysses": "ulysses", "hybrid_cp": "hybrid", "hybrid": "hybrid"}

# canonical name -> key path, per schema
V2 = {
    "dp_shard": ("train", "accelerator", "dp_shard"), "dp_replicate": ("train", "accelerator", "dp_replicate"),
    "tp": ("train", "accelerator", "tp_degree"), "pp": ("train", "accelerator", "pipeline_parallel_degree"),
    "cp": ("train", "accelerator", "context_parallel_degree"),
    "ep": ("train", "accelerator", "expert_parallel_degree"),
    "etp": ("train", "accelerator", "expert_tensor_parallel_degree"),
    "vpp": ("train", "accelerator", "pp_interleave_num"), "sp": ("train", "accelerator", "use_seq_parallel"),
    "schedule": ("train", "accelerator", "pipeline_scheduler"),
    "cp_algo": ("train", "accelerator", "context_parallel_algo"),
    "parallel_optimizer": ("train", "accelerator", "enable_parallel_optimizer"),
    "shard_size": ("train", "accelerator", "optimizer_weight_shard_size"),
    "b": ("train", "micro_batch_size"), "m": ("train", "micro_batch_num"), "G": ("train", "global_batch_size"),
    "ac": ("train", "gradient_checkpointing", "activation_checkpoint"),
    "slice": ("train", "gradient_checkpointing", "recompute_slice_activation"),
    "full_rec": ("model", "config_overrides", "full_rec"), "sel_rec": ("model", "config_overrides", "sel_rec"),
    "offset": ("model", "config_overrides", "offset"),
}
AUTO = {
    "tp": ("accelerator", "tp_size"), "cp": ("accelerator", "cp_size"), "ep": ("accelerator", "ep_size"),
    "etp": ("accelerator", "etp_size"),
    "pp": ("accelerator", "pp_size"), "m": ("accelerator", "pp_micro_batch_num"),
    "schedule": ("accelerator", "pp_schedule"), "vpp": ("accelerator", "pp_vpp"),
    "sp": ("accelerator", "sequence_parallel"), "loss_parallel": ("accelerator", "loss_parallel"),
    "dp_shard_size": ("fsdp_config", "dp_shard_size"), "edp_shard_size": ("fsdp_config", "edp_shard_size"),
    "reshard": ("fsdp_config", "reshard_after_forward"), "b": ("training", "micro_batch_size"),
    "G": ("training", "global_batch_size"), "ac": ("activation_checkpoint", "mode"),
    "ac_layers": ("activation_checkpoint", "layers"),
}
SEQ_KEYS = {"v2": (("data", "max_seq_len"), ("data", "seq_length")),
            "auto_models": (("dataset", "data_transform", "max_seq_len"), ("dataset", "data_config", "seq_length"),
                            ("dataset", "data_config", "max_seq_len"), ("dataset", "max_seq_len"),
                            ("dataset", "seq_len"), ("data", "max_seq_len"))}


def schema(data: Any) -> str | None:
    """``v2``, ``auto_models`` or None (not a HyperParallel YAML)."""
    if not isinstance(data, dict):
        return None
    model = data.get("model")
    if isinstance(dig(data, "train", "accelerator"), dict) or (
            isinstance(model, dict) and isinstance(model.get("config_overrides"), dict) and "train" in data):
        return "v2"
    if isinstance(data.get("accelerator"), dict) or isinstance(data.get("fsdp_config"), dict):
        return "auto_models"
    if isinstance(data.get("training"), dict) and isinstance(model, dict) and (
            "_target_" in model or "pretrained_model_name_or_path" in model):
        return "auto_models"
    return None


def detect(data: Any, path: str) -> bool:
    return schema(data) is not None


# ------------------------------------------------------------------------------------------- read
class HyperParallelFile:
    """The parsed mapping plus the node tree for line:column of each key."""

    def __init__(self, text: str, path: str, data: dict[str, Any], kind: str) -> None:
        self.path, self.data, self.kind = path, data, kind
        self.keys = V2 if kind == "v2" else AUTO
        try:
            self.root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            self.root = None

    def get(self, name: str, default: Any = None) -> Any:
        return dig(self.data, *self.keys[name], default=default) if name in self.keys else default

    def has(self, name: str) -> bool:
        return name in self.keys and present(self.data, self.keys[name])

    def key(self, name: str) -> str:
        return ".".join(self.keys[name])

    def error(self, message: Text, keys: tuple[str, ...] | str) -> ConfigError:
        path = tuple(keys.split(".")) if isinstance(keys, str) else keys
        node = yaml_node(self.root, path)
        mark = node[1].start_mark if node else None
        return ConfigError(message, path=self.path, key=".".join(path), line=mark.line + 1 if mark else None,
                           column=mark.column + 1 if mark else None)

    def int(self, name: str, default: int, minimum: int = 1) -> int:
        if not self.has(name):
            return default
        try:
            return to_int(self.get(name), self.path, self.key(name), minimum=minimum)
        except ConfigError as exc:
            raise self.error(exc.bare_message, self.keys[name]) from None


def present(data: Any, keys: tuple[str, ...]) -> bool:
    """Whether ``keys`` leads to a value that is not null."""
    return dig(data, *keys) is not None


def yaml_node(root: Any, keys: tuple[str, ...]) -> tuple[Any, Any] | None:
    """(key node, value node) at ``keys`` in a composed YAML tree; of duplicate keys the last, as PyYAML
    (which the reader uses) keeps the last."""
    cur, found = root, None
    for key in keys:
        if not isinstance(cur, yaml.MappingNode):
            return None
        found = next(((k, v) for k, v in reversed(cur.value) if isinstance(k, yaml.ScalarNode) and k.value == key),
                     None)
        if found is None:
            return None
        cur = found[1]
    return found


def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    """The strategy (and, when the file states it, the model) of a HyperParallel YAML (docs/model.md#frameworks)."""
    kind = schema(data)
    if kind is None:
        raise ConfigError(msg("hyperparallel.hyperparallel-yaml-train"), path=path)
    src = HyperParallelFile(text, path, data, kind)
    c = Collector(path)
    c.derive("options.framework", "hyperparallel", f"HyperParallel YAML ({kind} schema)")
    _read_model(c, src)
    if kind == "v2":
        dp = _read_v2_parallel(c, src, devices)
    else:
        dp = _read_auto_parallel(c, src, devices)
    _read_batch(c, src, dp)
    _read_seq(c, src)
    _read_recompute(c, src)
    _read_widths(c, src)
    memory = dig(data, "context", "max_device_memory")
    if memory is not None:
        c.put("options.max_device_memory", memory, "context.max_device_memory")
    read_unpriced(c, data)
    c.warnings.extend(check_sections(data, catalogue(FORMAT), path, read=_read_keys(src)))
    role = "both" if all(f"model.{k}" in c.values for k in REQUIRED) else "strategy"
    return c.reading(FORMAT, role)


def _read_keys(src: HyperParallelFile) -> list[tuple[str, ...]]:
    """Key paths the reader reads (its schema's table and sequence keys), and the Hugging Face config keys the
    model section and its config_overrides take."""
    hf = [*catalogue("hf_config_keys").known(""), *catalogue("hf").known(""), *(k for k, _ in MODEL_KEYS)]
    return [*src.keys.values(), *SEQ_KEYS[src.kind], *(("model", k) for k in hf),
            *(("model", "config_overrides", k) for k in hf)]


def _read_model(c: Collector, src: HyperParallelFile) -> None:
    model = src.data.get("model") if isinstance(src.data.get("model"), dict) else {}
    overrides = model.get("config_overrides") if isinstance(model.get("config_overrides"), dict) else {}
    inline = {k: v for k, v in model.items() if k in dict(MODEL_KEYS)}
    sources = [("model.config_overrides", overrides), ("model", inline)]
    for hf_key, name in MODEL_KEYS:
        for prefix, table in sources:
            if f"model.{name}" not in c.values and table.get(hf_key) is not None:
                c.put(f"model.{name}", table[hf_key], f"{prefix}.{hf_key}")
    values = c.values
    for name in ("num_layers", "mtp_layers", "num_experts", "hidden_size"):
        if f"model.{name}" in values:
            c.values[f"model.{name}"] = to_int(values[f"model.{name}"], c.path, c.provenance[f"model.{name}"].key,
                                               minimum=0, maximum=MAX_LAYERS if name.endswith("layers") else
                                               1 << 40)
    if int(values.get("model.num_experts") or 0) <= 1:  # MoE only with more than one expert (upstream rule)
        for name in ("num_experts", "experts_per_token", "num_shared_experts", "moe_ffn_hidden_size",
                     "first_k_dense", "capacity_factor"):
            values.pop(f"model.{name}", None)
            c.provenance.pop(f"model.{name}", None)
    elif "model.moe_ffn_hidden_size" not in values and "model.ffn_hidden_size" in values:
        c.derive("model.moe_ffn_hidden_size", values["model.ffn_hidden_size"],
                 "no moe_intermediate_size: experts use intermediate_size (Mixtral convention)")
    if "model.hidden_size" in values and "model.ffn_hidden_size" not in values and "multiple_of" in overrides:
        multiple = to_int(overrides["multiple_of"], c.path, "model.config_overrides.multiple_of")
        multiplier = overrides.get("ffn_dim_multiplier")
        if multiplier is not None and (isinstance(multiplier, bool) or not isinstance(multiplier, (int, float))):
            raise src.error(msg("hyperparallel.ffn_dim_multiplier-must-number", multiplier=multiplier),
                            ("model", "config_overrides", "ffn_dim_multiplier"))
        width = flavors.llama_ffn_width(values["model.hidden_size"], multiple, multiplier)
        c.derive("model.ffn_hidden_size", width, "llama FFN rule from multiple_of / ffn_dim_multiplier")
    name = model.get("name") or model.get("pretrained_model_name_or_path")
    if isinstance(name, str) and name:
        c.put("model.name", name.rstrip("/").split("/")[-1], "model.name" if model.get("name") else
              "model.pretrained_model_name_or_path")
        if name.lower().startswith("qwen3") or overrides.get("qk_layernorm") or overrides.get("use_qk_norm"):
            c.derive("model.qk_norm", True, "Qwen3-family models have q/k RMSNorm")
    hub_name = model.get("pretrained_model_name_or_path") or model.get("weights_path")
    missing = [k for k in REQUIRED if f"model.{k}" not in values]
    if missing and isinstance(hub_name, str) and hub_name and hub.collect_model(
            c, hub_name, "model.pretrained_model_name_or_path" if model.get("pretrained_model_name_or_path")
            else "model.weights_path", file_wins=True):  # a Hub id or a local copy: its config under the overrides
        missing = [k for k in REQUIRED if f"model.{k}" not in values]
    if missing:
        where = model.get("pretrained_model_name_or_path") or model.get("name") or "the model code"
        c.warn("W-MODEL-SOURCE", msg("W-MODEL-SOURCE", missing=', '.join(missing), where=where))


def _world(c: Collector, src: HyperParallelFile, devices: int | None) -> int | None:
    if devices is not None and devices < 1:
        raise ConfigError(msg("hyperparallel.devices-must-least", devices=devices), path=c.path)
    stated = dig(src.data, "context", "device_num")
    if stated is not None:
        n = to_int(stated, c.path, "context.device_num")
        if devices is not None and devices != n:
            raise src.error(msg("hyperparallel.devices-differs-context", devices=devices, n=n), ("context",
                                                                                                 "device_num"))
        return n
    return devices


def _read_degrees(c: Collector, src: HyperParallelFile) -> tuple[int, int, int, int]:
    tp, pp, cp, ep = (src.int(k, 1) for k in ("tp", "pp", "cp", "ep"))
    for name, value in (("tp", tp), ("pp", pp), ("cp", cp), ("ep", ep)):
        if src.has(name):
            c.put(f"strategy.{name}", value, src.key(name))
    if src.has("etp"):
        c.put("strategy.etp", src.int("etp", 1), src.key("etp"))
    if src.has("vpp"):
        c.put("strategy.vpp", src.int("vpp", 1), src.key("vpp"))
    sp = src.get("sp")
    if sp is not None:
        c.put("strategy.sequence_parallel", bool(sp) and tp > 1, src.key("sp"), sp)
    if src.has("schedule"):
        raw = str(src.get("schedule")).strip().lower()
        if raw not in SCHEDULES:
            raise src.error(msg("hyperparallel.unknown-pipeline-schedule", schedule=src.get('schedule'),
                                SCHEDULES=', '.join(sorted(SCHEDULES))), src.keys["schedule"])
        if pp > 1 and SCHEDULES[raw] != "1f1b":  # 1F1B is what an unset schedule means
            c.put("strategy.schedule", SCHEDULES[raw], src.key("schedule"), src.get("schedule"))
    return tp, pp, cp, ep


def _read_v2_parallel(c: Collector, src: HyperParallelFile, devices: int | None) -> int:
    tp, pp, cp, _ep = _read_degrees(c, src)
    shard, rep = src.int("dp_shard", 1), src.int("dp_replicate", 1)
    n = _world(c, src, devices)
    if n is not None and not (src.has("dp_shard") or src.has("dp_replicate")):
        if n % (tp * pp * cp):
            raise src.error(msg("hyperparallel.device-count-multiple", n=n, value=tp * pp * cp),
                            src.keys["tp"])
        shard, rep = n // (tp * pp * cp), 1
    elif n is not None and n != shard * rep * tp * pp * cp:
        raise src.error(msg("hyperparallel.devices-device_num-does", n=n, shard=shard, rep=rep, degrees=tp * pp * cp,
                            product=shard * rep * tp * pp * cp),
                        src.keys["dp_shard"])
    dp = shard * rep
    c.derive("strategy.dp", dp, f"dp_replicate × dp_shard = {rep}×{shard}")
    if cp > 1:
        raw = src.get("cp_algo")
        algo = CP_ALGOS.get(str(raw).strip().lower()) if raw is not None else "ring"
        if algo is None:
            raise src.error(msg("hyperparallel.unknown-context_parallel_algo-expected", raw=raw), src.keys["cp_algo"])
        if raw is not None:
            c.put("strategy.cp_algo", algo, src.key("cp_algo"), raw)
        else:
            c.assume("strategy.cp_algo", "ring", msg("hyperparallel.context_parallel_algo-unset-ring"))
    if src.get("parallel_optimizer") is True:
        size = src.int("shard_size", 0, minimum=0) or dp * cp
        if (dp * cp) % size:
            raise src.error(msg("hyperparallel.optimizer_weight_shard_size-does-divide", size=size, value=dp * cp),
                            src.keys["shard_size"])
        c.derive("strategy.sharding", "fsdp" if size == dp * cp else "hsdp",
                 "enable_parallel_optimizer: parameters, gradients and states sharded (FSDP spanning CP)")
        if size != dp * cp:
            c.put("strategy.shard_size", size, src.key("shard_size"))
    elif shard * cp > 1:
        c.derive("strategy.sharding", "hsdp" if rep > 1 else "fsdp", "FSDP over dp_shard × cp")
        if rep > 1:
            c.put("strategy.d_rep", rep, src.key("dp_replicate"))
            c.put("strategy.d_sh", shard, src.key("dp_shard"))
    else:
        c.derive("strategy.sharding", "none", "no dp_shard × cp group and no parallel optimizer")
    return dp


def _read_auto_parallel(c: Collector, src: HyperParallelFile, devices: int | None) -> int:
    tp, pp, cp, ep = _read_degrees(c, src)
    shard = src.int("dp_shard_size", 1)
    n = _world(c, src, devices)
    if n is not None:
        if n % (tp * pp * cp):
            raise ConfigError(msg("hyperparallel.device-count-multiple", n=n, value=tp * pp * cp), path=c.path)
        dp = n // (tp * pp * cp)
        c.derive("strategy.dp", dp, f"devices/(tp·pp·cp) = {n}/{tp * pp * cp}")
    elif shard % cp == 0 and (shard * tp) % (ep * int(c.values.get("strategy.etp") or 1)) == 0:
        dp = shard // cp
        c.assume("strategy.dp", dp, msg("hyperparallel.device-count-taken", key=src.key('dp_shard_size'), shard=shard))
    else:
        raise src.error(msg("hyperparallel.world-size-stated", key=src.key('dp_shard_size'), shard=shard, cp=cp, ep=ep),
                        src.keys["dp_shard_size"])
    domain = dp * cp
    if domain % shard:
        raise src.error(msg("hyperparallel.dp_shard_size-does-divide", shard=shard, domain=domain),
                        src.keys["dp_shard_size"])
    c.derive("strategy.sharding", "fsdp" if shard == domain else "hsdp", "FSDP2 over dp × cp (fsdp_config)")
    if shard != domain:
        c.put("strategy.shard_size", shard, src.key("dp_shard_size"))
    if c.values.get("model.num_experts") or ep > 1 or src.has("edp_shard_size"):
        edp = src.int("edp_shard_size", 1)
        if src.has("edp_shard_size"):
            c.put("strategy.expert_shard_size", edp, src.key("edp_shard_size"))
        else:
            c.assume("strategy.expert_shard_size", 1, msg("hyperparallel.fsdp_config-edp_shard_size-default"))
    if src.has("reshard"):
        c.put("strategy.reshard_after_forward", bool(src.get("reshard")), src.key("reshard"))
    if src.get("loss_parallel") is not None:
        c.put("strategy.vocab_parallel_loss", bool(src.get("loss_parallel")), src.key("loss_parallel"))
    if cp > 1:
        _read_cp_wrapper(c, src, cp)
    return dp


def _read_cp_wrapper(c: Collector, src: HyperParallelFile, cp: int) -> None:
    """``plan_overrides[].inner_wrapper`` picks the CP algorithm (and the Ulysses degree of hybrid CP)."""
    entries = src.data.get("plan_overrides") if isinstance(src.data.get("plan_overrides"), list) else []
    for i, entry in enumerate(entries):
        wrapper = entry.get("inner_wrapper") if isinstance(entry, dict) else None
        if wrapper is None:
            continue
        target = str(wrapper.get("_target_", "") if isinstance(wrapper, dict) else wrapper)
        key = f"plan_overrides[{i}].inner_wrapper"
        if "hybrid" in target.lower():
            degree = wrapper.get("ulysses_degree") if isinstance(wrapper, dict) else None
            c.put("strategy.cp_algo", "hybrid", key, target)
            if degree is not None:
                c.put("strategy.ulysses_degree", to_int(degree, c.path, key + ".ulysses_degree"),
                      key + ".ulysses_degree")
            return
        if "ulysses" in target.lower():
            c.put("strategy.cp_algo", "ulysses", key, target)
            return
        if "ring" in target.lower():
            c.put("strategy.cp_algo", "ring", key, target)
            return
    fallback = dig(src.data, "dataloader", "get_batch", "cp_algorithm")
    if isinstance(fallback, str) and fallback.lower() in CP_ALGOS:
        c.put("strategy.cp_algo", CP_ALGOS[fallback.lower()], "dataloader.get_batch.cp_algorithm")
    else:
        c.assume("strategy.cp_algo", "ring", msg("hyperparallel.cp-wrapper-plan_overrides"))


def _read_batch(c: Collector, src: HyperParallelFile, dp: int) -> None:
    b = src.int("b", 1)
    (c.put if src.has("b") else c.assume)("strategy.micro_batch_size", b, src.key("b") if src.has("b") else
                                          "micro_batch_size default 1")
    pp = int(c.values.get("strategy.pp", 1))
    G = src.int("G", 0, minimum=0)
    if src.has("m"):
        m = check_micro_batches(src.int("m", 1), c.path, src.key("m"))
        c.put("strategy.micro_batches", m, src.key("m"))
        if G:
            if G % (b * dp * m):
                c.warn("W-BATCH", msg("W-BATCH", G=G, b=b, dp=dp, m=m))
            elif G // (b * dp * m) > 1:
                c.derive("strategy.n_acc", G // (b * dp * m), "global_batch_size/(b·dp·m)")
        return
    if G:
        if G % (b * dp):
            raise src.error(msg("hyperparallel.global_batch_size-multiple-micro_batch_size", G=G, b=b, dp=dp),
                            src.keys["G"])
        m = check_micro_batches(G // (b * dp), c.path, src.key("G"))
        c.derive("strategy.micro_batches", m, f"global_batch_size/(b·dp) = {G}/{b * dp}")
    else:
        c.assume("strategy.micro_batches", max(1, pp), msg("hyperparallel.micro-batch-count"))


def _read_seq(c: Collector, src: HyperParallelFile) -> None:
    for keys in SEQ_KEYS[src.kind]:
        if present(src.data, keys):
            c.put("strategy.seq_length", _seq(src, keys), ".".join(keys))
            return
    overrides = dig(src.data, "model", "config_overrides", default={}) or {}
    if isinstance(overrides, dict) and overrides.get("seq_length") is not None:
        c.put("strategy.seq_length", _seq(src, ("model", "config_overrides", "seq_length")),
              "model.config_overrides.seq_length")
        return
    for keys in (("model", "config_overrides", "max_position_embeddings"), ("model", "max_position_embeddings")):
        if present(src.data, keys):
            c.put("strategy.seq_length", _seq(src, keys), ".".join(keys))
            c.warn("W-SEQ-FROM-POSITIONS", msg("W-SEQ-FROM-POSITIONS", keys='.'.join(keys), dig=dig(src.data, *keys)))
            return
    raise src.error(msg("hyperparallel.sequence-length-file"), ("data",
                                                                "max_seq_len") if src.kind == "v2" else ("dataset",))


def _seq(src: HyperParallelFile, keys: tuple[str, ...]) -> int:
    try:
        return to_int(dig(src.data, *keys), src.path, ".".join(keys))
    except ConfigError as exc:
        raise src.error(exc.bare_message, keys) from None


def _read_recompute(c: Collector, src: HyperParallelFile) -> None:
    full = dig(src.data, "model", "config_overrides", "full_rec")
    sel = dig(src.data, "model", "config_overrides", "sel_rec")
    mode_raw = src.get("ac")
    mode = {False: "none", True: "full", None: "none"}.get(mode_raw) if isinstance(mode_raw, (bool, type(None))) \
        else str(mode_raw).strip().lower()
    mode = {"off": "none", "no": "none", "disable": "none", "disabled": "none"}.get(mode, mode)
    if mode not in ("none", "full", "selective"):
        raise src.error(msg("hyperparallel.activation-checkpoint-mode", mode_raw=mode_raw),
                        src.keys["ac"])
    if full is not None and full is not False:
        c.put("strategy.recompute", full, "model.config_overrides.full_rec")
    elif src.has("ac") or full is False:
        c.put("strategy.recompute", mode if full is None else "none", src.key("ac") if full is None
              else "model.config_overrides.full_rec", mode_raw if full is None else full)
    else:
        c.assume("strategy.recompute", "none", msg("hyperparallel.activation-checkpointing-stated"))
    if sel is not None and sel is not False:
        c.put("strategy.sel_counts", sel, "model.config_overrides.sel_rec")
        if full is None and mode == "none":
            c.put("strategy.recompute", "selective", "model.config_overrides.sel_rec", sel)
    layers = src.get("ac_layers")
    if layers is not None and mode == "full":
        if isinstance(layers, list):
            c.put("strategy.recompute", "none", src.key("ac_layers"), layers)
            c.put("strategy.recompute_ranges", [{"first": to_int(i, c.path, src.key("ac_layers"), minimum=0),
                                                 "count": 1, "option": "full"} for i in layers], src.key("ac_layers"))
        else:
            c.put("strategy.recompute", to_int(layers, c.path, src.key("ac_layers"), minimum=0),
                  src.key("ac_layers"))
    slice_ = dig(src.data, "train", "gradient_checkpointing", "recompute_slice_activation")
    if slice_ is not None:
        c.put("strategy.recompute_slice_activation", bool(slice_),
              "train.gradient_checkpointing.recompute_slice_activation")
    offset = dig(src.data, "model", "config_overrides", "offset")
    if offset is not None and offset != 0:
        c.put("strategy.offset", offset, "model.config_overrides.offset")
    if int(c.values.get("model.mtp_layers") or 0) > 0:
        c.derive("strategy.mtp_in_offset", True, "MTP layers take part in the pipeline layer split")


def _read_widths(c: Collector, src: HyperParallelFile) -> None:
    data = src.data
    candidates = {
        "strategy.param_bytes": (("fsdp_config", "mix_precision", "param_dtype"), ("model_init_dtype",),
                                 ("model", "torch_dtype"), ("model", "param_init_type")),
        "strategy.compute_bytes": (("model", "compute_dtype"),),
        "strategy.softmax_bytes": (("model", "softmax_compute_type"),),
        "strategy.reduce_bytes": (("fsdp_config", "mix_precision", "reduce_dtype"),),
    }
    mixed = dig(data, "train", "mixed_precision")
    if isinstance(mixed, dict) and mixed.get("enabled") is not False:
        candidates["strategy.compute_bytes"] += (("train", "mixed_precision", "param_dtype"),)
        candidates["strategy.reduce_bytes"] += (("train", "mixed_precision", "reduce_dtype"),)
    for name, paths in candidates.items():
        for keys in paths:
            raw = dig(data, *keys)
            if raw is not None:
                try:
                    c.put(name, dtype_bytes(raw, c.path, ".".join(keys)), ".".join(keys), raw)
                except ConfigError as exc:
                    raise src.error(exc.bare_message, keys) from None
                break
    target = str(dig(data, "optimizer", "_target_") or dig(data, "train", "optimizer", "type") or "")
    if "muon" in target.lower():
        c.put("strategy.n_optimizer_states", 1, "optimizer._target_", target)
    if dig(data, "optimizer", "fp32_main_params") is True:
        c.put("strategy.master_bytes", 4, "optimizer.fp32_main_params", True)


__all__ = ["FORMAT", "detect", "read", "schema"]
