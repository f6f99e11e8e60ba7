"""The ``sapp`` command line: ``sapp estimate`` (and ``--version``); later issues add more subcommands.

Exit status: 0 success; 1 bad input (the message names the file, key and fix); 2 usage errors;
3 ``--check`` and the plan does not fit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .errors import SappError
from .estimate import estimate
from .formats import parse
from .parsed import ParsedConfig, apply_changes
from .report import render_table

EXIT_BAD_INPUT = 1
EXIT_DOES_NOT_FIT = 3


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    """``section.field=value`` pairs; values are read as YAML scalars/lists (``[1, 2]``, ``true``, ``8``)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise SappError(f"--set {item!r}: expected SECTION.FIELD=VALUE, e.g. --set strategy.tp=8")
        key, raw = item.split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw
        out[key.strip()] = value
    return out


def load_plan(args: argparse.Namespace) -> ParsedConfig:
    """Read the files, then apply --device/--capacity/--set (keeping N and G fixed)."""
    parsed = parse(args.paths, framework=args.framework, devices=args.devices, model=args.model)
    changes = _parse_set(args.set or [])
    if args.device:
        changes["hardware.device"] = args.device
    if args.capacity:
        changes["hardware.capacity"] = args.capacity
    if changes:
        parsed = apply_changes(parsed, changes)
    return parsed


def cmd_estimate(args: argparse.Namespace) -> int:
    parsed = load_plan(args)
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options, explain=args.explain)
    if args.json:
        payload = result.to_dict()
        payload["warnings"] = [w.to_dict() for w in (*parsed.warnings, *result.warnings)]
        payload["assumptions"] = [a.to_dict() for a in (*parsed.assumptions, *result.assumptions)]
        if args.explain:
            payload["explain"] = {str(s.index): s.explain.to_dict() for s in result.stages if s.explain}
        print(json.dumps(payload, indent=2, default=str))
    else:
        print(render_table(parsed, result))
        if args.explain:
            stage = result.stages[result.peak_stage if args.stage is None else args.stage]
            if stage.explain is not None:
                print()
                print(stage.explain.render(max_depth=args.depth))
    if args.check and not result.fits:
        return EXIT_DOES_NOT_FIT
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sapp", description="SAPP Planner: memory and time of LLM training plans")
    parser.add_argument("--version", action="version", version=f"sapp-planner {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    est = sub.add_parser("estimate", help="per-stage memory of a plan",
                         description="Price a plan: per pipeline stage, per layer and per category.")
    est.add_argument("paths", nargs="+", metavar="PATH", help="plan file or framework config(s)")
    est.add_argument("--model", metavar="FILE", help="a config.json whose model dimensions win")
    est.add_argument("--devices", type=int, metavar="N", help="device count, for formats that do not state it")
    est.add_argument("--framework", metavar="NAME", help="read the files as this framework's format")
    est.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE",
                     help="override a field (repeatable); N and the global batch stay fixed")
    est.add_argument("--device", metavar="PRESET",
                     help="device preset (A2, A3, A100-80G, H100-80G, H200-141G, B200-192G)")
    est.add_argument("--capacity", metavar="SIZE", help="device memory, e.g. 64GB (binary units)")
    est.add_argument("--json", action="store_true", help="print the sapp.estimate/1 JSON object")
    est.add_argument("--explain", action="store_true", help="print the formula trace of the peak stage")
    est.add_argument("--stage", type=int, help="with --explain: the stage to explain")
    est.add_argument("--depth", type=int, default=3, help="with --explain: levels to print (default 3)")
    est.add_argument("--check", action="store_true", help=f"exit {EXIT_DOES_NOT_FIT} when the plan does not fit")
    est.set_defaults(func=cmd_estimate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except SappError as exc:
        print(f"sapp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
