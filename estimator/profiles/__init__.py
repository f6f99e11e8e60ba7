"""Family profiles: editable YAML data describing how a model family is built (spec §2.2).

A profile may ``extends`` another; unset implementation flags (``fused_gated_act``, ``kv_repeat``,
``norm_stats``, ``selective_rule``, ``flash_attention``, ``softmax_bytes``) fall through to the framework
default. Family detection follows DECISION D21.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from ..errors import ConfigError
from ..records import Record


@dataclass(frozen=True)
class FamilyProfile(Record):
    name: str
    norm: str = "rms"
    ffn_gated: bool = True
    attn_dropout: float = 0.0
    hidden_dropout: float = 0.0
    emb_dropout: float = 0.0
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    router_bytes: float = 4
    shards_activations: bool = False
    selective_rule: str | None = None
    mtp_style: str = "deepseek"
    causal: bool = True
    fused_gated_act: bool | None = None
    kv_repeat: bool | None = None
    norm_stats: bool | None = None
    flash_attention: bool | None = None
    softmax_bytes: float | None = None
    architectures: tuple[str, ...] = ()
    model_types: tuple[str, ...] = ()
    names: tuple[str, ...] = ()

    @property
    def c_norm(self) -> int:
        """Weight vectors per norm: 1 RMSNorm, 2 LayerNorm with bias."""
        return 2 if self.norm == "layer" else 1


def _raw_profiles() -> dict[str, dict[str, Any]]:
    folder = resources.files(__package__)
    raw: dict[str, dict[str, Any]] = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".yaml"):
            data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
            if "name" not in data:
                raise ConfigError("a family profile needs 'name'", path=f"estimator/profiles/{entry.name}")
            raw[data["name"]] = data
    return raw


@cache
def all_profiles() -> dict[str, FamilyProfile]:
    raw = _raw_profiles()
    fields = set(FamilyProfile.field_names())

    def flatten(name: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        if name in seen:
            raise ConfigError(f"profile inheritance loops through {name!r}", path="estimator/profiles")
        data = dict(raw[name])
        parent = data.pop("extends", None)
        merged = flatten(parent, (*seen, name)) if parent else {}
        merged.pop("match", None)
        match = data.pop("match", None) or {}
        merged.update(data)
        merged["architectures"] = tuple(match.get("architectures", ()))
        merged["model_types"] = tuple(match.get("model_types", ()))
        merged["names"] = tuple(match.get("names", ()))
        return merged

    out = {}
    for name in raw:
        values = {k: v for k, v in flatten(name).items() if k in fields}
        out[name] = FamilyProfile.from_dict(values)
    return out


def get_profile(name: str) -> FamilyProfile:
    profiles = all_profiles()
    if name not in profiles:
        raise ConfigError(f"unknown model family {name!r}; known families: {', '.join(sorted(profiles))}",
                          key="model.family")
    return profiles[name]


def detect_family(family: str | None, architectures: tuple[str, ...], model_type: str | None,
                  name: str | None) -> tuple[str, str]:
    """Return (family, how it was chosen): explicit field, HF architectures/model_type, a whole-token
    match in the lower-cased model name, else ``default`` (DECISION D21)."""
    profiles = all_profiles()
    if family:
        get_profile(family)
        return family, "model.family"
    for arch in architectures:
        for prof in profiles.values():
            if arch in prof.architectures:
                return prof.name, f"architectures {arch}"
    if model_type:
        for prof in profiles.values():
            if model_type in prof.model_types:
                return prof.name, f"model_type {model_type}"
    if name:
        tokens = set(re.split(r"[\s/_\-:.]+", name.lower()))
        lowered = name.lower()
        best: tuple[int, str] | None = None
        for prof in profiles.values():
            for alias in prof.names:
                # whole-token match; aliases with separators match as a token sequence
                hit = alias in tokens or bool(re.search(rf"(?<![a-z0-9]){re.escape(alias)}(?![a-z0-9])",
                                                        lowered))
                if hit and (best is None or len(alias) > best[0]):
                    best = (len(alias), prof.name)
        if best:
            return best[1], f"model name {name!r}"
    return "default", "default family (no match)"
