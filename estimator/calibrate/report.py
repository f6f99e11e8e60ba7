"""The text and JSON ``sapp calibrate`` prints: the fitted terms with their sources, what the logs could not
determine, and every stage before → after against the measurement."""

from __future__ import annotations

from typing import Any

from ..units import GiB
from .fit import Calibration


def _gib(value: float | None) -> str:
    return "–" if value is None else f"{value / GiB:.2f}"


def _error(model: float, measured: float | None) -> str:
    return "" if not measured else f" ({model / measured - 1:+.1%})"


def render_calibration(cal: Calibration, path: str | None) -> str:
    p = cal.profile
    lines = [f"calibration {p.name}: {p.device} · {p.framework} · {p.provenance}", ""]
    if p.terms:
        lines.append("fitted:")
        for key, term in p.terms.items():
            value = f"{term.value / GiB:.2f} GiB" if key == "runtime_context" else f"{term.value:.4g}"
            lines.append(f"  {key} = {value}   ← {term.source}")
    else:
        lines.append("fitted: nothing (the logs determine none of the terms)")
    if p.not_determined:
        lines.append("not determined:")
        lines.extend(f"  {why}" for why in p.not_determined)
    lines.append("")
    header = ("stage", "tensor log", "allocator log", "device log", "allocator before → after",
              "device before → after")
    rows = []
    for s in cal.stages:
        measured_alloc = s.allocator
        rows.append((str(s.stage), _gib(s.tensor), _gib(s.allocator), _gib(s.device),
                     f"{_gib(s.before.allocator_peak)}{_error(s.before.allocator_peak, measured_alloc)} → "
                     f"{_gib(s.after.allocator_peak)}{_error(s.after.allocator_peak, measured_alloc)}",
                     f"{_gib(s.before.device_peak)}{_error(s.before.device_peak, s.device)} → "
                     f"{_gib(s.after.device_peak)}{_error(s.after.device_peak, s.device)}"))
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(header)]
    lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)) + "   [GiB]")
    lines.extend("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
    if cal.step_measured is not None and cal.step_before is not None and cal.step_after is not None:
        lines.append("")
        lines.append(f"step time: log {cal.step_measured:.3g} s; estimate {cal.step_before:.3g} s "
                     f"({cal.step_before / cal.step_measured - 1:+.1%}) → {cal.step_after:.3g} s "
                     f"({cal.step_after / cal.step_measured - 1:+.1%})")
    if cal.notes:
        lines.append("")
        lines.extend(f"note: {n}" for n in cal.notes)
    if path:
        lines.append("")
        lines.append(f"saved {path}: later estimates on {p.device} with {p.framework} apply it")
    return "\n".join(lines)


def calibration_json(cal: Calibration, path: str | None) -> dict[str, Any]:
    p = cal.profile
    return {
        "schema": "sapp.calibration/1", "name": p.name, "device": p.device, "framework": p.framework,
        "created": p.created, "logs": list(p.logs), "profile": path,
        "terms": {k: {"value": t.value, "from": str(t.source)} for k, t in p.terms.items()},
        "not_determined": [str(why) for why in p.not_determined],
        "stages": [{"stage": s.stage, "tensor_log": s.tensor, "allocator_log": s.allocator, "device_log": s.device,
                    "allocator_before": s.before.allocator_peak, "allocator_after": s.after.allocator_peak,
                    "device_before": s.before.device_peak, "device_after": s.after.device_peak}
                   for s in cal.stages],
        "step_time_s": {"log": cal.step_measured, "before": cal.step_before, "after": cal.step_after},
        "notes": list(cal.notes)}


__all__ = ["calibration_json", "render_calibration"]
