"""``sapp calibrate``: fit the device-level terms and the matmul efficiency that measured logs determine, show
every stage before → after, and keep the result as a calibration profile.

What each kind of line determines:

- ``max allocated`` with ``max reserved`` (Megatron/MindSpeed memory line, memory_stats JSON, MindSpore "Used"
  and "Actual" peaks): the allocator slack, as a factor on the modelled slack (a fraction of the tensor peak
  where the model has none: MindSpore's static plan); the measured tensor peak is compared, not fitted;
- ``max reserved`` alone (torchtitan's ``memory:``): the slack, assuming the estimate's tensor peak (said so);
- CANN plog module statistics: the HCCL buffers (a factor on the documented rule) and the runtime context (every
  device module but APP and HCCL);
- step times (``elapsed time per iteration``, ``per_step_time``, torchtitan's ``tps``): the matmul efficiency
  that makes the estimated step time the measured median (later half of the steps, past the warm-up).

Ranks map to stages with the pipeline outermost (Megatron, torchtitan and MindSpore order ranks so):
``stage = rank // (world / pp)``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from ..estimate import estimate
from ..export import write_atomic
from ..messages import Text, msg
from ..parsed import ParsedConfig
from ..result import Result, StageResult
from .logs import LogError, LogReading
from .profile import Profile, Term, apply_profile, check_name

EFF_RANGE = (0.05, 1.0)


@dataclass(frozen=True)
class StageFit:
    stage: int
    tensor: float | None        # measured max allocated
    allocator: float | None     # measured max reserved
    device: float | None        # measured device use (plog), when known
    before: StageResult
    after: StageResult


@dataclass(frozen=True)
class Calibration:
    profile: Profile
    stages: tuple[StageFit, ...]
    step_measured: float | None
    step_before: float | None
    step_after: float | None
    notes: tuple[str, ...]


def _estimate(parsed: ParsedConfig, eff: float | None = None) -> Result:
    hw = parsed.hardware if eff is None else parsed.hardware.replace(eff_matmul=eff)
    return estimate(parsed.model, parsed.strategy, hw, parsed.options)


def _uncalibrated(parsed: ParsedConfig) -> ParsedConfig:
    opts = parsed.options.replace(calibration=None, calibration_device=None, allocator_slack_factor=None,
                                  allocator_slack_fraction=None, comm_library_factor=None)
    return replace(parsed, options=opts,
                   assumptions=tuple(a for a in parsed.assumptions if a.field != "options.calibration"))


# ------------------------------------------------------------------------------------------ matching
def _plan_values(parsed: ParsedConfig) -> dict[str, float]:
    st, m = parsed.strategy, parsed.model
    values: dict[str, float | None] = {
        "tp": st.tp, "pp": st.pp, "cp": st.cp, "ep": st.ep, "dp": st.dp, "world": st.world_size,
        "num_layers": m.num_layers, "hidden_size": m.hidden_size, "num_attention_heads": m.num_attention_heads,
        "ffn_hidden_size": m.ffn_hidden_size, "num_experts": m.num_experts or None, "seq_length": st.seq_length,
        "global_batch_size": st.global_batch_size, "micro_batch_size": st.micro_batch_size,
        "micro_batches": st.micro_batches}
    return {k: float(v) for k, v in values.items() if v is not None}


def check_match(parsed: ParsedConfig, readings: list[LogReading]) -> None:
    """Refuse a log whose run is not this plan, naming the first difference."""
    plan = _plan_values(parsed)
    for reading in readings:
        stated = dict(reading.stated)
        if "dp_shard" in stated or "dp_replicate" in stated:  # torchtitan's mesh
            shard = stated.pop("dp_shard", (1.0, ""))
            rep = stated.pop("dp_replicate", (1.0, ""))
            stated["dp"] = (shard[0] * rep[0], shard[1] or rep[1])
        for key, (value, where) in stated.items():
            if key in plan and plan[key] != value:
                raise LogError(msg("fit.run-had-config", where=where, key=key, value=value, plan=plan[key]))
        world = plan["world"]
        for sample in reading.memory:
            if sample.rank is not None and sample.rank >= world:
                raise LogError(msg("fit.rank-does-exist", where=sample.where, rank=sample.rank, world=world))


def _stage_of(rank: int | None, parsed: ParsedConfig, where: str) -> int:
    pp = parsed.strategy.pp
    if rank is None:
        if pp == 1:
            return 0
        raise LogError(msg("fit.line-does-say", where=where, pp=pp))
    return int(rank // (parsed.strategy.world_size // pp))


# ------------------------------------------------------------------------------------------ fitting
def _per_stage(parsed: ParsedConfig, readings: list[LogReading]) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {}
    for reading in readings:
        for sample in reading.memory:
            got = out.setdefault(_stage_of(sample.rank, parsed, sample.where), {})
            if sample.max_allocated is not None:
                got["tensor"] = max(got.get("tensor", 0.0), sample.max_allocated)
            if sample.max_reserved is not None:
                got["allocator"] = max(got.get("allocator", 0.0), sample.max_reserved)
        ranks: dict[int | None, dict[str, float]] = {}
        for (device, module), (peak, where) in reading.modules.items():
            rank = reading.rank if reading.rank is not None else _rank_of_device(device, parsed, where)
            ranks.setdefault(rank, {})[module] = peak
        for rank, modules in ranks.items():
            got = out.setdefault(_stage_of(rank, parsed, reading.path), {})
            got["hccl"] = modules.get("HCCL", 0.0)
            got["context"] = sum(v for k, v in modules.items() if k not in ("APP", "HCCL"))
            got["app"] = modules.get("APP", 0.0)
    return out


def _rank_of_device(device: int | None, parsed: ParsedConfig, where: str) -> int | None:
    """A plog names the device on its node: that is the rank only when the run has one node."""
    if device is None or parsed.strategy.world_size <= parsed.hardware.devices_per_node:
        return device
    raise LogError(msg("fit.plog-names-device", where=where, device=device))


def _step_time(parsed: ParsedConfig, readings: list[LogReading]) -> tuple[float | None, str]:
    times = [(t, w) for r in readings for t, w in r.step_times]
    if times:
        later = [t for t, _w in times[len(times) // 2:]]  # past the first steps' compilation and warm-up
        return statistics.median(later), times[-1][1]
    tps = [x for r in readings for x in r.tokens_per_s]
    if tps:
        st = parsed.strategy
        tokens = st.global_batch_size * st.seq_length / st.world_size
        later = tps[len(tps) // 2:]
        return tokens / statistics.median(later), f"{readings[0].path} (tps)"
    return None, ""


def _fit_efficiency(parsed: ParsedConfig, measured: float) -> tuple[float | None, Text]:
    """The eff_matmul whose estimated step time is ``measured`` (bisection; step time falls as it rises)."""
    def step(eff: float) -> float:
        return float(_estimate(parsed, eff).step_time_s or 0.0)

    lo, hi = EFF_RANGE
    fastest, slowest = step(hi), step(lo)
    if measured < fastest:
        return None, msg("fit.step-too-fast", measured=f"{measured:.3g}", eff=f"{hi:g}",
                         step=f"{fastest:.3g}")
    if measured > slowest:
        return None, msg("fit.step-too-slow", measured=f"{measured:.3g}", eff=f"{lo:g}",
                         step=f"{slowest:.3g}")
    for _ in range(40):
        mid = (lo + hi) / 2
        if step(mid) > measured:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2, ""


def calibrate(parsed: ParsedConfig, readings: list[LogReading], name: str | None = None,
              now: datetime | None = None) -> Calibration:
    """Fit the terms the logs determine; refuse logs of another plan. Nothing is written (see ``save``)."""
    base = _uncalibrated(parsed)
    check_match(base, readings)
    result = _estimate(base)
    before = result.stages
    measured = _per_stage(base, readings)
    terms: dict[str, Term] = {}
    missing: list[Text] = []
    notes: list[str] = [n for r in readings for n in r.notes]
    where = ", ".join(sorted({Path(r.path).name for r in readings}))

    # allocator slack
    model_slack = measured_slack = tensors = 0.0
    static = all(s.device.get("allocator") == "static" for s in before)
    assumed_tensor = False
    for stage, got in measured.items():
        if "allocator" not in got:
            continue
        tensor = got.get("tensor")
        if tensor is None:
            tensor, assumed_tensor = before[stage].tensor_peak, True
        measured_slack += got["allocator"] - tensor
        model_slack += before[stage].allocator_slack
        tensors += tensor
    if tensors:
        if static or model_slack <= 0:
            terms["allocator_slack_fraction"] = Term(max(0.0, measured_slack) / tensors,
                                                     msg("fit.from-slack-fraction", where=where))
        else:
            terms["allocator_slack_factor"] = Term(max(0.0, measured_slack) / model_slack,
                                                   msg("fit.from-slack-factor", where=where))
        if assumed_tensor:
            notes.append("the logs give max reserved only: the slack assumes the estimate's tensor peak")
    else:
        missing.append(msg("fit.missing-slack"))
    for stage, got in sorted(measured.items()):
        if "tensor" in got:
            error = before[stage].tensor_peak / got["tensor"] - 1
            notes.append(f"stage {stage}: the estimate's tensor peak is {error:+.1%} from the log's max "
                         "allocated (the tensor model is not fitted)")

    # runtime context and communication buffers from CANN's module statistics
    plog = [got for got in measured.values() if "hccl" in got]
    if plog:
        terms["runtime_context"] = Term(statistics.mean(g["context"] for g in plog),
                                        msg("fit.from-plog-context", where=where))
        modelled = sum(before[s].bytes_by_category["comm_library"] for s, g in measured.items() if "hccl" in g)
        if modelled > 0:
            terms["comm_library_factor"] = Term(sum(g["hccl"] for g in plog) / modelled,
                                                msg("fit.from-plog-hccl", where=where))
    else:
        missing.append(msg("fit.missing-plog"))

    # step time → matmul efficiency
    step_measured, step_where = _step_time(base, readings)
    if step_measured is not None:
        eff, why = _fit_efficiency(base, step_measured)
        if eff is None:
            missing.append(why)
        else:
            terms["eff_matmul"] = Term(eff, msg("fit.from-step", where=step_where,
                                                step=f"{step_measured:.4g}"))
    else:
        missing.append(msg("fit.missing-step"))

    stamp = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    device, framework = base.hardware.id or base.hardware.name, base.options.framework
    profile = Profile(check_name(name or f"{device}-{framework}-{stamp[:10]}"), stamp, device, framework,
                      tuple(str(Path(r.path).resolve()) for r in readings), terms, tuple(missing),
                      {k: v for k, v in _plan_values(base).items()} | {"model": base.model.name})
    calibrated = apply_profile(base, profile)
    result_after = _estimate(calibrated)
    after = result_after.stages
    stages = tuple(StageFit(i, measured.get(i, {}).get("tensor"), measured.get(i, {}).get("allocator"),
                            _device_use(measured.get(i, {})), before[i], after[i]) for i in range(len(before)))
    return Calibration(profile, stages, step_measured, result.step_time_s, result_after.step_time_s,
                       tuple(notes))


def _device_use(got: dict[str, float]) -> float | None:
    if "hccl" not in got:
        return None
    return got.get("app", 0.0) + got["hccl"] + got["context"]


def save(calibration: Calibration, folder: Path) -> Path:
    """Write the profile as ``folder/NAME.yaml``, atomically (a previous one is kept as NAME.yaml.bak)."""
    path = folder / f"{calibration.profile.name}.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic({str(path): calibration.profile.to_yaml()}, backup=True)
    return path


__all__ = ["Calibration", "StageFit", "calibrate", "check_match", "save"]
