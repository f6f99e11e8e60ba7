"""Opening a plan for a command (files, --device/--capacity/--set) and writing a command's ``-o`` output."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, SappError
from ..messages import msg

if TYPE_CHECKING:
    from ..parsed import ParsedConfig
    from ..result import Result
    from ..session import PlanSession


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    """``section.field=value`` pairs; values are read as YAML scalars/lists (``[1, 2]``, ``true``, ``8``)."""
    import yaml

    from ..yamlio import load_bounded

    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise SappError(msg("cli.set-expected-section", item=item))
        key, raw = item.split("=", 1)
        try:
            value = load_bounded(raw) if raw.strip() else None
        except (yaml.YAMLError, RecursionError):  # not YAML (or beyond its bounds): the text itself
            value = raw
        out[key.strip()] = value
    return out


YOUNG_COLLECTION = 100_000
"""Allocations between two collections of the youngest generation once the plan is open (CPython's default:
700): a command makes few reference cycles, and each collection costs a pass over the young objects. A search of
DeepSeek-V3 on 1,024 devices keeps ~73,000 more objects than it frees (caches of layouts, rows, profiles): at
10,000 the collector walked them ~20 times (11-48 ms of a `sapp search`, 2026-12-02), at 100,000 not once; the
process's peak memory grew by 2 MB."""
_collector_paused = False


def pause_collector() -> None:
    """A ``sapp`` process that opens a plan starts by importing a few hundred modules and reading catalogues,
    presets and the plan: objects that live until the process ends, which the garbage collector would walk again
    and again (a tenth of a second of an exhaustive search from the command line). It is paused until the plan is
    open; ``load_session`` then freezes what exists (``gc.freeze``: never walked again) and resumes it with a
    larger first threshold. Only the process's own command line does this, never a caller of ``main(argv)``."""
    global _collector_paused
    gc.disable()
    _collector_paused = True


def _resume_collector() -> None:
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        gc.freeze()
        gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])
        gc.enable()


def load_session(args: argparse.Namespace) -> PlanSession:
    """Open the files in a plan session, then apply --device/--capacity/--set: model, hardware and options
    values while parsing (they may supply what the files leave out), strategy edits as the session's edits
    (the device count and global batch stay fixed, per-stage lists follow a new pipeline depth)."""
    changes = _parse_set(args.set or [])
    if args.device:
        changes["hardware.device"] = args.device
    if args.capacity:
        changes["hardware.capacity"] = args.capacity
    from ..plugins import preset_dirs as plugin_preset_dirs
    from ..session import PlanSession
    from ..session.edits import EditError
    from ..userconfig import user_presets_dir

    early = {k: v for k, v in changes.items() if not k.startswith("strategy.")}
    late = {k: v for k, v in changes.items() if k.startswith("strategy.")}
    session = PlanSession(preset_dirs=(user_presets_dir(), *plugin_preset_dirs()),
                          calibration=getattr(args, "calibration", None))
    try:
        session.open(args.paths, framework=args.framework, devices=args.devices, model=args.model, overrides=early)
    except ConfigError as exc:  # a file that states no sequence length (a DeepSpeed JSON): --set supplies it
        if exc.key != "strategy.seq_length" or "strategy.seq_length" not in late:
            raise
        early["strategy.seq_length"] = late.pop("strategy.seq_length")
        session.open(args.paths, framework=args.framework, devices=args.devices, model=args.model, overrides=early)
    if session.preset_problem:  # the shipped presets were used: said, as the app says it
        print(f"warning: user presets ignored: {session.preset_problem}", file=sys.stderr)
    if late:
        try:
            session.apply(late, "--set")
        except EditError as exc:  # the message names the field it is about
            raise SappError("; ".join(f"--set {key}: {message}" for key, message in exc.errors.items())
                            or str(exc)) from None
    _resume_collector()
    return session


def load_plan(args: argparse.Namespace) -> ParsedConfig:
    return load_session(args).parsed


def estimate_or_explain(parsed: ParsedConfig, explain: bool = False) -> Result:
    """estimate(); when the plan is refused, the reader's warnings (which often suggest the fix) go first."""
    from ..estimate import estimate

    try:
        return estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options, explain=explain)
    except SappError as exc:
        for warning in parsed.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        located = parsed.locate(exc)
        if located is exc:
            raise
        raise located from None


def write_to_output(files: dict[str, str], output: str) -> None:
    """``-o OUT``: the new text of one changed file to OUT, or of several into the directory OUT (atomic,
    keeping OUT.bak when it exists)."""
    from ..export import write_atomic
    from ..session import targets_for

    if not files:
        print(f"nothing changes: the strategy is the one the files state; {output} not written", file=sys.stderr)
        return
    targets = targets_for(files, output)
    write_atomic(targets, backup=True)
    for path in targets:
        print(f"wrote {path}", file=sys.stderr)

