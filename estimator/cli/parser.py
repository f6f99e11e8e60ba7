"""The argument parser of ``sapp``: every subcommand's arguments, and the bounds of numeric arguments. A command
is named by its module and function and imported only when it runs (``sapp --help`` builds this parser alone)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import import_module
from typing import Any

from .. import __version__
from ..errors import ConfigError
from ..limits import MAX_CAPACITY, MAX_DEVICES, MAX_GLOBAL_BATCH, MAX_TOKENS, Bound, check_number
from ..units import parse_size

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
    est.set_defaults(func=command("estimate", "cmd_estimate"))

    exp = sub.add_parser("export", help="write the strategy back into the config's own format",
                         description="Apply --set edits and write the strategy into the source files, keeping "
                                     "comments and layout. Without -o/--in-place nothing is written and the new "
                                     "text is printed.")
    _add_plan_arguments(exp)
    exp.add_argument("-o", "--output", metavar="OUT", help="write the new file here (a directory for several)")
    exp.add_argument("--in-place", action="store_true", help="rewrite the source files, keeping SOURCE.bak")
    exp.add_argument("--diff", action="store_true", help="print only the unified diff")
    exp.set_defaults(func=command("export", "cmd_export"))

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
    sea.set_defaults(func=command("search", "cmd_search"))

    bal = sub.add_parser("balance", help="balance layers and recompute over the pipeline stages",
                         description="Choose layers per stage and per-stage recompute to minimise the pipeline time "
                                     "with every stage within the budget (exact), and write it as offsets / layer "
                                     "lists and recompute lists.")
    _add_plan_arguments(bal)
    bal.add_argument("--budget", type=number_argument(BUDGET, size=True), metavar="SIZE",
                     help="memory budget per device (default: the plan's)")
    bal.add_argument("--json", action="store_true", help="print one JSON object")
    bal.add_argument("-o", "--output", metavar="OUT", help="write the balanced config here")
    bal.set_defaults(func=command("search", "cmd_balance"))

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
    fit.set_defaults(func=command("fit", "cmd_fit"))

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
    mea.set_defaults(func=command("tools", "cmd_measure"))

    plg = sub.add_parser("plugins", help="list installed plug-ins and what they add",
                         description="Plug-ins are installed packages with an entry point in the group "
                                     "sapp_planner.plugins; a broken one is named and skipped.")
    plg.add_argument("--json", action="store_true", help="print one JSON list")
    plg.set_defaults(func=command("tools", "cmd_plugins"))

    rep = sub.add_parser("report", help="a shareable HTML or Markdown report of the plan")
    _add_plan_arguments(rep)
    rep.add_argument("-o", "--output", metavar="OUT", help="OUT.html, or OUT.md (with OUT.svg beside it); "
                                                            "default: HTML on stdout")
    rep.set_defaults(func=command("estimate", "cmd_report"))

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
    cal.set_defaults(func=command("tools", "cmd_calibrate"), set=None, capacity=None, calibration="none")
    return parser



def command(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """The command ``function`` of ``estimator.cli.<module>``, imported when it runs."""
    def run(args: argparse.Namespace) -> int:
        return int(getattr(import_module(f"{__package__}.{module}"), function)(args))
    return run
