"""Text, CSV rendering of a SearchResult (the CLI and exports)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ..honest import versus_best
from ..messages import msg
from ..parsed import ParsedConfig
from ..units import GiB, fmt_bytes
from . import RankedRow, SearchResult, SearchSpace

COLUMNS = ("rank", "dp", "tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "m", "sp", "recompute", "shard", "schedule",
           "peak GiB", "stage", "step s (low–high)", "vs best", "tok/s/dev", "MFU")
TIMES = 4  # the last columns: step, vs best, tok/s/dev, MFU (the CSV writes them in full instead)


def row_cells(rank: int | str, row: RankedRow, best: float | None = None) -> list[str]:
    """One row of the table: step time, tokens/s and MFU at the precision the row's step band allows, and the
    step time against the fastest row ``best`` with the decimals that tell rows apart (``versus_best``)."""
    st = row.strategy
    shown = row.throughput
    return [str(rank), str(st.dp), str(st.tp), str(st.pp), str(st.vpp), str(st.cp), str(st.ep), str(row.etp),
            str(st.micro_batch_size), str(st.micro_batches), "on" if st.sequence_parallel else "off",
            st.recompute.default_mode if st.recompute.full_counts is None else "per-stage",
            str(row.shard_size) if row.shard_size is not None else "-", st.schedule_name,
            f"{max(row.peak_bytes, row.optimizer_step_peak) / GiB:.2f}", str(row.peak_stage),
            shown.step.with_band(), versus_best(row.step_time_s, best) if best else "-", shown.tokens.text,
            shown.mfu.text + "%"]


def _table(header: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(header)] if rows else \
        [len(h) for h in header]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def render_search(parsed: ParsedConfig, space: SearchSpace, result: SearchResult) -> str:
    lines = [f"{parsed.model.name} · {parsed.options.framework} · {parsed.hardware.name} · "
             f"{space.devices} devices · global batch {space.global_batch} · budget {result.budget / GiB:.2f} GiB"]
    lines.append(f"candidates {result.candidates:,}, survivors {result.survivors:,}, {result.progress_text}, "
                 f"fitting {result.fitting:,} ({result.seconds:.2f} s)")
    if result.refusals:
        lines.append("")
        lines.append("refused:")
        for code, count in sorted(result.refusals.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {code:12} {count:>9,}   e.g. {result.examples.get(code, '')}")
    lines.append("")
    if result.ranked:
        lines.append(f"fastest strategies that fit: {len(result.ranked):,} of {result.fitting:,} shown (peak in GiB "
                     "incl. the optimizer step; * the plan as opened):")
        lines += _table(COLUMNS, ranked_cells(result))
        lines.append(current_text(result))
        lines.append("")
        lines.append(f"Pareto front, step time vs peak memory ({len(result.pareto)} strategies):")
        lines += _table(COLUMNS, [row_cells("P", r, best_step(result)) for r in result.pareto[:12]])
    else:
        lines.append("no strategy fits the budget; the smallest overshoots:")
        lines += [f"  {c}  over by {o / GiB:.2f} GiB" for c, o in result.over_budget[:10]]
        lines.append(current_text(result))
    return "\n".join(lines)


def ranked_cells(result: SearchResult) -> list[list[str]]:
    """The ranked rows with the plan as opened among them (marked *): at its rank by step time, or last."""
    best = best_step(result)
    rows = [row_cells(k + 1, r, best) for k, r in enumerate(result.ranked)]
    current = result.current
    if current is None:
        return rows
    if current.ranked_index is not None:
        rows[current.ranked_index][0] += "*"
        return rows
    cells = row_cells(f"{current.rank}*" if current.rank is not None else "-*", current.row, best)
    at = current.rank - 1 if current.rank is not None and current.rank <= len(rows) else len(rows)
    return [*rows[:at], cells, *rows[at:]]


def best_step(result: SearchResult) -> float | None:
    """The fastest step time that fits (the ranked table's first row): what "vs best" is relative to."""
    return result.ranked[0].step_time_s if result.ranked else None


def current_text(result: SearchResult) -> str:
    """Where the plan as opened stands against the search."""
    current = result.current
    if current is None:
        return "* the plan as opened cannot be estimated, so it is not among the rows"
    peak = max(current.row.peak_bytes, current.row.optimizer_step_peak)
    host = current.row.result.host if current.row.result is not None else None
    if not current.fits and peak <= result.budget and host is not None and host.fits is False:  # R-HOST
        return str(msg("search.current-host-over", per_node=fmt_bytes(host.per_node),
                       ram=fmt_bytes(host.ram_per_node or 0.0)))
    if not current.fits:
        return (f"* the plan as opened does not fit: peak {peak / GiB:.2f} GiB over the {result.budget / GiB:.2f} GiB "
                "budget")
    return (f"* the plan as opened: rank {current.rank:,} of {result.fitting:,} that fit, step "
            f"{current.row.throughput.step.with_band(' s')}, peak {peak / GiB:.2f} GiB")


def csv_text(result: SearchResult) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    # the times in full (a CSV is read by programs): step time and its band, tokens/s/device, MFU as a fraction
    writer.writerow(("list", *COLUMNS[1:-TIMES], "step s", "step s low", "step s high", "tok/s/dev", "MFU",
                     "peak bytes", "headroom bytes"))
    current = [result.current.row] if result.current is not None else []
    for name, rows in (("ranked", result.ranked), ("pareto", result.pareto), ("current", current)):
        for row in rows:
            low, high = row.step_band if row.step_band is not None else ("", "")
            writer.writerow((name, *row_cells("", row)[1:-TIMES], row.step_time_s, low, high,
                             row.tokens_per_s_per_device, row.mfu, round(row.peak_bytes), round(row.headroom)))
    return buffer.getvalue()


def write_csv(result: SearchResult, path: str | Path) -> None:
    """The ranked table and the Pareto front as CSV, written atomically (``FILE.bak`` of a replaced file)."""
    from ..export import write_atomic

    write_atomic({str(path): csv_text(result)}, backup=True)
