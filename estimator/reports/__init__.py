"""Shareable reports of a plan (issue 6, ``sapp report``): HTML with the chart inline, or Markdown with the
chart written beside it as SVG. Summary, strategy, per-stage table, step-time parts, warnings and
assumptions."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import quote

from ..hardware import runtime_of
from ..hardware_figures import device_figures
from ..host import host_text
from ..palette import CATEGORY_SHORT
from ..parsed import ParsedConfig
from ..result import CATEGORIES, Result
from ..units import GiB
from .svg import stage_chart

PART_LABELS = {"fwd": "forward", "bwd": "backward", "recompute": "recompute", "tp": "TP comm", "cp": "CP comm",
               "ep": "EP comm", "dp": "DP comm", "pp": "PP comm", "host": "host transfers", "bubble": "pipeline bubble",
               "optimizer": "optimizer step"}


URL_SAFE = ":/?#=&%.-_~+,;@"  # characters a figure's source link keeps as they are (parentheses are escaped)


def _summary(parsed: ParsedConfig, result: Result) -> list[tuple[str, str]]:
    st = parsed.strategy
    verdict = "fits" if result.fits else "does NOT fit"
    head = f"{result.headroom / GiB:.2f} GiB headroom" if result.fits else f"{-result.headroom / GiB:.2f} GiB over"
    rows = [
        ("Peak", f"{result.peak_bytes / GiB:.2f} GiB on stage {result.peak_stage} as the device holds it "
                 f"(band {result.device_peak_low_bytes / GiB:.2f}–{result.device_peak_high_bytes / GiB:.2f} GiB); "
                 f"tensor peak {result.tensor_peak_bytes / GiB:.2f} GiB (max allocated), allocator peak "
                 f"{result.allocator_peak_bytes / GiB:.2f} GiB (max reserved)"),
        ("Verdict", f"{verdict} ({head}; budget {result.budget / GiB:.2f} GiB of {result.capacity / GiB:.2f} GiB)"),
        ("Decided by", "the optimizer step" if result.limit == "optimizer_step" else "the forward/backward peak"),
        ("Devices", f"{result.world_size} = dp {st.dp} × tp {st.tp} × pp {st.pp} × cp {st.cp}"),
        ("Global batch", f"{result.global_batch_size} (micro-batch {st.micro_batch_size} × dp {st.dp} × "
                         f"{st.micro_batches} micro-batches × {st.n_acc} accumulation)"),
        ("Sequence", f"{st.seq_length} tokens, schedule {st.schedule_name}" +
                     (f", vpp {st.vpp}" if st.vpp > 1 else "")),
        ("Parameters", f"{result.parameters_total / 1e9:,.2f} B total, {result.parameters_active / 1e9:,.2f} B active"
                       + (f", MTP {result.parameters_mtp / 1e9:,.2f} B" if result.parameters_mtp else "")),
    ]
    host = host_text(result.host)
    if host:
        rows.append(("Host memory", host))
    if result.throughput is not None:
        shown = result.throughput
        rows.append(("Step time", f"{shown.step.with_band(' s')}, {shown.tokens.with_band()} tokens/s/device, "
                                  f"MFU {shown.mfu.with_band(' %')} of the {result.mfu_peak} peak"
                                  + (" (low–high from the device's efficiency bands)" if result.step_band else "")))
    return rows


def _stage_rows(result: Result) -> list[list[str]]:
    out = []
    for s in result.stages:
        cells = [("*" if s.index == result.peak_stage else "") + str(s.index), "+".join(map(str, s.layers_per_chunk))]
        cells += [f"{s.bytes_by_category[c] / GiB:.2f}" for c in CATEGORIES]
        cells += [f"{s.total / GiB:.2f}", f"{s.optimizer_step_peak / GiB:.2f}", f"{s.tensor_peak / GiB:.2f}",
                  f"{s.allocator_peak / GiB:.2f}", f"{s.device_peak / GiB:.2f}",
                  f"{s.device_peak_low / GiB:.2f}–{s.device_peak_high / GiB:.2f}"]
        out.append(cells)
    return out


STAGE_HEADER = ["stage", "layers", *[CATEGORY_SHORT[c] for c in CATEGORIES], "total", "opt-step", "tensor peak",
                "allocator peak", "device peak", "band"]
FIGURE_HEADER = ["figure", "value", "source"]


def _figure_rows(parsed: ParsedConfig) -> list[tuple[str, str, str, str]]:
    """(figure, value, source label, url) for every device figure the estimate used."""
    return [(f.label, f.full_text, f.source.label, f.source.url)
            for f in device_figures(parsed.hardware, runtime_of(parsed.options.framework))]


def md(text: object) -> str:
    """Text for a Markdown report, on one line: HTML characters as entities (Markdown viewers render inline HTML,
    so a model name like ``<img …>`` must not become an element) and Markdown's own punctuation escaped."""
    escaped = html.escape(" ".join(str(text).split()), quote=False)
    return re.sub(r"([\\`*_\[\]#|!~])", r"\\\1", escaped)


