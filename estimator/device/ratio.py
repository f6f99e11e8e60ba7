"""The allocator slack per dynamic byte of the current plan, for the searches that price many candidates at once
(search, balancer, fit): one replay of the current plan's stage with the most dynamic bytes, then each
candidate's activations, working sets and transient buffers scaled by it (``options.allocator_slack_ratio``). The
chosen candidate is replayed exactly when it is estimated on its own.

One stage, not all: the slack matters where the dynamic bytes are largest (the stage the peak usually sits on),
and a replay costs tenths of a second per stage of a large plan; the replay is shared with the estimate of the
same plan (``memory.replayed_slack`` keeps it), and the ratio is kept per plan."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from ..errors import SappError
from ..hardware import Hardware
from ..model import ModelSpec
from ..options import RunOptions
from ..parsed import ParsedConfig
from ..strategy import Strategy


@lru_cache(maxsize=16)
def _ratio(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions) -> float:
    from ..estimate import estimate
    from ..frameworks import framework_defaults
    from ..layout import build_layout, layout_inputs
    from ..resolve import resolve
    from ..stage import StagePricer, stage_rows
    from .memory import allocator_kind, allocator_kind_for, replayed_slack, stage_events
    from .trace_key import say_trace_plan
    from .workspaces import library_workspaces

    try:  # MindSpore's static plan has no slack whatever the plan prices to: no estimate to make (a cold search
        # from the command line paid one); a framework or alloc_conf that estimate would refuse gives 0 as well
        if allocator_kind_for(framework_defaults(options.framework).name, options.alloc_conf)[0] == "static":
            return 0.0
    except SappError:
        return 0.0
    opts = options.replace(allocator_slack_ratio=0.0, allocator_slack_factor=None, allocator_slack_fraction=None)
    try:
        result = estimate(model, strategy, hardware, opts, with_time=False)
    except SappError:
        return 0.0

    def dynamic(c: dict[str, float]) -> float:
        return c["activations"] + c["working_overhead"] + c["communication_buffers"]

    stage = max(result.stages, key=lambda s: dynamic(s.bytes_by_category))
    amount = dynamic(stage.bytes_by_category)
    r = resolve(model, strategy, hardware, opts)
    kind, config, _source = allocator_kind(r)
    if kind == "static" or amount <= 0:
        return 0.0
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    say_trace_plan(pricer)  # the estimate's trace is kept under the same key (its options less SLACK_OPTIONS)
    events = stage_events(pricer, stage.index, stage_rows(pricer, stage.index), library_workspaces(r))
    return replayed_slack(events, config, 1.0) / amount


def base_slack_ratio(parsed: ParsedConfig) -> float:
    """Replayed slack / (activations + working + transient buffers) of the plan's stage with the most of them; 0
    when the plan itself cannot be priced (its candidates then carry no slack until opened)."""
    return _ratio(parsed.model, parsed.strategy, parsed.hardware, parsed.options)


def with_slack_ratio(parsed: ParsedConfig) -> ParsedConfig:
    """The plan whose candidates price their allocator slack with the current plan's ratio."""
    if parsed.options.allocator_slack_ratio is not None:
        return parsed
    return replace(parsed, options=parsed.options.replace(allocator_slack_ratio=base_slack_ratio(parsed)))


__all__ = ["base_slack_ratio", "with_slack_ratio"]
