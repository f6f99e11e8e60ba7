"""docs/model.md stays the reference the code points at: every ``docs/model.md#<section>`` link in the code and
tests names a heading of it, and every formula id the code names is described in it."""

from __future__ import annotations

import re
from pathlib import Path

from estimator.explain import FORMULAS

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "docs" / "model.md"
LINK = re.compile(r"docs/model\.md#([a-z0-9-]+)")
FORMULA_ID = re.compile(r"\[([ACDFMPSTWX]-[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\]")


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    out: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        anchor = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n, unique = 0, anchor
        while unique in out:
            n += 1
            unique = f"{anchor}-{n}"
        out.add(unique)
    return out


def sources() -> list[Path]:
    return [*(ROOT / "estimator").rglob("*.py"), *(ROOT / "tests").glob("*.py"), *(ROOT / "docs").glob("*.md")]


def test_every_link_names_a_section():
    known = anchors(MODEL.read_text(encoding="utf-8"))
    missing = {(path.relative_to(ROOT).as_posix(), link) for path in sources()
               for link in LINK.findall(path.read_text(encoding="utf-8")) if link not in known}
    assert not missing, sorted(missing)


def test_the_code_links_to_the_model():
    linked = sum(len(LINK.findall(path.read_text(encoding="utf-8"))) for path in (ROOT / "estimator").rglob("*.py"))
    assert linked > 100


def test_every_formula_id_is_described():
    text = MODEL.read_text(encoding="utf-8")
    named = set(FORMULAS)
    for path in (ROOT / "estimator").rglob("*.py"):
        named |= set(FORMULA_ID.findall(path.read_text(encoding="utf-8")))
    missing = sorted(i for i in named if f"[{i}]" not in text)
    assert not missing, missing


def test_anchors_follow_github():
    assert anchors("## Stage memory\n### In-flight micro-batches\n## Units\n### Units\n") == {
        "stage-memory", "in-flight-micro-batches", "units", "units-1"}
