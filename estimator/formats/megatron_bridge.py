"""Megatron-Bridge / NeMo 2 run configs (issue 13). A ``ConfigContainer`` has sections — ``model`` (the Megatron
TransformerConfig / model provider), ``train``, ``ddp``, ``dist``, ``optimizer``, ``mixed_precision``, ``peft``,
``dataset`` … — whose keys are Megatron's arguments under their config names; they are translated to Megatron
arguments and read by the Megatron readers (``megatron_model_args``, ``megatron_strategy_args``).

Two forms are read:

- YAML: an override file (``--config-file`` of the recipe scripts: only the keys it changes) or a serialised run
  config (every key). An override file does not name the recipe it overrides: what it leaves out is Megatron's
  default, said as an assumption, and the model comes from ``--model`` (a Hub id or a config.json) unless the
  ``model`` section states its shape. ``write`` patches the YAML's own keys.
- Python recipe modules (``recipe.py:FUNCTION``), read statically (``py_static``): ``cfg.model =
  AutoBridge.from_hf_pretrained("ORG/NAME")…`` names the model (the catalogue / local cache), ``cfg.X.Y = literal``
  assignments set the keys. What cannot be read (an imported helper's defaults, helper calls that change the
  config, values computed in code) is named with the fix. Python is code: export is refused with the values.

The device count comes from ``--devices``: neither form states it.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

from ..attention_mask import mask_bytes
from ..errors import ConfigError
from ..limits import short_repr
from ..messages import Message, msg
from ..nearest import suggest
from ..units import fmt_bytes
from ..warnings import Assumption
from ..yamlio import load_data
from . import hub
from .flag_source import ArgsMapping
from .megatron_model_args import read_model
from .megatron_strategy_args import READ_FLAGS, read_strategy
from .megatron_vocab import flag_warnings
from .py_static import Call, Module, Symbol, Unresolved, split_entry
from .support import Collector, Reading

FORMAT = "megatron_bridge"
FORMAT_PY = "megatron_bridge_py"
# sections whose keys are Megatron arguments
ARG_SECTIONS = ("model", "train", "ddp", "dist", "optimizer", "mixed_precision", "comm_overlap")
# sections ignored by design (data, logging, checkpoints, schedules, profiling, fault tolerance)
IGNORED = ("dataset", "checkpoint", "logger", "scheduler", "rng", "profiling", "tokenizer", "ft", "straggler",
           "nvrx_straggler", "inprocess_restart", "rerun_state_machine", "tensor_inspect", "validation")
MARKS = ("train", "ddp", "dist", "optimizer", "scheduler", "checkpoint", "logger", "rng", "mixed_precision")
# config names whose Megatron argument is named differently (config key -> Megatron argument key)
RENAMES = {"num_layers_in_first_pipeline_stage": "decoder_first_pipeline_num_layers",
           "num_layers_in_last_pipeline_stage": "decoder_last_pipeline_num_layers",
           "num_moe_experts": "num_experts", "grad_reduce_in_fp32": "accumulate_allreduce_grads_in_fp32",
           "fp8": "fp8_format"}
# config booleans that are the opposite of a Megatron switch
INVERTED = {"share_embeddings_and_output_weights": "untie_embeddings_and_output_weights",
            "add_bias_linear": "disable_bias_linear", "masked_softmax_fusion": "no_masked_softmax_fusion"}
# keys that restate what other keys say (the 16-bit dtype of bf16_mixed): nothing more to price
RESTATED = ("pipeline_dtype", "params_dtype", "autocast_dtype")
DTYPES = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16", "float32": "fp32",
          "bfloat16": "bf16", "float16": "fp16"}
# what an override file leaves to the recipe it overrides and the estimator prices (Megatron's defaults stand in)
RECIPE_SETTINGS = ("model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
                   "model.context_parallel_size", "model.expert_model_parallel_size", "model.sequence_parallel",
                   "model.recompute_granularity", "ddp.use_distributed_optimizer")
# fields only Megatron's MLATransformerConfig has: a config that sets one is an MLA config
MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim")
LAYOUT_TOKENS = {"embedding": "E", "decoder": "t", "mtp": "m", "loss": "L"}
# Megatron-Bridge's LoRA defaults (peft/lora.py): rank 32 on the four linear layers of a block
LORA_DEFAULT_RANK = 32
LORA_MODULES = {"linear_qkv": ("qkv",), "linear_proj": ("o",), "linear_fc1": ("fc1",), "linear_fc2": ("down",),
                "linear_q": ("q",), "linear_kv_down_proj": ("kv_a",), "linear_kv_up_proj": ("kv_b",),
                "linear_q_down_proj": ("q_a",), "linear_q_up_proj": ("q_b",)}
LORA_DEFAULT_TARGETS = ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")
# the estimator's field a key sets, named in the fix when a recipe's value for it cannot be read (--set FIELD=…)
SET_FIELDS = {"num_layers": "model.num_layers", "hidden_size": "model.hidden_size",
              "ffn_hidden_size": "model.ffn_hidden_size", "num_attention_heads": "model.num_attention_heads",
              "num_query_groups": "model.num_kv_heads", "kv_channels": "model.head_dim",
              "vocab_size": "model.vocab_size", "num_moe_experts": "model.num_experts",
              "moe_router_topk": "model.experts_per_token", "seq_length": "strategy.seq_length",
              "sequence_length": "strategy.seq_length", "tensor_model_parallel_size": "strategy.tp",
              "pipeline_model_parallel_size": "strategy.pp", "context_parallel_size": "strategy.cp",
              "expert_model_parallel_size": "strategy.ep", "sequence_parallel": "strategy.sequence_parallel",
              "micro_batch_size": "strategy.micro_batch_size", "dim": "strategy.lora_rank",
              "dropout": "strategy.lora_dropout"}


# ------------------------------------------------------------------------------------------ detection
def detect(data: Any, path: str) -> bool:
    if data is None:
        return _is_bridge_python(path)
    return isinstance(data, dict) and isinstance(data.get("model"), dict) and \
        sum(1 for k in MARKS if isinstance(data.get(k), dict) or (k == "mixed_precision" and k in data)) >= 1 and \
        "model_name_or_path" not in data and "ARGS" not in data


def _is_bridge_python(path: str) -> bool:
    from .common import read_text

    file, _ = split_entry(path)
    if not file.lower().endswith(".py"):
        return False
    try:
        return "megatron.bridge" in read_text(file)
    except ConfigError:
        return False


# ------------------------------------------------------------------------------------------ YAML
def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    if data is None:
        return read_python(text, path, devices)
    if not isinstance(data, dict):
        raise ConfigError(msg("megatron_bridge.megatron-bridge-config-2"), path=path)
    out = Collector(path)
    sections = {k: v for k, v in data.items() if k in ARG_SECTIONS}
    for name, section in sections.items():
        # a section is a mapping; only mixed_precision may instead name a recipe ("bf16_mixed")
        if not (isinstance(section, dict) or (name == "mixed_precision" and isinstance(section, str))):
            raise ConfigError(msg("megatron_bridge.must-mapping", name=name), path=path, key=name)
    out.assume("options.framework", "megatron", msg("megatron_bridge.megatron-bridge-config"))
    _read(out, sections, data.get("peft"), data.get("dataset"), path, devices)
    known = (*ARG_SECTIONS, *IGNORED, "peft")
    for key in (k for k in data if k not in known):
        near = suggest(str(key), list(known))
        out.warn("W-KEY-UNKNOWN", msg("W-KEY-UNKNOWN.bridge-section.near", key=key, near=near) if near else
                 msg("W-KEY-UNKNOWN.bridge-section", key=key))
    if "model.num_layers" not in out.values:
        out.warn("W-MODEL", msg("W-MODEL.file-does-state"))
        # an override of a recipe: the settings it leaves out are the recipe's, which this file does not name
        unstated = [key for key in RECIPE_SETTINGS
                    if not isinstance(data.get(key.split(".")[0]), dict) or key.split(".")[1] not in
                    data[key.split(".")[0]]]
        if unstated:
            out.assumptions.append(Assumption("recipe settings", ", ".join(unstated),
                                              msg("megatron_bridge.unstated-recipe-settings")))
    role = "both" if any(k.startswith("model.") for k in out.values) else "strategy"
    return out.reading(FORMAT, role, text, path)


def megatron_args(sections: dict[str, Any], out: Collector) -> tuple[dict[str, Any], dict[str, str]]:
    """The Megatron arguments the sections state (argument key -> value) and where each comes from."""
    args: dict[str, Any] = {}
    where: dict[str, str] = {}
    unread_mappings: list[str] = []
    for name, section in sections.items():
        if name == "mixed_precision" and isinstance(section, str):  # a named recipe: "bf16_mixed", "fp8_…"
            _precision_recipe(section, args, where)
            continue
        for key, value in (section or {}).items():
            key = str(key)
            if isinstance(value, Symbol) and value.name in DTYPES:
                value = DTYPES[value.name]
            if isinstance(value, dict) and not key.startswith("_"):  # a YAML mapping where a value belongs
                if _is_read(name, key):
                    out.warn("W-VALUE-MAPPING", _mapping_value(out.path, f"{name}.{key}", value))
                else:
                    unread_mappings.append(f"{name}.{key}")
                continue
            if key.startswith("_") or key in RESTATED or isinstance(value, (Unresolved, Call, Symbol)):
                continue
            if isinstance(value, str) and value in DTYPES:
                value = DTYPES[value]
            if key in INVERTED:
                arg, value = INVERTED[key], (not value) if isinstance(value, bool) else value
            else:
                arg = RENAMES.get(key, key)
            if key == "pipeline_model_parallel_layout" and isinstance(value, list):
                value = _layout_string(value, out)
            if name == "mixed_precision" and key == "bf16" and value is True:
                arg = "bf16"
            args[arg] = value
            where[arg] = f"{name}.{key}"
    if unread_mappings:
        out.warn("W-FLAG-UNPRICED", msg("W-FLAG-UNPRICED.bridge-mappings", names=", ".join(unread_mappings)))
    # the provider's own spellings of what Megatron's flags switch on
    model = sections.get("model") if isinstance(sections.get("model"), dict) else {}
    mla_key = next((k for k in MLA_KEYS if k in model), None)
    if mla_key is not None and "multi_latent_attention" not in model:  # only an MLA config has these fields
        args["multi_latent_attention"], where["multi_latent_attention"] = True, f"model.{mla_key}"
    heads, groups = model.get("num_attention_heads"), model.get("num_query_groups")
    if isinstance(groups, int) and groups != heads:
        args["group_query_attention"], where["group_query_attention"] = True, "model.num_query_groups"
    if model.get("gated_linear_unit") is True:  # GPTModelProvider's gated unit with its default SiLU: SwiGLU
        args.pop("gated_linear_unit", None)
        args["swiglu"], where["swiglu"] = True, "model.gated_linear_unit"
    return args, where


def _mapping_value(path: str, key: str, value: dict) -> Message:
    """The warning for a YAML ``key`` the estimator reads whose value is a mapping: it is priced at what it was
    before; the fix names the field to set."""
    field = SET_FIELDS.get(key.partition(".")[2])
    fix = msg("megatron_bridge.fix-set-field", field=field) if field else msg("megatron_bridge.fix-set")
    return msg("W-VALUE-MAPPING", file=path, key=key, value=short_repr(value), default=msg(
        "megatron_bridge.default-base"), fix=fix)


def _precision_recipe(name: str, args: dict[str, Any], where: dict[str, str]) -> None:
    lowered = name.lower()
    if "bf16" in lowered:
        args["bf16"] = True
    if "fp16" in lowered and "bf16" not in lowered:
        args["fp16"] = True
    if "fp8" in lowered or "mxfp8" in lowered:
        args["fp8_format"] = "hybrid"
        recipe = next((r for r in ("mxfp8", "blockwise", "current", "delayed", "subchannel") if r in lowered),
                      "delayed")
        args["fp8_recipe"] = {"current": "tensorwise", "subchannel": "blockwise"}.get(recipe, recipe)
    for key in ("bf16", "fp16", "fp8_format", "fp8_recipe"):
        if key in args:
            where[key] = f"mixed_precision {name!r}"


def _layout_string(rows: list[Any], out: Collector) -> str | None:
    """A layout given as lists of layer kinds per stage as Megatron's layout string."""
    stages = []
    for row in rows:
        if not isinstance(row, list) or any(t not in LAYOUT_TOKENS for t in row):
            out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.pipeline_model_parallel_layout-lists-embedding",
                                            rows=short_repr(rows)))
            return None
        stages.append("".join(LAYOUT_TOKENS[t] for t in row))
    return "|".join(stages)


