"""The scripted user session of issue 12 "Proof", driven through the window: open, edit tp / pp / micro-batch
size in the forms' session, search a small space and apply its best row, balance and apply, export (to the
copies in a temporary folder) — the window's own paths, workers included.

After every step the window must say nothing it does not know: the tiles, the forms and the freshness the
session reports agree (``check_tiles``) — the tiles show the verdict of the very plan in the forms, or are
marked stale with the reason, or show nothing; the forms show the session's values. Any exception, any
internal-error text on screen, any stale verdict fails the step.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication

from estimator.session import CURRENT, FAILED, NOTHING, PENDING, REJECTED_EDIT

WAIT_MS = 60000
INTERNAL = ("internal error", "Traceback", "Error:")  # what a crash turned into text would say


@dataclass
class AppTranscript:
    name: str
    steps: list[tuple[str, str]] = field(default_factory=list)

    def add(self, step: str, outcome: str) -> None:
        self.steps.append((step, outcome))

    @property
    def outcomes(self) -> dict[str, str]:
        return dict(self.steps)


def check_tiles(window: Any, name: str, step: str) -> str:
    """The tiles, the forms and the session agree; returns the session's freshness state."""
    doc = window.doc
    fresh = doc.freshness()
    where = f"{name} / {step}"
    assert fresh.state not in (PENDING, NOTHING), f"{where}: still estimating"
    summary = window.summary
    if fresh.state == CURRENT:
        shown = summary._last
        assert shown is not None and shown[0] is doc.parsed, f"{where}: the tiles are of another plan"
        assert shown[1] is doc.shown.result and summary.stale == "", f"{where}: tiles marked stale while current"
        st = doc.parsed.strategy
        devices = summary.devices.value.text().replace(",", "")
        assert devices == str(st.world_size), f"{where}: devices tile {devices} vs {st.world_size}"
        batch = summary.batch.value.text().replace(",", "")
        assert batch == str(st.global_batch_size), f"{where}: global batch tile {batch} vs {st.global_batch_size}"
        assert not window.summary_frame.stale and not window.charts_frame.stale, f"{where}: greyed while current"
    elif summary._last is not None:  # a verdict of an earlier plan is on screen: it must say so
        assert summary.stale and window.summary_frame.stale, f"{where}: {fresh.state} but the tiles look current"
    else:
        assert fresh.state in (FAILED, REJECTED_EDIT), f"{where}: {fresh.state}"
    if fresh.state != REJECTED_EDIT:  # a refused edit leaves the typed value in its field, marked
        for key in ("strategy.tp", "strategy.pp", "strategy.dp", "strategy.micro_batch_size",
                    "strategy.micro_batches"):
            row = window.forms.row(key)
            value = row.editor.field_value()
            assert value == doc.value(key), f"{where}: form {key} shows {value}, the session holds {doc.value(key)}"
    for text in (window.banner.text() if window.banner.isVisible() else "", window.statusBar().currentMessage()):
        assert not any(mark in text for mark in INTERNAL if mark != "Error:"), f"{where}: {text}"
    return fresh.state


def _settle(qtbot: Any, window: Any) -> None:
    """Wait until the plan in the forms is priced, or cannot be, or the last edit was refused (NOTHING is the
    first estimate of a document still on its way)."""
    qtbot.waitUntil(lambda: window.doc.freshness().state in (CURRENT, FAILED, REJECTED_EDIT), timeout=WAIT_MS)
    QApplication.processEvents()


def open_files(qtbot: Any, window: Any, files: list[Path], args: dict) -> str:
    """Open as a user does (answering the device-count prompt with 64); returns "ok" or the refusal."""
    failures: list[str] = []
    opened: list[bool] = []
    on_open = lambda: opened.append(True)  # noqa: E731
    window.open_failed.connect(failures.append)
    window.document_opened.connect(on_open)
    try:
        for attempt in (dict(args), {**args, "devices": 64}):
            failures.clear()
            window.open_paths([str(p) for p in files], **attempt)
            qtbot.waitUntil(lambda: bool(failures or opened), timeout=WAIT_MS)
            if opened:
                return "ok"
            if "--devices" not in failures[0] and "device count" not in failures[0]:
                break
        return f"refused: {failures[0]}"
    finally:
        window.open_failed.disconnect(failures.append)
        window.document_opened.disconnect(on_open)


