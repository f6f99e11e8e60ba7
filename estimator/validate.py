"""Strategy validity rules (docs/model.md#search), shared by ``estimate`` (which lists every violated rule) and the
search (which evaluates the same predicates as numpy masks, the first failure being the refusal reason).

Each rule is a predicate ``ok(ctx) -> bool | ndarray`` over a ``RuleContext`` whose degree fields may be
arrays, plus a message builder for one candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .arr import Num
from .errors import Violation
from .messages import Message, Text, msg
from .records import at_once
from .strategy import V_SCHEDULES

MEGATRON_FAMILY = ("megatron", "mindspeed")
KV_REPLICATING = ("mindformers", "hyperparallel")


@dataclass(frozen=True)
class RuleContext:
    """Everything the rules look at. Degrees may be numpy arrays (search) or ints (estimate)."""

    framework: str
    a: int
    n_kv: int
    hff: int        # dense FFN width (0: no dense layers)
    hff_sh: int     # shared-expert width (0: none)
    hff_exp: int    # routed-expert width (0: dense model)
    n_exp: int
    moe: bool
    l_eff: int
    has_layer_list: bool
    schedule: str
    cp_algo: str
    d: Num
    t: Num
    p: Num
    vp: Num
    cp: Num
    ep: Num
    etp: Num
    b: Num
    m: Num
    s: Num
    sp: Num
    u: Num
    os: Num
    os_e: Num
    domain: Num    # D
    domain_e: Num  # D_e = edp
    vpp_group: Num
    allow_underfilled: bool
    fp8_problem: Text = ""  # why the FP8 recipe cannot run on this device/framework (features.fp8_problem)
    peft_problem: Text = ""  # why the PEFT settings cannot be priced (features.peft_problem)
    kind_divisors: tuple[tuple[str, int], ...] = ()  # counts TP must divide in layer kinds as data (kinds.tp_divisors)


def context_of(**fields: object) -> RuleContext:
    """``RuleContext(**fields)`` with every field given (``estimate.rule_context``), its instance dict set at once:
    the frozen dataclass's ``__init__`` sets its 33 fields one by one through ``object.__setattr__``, and every
    estimate makes one (tests/test_resolve_settled.py checks the fields and the equality)."""
    return at_once(RuleContext, **fields)


# the helpers test for arrays inline (``arr.is_array``'s test, without its call): an estimate asks ~40 of them
def _all(*conds: Num) -> Num:
    out = conds[0]
    for c in conds[1:]:
        out = np.logical_and(out, c) if isinstance(out, np.ndarray) or isinstance(c, np.ndarray) else \
            (bool(out) and bool(c))
    return out


def _any(*conds: Num) -> Num:
    out = conds[0]
    for c in conds[1:]:
        out = np.logical_or(out, c) if isinstance(out, np.ndarray) or isinstance(c, np.ndarray) else \
            (bool(out) or bool(c))
    return out


def _not(c: Num) -> Num:
    return np.logical_not(c) if isinstance(c, np.ndarray) else not c


def _divides(k: Num, n: Num) -> Num:
    """k divides n (a zero k divides nothing)."""
    if isinstance(k, np.ndarray) or isinstance(n, np.ndarray):
        k = np.asarray(k)
        safe = np.where(k == 0, 1, k)
        return (k != 0) & ((n % safe) == 0)
    return k != 0 and n % k == 0


@dataclass(frozen=True)
class Rule:
    code: str
    ok: Callable[[RuleContext], Num]
    message: Callable[[RuleContext], Message | str]


def _tp_kv_ok(c: RuleContext) -> Num:
    divisible = _divides(c.t, c.n_kv)
    if c.framework in KV_REPLICATING:
        return _any(divisible, _divides(c.n_kv, c.t))
    return divisible


def _vpp_mb_ok(c: RuleContext) -> Num:
    interleaved = c.schedule in ("interleaved", "seqsmartvpp", "interleaved_zb")
    if not interleaved:
        return True if not isinstance(c.m, np.ndarray) else np.ones_like(c.m, dtype=bool)
    group = c.vpp_group
    last = c.m % group
    return _all(c.p <= group, group <= c.m, _any(last == 0, last >= c.p))


RULES: tuple[Rule, ...] = (
    Rule("R-TP-HEADS", lambda c: _divides(c.t, c.a), lambda c: msg("R-TP-HEADS", t=c.t, a=c.a)),
    Rule("R-TP-KV", _tp_kv_ok, lambda c: msg("R-TP-KV", t=c.t, n_kv=c.n_kv)),
    Rule("R-TP-FFN", lambda c: _all(_divides(c.t, c.hff) if c.hff else True,
                                    _divides(c.t, c.hff_sh) if c.hff_sh else True),
         lambda c: msg("R-TP-FFN", t=c.t, width=c.hff or c.hff_sh)),
    Rule("R-ETP-FFN", lambda c: _divides(c.etp, c.hff_exp) if c.hff_exp else True,
         lambda c: msg("R-ETP-FFN", etp=c.etp, width=c.hff_exp)),
    Rule("R-SP-T1", lambda c: _not(_all(c.sp == 1, c.t == 1)),
         lambda c: msg("R-SP-T1")),
    Rule("R-SP-SEQ", lambda c: _any(c.sp == 0, _divides(c.t, c.s // c.cp)),
         lambda c: msg("R-SP-SEQ", s=c.s, cp=c.cp, t=c.t)),
    Rule("R-MOE-SP", lambda c: _not(_all(c.framework in MEGATRON_FAMILY, c.moe, c.t > 1, c.sp == 0)),
         lambda c: msg("R-MOE-SP", framework=c.framework)),
    Rule("R-PP-LAYERS", lambda c: c.p * c.vp <= c.l_eff,
         lambda c: msg("R-PP-LAYERS", p=c.p, vp=c.vp, layers=c.l_eff)),
    Rule("R-VPP-DIV", lambda c: _any(c.framework not in MEGATRON_FAMILY, c.has_layer_list, c.vp == 1,
                                     _divides(c.p * c.vp, c.l_eff)),
         lambda c: msg("R-VPP-DIV", layers=c.l_eff, chunks=c.p * c.vp, framework=c.framework)),
    Rule("R-VPP-SCHED", lambda c: _all(
        _not(_all(c.vp > 1, c.p == 1)),
        (c.vp == 2) if c.schedule in V_SCHEDULES else True,
        (c.vp > 1) if c.schedule in ("interleaved", "seqsmartvpp", "interleaved_zb") else True,
        (c.vp == 1) if c.schedule in ("1f1b", "gpipe", "seq1f1b") else True),
         lambda c: msg("R-VPP-SCHED", vp=c.vp, schedule=c.schedule, p=c.p)),
    Rule("R-MB-PP", lambda c: _any(c.allow_underfilled, c.p == 1, c.m >= c.p),
         lambda c: msg("R-MB-PP", m=c.m, p=c.p)),
    Rule("R-VPP-MB", _vpp_mb_ok,
         lambda c: msg("R-VPP-MB", p=c.p, group=c.vpp_group, m=c.m)),
    Rule("R-DPV-MB", lambda c: (c.m >= 2 * c.p) if c.schedule == "dualpipev" else True,
         lambda c: msg("R-DPV-MB", need=2 * c.p, m=c.m)),
    Rule("R-CP-SEQ", lambda c: _any(c.cp == 1, _divides(2 * c.cp, c.s)),
         lambda c: msg("R-CP-SEQ", s=c.s, twice_cp=2 * c.cp)),
    Rule("R-CP-ULY", lambda c: True if c.cp_algo in ("ring", "allgather") else _any(
        c.cp == 1, _all(_divides(c.t * c.u, c.a), _any(_divides(c.t * c.u, c.n_kv), _divides(c.n_kv, c.t * c.u)))),
         lambda c: msg("R-CP-ULY", u=c.u, t=c.t, a=c.a, n_kv=c.n_kv)),
    Rule("R-CP-SP", lambda c: _not(_all(c.framework == "mindformers", c.cp > 1, c.sp == 1)),
         lambda c: msg("R-CP-SP")),
    Rule("R-EP-DENSE", lambda c: True if c.moe else c.ep == 1, lambda c: msg("R-EP-DENSE", ep=c.ep)),
    Rule("R-EP-EXP", lambda c: _divides(c.ep, c.n_exp) if c.moe else True,
         lambda c: msg("R-EP-EXP", ep=c.ep, n_exp=c.n_exp)),
    Rule("R-EP-LAYOUT", lambda c: _divides(c.ep * c.etp, c.d * c.t * c.cp),
         lambda c: msg("R-EP-LAYOUT", ep=c.ep, etp=c.etp, ranks=c.d * c.t * c.cp)),
    Rule("R-FP8-DEVICE", lambda c: not c.fp8_problem, lambda c: c.fp8_problem),
    Rule("R-PEFT", lambda c: not c.peft_problem, lambda c: c.peft_problem),
    # the expert shard is checked only where the experts' layout holds (R-EP-LAYOUT): without it the expert
    # domain is no whole number of ranks and a second, meaningless refusal would follow the first
    Rule("R-OS-DIV", lambda c: _all(_divides(c.os, c.domain),
                                    _any(_not(_divides(c.ep * c.etp, c.d * c.t * c.cp)),
                                         _divides(c.os_e, c.domain_e))),
         lambda c: msg("R-OS-DIV", os=c.os, domain=c.domain) if c.domain % c.os != 0 else
         msg("R-OS-DIV.expert", os=c.os_e, domain=c.domain_e)),
    Rule("R-TP-KIND", lambda c: _all(True, *(_divides(c.t, v) for _, v in c.kind_divisors)),
         lambda c: msg("R-TP-KIND", t=c.t, counts=", ".join(f"{name} {v}" for name, v in c.kind_divisors
                                                             if not bool(_divides(c.t, v))))),
)


def violations(ctx: RuleContext) -> list[Violation]:
    """Every violated rule for one (scalar) candidate, in docs/model.md#search order."""
    out = []
    for rule in RULES:
        ok = rule.ok(ctx)
        if not bool(ok):
            out.append(Violation(rule.code, rule.message(ctx)))
    return out
