"""``estimate``: per-stage, per-layer, per-category memory of one plan, and its step time (docs/model.md).

Flow: resolve the inputs → validate the strategy (every violated rule at once) → build the layout → take the
schedule's in-flight profile → assemble every stage with the stage assembler (``assembly``: the same code the
search and the balancer run on arrays, here with one element) → time the step → the verdict against the budget.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from .assembly import profile_points
from .device.communicators import nvls_assumption
from .device.stages import price_stages
from .device.workspaces import te_assumption
from .errors import StrategyError
from .features import fp8_problem, peft_problem
from .hardware import Hardware, runtime_of
from .hardware_figures import figures_json
from .host import HostMemory, host_memory
from .kinds import base_of, tp_divisors
from .kinds import generation as kinds_generation
from .layout import Layout, layout_inputs
from .messages import msg
from .model import ModelSpec
from .options import RunOptions
from .params import ParameterCounts, parameter_counts
from .records import at_once
from .resolve import Resolved, dense_domain
from .result import Result, StageResult
from .reuse import key_of, resolved_layout, row_book
from .schedules import inflight_profile
from .stage import StagePricer, device_entry, kept_with, stage_rows
from .steptime import StepTime, step_seconds, step_time
from .strategy import Strategy
from .units import fmt_bytes
from .validate import RuleContext, context_of, violations
from .warnings import EstimateWarning


def estimate(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions | None = None,
             *, explain: bool | None = None, with_time: bool = True) -> Result:
    """Price one plan: memory per stage and (unless ``with_time`` is false) the step time.
    Raises StrategyError (every violated rule), LayoutError or ModelSpecError."""
    options = options or RunOptions()
    r, layout = resolved_layout(model, strategy, hardware, options)
    problems = violations(rule_context(r, layout))
    if problems:
        raise StrategyError(problems)
    par = r.par
    profile = inflight_profile(r.flags.schedule, par.p, par.vp, par.m, vpp_group=strategy.vpp_group,
                               n_s=par.n_s, overlap_moe_ep_comm=strategy.overlap_moe_ep_comm,
                               variant=options.vpp_variant)
    # the rows, and what is summed and timed from them alone, are kept for the next estimate that reads the same
    # (reuse.py: an edit of the micro-batch count, going back to an earlier plan)
    pricer = StagePricer(r, layout, row_book(r))
    want_explain = options.explain if explain is None else explain
    stages = price_stages(pricer, _points(profile), want_explain)
    if not with_time:
        return assemble(r, layout, stages, host=host_memory(r, stages))
    step = step_time(pricer)
    return assemble(r, layout, stages, step, host_memory(r, stages),
                    step_band(pricer) if r.hardware.has_band else None)


_POINTS: dict[int, tuple[tuple, list]] = {}


def _points(profile: tuple) -> list:
    """Each stage's replay points, made once per in-flight profile (``inflight_profile`` keeps its profiles)."""
    return kept_with(_POINTS, id(profile), profile, lambda: [profile_points(stage) for stage in profile], 256)


def step_band(pricer: StagePricer) -> tuple[float, float]:
    """[T-BAND] The step time with the device at the high and at the low end of its efficiency bands (matmul, HBM,
    links): the fastest and the slowest step the preset's measured efficiencies allow."""
    # the rows, their costs and FLOPs and what the chunks hold (the pricer's book) do not depend on the
    # efficiencies; only the times do, kept in the book per device
    return float(step_seconds(pricer, _band_end(pricer, "high"))), float(step_seconds(pricer, _band_end(pricer, "low")))


_BAND_ENDS: dict = {}


def _band_end(pricer: StagePricer, end: str) -> Hardware:
    """The plan's device at one end of its efficiency bands, made once per device record (kept by the object:
    the row costs keep their band's times per device object, ``stage.device_entry``, so a new plan on the same
    device — every edit — finds the band's ends' links and rates again, and its row costs' times by them)."""
    hardware = pricer.r.hardware
    ends = device_entry(_BAND_ENDS, hardware, dict)
    got = ends.get(end)
    if got is None:
        got = ends[end] = hardware.at_band(end)
    return got  # type: ignore[no-any-return]


