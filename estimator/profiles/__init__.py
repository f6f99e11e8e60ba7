"""Family profiles: editable YAML data describing how a model family is built (docs/model.md#inputs-and-outputs).

A profile may ``extends`` another; unset implementation flags (``fused_gated_act``, ``kv_repeat``,
``norm_stats``, ``selective_rule``, ``flash_attention``, ``softmax_bytes``) fall through to the framework
default. Family detection follows DECISION D21.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from ..data_cache import cached_files
from ..errors import ConfigError
from ..inputs import load_yaml, read_text
from ..messages import Text, msg
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


_USER_DIRS: list[Path] = []
_SHIPPED = Path(__file__).parent  # the shipped profiles (importlib.resources: the same folder, ~5 ms of imports)


def add_profile_dir(folder: str | Path) -> None:
    """Also read family profiles (YAML of the shipped shape) from ``folder``; a user profile with the name of a
    shipped one replaces it. The desktop app registers its config folder at start. A folder whose profiles do
    not load raises ConfigError (naming the file) and is not registered, so one broken file cannot make every
    config unreadable."""
    path = Path(folder)
    if path in _USER_DIRS:
        return
    _USER_DIRS.append(path)
    all_profiles.cache_clear()
    try:
        all_profiles()
    except ConfigError:
        _USER_DIRS.remove(path)
        all_profiles.cache_clear()
        raise


def remove_profile_dir(folder: str | Path) -> None:
    """Stop reading ``folder`` (a plug-in that failed after adding it)."""
    path = Path(folder)
    if path in _USER_DIRS:
        _USER_DIRS.remove(path)
        all_profiles.cache_clear()


def _load(text: str, where: str) -> dict[str, Any]:
    return _checked(load_yaml(text, where), where)  # bounded, a YAML error at its line and column


def _checked(data: Any, where: str) -> dict[str, Any]:
    data = data or {}
    if not isinstance(data, dict) or "name" not in data:
        raise ConfigError(msg("profiles.family-profile-mapping"), path=where)
    return data


def _raw_profiles() -> dict[str, dict[str, Any]]:
    files = [entry for entry in _SHIPPED.iterdir() if entry.name.endswith(".yaml")]
    shipped = cached_files("profiles", files,
                           lambda path: load_yaml(path.read_text(encoding="utf-8"), f"estimator/profiles/{path.name}"))
    raw: dict[str, dict[str, Any]] = {}
    for entry, doc in zip(files, shipped, strict=True):
        data = _checked(doc, f"estimator/profiles/{entry.name}")
        raw[data["name"]] = data
    for user_dir in _USER_DIRS:
        for path in sorted(user_dir.glob("*.yaml")) if user_dir.is_dir() else []:
            data = _load(read_text(path), str(path))  # regular files only, bounded (docs/limits.md)
            raw[data["name"]] = data
    return raw


def profile_yaml(profile: FamilyProfile) -> str:
    """A profile as YAML for a user profile file (the match lists under ``match:``)."""
    data = {k: v for k, v in profile.to_dict().items() if k not in ("architectures", "model_types", "names")}
    data["match"] = {"architectures": list(profile.architectures), "model_types": list(profile.model_types),
                     "names": list(profile.names)}
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@cache
def all_profiles() -> dict[str, FamilyProfile]:
    raw = _raw_profiles()
    fields = set(FamilyProfile.field_names())

    def flatten(name: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        if name in seen:
            raise ConfigError(msg("profiles.profile-inheritance-loops", name=name), path="estimator/profiles")
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
        unknown = sorted(map(str, set(raw[name]) - fields - {"extends", "match"}))
        if unknown:
            raise ConfigError(msg("profiles.unknown-profile-field", unknown=', '.join(unknown),
                                  fields=', '.join(sorted(fields))),
                              path=f"profile {name!r}")
        try:
            out[name] = FamilyProfile.from_dict(values)
        except (TypeError, ValueError) as exc:
            raise ConfigError(msg("profiles.invalid-profile", exc=exc), path=f"profile {name!r}") from None
    return out


def get_profile(name: str) -> FamilyProfile:
    profiles = all_profiles()
    if name not in profiles:
        raise ConfigError(msg("profiles.unknown-model-family", name=name, profiles=', '.join(sorted(profiles))),
                          key="model.family")
    return profiles[name]


class FamilyChoice(NamedTuple):
    """The profile a model is priced with, how it was chosen, and whether it is the generic fallback."""

    name: str
    how: Text
    generic: bool = False


def detect_family(family: str | None, architectures: tuple[str, ...], model_type: str | None,
                  name: str | None) -> FamilyChoice:
    """Return the family and how it was chosen: explicit field, HF architectures/model_type, a whole-token
    match in the lower-cased model name, else the generic ``default`` (DECISION D21). A model that states its
    identity (architectures, model_type) which no profile knows is priced as generic, not by a token of its
    name: ``gpt_oss`` is no GPT-3 (issue 12)."""
    profiles = all_profiles()
    if family:
        get_profile(family)
        return FamilyChoice(family, msg("profiles.model-family"))
    for arch in architectures:
        for prof in profiles.values():
            if arch in prof.architectures:
                return FamilyChoice(prof.name, msg("profiles.architectures", arch=arch))
    if model_type:
        for prof in profiles.values():
            if model_type in prof.model_types:
                return FamilyChoice(prof.name, msg("profiles.model_type", model_type=model_type))
    if model_type or architectures:
        listed = ", ".join(architectures)
        said = msg("profiles.no-profile.both", model_type=model_type, architectures=listed) if model_type and \
            architectures else msg("profiles.no-profile.model-type", model_type=model_type) if model_type else \
            msg("profiles.no-profile.architectures", architectures=listed)
        return FamilyChoice("default", said, generic=True)
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
            return FamilyChoice(best[1], msg("profiles.model-name", name=name))
    return FamilyChoice("default", msg("profiles.model_type-architectures-name"), generic=True)
