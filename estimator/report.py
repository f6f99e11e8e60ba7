"""Plain-text rendering of a Result: the per-stage table the CLI prints (GiB, peak stage marked)."""

from __future__ import annotations

from .hardware import runtime_of
from .hardware_figures import device_figures, provisional_summary
from .host import host_text
from .palette import CATEGORY_SHORT
from .parsed import ParsedConfig
from .result import CATEGORIES, Result
from .units import GiB, fmt_gib


def _billions(n: int) -> str:
    return f"{n / 1e9:,.2f} B"


def step_line(result: Result) -> str:
    """Step time, tokens/s/device and MFU with the band the device's efficiency ranges give, at the precision the
    band allows."""
    assert result.throughput is not None
    return (result.throughput.line + f" of the {result.mfu_peak} peak" +
            (" (low–high from the device's efficiency bands)" if result.step_band else ""))


def render_table(parsed: ParsedConfig, result: Result) -> str:
    st, hw, opts = parsed.strategy, parsed.hardware, parsed.options
    lines = []
    name = parsed.model.name
    lines.append(f"{name} · {opts.framework} · {hw.name}: capacity {fmt_gib(result.capacity)}, "
                 f"budget {fmt_gib(result.budget)}")
    degrees = f"dp {st.dp} × tp {st.tp} × pp {st.pp} × cp {st.cp}"
    extras = []
    if parsed.model.is_moe:
        extras.append(f"ep {st.ep}")
    if st.vpp > 1:
        extras.append(f"vpp {st.vpp}")
    if st.sequence_parallel:
        extras.append("SP")
    lines.append(f"world {result.world_size} = {degrees}" + (" · " + " · ".join(extras) if extras else "") +
                 f" · global batch {result.global_batch_size} (mbs {st.micro_batch_size} × dp {st.dp} × "
                 f"m {st.micro_batches}" + (f" × acc {st.n_acc}" if st.n_acc > 1 else "") +
                 f") · seq {st.seq_length} · {st.schedule_name}")
    params = f"parameters {_billions(result.parameters_total)}"
    if result.parameters_active != result.parameters_total:
        params += f", {_billions(result.parameters_active)} active"
    if result.parameters_mtp:
        params += f", MTP {_billions(result.parameters_mtp)}"
    lines.append(params)
    runtime = runtime_of(opts.framework)
    figures = {f.path: f for f in device_figures(hw, runtime)}
    shown = [f"{f.label} {f.full_text} [{f.source.kind}]" for key in ("peak_flops.bf16", "peak_flops.fp8",
                                                                   "hbm_bandwidth", "eff_matmul")
             if (f := figures.get(key)) is not None]
    lines.append("device: " + "; ".join(shown))
    provisional = provisional_summary(hw, runtime)
    if provisional:
        lines.append(f"device figures {provisional} (replace them with `sapp calibrate` or a user preset)")
    lines.append("")
    tensor_cats = CATEGORIES[:6]
    header = ["stage", "layers"] + [CATEGORY_SHORT[c] for c in tensor_cats] + ["tensor", "slack", "ctx+libs", "device",
                                                                       "band"]
    rows = []
    for s in result.stages:
        marker = "*" if s.index == result.peak_stage else " "
        layers = "+".join(str(c) for c in s.layers_per_chunk)
        kinds = s.kinds
        if "embedding" in kinds:
            layers = "E+" + layers
        if "output" in kinds:
            layers += "+O"
        if "mtp" in kinds:
            layers += "+MTP"
        step = "^" if s.optimizer_step_peak > s.total else ""  # the optimizer step is this stage's peak
        cells = [f"{marker}{s.index}", layers] + [f"{s.bytes_by_category[c] / GiB:.2f}" for c in tensor_cats]
        cells += [f"{s.tensor_peak / GiB:.2f}{step}", f"{s.allocator_slack / GiB:.2f}",
                  f"{s.outside_allocator / GiB:.2f}", f"{s.device_peak / GiB:.2f}",
                  f"{s.device_peak_low / GiB:.1f}–{s.device_peak_high / GiB:.1f}"]
        rows.append(cells)
    widths = [max(len(header[k]), *(len(r[k]) for r in rows)) for k in range(len(header))]
    lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
    lines.append("")
    verdict = "fits" if result.fits else "DOES NOT FIT"
    limit = " (the optimizer step decides)" if result.limit == "optimizer_step" else ""
    head = f"headroom {fmt_gib(result.headroom)}" if result.fits else f"over budget by {fmt_gib(-result.headroom)}"
    lines.append(f"device peak {fmt_gib(result.peak_bytes)} on stage {result.peak_stage} (*): {verdict}, {head}"
                 f"{limit}; tensor peak {fmt_gib(result.tensor_peak_bytes)}, allocator peak "
                 f"{fmt_gib(result.allocator_peak_bytes)}; in GiB (2^30 bytes); ^ = the optimizer step is the "
                 "stage's peak")
    if result.step_time_s is not None:
        lines.append(step_line(result))
    device = result.stages[result.peak_stage].device
    if device.get("allocator_source"):
        lines.append(f"allocator: {device['allocator_source']}")
    if result.framework_limit is not None:
        lines.append(f"framework memory pool {fmt_gib(result.framework_limit)}: the allocator peak must fit it, the "
                     f"device peak the capacity")
    host = host_text(result.host)
    if host:
        lines.append(f"host memory (offload and swap): {host}")
    warnings = [*parsed.warnings, *result.warnings]
    if warnings:
        lines.append("")
        lines.append("warnings:")
        lines.extend(f"  {w}" for w in warnings)
    assumptions = [*parsed.assumptions, *result.assumptions]
    if assumptions:
        lines.append("")
        lines.append("assumptions:")
        lines.extend(f"  {a}" for a in assumptions)
    return "\n".join(lines)
