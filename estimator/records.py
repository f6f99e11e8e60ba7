"""A small base for the frozen data records: ``to_dict`` / ``from_dict`` (JSON-safe) and ``replace``.

Nested records are declared per class in ``_nested`` (field name -> record class); a nested value may be a
single record or a tuple of records. Lists coming from JSON/YAML become tuples so records stay hashable. A field
declared with ``metadata=IN_MEMORY`` (e.g. a warning's catalogue message) is left out of ``to_dict``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Self, TypeVar

_R = TypeVar("_R")
_FIELD_COUNTS: dict[type, int] = {}  # per record class made ``at_once``: its number of fields


def at_once(cls: type[_R], /, **fields: Any) -> _R:
    """``cls(**fields)`` of a frozen dataclass, every field given, with its instance dict set at once: the frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__`` (~1.5 µs for 14 fields against ~0.35),
    and the hot paths of an estimate (row and stage times, FSDP2 instants, the resolved plan, the stages, the
    verdict) make thousands. Only for a class with a ``__dict__`` that derives nothing in ``__post_init__``; a
    call giving another number of fields than the class declares is refused (a field added to the class must be
    added where its records are made; the tests compare such records with the dataclass's own)."""
    n = _FIELD_COUNTS.get(cls)
    if n is None:
        if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__") or "__slots__" in vars(cls):
            raise TypeError(f"{cls.__name__} cannot be made at once")
        n = _FIELD_COUNTS[cls] = len(dataclasses.fields(cls))
    if len(fields) != n:
        raise TypeError(f"{cls.__name__}: {len(fields)} fields given, {n} declared")
    out = object.__new__(cls)
    object.__setattr__(out, "__dict__", fields)
    return out


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if isinstance(value, dict):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return value


IN_MEMORY = {"json": False}


class Record:
    """Mixin for frozen dataclasses."""

    _nested: ClassVar[dict[str, type[Record]]] = {}

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _thaw(getattr(self, f.name)) for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if f.metadata.get("json", True)}

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        names = set(cls.field_names())
        unknown = sorted(map(str, set(data) - names))
        if unknown:
            raise KeyError(f"unknown field(s) for {cls.__name__}: {', '.join(unknown)}")
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            nested = cls._nested.get(key)
            if nested is not None and value is not None:
                if isinstance(value, (list, tuple)):
                    value = tuple(v if isinstance(v, nested) else nested.from_dict(v) for v in value)
                elif isinstance(value, dict):
                    value = nested.from_dict(value)
            elif value == "inf":
                value = math.inf
            kwargs[key] = _freeze(value)
        return cls(**kwargs)

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]
