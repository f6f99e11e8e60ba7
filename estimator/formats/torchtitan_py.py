"""torchtitan's Python config registry (``torchtitan/models/<m>/config_registry.py``, issue 13): a function returning
``Trainer.Config(...)``, named ``FILE.py:FUNCTION`` (or the only one in the file). The module is read statically
(``py_static``: parsed, never imported or executed) and its calls are turned into the TOML job config they stand
for — ``TrainingConfig``, ``ParallelismConfig``, ``CompileConfig``, ``SelectiveAC``/``FullAC``/
``ActivationCheckpointConfig``, the model converters (float8 / MXFP8 linears and grouped experts, LoRA) and
``model_registry("FLAVOR")`` — which the TOML reader prices. A value the static reading cannot know is named with
its line and the ``--set`` that supplies it. Python is code, so export is refused with the values to type in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import flavors
from ..errors import ConfigError
from ..messages import msg
from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from ..warnings import Assumption
from . import torchtitan
from .common import read_text
from .py_static import Call, Module, Unresolved, split_entry
from .support import Collector, Reading, changed_fields, refusal
from .torchtitan_write import job_changes

FORMAT = "torchtitan_py"
# Trainer.Config keywords read, and those ignored by design (data, logging, checkpoints, schedules, validation)
SECTIONS = ("model_spec", "training", "parallelism", "activation_checkpoint", "compile", "model_converters",
            "loss", "optimizer")
IGNORED = ("hf_assets_path", "dataloader", "metrics", "checkpoint", "lr_scheduler", "validator", "profiler",
           "profiling", "comm", "fault_tolerance", "debug", "job", "tokenizer", "override", "memory_estimation")
# --set fields for what a section's value supplies, for unresolved values
FIXES = {"training": "strategy.micro_batch_size / strategy.seq_length", "parallelism": "strategy.tp / pp / cp / ep",
         "activation_checkpoint": "strategy.recompute", "compile": "strategy.compile",
         "model_spec": "--model config.json"}
# LoRAConverter target_modules (torchtitan module names) -> Strategy.lora_targets
LORA_MODULES = {"wq": ("q",), "wk": ("k",), "wv": ("v",), "wkv": ("k", "v"), "wo": ("o",), "w1": ("gate",),
                "w3": ("up",), "w2": ("down",)}


def _split(path: str) -> tuple[str, str | None]:
    return split_entry(path)


def detect(data: Any, path: str) -> bool:
    file, _ = _split(path)
    if data is not None or not file.lower().endswith(".py"):
        return False
    try:
        text = read_text(file)
    except ConfigError:
        return False
    return "torchtitan" in text and "megatron.bridge" not in text


def _job_of(text: str, path: str, extra: Collector) -> tuple[dict[str, Any], str, Module]:
    """The TOML job config the registry function stands for, the function's name and the parsed module."""
    file, function = _split(path)
    module = Module(text, file)
    function = choose_function(module, function, file, ("Trainer.Config", "JobConfig"))
    config = module.evaluate(function)
    if not isinstance(config, Call):
        raise ConfigError(msg("torchtitan_py.does-return-trainer", function=function, config=config),
                          path=path)
    return _job(config, module, f"{file}:{function}", extra), function, module


def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    extra = Collector(path)
    job, _function, module = _job_of(text, path, extra)
    for call, line in module.side_calls:
        extra.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.line-changes-config-2", line=line, call=call))
    reading = torchtitan.read(text, path, job, devices)
    reading.format = FORMAT
    reading.values.update(extra.values)
    reading.provenance.update(extra.provenance)
    reading.warnings.extend(extra.warnings)
    reading.assumptions.extend(extra.assumptions)
    reading.values["options.framework"] = "torchtitan"
    return reading


def choose_function(module: Module, function: str | None, file: str, returns: tuple[str, ...]) -> str:
    """The recipe function to read: the one named, else the only one whose return annotation is one of
    ``returns``; a ConfigError listing the choices otherwise."""
    candidates = [name for name in module.functions if any(r in module.returns(name) for r in returns)
                  and not name.startswith("_")]
    if function is not None:
        if function not in module.functions:
            raise ConfigError(msg("torchtitan_py.function-file-recipes", function=function,
                                  candidates=', '.join(candidates)),
                              path=file)
        return function
    if len(candidates) == 1:
        return candidates[0]
    shown = ", ".join(candidates[:12]) + (" …" if len(candidates) > 12 else "")
    raise ConfigError(msg("torchtitan_py.name-recipe-read", name=Path(file).name, n_candidates=len(candidates),
                          shown=shown), path=file)


