"""LLaMA-Factory training YAML (``llamafactory-cli train FILE``, issue 13): the model named by
``model_name_or_path`` (local directory, Hugging Face cache or the catalogue), the fine-tuning method
(``finetuning_type`` full / freeze / lora, ``lora_rank``, ``lora_target``, ``quantization_bit`` = QLoRA), the
Trainer's batch, accumulation, precision and gradient checkpointing, ``cutoff_len`` as the sequence length, and
the DeepSpeed config named by ``deepspeed:`` (beside the YAML, else LLaMA-Factory's bundled example of that
path). YAMLs with Megatron keys run on MCoreAdapter (Megatron-core) and are priced as Megatron. The device count
comes from ``--devices`` (the launcher's). ``write`` patches the YAML's own keys in place.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..messages import msg
from ..yamlio import load_data
from . import hub
from .common import load_json, read_text
from .deepspeed import TrainerArgs, read_deepspeed
from .flag_source import ArgsMapping, flag_name
from .known_keys import catalogue, unknown_names
from .llamafactory_unpriced import read_unpriced
from .megatron_strategy_args import read_strategy
from .support import MAX_LAYERS, Collector, Reading, to_int

FORMAT = "llamafactory"
_MARKS = ("finetuning_type", "stage", "per_device_train_batch_size", "cutoff_len", "template", "lora_target")
# lora_target names (Hugging Face module names) -> Strategy.lora_targets; "all" is every linear layer
LORA_TARGETS = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "gate_proj": "gate", "up_proj": "up",
                "down_proj": "down"}
ALL_LINEAR = ("q", "k", "v", "o", "gate", "up", "down")
# LLaMA-Factory's own defaults (hparams/*.py @ ff6d4d1) for what a YAML leaves out
DEFAULTS = {"cutoff_len": 2048, "lora_rank": 8, "lora_target": "all", "lora_dropout": 0.0,
            "double_quantization": True, "finetuning_type": "lora"}


def detect(data: Any, path: str) -> bool:
    return isinstance(data, dict) and isinstance(data.get("model_name_or_path"), str) and \
        sum(1 for k in _MARKS if k in data) >= 2


# keys only an MCoreAdapter (Megatron-core) run sets: one of them makes the YAML a Megatron run
MCORE_MARKS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "expert_model_parallel_size",
               "context_parallel_size", "virtual_pipeline_model_parallel_size", "use_distributed_optimizer",
               "recompute_granularity", "moe_token_dispatcher_type", "sequence_parallel")


def megatron_keys(data: dict[str, Any]) -> list[str]:
    """The keys of a LLaMA-Factory YAML that are Megatron arguments (MCoreAdapter); none unless one of
    MCORE_MARKS is there (a Trainer run's keys that happen to be Megatron flags too are the Trainer's)."""
    if not any(k in data for k in MCORE_MARKS):
        return []
    flags = catalogue("launch_flags").known("")
    own = set(catalogue("llamafactory").known(""))
    return [k for k in data if isinstance(k, str) and k not in own and flag_name(k) in flags]


@cache
def bundled_deepspeed() -> dict[str, dict[str, Any]]:
    text = resources.files(__package__).joinpath("llamafactory_deepspeed.yaml").read_text(encoding="utf-8")
    return load_data(text)["configs"]


def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    if devices is None:
        raise ConfigError(msg("llamafactory.llama-factory-config"), path=path)
    out = Collector(path)
    mcore = megatron_keys(data)
    known = set(catalogue("llamafactory").known("")) | set(mcore)
    out.warnings.extend(unknown_names(path, "", [str(k) for k in data], known, cat=catalogue("llamafactory")))
    hub.collect_model(out, data["model_name_or_path"], "model_name_or_path")
    seq = to_int(data.get("cutoff_len", DEFAULTS["cutoff_len"]), path, "cutoff_len")
    if "cutoff_len" in data:
        out.put("strategy.seq_length", seq, "cutoff_len")
    else:
        out.assume("strategy.seq_length", seq, msg("llamafactory.cutoff_len-llama-factory"))
    out.assume("options.framework", "megatron" if mcore else "hf_trainer",
               msg("llamafactory.llama-factory-mcoreadapter", mcore=', '.join(mcore[:4])) if mcore else
               msg("llamafactory.llama-factory-hugging"))
    if data.get("packing"):
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.packing-samples-concatenated"))
    ds_optimizer = False
    if mcore:
        _mcore(out, data, path, devices)
    else:
        ds_optimizer = _trainer(out, data, path, devices)
    _method(out, data, path)
    read_unpriced(out, data, ds_optimizer)
    return out.reading(FORMAT, "both" if any(k.startswith("model.") for k in out.values) else "strategy", text, path)


def _trainer_args(data: dict[str, Any], path: str) -> TrainerArgs:
    args = TrainerArgs(where={})
    if "per_device_train_batch_size" in data:
        args.micro_batch_size = to_int(data["per_device_train_batch_size"], path, "per_device_train_batch_size")
        args.where["micro_batch_size"] = f"{Path(path).name}: per_device_train_batch_size"
    if "gradient_accumulation_steps" in data:
        args.gradient_accumulation = to_int(data["gradient_accumulation_steps"], path, "gradient_accumulation_steps")
        args.where["micro_batches"] = f"{Path(path).name}: gradient_accumulation_steps"
    for key in ("bf16", "fp16"):
        if key in data:
            if not isinstance(data[key], bool):
                raise ConfigError(msg("llamafactory.must-true-false", key=key, data=data[key]), path=path, key=key)
            setattr(args, key, data[key])
            args.where[key] = f"{Path(path).name}: {key}"
    return args


def _trainer(out: Collector, data: dict[str, Any], path: str, devices: int) -> bool:
    """The Hugging Face Trainer path: DeepSpeed when ``deepspeed:`` names a config, else DDP. Returns whether a
    DeepSpeed config names its own optimizer (then the Trainer's ``optim`` is not used)."""
    trainer = _trainer_args(data, path)
    name = data.get("deepspeed")
    if name is not None:
        ds_path, ds_data, how = _deepspeed_config(str(name), path)
        sub = Collector(ds_path)
        read_deepspeed(sub, ds_data, ds_path, devices, trainer)
        out.values.update(sub.values)
        out.provenance.update(sub.provenance)
        out.warnings.extend(sub.warnings)
        out.assumptions.extend(a for a in sub.assumptions if a.field != "options.framework")
        if how:
            out.warn("W-DEEPSPEED", msg("W-DEEPSPEED", name=name, config=Path(path).name, how=how))
        return isinstance(ds_data.get("optimizer"), dict)
    out.derive("strategy.dp", devices, "the Trainer runs plain data parallel (DDP) over --devices")
    out.derive("strategy.sharding", "none", "no deepspeed: DDP keeps full replicas")
    mbs = trainer.micro_batch_size or 8
    (out.put if trainer.micro_batch_size else out.assume)("strategy.micro_batch_size", mbs,
                                                          "per_device_train_batch_size" if trainer.micro_batch_size
                                                          else "the Trainer's default 8")
    ga = trainer.gradient_accumulation or 1
    (out.put if trainer.gradient_accumulation else out.assume)("strategy.micro_batches", ga,
                                                               "gradient_accumulation_steps"
                                                               if trainer.gradient_accumulation else
                                                               "the Trainer's default 1")
    half = trainer.bf16 or trainer.fp16
    method = data.get("finetuning_type", DEFAULTS["finetuning_type"])
    full = method in ("full", "freeze")
    if method == "freeze":  # frozen weights stay in the load dtype (the compute dtype), without the fp32 cast
        out.derive("strategy.frozen_param_bytes", 2.0 if half else 4.0,
                   "LLaMA-Factory casts only trainable weights to fp32 (model/adapter.py _setup_freeze_tuning)")
    key = "bf16" if trainer.bf16 else "fp16" if trainer.fp16 else "bf16/fp16"
    if half and full and not data.get("pure_bf16"):
        # LLaMA-Factory casts the trainable weights to fp32 (full and freeze alike, model/adapter.py init_adapter);
        # the Trainer runs bf16/fp16 autocast on them
        out.put("strategy.param_bytes", 4.0, key, True)
        out.put("strategy.compute_bytes", 2.0, key, True)
        out.derive("strategy.grad_bytes", 4.0, "fp32 trainable weights get fp32 gradients")
        out.derive("strategy.master_bytes", 0.0, "autocast keeps no separate master copy")
    elif half:
        for name_ in ("strategy.param_bytes", "strategy.compute_bytes", "strategy.grad_bytes"):
            out.put(name_, 2.0, key, True)
        out.derive("strategy.master_bytes", 0.0, "pure_bf16 / adapter training: no master copy of the base")
    else:
        for name_ in ("strategy.param_bytes", "strategy.compute_bytes", "strategy.grad_bytes"):
            out.assume(name_, 4.0, msg("llamafactory.neither-bf16-nor"))
        out.assume("strategy.master_bytes", 0.0, msg("deepspeed.fp32-training-keeps"))
    return False


def _deepspeed_config(name: str, path: str) -> tuple[str, dict[str, Any], str]:
    """(path, data, how it was found when not beside the YAML) of the DeepSpeed config a YAML names."""
    for candidate in (Path(name), Path(path).parent / name, Path(path).parent / Path(name).name):
        if candidate.is_file():
            text = read_text(candidate)
            data = load_json(text, str(candidate))
            if not isinstance(data, dict):
                raise ConfigError(msg("llamafactory.deepspeed-config-must"), path=str(candidate))
            return str(candidate), data, ""
    bundled = bundled_deepspeed().get(name.replace("\\", "/").lstrip("./"))
    if bundled is not None:
        return name, dict(bundled["config"]), f"LLaMA-Factory's bundled {name} ({bundled['source']})"
    raise ConfigError(msg("llamafactory.deepspeed-config-named", name=name,
                          bundled_deepspeed=', '.join(bundled_deepspeed())),
                      path=path, key="deepspeed")


def _mcore(out: Collector, data: dict[str, Any], path: str, devices: int) -> None:
    """MCoreAdapter: the Megatron keys as Megatron arguments; batch = per-device × accumulation × dp."""
    args = {k: data[k] for k in megatron_keys(data)}
    trainer = _trainer_args(data, path)
    mbs, ga = trainer.micro_batch_size or 1, trainer.gradient_accumulation or 1
    tp, pp, cp = (to_int(data.get(k, 1), path, k) for k in ("tensor_model_parallel_size",
                                                            "pipeline_model_parallel_size",
                                                            "context_parallel_size"))
    if devices % (tp * pp * cp):
        raise ConfigError(msg("llamafactory.devices-divisible-tp", devices=devices, tp=tp, pp=pp, cp=cp), path=path,
                          key="tensor_model_parallel_size")
    dp = devices // (tp * pp * cp)
    args.update(micro_batch_size=mbs, global_batch_size=mbs * ga * dp, seq_length=out.values["strategy.seq_length"])
    if trainer.bf16:
        args["bf16"] = True
    read_strategy(ArgsMapping(args, path), out, devices, "--devices", "megatron")
    out.put("strategy.micro_batch_size", mbs, "per_device_train_batch_size")
    out.put("strategy.micro_batches", ga, "gradient_accumulation_steps")
    if trainer.bf16:
        for key in ("strategy.param_bytes", "strategy.compute_bytes"):
            out.put(key, 2.0, "bf16", True)


# freeze_trainable_modules names (the module after ``.{layer}.`` in a parameter name) -> TRAINABLE_PARTS groups
FREEZE_MODULES = {"self_attn": "self_attention", "attention": "self_attention", "attn": "self_attention",
                  "mlp": "mlp", "block_sparse_moe": "mlp", "feed_forward": "mlp",
                  "input_layernorm": "input_norm", "post_attention_layernorm": "post_attention_norm"}
# freeze_extra_modules names (the module of a parameter outside the layers) -> the row whose weights train
FREEZE_EXTRAS = {"embed_tokens": "embedding", "wte": "embedding", "lm_head": "output"}


def _names(value: Any) -> list[str]:
    """A comma-separated argument (LLaMA-Factory's split_arg) or a list, as names."""
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


def _freeze(out: Collector, data: dict[str, Any], path: str) -> None:
    """finetuning_type freeze as LLaMA-Factory's ``_setup_freeze_tuning`` (model/adapter.py) sets it up
    ([A-FREEZE], D-FREEZE): the trainable layers (``freeze_trainable_layers`` n: the last n, −n the first n;
    ``use_llama_pro``: every (L/n)-th layer, the last of each block), the trainable module groups
    (``freeze_trainable_modules``), the embedding and head (``freeze_extra_modules``); every other weight is frozen
    in the load dtype, and its gradient checkpointing skips layers without trainable weights."""
    key = "freeze_trainable_layers"
    n = to_int(data.get(key, 2), path, key, minimum=-MAX_LAYERS, maximum=MAX_LAYERS)
    layers = out.values.get("model.num_layers")
    if data.get("use_llama_pro"):
        if not isinstance(layers, int):
            raise ConfigError(msg("llamafactory.llama-pro-layers"), path=path, key="use_llama_pro")
        if n <= 0 or layers % n:
            raise ConfigError(msg("llamafactory.llama-pro-divisible", layers=layers, n=n), path=path, key=key)
        stride = layers // n
        trainable: tuple[int, ...] = tuple(range(stride - 1, layers, stride))
        out.put("strategy.trainable_layers", trainable, "use_llama_pro", True)
    else:
        # the last n as indices from the end (valid for any layer count); the first n clipped to the layers
        trainable = tuple(range(-n, 0)) if n > 0 else tuple(range(min(-n, layers) if isinstance(layers, int)
                                                                  else -n))
        (out.put if key in data else out.assume)("strategy.trainable_layers", trainable,
                                                 key if key in data else msg("llamafactory.freeze-default"))
    modules = _names(data.get("freeze_trainable_modules", "all"))
    parts = [FREEZE_MODULES.get(m) for m in modules]
    if "all" not in modules:
        unknown = [m for m, part in zip(modules, parts, strict=True) if part is None]
        if unknown:
            out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.freeze-module", names=", ".join(unknown),
                                         known=", ".join(FREEZE_MODULES)))
        out.put("strategy.trainable_parts", tuple(sorted({p for p in parts if p})), "freeze_trainable_modules",
                data.get("freeze_trainable_modules"))
    elif out.values.get("model.num_experts"):
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.freeze-experts"))
    extras = _names(data.get("freeze_extra_modules") or [])
    trains = {FREEZE_EXTRAS[m] for m in extras if m in FREEZE_EXTRAS}
    other = [m for m in extras if m not in FREEZE_EXTRAS]
    if other:
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.freeze-extra", names=", ".join(other)))
    frozen = tuple(m for m in ("embedding", "output") if m not in trains)
    (out.put if "freeze_extra_modules" in data else out.derive)(
        "strategy.frozen_modules", frozen, "freeze_extra_modules" if "freeze_extra_modules" in data else
        "finetuning_type freeze: the embedding and the head train only when freeze_extra_modules names them")
    if not data.get("disable_gradient_checkpointing"):
        out.derive("strategy.checkpoint_trainable_only", True,
                   "LLaMA-Factory's gradient checkpointing runs a layer without trainable weights unchecked "
                   "(model_utils/checkpointing.py get_custom_gradient_checkpointing_func)")


