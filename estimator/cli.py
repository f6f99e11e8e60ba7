"""The ``sapp`` command line: ``sapp estimate`` (and ``--version``); later issues add more subcommands.

Exit status: 0 success; 1 bad input (the message names the file, key and fix); 2 usage errors;
3 ``--check`` and the plan does not fit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import ConfigError, SappError
from .limits import MAX_CAPACITY, MAX_DEVICES, MAX_GLOBAL_BATCH, MAX_TOKENS, Bound, check_number
from .messages import msg
from .units import parse_size

if TYPE_CHECKING:  # each command imports what it runs: ``sapp --version`` and ``--help`` stay light
    from .parsed import ParsedConfig
    from .result import Result
    from .session import PlanSession

EXIT_BAD_INPUT = 1
EXIT_DOES_NOT_FIT = 3
# the bounds of numeric arguments (estimator/limits.py)
BUDGET = Bound(0, MAX_CAPACITY, "a memory budget", low_open=True)
DEVICES = Bound(1, MAX_DEVICES, "a device count")
GLOBAL_BATCH = Bound(1, MAX_GLOBAL_BATCH, "a global batch")
TOKENS = Bound(0, MAX_TOKENS, "a token count", low_open=True)
RANKS = Bound(1, 10_000, "a rank")  # each ranked strategy is re-estimated for the table


def number_argument(bound: Bound, *, integer: bool = True, size: bool = False) -> Callable[[str], Any]:
    """An argparse type: a whole number (or a number, or a size like 58GB) within ``bound``; anything else is a
    usage error stating the rule."""
    def convert(text: str) -> Any:
        try:
            value = parse_size(text) if size else int(text) if integer else float(text)
            return check_number(value, bound)
        except ValueError as exc:
            why = str(exc) if size else f"expected {'a whole number' if integer else 'a number'}, e.g. " + \
                ("1024" if integer else "15e12")
            raise argparse.ArgumentTypeError(f"{text!r}: {why}") from None
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc.bare_message}") from None
    return convert


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    """``section.field=value`` pairs; values are read as YAML scalars/lists (``[1, 2]``, ``true``, ``8``)."""
    import yaml

    from .yamlio import load_bounded

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


def load_session(args: argparse.Namespace) -> PlanSession:
    """Open the files in a plan session, then apply --device/--capacity/--set: model, hardware and options
    values while parsing (they may supply what the files leave out), strategy edits as the session's edits
    (the device count and global batch stay fixed, per-stage lists follow a new pipeline depth)."""
    changes = _parse_set(args.set or [])
    if args.device:
        changes["hardware.device"] = args.device
    if args.capacity:
        changes["hardware.capacity"] = args.capacity
    from .plugins import preset_dirs as plugin_preset_dirs
    from .session import PlanSession
    from .session.edits import EditError
    from .userconfig import user_presets_dir

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
    return session


def load_plan(args: argparse.Namespace) -> ParsedConfig:
    return load_session(args).parsed


def _estimate_or_explain(parsed: ParsedConfig, explain: bool = False) -> Result:
    """estimate(); when the plan is refused, the reader's warnings (which often suggest the fix) go first."""
    from .estimate import estimate

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
    from .export import write_atomic
    from .session import targets_for

    if not files:
        print(f"nothing changes: the strategy is the one the files state; {output} not written", file=sys.stderr)
        return
    targets = targets_for(files, output)
    write_atomic(targets, backup=True)
    for path in targets:
        print(f"wrote {path}", file=sys.stderr)


