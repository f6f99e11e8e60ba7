"""Writing a strategy back into a Megatron-Bridge YAML (override file or serialised run config,
docs/model.md#frameworks): the Megatron arguments a changed strategy needs (``desired_flags``) become config keys in
their section — the one the file already states them in, else the section Megatron-Bridge keeps them in — patched in
place. The new text is read again and must give the requested plan."""

from __future__ import annotations

from typing import Any

from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .common import load_yaml
from .megatron_bridge import (
    ARG_SECTIONS,
    FORMAT_PY,
    INVERTED,
    LORA_DEFAULT_TARGETS,
    LORA_MODULES,
    RENAMES,
    BridgeArgs,
    megatron_args,
    read,
)
from .support import Collector, changed_fields, refusal
from .yaml_patch import YamlPatch

# the section a config key lives in when the file does not state it yet (the rest are model / TransformerConfig)
SECTION_OF = {"micro_batch_size": "train", "global_batch_size": "train", "use_distributed_optimizer": "ddp",
              "overlap_grad_reduce": "ddp", "overlap_param_gather": "ddp", "data_parallel_sharding_strategy": "ddp",
              "num_distributed_optimizer_instances": "ddp", "grad_reduce_in_fp32": "ddp",
              "use_megatron_fsdp": "dist", "use_torch_fsdp2": "dist", "use_precision_aware_optimizer": "optimizer",
              "main_grads_dtype": "optimizer", "main_params_dtype": "optimizer", "exp_avg_dtype": "optimizer",
              "exp_avg_sq_dtype": "optimizer"}
CONFIG_KEY = {arg: key for key, arg in RENAMES.items()}
CONFIG_INVERTED = {arg: key for key, arg in INVERTED.items()}


def write_bridge(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """A Megatron-Bridge YAML patched for ``strategy``; a Python recipe is refused with the values to set."""
    if source.format == FORMAT_PY:
        changed = changed_fields(parsed.baseline_strategy, strategy)
        shown = ", ".join(f"{k} = {v!r}" for k, v in changed.items())
        raise refusal(f"a Megatron-Bridge recipe is code: the estimator does not rewrite it; set {shown} in the "
                      "recipe, or put them in an override YAML", source.path)
    return write_yaml(source, parsed, strategy)


def write_yaml(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    from .mindspeed_script_write import desired_flags, same_plan_as_read

    old, path = parsed.baseline_strategy, source.path
    if old == strategy:
        return source.text
    data = load_yaml(source.text, path)
    sections = {k: v for k, v in data.items() if k in ARG_SECTIONS and isinstance(v, dict)}
    args, where = megatron_args(sections, Collector(path))
    fl = BridgeArgs(args, path, where)
    patch = YamlPatch(source.text, path)
    peft_fields = {"peft", "lora_rank", "lora_targets", "lora_dropout"}
    changed = {f for f in strategy.field_names() if getattr(old, f) != getattr(strategy, f)}
    if changed & peft_fields:
        _peft(path, data.get("peft"), strategy, patch)
    rest = strategy.replace(**{f: getattr(old, f) for f in peft_fields})  # the Megatron arguments' part
    for flag, value in desired_flags(path, fl, old, rest, parsed, "megatron").items():
        arg = flag[2:].replace("-", "_")
        key = CONFIG_INVERTED.get(arg) or CONFIG_KEY.get(arg, arg)
        inverted = key in INVERTED
        section = next((name for name, sec in sections.items() if key in sec), SECTION_OF.get(key, "model"))
        present = key in sections.get(section, {})
        if value is None:  # the switch off (for an inverted key: the config boolean on)
            current = sections[section][key] if present else None
            if inverted and current is not True:
                patch.set((section, key), True)
            elif not inverted and current not in (None, False):
                patch.set((section, key), False if isinstance(current, bool) else None)
        elif value is True:
            patch.set((section, key), not inverted)
        elif isinstance(value, str):
            patch.set((section, key), int(value) if value.lstrip("-").isdigit() else value)
        else:
            raise refusal(f"{flag} {value!r} has no Megatron-Bridge key", path)
    text = patch.result()
    reading = read(text, path, load_yaml(text, path), strategy.world_size)
    same_plan_as_read(reading.values, source, parsed, strategy)
    return text


def _peft(path: str, peft: Any, new: Strategy, patch: YamlPatch) -> None:
    """The LoRA section: rank (dim), target modules and dropout."""
    if new.peft not in ("lora",):
        raise refusal(f"peft {new.peft!r}: a Megatron-Bridge YAML states LoRA (peft.dim …) or nothing", path)
    names = {v[0]: k for k, v in LORA_MODULES.items() if len(v) == 1}
    missing = [t for t in new.lora_targets if t not in names]
    if missing:
        raise refusal(f"LoRA targets {', '.join(missing)} have no Megatron-Bridge module name", path)
    patch.set(("peft", "dim"), new.lora_rank)
    targets = [names[t] for t in new.lora_targets]
    current = peft.get("target_modules") if isinstance(peft, dict) else None
    if current is not None or targets != list(LORA_DEFAULT_TARGETS):
        patch.set(("peft", "target_modules"), targets)
    if new.lora_dropout or (isinstance(peft, dict) and "dropout" in peft):
        patch.set(("peft", "dropout"), new.lora_dropout)


__all__ = ["write_bridge", "write_yaml"]
