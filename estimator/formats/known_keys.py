"""Keys a reader does not know, reported instead of silently defaulted (issue 12 item 1).

Each framework format ships a catalogue (``keys/<format>.yaml``): for every section the estimator reads, the
keys that are known there and what each means. A key in a known section that the catalogue does not list is
reported as ``W-KEY-UNKNOWN`` with the nearest known key ("did you mean"), so ``model_paralel: 2`` is not read
as tp 1 without a word. Sections the estimator ignores by design (data, logging, callbacks, checkpointing …)
are listed as ``ignored`` and never looked into. Plan files, whose keys are the estimator's own field names,
refuse an unknown key instead (``fields.lookup``); both take their suggestion from ``nearest.suggest``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..messages import msg
from ..nearest import suggest
from ..warnings import EstimateWarning

CODE = "W-KEY-UNKNOWN"
_FOLDER = Path(__file__).with_name("keys")


@dataclass(frozen=True)
class KeyCatalogue:
    """The keys of one format, by section. ``sections`` maps a dotted section path ("" is the top level) to
    {key: meaning}; a key naming another listed section is descended into. ``ignored`` sections (dotted paths)
    are parts of the file the estimator does not read by design: their keys are never reported."""

    format: str
    title: str
    sections: Mapping[str, Mapping[str, str]]
    ignored: frozenset[str]
    noun: str = "key"

    def known(self, section: str) -> Mapping[str, str]:
        return self.sections.get(section, {})

    def elsewhere(self, key: str, section: str) -> list[str]:
        """Other sections where ``key`` is known (a key written in the wrong section)."""
        return [s for s, keys in self.sections.items() if s != section and key in keys]


@cache
def catalogue(fmt: str) -> KeyCatalogue:
    """The catalogue shipped for ``fmt`` (``keys/<fmt>.yaml``): ``sections`` of keys with their meanings, or a
    flat list of command-line ``flags``."""
    with open(_FOLDER / f"{fmt}.yaml", encoding="utf-8") as handle:
        data = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for listed, noun in (("flags", "flag"), ("keys", "key")):  # generated name lists (no meanings)
        if listed in data:
            names = {str(name): data["title"] for name in data[listed]}
            return KeyCatalogue(fmt, data["title"], {"": names}, frozenset(), noun=noun)
    sections = {str(name or ""): {str(k): str(v) for k, v in (keys or {}).items()}
                for name, keys in data["sections"].items()}
    return KeyCatalogue(fmt, data["title"], sections, frozenset(data.get("ignored") or ()))


def unknown_key(path: str, section: str, key: str, known: Iterable[str],
                cat: KeyCatalogue | None = None) -> EstimateWarning:
    """The W-KEY-UNKNOWN warning for ``key`` in ``section`` of the file at ``path``."""
    where = f"{section}.{key}" if section else key
    near = suggest(key, known)
    other = cat.elsewhere(key, section) if cat is not None else []
    if other:
        hint = f"; {key} belongs under {' or '.join(other)}"
    elif near is not None:
        hint = f"; did you mean {near!r}?"
    else:
        hint = ""
    label = f"{cat.title} {cat.noun}" if cat is not None else "key"
    return EstimateWarning(CODE, msg("known_keys.sapp-knows-value", path=path, where=where, label=label, hint=hint))


def unknown_names(path: str, section: str, names: Iterable[str], known: Mapping[str, str] | Iterable[str],
                  cat: KeyCatalogue | None = None) -> list[EstimateWarning]:
    """A warning for each of ``names`` that ``known`` does not hold (flat lists: flags, one section)."""
    known_names = list(known)
    known_set = set(known_names)
    return [unknown_key(path, section, name, known_names, cat) for name in names
            if name not in known_set]


def check_sections(data: Any, cat: KeyCatalogue, path: str, origin: Callable[[tuple[str, ...]], str] | None = None,
                   root: str = "", read: Iterable[tuple[str, ...]] = ()) -> list[EstimateWarning]:
    """W-KEY-UNKNOWN for every key of every catalogued section of ``data`` that the catalogue does not list,
    starting at section ``root``. ``origin(keys)`` names the file that states a key (a config merged from
    includes); by default ``path``. ``read`` are key paths the reader itself reads: known whatever the catalogue
    says."""
    found: list[EstimateWarning] = []
    extra: dict[str, set[str]] = {}
    for keys in read:
        extra.setdefault(".".join(keys[:-1]), set()).add(keys[-1])

    def visit(section: str, body: Any) -> None:
        if not isinstance(body, dict) or section in cat.ignored:
            return
        known = {**cat.known(section), **dict.fromkeys(extra.get(section, ()), "read by SAPP")}
        for key, value in body.items():
            name = str(key)
            child = f"{section}.{name}" if section else name
            if child in cat.ignored:
                continue
            if name not in known:
                keys = tuple(child.split("."))
                found.append(unknown_key(origin(keys) if origin else path, section, name, known, cat))
            elif child in cat.sections:
                visit(child, value)

    start: Any = data
    for part in root.split(".") if root else ():
        start = start.get(part) if isinstance(start, dict) else None
    visit(root, start)
    return found


def check_everywhere(data: Any, known: Mapping[str, str], cat: KeyCatalogue, path: str) -> list[EstimateWarning]:
    """W-KEY-UNKNOWN for every key, at any depth of ``data``, that ``known`` does not hold (files whose every
    object takes the same vocabulary, such as a MindSpeed-MM model.json)."""
    found: list[EstimateWarning] = []

    def visit(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if str(key) not in known:
                    found.append(unknown_key(path, where, str(key), known, cat))
                else:
                    visit(value, f"{where}.{key}" if where else str(key))
        elif isinstance(node, list):
            for item in node:
                visit(item, where)

    visit(data, "")
    return found


__all__ = ["CODE", "KeyCatalogue", "catalogue", "check_everywhere", "check_sections", "unknown_key",
           "unknown_names"]
