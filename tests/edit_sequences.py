"""The edits a user makes in the app, in a sequence with undos, for the tests that walk a plan session through
them and compare every estimate with one made without kept parts (tests/test_reuse.py, test_plan_stages.py,
test_steptime_band.py): a smaller tp or pp the session offers (or twice the present one), the other recompute
mode, twice the micro-batches; and strategies drawn at random for the FSDP2 path tests (``drawn_strategies``)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Iterator
from typing import Any

from estimator.errors import SappError
from estimator.session import PlanSession


def edit_changes(session: PlanSession, kind: str) -> dict[str, Any]:
    """The changes of one edit of ``kind`` (tp, pp, rec, m) to the session's plan."""
    st = session.parsed.strategy
    if kind == "m":
        return {"strategy.micro_batches": st.micro_batches * 2}
    if kind in ("tp", "pp"):
        now = getattr(st, kind)
        smaller = [v for v in session.step_candidates(f"strategy.{kind}") or [] if v < now]
        return {f"strategy.{kind}": smaller[-1] if smaller else now * 2}
    assert kind == "rec", kind
    return session.recompute_changes(mode="selective" if st.recompute.default_mode == "full" else "full")


def walk(session: PlanSession, kinds: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """Each edit of ``kinds`` (or ``undo``) applied in turn: (the kind, the session's plan after it)."""
    for kind in kinds:
        if kind == "undo":
            session.undo()
        else:
            session.apply(edit_changes(session, kind))
        yield kind, session.parsed


def drawn_strategies(plan: Any, rng: random.Random, tries: int) -> list:
    """Strategies of ``plan`` under drawn degrees, chunk counts, micro-batch counts and recompute modes: one per
    try the strategy accepts (``tries`` draws)."""
    out = []
    for _ in range(tries):
        pp = rng.choice([1, 2, 4, 8])
        st = plan.strategy
        try:
            st = st.replace(tp=rng.choice([1, 2, 4, 8]), pp=pp, micro_batches=rng.choice([1, 2, 3, 8, 16, 24]),
                            vpp=rng.choice([1, 2, 5]) if pp > 1 else 1)
            if rng.random() < 0.5:
                st = st.replace(recompute=dataclasses.replace(st.recompute, default_mode=rng.choice(
                    ["none", "full", "selective"])))
        except (SappError, TypeError, ValueError):
            continue
        out.append(st)
    return out
