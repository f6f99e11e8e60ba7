"""Desktop-app latency: edit → chart updated (p50/p95 over 50 edits on the DeepSeek-V3 example), cold start
to the first chart, and search → first results in the Search tab (the DeepSeek-V3 MindFormers example with tp,
pp and recompute auto, then larger spaces, with the longest stall of the GUI thread while the worker searches).
Prints numbers, asserts nothing.

    .venv/bin/python benchmarks/bench_gui.py [--edits 50] [--cold-runs 3] [--search-runs 3]

Runs offscreen. "after debounce" starts when the plan is handed to the worker; "edit →" starts at the form
commit (an edit after a pause is handed over on the next turn of the event loop, one within 20 ms of the previous
waits for the burst to end: docs/decisions.md P-GUI-PAINT). "drawn" is when the chart items hold the new
numbers; "painted" is after the pending paint events ran. "GUI thread CPU" is the GUI thread's CPU time from one
edit to the next (paints and layouts that run after "painted" included; the worker's estimate not).

Measured (2026-12-02, 2 shared cores at a load of 4.0–5.4, six runs of 100 edits alternating 69d3a72 with
0b00e73): edit → painted p50 24–67 ms, p95 55–172 ms (0b00e73: 65–99 / 108–243 ms); the GUI thread's CPU per edit
20–30 ms (26–35). With the tiles and the status bar's time no longer repainting the window three more times per
edit (P-GUI-PAINT "The labels"; six runs alternating with aab6f5a at a load of 3.7–5.3, the full suite running
beside them): GUI thread CPU p50 20.0–26.6 ms (aab6f5a: 22.7–28.3), edit → painted p50 40–104 ms, p95 93–207 ms
(45–122 / 95–263). With the value axes keeping their scales' pictures, the warnings list built once per estimate,
form rows refreshed only when their inputs change and the stage chart's labels placed without a second paint
(P-GUI-PAINT, "2026-12-02, third session"; four runs alternating with the same tree with e9ebb76's sapp_gui, load
5.6–6.5): GUI thread CPU p50 17.8–19.1 ms (19.8–23.2), edit → painted p50 33–44 ms, p95 74–106 ms (33–56 / 80–185).
Quiet machine, third session's close (main 2fe605e, load 0.5–0.7, three runs of 100 edits): edit → painted p50
22.1–24.1 ms, p95 40.3–41.6 ms (goal ≤ 50 ms met quiet), GUI thread CPU p50 12.3–14.4 ms; cold start 0.66–0.82 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLE = ROOT / "resources" / "examples" / "deepseek_v3_671b.plan.yaml"
SEARCH_EXAMPLE = ROOT / "resources" / "examples" / "mindformers_deepseek_v3_671b.yaml"
SEARCH_SPACES = [("tp, pp, rec auto", {"tp": "auto", "pp": "auto", "rec": "auto"}),
                 ("tp, pp, rec, mbs, vpp auto", {"tp": "auto", "pp": "auto", "rec": "auto", "mbs": "auto",
                                                 "vpp": "auto"}),
                 ("all auto", {d: "auto" for d in ("tp", "pp", "cp", "ep", "etp", "vpp", "mbs", "os", "sp", "rec")})]
EDITS = [{"strategy.tp": 8}, {"strategy.tp": 2}, {"strategy.tp": 4}, {"strategy.ep": 16}, {"strategy.ep": 8},
         {"strategy.micro_batch_size": 2}, {"strategy.micro_batch_size": 1}, {"strategy.pp": 8},
         {"strategy.pp": 16}, {"strategy.recompute": "full"}, {"strategy.recompute": "none"}]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def cold_child(path: str) -> None:
    """One cold start: the app's own start path up to the first chart; prints the wall-clock time then."""
    from sapp_gui.app import make_app

    app = make_app()
    import tempfile

    from PySide6.QtCore import QEventLoop, QTimer

    from sapp_gui.main_window import MainWindow
    from sapp_gui.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        window = MainWindow(Settings.at(Path(tmp) / "s.ini"), session_file=Path(tmp) / "session.json")
        window.resize(1400, 900)
        window.show()
        loop = QEventLoop()
        window.estimate_drawn.connect(lambda _r: loop.quit())
        QTimer.singleShot(60000, loop.quit)
        window.open_paths([path])
        loop.exec()
        app.processEvents()  # the first paint of the chart
        print(f"FIRST_CHART {time.time():.6f}", flush=True)
        window.shutdown_workers()


def cold_start(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.time()
        proc = subprocess.run([sys.executable, __file__, "--cold-child", str(EXAMPLE)], capture_output=True,
                              text=True, cwd=ROOT, timeout=300)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("FIRST_CHART")), None)
        if line is None:
            print(proc.stderr, file=sys.stderr)
            continue
        out.append(float(line.split()[1]) - start)
    return out