def rule_context(r: Resolved, layout: Layout | None = None) -> RuleContext:
    d, par, st = r.dims, r.par, r.strategy
    kinds, divisors = _model_kinds(r.model)
    l_eff = d.n_lay + len(st.noop_layers) + (d.n_mtp if st.mtp_in_offset else 0) + \
        (2 if st.emb_out_in_offset else 0)
    return context_of(
        framework=r.fw.name, a=d.a, n_kv=d.n_kv, hff=d.hff if kinds & {"dense", "lin_dense"} else 0,
        hff_sh=d.hff_sh, hff_exp=d.hff_exp if d.moe else 0, n_exp=d.n_exp, moe=d.moe, l_eff=l_eff,
        has_layer_list=st.partition is not None or st.offset is not None, schedule=r.flags.schedule,
        cp_algo=r.flags.cp_algo, d=par.d, t=par.t, p=par.p, vp=par.vp, cp=par.cp, ep=par.ep, etp=par.etp, b=par.b,
        m=par.m, s=par.s, sp=par.sp, u=par.u, os=par.os, os_e=par.os_e, domain=dense_domain(r.flags, par),
        domain_e=par.edp, vpp_group=st.vpp_group or par.p, allow_underfilled=r.options.allow_underfilled_pipeline,
        fp8_problem=fp8_problem(st.fp8, r.fw.name, r.hardware.peak_flops, r.hardware.id or r.hardware.name),
        peft_problem=peft_problem(st), kind_divisors=divisors)


_KINDS: dict[tuple, tuple[frozenset[str], tuple[tuple[str, int], ...]]] = {}


def _model_kinds(model: ModelSpec) -> tuple[frozenset[str], tuple[tuple[str, int], ...]]:
    """The model's data kinds by their base, and the fields TP must divide for them (``tp_divisors``), kept per
    model (by value and type) and registry of layer kinds."""
    key = (key_of(model), kinds_generation())
    got = _KINDS.get(key)
    if got is None:
        if len(_KINDS) >= 64:
            _KINDS.clear()
        got = _KINDS[key] = (frozenset(base_of(k) for k in (*model.body_kinds(), *model.mtp_kinds())),
                             tp_divisors(model))
    return got


_COUNTS: dict[tuple, ParameterCounts] = {}


def _counts(r: Resolved) -> ParameterCounts:
    """``parameter_counts(r.model, r.dims)``, kept per model and dims (by value and type) and registry of layer
    kinds: an edit of the strategy finds them."""
    key = (key_of(r.model), key_of(r.dims), kinds_generation())
    got = _COUNTS.get(key)
    if got is None:
        if len(_COUNTS) >= 64:
            _COUNTS.clear()
        got = _COUNTS[key] = parameter_counts(r.model, r.dims)
    return got


# ------------------------------------------------------------------------------------------ verdict
def assemble(r: Resolved, layout: Layout, stages: tuple[StageResult, ...], step: StepTime | None = None,
             host: HostMemory | None = None, band: tuple[float, float] | None = None) -> Result:
    """[D-VERDICT] The peak is each stage's largest instant, the optimizer step included, as the device holds it
    (tensors + allocator slack + context + libraries). It fits when the device peak is within the budget; with a
    framework memory pool (MindSpore max_device_memory) the allocator peak must fit the pool and the device peak
    the capacity less the margin."""
    peak_stage = max(range(len(stages)), key=lambda i: (stages[i].device_peak, -i))
    winner = stages[peak_stage]
    peak = winner.device_peak
    limit = "optimizer_step" if winner.optimizer_step_peak > winner.total else "peak"
    opts = r.options
    pool = r.budget if opts.max_device_memory is not None and opts.budget_override is None else None
    device_budget = r.budget if pool is None else r.capacity - opts.margin
    headroom = device_budget - peak
    if pool is not None:
        headroom = min(pool - max(s.allocator_peak for s in stages), headroom)
    counts = _counts(r)
    warnings = list(r.warnings) + list(layout.warnings)
    if host is not None and host.fits is False:
        per_device = fmt_bytes(host.per_device)
        warnings.append(EstimateWarning("W-HOST-RAM", msg("W-HOST-RAM", per_node=fmt_bytes(host.per_node),
                                                          devices_per_node=host.devices_per_node, per_device=per_device,
                                                          value=fmt_bytes(host.ram_per_node or 0))))
    return at_once(  # Result(…), every field given: its instance dict set at once
        Result, stages=stages, peak_stage=peak_stage, peak_bytes=peak, budget=r.budget, capacity=r.capacity,
        fits=headroom >= 0, headroom=headroom, limit=limit,
        world_size=int(r.par.world), global_batch_size=int(r.strategy.global_batch_size),
        parameters_total=counts.total, parameters_mtp=counts.mtp, parameters_active=counts.active,
        warnings=tuple(dict.fromkeys(warnings)),
        assumptions=(*r.assumptions, *filter(None, [te_assumption(r), nvls_assumption(r)])),
        echo_source=partial(_echo, r, counts),
        step=step, host=host, framework_limit=pool, step_band=band, device_limit=device_budget)


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


__all__ = ["estimate", "layout_inputs", "rule_context", "stage_rows"]
