"""Fixtures for the desktop-app tests (pytest-qt, QT_QPA_PLATFORM=offscreen set by tests/conftest.py).

Every window gets its own settings file, user-preset folder and config folder under tmp_path, so nothing
touches the user's real settings; every window's workers are joined at teardown; the interface language is
English unless a test switches it (and it is English again after every test).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gui_helpers import DENSE_PLAN, DSV3_PLAN


@pytest.fixture(autouse=True)
def _gui_isolation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qapp: object) -> Iterator[None]:
    from PySide6.QtCore import QStandardPaths

    from sapp_gui.style import APP_STYLESHEET

    QStandardPaths.setTestModeEnabled(True)
    monkeypatch.setenv("SAPP_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SAPP_LANG", "en")  # "system" means English here, whatever the machine's locale
    # once per session: setting either re-polishes every live widget, which costs ~0.5 s per test
    if qapp.property("sappTestStyled") is not True:  # type: ignore[attr-defined]
        qapp.setStyle("Fusion")  # type: ignore[attr-defined]
        qapp.setStyleSheet(APP_STYLESHEET)  # type: ignore[attr-defined]
        qapp.setProperty("sappTestStyled", True)  # type: ignore[attr-defined]
    yield
    from sapp_gui import language

    language.apply(language.ENGLISH)  # translators are application-wide


@pytest.fixture
def make_window(qtbot, tmp_path: Path) -> Iterator[Callable[..., object]]:
    from sapp_gui.main_window import MainWindow
    from sapp_gui.settings import Settings

    windows: list[MainWindow] = []

    def make(settings_file: Path | None = None, **kwargs: object) -> MainWindow:
        settings = Settings.at(settings_file or tmp_path / "settings.ini")
        window = MainWindow(settings, presets_dir=kwargs.pop("presets_dir", tmp_path / "presets"), **kwargs)
        window.ask_unsaved = lambda: "discard"  # no modal prompt in tests
        qtbot.addWidget(window)
        window.resize(1400, 900)
        window.show()
        qtbot.waitExposed(window)
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.shutdown_workers()


@pytest.fixture
def window(make_window):
    return make_window()


@pytest.fixture
def dense_plan(tmp_path: Path) -> Path:
    path = tmp_path / "dense.plan.yaml"
    path.write_text(DENSE_PLAN, encoding="utf-8")
    return path


@pytest.fixture
def dsv3_plan(tmp_path: Path) -> Path:
    """A writable copy of the DeepSeek-V3 example plan."""
    path = tmp_path / DSV3_PLAN.name
    shutil.copy(DSV3_PLAN, path)
    return path
