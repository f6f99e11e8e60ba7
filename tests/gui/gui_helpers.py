"""Helpers shared by the GUI tests (imported as a plain module: tests/gui is on sys.path)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "examples"
DSV3_PLAN = EXAMPLES / "deepseek_v3_671b.plan.yaml"
ARTIFACTS = ROOT / "tests" / "artifacts"

DENSE_PLAN = """\
# a small dense plan for fast GUI tests (Llama-3-8B shape on 64 devices)
model:
  name: test-dense-8b
  hidden_size: 4096
  num_layers: 32
  num_attention_heads: 32
  num_kv_heads: 8
  ffn_hidden_size: 14336
  vocab_size: 128256
strategy:
  dp: 4   # data parallel
  tp: 4
  pp: 4
  micro_batch_size: 1
  micro_batches: 16
  seq_length: 4096
  sequence_parallel: true
  recompute: selective
hardware:
  device: A2
options:
  framework: megatron
"""


def open_and_wait(qtbot, window, paths: list, **kwargs: object):
    """Open ``paths`` and wait until the first estimate is on the chart; returns the Result."""
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000) as blocker:
        assert window.open_paths([str(p) for p in paths], **kwargs)
    return blocker.args[0]


def edit_and_wait(qtbot, window, do: Callable[[], object]):
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000) as blocker:
        do()
    return blocker.args[0]


def type_into(qtbot, widget, text: str) -> None:
    """Focus a field, replace its text by typing, and press Enter (what a keyboard user does)."""
    from PySide6.QtCore import Qt

    widget.setFocus()
    if hasattr(widget, "selectAll"):
        widget.selectAll()
    elif hasattr(widget, "lineEdit"):
        widget.lineEdit().selectAll()
    qtbot.keyClicks(widget, text)
    qtbot.keyClick(widget, Qt.Key.Key_Enter)


MF_DSV3 = EXAMPLES / "mindformers_deepseek_v3_671b.yaml"
MF_QWEN3 = EXAMPLES / "mindformers_qwen3_32b.yaml"
MS_DSV3 = EXAMPLES / "mindspeed_deepseek_v3_671b_pretrain.sh"
TT_LLAMA = EXAMPLES / "torchtitan_llama3_70b.toml"


def run_search(qtbot, window, dims: dict | None = None, timeout: int = 60000):
    """Set the search space (``{"tp": "auto", "pp": ("list", "4,8")}``), run it and wait for the table."""
    panel = window.workspace_tabs.search
    window.show_tab("search")
    if dims is not None:
        panel.space.set_dims(dims)
    with qtbot.waitSignal(panel.results_shown, timeout=timeout) as blocker:
        assert window.run_search() is not None
    return blocker.args[0]


def save_shot(widget, name: str):
    """A PNG of ``widget`` under tests/artifacts/ (git-ignored); returns its path."""
    from PySide6.QtWidgets import QApplication

    for _ in range(5):  # let deferred layouts (axis widths, splitter sizes) settle before grabbing
        QApplication.processEvents()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    assert widget.grab().save(str(path), "PNG")
    return path


def held_search(parsed, space, progress=None, cancel=None):
    """A search that reports pricing and then waits for Cancel before searching (runs in the worker process,
    so it lives in an importable module)."""
    import time

    from estimator.search import search

    progress(0, 1, "price")
    deadline = time.monotonic() + 30
    while not cancel() and time.monotonic() < deadline:
        time.sleep(0.01)
    return search(parsed, space, progress=progress, cancel=cancel)


def gated_window(qtbot, make_window, paths: list):
    """A window opened on ``paths`` whose later estimates wait for the returned gate (``gate.set()`` lets them
    run): an estimate slower than the stale grace, without sleeping."""
    import threading

    from estimator.estimate import estimate

    gate = threading.Event()

    def gated(*args, **kwargs):
        gate.wait(20)
        return estimate(*args, **kwargs)

    window = make_window(estimate_fn=gated)
    gate.set()
    open_and_wait(qtbot, window, paths)
    gate.clear()
    return window, gate
