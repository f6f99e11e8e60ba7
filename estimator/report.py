"""Plain-text rendering of a Result: the per-stage table the CLI prints (GiB, peak stage marked)."""

from __future__ import annotations

from .hardware import runtime_of
from .hardware_figures import device_figures, provisional_summary
from .host import host_text
from .parsed import ParsedConfig
from .result import CATEGORIES, Result
from .units import GiB, fmt_gib

_SHORT = {"parameters": "params", "gradients": "grads", "optimizer_states": "optim", "activations": "activ",
          "communication_buffers": "comm", "working_overhead": "working", "reserve": "reserve"}


def _billions(n: int) -> str:
    return f"{n / 1e9:,.2f} B"


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
    header = ["stage", "layers"] + [_SHORT[c] for c in CATEGORIES] + ["total GiB", "opt-step"]
    rows = []
    for s in result.stages:
        marker = "*" if s.index == result.peak_stage else " "
        layers = "+".join(str(c) for c in s.layer_counts)
        kinds = s.kinds
        if "embedding" in kinds:
            layers = "E+" + layers
        if "output" in kinds:
            layers += "+O"
        if "mtp" in kinds:
            layers += "+MTP"
        cells = [f"{marker}{s.index}", layers] + [f"{s.bytes_by_category[c] / GiB:.2f}" for c in CATEGORIES]
        cells += [f"{s.total / GiB:.2f}", f"{s.optimizer_step_peak / GiB:.2f}"]
        rows.append(cells)
    widths = [max(len(header[k]), *(len(r[k]) for r in rows)) for k in range(len(header))]
    lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
    lines.append("")
    peak = result.peak_bytes
    verdict = "fits" if result.fits else "DOES NOT FIT"
    limit = " (the optimizer step decides)" if result.limit == "optimizer_step" else ""
    head = f"headroom {fmt_gib(result.headroom)}" if result.fits else f"over budget by {fmt_gib(-result.headroom)}"
    lines.append(f"peak {fmt_gib(peak)} on stage {result.peak_stage} (*): {verdict}, {head}{limit}; "
                 f"in GiB (2^30 bytes)")
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
