"""``sapp estimate`` (the per-stage table, JSON, Explain) and ``sapp report`` (HTML or Markdown)."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import SappError
from ..messages import msg
from .parser import EXIT_DOES_NOT_FIT
from .plan import estimate_or_explain, load_plan


def cmd_estimate(args: argparse.Namespace) -> int:
    parsed = load_plan(args)
    result = estimate_or_explain(parsed, args.explain)
    if args.stage is not None and not 0 <= args.stage < len(result.stages):
        raise SappError(msg("cli.stage-plan-has", stage=args.stage, n_stages=len(result.stages),
                            value=len(result.stages) - 1))
    if args.json:
        payload = result.to_dict()
        payload["warnings"] = [w.to_dict() for w in (*parsed.warnings, *result.warnings)]
        payload["assumptions"] = [a.to_dict() for a in (*parsed.assumptions, *result.assumptions)]
        if args.explain:
            payload["explain"] = {str(s.index): s.explain.to_dict() for s in result.stages if s.explain}
            if result.host is not None and result.host.used:
                from ..host import host_explain

                payload["explain"]["host_memory"] = host_explain(result.host).to_dict()
        print(json.dumps(payload, indent=2, default=str))
    else:
        from ..report import render_table

        print(render_table(parsed, result))
        if args.explain:
            stage = result.stages[result.peak_stage if args.stage is None else args.stage]
            if stage.explain is not None:
                print()
                print(stage.explain.render(max_depth=args.depth))
            if result.host is not None and result.host.used:
                from ..host import host_explain

                print()
                print(host_explain(result.host).render(max_depth=args.depth))
    if args.check and not result.fits:
        return EXIT_DOES_NOT_FIT
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """A shareable HTML or Markdown report of the plan (summary, per-stage table, chart, assumptions)."""
    from ..estimate import estimate
    from ..reports import render_html, write_report

    parsed = load_plan(args)
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    if args.output:
        for path in write_report(parsed, result, args.output):
            print(f"wrote {path}", file=sys.stderr)
    else:
        print(render_html(parsed, result))
    return 0

