"""Typed access to one merged MindFormers config (docs/model.md#frameworks), and the values read from it with
provenance.

A key may be stated by the config itself or by one of its ``base_config`` files; errors and provenance name the
file that states it. Absent and null keys read as ``MISSING``.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..messages import Text, msg
from ..parsed import Provenance
from .common import dig
from .mindformers_schema import MAX_DEGREE
from .support import Collector

MISSING = object()


class MindFormersSource(Collector):
    """A merged MindFormers config (``data``: the file over its ``base_config`` files; ``own``: the file alone)
    and the canonical values read from it."""

    def __init__(self, text: str, path: str, data: dict[str, Any], own: dict[str, Any],
                 bases: list[tuple[str, Any]]) -> None:
        super().__init__(path)
        self.text, self.data, self.own, self.bases = text, data, own, bases

    # -- raw access -----------------------------------------------------------------------------------
    def raw(self, keys: tuple[str, ...], data: Any = None) -> Any:
        return dig(self.data if data is None else data, *keys, default=MISSING)

    def origin(self, keys: tuple[str, ...]) -> str:
        """The file that states ``keys``: this one, else the last base_config file holding it."""
        if self.raw(keys, self.own) is not MISSING:
            return self.path
        for base_path, base_data in reversed(self.bases):
            if self.raw(keys, base_data) is not MISSING:
                return base_path
        return self.path

    def fail(self, keys: tuple[str, ...], message: Text) -> ConfigError:
        return ConfigError(message, path=self.origin(keys), key=".".join(keys))

    def get(self, keys: tuple[str, ...]) -> Any:
        """The value at ``keys``, or MISSING when absent or null; a parent that is not a mapping is an error."""
        cur: Any = self.data
        for n, key in enumerate(keys):
            if cur is None:
                return MISSING
            if not isinstance(cur, dict):
                raise self.fail(keys[:n], msg("mindformers_source.expected-mapping-keys-2", cur=cur))
            if key not in cur:
                return MISSING
            cur = cur[key]
        return MISSING if cur is None else cur

    def first(self, base: tuple[str, ...], names: tuple[str, ...]) -> tuple[tuple[str, ...], Any]:
        """(keys, value) of the first of ``names`` present under ``base``; value MISSING when none is."""
        for name in names:
            value = self.get((*base, name))
            if value is not MISSING:
                return (*base, name), value
        return (*base, names[0]), MISSING

    # -- typed access ---------------------------------------------------------------------------------
    def as_int(self, keys: tuple[str, ...], value: Any, lo: int, hi: int) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(keys, msg("fields.expected-integer-got", value=value))
        if not lo <= value <= hi:
            raise self.fail(keys, msg("mindformers_source.out-range-expected", value=value, lo=lo, hi=hi))
        return value

    def int_at(self, keys: tuple[str, ...], lo: int = 1, hi: int = MAX_DEGREE) -> int | None:
        value = self.get(keys)
        return None if value is MISSING else self.as_int(keys, value, lo, hi)

    def bool_at(self, keys: tuple[str, ...]) -> bool | None:
        value = self.get(keys)
        if value is MISSING:
            return None
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise self.fail(keys, msg("mindformers_source.expected-true-false", value=value))

    def float_at(self, keys: tuple[str, ...]) -> float | None:
        value = self.get(keys)
        if value is MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or \
                abs(value) > 1e9:
            raise self.fail(keys, msg("fields.expected-number-got", value=value))
        return float(value)

    def str_at(self, keys: tuple[str, ...]) -> str | None:
        value = self.get(keys)
        if value is MISSING:
            return None
        if not isinstance(value, str):
            raise self.fail(keys, msg("fields.expected-string-got", value=value))
        return value

    def section(self, keys: tuple[str, ...]) -> dict[str, Any]:
        value = self.get(keys)
        if value is MISSING:
            return {}
        if not isinstance(value, dict):
            raise self.fail(keys, msg("mindformers_source.expected-mapping-keys", value=value))
        return value

    # -- output ---------------------------------------------------------------------------------------
    def put_at(self, field: str, value: Any, keys: tuple[str, ...], raw: Any = MISSING) -> None:
        """A value read at ``keys`` (``raw``: as written, when it is not the value found there)."""
        self.values[field] = value
        shown = self.get(keys) if raw is MISSING else raw
        self.provenance[field] = Provenance("file", path=self.origin(keys), key=".".join(keys),
                                            raw=None if shown is MISSING else shown)

    def put_or_default(self, field: str, value: Any, keys: tuple[str, ...], default: Any, why: Text) -> None:
        """``value`` read at ``keys``, or, when the file leaves it out (None), MindFormers' ``default``."""
        if value is None:
            self.assume(field, default, why)
        else:
            self.put_at(field, value, keys)