def _read(out: Collector, sections: dict[str, Any], peft: Any, dataset: Any, path: str,
          devices: int | None, from_hub: bool = False, lines: dict[str, int] | None = None) -> None:
    """``from_hub``: the model comes from the Hub and the model keys override it; ``lines``: section.key -> the
    recipe line that sets it (provenance names it)."""
    if devices is None:
        raise ConfigError(msg("megatron_bridge.megatron-bridge-config-3"), path=path)
    args, where = megatron_args(sections, out)
    for arg, key in where.items():
        if key in (lines or {}):
            where[arg] = f"{key} (line {lines[key]})"  # a locator, like the launch-script readers' "NAME (line N)"
    if "seq_length" not in args and isinstance(dataset, dict):
        for key in ("seq_length", "sequence_length"):
            if isinstance(dataset.get(key), int):
                args["seq_length"], where["seq_length"] = dataset[key], f"dataset.{key}"
                break
    if not any(k in args for k in ("bf16", "fp16")) and "mixed_precision" not in sections:
        args["bf16"], where["bf16"] = True, "no mixed_precision: Megatron-Bridge recipes' bf16_mixed"
        out.assumptions.append(Assumption("strategy.param_bytes", 2.0, where["bf16"]))
    if from_hub and "model.kv_lora_rank" in out.values and "multi_latent_attention" not in args:
        # the Hub model is MLA: its provider is an MLA config, whose dimension fields the recipe may change
        args["multi_latent_attention"], where["multi_latent_attention"] = True, "the Hub model's MLA attention"
    fl = BridgeArgs(args, path, where)
    if not from_hub and fl.has("--num-layers") and fl.has("--hidden-size"):
        read_model(fl, out, "megatron", "pretrain_gpt.py")
    else:  # changes to a model from the Hub or from --model: applied over it
        _model_overrides(fl, out, sections.get("model"))
    read_strategy(fl, out, devices, "--devices", "megatron")
    read_peft(out, peft)
    _dataset_mask(out, fl, dataset)
    said = flag_warnings(fl, READ_FLAGS, "megatron")
    out.warnings.extend(w for w in said if w.code != "W-KEY-UNKNOWN")
    unread = [w for w in said if w.code == "W-KEY-UNKNOWN"]
    if unread:
        names: set[str] = set()
        for flag in (n for n in fl.names() if any(n in w.text for w in unread)):
            key = flag.lstrip("-").replace("-", "_")
            located = where.get(key, key)
            near = suggest(key, _config_keys(), cutoff=0.85)
            if near is None:
                names.add(located)
            else:  # a misspelling: the key it stands for keeps its default, said with the fix
                out.warn("W-KEY-UNKNOWN", msg("W-KEY-UNKNOWN.bridge-key.near", key=located, near=near))
        if names:
            listed = sorted(names)
            out.warn("W-FLAG-UNPRICED", msg("W-FLAG-UNPRICED.bridge-keys",
                                            names=", ".join(listed[:20]) + (" …" if len(listed) > 20 else "")))


