"""The package's own YAML data, parsed once per content and kept on disk for the next process.

Every ``sapp`` command and every app worker is a new process, and the first message it renders reads the whole
message catalogue (~90 YAML files): ~25 ms of parsing, checking and building with libyaml, against ~3 ms to look
at the files' sizes and times and load one JSON file. The cached value depends on nothing but the files (and this
module's format), so its name is a hash of their names, sizes and modification times, as Python's own bytecode
cache checks its sources: an edited, added or removed file is a new name, never a stale value. One file per
``kind`` is kept (the newest content's; the others are removed when it is written), in the user's cache folder
(``cache_dir``, which the schedule-replay cache uses too). A missing, unreadable, malformed or invalid file is a
miss, never an error: the value is built from the YAML again. The shipped device presets, family profiles and
layer kinds are kept the same way (``cached_files``: ~25 ms of libyaml per process, 2026-12-02).

This module imports nothing of the estimator: the message catalogue reads through it before anything else can
render a message.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

FORMAT = b"package data as JSON (1)"
MAX_CACHE_BYTES = 32 << 20  # listed and explained with every other bound in ``limits``


def cache_dir() -> Path:
    """The user's cache folder (``$SAPP_CACHE_DIR`` wins)."""
    override = os.environ.get("SAPP_CACHE_DIR")
    if override:
        return Path(override)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "sapp-planner"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "sapp-planner" / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sapp-planner"


def read_stored(path: Path) -> Any:
    """The JSON of a regular file of at most MAX_CACHE_BYTES, or None (a FIFO or /dev/zero in its place must not
    hang or fill memory; a number too long for ``int`` or nesting too deep for the parser is a malformed file)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CACHE_BYTES:
            return None
        data = b""
        while len(data) <= MAX_CACHE_BYTES:
            chunk = os.read(fd, MAX_CACHE_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
        return json.loads(data) if len(data) <= MAX_CACHE_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def _digest(sources: Sequence[Path]) -> tuple[str, bool]:
    """A hash of the sources' names, sizes and modification times (as Python's own bytecode cache checks its
    sources: reading and hashing the bytes cost more than the rest); False when one cannot be read."""
    h = hashlib.sha256(FORMAT)
    for path in sources:
        try:
            info = path.stat()
        except OSError:
            return "", False
        h.update(f"{path.name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return h.hexdigest()[:20], True


def cached(kind: str, sources: Sequence[Path], build: Callable[[], Any], valid: Callable[[Any], bool]) -> Any:
    """``build()`` (the data read from ``sources``), or the value a process stored for the same sources' bytes
    when ``valid`` accepts it. ``build`` must return what JSON keeps exactly (dicts with string keys, lists,
    strings, numbers, booleans, None), which ``valid`` checks of a stored value; a built value that ``valid``
    refuses (a date or a number key in a YAML file) is returned and never stored."""
    digest, readable = _digest(sources)
    if not readable:
        return build()
    folder = cache_dir()
    path = folder / f"{kind}-{digest}.json"
    stored = read_stored(path)
    if stored is not None and valid(stored):
        return stored
    value = build()
    if valid(value):
        _write(folder, path, kind, value)
    return value


def cached_files(kind: str, files: Sequence[Path], load: Callable[[Path], Any]) -> list[Any]:
    """``[load(path) for path in files]`` (the package's own YAML files, each parsed within its bounds by
    ``load``), kept as ``cached`` keeps a value: libyaml takes ~25 ms for the shipped presets, profiles and
    layer kinds, their JSON well under 1 ms. A stored value must hold one JSON-exact document per file; what
    a document says is checked by the caller as the YAML's own would be."""
    return cached(kind, files, lambda: [load(path) for path in files],
                  lambda value: isinstance(value, list) and len(value) == len(files) and json_exact(value))


def json_exact(value: Any) -> bool:
    """Whether JSON gives ``value`` back as it is: dicts with string keys, lists, strings, numbers, booleans,
    None (never a tuple, a date or a number key, which it would change or refuse)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, list):
        return all(json_exact(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and json_exact(item) for key, item in value.items())
    return False


def _write(folder: Path, path: Path, kind: str, value: Any) -> None:
    import tempfile  # only on a miss: with shutil, lzma and bz2 it is ~3 ms of every process's imports

    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(value, fh, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, path)
        tmp = None
        for old in folder.glob(f"{kind}-*.json"):  # other contents' values: one file per kind
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a cache that cannot be written only costs the next process the parsing
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


__all__ = ["MAX_CACHE_BYTES", "cache_dir", "cached", "cached_files", "json_exact", "read_stored"]
