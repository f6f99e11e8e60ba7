"""Where a figure comes from: vendor documents, public measurements, derivations, calibrations — or nothing yet
("provisional"). Device presets (``estimator/presets/*.yaml``) and calibration profiles name a source for each
figure; the CLI, the JSON, the report and the Hardware form show it.

A provenance entry records the value it vouches for, so a figure the user edited afterwards is shown as the
user's, never under the vendor's name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .messages import msg
from .records import Record

# What kind of evidence a source is; the order is the order of trust shown to users.
KINDS = ("measured", "calibrated", "vendor", "derived", "user", "provisional")
KIND_LABELS = {"measured": "public measurement", "calibrated": "calibrated from a log", "vendor": "vendor document",
               "derived": "derived from vendor figures", "user": "set by the user", "provisional": "provisional"}


@dataclass(frozen=True)
class Source(Record):
    id: str
    kind: str
    title: str = ""
    url: str = ""
    note: str = ""

    @property
    def label(self) -> str:
        """``vendor document: NVIDIA H100 datasheet`` — what a table cell or a tooltip shows."""
        head = KIND_LABELS.get(self.kind, self.kind)
        return f"{head}: {self.title}" if self.title else head


PROVISIONAL = Source("provisional", "provisional", "",
                     note="no published figure was found; replace it with a calibration or a measurement")
USER = Source("user", "user", "", note="edited after the preset was loaded")


@dataclass(frozen=True)
class Vouch(Record):
    """``field`` (a dotted path such as ``peak_flops.fp8``) had ``value`` according to source ``source``."""

    field: str
    source: str
    value: float | None = None


def same_value(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def read_sources(data: Any, where: str) -> tuple[Source, ...]:
    """The ``sources:`` list of a preset or profile: each ``{id, kind, title, url, note}``."""
    if data is None:
        return ()
    if not isinstance(data, list):
        raise ConfigError(msg("sources.sources-must-list"), path=where, key="sources")
    out = []
    for i, item in enumerate(data):
        key = f"sources[{i}]"
        if not isinstance(item, dict) or "id" not in item or "kind" not in item:
            raise ConfigError(msg("sources.each-source-needs"), path=where, key=key)
        kind = str(item["kind"])
        if kind not in KINDS:
            raise ConfigError(msg("sources.unknown-source-kind", kind=kind, KINDS=', '.join(KINDS)), path=where,
                              key=key)
        unknown = sorted(map(str, set(item) - {"id", "kind", "title", "url", "note"}))
        if unknown:
            raise ConfigError(msg("sources.unknown-source-key", unknown=', '.join(unknown)), path=where, key=key)
        out.append(Source(id=str(item["id"]), kind=kind, title=str(item.get("title", "")),
                          url=str(item.get("url", "")), note=str(item.get("note", ""))))
    ids = [s.id for s in out]
    if len(set(ids)) != len(ids):
        raise ConfigError(msg("sources.source-ids-must"), path=where, key="sources")
    return tuple(out)


def resolve_source(sources: tuple[Source, ...], vouches: tuple[Vouch, ...], path: str,
                   current: float | None) -> Source:
    """The source of figure ``path`` with value ``current``: its own entry, else its parent's (``peak_flops``
    for ``peak_flops.fp8``); the user's when the value changed since; provisional when nobody vouches."""
    by_id = {s.id: s for s in sources}
    probe = path
    while True:
        vouch = next((v for v in vouches if v.field == probe), None)
        if vouch is not None:
            if probe == path and vouch.value is not None and not same_value(vouch.value, current):
                return USER
            if vouch.source == "provisional":
                return PROVISIONAL
            return by_id.get(vouch.source, PROVISIONAL)
        if "." not in probe and "[" not in probe:
            return PROVISIONAL
        probe = probe.rsplit(".", 1)[0] if "." in probe else probe.split("[", 1)[0]


__all__ = ["KINDS", "KIND_LABELS", "PROVISIONAL", "USER", "Source", "Vouch", "read_sources", "resolve_source",
           "same_value"]
