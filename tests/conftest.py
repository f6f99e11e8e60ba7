import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture
def shared_dir():
    """The sibling ../shared folder (spec, real configs, upstream outputs); tests skip without it."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED
