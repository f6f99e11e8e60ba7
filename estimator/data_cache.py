"""The package's own YAML data, parsed once per content and kept on disk for the next process.

Every ``sapp`` command and every app worker is a new process, and the first message it renders reads the whole
message catalogue (~90 YAML files): ~25 ms of parsing, checking and building with libyaml, against ~3 ms to look
at the files' sizes and times and load one JSON file. The cached value depends on nothing but the files (and this
module's format), so its name is a hash of their names, sizes and modification times, as Python's own bytecode
cache checks its sources: an edited, added or removed file is a new name, never a stale value. One file per
``kind`` is kept (the newest content's; the others are removed when it is written), in the user's cache folder
(``replay_cache.cache_dir``). A missing, unreadable, malformed or invalid file is a miss, never an error: the
value is built from the YAML again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

FORMAT = b"package data as JSON (1)"


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
    strings, numbers, booleans, None), which ``valid`` checks of a stored value."""
    from .errors import ConfigError
    from .inputs import read_text
    from .limits import MAX_CACHE_BYTES
    from .replay_cache import cache_dir

    digest, readable = _digest(sources)
    if not readable:
        return build()
    folder = cache_dir()
    path = folder / f"{kind}-{digest}.json"
    try:
        stored = json.loads(read_text(path, MAX_CACHE_BYTES)) if path.exists() else None
    except (ConfigError, OSError, ValueError, RecursionError):  # not a regular file, too large, not JSON: a miss
        stored = None
    if stored is not None and valid(stored):
        return stored
    value = build()
    _write(folder, path, kind, value)
    return value


def _write(folder: Path, path: Path, kind: str, value: Any) -> None:
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


__all__ = ["cached"]
