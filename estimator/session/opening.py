"""Opening: files → a plan. ``read_plan`` is a pure function of an ``OpenRequest`` (it touches no session), so
the app runs it on a worker thread and hands the ``Opened`` plan to the session on the GUI thread; the CLI
calls it directly through ``PlanSession.open``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..messages import msg
from ..parsed import ParsedConfig
from ..warnings import EstimateWarning


@dataclass(frozen=True)
class OpenRequest:
    """What to read: the files and how (the CLI's ``--framework``, ``--devices``, ``--model``, ``--device``);
    ``overrides`` are ``--set`` values applied while parsing (they may supply what the files leave out);
    ``preset_dirs`` hold the user's device presets, and beside them (``../calibrations``) the calibration
    profiles; ``calibration`` names one ("none": none; None: the newest for the plan's device and framework)."""

    paths: tuple[str, ...]
    framework: str | None = None
    devices: int | None = None
    model: str | None = None
    device: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    preset_dirs: tuple[str, ...] = ()
    calibration: str | None = None

    @classmethod
    def of(cls, paths: Sequence[str | Path], *, framework: str | None = None, devices: int | None = None,
           model: str | Path | None = None, device: str | None = None, overrides: dict[str, Any] | None = None,
           preset_dirs: Sequence[str | Path] = (), calibration: str | None = None) -> OpenRequest:
        return cls(tuple(str(p) for p in paths), framework, devices, str(model) if model else None, device,
                   tuple((overrides or {}).items()), tuple(str(d) for d in preset_dirs), calibration)

    @property
    def args(self) -> dict[str, Any]:
        """The open arguments as keywords (``framework``, ``devices``, ``model``, ``device``)."""
        return {"framework": self.framework, "devices": self.devices, "model": self.model, "device": self.device}

    def with_paths(self, paths: Sequence[str]) -> OpenRequest:
        return OpenRequest(tuple(paths), self.framework, self.devices, self.model, self.device, self.overrides,
                           self.preset_dirs, self.calibration)


@dataclass(frozen=True)
class Opened:
    """A plan read from files. ``preset_problem`` says why the user presets were ignored, if they were (a broken
    user preset must not make every config unreadable)."""

    request: OpenRequest
    parsed: ParsedConfig
    preset_problem: str = ""
    carried: dict[str, Any] = field(default_factory=dict)  # edits to apply once adopted (after an export)


def read_plan(request: OpenRequest) -> Opened:
    """Parse the request's files (raises SappError naming the file, the key and the fix)."""
    from ..formats import parse

    overrides = dict(request.overrides)
    if request.device:
        overrides["hardware.device"] = request.device
    kwargs = {"framework": request.framework, "devices": request.devices, "model": request.model,
              "overrides": overrides or None}
    dirs = tuple(Path(d) for d in request.preset_dirs)
    try:
        opened = Opened(request, parse(list(request.paths), preset_dirs=dirs, **kwargs))
    except ConfigError as exc:
        if not dirs or not exc.path or not any(str(exc.path).startswith(str(d)) for d in dirs):
            raise
        opened = Opened(request, parse(list(request.paths), **kwargs), preset_problem=str(exc))
    return _calibrated(opened, dirs)


def _calibrated(opened: Opened, dirs: tuple[Path, ...]) -> Opened:
    """Apply the calibration profile the request names, or the newest one for the plan's device and framework
    found beside the user presets (``sapp calibrate`` writes them there)."""
    from ..calibrate.profile import apply_profile, matching_profile

    name = opened.request.calibration
    if name == "none" or not dirs:
        return opened
    profile, problems = None, []
    for folder in dict.fromkeys(d.parent / "calibrations" for d in dirs):
        profile = matching_profile(opened.parsed, folder, name, problems)
        if profile is not None:
            break
    parsed = opened.parsed
    if problems:  # a profile that could not be read is said, not silently left out
        skipped = tuple(EstimateWarning("W-CALIBRATION-UNREADABLE", msg("W-CALIBRATION-UNREADABLE", problem=problem))
                        for problem in problems)
        parsed = replace(parsed, warnings=(*parsed.warnings, *skipped))
    if profile is not None:
        parsed = apply_profile(parsed, profile)
    return opened if parsed is opened.parsed else replace(opened, parsed=parsed)