def edit_latency(n: int) -> dict[str, list[float]]:
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from sapp_gui.app import make_app
    from sapp_gui.main_window import MainWindow
    from sapp_gui.settings import Settings

    app = make_app()
    import tempfile

    tmp = tempfile.TemporaryDirectory()
    # a session file of its own: the user's last session (its search space, say) must not leak into the runs
    window = MainWindow(Settings.at(Path(tmp.name) / "s.ini"), session_file=Path(tmp.name) / "session.json")
    window.resize(1400, 900)
    window.show()
    marks: dict[str, float] = {}
    loop = QEventLoop()

    def drawn(_result: object) -> None:
        marks["drawn"] = time.perf_counter()
        loop.quit()

    window.estimate_drawn.connect(drawn)
    window.runner.started.connect(lambda _g: marks.__setitem__("launched", time.perf_counter()))
    QTimer.singleShot(60000, loop.quit)
    window.open_paths([str(EXAMPLE)])
    loop.exec()
    QApplication.processEvents()
    stats: dict[str, list[float]] = {"edit→drawn": [], "edit→painted": [], "after debounce→drawn": [],
                                     "after debounce→painted": [], "estimate (worker)": [], "GUI thread CPU": []}
    done = 0
    i = 0
    cpu_mark: float | None = None  # the GUI thread's CPU time at the previous counted edit
    while done < n:
        changes = EDITS[i % len(EDITS)]
        i += 1
        marks.clear()
        before = window.undo_stack.count()
        start = time.perf_counter()
        cpu = time.thread_time()  # from one edit to the next: what the edit cost, paints after "painted" included
        if not window.edit(dict(changes), "bench") or window.undo_stack.count() == before:
            continue  # invalid or no change: nothing to draw
        timer = QTimer()
        timer.setSingleShot(True)
        timer.timeout.connect(loop.quit)
        timer.start(30000)
        loop.exec()
        timer.stop()
        if "drawn" not in marks:
            continue
        QApplication.processEvents()  # paint
        painted = time.perf_counter()
        stats["edit→drawn"].append(marks["drawn"] - start)
        stats["edit→painted"].append(painted - start)
        stats["after debounce→drawn"].append(marks["drawn"] - marks["launched"])
        stats["after debounce→painted"].append(painted - marks["launched"])
        stats["estimate (worker)"].append(float(window.time_label.text().split()[1]) / 1000)
        if cpu_mark is not None:
            stats["GUI thread CPU"].append(cpu - cpu_mark)
        cpu_mark = cpu
        done += 1
    window.shutdown_workers()
    window.ask_unsaved = lambda: "discard"  # type: ignore[method-assign]
    window.close()
    tmp.cleanup()
    del app
    return stats


def search_latency(runs: int) -> list[tuple[str, int, list[float], list[float], list[float]]]:
    """Per space: (name, candidates, click → table filled, click → painted, longest GUI-thread stall)."""
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from sapp_gui.app import make_app
    from sapp_gui.main_window import MainWindow
    from sapp_gui.settings import Settings

    make_app()
    import tempfile

    tmp = tempfile.TemporaryDirectory()
    # a session file of its own: the user's last session (its search space, say) must not leak into the runs
    window = MainWindow(Settings.at(Path(tmp.name) / "s.ini"), session_file=Path(tmp.name) / "session.json")
    window.resize(1400, 900)
    window.show()
    loop = QEventLoop()
    window.estimate_drawn.connect(lambda _r: loop.quit())
    QTimer.singleShot(60000, loop.quit)
    window.open_paths([str(SEARCH_EXAMPLE)])
    loop.exec()
    panel = window.workspace_tabs.search
    window.show_tab("search")
    QApplication.processEvents()
    out = []
    for name, dims in SEARCH_SPACES:
        panel.space.set_dims(dims)
        filled, painted, stalls, candidates = [], [], [], 0
        for _ in range(runs):
            ticks: list[float] = []
            ticker = QTimer()
            ticker.setInterval(10)
            ticker.timeout.connect(lambda t=ticks: t.append(time.perf_counter()))
            done = QEventLoop()
            panel.results_shown.connect(done.quit)
            guard = QTimer()
            guard.setSingleShot(True)
            guard.timeout.connect(done.quit)
            guard.start(300000)
            ticker.start()
            start = time.perf_counter()
            window.run_search()
            done.exec()
            shown = time.perf_counter()
            QApplication.processEvents()
            painted.append(time.perf_counter() - start)
            ticker.stop()
            guard.stop()
            panel.results_shown.disconnect(done.quit)
            if panel.result is None:
                continue
            candidates = panel.result.candidates
            filled.append(shown - start)
            gaps = [b - a for a, b in zip([start, *ticks], [*ticks, shown], strict=True)]
            stalls.append(max(gaps))
        out.append((name, candidates, filled, painted, stalls))
    window.shutdown_workers()
    window.ask_unsaved = lambda: "discard"  # type: ignore[method-assign]
    window.close()
    tmp.cleanup()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--search-runs", type=int, default=3)
    parser.add_argument("--cold-child", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        cold_child(args.cold_child)
        return
    print(f"SAPP Planner GUI benchmark: {EXAMPLE.name}, offscreen, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    from sapp_gui.worker import DEBOUNCE_MS

    stats = edit_latency(args.edits)
    count = len(stats["edit→drawn"])
    print(f"\nedit → chart, {count} edits (debounce {DEBOUNCE_MS} ms):")
    for name, values in stats.items():
        p50, p95 = percentile(values, 0.5) * 1000, percentile(values, 0.95) * 1000
        print(f"  {name:24s} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   max {max(values) * 1000:7.1f} ms")
    print(f"\nsearch → first results ({SEARCH_EXAMPLE.name}, {args.search_runs} runs each; click on Run search "
          "→ ranked table, Pareto and stage bars filled; stall = longest gap between GUI-thread timer ticks):")
    for name, candidates, filled, painted, stalls in search_latency(args.search_runs):
        if not filled:
            print(f"  {name:28s} no result")
            continue
        print(f"  {name:28s} {candidates:>9,} candidates   first results median {statistics.median(filled):6.2f} s "
              f"(painted {statistics.median(painted):6.2f} s)   GUI stall max {max(stalls) * 1000:6.0f} ms")
    cold = cold_start(args.cold_runs)
    if cold:
        print(f"\ncold start → first chart painted ({len(cold)} runs, process spawn to first paint): "
              + ", ".join(f"{c:.2f} s" for c in cold) + f"; median {statistics.median(cold):.2f} s")
    else:
        print("\ncold start: the child process did not report a chart")


if __name__ == "__main__":
    main()
