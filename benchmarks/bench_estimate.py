"""Time one full estimate (no explain) per named plan under benchmarks/inputs/, and compare with the original
SAPP-ND estimator's measured 13–42 ms per estimate (../shared/upstream_outputs/timings.json). The median is CPU
time of this process (a shared machine's wall clock also counts other processes); "edit" re-estimates after a
change of the micro-batch count (new inputs, the layout's stage structure reused). Prints only.

    .venv/bin/python benchmarks/bench_estimate.py [--repeat N]

Last measured (2026-12-02, CPU ms per estimate alternating with the previous main in one process, best of seven
rounds at a load of 6; ranges at a load of 8–9 in docs/decisions.md P-SCALAR-SPEED): DeepSeek-V3 2.56 (was
2.86), Llama-3-70B 2.82 (was 3.61); goal 0.2 ms missed by 12–15×.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from estimator import estimate
from estimator.formats import parse

HERE = Path(__file__).resolve().parent
INPUTS = ["deepseek_v3_671b_mindformers.plan.yaml", "llama3_70b_torchtitan_pp8_vpp5.plan.yaml"]
UPSTREAM_MS = (13.0, 42.0)  # SAPP-ND estimate_peak, mean of 20, on this kind of machine
GOAL_MS = 0.2


def bench(path: Path, repeat: int) -> tuple[float, float, float, float]:
    parsed = parse([str(path)])
    args = (parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    start = time.perf_counter()
    estimate(*args)
    first = time.perf_counter() - start
    samples = []
    for _ in range(repeat):
        t0 = time.process_time()
        estimate(*args)
        samples.append(time.process_time() - t0)
    other = parsed.strategy.replace(micro_batches=parsed.strategy.micro_batches * 2)
    edits = []
    for k in range(repeat):
        t0 = time.process_time()
        estimate(parsed.model, other if k % 2 else parsed.strategy, parsed.hardware, parsed.options)
        edits.append(time.process_time() - t0)
    t0 = time.perf_counter()
    estimate(*args, explain=True)
    explain = time.perf_counter() - t0
    return first, statistics.median(samples), statistics.median(edits), explain


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    print(f"{'input':48} {'first ms':>9} {'median ms':>10} {'edit ms':>8} {'explain ms':>11} {'vs upstream':>14} "
          f"{'goal':>8}")
    for name in INPUTS:
        first, median, edit, explain = bench(HERE / "inputs" / name, args.repeat)
        ratio_lo, ratio_hi = UPSTREAM_MS[0] / (median * 1e3), UPSTREAM_MS[1] / (median * 1e3)
        verdict = "met" if median * 1e3 <= GOAL_MS else "missed"
        print(f"{name:48} {first * 1e3:9.2f} {median * 1e3:10.3f} {edit * 1e3:8.3f} {explain * 1e3:11.2f} "
              f"{ratio_lo:6.0f}–{ratio_hi:.0f}× {verdict:>8}")
    print(f"goal: ≤ {GOAL_MS} ms per estimate without explain; upstream SAPP-ND: {UPSTREAM_MS[0]:.0f}–"
          f"{UPSTREAM_MS[1]:.0f} ms")


if __name__ == "__main__":
    main()
