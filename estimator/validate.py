"""Strategy validity rules (docs/model.md#search), shared by ``estimate`` (which lists every violated rule) and the
search (which evaluates the same predicates as numpy masks, the first failure being the refusal reason).

Each rule is a predicate ``ok(ctx) -> bool | ndarray`` over a ``RuleContext`` whose degree fields may be
arrays, plus a message builder for one candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .arr import Num, is_array
from .errors import Violation
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
    fp8_problem: str = ""  # why the FP8 recipe cannot run on this device/framework (features.fp8_problem)
    peft_problem: str = ""  # why the PEFT settings cannot be priced (features.peft_problem)
    kind_divisors: tuple[tuple[str, int], ...] = ()  # counts TP must divide in layer kinds as data (kinds.tp_divisors)


def _all(*conds: Num) -> Num:
    out = conds[0]
    for c in conds[1:]:
        out = np.logical_and(out, c) if is_array(out, c) else (bool(out) and bool(c))
    return out


def _any(*conds: Num) -> Num:
    out = conds[0]
    for c in conds[1:]:
        out = np.logical_or(out, c) if is_array(out, c) else (bool(out) or bool(c))
    return out


def _not(c: Num) -> Num:
    return np.logical_not(c) if is_array(c) else not c


def _divides(k: Num, n: Num) -> Num:
    """k divides n (a zero k divides nothing)."""
    if is_array(k, n):
        k = np.asarray(k)
        safe = np.where(k == 0, 1, k)
        return (k != 0) & ((n % safe) == 0)
    return k != 0 and n % k == 0


@dataclass(frozen=True)
class Rule:
    code: str
    ok: Callable[[RuleContext], Num]
    message: Callable[[RuleContext], str]


def _tp_kv_ok(c: RuleContext) -> Num:
    divisible = _divides(c.t, c.n_kv)
    if c.framework in KV_REPLICATING:
        return _any(divisible, _divides(c.n_kv, c.t))
    return divisible


def _vpp_mb_ok(c: RuleContext) -> Num:
    interleaved = c.schedule in ("interleaved", "seqsmartvpp", "interleaved_zb")
    if not interleaved:
        return True if not is_array(c.m) else np.ones_like(c.m, dtype=bool)
    group = c.vpp_group
    last = c.m % group
    return _all(c.p <= group, group <= c.m, _any(last == 0, last >= c.p))


RULES: tuple[Rule, ...] = (
    Rule("R-TP-HEADS", lambda c: _divides(c.t, c.a), lambda c: f"TP {c.t} does not divide {c.a} attention heads"),
    Rule("R-TP-KV", _tp_kv_ok, lambda c: f"TP {c.t} incompatible with {c.n_kv} KV heads"),
    Rule("R-TP-FFN", lambda c: _all(_divides(c.t, c.hff) if c.hff else True,
                                    _divides(c.t, c.hff_sh) if c.hff_sh else True),
         lambda c: f"TP {c.t} does not divide FFN width {c.hff or c.hff_sh}"),
    Rule("R-ETP-FFN", lambda c: _divides(c.etp, c.hff_exp) if c.hff_exp else True,
         lambda c: f"expert TP {c.etp} does not divide expert width {c.hff_exp}"),
    Rule("R-SP-T1", lambda c: _not(_all(c.sp == 1, c.t == 1)),
         lambda c: "sequence parallel needs TP > 1 (duplicate of SP off)"),
    Rule("R-SP-SEQ", lambda c: _any(c.sp == 0, _divides(c.t, c.s // c.cp)),
         lambda c: f"sequence parallel splits the sequence: {c.s}/{c.cp} is not divisible by TP {c.t}"),
    Rule("R-MOE-SP", lambda c: _not(_all(c.framework in MEGATRON_FAMILY, c.moe, c.t > 1, c.sp == 0)),
         lambda c: f"MoE with TP > 1 requires sequence parallel in {c.framework}"),
    Rule("R-PP-LAYERS", lambda c: c.p * c.vp <= c.l_eff,
         lambda c: f"{c.p}×{c.vp} chunks exceed {c.l_eff} layer positions"),
    Rule("R-VPP-DIV", lambda c: _any(c.framework not in MEGATRON_FAMILY, c.has_layer_list, c.vp == 1,
                                     _divides(c.p * c.vp, c.l_eff)),
         lambda c: f"{c.l_eff} layers not divisible by PP×VPP {c.p * c.vp} ({c.framework} needs a layer list "
                   "or noop layers)"),
    Rule("R-VPP-SCHED", lambda c: _all(
        _not(_all(c.vp > 1, c.p == 1)),
        (c.vp == 2) if c.schedule in V_SCHEDULES else True,
        (c.vp > 1) if c.schedule in ("interleaved", "seqsmartvpp", "interleaved_zb") else True,
        (c.vp == 1) if c.schedule in ("1f1b", "gpipe", "seq1f1b") else True),
         lambda c: f"VPP {c.vp} not valid for schedule {c.schedule} with PP {c.p}"),
    Rule("R-MB-PP", lambda c: _any(c.allow_underfilled, c.p == 1, c.m >= c.p),
         lambda c: f"{c.m} micro-batches cannot fill {c.p} pipeline stages"),
    Rule("R-VPP-MB", _vpp_mb_ok,
         lambda c: f"interleaved schedule needs PP {c.p} ≤ group {c.vpp_group} ≤ micro-batches {c.m} and a last "
                   f"group of 0 or ≥ {c.p}"),
    Rule("R-DPV-MB", lambda c: (c.m >= 2 * c.p) if c.schedule == "dualpipev" else True,
         lambda c: f"DualPipeV needs at least 2×PP = {2 * c.p} micro-batches; got {c.m}"),
    Rule("R-CP-SEQ", lambda c: _any(c.cp == 1, _divides(2 * c.cp, c.s)),
         lambda c: f"sequence {c.s} not divisible by 2×CP {2 * c.cp}"),
    Rule("R-CP-ULY", lambda c: True if c.cp_algo in ("ring", "allgather") else _any(
        c.cp == 1, _all(_divides(c.t * c.u, c.a), _any(_divides(c.t * c.u, c.n_kv), _divides(c.n_kv, c.t * c.u)))),
         lambda c: f"Ulysses degree {c.u}×TP {c.t} must divide {c.a} heads (and {c.n_kv} KV heads, or be a "
                   "multiple of them)"),
    Rule("R-CP-SP", lambda c: _not(_all(c.framework == "mindformers", c.cp > 1, c.sp == 1)),
         lambda c: "MindFormers does not combine context_parallel with use_seq_parallel"),
    Rule("R-EP-DENSE", lambda c: True if c.moe else c.ep == 1, lambda c: f"EP {c.ep} on a dense model"),
    Rule("R-EP-EXP", lambda c: _divides(c.ep, c.n_exp) if c.moe else True,
         lambda c: f"EP {c.ep} does not divide {c.n_exp} experts"),
    Rule("R-EP-LAYOUT", lambda c: _divides(c.ep * c.etp, c.d * c.t * c.cp),
         lambda c: f"EP×ETP {c.ep}×{c.etp} does not divide DP×TP×CP {c.d * c.t * c.cp}"),
    Rule("R-FP8-DEVICE", lambda c: not c.fp8_problem, lambda c: c.fp8_problem),
    Rule("R-PEFT", lambda c: not c.peft_problem, lambda c: c.peft_problem),
    Rule("R-OS-DIV", lambda c: _all(_divides(c.os, c.domain), _divides(c.os_e, c.domain_e)),
         lambda c: f"optimizer shard {c.os} does not divide its group {c.domain}"
                   if c.domain % c.os != 0 else
                   f"expert optimizer shard {c.os_e} does not divide its group {c.domain_e}"),
    Rule("R-TP-KIND", lambda c: _all(True, *(_divides(c.t, v) for _, v in c.kind_divisors)),
         lambda c: f"TP {c.t} does not divide " + ", ".join(f"{name} {v}" for name, v in c.kind_divisors
                                                           if not bool(_divides(c.t, v)))),
)


def violations(ctx: RuleContext) -> list[Violation]:
    """Every violated rule for one (scalar) candidate, in docs/model.md#search order."""
    out = []
    for rule in RULES:
        ok = rule.ok(ctx)
        if not bool(ok):
            out.append(Violation(rule.code, rule.message(ctx)))
    return out