def _dataset_mask(out: Collector, fl: BridgeArgs, dataset: Any) -> None:
    """Megatron-Bridge (training/gpt_step.py ``get_batch_from_iterator``, 067f987) moves the dataset's attention
    mask to the device only when ``dataset.skip_getting_attention_mask_from_dataset`` is false (default true: the
    mask a GPT dataset builds stays on the host and is dropped); then every pipeline stage receives the micro-batch's
    b×1×s×s boolean mask (``_middle_pp_stage_needs_batch``) and context parallelism keeps s/cp of its rows. The
    dataset builds it unless ``create_attention_mask`` is false (Megatron's GPTDatasetConfig default true; the SFT
    datasets always). Not priced (docs/decisions.md D-MG-AUDIT): said with its size."""
    if not isinstance(dataset, dict) or dataset.get("skip_getting_attention_mask_from_dataset") is not False or \
            dataset.get("create_attention_mask") is False:
        return
    try:
        seq, micro = fl.int("--seq-length", 1), fl.int("--micro-batch-size", 1) or 1
        cp = fl.int("--context-parallel-size", 1) or 1
    except ConfigError:  # a malformed value is the readers' to report
        seq = None
    if seq is None:
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.bridge-attention-mask"))
        return
    out.warn("W-UNMODELLED", msg("W-UNMODELLED.bridge-attention-mask.sized", b=micro, rows=seq // cp, s=seq,
                                 size=fmt_bytes(mask_bytes(micro, seq, cp))))


