"""File ▸ Export report: the shareable HTML (chart inline) or Markdown (chart as SVG beside it) report of the
plan on screen — summary, step time, per-stage table, chart, warnings and assumptions — written by
``estimator.reports.write_report`` (the same as ``sapp report CONFIG -o OUT``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog, QWidget

from estimator.errors import SappError
from estimator.parsed import ParsedConfig
from estimator.reports import write_report
from estimator.result import Result

from .language import translate

SUFFIXES = (".html", ".htm", ".md", ".markdown")


def report_path(path: str | Path, chosen_filter: str = "") -> Path:
    """The file to write: the typed name, with .md or .html added from the chosen filter when it has none."""
    target = Path(path)
    if target.suffix.lower() in SUFFIXES:
        return target
    return target.with_suffix(".md" if "*.md" in chosen_filter else ".html")


def write(parsed: ParsedConfig, result: Result, path: str | Path) -> list[str]:
    """Write the report; returns the files written (Markdown: the .md and its .svg)."""
    target = report_path(path)
    try:
        return write_report(parsed, result, target)
    except OSError as exc:
        raise SappError(f"cannot write {target}: {exc}") from None


def ask_path(parent: QWidget, suggestion: str) -> Path | None:
    html = translate("Report", "HTML report (*.html)")
    markdown = translate("Report", "Markdown report with SVG chart (*.md)")
    path, chosen = QFileDialog.getSaveFileName(parent, translate("Report", "Export report"), suggestion,
                                               f"{html};;{markdown}")
    return report_path(path, chosen) if path else None


def suggested_name(parsed: ParsedConfig, folder: str = "") -> str:
    stem = Path(parsed.sources[0].path).stem if parsed.sources else parsed.model.name
    name = f"{stem}.report.html"
    return str(Path(folder) / name) if folder else name


def export_from(window: Any, path: str | Path | None = None) -> list[str]:
    """File ▸ Export report of the window's plan in the forms (asks where when ``path`` is None); only when the
    estimate on screen is of that plan (the status bar says so otherwise)."""
    estimate = window.doc.current_estimate if window.doc.loaded else None
    if estimate is None:
        window.statusBar().showMessage(translate("Workspace", "Nothing estimated for the plan in the forms to "
                                                            "report yet"), 5000)
        return []
    if path is None:
        chosen = ask_path(window, suggested_name(estimate.parsed, window.settings.last_dir()))
        if chosen is None:
            return []
        path = chosen
    try:
        written = write(estimate.parsed, estimate.result, path)
    except SappError as exc:
        window._show_banner(translate("Workspace", "Report not written: {0}").format(exc))
        return []
    window.statusBar().showMessage(translate("Workspace", "Wrote {0}").format(", ".join(written)), 8000)
    return written
