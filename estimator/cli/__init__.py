"""The ``sapp`` command line: one module per group of subcommands, each imported only when its command runs, so
``sapp --version`` and ``sapp --help`` import neither numpy nor any reader.

- ``parser``: the argument parser of every subcommand (and the bounds of numeric arguments);
- ``plan``: opening the files of a plan with --device/--capacity/--set, and writing ``-o`` outputs;
- ``estimate`` (estimate, report), ``export``, ``search`` (search, balance), ``fit``, ``tools`` (measure,
  plugins, calibrate): the commands.

Exit status: 0 success; 1 bad input (the message names the file, key and fix); 2 usage errors;
3 ``--check`` and the plan does not fit.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..errors import SappError
from .parser import EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, build_parser

__all__ = ["EXIT_BAD_INPUT", "EXIT_DOES_NOT_FIT", "build_parser", "main"]

OPENS_A_PLAN = frozenset({"estimate", "report", "export", "search", "balance", "fit"})
"""The commands that open a plan (``plan.load_session``): their process pauses the garbage collector until the
plan is open (``plan.pause_collector``)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if argv is None and args.command in OPENS_A_PLAN:  # the process's own command line (not a caller's argv)
        from .plan import pause_collector

        pause_collector()
    from ..plugins import plugin_problems
    from ..userconfig import register_user_kinds, register_user_profiles

    # the user's presets and family profiles (the app's config folder) count for the CLI too
    for problem in (register_user_profiles(), register_user_kinds()):
        if problem:
            print(f"warning: {problem}", file=sys.stderr)
    if args.command != "plugins":
        for problem in plugin_problems():
            print(f"warning: {problem}", file=sys.stderr)
    try:
        return int(args.func(args))
    except SappError as exc:
        print(f"sapp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
