"""``sapp fit``: the largest value of a field, the fewest devices, or the nearest plans that fit."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import SappError
from ..messages import msg
from .parser import EXIT_DOES_NOT_FIT
from .plan import load_plan


def _print_fixes(parsed: Any, as_json: bool) -> int:
    """``sapp fit --nearest``: the nearest plans that fit (same devices and global batch), with their --set edits."""
    from ..fixes import nearest_fixes
    from ..units import GiB

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
    from ..fit import fit_max, fit_min_devices, time_to_train
    from ..honest import sig
    from ..units import GiB

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

