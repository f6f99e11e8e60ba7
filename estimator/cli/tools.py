"""``sapp measure`` (activations with PyTorch), ``sapp plugins`` and ``sapp calibrate``."""

from __future__ import annotations

import argparse
import json
import sys

from .plan import load_plan


def cmd_measure(args: argparse.Namespace) -> int:
    """Measure the activation census of a Hugging Face model with PyTorch on fake tensors (the measure extra)."""
    from ..measure import measure
    from ..measure.report import kind_document, kind_yaml, render_text

    result = measure(args.config, seq_length=args.seq_length, micro_batch=args.micro_batch, dtype=args.dtype,
                     attention=args.attention, norm=args.norm)
    if args.output:
        from ..export import write_atomic

        write_atomic({args.output: kind_yaml(result)}, backup=True)
        print(f"wrote {args.output}", file=sys.stderr)
    if args.json:
        payload = kind_document(result)
        payload["comparison"] = {k.kind: [{"slot": c.slot, "class": c.cls, "measured": c.measured,
                                           "analytic": c.analytic, "diff_pct": c.diff_pct} for c in k.comparison]
                                 for k in result.kinds}
        payload["notes"] = list(result.notes)
        print(json.dumps(payload, indent=2))
    else:
        print(render_text(result))
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    """The installed plug-ins (entry-point group sapp_planner.plugins), what each added, and why one failed."""
    from ..plugins import load_plugins

    infos = load_plugins()
    if args.json:
        print(json.dumps([{"name": p.name, "target": p.target, "distribution": p.distribution, "ok": p.ok,
                           "error": p.error, "added": p.added} for p in infos], indent=2))
        return 0
    if not infos:
        print("no plug-ins installed (entry-point group sapp_planner.plugins)")
    for p in infos:
        state = "loaded" if p.ok else f"SKIPPED: {p.error}"
        print(f"{p.name}  ({p.target}; {p.distribution or 'no distribution'})  {state}")
        for item in p.added:
            print(f"    adds {item}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Fit a calibration profile from logs of a run of the plan; print before → after; save it atomically."""
    from ..calibrate import calibrate, read_logs, save
    from ..calibrate.report import calibration_json, render_calibration
    from ..userconfig import calibrations_dir

    parsed = load_plan(args)
    calibration = calibrate(parsed, read_logs(args.logs), args.name)
    path = None if args.dry_run else str(save(calibration, calibrations_dir()))
    if args.json:
        print(json.dumps(calibration_json(calibration, path), indent=2))
    else:
        print(render_calibration(calibration, path))
    return 0

