"""Reading config files into a ParsedConfig (docs/model.md#inputs-and-outputs ``parse``, docs/model.md#frameworks).

Each file is classified by content (not only by extension) as a model source, a strategy source or both;
several files make one plan and the model file's dimensions win. Format readers register in ``READERS``:
a reader takes (text, path, data, devices) and returns a ``Reading``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..atomic import recover_interrupted
from ..errors import ConfigError
from ..fields import REGISTRY, coerce, lookup
from ..messages import msg
from ..parsed import ParsedConfig, Provenance, SourceFile, build_plan
from ..warnings import Assumption, EstimateWarning
from .combination import check_combination, mismatched_model
from .common import load_json, load_toml, load_yaml, read_text
from .hf import looks_like_hf, read_hf, unknown_hf_keys, unmodelled_features
from .hub import is_model_name, model_reading
from .plan import looks_like_plan, read_plan
from .py_static import split_entry
from .support import Reader, Reading

Detector = Callable[[Any, str], bool]
# framework-format readers, format name -> (detector(data, path) -> bool, reader(text, path, data, devices)); the
# built-in ones are imported and registered on first need (``registered_readers``), plug-ins' after them
READERS: dict[str, tuple[Detector, Reader]] = {}
# Each module below defines FORMAT (name), detect(data, path), read(text, path, data, devices) -> Reading and
# write(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str (see estimator/export.py).
FORMAT_MODULES = ("mindformers", "megatron", "mindspeed", "torchtitan", "hyperparallel", "llamafactory",
                  "deepspeed", "torchtitan_py", "megatron_bridge")
# format name -> accepts(data, path): what a format reads when --framework names it (a module without one reads
# what it detects); a Megatron-style launch script is accepted by both megatron and mindspeed
ACCEPTS: dict[str, Detector] = {}
# Besides shapes, a model file may own the per-module layout (MindSpeed-MM model.json: pipeline_num_layers,
# recompute, freeze); those keys win over the launch script's too.
MODEL_FILE_LAYOUT_KEYS = frozenset({
    "strategy.partition", "strategy.vpp", "strategy.vision_partition", "strategy.recompute",
    "strategy.sel_counts", "strategy.comm_counts", "strategy.uniform_group", "strategy.recompute_switches",
    "strategy.frozen_modules"})

FORMAT_FRAMEWORK = {"mindformers": "mindformers", "mindspeed": "mindspeed", "mindspeed_script": "mindspeed",
                    "mindspeed_model": "mindspeed", "megatron": "megatron", "megatron_script": "megatron",
                    "megatron_recipe": "megatron",
                    "torchtitan": "torchtitan", "hyperparallel": "hyperparallel", "deepspeed": "hf_trainer",
                    "llamafactory": "hf_trainer", "torchtitan_py": "torchtitan", "megatron_bridge": "megatron",
                    "megatron_bridge_py": "megatron"}


def _load(text: str, path: str) -> Any:
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return load_json(text, path)
    if suffix == ".toml":
        return load_toml(text, path)
    if suffix in (".yaml", ".yml"):
        return load_yaml(text, path)
    if suffix in (".sh", ".py"):  # launch scripts and Python configs are read as text (never executed)
        return None
    # unknown extension: try JSON, then TOML, then YAML
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return load_json(text, path)
    try:
        return load_toml(text, path)
    except ConfigError:
        return load_yaml(text, path)


def read_file(path: str, devices: int | None = None, framework: str | None = None) -> Reading:
    if is_model_name(path):  # a Hub id or a model directory (--model Qwen/Qwen3-8B)
        return model_reading(path)
    file, _ = split_entry(path)  # FILE.py:FUNCTION names one recipe of a Python config module
    text = read_text(file)
    data = _load(text, file)
    if framework:
        wanted = [fmt for fmt, fw in FORMAT_FRAMEWORK.items() if fw == framework.lower()]
        registered_readers()
        for fmt in wanted:
            if fmt in READERS and ACCEPTS.get(fmt, READERS[fmt][0])(data, path):
                return _tag(READERS[fmt][1](text, path, data, devices), text, path)
    if looks_like_plan(data):
        values, prov = read_plan(text, path)
        role = "both" if any(k.startswith("model.") for k in values) else "strategy"
        return Reading("plan", role, values, prov, text=text, path=path)
    if looks_like_hf(data):
        values, prov, notes = read_hf(data, path)
        warnings = [EstimateWarning("W-MODEL-NOTE", msg("W-MODEL-NOTE", path=path, note=note)) for note in notes]
        warnings += unknown_hf_keys(data, path) + unmodelled_features(data, path)
        return Reading("hf_config", "model", values, prov, warnings, text=text, path=path)
    for detect, reader in registered_readers().values():
        if detect(data, path):
            return _tag(reader(text, path, data, devices), text, path)
    readers = "".join(f", {name}" for name in sorted(READERS))
    raise ConfigError(msg("formats.unknown-kind", readers=readers) if framework else
                      msg("formats.unknown-kind.hint", readers=readers), path=path)


def _tag(reading: Reading, text: str, path: str) -> Reading:
    reading.text = reading.text or text
    reading.path = reading.path or path
    return reading


# A complete model description (a Hugging Face config.json) also says what a model does NOT have: keys it leaves
# out drop a strategy file's values for them (a flavor's experts must not survive next to a dense config.json).
SHAPE_KEYS = frozenset(f"model.{k}" for k in (
    "family", "num_kv_heads", "head_dim", "v_head_dim", "ffn_hidden_size", "tie_embeddings", "qk_norm",
    "output_gate", "num_experts", "experts_per_token", "num_shared_experts", "moe_ffn_hidden_size",
    "shared_ffn_hidden_size", "first_k_dense", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
    "mtp_layers", "layer_types", "linear_num_key_heads", "linear_key_head_dim", "linear_num_value_heads",
    "linear_value_head_dim", "vision", "layers", "shared_expert_gate", "hf_architectures", "model_type",
    "learned_positions"))


def _overrides(reading: Reading) -> set[str]:
    """Model keys a strategy source states as overrides of a loaded model (HyperParallel's
    ``model.config_overrides``, a Megatron-Bridge recipe's model assignments): they win over the model file, as the
    framework applies them on top."""
    return {k for k in reading.values if k.startswith("model.") and k in reading.provenance
            and ("config_overrides" in str(reading.provenance[k].key or "") or k in reading.model_overrides)}


def parse(paths: Sequence[str | Path], framework: str | None = None, devices: int | None = None,
          model: str | Path | None = None, preset_dirs: tuple = (),
          overrides: dict[str, Any] | None = None) -> ParsedConfig:
    """One plan from one file or a known combination of files (docs/model.md#inputs-and-outputs, ``combination``).
    ``model`` names a file whose dimensions win; ``overrides`` ({"model.hidden_size": 4096, …}) are applied before the
    plan is built, so they can supply what the files leave out (``--set model.…``)."""
    all_paths = [str(p) for p in paths] + ([str(model)] if model else [])
    if not all_paths:
        raise ConfigError(msg("formats.config-file-given"))
    # an export of these files that was killed half-way is finished first (estimator/atomic.py), and said
    finished = recover_interrupted({os.path.dirname(os.path.abspath(p)) for p in all_paths})
    readings = [read_file(p, devices, framework) for p in all_paths]
    check_combination(readings[:len(paths)])  # --model is the explicit way to take another file's model
    strategy_sources = [r for r in readings if r.role in ("strategy", "both")]
    if not strategy_sources:
        raise ConfigError(msg("formats.strategy-source-among"), path=all_paths[0])
    values: dict[str, Any] = {}
    provenance: dict[str, Provenance] = {}
    warnings: list[EstimateWarning] = [EstimateWarning("W-EXPORT-FINISHED", note) for note in finished]
    warnings += mismatched_model(readings)
    assumptions: list[Assumption] = []
    for reading in strategy_sources:
        values.update(reading.values)
        provenance.update(reading.provenance)
        warnings.extend(reading.warnings)
        assumptions.extend(reading.assumptions)
    model_sources = [r for r in readings if r.role == "model"]
    if model is not None:
        model_sources = [r for r in readings if r.path == str(model)] or model_sources
    for reading in model_sources:  # the model file's dimensions (and the layout keys it owns) win
        kept = {k: values[k] for src in strategy_sources for k in _overrides(src) if k in values}
        for key, value in kept.items():
            if key in reading.values and reading.values[key] != value:
                warnings.append(EstimateWarning("W-MODEL-OVERRIDE", msg(
                    "W-MODEL-OVERRIDE", key=key, path=reading.path, stated=reading.values[key],
                    override_path=provenance[key].path, value=value, override_key=provenance[key].key)))
        if reading.format == "hf_config":
            for key in SHAPE_KEYS - set(reading.values) - set(kept):
                values.pop(key, None)
        for key in [k for k in values if k.startswith("model.") and k not in kept]:
            if key in reading.values and values[key] != reading.values[key] and key != "model.name":
                warnings.append(EstimateWarning("W-MODEL-DIFF", msg(
                    "W-MODEL-DIFF", key=key, path=reading.path, stated=reading.values[key],
                    model_path=provenance.get(key, Provenance("default")).path, model_value=values[key])))
        owned = [k for k in reading.values if (k.startswith("model.") or k in MODEL_FILE_LAYOUT_KEYS)
                 and k not in kept]
        values.update({k: reading.values[k] for k in owned})
        provenance.update({k: reading.provenance[k] for k in owned if k in reading.provenance})
        warnings.extend(reading.warnings)
        assumptions.extend(reading.assumptions)
    warnings = [_model_source_answered(w, values, provenance) if w.code == "W-MODEL-SOURCE" else w
                for w in warnings]
    for key in list(values):  # readers hand over raw values: give every field its type (idempotent)
        info = REGISTRY.get(key)
        if info is not None:
            prov = provenance.get(key)
            values[key] = coerce(info, values[key], prov.path if prov else None)
    if framework:
        values["options.framework"] = framework.lower()
        provenance["options.framework"] = Provenance("edit", key="--framework")
    for key, raw in (overrides or {}).items():
        info = lookup(key)
        values[info.qualified] = coerce(info, raw)
        provenance[info.qualified] = Provenance("edit", key="--set", raw=raw)
    sources = tuple(SourceFile(r.path, r.format, r.role, r.text) for r in readings)
    parsed = build_plan(values, provenance, where=strategy_sources[0].path, warnings=tuple(warnings),
                        sources=sources, preset_dirs=preset_dirs)
    if assumptions:
        import dataclasses

        parsed = dataclasses.replace(parsed, assumptions=(*assumptions, *parsed.assumptions))
    return parsed


def _model_source_answered(warning: EstimateWarning, values: dict[str, Any],
                           provenance: dict[str, Provenance]) -> EstimateWarning:
    """A strategy file's W-MODEL-SOURCE ("give its config.json with --model") once a model file given with it
    (--model, or a config.json among the files) states what it left out: says where the dimensions come from."""
    said = dict(warning.catalogued.params) if warning.catalogued is not None else {}
    missing = [name.strip() for name in str(said.get("missing", "")).split(",") if name.strip()]
    if not missing or any(f"model.{name}" not in values for name in missing):
        return warning
    model_path = provenance.get(f"model.{missing[0]}", Provenance("default")).path
    return EstimateWarning("W-MODEL-SOURCE", msg("W-MODEL-SOURCE.given", missing=said["missing"],
                                                 where=said.get("where"), model_path=model_path))


_registered = False


def registered_readers() -> dict[str, tuple[Detector, Reader]]:
    """``READERS`` with the built-in framework readers in it. They are imported on the first file that is not a plan
    or a Hugging Face config (or on --framework, or a plug-in's reader): a command that opens a plan file never
    imports them (~20–50 ms of a cold process, docs/decisions.md P-COLD-START)."""
    global _registered
    if not _registered:
        READERS.update(_builtin_readers())
        _registered = True
    return READERS


def _builtin_readers() -> dict[str, tuple[Detector, Reader]]:
    import importlib

    out: dict[str, tuple[Detector, Reader]] = {}
    for name in FORMAT_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue  # that format is not built yet
            raise
        out[module.FORMAT] = (module.detect, module.read)
        if hasattr(module, "accepts"):
            ACCEPTS[module.FORMAT] = module.accepts
    return out


__all__ = ["READERS", "Reading", "parse", "read_file", "registered_readers"]
