"""Maintaining the translations (developer tool, not used at run time):

    python -m sapp_gui.i18n_build update    # pyside6-lupdate: collect the marked strings into i18n/*.ts
    python -m sapp_gui.i18n_build release   # pyside6-lrelease: compile i18n/*.ts to i18n/*.qm (committed)
    python -m sapp_gui.i18n_build check     # exit 1 if a .ts has unfinished messages or a .qm is missing/stale

Translate with Qt Linguist (``pyside6-linguist sapp_gui/i18n/sapp_zh_CN.ts``) or by editing the XML; keep the
``{0}``-style placeholders and the ``&`` accelerators. The compiled .qm files are committed, so neither the app
nor CI needs the Qt tools.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
I18N = PACKAGE / "i18n"
LANGUAGES = ("zh_CN",)


def ts_path(code: str) -> Path:
    return I18N / f"sapp_{code}.ts"


def qm_path(code: str) -> Path:
    return I18N / f"sapp_{code}.qm"


def sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name != Path(__file__).name)


def tool(name: str) -> str:
    """A Qt tool from the interpreter's environment (the venv's bin/), else from PATH."""
    candidate = Path(sys.executable).with_name(name)
    if candidate.is_file():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found: install PySide6-Essentials (it ships {name})")
    return found


def update(code: str, ts: Path | None = None) -> None:
    target = ts or ts_path(code)
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([tool("pyside6-lupdate"), "-no-obsolete", "-locations", "none",
                    *map(str, sources()), "-ts", str(target)], check=True)


def release(code: str) -> None:
    subprocess.run([tool("pyside6-lrelease"), str(ts_path(code)), "-qm", str(qm_path(code))], check=True)


@dataclass(frozen=True)
class Message:
    context: str
    source: str
    translation: str
    finished: bool
    numerus: bool


def messages(ts: Path) -> list[Message]:
    out = []
    for context in ET.parse(ts).getroot().iter("context"):
        name = context.findtext("name") or ""
        for message in context.iter("message"):
            tr = message.find("translation")
            numerus = message.get("numerus") == "yes"
            if tr is None:
                text, kind = "", "unfinished"
            elif numerus:
                text, kind = "|".join(f.text or "" for f in tr.iter("numerusform")), tr.get("type", "")
            else:
                text, kind = tr.text or "", tr.get("type", "")
            out.append(Message(name, message.findtext("source") or "", text,
                               kind not in ("unfinished", "vanished", "obsolete") and bool(text), numerus))
    return out


def problems(code: str) -> list[str]:
    """Unfinished messages, lost placeholders, a missing or stale .qm."""
    ts, qm = ts_path(code), qm_path(code)
    found = []
    if not ts.is_file():
        return [f"{ts} is missing"]
    for m in messages(ts):
        if not m.finished:
            found.append(f"{ts.name}: unfinished [{m.context}] {m.source!r}")
            continue
        for k in range(10):
            mark = "{" + str(k) + "}"
            if (mark in m.source) != (mark in m.translation):
                found.append(f"{ts.name}: placeholder {mark} differs in [{m.context}] {m.source!r}")
    if not qm.is_file():
        found.append(f"{qm} is missing: run python -m sapp_gui.i18n_build release")
    elif (stale := _stale(code)) is not None and stale:
        found.append(f"{qm.name} does not match {ts.name}: run python -m sapp_gui.i18n_build release")
    return found


def _stale(code: str) -> bool | None:
    """Whether the committed .qm differs from a fresh compile of the .ts (None without lrelease). Compared by
    content, not file times: a fresh clone gives both files the checkout's time."""
    try:
        lrelease = tool("pyside6-lrelease")
    except SystemExit:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "fresh.qm"
        subprocess.run([lrelease, str(ts_path(code)), "-qm", str(fresh)], check=True, capture_output=True)
        return fresh.read_bytes() != qm_path(code).read_bytes()


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    command = args[0] if args else "check"
    for code in LANGUAGES:
        if command == "update":
            update(code)
        elif command == "release":
            release(code)
        elif command == "check":
            issues = problems(code)
            for issue in issues:
                print(issue)
            if issues:
                return 1
        else:
            print(__doc__)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