@cache
def _config_keys() -> tuple[str, ...]:
    """Every Megatron argument under its config name (and the provider spellings that rename or invert one): what a
    misspelt key is matched against."""
    from .known_keys import catalogue

    flags = [f.lstrip("-").replace("-", "_") for f in catalogue("launch_flags").known("")]
    return tuple(dict.fromkeys([*flags, *RENAMES, *INVERTED, *MLA_KEYS]))


class BridgeArgs(ArgsMapping):
    """Megatron arguments from config keys, each located at its section.key."""

    parser_defaults = False  # the config dataclasses' own defaults apply

    def __init__(self, args: dict[str, Any], path: str, where: dict[str, str]) -> None:
        super().__init__(args, path)
        self.origin = where

    def where(self, name: str) -> str:
        key = self.keys.get(name, name.lstrip("-").replace("-", "_"))
        return self.origin.get(key, key)


def read_peft(out: Collector, peft: Any) -> None:
    """``peft``: a LoRA section (``dim``, ``alpha``, ``target_modules``) or the name of the method."""
    if peft is None:
        return
    if isinstance(peft, str):
        if peft.lower() not in ("lora", "dora"):
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.peft-priced-lora", peft=peft))
            return
        peft = {}
    if not isinstance(peft, dict):
        out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED", peft=peft))
        return
    rank = peft.get("dim", LORA_DEFAULT_RANK)
    targets = peft.get("target_modules", list(LORA_DEFAULT_TARGETS))
    if not isinstance(rank, int) or isinstance(rank, bool) or not isinstance(targets, list):
        raise ConfigError(msg("megatron_bridge.peft-dim-must", rank=rank, targets=targets),
                          path=out.path, key="peft")
    out.put("strategy.peft", "lora", "peft", "lora")
    (out.put if "dim" in peft else out.assume)("strategy.lora_rank", rank, "peft.dim" if "dim" in peft else
                                               "Megatron-Bridge's default LoRA rank 32")
    unknown = [t for t in targets if t not in LORA_MODULES]
    if unknown:
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.lora-priced", map=', '.join(map(str, unknown))))
    out.put("strategy.lora_targets", tuple(dict.fromkeys(m for t in targets if t in LORA_MODULES
                                                         for m in LORA_MODULES[t])),
            "peft.target_modules" if "target_modules" in peft else "Megatron-Bridge's default LoRA targets", targets)
    dropout = peft.get("dropout")
    if dropout:
        out.put("strategy.lora_dropout", dropout, "peft.dropout")


