"""Models named by Hugging Face Hub id (``Qwen/Qwen3-8B``), resolved offline.

A name is looked up, in order, as a local directory holding a ``config.json``, in the local Hugging Face cache
(``HF_HUB_CACHE``, ``HF_HOME``/hub, ``~/.cache/huggingface/hub``), and in the catalogue shipped with the package
(``*.yaml`` here: the config.json fields of widely used open models, each entry with the URL of the file it was
taken from). Nothing is downloaded. A config found this way is read by the same Hugging Face reader as a
``config.json`` given with ``--model``; the caller states which source was used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..yamlio import load_data

# an org/name Hub id (a local path may look the same: the caller tries the file first)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,95}")


@dataclass(frozen=True)
class Entry:
    """One catalogue model: its Hub id, releases with the same shape, where the fields come from, the fields."""

    id: str
    source: str
    copy: str
    config: dict[str, Any] = field(compare=False)
    aliases: tuple[str, ...] = ()
    note: str = ""

    @property
    def name(self) -> str:
        return self.id.split("/")[-1]


@dataclass(frozen=True)
class Found:
    """A model config found for a name: the config, how it was found (for the user) and the catalogue entry."""

    config: dict[str, Any]
    how: str
    entry: Entry | None = None
    path: str = ""


@cache
def entries() -> tuple[Entry, ...]:
    out: list[Entry] = []
    for item in sorted(Path(__file__).parent.iterdir(), key=lambda p: p.name):
        if not item.name.endswith(".yaml"):
            continue
        data = load_data(item.read_text(encoding="utf-8")) or {}
        for raw in data.get("models", ()):
            out.append(Entry(id=raw["id"], source=raw["source"], copy=raw["copy"], config=dict(raw["config"]),
                             aliases=tuple(raw.get("aliases", ())), note=raw.get("note", "")))
    return tuple(out)


@cache
def _index() -> tuple[dict[str, Entry], dict[str, list[Entry]]]:
    """(lower-case id or alias -> entry, lower-case model name -> entries)."""
    by_id: dict[str, Entry] = {}
    by_name: dict[str, list[Entry]] = {}
    for entry in entries():
        for name in (entry.id, *entry.aliases):
            by_id[name.lower()] = entry
            by_name.setdefault(name.split("/")[-1].lower(), []).append(entry)
    return by_id, by_name


def lookup(name: str) -> tuple[Entry, str] | None:
    """The catalogue entry for a Hub id, an alias, or a path or id whose last component names exactly one
    catalogued model; with how it matched."""
    text = name.strip().rstrip("/\\")
    by_id, by_name = _index()
    if text.lower() in by_id:
        entry = by_id[text.lower()]
        return entry, f"catalogue entry {entry.id}" + (f" (for {text})" if text.lower() != entry.id.lower() else "")
    base = re.split(r"[/\\]", text)[-1].lower()
    matches = {e.id: e for e in by_name.get(base, ())}
    if len(matches) == 1:
        entry = next(iter(matches.values()))
        return entry, f"catalogue entry {entry.id}, matched by the model name {base!r} in {text!r}"
    return None


def cache_roots() -> list[Path]:
    """The local Hugging Face hub caches: first the one huggingface_hub uses (``HF_HUB_CACHE``, the legacy
    ``HUGGINGFACE_HUB_CACHE``, else ``HF_HOME``/hub, else ``$XDG_CACHE_HOME``/huggingface/hub, else
    ~/.cache/huggingface/hub), then the others of these that are set (a model downloaded before a variable
    changed)."""
    roots = [Path(os.environ[var]).expanduser() for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")
             if os.environ.get(var)]
    if os.environ.get("HF_HOME"):
        roots.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    if os.environ.get("XDG_CACHE_HOME"):
        roots.append(Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "huggingface" / "hub")
    roots.append(Path.home() / ".cache" / "huggingface" / "hub")
    return list(dict.fromkeys(roots))


def _cached_config(hub_id: str) -> Path | None:
    """config.json of ``hub_id`` in a local hub cache (the snapshot refs/main points at, else the newest)."""
    folder = "models--" + hub_id.replace("/", "--")
    for root in cache_roots():
        repo = root / folder
        snapshots = repo / "snapshots"
        if not snapshots.is_dir():
            continue
        ref = repo / "refs" / "main"
        try:
            pinned = ref.read_text(encoding="utf-8")[:64].strip() if ref.is_file() else ""
        except OSError:
            pinned = ""
        candidates = [snapshots / pinned] if re.fullmatch(r"[0-9a-f]{7,64}", pinned) else []
        candidates += sorted((p for p in snapshots.iterdir() if p.is_dir()), key=_mtime, reverse=True)
        for snapshot in candidates:
            config = snapshot / "config.json"
            if config.is_file():
                return config
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _local(text: str) -> Path | None:
    """The local model directory ``text`` names (one holding a config.json), or None — also for a name no file
    system takes (too long, ~user of nobody): then it is an id."""
    try:
        directory = Path(text).expanduser()
        return directory if (directory / "config.json").is_file() else None
    except (OSError, RuntimeError, ValueError):
        return None


def resolve(name: str, read_json: Callable[[Path], Any]) -> Found | None:
    """The model config ``name`` refers to: a local directory's config.json, the local hub cache, else the
    catalogue; None when none of them knows it. ``read_json`` loads a local config.json (the readers' bounded
    loader: a ConfigError naming a broken file)."""
    text = name.strip()
    if not text:
        return None
    directory = _local(text)
    if directory is not None:
        data = read_json(directory / "config.json")
        if isinstance(data, dict):
            return Found(data, f"the local model directory {text}", path=str(directory / "config.json"))
    if HUB_ID.fullmatch(text):
        cached = _cached_config(text)
        if cached is not None:
            data = read_json(cached)
            if isinstance(data, dict):
                return Found(data, f"the local Hugging Face cache ({cached})", path=str(cached))
    found = lookup(text)
    if found is None:
        return None
    entry, how = found
    note = f"; {entry.note}" if entry.note else ""
    return Found(dict(entry.config), f"{how}: {entry.source} (fields as published, checked against {entry.copy}"
                                     f"{note})", entry)


def by_shape(hidden: int, layers: int, heads: int, ffn: int | None) -> list[Entry]:
    """Catalogue models with this transformer shape (for a script that names no usable tokenizer)."""
    out = []
    for entry in entries():
        cfg = entry.config.get("text_config", entry.config)
        if (cfg.get("hidden_size"), cfg.get("num_hidden_layers"), cfg.get("num_attention_heads")) == \
                (hidden, layers, heads) and (ffn is None or cfg.get("intermediate_size") == ffn):
            out.append(entry)
    return out


def all_ids() -> Iterator[str]:
    for entry in entries():
        yield entry.id
        yield from entry.aliases


__all__ = ["HUB_ID", "Entry", "Found", "all_ids", "by_shape", "cache_roots", "entries", "lookup", "resolve"]
