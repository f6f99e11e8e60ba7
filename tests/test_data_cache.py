"""Package data kept on disk per content (estimator/data_cache.py): a later process reads the stored value instead
of the YAML; an edited source, a damaged or invalid file is a miss; one file per kind; the message catalogue
through it equals the catalogue read from its YAML."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from estimator import data_cache


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("SAPP_CACHE_DIR", str(cache))
    return cache


def _sources(tmp_path: Path) -> list[Path]:
    out = []
    for name, text in (("a.yaml", "x: 1\n"), ("b.yaml", "y: [2, 3]\n")):
        (tmp_path / name).write_text(text)
        out.append(tmp_path / name)
    return out


def _reader(sources: list[Path], calls: list[int]):
    import yaml

    def build() -> dict:
        calls.append(1)
        out: dict = {}
        for path in sources:
            out.update(yaml.safe_load(path.read_text()))
        return out
    return build


def _valid(value: object) -> bool:
    return isinstance(value, dict) and set(value) <= {"x", "y", "z"}


def test_a_later_process_reads_the_stored_value(tmp_path: Path, folder: Path) -> None:
    sources, calls = _sources(tmp_path), []
    first = data_cache.cached("kind", sources, _reader(sources, calls), _valid)
    again = data_cache.cached("kind", sources, _reader(sources, calls), _valid)
    assert first == again == {"x": 1, "y": [2, 3]} and len(calls) == 1
    assert len(list(folder.glob("kind-*.json"))) == 1


def test_an_edited_source_is_a_new_value_and_the_old_file_goes(tmp_path: Path, folder: Path) -> None:
    sources, calls = _sources(tmp_path), []
    data_cache.cached("kind", sources, _reader(sources, calls), _valid)
    old = next(folder.glob("kind-*.json"))
    sources[1].write_text("y: [2, 3]\nz: 4\n")
    os.utime(sources[1], ns=(1, 1))  # even with an earlier time than before: the size and time differ
    assert data_cache.cached("kind", sources, _reader(sources, calls), _valid) == {"x": 1, "y": [2, 3], "z": 4}
    assert len(calls) == 2 and not old.exists() and len(list(folder.glob("kind-*.json"))) == 1
    sources.pop()  # a removed source: another value
    assert data_cache.cached("kind", sources, _reader(sources, calls), _valid) == {"x": 1}


@pytest.mark.parametrize("stored", ["{not json", json.dumps({"q": 1}), json.dumps([1, 2]), "9" * 5000])
def test_a_damaged_or_invalid_file_is_a_miss(tmp_path: Path, folder: Path, stored: str) -> None:
    sources, calls = _sources(tmp_path), []
    data_cache.cached("kind", sources, _reader(sources, calls), _valid)
    next(folder.glob("kind-*.json")).write_text(stored)
    assert data_cache.cached("kind", sources, _reader(sources, calls), _valid) == {"x": 1, "y": [2, 3]}
    assert len(calls) == 2


def test_an_unwritable_cache_is_only_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SAPP_CACHE_DIR", str(blocker / "cache"))  # a folder under a file: never writable
    sources, calls = _sources(tmp_path), []
    assert data_cache.cached("kind", sources, _reader(sources, calls), _valid) == {"x": 1, "y": [2, 3]}
    assert data_cache.cached("kind", sources, _reader(sources, calls), _valid) == {"x": 1, "y": [2, 3]}
    assert len(calls) == 2


def test_the_stored_message_catalogue_is_the_yaml_one(folder: Path) -> None:
    from estimator import messages

    read = messages._read_catalogue(messages.catalogue_files())
    messages.catalogue.cache_clear()
    try:
        assert messages.catalogue() == read  # built and stored
        assert len(list(folder.glob("messages-*.json"))) == 1
        messages.catalogue.cache_clear()
        assert messages.catalogue() == read  # read back
    finally:
        messages.catalogue.cache_clear()


def test_a_value_json_would_change_is_returned_and_not_stored(tmp_path: Path, folder: Path) -> None:
    from estimator.yamlio import load_data

    source = tmp_path / "dated.yaml"
    source.write_text("released: 2024-05-01\n1: one\n")  # a date and a number key: JSON would change both
    docs = data_cache.cached_files("dated", [source], lambda path: load_data(path.read_text()))
    assert docs == [load_data(source.read_text())] and not data_cache.json_exact(docs)
    assert not list(folder.glob("dated-*.json"))


def test_the_stored_presets_profiles_and_kinds_are_the_yaml_ones(folder: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Built from the YAML and stored, then read back with the YAML parsers refusing to run: the same presets,
    profiles and layer-kind documents."""
    from estimator import hardware, kinds, profiles

    def fresh() -> tuple:
        hardware.shipped_presets.cache_clear()
        profiles.all_profiles.cache_clear()
        kinds.registry.cache_clear()
        return hardware.shipped_presets(), profiles.all_profiles(), list(kinds._documents())

    try:
        built = fresh()
        assert {p.name.split("-")[0] for p in folder.glob("*.json")} >= {"presets", "profiles", "kinds"}

        def no_yaml(*args: object) -> None:
            raise AssertionError("parsed the YAML again")

        monkeypatch.setattr(hardware, "load_data", no_yaml)
        monkeypatch.setattr(profiles, "load_yaml", no_yaml)
        monkeypatch.setattr(kinds, "load_yaml", no_yaml)
        assert fresh() == built
        assert [where for _, where, _ in built[2]] == [f"estimator/kinds/{p.name}"
                                                       for p in sorted(kinds._SHIPPED.glob("*.yaml"))]
    finally:
        monkeypatch.undo()
        fresh()
