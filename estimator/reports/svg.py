"""A stacked per-stage memory chart as standalone SVG (no plotting library): one bar per stage, the categories
in their fixed colours (the device-level parts on top), a dashed outline up to the optimizer step where it is the
stage's peak, the device peak's band as a whisker, the capacity and budget lines, over-budget bars outlined, the peak
labelled, and a legend."""

from __future__ import annotations

from html import escape

from ..palette import CAPACITY, CATEGORY_COLORS, CATEGORY_LABELS, OVER_BUDGET
from ..result import CATEGORIES, Result
from ..units import GiB


def _nice_step(top: float) -> float:
    for step in (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64, 100, 128, 200, 256):
        if top / step <= 8:
            return step
    return 512


def stage_chart(result: Result, width: int = 880, height: int = 420, title: str = "") -> str:
    """SVG text of the stage chart (GiB on the y axis)."""
    left, right, top, bottom = 64, 190, 36, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    stages = result.stages
    ymax = max(max(s.device_peak_high for s in stages), result.capacity, result.budget) / GiB * 1.08
    step = _nice_step(ymax)
    ymax = step * (int(ymax / step) + 1)

    def y(gib: float) -> float:
        return top + plot_h * (1 - gib / ymax)

    n = len(stages)
    slot = plot_w / max(n, 1)
    bar_w = min(56.0, slot * 0.7)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{left}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>')
    tick = 0.0
    while tick <= ymax + 1e-9:
        yy = y(tick)
        out.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{left + plot_w}" y2="{yy:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += step
    out.append(f'<text x="16" y="{top + plot_h / 2:.1f}" transform="rotate(-90 16 {top + plot_h / 2:.1f})" '
               'text-anchor="middle">GiB per device</text>')
    for i, stage in enumerate(stages):
        x = left + slot * i + (slot - bar_w) / 2
        base = 0.0
        for cat in CATEGORIES:
            value = stage.bytes_by_category[cat] / GiB
            if value <= 0:
                continue
            out.append(f'<rect x="{x:.1f}" y="{y(base + value):.1f}" width="{bar_w:.1f}" '
                       f'height="{y(base) - y(base + value):.2f}" fill="{CATEGORY_COLORS[cat]}">'
                       f'<title>stage {i} {CATEGORY_LABELS[cat]}: {value:.2f} GiB</title></rect>')
            base += value
        top_gib = stage.device_peak / GiB
        if top_gib > base + 1e-9:  # the optimizer step is this stage's peak
            out.append(f'<rect x="{x:.1f}" y="{y(top_gib):.1f}" width="{bar_w:.1f}" '
                       f'height="{y(base) - y(top_gib):.2f}" fill="none" stroke="#555" stroke-dasharray="3 2">'
                       f'<title>stage {i} optimizer step: {top_gib:.2f} GiB</title></rect>')
        base = max(base, top_gib)
        low, high = stage.device_peak_low / GiB, stage.device_peak_high / GiB
        if high - low > 1e-3:
            cx = x + bar_w / 2
            out.append(f'<g stroke="#222" stroke-width="1.2"><title>stage {i} device peak band: {low:.2f}–'
                       f'{high:.2f} GiB</title><line x1="{cx:.1f}" y1="{y(low):.1f}" x2="{cx:.1f}" '
                       f'y2="{y(high):.1f}"/><line x1="{cx - 5:.1f}" y1="{y(low):.1f}" x2="{cx + 5:.1f}" '
                       f'y2="{y(low):.1f}"/><line x1="{cx - 5:.1f}" y1="{y(high):.1f}" x2="{cx + 5:.1f}" '
                       f'y2="{y(high):.1f}"/></g>')
        if result.over(stage):
            out.append(f'<rect x="{x:.1f}" y="{y(base):.1f}" width="{bar_w:.1f}" height="{y(0) - y(base):.1f}" '
                       f'fill="none" stroke="{OVER_BUDGET}" stroke-width="2.5"/>')
        label = str(i) if n <= 32 or i % max(1, n // 16) == 0 else ""
        out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{label}</text>')
        if i == result.peak_stage:
            out.append(f'<text x="{x + bar_w / 2:.1f}" y="{y(max(base, high)) - 6:.1f}" text-anchor="middle" '
                       f'font-weight="bold">{stage.device_peak / GiB:.2f} GiB</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">pipeline stage</text>')
    label_ys: list[float] = []
    for value, color, name, dash in ((result.capacity, CAPACITY, "capacity", ""),
                                     (result.budget, OVER_BUDGET, "budget", ' stroke-dasharray="6 4"')):
        yy = y(value / GiB)
        text_y = yy + 4
        for other in label_ys:  # keep the two labels apart when capacity and budget are close
            if abs(text_y - other) < 14:
                text_y = other + 14
        label_ys.append(text_y)
        out.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{left + plot_w}" y2="{yy:.1f}" stroke="{color}" '
                   f'stroke-width="1.5"{dash}/>')
        out.append(f'<text x="{left + plot_w + 4}" y="{text_y:.1f}" fill="{color}">{name} '
                   f'{value / GiB:.2f} GiB</text>')
    shown = [c for c in CATEGORIES if any(s.bytes_by_category.get(c, 0.0) > 0 for s in stages)]
    lx, ly = left + plot_w + 14, top + plot_h - 20 * len(shown) + 6  # legend at the bottom right
    for k, cat in enumerate(shown):
        out.append(f'<rect x="{lx}" y="{ly + 20 * k}" width="12" height="12" fill="{CATEGORY_COLORS[cat]}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly + 20 * k + 10}">{CATEGORY_LABELS[cat]}</text>')
    out.append("</svg>")
    return "\n".join(out)
