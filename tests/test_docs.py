"""The docs stay true: every canonical field is documented in docs/plan-files.md."""

from pathlib import Path

from estimator.fields import REGISTRY

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_plan_file_doc_lists_every_field():
    text = (DOCS / "plan-files.md").read_text()
    for section in ("model", "strategy", "hardware", "options"):
        block = text.split(f"### `{section}:`", 1)[1].split("### ", 1)[0]
        for info in REGISTRY.values():
            if info.section == section:
                assert f"| `{info.name}` |" in block, f"{section}.{info.name} missing from docs/plan-files.md"
