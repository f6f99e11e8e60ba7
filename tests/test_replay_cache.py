"""The schedule replay cache: a later process reads what an earlier one replayed; a damaged file is a miss."""

from __future__ import annotations

import json

import pytest

from estimator import replay_cache, schedules


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache folder and a process that has read nothing yet."""
    monkeypatch.setenv("SAPP_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(replay_cache, "_loaded", None)
    monkeypatch.setattr(replay_cache, "_pending", {})
    schedules.replay_profile.cache_clear()
    yield tmp_path
    schedules.replay_profile.cache_clear()


ARGS = [("interleaved", 4, 2, 8), ("1f1b", 8, 1, 16), ("zbv", 4, 2, 8), ("seq1f1b", 4, 1, 8)]


def _profiles():
    return [schedules.replay_profile(*a, n_s=2 if a[0] == "seq1f1b" else 1) for a in ARGS]


def test_a_later_process_reads_the_replays(fresh, monkeypatch):
    computed = _profiles()
    replay_cache.flush()
    assert len(list(fresh.glob("replay-*.json"))) == 1
    # a new process: nothing in memory; the replays must come from the file, not from replaying
    monkeypatch.setattr(replay_cache, "_loaded", None)
    schedules.replay_profile.cache_clear()
    monkeypatch.setattr(schedules, "_fast_points", lambda *a, **k: pytest.fail("replayed again"))
    monkeypatch.setattr(schedules, "_replay", lambda *a, **k: pytest.fail("replayed again"))
    assert _profiles() == computed


def test_a_damaged_file_is_a_miss(fresh, monkeypatch):
    computed = _profiles()
    replay_cache.flush()
    path = next(fresh.glob("replay-*.json"))
    data = json.loads(path.read_text())
    first = next(iter(data))
    entry = json.loads(data[first])  # each replay is its own JSON text, decoded when asked for
    entry[0][0][0] = [-1] * len(entry[0][0][0])  # a negative count: not a replay we wrote
    data[first] = json.dumps(entry)
    second = list(data)[1]
    data[second] = "[[[[1,"  # an entry's text that is not JSON
    path.write_text(json.dumps(data))
    monkeypatch.setattr(replay_cache, "_loaded", None)
    schedules.replay_profile.cache_clear()
    assert _profiles() == computed
    path.write_text("{not json")
    monkeypatch.setattr(replay_cache, "_loaded", None)
    schedules.replay_profile.cache_clear()
    assert _profiles() == computed


def test_flush_merges_with_what_another_process_wrote(fresh, monkeypatch):
    schedules.replay_profile("1f1b", 4, 1, 8)
    replay_cache.flush()
    monkeypatch.setattr(replay_cache, "_pending", {})
    monkeypatch.setattr(replay_cache, "_loaded", None)
    schedules.replay_profile.cache_clear()
    schedules.replay_profile("gpipe", 2, 1, 4)
    replay_cache.flush()
    keys = {tuple(json.loads(k))[:4] for k in json.loads(next(fresh.glob("replay-*.json")).read_text())}
    assert keys == {("1f1b", 4, 1, 8), ("gpipe", 2, 1, 4)}


def test_a_frozen_bundle_without_sources_still_versions_the_cache(fresh, monkeypatch):
    # PyInstaller ships bytecode only: estimator/schedules.py is absent there, and reading it ended the packaged
    # app's first estimate with "No such file or directory" (packaging/smoke.sh)
    import pathlib

    with_source = replay_cache._path()
    real_read_bytes = pathlib.Path.read_bytes

    def no_sources(self):
        if self.name == "schedules.py":
            raise FileNotFoundError(str(self))
        return real_read_bytes(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", no_sources)
    frozen = replay_cache._path()
    assert frozen is not None and frozen.parent == with_source.parent and frozen != with_source
    computed = _profiles()
    replay_cache.flush()
    assert frozen.exists()
    monkeypatch.setattr(replay_cache, "_loaded", None)
    schedules.replay_profile.cache_clear()
    monkeypatch.setattr(schedules, "_replay", lambda *a, **k: pytest.fail("replayed again"))
    monkeypatch.setattr(schedules, "_fast_points", lambda *a, **k: pytest.fail("replayed again"))
    assert _profiles() == computed
