"""Calibration profiles: the device-level terms and efficiencies one measured run determined, saved as YAML in
the user's config folder (``calibrations/`` beside ``presets/``) and applied to later plans on the same device
and framework, with provenance ("calibrated from LOG on DATE").

A profile holds only what its logs determined; every term names the log lines it came from. Applying a profile
sets ``options.allocator_slack_factor`` / ``allocator_slack_fraction`` / ``comm_library_factor`` /
``runtime_context`` and the preset's ``eff_matmul`` (whose source becomes the calibration), and records
``options.calibration``; the device memory model ignores the terms when the plan's device is not the
profile's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..inputs import load_yaml, read_text
from ..limits import bound_of, check_number, short_repr
from ..messages import Text, msg
from ..parsed import ParsedConfig
from ..sources import Source, Vouch
from ..warnings import Assumption

TERMS = ("allocator_slack_factor", "allocator_slack_fraction", "comm_library_factor", "runtime_context",
         "eff_matmul")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
HEADER = "# SAPP Planner calibration profile (sapp calibrate); terms apply to plans on the same device and framework\n"


@dataclass(frozen=True)
class Term:
    value: float
    source: Text      # the log lines it came from


@dataclass(frozen=True)
class Profile:
    name: str
    created: str      # ISO date
    device: str
    framework: str
    logs: tuple[str, ...]
    terms: dict[str, Term] = field(default_factory=dict)
    not_determined: tuple[Text, ...] = ()
    measured_on: dict[str, Any] = field(default_factory=dict)  # the plan the logs came from (information)

    @property
    def provenance(self) -> str:
        return f"calibrated from {', '.join(Path(p).name for p in self.logs)} on {self.created[:10]}"

    def to_yaml(self) -> str:
        data = {"name": self.name, "created": self.created, "device": self.device, "framework": self.framework,
                "logs": list(self.logs),
                "terms": {k: {"value": t.value, "from": str(t.source)} for k, t in self.terms.items()},
                "not_determined": [str(why) for why in self.not_determined], "measured_on": dict(self.measured_on)}
        return HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def check_name(name: str) -> str:
    name = name.strip()
    if not _NAME.match(name):
        raise ConfigError(msg("profile.calibration-name-uses"),
                          key="--name")
    return name


def read_profile(path: Path) -> Profile:
    """A calibration profile; a file that is not one (hand-edited, truncated, hostile) is a ConfigError naming the
    key — read within the bounds of every user file (regular files only, docs/limits.md)."""
    where = str(path)
    data = load_yaml(read_text(path), where)
    if not isinstance(data, dict):
        raise ConfigError(msg("profile.calibration-profile-mapping"), path=where)
    for key in ("name", "created", "device", "framework", "terms"):
        if key not in data:
            raise ConfigError(msg("profile.calibration-profile-needs", key=key), path=where, key=key)
    for key in ("name", "created", "device", "framework"):
        if not isinstance(data[key], (str, int, float)) or isinstance(data[key], bool):
            raise ConfigError(msg("profile.expected-text", value=short_repr(data[key])), path=where, key=key)
    if not isinstance(data["terms"], dict):
        raise ConfigError(msg("profile.term"), path=where, key="terms")
    for key, kind in (("logs", list), ("not_determined", list), ("measured_on", dict)):
        if data.get(key) is not None and not isinstance(data[key], kind):
            expected = msg("profile.expected-list", value=short_repr(data[key])) if kind is list else \
                msg("profile.expected-mapping", value=short_repr(data[key]))
            raise ConfigError(expected, path=where, key=key)
    terms = {}
    for key, entry in data["terms"].items():
        if key not in TERMS:
            raise ConfigError(msg("profile.unknown-calibration-term", key=key, TERMS=', '.join(TERMS)), path=where,
                              key=f"terms.{key}")
        value = entry.get("value") if isinstance(entry, dict) else None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(msg("profile.term"), path=where, key=f"terms.{key}")
        # the bound of the field the term sets (a NaN or negative term would price every later plan as nonsense)
        field_name = "hardware.eff_matmul" if key == "eff_matmul" else f"options.{key}"
        check_number(float(value), bound_of(field_name, float), path=where, key=f"terms.{key}.value")
        terms[key] = Term(float(value), str(entry.get("from", "")))
    return Profile(str(data["name"]), str(data["created"]), str(data["device"]), str(data["framework"]),
                   tuple(str(x) for x in data.get("logs") or ()), terms,
                   tuple(str(x) for x in data.get("not_determined") or ()), dict(data.get("measured_on") or {}))


def profiles_in(folder: Path, problems: list[str] | None = None) -> list[Profile]:
    """Readable profiles of ``folder``, newest first. A file that is not one (``sapp calibrate`` wrote it
    atomically, so it is someone's hand edit — or not a file at all) is left out, and why goes to ``problems``."""
    out = []
    if folder.is_dir():
        for path in sorted(folder.glob("*.yaml")):
            try:
                out.append(read_profile(path))
            except ConfigError as exc:
                if problems is not None:
                    problems.append(str(exc))
    return sorted(out, key=lambda p: p.created, reverse=True)


def matching_profile(parsed: ParsedConfig, folder: Path, name: str | None = None,
                     problems: list[str] | None = None) -> Profile | None:
    """The profile for the plan's device and framework (the newest), or the one named; profiles that cannot be
    read are named in ``problems``."""
    profiles = profiles_in(folder, problems)
    if name is not None:
        named = [p for p in profiles if p.name == name]
        if not named:
            known = ", ".join(p.name for p in profiles) or "none"
            if problems:
                raise ConfigError(msg("profile.calibration-profile-known-broken", name=name, folder=folder,
                                      known=known, broken="; ".join(problems)), key="--calibration")
            raise ConfigError(msg("profile.calibration-profile-known", name=name, folder=folder, known=known),
                              key="--calibration")
        return named[0]
    device = (parsed.hardware.id or "").lower()
    for profile in profiles:
        if profile.device.lower() == device and profile.framework == parsed.options.framework:
            return profile
    return None


def apply_profile(parsed: ParsedConfig, profile: Profile) -> ParsedConfig:
    """The plan with the profile's terms in its options and preset, said out loud as an assumption."""
    terms = profile.terms
    options = {k: terms[k].value for k in ("allocator_slack_factor", "allocator_slack_fraction",
                                           "comm_library_factor", "runtime_context") if k in terms}
    opts = parsed.options.replace(calibration=profile.name, calibration_device=profile.device, **options)
    hw = parsed.hardware
    if "eff_matmul" in terms:
        source = Source(f"calibration:{profile.name}", "calibrated", profile.provenance,
                        note=str(terms["eff_matmul"].source))
        value = terms["eff_matmul"].value
        vouches = (*(v for v in hw.provenance if v.field != "eff_matmul"), Vouch("eff_matmul", source.id, value))
        # the band keeps its relative width around the calibrated value: the log fixes this plan's efficiency,
        # another plan's (other shapes, other overlap) stays as uncertain as before
        low, high = hw.band("matmul")
        scale = value / hw.eff_matmul
        bands = (*((k, lo, hi) for k, lo, hi in hw.efficiency_band if k != "matmul"),
                 ("matmul", low * scale, min(1.0, high * scale)))
        hw = hw.replace(eff_matmul=value, efficiency_band=bands, sources=(*hw.sources, source), provenance=vouches)
    note = Assumption("options.calibration", profile.name,
                      msg("profile.calibrated-terms", provenance=profile.provenance,
                          terms=", ".join(f"{k} {_show(k, t.value)}" for k, t in terms.items())))
    return replace(parsed, options=opts, hardware=hw, assumptions=(*parsed.assumptions, note))


def _show(term: str, value: float) -> str:
    if term == "runtime_context":
        return f"{value / 2 ** 30:.2f} GiB"
    return f"{value:.3g}"


__all__ = ["HEADER", "TERMS", "Profile", "Term", "apply_profile", "check_name", "matching_profile",
           "profiles_in", "read_profile"]