def _job(config: Call, module: Module, entry: str, out: Collector) -> dict[str, Any]:
    """The TOML job config ``config`` stands for (sections as dicts; unresolved values left out and named)."""
    job: dict[str, Any] = {}
    for key, value in config.kwargs.items():
        if key in IGNORED:
            continue
        if key not in SECTIONS:
            out.warn("W-KEY-UNKNOWN", msg("W-KEY-UNKNOWN", key=key))
            continue
        if isinstance(value, Unresolved):
            out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.static-reading-cannot", key=key, value=value,
                                            fix=FIXES.get(key, '--set')))
            continue
        if key == "model_spec":
            _model(job, value, module, entry, out)
        elif key == "model_converters" and isinstance(value, Call):
            _converters(job, value.get("converters"), out)
        elif key == "loss":
            _loss(value, out)
        elif key == "optimizer":
            _optimizer(job, value, out)
        elif key == "activation_checkpoint":
            _checkpointing(job, value, out)
        elif isinstance(value, Call):  # training, parallelism, compile: their keywords are the TOML keys
            job.setdefault(key, {}).update(_section(key, value, out))
    return job


# keys that size the batch: without them the reader would price torchtitan's defaults, so they must resolve
BATCH_KEYS = ("local_batch_size", "seq_len", "max_context_length", "num_tokens_per_microbatch_per_dp_rank",
              "global_batch_size", "num_tokens_per_train_step")


def _section(name: str, call: Call, out: Collector) -> dict[str, Any]:
    """A config call's keyword arguments as a TOML section; unresolved ones named and left out (refused for the
    batch keys)."""
    section = {}
    for key, value in call.kwargs.items():
        if name == "training" and key in BATCH_KEYS and isinstance(value, Unresolved):
            raise ConfigError(msg("torchtitan_py.training-static-reading", key=key, value=value), path=out.path,
                              key=f"training.{key}")
        if isinstance(value, Unresolved) or _has_unresolved(value):
            out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.left-torchtitan-s", name=name, key=key,
                                            value=value if isinstance(value, Unresolved) else 'not a literal',
                                            fix=FIXES.get(name, 'the matching strategy field')))
            continue
        if isinstance(value, Call):
            continue  # nested configs (datasets, …) are not priced
        section[key] = value
    return section


def _has_unresolved(value: Any) -> bool:
    if isinstance(value, Unresolved):
        return True
    if isinstance(value, list):
        return any(_has_unresolved(v) for v in value)
    if isinstance(value, dict):
        return any(_has_unresolved(v) for v in value.values())
    return False


def _model(job: dict[str, Any], spec: Any, module: Module, entry: str, out: Collector) -> None:
    """``model_registry("FLAVOR", …)``: the flavor of the registry's model (``entry``: FILE.py:FUNCTION)."""
    file, function = split_entry(entry)
    if not isinstance(spec, Call) or spec.short != "model_registry" or not spec.args:
        out.warn("W-FLAVOR", msg("W-FLAVOR.model_spec-model_registry-flavor", spec=getattr(spec, 'name', spec)))
        return
    flavor = spec.args[0]
    name = model_name(module, file)
    if name is None:  # the registry's recipes are named after their model (llama3_8b, deepseek_v3_671b)
        name = next((f for f in sorted(flavors.families(), key=len, reverse=True)
                     if str(function).lower().startswith(f"{f}_") or str(function).lower() == f), None)
        if name is not None:
            out.assumptions.append(Assumption("model.name", f"{name} {flavor}", msg("torchtitan_py.file-states-model",
                function=function)))
    if name is None or not isinstance(flavor, str):
        out.warn("W-FLAVOR", msg("W-FLAVOR.which-torchtitan-model"))
        return
    job["model"] = {"name": name, "flavor": flavor}
    _converters(job, spec.get("converters"), out)
    for key, value in spec.kwargs.items():
        if key == "converters":
            continue
        if key == "num_mtp_layers" and value:
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.model_registry-num_mtp_layers-flavor", value=value))
        elif key != "attn_backend":
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.model_registry-read-priced", key=key, value=value))


def model_name(module: Module, file: str) -> str | None:
    """The torchtitan model a registry file belongs to: its folder under torchtitan/models/, a
    ``torchtitan.models.<name>`` import, else the ``<Name>Model`` class it imports from ``.model``."""
    parts = Path(file).resolve().parts
    if len(parts) >= 3 and parts[-3] == "models":
        return parts[-2]
    for imported in module.imports:
        pieces = imported.split(".")
        if pieces[:2] == ["torchtitan", "models"] and len(pieces) > 2 and pieces[2] != "common":
            return pieces[2]
    for node in module.tree.body:
        names = getattr(node, "names", [])
        if getattr(node, "module", None) == "model" and getattr(node, "level", 0) == 1:
            for alias in names:
                if alias.name.endswith("Model") and len(alias.name) > 5:
                    return alias.name[:-5].lower()
    return None


