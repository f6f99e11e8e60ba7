"""The nearest plans that fit, for a plan that does not (issue 12): what to change, by how little.

A fix keeps the job: the device count and the global batch stay, only how the plan is cut changes. The search
(docs/model.md#search) prices every strategy of tensor × pipeline degree × recompute (× a smaller micro-batch
when the plan's is above 1); the fixes are the ones that fit, fewest changed settings first, then the fastest.
Each carries the edit that makes it (the same edit the Search tab's Apply makes) and its peak and step time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .honest import Honest, honest
from .messages import ENGLISH, Listing, Message, Text, english, joined, msg
from .parsed import ParsedConfig
from .search import Cancel, SearchSpace, parse_dims, search
from .session.edits import changes_to
from .strategy import Strategy

# what a fix may vary, and the settings that follow from those (not counted as changes of their own)
DERIVED = frozenset({"strategy.dp", "strategy.micro_batches", "strategy.etp", "strategy.shard_size",
                     "strategy.schedule", "strategy.offset", "strategy.partition", "strategy.vision_partition"})
RANKED = 500  # fitting strategies looked at; the nearest are among them


@dataclass(frozen=True)
class Fix:
    strategy: Strategy
    changes: dict[str, Any]     # the edit that makes it (canonical strategy.* keys, dp and m pinned)
    changed: tuple[str, ...]    # the settings a user changes (derived ones left out), e.g. ("tp", "recompute")
    summary: Text               # "tp 4 → 8, recompute none → full" (English; summary_in: another language)
    peak_bytes: float           # the decisive peak (the optimizer step included)
    step_time_s: float
    budget: float
    step_band: tuple[float, float] | None = None  # [T-BAND] the step at the device's fast and slow ends
    headroom: float = 0.0       # [D-VERDICT]'s margin: with a framework pool the smaller of its two margins
    catalogued: Message | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.summary, Message):
            object.__setattr__(self, "catalogued", self.summary)
            object.__setattr__(self, "summary", english(self.summary))

    def summary_in(self, language: str = ENGLISH) -> str:
        """The summary in ``language`` (the app's); ``summary`` is the English one."""
        return self.catalogued.render(language) if self.catalogued is not None else str(self.summary)

    @property
    def step(self) -> Honest:
        """The step time at the precision its band allows (``estimator.honest``)."""
        return honest(self.step_time_s, self.step_band)

    def to_dict(self) -> dict[str, Any]:
        from .formats.plan_writer import strategy_fields

        band = {"step_time_s_low": self.step_band[0], "step_time_s_high": self.step_band[1]} if self.step_band else {}
        return {"summary": self.summary, "changed": list(self.changed), "changes": _plain(self.changes),
                "strategy": strategy_fields(self.strategy), "peak_bytes": round(self.peak_bytes),
                "step_time_s": self.step_time_s, **band, "budget": round(self.budget),
                "headroom": round(self.headroom)}

    def set_arguments(self) -> list[str]:
        """The ``--set`` arguments that make this plan from the original (``sapp estimate … --set …``), each one
        shell word (values in YAML flow style without spaces)."""
        import json

        return [f"{key}={json.dumps(value, separators=(',', ':'))}" for key, value in _plain(self.changes).items()]


def nearest_fixes(parsed: ParsedConfig, limit: int = 3, cancel: Cancel | None = None) -> list[Fix]:
    """Up to ``limit`` strategies that fit with the plan's devices and global batch, fewest changed settings
    first, then the fastest."""
    st = parsed.strategy
    dims = ["tp=auto", "pp=auto", "rec=auto"]
    if st.micro_batch_size > 1:
        dims.append("mbs=" + ",".join(str(b) for b in range(1, st.micro_batch_size + 1)))
    space = SearchSpace(st.world_size, st.global_batch_size, parse_dims(dims), top_k=RANKED)
    result = search(parsed, space, cancel=cancel)
    found = []
    for row in result.ranked:
        changes = {key: value for key, value in changes_to(st, row.strategy, pin=("dp", "micro_batches")).items()
                   if key not in _DEFAULTED or _stated(st, row.strategy, key)}
        changed = tuple(key.removeprefix("strategy.") for key in changes if key not in DERIVED and
                        _differs(st, row.strategy, key))
        if not changed:
            continue  # the plan itself, written differently
        found.append(Fix(row.strategy, changes, changed, _summary(st, row.strategy, changed),
                         max(row.peak_bytes, row.optimizer_step_peak), row.step_time_s, result.budget,
                         row.step_band, row.headroom))
    found.sort(key=lambda fix: (len(fix.changed), fix.step_time_s))
    return found[:limit]


# values a search row states although the plan leaves them to the framework's default (which gives the same)
_DEFAULTED = ("strategy.etp", "strategy.shard_size", "strategy.schedule")


def _stated(st: Strategy, new: Strategy, key: str) -> bool:
    """Whether the plan states ``key`` itself (and, for the schedule, whether the one run changes)."""
    if key == "strategy.schedule":
        return st.schedule is not None and st.schedule_name != new.schedule_name
    return (st.etp if key == "strategy.etp" else st.sharding.os) is not None


def _differs(old: Strategy, new: Strategy, key: str) -> bool:
    name = key.removeprefix("strategy.")
    if name in ("recompute", "full_counts", "sel_counts", "comm_counts"):
        return old.recompute != new.recompute
    return getattr(old, name, None) != getattr(new, name, None)


def _summary(old: Strategy, new: Strategy, changed: tuple[str, ...]) -> Message:
    parts: list[Message] = []
    for name in changed:
        if name in ("recompute", "full_counts", "sel_counts", "comm_counts"):
            # the same counts: what differs is the mode of the other layers, said on both sides
            same = bool(_counts(old)) and list(map(str, _counts(old))) == list(map(str, _counts(new)))
            before, after = _recompute(old, rest=same), _recompute(new, rest=same)
            part = msg("fixes.recompute", old=before, new=after)
        else:
            part = _change(name, old, new)
        if str(part) not in map(str, parts):
            parts.append(part)
    follows = [_change(n, old, new) for n in ("dp", "micro_batches") if getattr(old, n) != getattr(new, n)]
    return msg("fixes.follow", changes=Listing(parts), follows=Listing(follows)) if follows else \
        msg("fixes.changes", changes=Listing(parts))


def _change(name: str, old: Strategy, new: Strategy) -> Message:
    return msg("fixes.change", name=_label(name), old=_text(getattr(old, name, None)),
               new=_text(getattr(new, name, None)))


def _recompute(st: Strategy, rest: bool = False) -> Text:
    """The plan's recompute as a user states it: per-stage layer counts where it has them (full, selective,
    communication), with the mode of the layers beyond them where it is not "none" (or always, with ``rest``),
    else the one mode of every layer."""
    plan = st.recompute
    counts = _counts(st)
    if not counts:
        return plan.default_mode
    # docs/model.md#recompute-assignment: the default covers the layers beyond the counts of its own kind
    applies = (plan.default_mode == "selective" and plan.sel_counts is None) or \
        (plan.default_mode == "full" and plan.full_counts is None)
    other = plan.default_mode if applies else "none"
    if other != "none" or rest:
        return msg("fixes.per-stage.rest", counts=joined(counts), mode=other)
    return msg("fixes.per-stage", counts=joined(counts))


def _counts(st: Strategy) -> list[Message]:
    plan = st.recompute
    return [msg("fixes.count", kind=kind, value=_text(value)) for kind, value in
            (("full", plan.full_counts), ("selective", plan.sel_counts), ("comm", plan.comm_counts))
            if value is not None]


def _label(name: str) -> Text:
    return {"micro_batch_size": msg("fixes.label.micro-batch-size"), "micro_batches": msg("fixes.label.micro-batches"),
            "sequence_parallel": "SP"}.get(name, name)


def _text(value: Any) -> Text:
    if isinstance(value, bool):
        return msg("fixes.on") if value else msg("fixes.off")
    if isinstance(value, tuple):
        return ",".join(str(_text(v)) for v in value)
    return str(value)


def _plain(changes: dict[str, Any]) -> dict[str, Any]:
    from .formats.support import plain_lists

    return {key: plain_lists(value) for key, value in changes.items()}


__all__ = ["Fix", "nearest_fixes"]