def render_markdown(parsed: ParsedConfig, result: Result, chart_file: str | None) -> str:
    lines = [f"# {md(parsed.model.name)} — {md(parsed.options.framework)} on {md(parsed.hardware.name)}", ""]
    lines += [f"- **{md(k)}**: {md(v)}" for k, v in _summary(parsed, result)]
    lines.append("")
    if chart_file:
        lines += [f"![per-stage memory]({quote(chart_file)})", ""]
    lines += ["## Memory per stage (GiB, * = peak)", "", "| " + " | ".join(STAGE_HEADER) + " |",
              "|" + "---|" * len(STAGE_HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in _stage_rows(result)]  # numbers and the peak's *
    lines += ["", f"## Device figures ({md(parsed.hardware.name)})", "", "| " + " | ".join(FIGURE_HEADER) + " |",
              "|---|---|---|"]
    lines += [f"| {md(label)} | {md(value)} | {f'[{md(source)}]({quote(url, safe=URL_SAFE)})' if url else md(source)} |"
              for label, value, source, url in _figure_rows(parsed)]
    if result.throughput is not None and result.step_time_s:
        shown = result.throughput
        lines += ["", "## Step time", "", "| part | seconds | share |", "|---|---|---|"]
        lines += [f"| {PART_LABELS[k]} | {shown.seconds(v)} | {v / result.step_time_s * 100:.1f} % |"
                  for k, v in result.parts.items() if v]
    warnings = [*parsed.warnings, *result.warnings]
    if warnings:
        lines += ["", "## Warnings", ""] + [f"- `{w.code}` {md(w.text)}" for w in warnings]
    assumptions = [*parsed.assumptions, *result.assumptions]
    if assumptions:
        lines += ["", "## Assumptions", ""] + [f"- `{a.field}` = {md(repr(a.value))} ({md(a.source)})"
                                               for a in assumptions]
    sources = [s.path for s in parsed.sources]
    lines += ["", f"_Sources: {md(', '.join(sources))}. Sizes in GiB (2^30 bytes). Generated by SAPP Planner._", ""]
    return "\n".join(lines)


def render_html(parsed: ParsedConfig, result: Result, chart_svg: str | None = None) -> str:
    e = html.escape
    title = f"{parsed.model.name} — {parsed.options.framework} on {parsed.hardware.name}"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>"
             "body{font-family:DejaVu Sans,Arial,sans-serif;margin:24px;color:#222}"
             "table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;"
             "text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
             ".bad{color:#B8420A;font-weight:bold}.ok{color:#00795A;font-weight:bold}</style></head><body>",
             f"<h1>{e(title)}</h1><table>"]
    for k, v in _summary(parsed, result):
        cls = ' class="ok"' if k == "Verdict" and result.fits else (' class="bad"' if k == "Verdict" else "")
        parts.append(f"<tr><th>{e(k)}</th><td{cls}>{e(v)}</td></tr>")
    parts.append("</table>")
    chart_svg = chart_svg if chart_svg is not None else stage_chart(result)
    parts.append(chart_svg)
    parts.append("<h2>Memory per stage (GiB, * = peak)</h2><table><tr>" +
                 "".join(f"<th>{e(h)}</th>" for h in STAGE_HEADER) + "</tr>")
    for row in _stage_rows(result):
        parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
    parts.append("</table>")
    parts.append(f"<h2>Device figures ({e(parsed.hardware.name)})</h2><table><tr>" +
                 "".join(f"<th>{e(h)}</th>" for h in FIGURE_HEADER) + "</tr>")
    for label, value, source, url in _figure_rows(parsed):
        cell = f"<a href='{e(url)}'>{e(source)}</a>" if url else e(source)
        parts.append(f"<tr><td>{e(label)}</td><td>{e(value)}</td><td style='text-align:left'>{cell}</td></tr>")
    parts.append("</table>")
    if result.throughput is not None and result.step_time_s:
        shown = result.throughput
        parts.append("<h2>Step time</h2><table><tr><th>part</th><th>seconds</th><th>share</th></tr>")
        for k, v in result.parts.items():
            if v:
                parts.append(f"<tr><td>{e(PART_LABELS[k])}</td><td>{shown.seconds(v)}</td>"
                             f"<td>{v / result.step_time_s * 100:.1f} %</td></tr>")
        parts.append("</table>")
    warnings = [*parsed.warnings, *result.warnings]
    if warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(f"<li><code>{e(w.code)}</code> {e(w.text)}</li>"
                                                       for w in warnings) + "</ul>")
    assumptions = [*parsed.assumptions, *result.assumptions]
    if assumptions:
        parts.append("<h2>Assumptions</h2><ul>" + "".join(
            f"<li><code>{e(a.field)}</code> = {e(repr(a.value))} ({e(a.source)})</li>" for a in assumptions) + "</ul>")
    parts.append(f"<p><small>Sources: {e(', '.join(s.path for s in parsed.sources))}. Sizes in GiB (2^30 bytes). "
                 "Generated by SAPP Planner.</small></p></body></html>")
    return "\n".join(parts)


def write_report(parsed: ParsedConfig, result: Result, path: str | Path, chart_svg: str | None = None) -> list[str]:
    """Write an .html or .md report (Markdown gets its chart as NAME.svg beside it), atomically, keeping
    ``FILE.bak`` of a file it replaces. Returns the files written."""
    from ..export import write_atomic

    target = Path(path)
    svg = chart_svg if chart_svg is not None else stage_chart(result, title=f"{parsed.model.name}: memory per stage")
    if target.suffix.lower() in (".md", ".markdown"):
        chart = target.with_suffix(".svg")
        files = {str(target): render_markdown(parsed, result, chart.name), str(chart): svg}
    else:
        files = {str(target): render_html(parsed, result, svg)}
    write_atomic(files, backup=True)
    return list(files)


__all__ = ["render_html", "render_markdown", "stage_chart", "write_report"]
