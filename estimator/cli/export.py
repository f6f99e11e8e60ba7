"""``sapp export``: the (edited) strategy written back into the source files."""

from __future__ import annotations

import argparse
import sys

from ..errors import SappError
from ..messages import msg
from .plan import load_session, write_to_output


def cmd_export(args: argparse.Namespace) -> int:
    """Write the (edited) strategy back into the source format; prints, diffs or writes atomically."""
    import difflib

    from ..export import write_atomic

    if args.output and args.in_place:
        raise SappError(msg("cli.use-either-o"))
    plan = load_session(args).prepare_export()  # refuses a strategy the validator rejects, naming every rule
    files, originals = plan.files, plan.originals
    if not files:
        print("nothing changed: the files already state this strategy", file=sys.stderr)
        return 0
    if args.output:
        write_to_output(files, args.output)
    elif args.in_place:
        backups = write_atomic(files, backup=True)
        for path in files:
            print(f"updated {path}" + (f" (backup {path}.bak)" if f"{path}.bak" in backups else ""), file=sys.stderr)
    if args.diff:
        for path, text in files.items():
            sys.stdout.writelines(difflib.unified_diff(originals.get(path, "").splitlines(True),
                                                       text.splitlines(True), f"a/{path}", f"b/{path}"))
    elif not (args.output or args.in_place):
        for path, text in files.items():
            if len(files) > 1:
                print(f"# ---- {path}")
            sys.stdout.write(text)
    return 0