def edit(qtbot: Any, window: Any, t: AppTranscript, step: str, changes: dict) -> None:
    applied = window.edit(changes, step)
    if applied:
        _settle(qtbot, window)
        t.add(step, window.doc.freshness().state)
    else:
        t.add(step, f"refused: {window.doc.rejected}" if window.doc.rejected else "no change")
    check_tiles(window, t.name, step)


def run(qtbot: Any, window: Any, name: str, files: list[Path], args: dict, workdir: Path, *,
        balance: bool = True, search: bool = True) -> AppTranscript:
    t = AppTranscript(name)
    copies = []
    for path in files:
        copies.append(Path(shutil.copy(path, workdir / path.name)))
    args = dict(args)
    if "model" in args:
        args["model"] = str(shutil.copy(args["model"], workdir))
    opened = open_files(qtbot, window, copies, args)
    t.add("open", opened)
    if opened != "ok":
        return t
    _settle(qtbot, window)
    check_tiles(window, name, "open")
    st = window.doc.parsed.strategy
    for key, value in (("strategy.tp", st.tp * 2), ("strategy.tp", st.tp), ("strategy.pp", st.pp * 2),
                       ("strategy.pp", st.pp), ("strategy.micro_batch_size", st.micro_batch_size + 1),
                       ("strategy.micro_batch_size", st.micro_batch_size)):
        edit(qtbot, window, t, f"{key}={value}", {key: value})
    if search:
        _search_and_apply(qtbot, window, t)
    if balance:
        _balance_and_apply(qtbot, window, t)
    _export(qtbot, window, t)
    return t


def _search_and_apply(qtbot: Any, window: Any, t: AppTranscript) -> None:
    panel = window.workspace_tabs.search
    window.show_tab("search")
    panel.space.set_dims({"tp": "auto", "pp": "fixed", "rec": "fixed"})
    panel.space.top_k.setValue(3)
    shown: list[Any] = []
    said: list[str] = []
    panel.results_shown.connect(shown.append)
    panel.status.connect(said.append)
    try:
        if window.run_search() is None:
            t.add("search", f"refused: {panel.summary.text()}")
            return
        qtbot.waitUntil(lambda: bool(shown or said), timeout=WAIT_MS * 2)
    finally:
        panel.results_shown.disconnect(shown.append)
        panel.status.disconnect(said.append)
    if not shown:
        t.add("search", f"refused: {said[0]}")
        check_tiles(window, t.name, "search")
        return
    current = [r for r in panel.rows if r.current]
    assert window.doc.freshness().state != CURRENT or current, f"{t.name}: the plan in the forms is not a row"
    t.add("search", f"ok ({len(panel.rows)} rows)")
    best = next((k for k, r in enumerate(panel.rows) if not r.current and r.rank is not None), None)
    if best is None:
        return
    panel.select_row(best)
    edit(qtbot, window, t, "apply search #1", panel.changes_for(best))


def _balance_and_apply(qtbot: Any, window: Any, t: AppTranscript) -> None:
    view = window.workspace_tabs.balance
    done: list[Any] = []
    failed: list[str] = []
    view.balanced.connect(done.append)
    view.failed.connect(failed.append)
    try:
        if window.run_balance() is None:
            t.add("balance", "not started")
            return
        qtbot.waitUntil(lambda: bool(done or failed), timeout=WAIT_MS * 3)
    finally:
        view.balanced.disconnect(done.append)
        view.failed.disconnect(failed.append)
    if failed:
        t.add("balance", f"refused: {failed[0]}")
        check_tiles(window, t.name, "balance")
        return
    t.add("balance", "ok")
    edit(qtbot, window, t, "apply balance", view.changes())


def _export(qtbot: Any, window: Any, t: AppTranscript) -> None:
    from PySide6.QtCore import Qt

    dialog = window.export_strategy()
    if dialog is None:
        banner = window.banner.text() if window.banner.isVisible() else window.statusBar().currentMessage()
        t.add("export", f"refused: {banner}")
        check_tiles(window, t.name, "export refused")
        return
    opened: list[bool] = []
    window.document_opened.connect(lambda: opened.append(True))
    qtbot.mouseClick(dialog.write_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(opened), timeout=WAIT_MS)
    _settle(qtbot, window)
    t.add("export", "ok")
    assert not window.doc.is_modified(), f"{t.name}: the written file does not hold the exported plan"
    check_tiles(window, t.name, "reopen after export")
