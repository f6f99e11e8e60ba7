"""Plug-ins: installed packages that add readers, layer kinds and formulas (estimator/kinds), family profiles or
device presets through the entry-point group ``sapp_planner.plugins``.

An entry point names a callable ``register(context)``; it receives a ``PluginContext`` and calls its ``add_*``
methods. Plug-ins load once per process (the CLI at start, the app at start). A plug-in that fails to import,
raises in ``register`` or adds something invalid is named with the reason and skipped; it never stops the tool,
and what it added before failing is taken back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .messages import msg

GROUP = "sapp_planner.plugins"


@dataclass
class PluginInfo:
    name: str
    target: str                 # "module:attr" of the entry point
    distribution: str           # "package version"
    ok: bool = False
    error: str = ""
    added: list[str] = field(default_factory=list)


class PluginContext:
    """What a plug-in may add. Each call checks its input and records what was added."""

    def __init__(self, info: PluginInfo) -> None:
        self.info = info
        self._undo: list[Callable[[], None]] = []

    def add_reader(self, name: str, detect: Callable[[Any, str], bool], read: Callable[..., Any]) -> None:
        """A config format: ``detect(data, path) -> bool`` and ``read(text, path, data, devices) -> Reading``
        (see estimator/formats/support.py). A name the tool already reads is refused."""
        from .formats import READERS, registered_readers

        if name in registered_readers():  # the built-in ones first: they are detected before a plug-in's
            raise ConfigError(msg("plugins.plug-reader-named", name=self.info.name, reader=name))
        if not (callable(detect) and callable(read)):
            raise ConfigError(msg("plugins.plug-add_reader-needs", name=self.info.name))
        READERS[name] = (detect, read)
        self._undo.append(lambda: READERS.pop(name, None))
        self.info.added.append(f"reader {name}")

    def add_profiles_dir(self, folder: str | Path) -> None:
        """A folder of family profiles (the shape of estimator/profiles/*.yaml)."""
        from .profiles import add_profile_dir, remove_profile_dir

        path = Path(folder)
        add_profile_dir(path)
        self._undo.append(lambda: remove_profile_dir(path))
        self.info.added.append(f"profiles {path}")

    def add_kinds_dir(self, folder: str | Path) -> None:
        """A folder of layer kinds and slot overrides (estimator/kinds)."""
        from .kinds import add_kinds_dir, remove_kinds_dir

        path = Path(folder)
        if not path.is_dir():
            raise ConfigError(msg("plugins.plug-kinds-folder", name=self.info.name, path=path))
        add_kinds_dir(path, f"plug-in {self.info.name}")
        self._undo.append(lambda: remove_kinds_dir(path))
        self.info.added.append(f"layer kinds {path}")

    def add_presets_dir(self, folder: str | Path) -> None:
        """A folder of device presets (the shape of estimator/presets/*.yaml)."""
        from .hardware import load_presets

        path = Path(folder)
        if not path.is_dir():
            raise ConfigError(msg("plugins.plug-presets-folder", name=self.info.name, path=path))
        load_presets((path,))  # every file must load
        _PRESET_DIRS.append(path)
        self._undo.append(lambda: _PRESET_DIRS.remove(path))
        self.info.added.append(f"presets {path}")

    def undo(self) -> None:
        for step in reversed(self._undo):
            step()
        self._undo.clear()
        self.info.added.clear()


_PRESET_DIRS: list[Path] = []


def preset_dirs() -> tuple[Path, ...]:
    """Preset folders the loaded plug-ins added."""
    load_plugins()
    return tuple(_PRESET_DIRS)


def _may_declare_plugins() -> bool:
    """False only when no installed distribution can name an entry point of GROUP, looked at as
    ``importlib.metadata`` finds them (Python 3.11's path finder): every entry of ``sys.path`` is a folder or
    missing (a file there may be a zip of distributions), no import finder but the standard path finder lists
    distributions, and no ``*.dist-info``/``*.egg-info`` folder in those folders (nor an ``.egg`` folder's
    EGG-INFO) has an ``entry_points.txt`` that mentions the group. Reading those few small files takes ~1 ms;
    importing ``importlib.metadata`` (email, zipfile, csv …) and scanning every distribution took ~12 ms of every
    command, and almost no install has a plug-in. When this says True, ``importlib.metadata`` decides."""
    from importlib.machinery import PathFinder

    if any(finder is not PathFinder and hasattr(finder, "find_distributions") for finder in sys.meta_path):
        return True
    group = GROUP.lower()
    for entry in sys.path:
        base = entry or "."
        if not isinstance(base, str) or not os.path.exists(base):
            continue
        if not os.path.isdir(base):
            return True
        try:
            children = os.listdir(base)
        except OSError:
            continue
        is_egg = base.lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")) or (is_egg and low == "egg-info"):
                try:
                    with open(os.path.join(base, child, "entry_points.txt"), encoding="utf-8",
                              errors="replace") as fh:
                        if group in fh.read().lower():
                            return True
                except OSError:  # no entry points (or an egg-info file, not a folder)
                    continue
    return False


@cache
def load_plugins() -> tuple[PluginInfo, ...]:
    """Load every installed plug-in once; failures are recorded, never raised."""
    if not _may_declare_plugins():
        return ()
    from importlib import metadata

    infos: list[PluginInfo] = []
    for entry in sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name):
        dist = getattr(entry, "dist", None)
        info = PluginInfo(entry.name, entry.value, f"{dist.name} {dist.version}" if dist else "")
        context = PluginContext(info)
        try:
            register = entry.load()
            if not callable(register):
                raise TypeError(f"{entry.value} is not callable")
            register(context)
            info.ok = True
        except Exception as exc:  # a plug-in is someone else's code: any failure skips it, named
            context.undo()
            info.error = f"{type(exc).__name__}: {exc}"
        infos.append(info)
    return tuple(infos)


def plugin_problems() -> list[str]:
    return [f"plug-in {p.name} ({p.target}) skipped: {p.error}" for p in load_plugins() if not p.ok]
