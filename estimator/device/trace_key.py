"""What a plan's allocation traces read of the plan (``device.memory.stage_events`` keeps a stage's trace under it,
with the stage, its library workspaces and its operation order): the model, the strategy but the micro-batch count
and the accumulation steps, the device, the options but the three that only scale the slack (``SLACK_OPTIONS``),
the family profile and the registered layer kinds its rows are priced with, and γ — by value and type
(``reuse.key_of``). Its own module because ``reuse`` imports the assembler, which imports ``device.memory``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..kinds import generation
from ..reuse import NOT_READ, key_of
from .memory import SLACK_OPTIONS, TRACE_PLAN

if TYPE_CHECKING:
    from ..stage import StagePricer


def say_trace_plan(pricer: StagePricer) -> None:
    """Let ``pricer``'s traces be kept: put what they read of its plan in its memo (once)."""
    if TRACE_PLAN not in pricer.memo:
        r, gamma = pricer.r, pricer.gamma
        pricer.memo[TRACE_PLAN] = (key_of(r.model), key_of(r.strategy, NOT_READ), key_of(r.hardware),
                                   key_of(r.options, SLACK_OPTIONS), key_of(r.profile), generation(), gamma,
                                   type(gamma))


__all__ = ["say_trace_plan"]