def _method(out: Collector, data: dict[str, Any], path: str) -> None:
    """finetuning_type, LoRA / QLoRA, gradient checkpointing, attention kernel."""
    kind = str(data.get("finetuning_type", DEFAULTS["finetuning_type"])).lower()
    if "finetuning_type" not in data:
        out.assume("strategy.peft", "lora", msg("llamafactory.finetuning_type-llama-factory"))
    if kind in ("full", "freeze") and data.get("quantization_bit") is not None:
        raise ConfigError(msg("llamafactory.quantization_bit-finetuning_type-llama", kind=kind), path=path,
                          key="quantization_bit")
    if kind == "freeze":
        _freeze(out, data, path)
    elif kind == "lora":
        if "finetuning_type" in data:
            out.put("strategy.peft", "lora", "finetuning_type")
        bits = data.get("quantization_bit")
        if bits is not None:
            bits = to_int(bits, path, "quantization_bit")
            if bits == 4 and str(data.get("quantization_method", "bnb")).lower() == "bnb":
                out.put("strategy.peft", "qlora", "quantization_bit", bits)
                double = data.get("double_quantization", DEFAULTS["double_quantization"])
                out.put("strategy.qlora_double_quant", bool(double), "double_quantization", double)
            else:
                method = data.get("quantization_method", "bnb")
                out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.quantization_bit-only-bit", bits=bits, method=method))
        elif "double_quantization" in data:  # kept for a change back to QLoRA (and the write-back check)
            out.put("strategy.qlora_double_quant", bool(data["double_quantization"]), "double_quantization",
                    data["double_quantization"])
        rank = data.get("lora_rank", DEFAULTS["lora_rank"])
        (out.put if "lora_rank" in data else out.assume)("strategy.lora_rank", to_int(rank, path, "lora_rank"),
                                                         "lora_rank" if "lora_rank" in data else
                                                         "LLaMA-Factory's default lora_rank 8")
        out.put("strategy.lora_targets", _targets(data, path), "lora_target", data.get("lora_target", "all"))
        dropout = data.get("lora_dropout", DEFAULTS["lora_dropout"])
        if dropout:
            out.put("strategy.lora_dropout", dropout, "lora_dropout")  # parse coerces and bounds it
        out.derive("strategy.lora_param_bytes", 4.0, "LLaMA-Factory keeps the trainable adapters in fp32 (unless "
                                                     "pure_bf16)" if not data.get("pure_bf16") else "pure_bf16")
    elif kind != "full":
        raise ConfigError(msg("llamafactory.finetuning_type-expected-full", kind=kind), path=path,
                          key="finetuning_type")
    if data.get("disable_gradient_checkpointing"):
        out.put("strategy.recompute", "none", "disable_gradient_checkpointing", True)
    elif "strategy.recompute" not in out.values:
        out.assume("strategy.recompute", "full", msg("llamafactory.llama-factory-enables"))
    if str(data.get("flash_attn", "auto")).lower() == "fa2":
        out.put("options.kv_repeat", False, "flash_attn", "fa2")


def _targets(data: dict[str, Any], path: str) -> tuple[str, ...]:
    raw = data.get("lora_target", DEFAULTS["lora_target"])
    names = [n.strip() for n in (raw if isinstance(raw, list) else str(raw).split(",")) if n.strip()]
    if names == ["all"]:
        return ALL_LINEAR
    unknown = [n for n in names if n not in LORA_TARGETS]
    if unknown:
        raise ConfigError(msg("llamafactory.lora_target-estimator-knows", unknown=', '.join(unknown),
                              LORA_TARGETS=', '.join(LORA_TARGETS)), path=path, key="lora_target")
    return tuple(dict.fromkeys(LORA_TARGETS[n] for n in names))


__all__ = ["FORMAT", "detect", "megatron_keys", "read"]
