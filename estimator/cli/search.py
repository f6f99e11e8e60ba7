"""``sapp search`` (ranked strategies, --apply) and ``sapp balance`` (layers and recompute per stage)."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import SappError
from ..messages import msg
from .plan import load_session, write_to_output


def cmd_search(args: argparse.Namespace) -> int:
    """Search the strategy space of a plan; print refusals, counts and the ranked table (or JSON / CSV)."""
    from ..search import SearchSpace, parse_dims, search
    from ..search.report import render_search, write_csv

    session = load_session(args)
    parsed = session.parsed
    st = parsed.strategy
    space = SearchSpace(devices=args.devices or st.world_size, global_batch=args.global_batch or st.global_batch_size,
                        dims=parse_dims(args.dims or []), top_k=max(args.top, args.apply or 0))
    progress = None
    if not args.json and sys.stderr.isatty():
        def progress(done: int, total: int, phase: str) -> None:
            print(f"\r{phase}: {done}/{total}   ", end="", file=sys.stderr, flush=True)
    result = search(parsed, space, progress=progress)
    if progress is not None:
        print("\r" + " " * 40 + "\r", end="", file=sys.stderr)
    if args.csv:
        write_csv(result, args.csv)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(render_search(parsed, space, result))
    if args.apply:
        if not 1 <= args.apply <= len(result.ranked):
            raise SappError(msg("cli.apply-only-ranked", apply=args.apply, n_ranked=len(result.ranked)))
        chosen = result.ranked[args.apply - 1].strategy
        files = session.prepare_export(chosen).files
        if args.output:
            write_to_output(files, args.output)
        else:
            for path, text in files.items():
                print(f"# ---- {path} with strategy #{args.apply}")
                sys.stdout.write(text)
    return 0


def cmd_balance(args: argparse.Namespace) -> int:
    """Balance layers and recompute over the pipeline stages; print before/after (or JSON) and export."""
    from ..balance import balance
    from ..honest import relative_change
    from ..units import GiB

    session = load_session(args)
    parsed = session.parsed
    budget = args.budget
    res = balance(parsed, budget=budget)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    else:
        st = parsed.strategy
        limit = budget if budget is not None else res.before.budget
        print(f"{parsed.model.name} · {parsed.options.framework} · pp {st.pp} · m {st.micro_batches} · budget "
              f"{limit / GiB:.2f} GiB ({res.seconds:.2f} s, {'exact' if res.exact else 'approximate'})")
        print(f"{'stage':>5}  {'layers':>13}  {'recompute':>13}  {'GiB before':>10}  {'GiB after':>9}  "
              f"{'ms before':>9}  {'ms after':>8}")
        tb = [float(t.F + t.B + t.W + t.Rc) * 1e3 for t in res.before.step.stages]
        ta = [float(t.F + t.B + t.W + t.Rc) * 1e3 for t in res.after.step.stages]
        for i, (sb, sa) in enumerate(zip(res.before.stages, res.after.stages, strict=True)):
            layers = "→".join("+".join(map(str, c)) if len(c) > 1 else str(sum(c))
                              for c in (sb.layers_per_chunk, sa.layers_per_chunk))
            rec = f"{res.recompute['full'][i]}/{res.recompute['selective'][i]}/{res.recompute['comm'][i]}"
            print(f"{i:>5}  {layers:>13}  {rec:>13}  {sb.total / GiB:>10.2f}  {sa.total / GiB:>9.2f}  "
                  f"{tb[i]:>9.1f}  {ta[i]:>8.1f}")
        fits = max(max(s.total, s.optimizer_step_peak) for s in res.after.stages) <= limit
        before, after = res.before.throughput, res.after.throughput
        assert before is not None and after is not None
        change = relative_change(res.before.step_time_s or 0.0, res.after.step_time_s or 0.0)
        print(f"step time {before.step.with_band(' s')} → {after.step.with_band(' s')} ({change}); peak "
              f"{res.before.peak_bytes / GiB:.2f} → {res.after.peak_bytes / GiB:.2f} GiB "
              f"({'fits' if fits else 'DOES NOT FIT'})   "
              "[recompute = full/selective/comm per stage]")
        for key, value in res.snippets.items():
            print(f"  {key}: {value}")
        for note in res.notes:
            print(f"note: {note}")
    if args.output:
        write_to_output(session.prepare_export(res.strategy).files, args.output)
    return 0

