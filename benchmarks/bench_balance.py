"""Pipeline balancing timings (issue 5, spec §9): DeepSeek-V3 671B at pp 16 (MindFormers, every stage's layer
count and full / selective / comm recompute counts chosen exactly), the same plan under a tighter budget, and the
interleaved Qwen3-32B example (pp 4 × vpp 2: counts and recompute per chunk).
Prints wall time per run (first and best of three), the objective before and after, and the goal. Prints only.

    .venv/bin/python benchmarks/bench_balance.py
"""

from __future__ import annotations

import time
from pathlib import Path

from estimator.balance import balance
from estimator.formats import parse

HERE = Path(__file__).resolve().parent
GOAL_S = 1.0
GiB = 2**30
CASES = [
    ("DeepSeek-V3 671B, MindFormers, pp 16, the plan's budget", "deepseek_v3_671b_mindformers.plan.yaml", None),
    ("DeepSeek-V3 671B, MindFormers, pp 16, budget 48 GiB", "deepseek_v3_671b_mindformers.plan.yaml", 48 * GiB),
    ("Qwen3-32B, MindFormers, pp 4 × vpp 2 (interleaved)", "../../resources/examples/mindformers_qwen3_32b.yaml",
     None),
]


def main() -> None:
    for title, name, budget in CASES:
        parsed = parse([str(HERE / "inputs" / name)])
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            result = balance(parsed, budget=budget)
            runs.append(time.perf_counter() - t0)
        best = min(runs)
        print(title)
        print(f"  layers per stage {list(result.counts)}  full recompute {list(result.recompute['full'])}")
        print(f"  objective {result.objective_before:.3f} → {result.objective_after:.3f} s; peak "
              f"{result.before.peak_bytes / GiB:.2f} → {result.after.peak_bytes / GiB:.2f} GiB "
              f"(budget {(budget or result.before.budget) / GiB:.2f} GiB); exact: {result.exact}")
        print(f"  wall first {runs[0]:.2f} s, best of 3 {best:.2f} s  [goal ≤ {GOAL_S:.0f} s: "
              f"{'met' if best <= GOAL_S else 'missed'}]")


if __name__ == "__main__":
    main()