# ------------------------------------------------------------------------------------------ Python recipes
def read_python(text: str, path: str, devices: int | None) -> Reading:
    from .torchtitan_py import choose_function

    file, function = split_entry(path)
    module = Module(text, file)
    function = choose_function(module, function, file, ("ConfigContainer",))
    cfg = module.evaluate(function)
    if not isinstance(cfg, Call):
        raise ConfigError(msg("megatron_bridge.does-return-configcontainer", function=function, cfg=cfg),
                          path=path)
    out = Collector(path)
    out.assume("options.framework", "megatron", msg("megatron_bridge.megatron-bridge-recipe"))
    base, base_source = base_sections(cfg.short)
    if base:
        out.assumptions.append(Assumption("recipe base", f"{cfg.short}()", msg("megatron_bridge.line-settings-read",
                                                                               line=cfg.line, base_source=base_source)))
    elif cfg.name != "ConfigContainer":
        out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.line-config-starts", line=cfg.line, name=cfg.name))
    for call, line in module.side_calls:
        out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.line-changes-config", line=line, call=call))
    sections: dict[str, Any] = {}
    for name in (*ARG_SECTIONS, "dataset", "peft"):
        inherited = base.get(name)
        if name not in cfg.kwargs:
            sections[name] = inherited
            continue
        stated = _call_section(name, cfg.kwargs[name], out)  # None: the recipe turns it off (cfg.peft = None)
        sections[name] = {**inherited, **stated} if isinstance(inherited, dict) and isinstance(stated, dict) \
            else stated
    from_hub = _python_model(out, cfg.kwargs.get("model"))
    _read(out, {k: v for k, v in sections.items() if k in ARG_SECTIONS and v is not None}, sections.get("peft"),
          sections.get("dataset"), path, devices, from_hub, _lines(cfg))
    if base:  # say where the inherited values come from
        for key, prov in list(out.provenance.items()):
            section, _, name = str(prov.key or "").partition(".")
            inherited = base.get(section)
            if isinstance(inherited, dict) and name in inherited and name not in _stated(cfg, section):
                out.provenance[key] = type(prov)(prov.source, path=prov.path,
                                                 key=f"{prov.key} ({cfg.short}() in {base_source})", raw=prov.raw)
    role = "both" if any(k.startswith("model.") for k in out.values) else "strategy"
    return out.reading(FORMAT_PY, role, text, path)


