"""The schedule replays a process computed, kept on disk for the next one (docs/model.md#in-flight-micro-batches).

Replaying a schedule's issue order costs up to tens of milliseconds per (schedule, p, vp, m); a search visits a
hundred of them, and every CLI search and every app worker process starts cold. The replays depend on nothing but
their arguments and the code of ``schedules``, so they are kept in one JSON file per version of that code
(``replay-<hash>.json`` in the user's cache folder, ``$SAPP_CACHE_DIR`` wins), read on first use and written back
(merged, atomically) when the process ends. A missing, unreadable or malformed file or entry is a cache miss,
never an error: the replay is simply computed again.

Each entry's replay is stored as its own JSON text inside the file, decoded and checked only when a process asks
for it: a process needs a handful of the file's hundreds (up to ``MAX_ENTRIES``) of replays, and decoding and
checking all of them cost every cold estimate ~60 ms for a 250 KB file (0.6 s at the 14 MiB limit).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import marshal
import os
from pathlib import Path
from typing import Any

from .data_cache import cache_dir, read_stored

MAX_ENTRIES = 20_000  # a few MB of JSON at most; beyond that the oldest entries go
Key = tuple[Any, ...]
Profile = tuple[tuple[tuple[tuple[int, ...], int], ...], ...]  # per stage: (counts per chunk, backward chunk)

FORMAT = b"replays as JSON text per entry (2)"  # part of the file's name: a file in another format is not read
_loaded: dict[str, Any] | None = None  # key text -> the stored JSON text, or once asked for, its Profile (None: bad)
_pending: dict[str, Profile] = {}


def _code_of_schedules() -> bytes:
    """What the replays depend on: the source of ``schedules``, or (in a frozen bundle, which ships bytecode
    only) its compiled code."""
    try:
        return Path(__file__).with_name("schedules.py").read_bytes()
    except OSError:
        spec = importlib.util.find_spec(f"{__package__}.schedules")
        code = spec.loader.get_code(spec.name) if spec is not None and spec.loader is not None else None
        return marshal.dumps(code) if code is not None else b""


def _path() -> Path | None:
    """The cache file of this version of ``schedules``; None (no disk cache) when the code cannot be read."""
    code = _code_of_schedules()
    if not code:
        return None
    return cache_dir() / f"replay-{hashlib.sha256(FORMAT + code).hexdigest()[:16]}.json"


def _text(key: Key) -> str:
    return json.dumps(key, separators=(",", ":"))


def _valid(key: Key, value: Any) -> bool:
    """An entry has p stages of points whose counts are vp non-negative integers and whose chunk is below vp."""
    p, vp = key[1], key[2]
    if not (isinstance(value, list) and len(value) == p):
        return False
    for stage in value:
        if not isinstance(stage, list) or not stage:
            return False
        for point in stage:
            if not (isinstance(point, list) and len(point) == 2 and isinstance(point[0], list)
                    and len(point[0]) == vp and isinstance(point[1], int) and 0 <= point[1] < vp
                    and all(isinstance(n, int) and n >= 0 for n in point[0])):
                return False
    return True


def _read(path: Path) -> dict[str, Any]:
    """The stored entries (key text -> JSON text, undecoded); {} when there are none or the file is not what this
    module writes (a regular JSON file of at most MAX_CACHE_BYTES: a FIFO or /dev/zero in its place must not hang
    or fill memory; a number too long for ``int`` or nesting too deep for the parser is a malformed file)."""
    data = read_stored(path)
    return data if isinstance(data, dict) else {}


def _decode(key: Key, stored: Any) -> Profile | None:
    """An entry's replay from its stored text; None when it is not what this module writes."""
    if not isinstance(stored, str):
        return None
    try:
        value = json.loads(stored)
    except (ValueError, RecursionError):
        return None
    if not _valid(key, value):
        return None
    return tuple(tuple((tuple(c), b) for c, b in stage) for stage in value)


def get(key: Key) -> Profile | None:
    """The stored replay of ``key`` (schedule, p, vp, m, vpp_group, n_s, overlap), or None."""
    global _loaded
    if _loaded is None:
        path = _path()
        _loaded = _read(path) if path is not None else {}
    text = _text(key)
    stored = _loaded.get(text)
    if stored is None or isinstance(stored, tuple):
        return stored
    profile = _loaded[text] = _decode(key, stored)
    return profile


def put(key: Key, profile: Profile) -> None:
    """Remember a replay this process computed; written when the process ends."""
    _pending[_text(key)] = profile
    if _loaded is not None:
        _loaded[_text(key)] = profile


def flush() -> None:
    """Merge this process's new replays into the file (another process may have added its own meanwhile)."""
    if not _pending:
        return
    import tempfile  # only when there is something to write: ~3 ms of imports (shutil, lzma, bz2) otherwise

    path = _path()
    if path is None:
        _pending.clear()
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        merged = _read(path)
        merged.update({k: json.dumps([[[list(c), b] for c, b in stage] for stage in v], separators=(",", ":"))
                       for k, v in _pending.items()})
        if len(merged) > MAX_ENTRIES:
            merged = dict(list(merged.items())[-MAX_ENTRIES:])
        fd, tmp = tempfile.mkstemp(prefix=".replay-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(merged, fh, separators=(",", ":"))
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass  # a cache that cannot be written only costs the next process the replays
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    _pending.clear()


atexit.register(flush)

__all__ = ["cache_dir", "flush", "get", "put"]