def cmd_estimate(args: argparse.Namespace) -> int:
    parsed = load_plan(args)
    result = _estimate_or_explain(parsed, args.explain)
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
                from .host import host_explain

                payload["explain"]["host_memory"] = host_explain(result.host).to_dict()
        print(json.dumps(payload, indent=2, default=str))
    else:
        from .report import render_table

        print(render_table(parsed, result))
        if args.explain:
            stage = result.stages[result.peak_stage if args.stage is None else args.stage]
            if stage.explain is not None:
                print()
                print(stage.explain.render(max_depth=args.depth))
            if result.host is not None and result.host.used:
                from .host import host_explain

                print()
                print(host_explain(result.host).render(max_depth=args.depth))
    if args.check and not result.fits:
        return EXIT_DOES_NOT_FIT
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write the (edited) strategy back into the source format; prints, diffs or writes atomically."""
    import difflib

    from .export import write_atomic

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


def cmd_search(args: argparse.Namespace) -> int:
    """Search the strategy space of a plan; print refusals, counts and the ranked table (or JSON / CSV)."""
    from .search import SearchSpace, parse_dims, search
    from .search.report import render_search, write_csv

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
    from .balance import balance
    from .honest import relative_change
    from .units import GiB

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
                              for c in (sb.layer_counts, sa.layer_counts))
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


def _print_fixes(parsed: Any, as_json: bool) -> int:
    """``sapp fit --nearest``: the nearest plans that fit (same devices and global batch), with their --set edits."""
    from .fixes import nearest_fixes
    from .units import GiB

    fixes = nearest_fixes(parsed)
    if as_json:
        print(json.dumps({"fixes": [fix.to_dict() for fix in fixes]}, indent=2))
        return 0 if fixes else EXIT_DOES_NOT_FIT
    if not fixes:
        print("no strategy of tensor × pipeline degree × recompute fits these devices and this global batch; try "
              "more devices (sapp fit --min-devices) or a smaller global batch")
        return EXIT_DOES_NOT_FIT
    print("nearest plans that fit (same devices and global batch; fewest changes first):")
    for k, fix in enumerate(fixes, start=1):
        print(f"  {k}. {fix.summary}: peak {fix.peak_bytes / GiB:.2f} GiB, headroom {fix.headroom / GiB:.2f} GiB, "
              f"step {fix.step.with_band(' s')}")
        print("     " + " ".join(f"--set {arg}" for arg in fix.set_arguments()))
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    """The largest field value (or smallest device count) that fits; optionally the time to train."""
    from .fit import fit_max, fit_min_devices, time_to_train
    from .honest import sig
    from .units import GiB

    parsed = load_plan(args)
    if sum(map(bool, (args.max, args.min_devices, args.nearest))) != 1:
        raise SappError(msg("cli.give-exactly-one"))
    if args.nearest:
        return _print_fixes(parsed, args.json)
    res = fit_max(parsed, args.max) if args.max else fit_min_devices(parsed)
    label = "devices" if args.min_devices else args.max
    payload: dict[str, Any] = {"field": label, "value": res.value, "limiting_stage": res.limiting_stage,
                               "next_value": res.next_value, "bound_reached": res.bound_reached}
    if res.result is not None:
        payload["peak_bytes"] = round(res.result.peak_bytes)
        payload["step_time_s"] = res.result.step_time_s
        if res.result.throughput is not None:
            payload.update(res.result.throughput.to_dict())
        if args.tokens:
            days, device_hours = time_to_train(res.result, args.tokens)
            payload.update({"tokens": args.tokens, "days": days, "device_hours": device_hours})
    if args.json:
        print(json.dumps(payload, indent=2))
        return 0
    if res.value is None:
        print(f"no {label} fits: the smallest valid value, {res.next_value}, already exceeds the budget"
              + (f" on stage {res.limiting_stage}" if res.limiting_stage is not None else ""))
        return EXIT_DOES_NOT_FIT
    r = res.result
    print(f"largest {label} that fits: {res.value}" if args.max else f"fewest devices that fit: {res.value}")
    print(f"  peak {r.peak_bytes / GiB:.2f} GiB on stage {r.peak_stage}, budget {r.budget / GiB:.2f} GiB"
          + (f", step {r.throughput.step.with_band(' s')}" if r.throughput is not None else ""))
    if res.bound_reached:
        print("  (the search bound was reached)")
    elif res.next_value is not None:
        print(f"  {res.next_value} does not fit" + (f" (stage {res.limiting_stage} limits)"
                                                    if res.limiting_stage is not None else ""))
    if args.tokens:
        digits = r.throughput.step.digits if r.throughput is not None else 3  # time to train ∝ step time
        print(f"  {args.tokens:.3g} tokens: {sig(payload['days'], digits)} days, "
              f"{sig(payload['device_hours'], digits)} device-hours")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """A shareable HTML or Markdown report of the plan (summary, per-stage table, chart, assumptions)."""
    from .estimate import estimate
    from .reports import render_html, write_report

    parsed = load_plan(args)
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    if args.output:
        for path in write_report(parsed, result, args.output):
            print(f"wrote {path}", file=sys.stderr)
    else:
        print(render_html(parsed, result))
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    """Measure the activation census of a Hugging Face model with PyTorch on fake tensors (the measure extra)."""
    from .measure import measure
    from .measure.report import kind_document, kind_yaml, render_text

    result = measure(args.config, seq_length=args.seq_length, micro_batch=args.micro_batch, dtype=args.dtype,
                     attention=args.attention, norm=args.norm)
    if args.output:
        from .export import write_atomic

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
    from .plugins import load_plugins

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
    from .calibrate import calibrate, read_logs, save
    from .calibrate.report import calibration_json, render_calibration
    from .userconfig import calibrations_dir

    parsed = load_plan(args)
    calibration = calibrate(parsed, read_logs(args.logs), args.name)
    path = None if args.dry_run else str(save(calibration, calibrations_dir()))
    if args.json:
        print(json.dumps(calibration_json(calibration, path), indent=2))
    else:
        print(render_calibration(calibration, path))
    return 0


def _add_plan_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="plan file or framework config(s)")
    p.add_argument("--model", metavar="FILE", help="a config.json whose model dimensions win")
    p.add_argument("--devices", type=number_argument(DEVICES), metavar="N",
                   help="device count, for formats that do not state it")
    p.add_argument("--framework", metavar="NAME", help="read the files as this framework's format")
    p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE",
                   help="override a field (repeatable); N and the global batch stay fixed")
    p.add_argument("--device", metavar="PRESET",
                   help="device preset (A2, A3, A100-80G, H100-80G, H200-141G, B200-192G, or one of yours in "
                        "the config folder's presets/, $SAPP_CONFIG_DIR)")
    p.add_argument("--capacity", metavar="SIZE", help="device memory, e.g. 64GB (binary units)")
    p.add_argument("--calibration", metavar="NAME",
                   help="a calibration profile from `sapp calibrate` (default: the newest for the plan's device "
                        "and framework; 'none': no calibration)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sapp", description="SAPP Planner: memory and time of LLM training plans")
    parser.add_argument("--version", action="version", version=f"sapp-planner {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    est = sub.add_parser("estimate", help="per-stage memory of a plan",
                         description="Price a plan: per pipeline stage, per layer and per category.")
    _add_plan_arguments(est)
    est.add_argument("--json", action="store_true", help="print the sapp.estimate/1 JSON object")
    est.add_argument("--explain", action="store_true", help="print the formula trace of the peak stage")
    est.add_argument("--stage", type=int, help="with --explain: the stage to explain")
    est.add_argument("--depth", type=number_argument(Bound(0, 100, "a depth")), default=3,
                     help="with --explain: levels to print (default 3)")
    est.add_argument("--check", action="store_true", help=f"exit {EXIT_DOES_NOT_FIT} when the plan does not fit")
    est.set_defaults(func=cmd_estimate)

    exp = sub.add_parser("export", help="write the strategy back into the config's own format",
                         description="Apply --set edits and write the strategy into the source files, keeping "
                                     "comments and layout. Without -o/--in-place nothing is written and the new "
                                     "text is printed.")
    _add_plan_arguments(exp)
    exp.add_argument("-o", "--output", metavar="OUT", help="write the new file here (a directory for several)")
    exp.add_argument("--in-place", action="store_true", help="rewrite the source files, keeping SOURCE.bak")
    exp.add_argument("--diff", action="store_true", help="print only the unified diff")
    exp.set_defaults(func=cmd_export)

    # the desktop app (sapp_gui); Qt is imported only when the command runs
    gui = sub.add_parser("gui", help="open the desktop app (or render it with --screenshot)",
                         description="Open configs in the SAPP Planner window.")
    # one argument list for `sapp gui` and `python -m sapp_gui` (sapp_gui.app imports Qt only when run)
    from sapp_gui.app import add_arguments as add_gui_arguments

    add_gui_arguments(gui)
    gui.set_defaults(func=lambda a: __import__("sapp_gui.app", fromlist=["run"]).run(a))

    sea = sub.add_parser("search", help="search the fastest strategies that fit",
                         description="Enumerate strategies with the device count and global batch fixed, refuse the "
                                     "impossible ones, price the rest and rank those that fit by step time.")
    _add_plan_arguments(sea)
    sea.add_argument("--global-batch", type=number_argument(GLOBAL_BATCH), metavar="G",
                     help="global batch (default: the plan's)")
    sea.add_argument("--dims", nargs="+", metavar="NAME=VALUES",
                     help="dimensions to vary: tp=1,2,4,8 pp=auto cp=1 rec=full,selective … or all=auto "
                          "(undeclared dimensions keep the plan's value)")
    sea.add_argument("--top", type=number_argument(RANKS), default=10, metavar="K",
                     help="ranked strategies to show (default 10)")
    sea.add_argument("--json", action="store_true", help="print one JSON object")
    sea.add_argument("--csv", metavar="FILE", help="also write the ranked and Pareto rows as CSV")
    sea.add_argument("--apply", type=number_argument(RANKS), metavar="K",
                     help="export the K-th ranked strategy (1 = fastest)")
    sea.add_argument("-o", "--output", metavar="OUT", help="with --apply: write the config here")
    sea.set_defaults(func=cmd_search)

    bal = sub.add_parser("balance", help="balance layers and recompute over the pipeline stages",
                         description="Choose layers per stage and per-stage recompute to minimise the pipeline time "
                                     "with every stage within the budget (exact), and write it as offsets / layer "
                                     "lists and recompute lists.")
    _add_plan_arguments(bal)
    bal.add_argument("--budget", type=number_argument(BUDGET, size=True), metavar="SIZE",
                     help="memory budget per device (default: the plan's)")
    bal.add_argument("--json", action="store_true", help="print one JSON object")
    bal.add_argument("-o", "--output", metavar="OUT", help="write the balanced config here")
    bal.set_defaults(func=cmd_balance)

    fit = sub.add_parser("fit", help="the largest value of a field (or fewest devices) that still fits")
    _add_plan_arguments(fit)
    fit.add_argument("--max", choices=("micro_batch_size", "seq_length", "micro_batches"),
                     help="grow this field while the plan fits")
    fit.add_argument("--min-devices", action="store_true", help="shrink dp (tp, pp, cp and the global batch stay)")
    fit.add_argument("--nearest", action="store_true",
                     help="the nearest plans that fit: fewest changed settings, same devices and global batch")
    fit.add_argument("--tokens", type=number_argument(TOKENS, integer=False), metavar="N",
                     help="also the time to train for N tokens, e.g. 15e12")
    fit.add_argument("--json", action="store_true", help="print one JSON object")
    fit.set_defaults(func=cmd_fit)

    mea = sub.add_parser("measure", help="measure a Hugging Face model's activations per layer kind (PyTorch)",
                         description="Build the model from its config.json on fake tensors (no weights, no GPU, no "
                                     "network), run one layer of each kind forward and backward, and compare what "
                                     "autograd saves with the analytic slot table. Needs the measure extra: pip "
                                     "install 'sapp-planner[measure]'.")
    mea.add_argument("config", metavar="CONFIG", help="a Hugging Face config.json (or its folder)")
    mea.add_argument("--seq-length", type=int, default=4096, metavar="S", help="sequence length (default 4096)")
    mea.add_argument("--micro-batch", type=int, default=1, metavar="B", help="micro-batch size (default 1)")
    mea.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16", help="compute dtype (bf16)")
    mea.add_argument("--attention", choices=("flash", "sdpa", "eager"), default="flash",
                     help="flash: FlashAttention's contract, as training runs (default); sdpa, eager: "
                          "transformers' own paths as they run on a CPU")
    mea.add_argument("--norm", choices=("fused", "hf"), default="fused",
                     help="fused: a fused RMSNorm kernel's contract (default); hf: transformers' eager norm")
    mea.add_argument("-o", "--output", metavar="FILE", help="also write the measured layer kinds as YAML")
    mea.add_argument("--json", action="store_true", help="print one JSON object")
    mea.set_defaults(func=cmd_measure)

    plg = sub.add_parser("plugins", help="list installed plug-ins and what they add",
                         description="Plug-ins are installed packages with an entry point in the group "
                                     "sapp_planner.plugins; a broken one is named and skipped.")
    plg.add_argument("--json", action="store_true", help="print one JSON list")
    plg.set_defaults(func=cmd_plugins)

    rep = sub.add_parser("report", help="a shareable HTML or Markdown report of the plan")
    _add_plan_arguments(rep)
    rep.add_argument("-o", "--output", metavar="OUT", help="OUT.html, or OUT.md (with OUT.svg beside it); "
                                                            "default: HTML on stdout")
    rep.set_defaults(func=cmd_report)

    cal = sub.add_parser("calibrate", help="learn device-level terms and efficiencies from a measured run",
                         description="Read the memory and step-time lines of training logs (Megatron-LM/MindSpeed, "
                                     "torchtitan, CANN plog, MindFormers/MindSpore, memory_stats JSON), fit what "
                                     "they determine for the plan CONFIG ran, show every stage before → after, and "
                                     "save a calibration profile that later estimates on the same device and "
                                     "framework apply.")
    cal.add_argument("logs", nargs="+", metavar="LOG", help="log files of one run (one per stage where needed)")
    cal.add_argument("--config", nargs="+", required=True, metavar="CONFIG", dest="paths",
                     help="the config(s) the run used")
    cal.add_argument("--name", metavar="NAME", help="profile name (default: DEVICE-FRAMEWORK-DATE)")
    cal.add_argument("--dry-run", action="store_true", help="fit and show, do not save")
    cal.add_argument("--json", action="store_true", help="print one sapp.calibration/1 JSON object")
    for flag, kwargs in (("--model", {"metavar": "FILE"}), ("--devices", {"type": number_argument(DEVICES),
                                                                          "metavar": "N"}),
                         ("--framework", {"metavar": "NAME"}), ("--device", {"metavar": "PRESET"})):
        cal.add_argument(flag, **kwargs)
    cal.set_defaults(func=cmd_calibrate, set=None, capacity=None, calibration="none")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .plugins import plugin_problems
    from .userconfig import register_user_kinds, register_user_profiles

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


if __name__ == "__main__":
    sys.exit(main())