def _lines(cfg: Call) -> dict[str, int]:
    """section.key -> the recipe line that assigns it."""
    return {f"{name}.{key}": section.where(key) for name, section in cfg.kwargs.items() if isinstance(section, Call)
            for key in section.kwargs}


def _stated(cfg: Call, section: str) -> set[str]:
    value = cfg.kwargs.get(section)
    return set(value.kwargs) if isinstance(value, Call) else set()


@cache
def _bases() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("megatron_bridge_bases.yaml").read_text(encoding="utf-8")
    return load_data(text)


def base_sections(name: str) -> tuple[dict[str, Any], str]:
    """The sections a Megatron-Bridge base recipe (``_pretrain_common`` …) sets, and where that is read from."""
    data = _bases()
    return data["bases"].get(name, {}), f"Megatron-Bridge recipes/common.py ({data['source']})"


def _call_section(name: str, value: Any, out: Collector) -> Any:
    if isinstance(value, str) or value is None:
        return value
    if name == "mixed_precision" and isinstance(value, Call) and not value.kwargs:
        return value.short  # bf16_mixed(), bf16_with_fp8_current_scaling_mixed(), …
    if not isinstance(value, Call):
        out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.read", name=name, value=value))
        return {}
    section = {}
    for key, item in value.kwargs.items():
        if not _unreadable(item):
            section[key] = item
        elif isinstance(item, Unresolved) or _is_read(name, key):
            out.warn("W-PY-UNRESOLVED", _unread_value(split_entry(out.path)[0], value.where(key), f"{name}.{key}",
                                                      item))
    return section


