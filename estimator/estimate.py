"""``estimate``: per-stage, per-layer, per-category memory of one plan (spec §5, §6, §12).

Flow: resolve the inputs (§3) → validate the strategy (§8.4 rules, all violations at once) → build the
layout (§4) → take the schedule's in-flight profile (§6.7) → price every stage at its peak replay point
(§6.8–§6.11), or instant by instant under PyTorch FSDP2 (§12) → the verdict against the budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from . import fsdp
from .arr import Num, argmax_first, gt, index_size, is_array, mask_index, max_all, maximum, pick, valid_or_minus_inf
from .errors import StrategyError
from .explain import Quantity, max_node, sum_node
from .features import fp8_problem, peft_problem
from .hardware import Hardware, runtime_of
from .hardware_figures import figures_json
from .layout import EMBEDDING, MTP, OUTPUT, VISION, Layout, LayoutInputs, build_layout
from .model import ModelSpec
from .options import RunOptions
from .params import parameter_counts
from .resolve import Resolved, dense_domain, resolve
from .result import CATEGORIES, LayerRow, Result, StageResult
from .schedules import StageProfile, inflight_profile
from .stage import Row, StagePricer
from .static import Local, fp8_weight_bytes
from .steptime import StepTime, step_time
from .strategy import Strategy
from .validate import RuleContext, violations


def estimate(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions | None = None,
             *, explain: bool | None = None, with_time: bool = True) -> Result:
    """Price one plan: memory per stage and (unless ``with_time`` is false) the step time.
    Raises StrategyError (every violated rule), LayoutError or ModelSpecError."""
    options = options or RunOptions()
    r = resolve(model, strategy, hardware, options)
    layout = build_layout(layout_inputs(r))
    problems = violations(rule_context(r, layout))
    if problems:
        raise StrategyError(problems)
    par = r.par
    profile = inflight_profile(r.flags.schedule, par.p, par.vp, par.m, vpp_group=strategy.vpp_group,
                               n_s=par.n_s, overlap_moe_ep_comm=strategy.overlap_moe_ep_comm,
                               variant=options.vpp_variant)
    pricer = StagePricer(r, layout)
    want_explain = options.explain if explain is None else explain
    stages = tuple(price_stage(pricer, i, profile[i], want_explain) for i in range(par.p))
    step = step_time(pricer, [stage_rows(pricer, i) for i in range(par.p)]) if with_time else None
    return assemble(r, layout, stages, step)


# ------------------------------------------------------------------------------------------ inputs
def layout_inputs(r: Resolved) -> LayoutInputs:
    st, model = r.strategy, r.model
    vision = model.vision
    return LayoutInputs(
        body_kinds=model.body_kinds(), mtp_kinds=model.mtp_kinds(), p=st.pp, vp=st.vpp, schedule=r.flags.schedule,
        offset=st.offset, partition=st.partition, offset_rule=st.offset_rule, mtp_in_offset=st.mtp_in_offset,
        emb_out_in_offset=st.emb_out_in_offset, noop_layers=st.noop_layers, recompute=st.recompute,
        strict=r.options.strict, vision_layers=vision.num_layers if vision else 0,
        vision_partition=st.vision_partition)


def rule_context(r: Resolved, layout: Layout | None = None) -> RuleContext:
    d, par, st = r.dims, r.par, r.strategy
    kinds = set(r.model.body_kinds()) | set(r.model.mtp_kinds())
    l_eff = d.n_lay + len(st.noop_layers) + (d.n_mtp if st.mtp_in_offset else 0) + \
        (2 if st.emb_out_in_offset else 0)
    return RuleContext(
        framework=r.fw.name, a=d.a, n_kv=d.n_kv, hff=d.hff if kinds & {"dense", "lin_dense"} else 0,
        hff_sh=d.hff_sh, hff_exp=d.hff_exp if d.moe else 0, n_exp=d.n_exp, moe=d.moe, l_eff=l_eff,
        has_layer_list=st.partition is not None or st.offset is not None, schedule=r.flags.schedule,
        cp_algo=r.flags.cp_algo, d=par.d, t=par.t, p=par.p, vp=par.vp, cp=par.cp, ep=par.ep, etp=par.etp, b=par.b,
        m=par.m, s=par.s, sp=par.sp, u=par.u, os=par.os, os_e=par.os_e, domain=dense_domain(r.flags, par),
        domain_e=par.edp, vpp_group=st.vpp_group or par.p, allow_underfilled=r.options.allow_underfilled_pipeline,
        fp8_problem=fp8_problem(st.fp8, r.fw.name, r.hardware.peak_flops, r.hardware.id or r.hardware.name),
        peft_problem=peft_problem(st))


# ------------------------------------------------------------------------------------------ stages
def stage_rows(pricer: StagePricer, stage: int) -> list[Row]:
    """The priced rows of a stage in model order, with the copies of §5.3 (tied head, MTP embedding); built
    once per pricer and stage (memory and step time both walk them)."""
    key = ("stage-rows", stage)
    cached = pricer.memo.get(key)
    if cached is None:
        cached = pricer.memo[key] = _stage_rows(pricer, stage)
    return list(cached)  # type: ignore[call-overload]


def _stage_rows(pricer: StagePricer, stage: int) -> list[Row]:
    layout, d = pricer.layout, pricer.r.dims
    slots = layout.stage_slots(stage)
    kinds = {it.kind for s in slots for it in s.items}
    has_e, has_o, has_mtp = EMBEDDING in kinds, OUTPUT in kinds, MTP in kinds
    rows: list[Row] = []
    for slot in slots:
        # A tied table whose E sits elsewhere makes O carry a full copy of the head (D56).
        rows.extend(pricer.rows(slot, with_head=not (d.tie and has_e)))
    if has_mtp and not has_e and not (d.tie and has_o):
        mtp_chunk = next(s.chunk for s in slots if any(it.kind == MTP for it in s.items))
        rows.append(pricer.copy_row(mtp_chunk))
    if VISION in kinds and stage == next(i for i in range(layout.p) if any(
            it.kind == VISION for s in layout.stage_slots(i) for it in s.items)):
        rows.insert(0, pricer.vision_extras_row(0))
    return rows


def working_for_chunk(pricer: StagePricer, rows: list[Row], chunk: int) -> tuple[Num, str]:
    """[W-BWD] walk the chunk's backward in reverse model order: need(ℓ) = Rc(ℓ) + Gw(ℓ) − Σ A1(ℓ')."""
    best: Num = 0.0
    where = ""
    processed: Num = 0.0
    chunk_rows = [row for row in rows if row.chunk == chunk]
    for row in reversed(chunk_rows):
        item = row.item
        if item.option == "full" and item.group > 1:
            # a uniform group is recomputed as a unit, from its first layer to ℓ
            members = [x for x in chunk_rows if x.item.option == "full" and x.item.group == item.group
                       and 0 <= x.item.index <= item.index and x.item.index > item.index - item.group]
            rc = sum(x.act_none for x in members)
        else:
            rc = row.cost.rc
        need = rc + row.gw - processed
        if not is_array(need, best) and need > best:
            where = _row_label(row)
        best = maximum(best, need)
        processed = processed + row.act
    return best, where


def forward_working(rows: list[Row], chunk: int) -> Num:
    return max_all([row.gf for row in rows if row.chunk == chunk])


def _row_label(row: Row) -> str:
    item = row.item
    if item.index is not None and item.index >= 0:
        return f"{item.kind} layer {item.index} ({item.option})"
    return item.kind


class Point(NamedTuple):
    """A replay point: per chunk the micro-batches in flight (numbers, or arrays over candidates), the chunk
    whose backward follows, and for which candidates it exists (True, or a boolean array in the search)."""

    counts: tuple[Num, ...]
    backward_chunk: int
    valid: Num = True


def profile_points(prof: StageProfile) -> list[Point]:
    return [Point(pt.counts, pt.backward_chunk) for pt in prof.points]


def price_stage(pricer: StagePricer, stage: int, prof: StageProfile | list[Point], explain: bool) -> StageResult:
    """One stage at its peak replay point (§6.8). Works for numbers and, in the search, for numpy arrays
    of degrees (then labels are omitted and categories are arrays; ``prof`` is then a list of Points whose
    ``valid`` masks select the candidates each point belongs to)."""
    r = pricer.r
    points = profile_points(prof) if isinstance(prof, StageProfile) else prof
    if r.flags.fsdp2:
        return fsdp.price_stage(pricer, stage, points, stage_rows(pricer, stage), explain)
    rows = stage_rows(pricer, stage)
    f, par = r.flags, r.par
    if is_array(par.d, par.t, par.cp, par.b, par.m):
        return _price_stage_vector(pricer, stage, points, rows)
    vp = par.vp
    act_chunk = [sum(row.act for row in rows if row.chunk == j) for j in range(vp)]
    work_chunk = [working_for_chunk(pricer, rows, j) for j in range(vp)]
    if f.schedule in ("zbv", "dualpipev"):
        ff = [forward_working(rows, j) for j in range(vp)]
        candidates = [work_chunk[1][0], ff[0] + work_chunk[1][0], ff[1] + work_chunk[0][0]]
        labels = [work_chunk[1][1], "chunk 0 forward + chunk 1 backward", "chunk 1 forward + chunk 0 backward"]
        k = argmax_first(candidates)
        v_work = (pick(k, candidates), labels[k] if isinstance(k, int) else "")
        work_chunk = [v_work, v_work]
    vision_fwd = pricer.vision_forward_working() if (pricer.vision_frozen and any(
        row.item.kind == VISION for row in rows)) else 0.0

    # transient buffers: one stage maximum (D14), or upstream's per-layer sum
    if f.comm_buffer_mode == "upstream_sum":
        transient = sum(max_all([row.parts[0], row.parts[1], row.parts[3]]) + row.parts[2] for row in rows)
        transient_note = "upstream per-layer sum"
    else:
        values = [row.transient for row in rows]
        k = argmax_first(values)
        transient = pick(k, values)
        transient_note = f"largest: {_row_label(rows[k])}" if isinstance(k, int) else ""
    resident = sum(row.resident for row in rows)

    # the peak replay point (D49): max over points of Σ_j n_j·A_chunk(j) + working(r), ties to the earliest
    vector = is_array(*act_chunk, *(w for w, _ in work_chunk), *(pt.valid for pt in points))
    if vector:
        counts, working = _select_point_vector(points, act_chunk, [w for w, _ in work_chunk])
        working = working + vision_fwd
        working_note = point_text = ""
        best = None
    else:
        values = [valid_or_minus_inf(pt.valid, sum(n * a for n, a in zip(pt.counts, act_chunk, strict=True)) +
                                     work_chunk[pt.backward_chunk][0]) for pt in points]
        best = argmax_first(values)
    if isinstance(best, int):
        best_point = points[best]
        counts: tuple[Num, ...] = best_point.counts
        working = work_chunk[best_point.backward_chunk][0] + vision_fwd
        working_note = work_chunk[best_point.backward_chunk][1]
        point_text = f"before backward of chunk {best_point.backward_chunk}, in flight {tuple(best_point.counts)}"

    gamma = pricer.gamma
    swap = f.swap_optimizer
    params = grads = states = acts = 0.0
    for row in rows:
        cost = row.cost
        st = cost.static
        params += st.parameters
        grads += st.gradients
        states += st.optimizer_states
        acts += counts[row.chunk] * cost.act
    cat = {"parameters": params, "gradients": gamma * grads, "optimizer_states": 0.0 if swap else states,
           "activations": acts, "communication_buffers": resident + transient, "working_overhead": working,
           "reserve": 0.0}
    reserve, groups = reserve_bytes(r, acts + working, stage)
    cat["reserve"] = reserve
    total = sum(cat.values())
    opt_peak = optimizer_step_peak(r, rows, resident, groups)
    # (formatting an array of group counts would cost the search more than pricing the stage)
    notes = (working_note, transient_note, "" if is_array(groups) else f"{groups} process groups")
    source = partial(_layer_rows, rows, counts, gamma, swap, (working, transient, reserve), notes)
    tree = stage_explain(pricer, stage, cat, source(), point_text, rows) if explain else None
    return StageResult(index=stage, layer_source=source, bytes_by_category=cat, total=total,
                       peak_vector=tuple(counts), peak_instant=point_text, optimizer_step_peak=opt_peak,
                       layer_counts=pricer.layout.chunk_counts()[stage],
                       kinds=frozenset(row.item.kind for row in rows), explain=tree)


@dataclass(frozen=True)
class _StageSums:
    """What a stage's rows give regardless of which micro-batches are in flight (the search shares it among
    the stages of a group that hold the same rows)."""

    act_chunk: list[Num]
    work_chunk: list[Num]
    transient: Num
    resident: Num
    params: Num
    grads: Num
    states: Num
    opt_base: Num  # the optimizer-step peak without the per-process-group reserve


def _stage_sums(pricer: StagePricer, rows: list[Row]) -> _StageSums:
    r = pricer.r
    f, vp = r.flags, r.par.vp
    act_chunk = [sum(row.act for row in rows if row.chunk == j) for j in range(vp)]
    work_chunk = [working_for_chunk(pricer, rows, j)[0] for j in range(vp)]
    if f.schedule in ("zbv", "dualpipev"):
        ff = [forward_working(rows, j) for j in range(vp)]
        candidates = [work_chunk[1], ff[0] + work_chunk[1], ff[1] + work_chunk[0]]
        v_work = pick(argmax_first(candidates), candidates)
        work_chunk = [v_work, v_work]
    if pricer.vision_frozen and any(row.item.kind == VISION for row in rows):
        vision_fwd = pricer.vision_forward_working()
        work_chunk = [w + vision_fwd for w in work_chunk]
    if f.comm_buffer_mode == "upstream_sum":
        transient = sum(max_all([row.parts[0], row.parts[1], row.parts[3]]) + row.parts[2] for row in rows)
    else:
        values = [row.transient for row in rows]
        transient = pick(argmax_first(values), values)
    resident = sum(row.resident for row in rows)
    params = grads = states = 0.0
    for row in rows:
        st = row.cost.static
        params += st.parameters
        grads += st.gradients
        states += st.optimizer_states
    return _StageSums(act_chunk, work_chunk, transient, resident, params, grads, states,
                      optimizer_step_peak(r, rows, resident, 0))


def _price_stage_vector(pricer: StagePricer, stage: int, points: list[Point], rows: list[Row]) -> StageResult:
    """``price_stage`` for the search (arrays of candidates): the same formulas, with the row sums shared by the
    stages of the group that hold the same rows; no labels, no explain."""
    r = pricer.r
    f = r.flags
    # rows equal in cost terms; a uniform recompute group's walk also reads the layer indices
    key = ("stage-sums", tuple((row.chunk, row.item.kind, row.item.block, row.item.option, row.item.group,
                                row.item.keeps_input, row.item.index if row.item.group > 1 else 0, id(row.cost))
                               for row in rows))
    sums = pricer.memo.get(key)
    if sums is None:
        sums = pricer.memo[key] = _stage_sums(pricer, rows)
    assert isinstance(sums, _StageSums)
    counts, working = _select_point_vector(points, sums.act_chunk, sums.work_chunk, pricer.memo)
    acts: Num = 0.0
    for j, a in enumerate(sums.act_chunk):
        acts = acts + counts[j] * a
    cat = {"parameters": sums.params, "gradients": pricer.gamma * sums.grads,
           "optimizer_states": 0.0 if f.swap_optimizer else sums.states, "activations": acts,
           "communication_buffers": sums.resident + sums.transient, "working_overhead": working, "reserve": 0.0}
    reserve, groups = reserve_bytes(r, acts + working, stage)
    cat["reserve"] = reserve
    opt_peak = sums.opt_base + r.options.comm_lib_per_group * groups
    source = partial(_layer_rows, rows, counts, pricer.gamma, f.swap_optimizer,
                     (working, sums.transient, reserve), ("", "", ""))
    return StageResult(index=stage, layer_source=source, bytes_by_category=cat, total=sum(cat.values()),
                       peak_vector=tuple(counts), peak_instant="", optimizer_step_peak=opt_peak,
                       layer_counts=pricer.layout.chunk_counts()[stage],
                       kinds=frozenset(row.item.kind for row in rows), explain=None)


def _layer_rows(rows: list[Row], counts: tuple[int, ...], gamma: float, swap: bool,
                stage_terms: tuple[float, float, float], notes: tuple[str, str, str]) -> tuple[LayerRow, ...]:
    """Per-layer rows at the peak point plus the synthetic working / buffers / reserve rows."""
    out = []
    for row in rows:
        n = counts[row.chunk]
        st = row.static
        item = row.item
        out.append(LayerRow(kind=item.kind, bytes=(st.parameters, gamma * st.gradients,
                                                   0.0 if swap else st.optimizer_states, n * row.act,
                                                   row.resident, 0.0, 0.0),
                            index=item.index if item.index >= 0 else None, chunk=row.chunk, option=item.option,
                            inflight=n))
    working, transient, reserve = stage_terms
    out.append(LayerRow("working", (0, 0, 0, 0, 0, working, 0), note=notes[0]))
    out.append(LayerRow("buffers", (0, 0, 0, 0, transient, 0, 0), note=notes[1]))
    out.append(LayerRow("reserve", (0, 0, 0, 0, 0, 0, reserve), note=notes[2]))
    return tuple(out)


def _select_point_vector(points: list[Point], act_chunk: list[Num], work: list[Num],
                         memo: dict | None = None) -> tuple[tuple[Num, ...], Num]:
    """The peak point per candidate: for each set of candidates sharing their points (one micro-batch count),
    values[P, C] = N[P, vp] @ A[vp, C] + W[chunk_P, C]; the first maximum wins (ties to the earliest point).
    ``memo`` (the pricer's) keeps each validity mask's candidate indices across the stages of a group."""
    size = np.broadcast_shapes(*[np.shape(x) for x in (*act_chunk, *work)], *[np.shape(pt.valid) for pt in points])
    acts = np.stack([np.broadcast_to(np.asarray(a, dtype=np.float64), size) for a in act_chunk]).reshape(
        len(act_chunk), -1)
    works = np.stack([np.broadcast_to(np.asarray(w_, dtype=np.float64), size) for w_ in work]).reshape(len(work), -1)
    n = acts.shape[1]
    vp = len(act_chunk)
    out_counts = np.zeros((vp, n))
    out_work = np.zeros(n)
    groups: dict[int, list[Point]] = {}
    for pt in points:  # points of one micro-batch count share their validity mask object
        groups.setdefault(id(pt.valid), []).append(pt)
    memo = {} if memo is None else memo
    for pts in groups.values():
        idx = mask_index(pts[0].valid, size, memo)
        if not index_size(idx):
            continue
        counts = np.array([pt.counts for pt in pts], dtype=np.float64)       # [P, vp]
        chunk = np.array([pt.backward_chunk for pt in pts], dtype=np.int64)  # [P]
        sub = works[:, idx]                                                  # [vp, C_m]
        values = counts @ acts[:, idx] + sub[chunk]                          # [P, C_m]
        best = np.argmax(values, axis=0)
        out_counts[:, idx] = counts[best].T
        out_work[idx] = sub[chunk[best], np.arange(sub.shape[1])]
    return tuple(out_counts[j].reshape(size) for j in range(vp)), out_work.reshape(size)


def process_groups(r: Resolved, stage: int) -> int:
    """Distinct groups of size > 1 a rank belongs to (D6)."""
    par, f, d = r.par, r.flags, r.dims
    sizes = [par.t, par.cp, dense_domain(f, par), par.p]
    if d.moe:
        sizes += [par.ep, par.etp, par.edp]
    if f.sharding_mode == "hsdp":
        sizes.append(par.d_rep)
    groups = sum(gt(x, 1) for x in sizes)
    if d.tie and par.p > 1 and stage in (0, par.p - 1):
        groups += 1  # the embedding group of a tied table on two stages
    return groups


def reserve_bytes(r: Resolved, dynamic: float, stage: int, groups: int | None = None) -> tuple[float, int]:
    """[RESERVE] reserve_fixed + frag_fraction·(activations + working) + comm_lib_per_group·groups (D6);
    ``groups`` when the caller already counted them."""
    opts = r.options
    if groups is None:
        groups = process_groups(r, stage)
    return opts.reserve + opts.frag_fraction * dynamic + opts.comm_lib_per_group * groups, groups


def optimizer_step_peak(r: Resolved, rows: list[Row], resident: float, groups: int) -> float:
    """[S-OPT] parameters + gradients (γ = 1) + states (÷ swap_times) + temporaries + resident gathered
    weights + the fixed and comm-library parts of the reserve (§5.5, D25, D48)."""
    f = r.flags
    params = sum(row.static.parameters for row in rows)
    grads = sum(row.static.gradients for row in rows)
    states = sum(row.static.optimizer_states for row in rows)
    if f.swap_optimizer:
        states /= f.swap_times
    if f.optimizer_impl == "foreach":
        temps = sum(row.static.opt_temporaries for row in rows)
    elif f.optimizer_impl == "forloop":
        divisor = r.par.os if f.sharding_mode not in ("none",) else 1
        temps = max_all([2 * 4 * row.local.largest / divisor for row in rows if not row.local.frozen])
    else:
        temps = 0.0
    return params + grads + states + temps + resident + r.options.reserve + r.options.comm_lib_per_group * groups


# ------------------------------------------------------------------------------------------ explain
def stage_explain(pricer: StagePricer, stage: int, cat: dict[str, float], layer_rows: tuple[LayerRow, ...],
                  point: str, rows: list[Row]) -> Quantity:
    """The stage total as a sum of categories, each a sum over its rows with the formula and the values
    substituted (§2.7). Built only in scalar mode."""
    par = pricer.r.par
    children = []
    for k, name in enumerate(CATEGORIES):
        leaves = []
        for lr, row in zip(layer_rows, [*rows, None, None, None], strict=False):
            value = lr.bytes[k]
            if not value:
                continue
            label = f"{lr.kind}" + (f" {lr.index}" if lr.index is not None else "") + \
                (f" chunk {lr.chunk}" if par.vp > 1 else "")
            leaves.append(_leaf(pricer, name, label, value, row, lr, rows))
        children.append(sum_node(name, leaves))
    total = sum_node(f"stage {stage} total", children, "M-STAGE", note=point)
    total.inputs = dict(cat)
    return total


def _leaf(pricer: StagePricer, category: str, label: str, value: float, row: Row | None, lr: LayerRow,
          rows: list[Row]) -> Quantity:
    r = pricer.r
    w, par, f, d = r.widths, r.par, r.flags, r.dims
    if row is None:
        return _stage_level_leaf(pricer, category, label, value, lr, rows)
    loc = row.local
    sh = pricer.divisors
    local = {"E_d": loc.dense, "E_e": loc.expert}
    if loc.base_frozen and category in ("parameters", "gradients", "optimizer_states"):
        return _peft_leaf(pricer, category, label, value, loc)
    if category == "parameters":
        stored = Quantity("stored", value, "S-LAYER.params", {"β_p": w.p, **local, "sh_p": sh[0], "sh_pe": sh[3]})
        eight = fp8_weight_bytes(loc, w, f, sh)
        if not eight:
            stored.label = label
            return stored
        stored.value = value - eight
        fp8 = Quantity(f"FP8 weights ({f.feat.fp8})", eight, "S-FP8",
                       {"β_8": f.feat.fp8_weight_bytes, "β_p": w.p, "E_8": loc.fp8 + loc.fp8_expert, "sh_p": sh[0],
                        **({"len": f.feat.fp8_amax_history} if f.feat.fp8 == "delayed" else {})})
        return Quantity(label, value, "S-LAYER.params", children=[stored, fp8], op="sum")
    if category == "gradients":
        return Quantity(label, value, "S-LAYER.grads", {"γ": pricer.gamma, "β_g": w.g, **local, "sh_g": sh[1],
                                                         "sh_ge": sh[4]})
    if category == "optimizer_states":
        return Quantity(label, value, "S-LAYER.opt", {"n_os": w.n_os, "β_os": w.os, "β_m": w.m, **local,
                                                       "sh_o": sh[2], "sh_oe": sh[5]})
    if category == "activations":
        if lr.option == "full":
            d_in = par.t if f.slice_full_input else par.sp_div
            return Quantity(label, value, "A-FULL", {"n_j": lr.inflight, "β_r": w.r, "h": d.h, "T": pricer.T,
                                                      "d_in": d_in}, note="full recompute keeps the layer input")
        sums = pricer.sums(row.item, lr.option)
        inputs = {"n_j": lr.inflight, "T": pricer.T, "Σ_SP": sums.sp, "sp_div": par.sp_div, "Σ_TP": sums.tp,
                  "t": par.t, "Σ_REP": sums.rep, "Σ_V": sums.v, "v_pad": pricer.vpad, "t_V": pricer.t_v,
                  "R": pricer.R, "Σ_EXP": sums.exp, "Σ_EXPT": sums.expt, "etp": par.etp, "β_c": w.c,
                  "casts": loc.cast if sums.cast else 0}
        feat = f.feat
        fp8 = f"; {feat.fp8} FP8 linear inputs at β_8 = {feat.fp8_act_bytes:g} B [A-FP8]" if \
            feat.fp8_on and feat.fp8_impl == "te" else ""
        return Quantity(label, value, "A-LAYER", inputs,
                        note=f"option {lr.option}; slot sums in bytes per token{fp8}")
    return Quantity(label, value, "C-BUF.resident", {"β_c": w.c, **local}, note="weights kept gathered (mf_op)")


def _peft_leaf(pricer: StagePricer, category: str, label: str, value: float, loc: Local) -> Quantity:
    """A PEFT row's static bytes: the frozen (maybe NF4) base and its trainable adapters (P-LORA, P-NF4)."""
    w, sh = pricer.r.widths, pricer.divisors
    adapters = {"E_a": loc.adapters}
    if category == "parameters":
        return Quantity(label, value, "S-LAYER.params.peft", {"β_p": w.p, "β_a": w.a, "β_q": w.q, "E_d": loc.dense,
                                                               **adapters, "E_q": loc.quantized, "E_e": loc.expert,
                                                               "E_qe": loc.quantized_expert, "sh_p": sh[0],
                                                               "sh_pe": sh[3]})
    if category == "gradients":
        return Quantity(label, value, "S-LAYER.grads.peft", {"γ": pricer.gamma, "β_g": w.g, **adapters,
                                                              "sh_g": sh[1]})
    master = 0.0 if w.a >= 4 else w.m
    return Quantity(label, value, "S-LAYER.opt.peft", {"n_os": w.n_os, "β_os": w.os, "β_m": master, **adapters,
                                                        "sh_o": sh[2]})


def _stage_level_leaf(pricer: StagePricer, category: str, label: str, value: float, lr: LayerRow,
                      rows: list[Row]) -> Quantity:
    r = pricer.r
    if category == "communication_buffers":
        if not rows:
            return Quantity(label, value, "C-BUF", note=lr.note)
        top = max(rows, key=lambda row: row.transient)
        names = (("SP gather", "C-BUF.sp"), ("CP exchange", "C-BUF.cp"), ("EP dispatch/combine", "C-BUF.ep"),
                 ("weight re-gather", "C-BUF.dp"), ("PP send/recv", "C-BUF.pp"))
        children = [Quantity(n, float(v), fid) for (n, fid), v in zip(names, top.parts, strict=True) if v]
        exact = abs(sum(c.value for c in children) - value) <= 1e-9 * max(1.0, value)
        return Quantity(label, value, "C-BUF", children=children, op="sum" if children and exact else "formula",
                        note=lr.note if exact else f"{lr.note}; children: the largest layer's terms")
    if category == "working_overhead":
        return Quantity(label, value, "W-BWD", note=f"largest need at {lr.note}" if lr.note else "")
    groups = process_groups(r, int(label.split()[-1])) if label.split()[-1].isdigit() else None
    opts = r.options
    return Quantity(label, value, "RESERVE", {"reserve_fixed": opts.reserve, "frag_fraction": opts.frag_fraction,
                                              "comm_lib_per_group": opts.comm_lib_per_group,
                                              **({"groups": groups} if groups is not None else {})}, note=lr.note)


# ------------------------------------------------------------------------------------------ verdict
def assemble(r: Resolved, layout: Layout, stages: tuple[StageResult, ...], step: StepTime | None = None) -> Result:
    peak_stage = max(range(len(stages)), key=lambda i: (stages[i].total, -i))
    peak = stages[peak_stage].total
    opt_peak = max(s.optimizer_step_peak for s in stages)
    limit = "optimizer_step" if opt_peak > peak else "peak"
    decisive = max(peak, opt_peak)
    counts = parameter_counts(r.model, r.dims)
    warnings = list(r.warnings) + list(layout.warnings)
    return Result(
        stages=stages, peak_stage=peak_stage, peak_bytes=peak, budget=r.budget, capacity=r.capacity,
        fits=decisive <= r.budget, headroom=r.budget - decisive, limit=limit,
        world_size=int(r.par.world), global_batch_size=int(r.strategy.global_batch_size),
        parameters_total=counts.total, parameters_mtp=counts.mtp, parameters_active=counts.active,
        warnings=tuple(dict.fromkeys(warnings)), assumptions=r.assumptions, echo_source=partial(_echo, r, counts),
        step=step)


def _echo(r: Resolved, counts: Any) -> dict[str, Any]:
    model = {k: v for k, v in r.model.to_dict().items() if v not in (None, (), [], False) or k == "tie_embeddings"}
    model.pop("layers", None)
    model["family"] = r.profile.name
    model["parameters_total"] = counts.total
    model["parameters_active"] = counts.active
    model["parameters_mtp"] = counts.mtp
    strategy = r.strategy.to_dict()
    strategy["schedule"] = r.flags.schedule
    strategy["etp"] = r.par.etp
    strategy["global_batch_size"] = r.strategy.global_batch_size
    strategy["world_size"] = r.strategy.world_size
    hardware = {"device": r.hardware.id or r.hardware.name, "name": r.hardware.name, "capacity": r.capacity,
                "figures": figures_json(r.hardware, runtime_of(r.options.framework))}
    options = r.options.to_dict()
    options["grad_persistence"] = r.flags.persistence
    options["optimizer_impl"] = r.flags.optimizer_impl
    return {"model": model, "strategy": strategy, "hardware": hardware, "options": options}


__all__ = ["estimate", "layout_inputs", "max_node", "rule_context"]
