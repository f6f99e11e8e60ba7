"""Exhaustive strategy search timings (issue 5): DeepSeek-V3 671B on 1024 devices (MindFormers, every dimension,
global batch 4096) and Llama-3-70B on 512 devices (torchtitan, global batch 1024). Prints candidates,
candidates/s, wall time per phase, and the latency of a cancel issued mid-pricing. Prints only.

    .venv/bin/python benchmarks/bench_search.py
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from estimator.formats import parse
from estimator.search import SearchSpace, parse_dims, search

HERE = Path(__file__).resolve().parent
CASES = [
    ("DeepSeek-V3 671B, MindFormers, 1024 devices, G 4096", "deepseek_v3_671b_mindformers.plan.yaml", 1024, 4096),
    ("Llama-3-70B, torchtitan, 512 devices, G 1024", "llama3_70b_torchtitan_pp8_vpp5.plan.yaml", 512, 1024),
]
GOAL_S = 1.0


def cancel_latency(parsed, space: SearchSpace, after: float) -> tuple[float, bool]:
    """Seconds from setting the cancel event (``after`` seconds into pricing) to the search returning."""
    event = threading.Event()
    started: list[float] = []

    def progress(done: int, total: int, phase: str) -> None:
        if phase == "price" and not started:
            started.append(time.perf_counter())
            threading.Timer(after, event.set).start()

    t0 = time.perf_counter()
    result = search(parsed, space, progress=progress, cancel=event)
    end = time.perf_counter()
    set_at = (started[0] + after) if started else t0
    return max(0.0, end - set_at), result.cancelled


def main() -> None:
    for title, name, devices, batch in CASES:
        parsed = parse([str(HERE / "inputs" / name)])
        space = SearchSpace(devices=devices, global_batch=batch, dims=parse_dims(["all=auto"]))
        search(parsed, space)  # warm the schedule and layout caches once
        t0 = time.perf_counter()
        result = search(parsed, space)
        wall = time.perf_counter() - t0
        latency, cancelled = cancel_latency(parsed, space, after=0.05)
        phases = ", ".join(f"{k} {v:.2f}" for k, v in result.phases.items())
        print(title)
        print(f"  candidates {result.candidates:,}  survivors {result.survivors:,}  fitting {result.fitting:,}")
        print(f"  wall {wall:.2f} s ({phases})  →  {result.candidates / wall:,.0f} candidates/s  "
              f"[goal ≤ {GOAL_S:.0f} s: {'met' if wall <= GOAL_S else 'missed'}]")
        print(f"  cancel latency {latency * 1e3:.0f} ms (cancelled: {cancelled})")
        if result.ranked:
            best = result.ranked[0].strategy
            print(f"  fastest: dp {best.dp} tp {best.tp} pp {best.pp} vpp {best.vpp} cp {best.cp} ep {best.ep} "
                  f"mbs {best.micro_batch_size} m {best.micro_batches} sp {best.sequence_parallel} "
                  f"recompute {best.recompute.default_mode}: {result.ranked[0].step_time_s:.2f} s/step")


if __name__ == "__main__":
    main()
