"""Writing a strategy back into a Megatron-LM recipe YAML (the ``ARGS:`` mapping, docs/model.md#frameworks): the
arguments of the changed fields, as ``desired_flags`` gives them for a launch script, patched in place; the new text
is read again and must give the requested plan."""

from __future__ import annotations

import re
from typing import Any

from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .common import load_yaml
from .flag_source import ArgsMapping
from .megatron import ARGS, read_recipe
from .mindspeed_script_write import desired_flags, same_plan_as_read
from .yaml_patch import YamlPatch


def write_recipe(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """New text of a Megatron-LM recipe YAML: the ``ARGS:`` keys of the changed fields, layout kept."""
    old = parsed.baseline_strategy
    if old == strategy:
        return source.text
    data = load_yaml(source.text, source.path)
    fl = ArgsMapping(data[ARGS], source.path, ARGS)
    want = desired_flags(source.path, fl, old, strategy, parsed, "megatron")
    patch = YamlPatch(source.text, source.path)
    args = data[ARGS]
    for flag, value in want.items():
        key = flag[2:].replace("-", "_")
        present = key in args
        if value is None:
            if present and args[key] not in (None, False):
                patch.set((ARGS, key), False if args[key] is True else None)
        elif value is True:
            if args.get(key) is not True:
                patch.set((ARGS, key), True)
        else:
            patch.set((ARGS, key), _yaml_value(value, args.get(key)))
    text = patch.result()
    reading = read_recipe(text, source.path, load_yaml(text, source.path), strategy.world_size)
    same_plan_as_read(reading.values, source, parsed, strategy)
    return text


def _yaml_value(value: str, like: Any) -> Any:
    """A flag value as the YAML writes it: a number when it is one, a list when the key held a list."""
    if isinstance(like, list):
        return [int(v) if v.isdigit() else v for v in value.split()]
    if re.fullmatch(r"\d+", value):
        return int(value)
    return value


__all__ = ["write_recipe"]
