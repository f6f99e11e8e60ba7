"""Time one full estimate (no explain) per named plan under benchmarks/inputs/, and compare with the original
SAPP-ND estimator's measured 13–42 ms per estimate (../shared/upstream_outputs/timings.json). CPU time of this
process (a shared machine's wall clock also counts other processes), min and median. Prints only.

* "repeat": the same plan estimated again and again (its row book, ``estimator/reuse.py``, is kept);
* "edit": re-estimates after a change of the micro-batch count, alternating with the plan (the layout's stage
  structure and the row book reused);
* the edit mix: what a user does in the app, through the plan session (``estimator.session``) — each of a
  tp, a pp, a recompute and a micro-batch-count edit, estimated, then undone and the plan estimated again. Each
  round starts with no row book kept (``reuse.forget``), so an edit's first visit prices its rows anew and only
  what the round itself visited is reused, as in an app session;
* "cold first estimate": the first estimate of fresh processes (the CLI's and the app workers' case: the message
  catalogue, the schedule-replay cache and the allocator replays of the deciding stages load or run then).

    .venv/bin/python benchmarks/bench_estimate.py [--repeat N] [--rounds R] [--cold N]

Last measured (2026-12-02, alternating with main before the reuse rounds, load 3.2–3.6, min/median CPU ms):
DeepSeek-V3 repeat 0.171–0.179/0.180–0.183 (was 1.87–2.10/2.08–2.28), micro-batch edit 0.171–0.178/0.186–0.192,
the edit mix 0.19–0.20/0.31–0.34 (was 1.77–1.86/2.15–2.33); Llama-3-70B repeat 1.00–1.04/1.06–1.07 (was
2.29–2.37/2.36–2.48), the edit mix 1.07–1.13/2.10–2.32 (was 2.07–2.23/2.45–2.76). Goal 0.2 ms: met by DeepSeek-V3
when an edit leaves its rows; not by a tp/pp/recompute edit (1.8–2.6 ms) nor by Llama-3-70B (FSDP2 instants and
allocator replays on every estimate) — docs/decisions.md P-SCALAR-SPEED.
Finer keys (2026-12-02, third session; alternating with main e9ebb76, load 7.6–7.9, min/median CPU ms, DeepSeek-V3
through the session): tp 2.54–2.62/2.89 (was 2.98–2.99/3.54–3.73), pp 1.92–1.95/2.38–2.47 (2.15–2.36/2.70–2.73),
recompute 1.92–2.01/2.31–2.36 (2.65–2.78/3.28–3.39), micro-batch 0.278/0.32–0.35 (0.352–0.359/0.43–0.45); goal
still missed for edits that change the rows (P-SCALAR-SPEED "Finer keys").
Cold first estimate (2026-12-02, fresh processes alternating with the previous main, min/median of five at a load
of ~5.4; P-COLD-START): DeepSeek-V3 14.9/16.7 ms (was 200/222), Llama-3-70B 71.6/75.8 ms (was 261/286); goal
≤ 50 ms met for DeepSeek-V3 only.
The replay round (2026-12-02, third session: FSDP2 walks, instants, allocation traces, replays, the replayed
stages' choice and each stage's finish kept under what they read; a faster replay loop), alternating with main
838dad9, two rounds each at a load of 8.7–9.1, min/median CPU ms: Llama-3-70B repeat 0.204–0.214/0.218–0.228 (main
1.03–1.06/1.20–1.26), micro-batch edit 0.214–0.219/0.233–0.265 (main 1.04–1.11/2.24–2.45), the edit mix's
micro-batch edit 0.307–0.336/0.338–0.430 (main 2.88–3.22/3.29–4.08) and undo 0.227–0.245/0.280–0.452 (main
1.15–1.22/1.47–1.70); tp, pp, recompute edits unchanged (2.2–3.5); cold first estimate Llama-3-70B
63.7–68.4/64.8–69.2 (main 69.2–73.8/72.7–75.6): goal ≤ 50 ms still missed (three replays of the deciding stage).
Quiet machine, third session's close (main 2fe605e, load 0.5–0.7, min/median): repeat 0.162/0.167 ms
(DeepSeek-V3) and 0.196/0.199 (Llama-3-70B), micro-batch edit 0.165/0.175 and 0.196/0.212, undo 0.174/0.202 and
0.212/0.250; tp, pp and recompute edits 1.60–2.25/1.78–2.39 ms (goal missed: stages assembled one by one); cold
first estimate median 11.3 and 59.4 ms.
Step time, fourth session (2026-12-02, against main 494e94f, load 6.3–6.9, three runs each alternating, min CPU ms
through the session): DeepSeek-V3 tp 2.42–3.91 (main 2.56–2.69), pp 2.49–3.96 (2.35–2.78), Llama-3-70B tp
3.02–3.46 (3.47–3.76) — within the noise of a machine running four test suites; the step part alone (step_time
and step_band after an edit, min of 300) went 0.79 → 0.66 ms (DeepSeek-V3 tp) and 0.52 → 0.43 ms (Llama-3-70B
tp), P-SCALAR-SPEED "Fourth session — step time".
Stage assembly, fourth session (2026-12-02, against main 84dc8d8, load 4.7–5.7, two runs each alternating, min
CPU ms through the session): DeepSeek-V3 tp 2.13–2.24 (main 2.06–2.22), pp 1.71–1.72 (1.65–1.95), recompute
1.67–1.80 (1.64–1.78); Llama-3-70B tp 2.18–2.49 (2.24–2.39), pp 2.20–2.28 (2.29–2.37) — within the noise; the
stages' assembly alone (best of 7×200 on a tp edit's pricer, row costs kept) went 0.56–0.60 → 0.52–0.60 ms
(DeepSeek-V3: stage terms 0.17 → 0.14, combinations 0.07 → 0.045) and 1.10–1.22 → 0.97–1.07 ms (Llama-3-70B),
P-SCALAR-SPEED "Fourth session — stage assembly".
Cold first estimate, fourth session (2026-12-02: the allocator replays a compiled program the trace builder writes,
free blocks named by their sorted-list key; P-COLD-START "Fourth session"), fresh processes alternating with main
aa2b38a, seven each, min/median CPU ms at a load of 0.8–1.3: Llama-3-70B 43.2–44.8/45.2–45.7 (main 58.0–58.6/
60.0–60.4), DeepSeek-V3 10.4–10.7/11.1–11.2 (main 10.6–10.7/10.8–11.3): goal ≤ 50 ms met for both.
Per-stage overhead, fourth session's second round (2026-12-02: a stage without allocator replay kept once, the
StageResult's dict set at once; P-SCALAR-SPEED "Fourth session — per-stage overhead"), alternating with main b6eac98,
load 1.3–1.5, min/median CPU ms of four pairs: DeepSeek-V3 tp 2.00–2.11/2.16–2.42 (main 2.20–2.25/2.38–2.64), pp
1.65–1.71/1.82–1.99 (1.74–1.84/1.98–2.17), recompute 1.51–1.64/1.72–1.91 (1.67–1.75/1.89–2.09); Llama-3-70B
unchanged (replayed: its stages keep the layered parts).
Stages as array elements, fifth session (2026-12-02: a plan without allocator replay prices its stages at once;
P-SCALAR-SPEED "Fifth session — stages as array elements"), /work/helpers/sections.py alternating with main
02c4c5a, two runs each at a load of 2.6–3.0, min/median CPU ms of 300 edits through the session: DeepSeek-V3 tp
1.76–1.80/2.46–3.13 (main 1.97–2.05/2.67–3.47; its stages 0.52–0.55 against 0.73–0.75), recompute 1.28–1.45/
1.81–2.43 (main 1.76–1.77/2.13–2.33), pp level (1.70–1.78 against 1.63–1.71); Llama-3-70B unchanged (replayed).
Step time in one pass, fifth session (2026-12-02: the band's ends share with the plan's device what reads no
device, fewer objects per device pass; P-SCALAR-SPEED "Fifth session — step time in one pass"), alternating with
main, min CPU ms of 300 edits through the session (step part = step_time + step_band): against main 369c33d at a
load of 1.6–2.7, DeepSeek-V3 tp 1.48–1.51 (main 1.70–1.79; step part 0.59–0.62 against 0.77), pp 1.39–1.42
(1.50–2.17), recompute 1.11–1.14 (1.40–1.70), Llama-3-70B tp 2.07–2.29 (2.33–2.59; step part 0.42–0.46 against
0.59–0.64); against main 02c4c5a at a load of 3.5–6.8, the DeepSeek-V3 tp step part 0.58–0.70 (main 0.77–0.91)
and its whole edit 1.66–2.27 (2.00–2.26; mean of six pairs 9 % cheaper).
Row pricing, fourth session (2026-12-02: layer groups kept across the session's model records, block elements
with the activation table, a row priced with each term once; P-SCALAR-SPEED "Fourth session — row pricing"),
three runs each alternating with main b0d0001 at a load of 1.0–1.3, min CPU ms through the session: DeepSeek-V3
tp 1.98–2.10 (main 2.21–2.64), pp 1.54–1.62 (1.77–2.19), recompute 1.52–1.74 (1.61–2.06); Llama-3-70B tp
2.23–2.36 (2.42–2.73), pp 2.33–2.45 (2.49–2.72), recompute 2.35–2.52 (2.49–2.75).
FSDP2 stages, fifth session (2026-12-02: one plan's largest instant in one pass, walks' instants made at once, a
trace key hashed once, stage rows from each layout's entries; P-SCALAR-SPEED "Fifth session — FSDP2 stages"),
alternating with main 02c4c5a through the session (/work/helpers/sections.py, 1,000 edits a run), three pairs at
a load of 3.6–5.9, min CPU ms: Llama-3-70B tp 1.91–1.97 (main 2.03–2.77), its price_stages 1.04–1.10 (1.21–1.56);
pp price_stages 1.19–1.28 (1.40–1.62), recompute 1.30–1.47 (1.64–1.67); instructions per fresh estimate + tp edit
−9 % (callgrind).
Resolve and verdict, fifth session (2026-12-02: resolving's settled part kept across degree edits, the layout kept
with it, a rebuilt record compared once for all its keys, the verdict's records made at once; P-SCALAR-SPEED
"Fifth session — resolve and verdict"), alternating with main 8d2dc01 at a load of 1.6–2.0, min/median CPU ms of
300 tp edits through the session (helpers/sections.py): DeepSeek-V3 1.53–1.79/1.96–3.06 (main 1.75–2.85/
2.54–3.69), resolved_layout 0.08–0.10 (main 0.17–0.33); Llama-3-70B 1.90–1.93/2.37–2.91 (main 2.14–2.26/
2.81–3.71), resolved_layout 0.07–0.08 (0.18).
At the fifth session's close (2026-12-02, main 36fe339 alternating with 02c4c5a, load 0.4–1.1, the quieter pair,
min/median CPU ms; P-SCALAR-SPEED "At the fifth session's close"): repeat 0.128/0.131 (DeepSeek-V3) and 0.183/0.189
(Llama-3-70B), micro-batch edit 0.128/0.132 and 0.186/0.200 — goal met; the edit mix's tp 1.41/1.57 and 1.78/2.04,
pp 1.27/1.49 and 1.91/2.22, recompute 1.12/1.24 and 1.90/2.18 (02c4c5a 2.03/3.30 and 2.28/2.58, 1.60/2.61 and
2.44/2.76, 1.70/2.72 and 2.44/3.02) — goal missed 5.5–9.5×; cold first estimate Llama-3-70B 49.2–49.8/53.3–63.6
(02c4c5a 47.6–51.7/49.8–84.0 on the same, slower day), DeepSeek-V3 11.9–13.1/12.2–21.1.
At the sixth session's close (2026-12-02, main 15624fa alternating with 801803e, load 0.5–0.8, two rounds, min CPU
ms; P-SCALAR-SPEED "At the sixth session's close"): repeat 0.119–0.124 (DeepSeek-V3) and 0.173–0.177 (Llama-3-70B),
micro-batch edit 0.121–0.126 and 0.173–0.179 — goal met; the edit mix's tp 1.128–1.266 and 1.414–1.497, pp
1.064–1.139 and 1.399–1.585, recompute 0.855–0.954 and 1.444–1.481 (801803e 1.239–1.357 and 1.681–1.700,
1.135–1.277 and 1.662–1.737, 0.995–1.097 and 1.801–1.811) — goal missed 4–8×; cold first estimate Llama-3-70B
44.3–45.8 (801803e 43.7–44.6), DeepSeek-V3 11.2–11.3 (10.7–11.4) — met.
At the seventh session's close (2026-12-02, main 8f675f4 alternating with 0e4a722, load 0.5–1.0, six or seven
runs each, the best two, min CPU ms; P-SCALAR-SPEED "At the seventh session's close"): repeat 0.106–0.108
(DeepSeek-V3) and 0.162 (Llama-3-70B), micro-batch edit 0.104–0.107 and 0.162–0.163 — goal met; the edit mix's tp
1.037–1.065 and 1.291–1.314, pp 0.976–0.990 and 1.322–1.345, recompute 0.786–0.789 and 1.203–1.268 (0e4a722
1.166–1.231 and 1.485–1.620, 1.126–1.143 and 1.475–1.658, 0.879–0.891 and 1.484–1.575) — goal missed 4–7×; cold
first estimate Llama-3-70B 45.6–48.2 (0e4a722 46.3–47.0), DeepSeek-V3 10.7–11.6 (11.9–12.1) — at the goal's edge.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from estimator import estimate
from estimator.formats import parse
from estimator.reuse import forget
from estimator.session import PlanSession

HERE = Path(__file__).resolve().parent
INPUTS = ["deepseek_v3_671b_mindformers.plan.yaml", "llama3_70b_torchtitan_pp8_vpp5.plan.yaml"]
UPSTREAM_MS = (13.0, 42.0)  # SAPP-ND estimate_peak, mean of 20, on this kind of machine
GOAL_MS = 0.2
MIX = ("tp", "pp", "recompute", "micro-batch")
COLD_GOAL_MS = 50.0
COLD = """
import sys, time
from estimator import estimate
from estimator.formats import parse
parsed = parse([sys.argv[1]])
t0 = time.process_time()
estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
print((time.process_time() - t0) * 1e3)
"""


def cold_first(path: Path, runs: int) -> list[float]:
    """CPU ms of the first estimate in each of ``runs`` fresh processes (the plan already parsed, as the CLI and
    the app's workers have it): what loads lazily on a first estimate (the message catalogue, the schedule-replay
    cache, the allocator's trace and replays of the deciding stages) counts. The checkout's own ``estimator``."""
    root = str(HERE.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return [float(subprocess.run([sys.executable, "-c", COLD, str(path)], capture_output=True, text=True,
                                 check=True, env=env, cwd=root).stdout.split()[-1]) for _ in range(runs)]


def bench(path: Path, repeat: int) -> dict[str, Any]:
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
    return {"first": first, "repeat": samples, "edit": edits, "explain": explain}


def _changes(session: PlanSession, kind: str) -> dict[str, Any]:
    """One edit of ``kind`` a user would make: the next valid tp / pp (the world held), the other recompute
    mode, twice the micro-batches."""
    st = session.parsed.strategy
    if kind in ("tp", "pp"):
        key = f"strategy.{kind}"
        now = getattr(st, kind)
        steps = session.step_candidates(key) or []
        smaller = [v for v in steps if v < now]
        return {key: smaller[-1] if smaller else now * 2}
    if kind == "recompute":
        return session.recompute_changes(mode="selective" if st.recompute.default_mode != "selective" else "full")
    return {"strategy.micro_batches": st.micro_batches * 2}


def _priced(session: PlanSession) -> float:
    p = session.parsed
    t0 = time.process_time()
    estimate(p.model, p.strategy, p.hardware, p.options)
    return time.process_time() - t0


def edit_mix(path: Path, rounds: int) -> dict[str, list[float]]:
    """CPU seconds per estimate of each step of the mix, over ``rounds`` rounds (each from no row book)."""
    session = PlanSession()
    session.open([str(path)])
    _priced(session)  # imports, presets, schedule tables, layouts: the app's first estimate pays them
    out: dict[str, list[float]] = {k: [] for k in (*MIX, "undo")}
    for _ in range(rounds):
        forget()
        _priced(session)  # the opened plan, as on screen before the user edits
        for kind in MIX:
            session.apply(_changes(session, kind), kind)
            out[kind].append(_priced(session))
            session.undo()
            out["undo"].append(_priced(session))
    return out


def _ms(values: list[float]) -> str:
    return f"{min(values) * 1e3:.3f}/{statistics.median(values) * 1e3:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--cold", type=int, default=5, help="fresh processes per input for the cold first estimate")
    args = ap.parse_args()
    print("CPU ms per estimate, min/median")
    print(f"{'input':42} {'first':>8} {'repeat':>13} {'edit m':>13} {'explain':>8} {'vs upstream':>12} {'goal':>7}")
    for name in INPUTS:
        got = bench(HERE / "inputs" / name, args.repeat)
        median = statistics.median(got["repeat"])
        ratio_lo, ratio_hi = UPSTREAM_MS[0] / (median * 1e3), UPSTREAM_MS[1] / (median * 1e3)
        verdict = "met" if median * 1e3 <= GOAL_MS else "missed"
        print(f"{name:42} {got['first'] * 1e3:8.2f} {_ms(got['repeat']):>13} {_ms(got['edit']):>13} "
              f"{got['explain'] * 1e3:8.2f} {ratio_lo:5.0f}–{ratio_hi:.0f}× {verdict:>7}")
    print(f"edit mix through the plan session ({args.rounds} rounds: each edit, then undo)")
    print(f"{'input':42} " + " ".join(f"{k:>13}" for k in (*MIX, "undo", "all")))
    for name in INPUTS:
        mix = edit_mix(HERE / "inputs" / name, args.rounds)
        every = [v for values in mix.values() for v in values]
        print(f"{name:42} " + " ".join(f"{_ms(v):>13}" for v in (*mix.values(), every)))
    print(f"goal: ≤ {GOAL_MS} ms per estimate without explain; upstream SAPP-ND: {UPSTREAM_MS[0]:.0f}–"
          f"{UPSTREAM_MS[1]:.0f} ms")
    if args.cold:
        print(f"cold first estimate, CPU ms over {args.cold} fresh processes (goal ≤ {COLD_GOAL_MS:.0f} ms):")
        for name in INPUTS:
            runs = sorted(cold_first(HERE / "inputs" / name, args.cold))
            verdict = "met" if statistics.median(runs) <= COLD_GOAL_MS else "missed"
            print(f"  {name:46} min {runs[0]:6.1f}  median {statistics.median(runs):6.1f}  max {runs[-1]:6.1f}  "
                  f"{verdict}")


if __name__ == "__main__":
    main()
