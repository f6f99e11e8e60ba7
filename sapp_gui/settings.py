"""A small typed wrapper over QSettings: recent files, window geometry and dock layout, last directory, the
hold lock and the interface language. Recent entries are lists of paths (a launch script plus its model.json
is one entry)."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from estimator.errors import ConfigError
from estimator.inputs import load_json
from estimator.limits import MAX_DEVICES
from estimator.userconfig import APPLICATION, ORGANIZATION

MAX_RECENT = 10


def _open_args(args: object) -> dict:
    """The open arguments of a recent entry that the app passes on (``framework``, ``model``, ``device`` text,
    ``devices`` a device count); anything else in the file is dropped."""
    if not isinstance(args, dict):
        return {}
    out = {k: v for k, v in args.items() if k in ("framework", "model", "device") and isinstance(v, str)}
    devices = args.get("devices")
    if isinstance(devices, int) and not isinstance(devices, bool) and 1 <= devices <= MAX_DEVICES:
        out["devices"] = devices
    return out


class Settings:
    def __init__(self, qsettings: QSettings | None = None) -> None:
        self.q = qsettings or QSettings(ORGANIZATION, APPLICATION)

    @classmethod
    def at(cls, path: str | Path) -> Settings:
        """Settings kept in an ini file (tests, screenshots)."""
        return cls(QSettings(str(path), QSettings.Format.IniFormat))

    # ------------------------------------------------------------------------------ recent files
    def recent(self) -> list[tuple[list[str], dict]]:
        """Recent plans, newest first: (paths, open arguments such as {"devices": 256})."""
        raw = self.q.value("recent/entries", "[]")
        try:  # the settings file is the user's: anything may be in it (bounded like every file read)
            entries = load_json(raw if isinstance(raw, str) else "[]", "recent/entries")
        except ConfigError:
            return []
        out = []
        for e in entries if isinstance(entries, list) else []:
            if isinstance(e, dict) and isinstance(e.get("paths"), list) and e["paths"] and \
                    all(isinstance(p, str) for p in e["paths"]):
                out.append((list(e["paths"]), _open_args(e.get("args"))))
        return out[:MAX_RECENT]

    def add_recent(self, paths: list[str], args: dict | None = None) -> None:
        entry = [str(Path(p).resolve()) for p in paths]
        entries = [e for e in self.recent() if e[0] != entry]
        entries.insert(0, (entry, {k: v for k, v in (args or {}).items() if v is not None}))
        self._store(entries[:MAX_RECENT])

    def remove_recent(self, paths: list[str]) -> None:
        self._store([e for e in self.recent() if e[0] != list(paths)])

    def clear_recent(self) -> None:
        self._store([])

    def _store(self, entries: list[tuple[list[str], dict]]) -> None:
        self.q.setValue("recent/entries", json.dumps([{"paths": p, "args": a} for p, a in entries]))
        self.q.sync()

    # ---------------------------------------------------------------------------------- window
    def geometry(self) -> QByteArray | None:
        value = self.q.value("window/geometry")
        return value if isinstance(value, QByteArray) else None

    def window_state(self) -> QByteArray | None:
        value = self.q.value("window/state")
        return value if isinstance(value, QByteArray) else None

    def save_window(self, geometry: QByteArray, state: QByteArray) -> None:
        self.q.setValue("window/geometry", geometry)
        self.q.setValue("window/state", state)
        self.q.sync()

    # ------------------------------------------------------------------------------------ misc
    def last_dir(self) -> str:
        return str(self.q.value("files/last_dir", "") or "")

    def set_last_dir(self, path: str) -> None:
        self.q.setValue("files/last_dir", path)

    def hold(self) -> str:
        value = str(self.q.value("edit/hold", "world") or "world")
        return value if value in ("world", "dp") else "world"

    def set_hold(self, hold: str) -> None:
        self.q.setValue("edit/hold", hold)

    def language(self) -> str:
        """"system" (follow the locale), "en" or "zh_CN"."""
        value = str(self.q.value("ui/language", "system") or "system")
        return value if value in ("system", "en", "zh_CN") else "system"

    def set_language(self, code: str) -> None:
        self.q.setValue("ui/language", code)
        self.q.sync()
