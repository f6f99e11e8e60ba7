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
        status = int(args.func(args))
    except SappError as exc:
        print(f"sapp {args.command}: error: {exc}", file=sys.stderr)
        status = EXIT_BAD_INPUT
    except KeyboardInterrupt:
        status = 130
    if argv is None and args.command in OPENS_A_PLAN:
        end_process(status)  # returns only when the interpreter must end it as usual
    return status


def end_process(status: int) -> None:
    """End the process of a command that opened a plan once it is done: its atexit handlers run (the
    schedule-replay cache writes its file there) and its standard streams are flushed, and then it exits at
    once (``os._exit``). The interpreter's own exit would then only free every object one by one and unload a
    few hundred modules, ~25 ms of a ``sapp search`` of DeepSeek-V3 (P-COLD-START); the kernel frees the
    memory anyway. With a second thread running, or a stream that cannot be flushed (a closed pipe), it
    returns and the interpreter exits as usual."""
    import atexit
    import os
    import threading

    if threading.active_count() > 1 or not _flushed():
        return
    atexit._run_exitfuncs()
    if _flushed():  # what a handler printed
        os._exit(status)


def _flushed() -> bool:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return False
    return True