def _converters(job: dict[str, Any], value: Any, out: Collector) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.converters-list-static", value=value))
        return
    names: list[str] = job.setdefault("model", {}).setdefault("converters", [])
    for conv in value:
        if not isinstance(conv, Call):
            out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.converter-static-reading", conv=conv))
            continue
        kind = conv.short
        options = {k: v for k, v in conv.kwargs.items() if not isinstance(v, Unresolved)}
        if kind == "Float8LinearConverter":
            names.append("float8")
            float8 = {k: v for k, v in options.items()
                      if k in ("recipe_name", "enable_fsdp_float8_all_gather", "filter_fqns")}
            if isinstance(float8.get("filter_fqns"), list):  # lm_head is the newer name of the output head
                float8["filter_fqns"] = ["output" if f == "lm_head" else f for f in float8["filter_fqns"]]
            job.setdefault("quantize", {}).setdefault("linear", {})["float8"] = float8
        elif kind == "MXFP8LinearConverter":
            names.append("mx")
            job.setdefault("quantize", {}).setdefault("linear", {})["mx"] = {"recipe_name": "mxfp8"}
        elif kind == "Float8GroupedExpertsConverter":
            names.append("quantize.grouped_mm.float8")
        elif kind == "MXFP8GroupedExpertsConverter":
            names.append("quantize.grouped_mm.mx")
        elif kind == "LoRAConverter":
            _lora(conv, out)
        else:
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.priced-linears-priced", kind=kind))


def _lora(conv: Call, out: Collector) -> None:
    rank, targets = conv.get("rank"), conv.get("target_modules")
    if not isinstance(rank, int) or not isinstance(targets, list):
        out.warn("W-PY-UNRESOLVED", msg("W-PY-UNRESOLVED.loraconverter-rank-target_modules", line=conv.line))
        return
    unknown = [t for t in targets if t not in LORA_MODULES]
    if unknown:
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.lora-target-modules", map=', '.join(map(str, unknown))))
    where = f"LoRAConverter (line {conv.line})"
    out.put("strategy.peft", "lora", where, "LoRAConverter")
    out.put("strategy.lora_rank", rank, f"LoRAConverter rank (line {conv.where('rank')})", rank)
    out.put("strategy.lora_targets", tuple(dict.fromkeys(m for t in targets if t in LORA_MODULES
                                                         for m in LORA_MODULES[t])),
            f"LoRAConverter target_modules (line {conv.where('target_modules')})", targets)


def _loss(value: Any, out: Collector) -> None:
    if isinstance(value, Call) and value.short == "ChunkedLossWrapper":
        out.put("strategy.loss_fusion", "chunked", f"loss=ChunkedLossWrapper (line {value.line})",
                "ChunkedLossWrapper")
    elif isinstance(value, Call) and value.short == "MTPLoss":
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.mtploss-multi-token"))


def _optimizer(job: dict[str, Any], value: Any, out: Collector) -> None:
    if not isinstance(value, Call):
        return
    if value.short == "OptimizersInBackwardContainer":
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.optimizer-step-backward"))
    section = {k: v for k, v in value.kwargs.items() if k in ("name", "implementation") and isinstance(v, str)}
    if value.short not in ("default_adamw", "OptimizersContainer", "OptimizersInBackwardContainer"):
        section.setdefault("name", value.short)
    if section:
        job["optimizer"] = section


def _checkpointing(job: dict[str, Any], value: Any, out: Collector) -> None:
    if not isinstance(value, Call):
        return
    modes = {"SelectiveAC": "selective", "FullAC": "full", "NoAC": "none"}
    if value.short in modes:
        section = {"mode": modes[value.short]}
        option = value.get("selective_ac_option", value.get("ac_option"))
        if isinstance(option, (str, int)):
            section["selective_ac_option"] = str(option)
    else:
        section = _section("activation_checkpoint", value, out)
    job["activation_checkpoint"] = section


def write(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """Refused: Python is code, never rewritten. The refusal names the file, its function and the keyword
    arguments of its Trainer.Config to type in (``section.key``: ``section=…Config(key=value)``), the keys the
    TOML writer would write."""
    job, function, _module = _job_of(source.text, source.path, Collector(source.path))
    keys = job_changes(job, parsed, parsed.baseline_strategy, strategy, source.path)
    fields = ", ".join(f"{k} = {v!r}" for k, v in changed_fields(parsed.baseline_strategy, strategy).items())
    shown = ", ".join(f"{k}={v!r}" for k, v in keys.items())
    raise refusal(msg("torchtitan_py.export-by-hand", file=f"{Path(_split(source.path)[0]).name}:{function}",
                      keys=shown or "-", fields=fields), source.path)


__all__ = ["FORMAT", "choose_function", "detect", "model_name", "read", "write"]
