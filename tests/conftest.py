import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# models named by Hub id resolve from the shipped catalogue, not from this machine's Hugging Face cache (a test
# that wants a cache makes its own with monkeypatch)
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="sapp-hf-home-")
for _var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
    os.environ.pop(_var, None)
# the schedule replay cache of this test session (CLI subprocesses inherit it): never the user's own
os.environ.setdefault("SAPP_CACHE_DIR", tempfile.mkdtemp(prefix="sapp-cache-"))

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def _own_config_dir(tmp_path_factory, monkeypatch):
    """Every test sees an empty user config folder of its own unless it sets one (the CLI and the app read
    presets and profiles from $SAPP_CONFIG_DIR)."""
    if "SAPP_CONFIG_DIR" not in os.environ:
        monkeypatch.setenv("SAPP_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))


@pytest.fixture
def shared_dir():
    """The sibling ../shared folder (spec, real configs, upstream outputs); tests skip without it."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED


@pytest.fixture
def nothing_kept():
    """No kept row books, resolved plans or allocator replays before and after the test (for tests that count
    what an estimate keeps or compare it with one made from nothing): ``pytestmark = usefixtures("nothing_kept")``."""
    from estimator import reuse
    from estimator.device import memory

    reuse.forget()
    memory.forget_replays()
    yield
    reuse.forget()
    memory.forget_replays()
