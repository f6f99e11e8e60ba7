"""Screenshots of the main window for bundled examples (PNG under tests/artifacts/, git-ignored), the
``--screenshot`` command line, and the exit status without a display."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gui_helpers import ARTIFACTS, EXAMPLES, ROOT, open_and_wait
from PySide6.QtGui import QImage

EXAMPLE_SHOTS = [
    ("deepseek_v3_671b.plan.yaml", {}, "dsv3_plan"),
    ("mindformers_llama3_70b.yaml", {}, "llama3_70b_mindformers"),
    ("torchtitan_llama3_8b_longctx_cp.toml", {"devices": 8}, "llama3_8b_cp_torchtitan"),
]


def _shot(window, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"gui_{name}.png"
    assert window.grab().save(str(path), "PNG")
    image = QImage(str(path))
    assert (image.width(), image.height()) == (window.width(), window.height())
    return path


@pytest.mark.parametrize(("file", "args", "name"), EXAMPLE_SHOTS, ids=[s[2] for s in EXAMPLE_SHOTS])
def test_screenshot_of_an_example(qtbot, window, file: str, args: dict, name: str) -> None:
    path = EXAMPLES / file
    if not path.is_file():
        pytest.skip(f"{file} is not in resources/examples")
    result = open_and_wait(qtbot, window, [path], **args)
    # show a selected segment with its Explain trace, as a user would after one click
    window.chart.select(result.peak_stage, "activations")
    qtbot.waitUntil(lambda: window.explain.quantity is not None, timeout=20000)
    qtbot.wait(50)
    shot = _shot(window, name)
    assert shot.stat().st_size > 30_000


def test_screenshot_of_the_start_page(qtbot, window) -> None:
    _shot(window, "start_page")


def _env_without_display() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["SAPP_CONFIG_DIR"] = str(ARTIFACTS / "config")
    return env


def test_cli_screenshot(tmp_path: Path) -> None:
    out = ARTIFACTS / "cli_dsv3_1280x800.png"
    out.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-m", "estimator.cli", "gui", str(EXAMPLES / "deepseek_v3_671b.plan.yaml"),
                           "--screenshot", str(out), "--size", "1280x800"],
                          cwd=ROOT, env=_env_without_display(), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    assert "first chart after" in proc.stdout


def test_cli_screenshot_of_a_bad_file_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("just: text\n")
    out = tmp_path / "bad.png"
    proc = subprocess.run([sys.executable, "-m", "sapp_gui", str(bad), "--screenshot", str(out)],
                          cwd=ROOT, env=_env_without_display(), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 1
    assert out.is_file()  # the window with the message is still rendered
    assert "bad.yaml" in proc.stderr


def test_without_display_and_screenshot_exits_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "estimator.cli", "gui"], cwd=ROOT, env=_env_without_display(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--screenshot" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "sapp_gui", "--screenshot", "x.png", "--size", "12"], cwd=ROOT,
                          env=_env_without_display(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "WIDTHxHEIGHT" in proc.stderr


@pytest.mark.parametrize("tab", ["search", "schedule"])
def test_cli_screenshot_of_a_tab_in_chinese(tab: str) -> None:
    """``--tab`` runs the tab's analysis first (the search in its worker process); ``--language`` picks zh_CN."""
    out = ARTIFACTS / f"cli_{tab}_zh_CN.png"
    out.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-m", "sapp_gui", str(EXAMPLES / "mindformers_deepseek_v3_671b.yaml"),
                           "--screenshot", str(out), "--tab", tab, "--language", "zh_CN"],
                          cwd=ROOT, env=_env_without_display(), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert QImage(str(out)).width() == 1400
