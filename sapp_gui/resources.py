"""Where the app finds its bundled files (examples, icons), in a source tree and in a PyInstaller bundle,
and the examples index shown on the start page. No Qt imports."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from estimator.yamlio import load_data

INDEX_NAME = "index.yaml"
# files that are never offered on their own (the index, editor leftovers, backups)
_SKIP_SUFFIXES = (".bak", ".tmp", ".swp", ".md", ".txt")


def resource_root() -> Path:
    """``resources/`` next to the packages (source tree) or inside the bundle (PyInstaller)."""
    override = os.environ.get("SAPP_RESOURCES")
    if override:
        return Path(override)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "resources"
    return Path(__file__).resolve().parents[1] / "resources"


def examples_dir() -> Path:
    return resource_root() / "examples"


def icon_path(name: str = "sapp-planner") -> Path | None:
    """The app icon (PNG preferred, SVG otherwise), or None when not shipped."""
    folder = resource_root() / "icons"
    for suffix in (".png", ".svg"):
        path = folder / f"{name}{suffix}"
        if path.is_file():
            return path
    return None


@dataclass(frozen=True)
class Example:
    title: str
    paths: tuple[Path, ...]
    description: str = ""
    framework: str | None = None
    devices: int | None = None
    device: str | None = None   # device preset for files that do not name their hardware (``--device``)

    def open_args(self) -> dict[str, object]:
        return {k: v for k, v in (("framework", self.framework), ("devices", self.devices),
                                  ("device", self.device)) if v}

    @property
    def key(self) -> str:
        return " + ".join(p.name for p in self.paths)


def load_examples(folder: Path | None = None, lang: str | None = None) -> list[Example]:
    """The examples that exist: indexed entries (hidden when a file is missing) first, in index order, then
    every other file of the folder under its own name. A broken index is ignored (files still listed).
    With ``lang`` (e.g. "zh_CN") an entry's ``title_<lang>`` / ``description_<lang>`` are used when given."""
    folder = folder or examples_dir()
    if not folder.is_dir():
        return []
    entries: list[dict] = []
    index = folder / INDEX_NAME
    if index.is_file():
        try:
            data = load_data(index.read_text(encoding="utf-8")) or {}
            entries = [e for e in data.get("examples") or [] if isinstance(e, dict)]
        except (yaml.YAMLError, OSError, AttributeError):
            entries = []
    out: list[Example] = []
    covered: set[str] = set()
    for entry in entries:
        names = entry.get("files") or ([entry["file"]] if entry.get("file") else [])
        names = [str(n) for n in names]
        paths = tuple(folder / n for n in names)
        covered.update(names)
        if not paths or not all(p.is_file() for p in paths):
            continue
        title = (lang and entry.get(f"title_{lang}")) or entry.get("title") or paths[0].name
        description = (lang and entry.get(f"description_{lang}")) or entry.get("description") or ""
        out.append(Example(title=str(title), paths=paths, description=str(description),
                           framework=entry.get("framework"), devices=_int_or_none(entry.get("devices")),
                           device=str(entry["device"]) if entry.get("device") else None))
    for path in sorted(folder.iterdir()):
        if path.name == INDEX_NAME or path.name.startswith(".") or not path.is_file():
            continue
        if path.name in covered or path.suffix in _SKIP_SUFFIXES:
            continue
        out.append(Example(title=path.name, paths=(path,)))
    return out


def _int_or_none(value: object) -> int | None:
    try:
        return int(value) if value is not None else None  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