def _unreadable(value: Any) -> bool:
    """Whether the static reading has no value for a key: code it does not run, a mapping where a value belongs, an
    imported name that is not a dtype."""
    return isinstance(value, (Unresolved, Call, dict)) or (isinstance(value, Symbol) and value.name not in DTYPES)


def _is_read(section: str, key: str) -> bool:
    """Whether the estimator reads ``section.key`` (so a value it cannot read is a value it prices at a default)."""
    if section == "peft":
        return key in ("dim", "target_modules", "dropout")
    if section == "dataset":
        return key in ("seq_length", "sequence_length")
    if key == "tp_comm_overlap_cfg":  # a path is read (D-UB-CFG); Bridge's inline mapping of settings is not
        return False
    arg = INVERTED.get(key) or RENAMES.get(key, key)
    return f"--{arg.replace('_', '-')}" in READ_FLAGS or key in ("num_query_groups", "gated_linear_unit")


def _unread_value(file: str, line: int, key: str, value: Any) -> Message:
    """The warning for ``key`` set to a value the static reading cannot resolve: file, line, key and the fix."""
    default = msg("megatron_bridge.default-lora") if key.startswith("peft.") else msg("megatron_bridge.default-base")
    field = SET_FIELDS.get(key.partition(".")[2])
    fix = msg("megatron_bridge.fix-set-field", field=field) if field else msg("megatron_bridge.fix-set")
    if isinstance(value, Unresolved):
        return msg("W-PY-UNRESOLVED.value-unresolved", file=file, line=value.line or line, key=key, why=value.why,
                   default=default, fix=fix)
    if isinstance(value, Call):
        return msg("W-PY-UNRESOLVED.value-call", file=file, line=line, key=key, call=f"{value.name}()",
                   default=default, fix=fix)
    if isinstance(value, Symbol):
        return msg("W-PY-UNRESOLVED.value-symbol", file=file, line=line, key=key, name=value.name, default=default,
                   fix=fix)
    return msg("W-PY-UNRESOLVED.value-mapping", file=file, line=line, key=key, value=short_repr(value),
               default=default, fix=fix)


def _python_model(out: Collector, model: Any) -> bool:
    """The model AutoBridge.from_hf_pretrained names, into ``out``; whether it is known."""
    name = model.name if isinstance(model, Call) else ""
    found = re.search(r"from_hf_pretrained\(\s*['\"]([^'\"]+)['\"]", name)
    if found is None:
        out.warn("W-MODEL", msg("W-MODEL.recipe-s-model", value=name or model))
        return False
    return hub.collect_model(out, found.group(1), "AutoBridge.from_hf_pretrained")


def _model_overrides(fl: BridgeArgs, out: Collector, model: Any) -> None:
    """The model fields a recipe (or override file) assigns over a model built elsewhere — after
    ``AutoBridge.from_hf_pretrained(…)``, or the ``--model`` a provider class or an override file leaves to the
    user: each wins over that model's value (the provider is built first, then the assignments change it). Only what
    is stated is taken: Megatron's defaults for a launch script's missing flags do not apply, the model says it."""
    stated = Collector(out.path)
    read_model(fl, stated, "megatron", "pretrain_gpt.py")
    for key, prov in stated.provenance.items():
        if prov.source == "file":
            out.values[key], out.provenance[key] = stated.values[key], prov
            out.model_overrides.add(key)
    if isinstance(model, dict) and "q_lora_rank" in model and model["q_lora_rank"] is None:
        # an MLA config without query compression (DeepSeek-V2-Lite's shape; 0 in the model spec): it wins too
        out.put("model.q_lora_rank", 0, fl.where("--q-lora-rank"), raw=None)
        out.model_overrides.add("model.q_lora_rank")


# ------------------------------------------------------------------------------------------ writing
__all__ = ["FORMAT", "FORMAT_PY", "BridgeArgs", "detect", "megatron_args", "read", "read_peft"]
