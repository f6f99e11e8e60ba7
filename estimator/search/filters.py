"""Validity filters as boolean masks (docs/model.md#search): the first failing rule is a candidate's refusal reason.

The rules are the very predicates ``estimate`` uses (``estimator.validate.RULES``), evaluated on numpy
columns; the search adds R-BOUND (outside a declared list or bound) and R-GBS (no integer micro-batch count).
"""

from __future__ import annotations

import numpy as np

from ..features import fp8_problem, peft_problem
from ..frameworks import framework_defaults
from ..kinds import base_of, tp_divisors
from ..parsed import ParsedConfig
from ..strategy import V_SCHEDULES
from ..validate import RULES
from .candidates import Candidates
from .space import SearchSpace

# R-GBS sits between R-VPP-SCHED and R-MB-PP (docs/model.md#search)
CODES: tuple[str, ...] = ("R-BOUND", *[r.code for r in RULES[:10]], "R-GBS", *[r.code for r in RULES[10:]], "R-FW")
RULES_BY_CODE = {rule.code: rule for rule in RULES}


def schedule_of(parsed_schedule: str, vp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The schedule each candidate runs, as (names, code per candidate): interleaving follows vpp for the
    1F1B and Seq1F1B families."""
    pairs = {"1f1b": ("1f1b", "interleaved"), "interleaved": ("1f1b", "interleaved"),
             "seq1f1b": ("seq1f1b", "seqsmartvpp"), "seqsmartvpp": ("seq1f1b", "seqsmartvpp")}
    if parsed_schedule in pairs:
        return np.array(pairs[parsed_schedule], dtype=object), (vp > 1).astype(np.int64)
    return np.array([parsed_schedule], dtype=object), np.zeros(vp.shape, dtype=np.int64)


def resolve_columns(cands: Candidates, parsed: ParsedConfig) -> dict[str, np.ndarray]:
    """Per-candidate derived values: etp (codes resolved), Ulysses degree, expert DP, d_rep, shard sizes."""
    c = cands.columns
    st = parsed.strategy
    fw = framework_defaults(parsed.options.framework)
    etp = c["etp"].copy()
    etp = np.where(etp == 0, c["t"], etp)
    if (etp == -2).any():  # MindFormers: t when ep ≤ d·cp, else 1 (EP extended into TP)
        etp = np.where(etp == -2, np.where(c["ep"] <= c["d"] * c["cp"], c["t"], 1), etp)
    if st.cp_algo == "ulysses":
        u = c["cp"].copy()
    elif st.cp_algo == "hybrid":
        u = np.full(len(cands), st.ulysses_degree or 1)
    else:
        u = np.ones(len(cands), dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        edp = np.where(c["ep"] * etp > 0, c["d"] * c["t"] * c["cp"] // np.maximum(1, c["ep"] * etp), 0)
    fsdp_native = fw.fsdp_native and st.sharding.mode in ("fsdp", "hsdp")
    d_rep = np.where(c["d"] % np.maximum(1, c["d_sh"]) == 0, c["d"] // np.maximum(1, c["d_sh"]), 1) \
        if fsdp_native else np.ones(len(cands), dtype=np.int64)
    if st.sharding.mode == "none":
        os_e = np.ones(len(cands), dtype=np.int64)
    elif st.sharding.os_e is not None:
        os_e = np.full(len(cands), st.sharding.os_e)
    else:
        os_e = np.maximum(1, edp // np.maximum(1, d_rep))
    domain = c["d"] * c["cp"] if st.sharding.span_cp else c["d"]
    names, code = schedule_of(st.schedule_name, c["vp"])
    return {"etp": etp, "u": u, "edp": edp, "d_rep": d_rep, "os_e": os_e, "domain": domain,
            "schedule": names[code], "schedule_code": code, "schedule_names": names}


def refusals(cands: Candidates, derived: dict[str, np.ndarray], parsed: ParsedConfig, space: SearchSpace,
             start: int = 0, stop: int | None = None, unread: frozenset[str] = frozenset()) -> np.ndarray:
    """Index into CODES of each candidate's first failing rule, −1 for survivors. Rules run in their order
    (docs/model.md#search) on the candidates still alive, so each later rule looks at fewer rows; only the rules
    CODES[start:stop] run (the sieve runs the cheap ones on a coarse table first), and none of them may read a
    column named in ``unread`` (the coarse table holds one value of those)."""
    c = cands.columns
    model, st = parsed.model, parsed.strategy
    n = len(cands)
    reason = np.full(n, -1, dtype=np.int64)
    # the rows still alive; None while every row is: the rules read the columns themselves, not copies (a cold
    # process pays for every page it touches first; DeepSeek-V3's 234,632 rows after the sieve refuse none here)
    alive: np.ndarray | None = None

    def at(values: np.ndarray) -> np.ndarray:
        return values if alive is None else values[alive]

    def apply(code: str, ok: np.ndarray) -> None:
        nonlocal alive
        ok = np.broadcast_to(np.asarray(ok, dtype=bool), (n if alive is None else len(alive),))
        if ok.all():
            return
        rows = np.arange(n) if alive is None else alive
        reason[rows[~ok]] = CODES.index(code)
        alive = rows[ok]

    kinds = {base_of(k) for k in (*model.body_kinds(), *model.mtp_kinds())}  # data kinds by their base
    l_eff = model.num_layers + len(st.noop_layers) + (model.mtp_layers if st.mtp_in_offset else 0) + \
        (2 if st.emb_out_in_offset else 0)
    n_kv = model.num_attention_heads if model.is_mla else (model.num_kv_heads or model.num_attention_heads)
    hff_sh = model.shared_ffn_hidden_size if model.shared_ffn_hidden_size is not None else \
        model.num_shared_experts * (model.moe_ffn_hidden_size or 0)
    codes, names = derived["schedule_code"], derived["schedule_names"]

    scalars = {"framework": parsed.options.framework, "a": model.num_attention_heads, "n_kv": n_kv,
               "hff": (model.ffn_hidden_size or 0) if kinds & {"dense", "lin_dense"} else 0, "hff_sh": hff_sh,
               "hff_exp": (model.moe_ffn_hidden_size or 0) if model.is_moe else 0, "n_exp": model.num_experts,
               "moe": model.is_moe, "l_eff": l_eff, "has_layer_list": False, "cp_algo": st.cp_algo,
               "s": st.seq_length, "allow_underfilled": parsed.options.allow_underfilled_pipeline,
               "fp8_problem": fp8_problem(st.fp8, parsed.options.framework, parsed.hardware.peak_flops,
                                          parsed.hardware.id or parsed.hardware.name),
               "peft_problem": peft_problem(st), "kind_divisors": tp_divisors(model)}
    columns = {"d": c["d"], "t": c["t"], "p": c["p"], "vp": c["vp"], "cp": c["cp"], "ep": c["ep"],
               "etp": derived["etp"], "b": c["b"], "m": np.maximum(c["m"], 1), "sp": c["sp"], "u": derived["u"],
               "os": c["os"], "os_e": derived["os_e"], "domain": derived["domain"], "domain_e": derived["edp"],
               "vpp_group": np.full(len(cands), st.vpp_group) if st.vpp_group else c["p"]}
    columns = {name: value for name, value in columns.items() if name not in unread}

    def rule_ok(rule) -> np.ndarray:
        here = at(codes)
        ok = np.ones(len(here), dtype=bool)
        for k, name in enumerate(names):
            sel = here == k
            if not sel.any():
                continue
            # one schedule among the rows alive: the rows as they are (no index, no copies)
            rows = alive if sel.all() else (np.flatnonzero(sel) if alive is None else alive[sel])
            ctx = _LazyContext({**scalars, "schedule": str(name)}, columns, rows)
            ok[sel] = np.broadcast_to(np.asarray(rule.ok(ctx), dtype=bool), (int(sel.sum()),))
        return ok

    for code in CODES[start:stop]:
        if not (n if alive is None else len(alive)):
            break
        if code == "R-BOUND":
            apply(code, at(_within_bounds(c, space)))
        elif code == "R-GBS":
            apply(code, at(c["m"]) > 0)
        elif code == "R-FW":
            apply(code, _framework_can_express(parsed, names)[at(codes)])
        else:
            apply(code, rule_ok(RULES_BY_CODE[code]))
    return reason


def _within_bounds(c: dict[str, np.ndarray], space: SearchSpace) -> np.ndarray:
    """R-BOUND: dp and the micro-batch count within their declared lists, the micro-batch count within its bound."""
    bound = np.ones(len(c["d"]), dtype=bool)
    dp_dim, mb_dim = space.dim("dp"), space.dim("mb")
    if dp_dim is not None and not dp_dim.auto:
        bound &= np.isin(c["d"], dp_dim.values)
    if mb_dim is not None and not mb_dim.auto:
        bound &= np.isin(c["m"], mb_dim.values)
    return bound & ((c["m"] <= space.bounds.mb_max) | (c["m"] == 0))


class _LazyContext:
    """A RuleContext whose columns are sliced to ``rows`` (None: every row, the columns themselves) only when a
    rule reads them (most rules read two or three of the twenty columns)."""

    def __init__(self, scalars: dict, columns: dict[str, np.ndarray], rows: np.ndarray | None) -> None:
        self.__dict__.update(scalars)
        self._columns, self._rows = columns, rows

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("_") or name not in self._columns:
            raise AttributeError(name)
        value = self._columns[name] if self._rows is None else self._columns[name][self._rows]
        self.__dict__[name] = value
        return value


def _framework_can_express(parsed: ParsedConfig, schedules: np.ndarray) -> np.ndarray:
    """R-FW per schedule name (a candidate takes its schedule's): what the framework's config cannot state
    (MindFormers has no ZB-V/DualPipeV, MindSpeed no ZB-V)."""
    fw = parsed.options.framework
    ok = np.ones(len(schedules), dtype=bool)
    if fw in ("mindformers",):
        ok &= ~np.isin(schedules, V_SCHEDULES)
    if fw == "mindspeed":
        ok &= schedules != "zbv"
    return ok


def example_text(code: str, row: dict[str, int]) -> str:
    keys = ("d", "t", "p", "cp", "ep", "etp", "vp", "b", "m", "os", "sp", "rec")
    return f"{code}: " + " ".join(f"{k}={row[k]}" for k in keys if k in row)
