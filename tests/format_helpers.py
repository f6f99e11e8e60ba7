"""What the format tests share: the export round trip (edit, write back, re-read the same plan) and the check every
reader's fuzz test makes on a mutated file (reading, estimating and exporting it raise only SappError), and a
fixture's variant with text replacements."""

from __future__ import annotations

import difflib
from pathlib import Path

from hypothesis import strategies as st

from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.export import export
from estimator.formats import parse
from estimator.parsed import apply_changes


def roundtrip(paths: list[str], changes: dict, devices: int | None = None, **opening) -> tuple[dict, list[str]]:
    """Apply ``changes``, export into the files, re-read them: the plan read back must be the edited one.
    Returns the new texts and the changed lines (``-old``/``+new``). ``opening``: parse's model / overrides."""
    parsed = parse(paths, devices=devices, **opening)
    edited = apply_changes(parsed, changes)
    files = export(edited)
    changed_lines = []
    for path, text in files.items():
        old = Path(path).read_text(encoding="utf-8")
        diff = difflib.unified_diff(old.splitlines(), text.splitlines(), lineterm="", n=0)
        changed_lines += [d for d in diff if d[:1] in "+-" and not d.startswith(("+++", "---"))]
        Path(path).write_text(text, encoding="utf-8")
    again = parse(paths, devices=devices, **opening)
    assert again.strategy == edited.strategy
    return files, changed_lines


def read_estimate_export(folder: Path, suffix: str, text: str, devices: int | None, **opening) -> None:
    check_mutated(folder / f"fuzz{suffix}", text, None, devices, **opening)


def check_mutated(target: Path, text: str, function: str | None, devices: int | None, **opening) -> None:
    """Write ``text`` to ``target`` and read it (``FILE.py:function`` for a Python recipe), estimate and export
    it: only SappError may come out."""
    target.write_text(text, encoding="utf-8")
    try:
        parsed = parse([f"{target}:{function}" if function else str(target)], devices=devices, **opening)
    except SappError:
        return
    try:
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
        export(apply_changes(parsed, {"strategy.micro_batch_size": parsed.strategy.micro_batch_size}))
    except SappError:
        pass


def mutate(draw, text: str, inserts: list[str]) -> str:
    """``text`` after 1-4 hypothesis-drawn edits: a deleted span, an inserted token from ``inserts``, or a digit
    replaced by a boundary number."""
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        kind = draw(st.sampled_from(["delete", "insert", "number"]))
        if kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 30)):]
        elif kind == "insert":
            text = text[:pos] + draw(st.sampled_from(inserts)) + text[pos:]
        else:
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = digits[pos % len(digits)]
                text = text[:i] + draw(st.sampled_from(["0", "-1", "99999999999999999999", "3.5"])) + text[i + 1:]
    return text


def variant(tmp_path: Path, source: Path, *edits: tuple[str, str], name: str | None = None) -> str:
    """A copy of ``source`` with text replacements (each must apply)."""
    text = source.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    target = tmp_path / (name or source.name)
    target.write_text(text, encoding="utf-8")
    return str(target)
