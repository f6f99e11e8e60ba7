"""Opening: files → a plan. ``read_plan`` is a pure function of an ``OpenRequest`` (it touches no session), so
the app runs it on a worker thread and hands the ``Opened`` plan to the session on the GUI thread; the CLI
calls it directly through ``PlanSession.open``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..parsed import ParsedConfig


@dataclass(frozen=True)
class OpenRequest:
    """What to read: the files and how (the CLI's ``--framework``, ``--devices``, ``--model``, ``--device``);
    ``overrides`` are ``--set`` values applied while parsing (they may supply what the files leave out);
    ``preset_dirs`` hold the user's device presets."""

    paths: tuple[str, ...]
    framework: str | None = None
    devices: int | None = None
    model: str | None = None
    device: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    preset_dirs: tuple[str, ...] = ()

    @classmethod
    def of(cls, paths: Sequence[str | Path], *, framework: str | None = None, devices: int | None = None,
           model: str | Path | None = None, device: str | None = None, overrides: dict[str, Any] | None = None,
           preset_dirs: Sequence[str | Path] = ()) -> OpenRequest:
        return cls(tuple(str(p) for p in paths), framework, devices, str(model) if model else None, device,
                   tuple((overrides or {}).items()), tuple(str(d) for d in preset_dirs))

    @property
    def args(self) -> dict[str, Any]:
        """The open arguments as keywords (``framework``, ``devices``, ``model``, ``device``)."""
        return {"framework": self.framework, "devices": self.devices, "model": self.model, "device": self.device}

    def with_paths(self, paths: Sequence[str]) -> OpenRequest:
        return OpenRequest(tuple(paths), self.framework, self.devices, self.model, self.device, self.overrides,
                           self.preset_dirs)


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
        return Opened(request, parse(list(request.paths), preset_dirs=dirs, **kwargs))
    except ConfigError as exc:
        if not dirs or not exc.path or not any(str(exc.path).startswith(str(d)) for d in dirs):
            raise
        return Opened(request, parse(list(request.paths), **kwargs), preset_problem=str(exc))
