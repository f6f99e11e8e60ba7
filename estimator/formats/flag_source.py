"""Megatron-style arguments, wherever they are written: the typed questions a Megatron/MindSpeed reader asks
(``has``, ``text``, ``int``, ``float``, ``values``, ``int_list``, ``where``, ``raw``, ``names``), answered by a
launch command's flags (``launch_command.FlagSet``) or by a mapping of underscored argument names (``ArgsMapping``:
the ``ARGS:`` block of a Megatron-LM recipe YAML, LLaMA-Factory's MCoreAdapter keys).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import ConfigError
from ..messages import Text, msg


class FlagQueries:
    """Typed answers built on ``text``/``values``; subclasses say where a flag is (``locate``)."""

    path: str
    # whether Megatron-LM's argument parser (and its defaults) reads these arguments; False for config dataclasses
    # built directly (Megatron-Bridge), whose field defaults can differ
    parser_defaults = True

    # what subclasses provide
    def names(self) -> list[str]:
        raise NotImplementedError

    def has(self, name: str) -> bool:
        raise NotImplementedError

    def values(self, name: str) -> tuple[str, ...] | None:
        raise NotImplementedError

    def where(self, name: str) -> str:
        raise NotImplementedError

    def raw(self, name: str) -> str:
        raise NotImplementedError

    def locate(self, name: str) -> tuple[int | None, str]:
        """(line, key) of ``name``, for messages about it."""
        raise NotImplementedError

    def error(self, name: str, message: Text) -> ConfigError:
        line, key = self.locate(name)
        return ConfigError(message, path=self.path, line=line, key=key)

    # typed questions
    def text(self, name: str) -> str | None:
        values = self.values(name)
        if values is None:
            return None
        if not values:
            raise self.error(name, msg("flag_source.needs-value", name=name))
        return values[0].strip()

    def int(self, name: str, minimum: int | None = None) -> int | None:
        raw = self.text(name)
        if raw is None:
            return None
        if not re.fullmatch(r"[-+]?\d+", raw) or len(raw) > 19:
            raise self.error(name, msg("flag_source.expects-integer-got", name=name, raw=raw))
        value = int(raw)
        if minimum is not None and value < minimum:
            raise self.error(name, msg("flag_source.must-least-got", name=name, minimum=minimum, value=value))
        return value

    def float(self, name: str) -> float | None:
        raw = self.text(name)
        if raw is None:
            return None
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise self.error(name, msg("flag_source.expects-number-got", name=name, raw=raw))
        return value

    def int_list(self, name: str) -> list[int]:
        """``a,b,c`` (or space-separated values) as non-negative integers."""
        values = self.values(name)
        if values is None:
            return []
        items = [x for v in values for x in re.split(r"[,\s]+", v.strip().strip("[]")) if x]
        if not items or not all(x.isdigit() and len(x) < 10 for x in items):
            raise self.error(name, msg("flag_source.expects-comma-separated", name=name, values=' '.join(values)))
        return [int(x) for x in items]


def flag_name(key: str) -> str:
    """``tensor_model_parallel_size`` -> ``--tensor-model-parallel-size``."""
    return "--" + key.replace("_", "-")


class ArgsMapping(FlagQueries):
    """Megatron arguments as a mapping: ``true`` is a switch that is on, ``false``/null one that is off (absent),
    a list is several values, a string is split at blanks as a launcher would pass it."""

    def __init__(self, data: dict[str, Any], path: str, section: str = "") -> None:
        self.path = path
        self.section = section
        self.keys: dict[str, str] = {}
        self.data: dict[str, tuple[str, ...]] = {}
        for key, value in data.items():
            if value is False or value is None:
                continue
            name = flag_name(str(key))
            self.keys[name] = str(key)
            if value is True:
                self.data[name] = ()
            elif isinstance(value, list):
                self.data[name] = tuple(str(v) for v in value)
            elif isinstance(value, dict):
                raise ConfigError(msg("flag_source.holds-mapping-megatron", key=key), path=path,
                                  key=self._key(str(key)))
            else:
                self.data[name] = tuple(str(value).split()) or ("",)

    def _key(self, key: str) -> str:
        return f"{self.section}.{key}" if self.section else key

    def names(self) -> list[str]:
        return list(self.data)

    def has(self, name: str) -> bool:
        return name in self.data

    def values(self, name: str) -> tuple[str, ...] | None:
        return self.data.get(name)

    def where(self, name: str) -> str:
        return self._key(self.keys.get(name, name.lstrip("-").replace("-", "_")))

    def raw(self, name: str) -> str:
        return " ".join(self.data.get(name, ()))

    def locate(self, name: str) -> tuple[int | None, str]:
        return None, self.where(name)


__all__ = ["ArgsMapping", "FlagQueries", "flag_name"]
