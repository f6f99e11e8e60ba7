"""Export of a search result: the table as CSV (``estimator.search.report.write_csv``, the same as
``sapp search --csv``) or the whole result as JSON (``SearchResult.to_dict``, as ``sapp search --json``)."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from estimator.export import write_atomic
from estimator.search import SearchResult
from estimator.search.report import write_csv

KINDS = ("csv", "json")


def write_search(result: SearchResult, path: str | Path, kind: str) -> None:
    if kind == "csv":
        write_csv(result, path)
    elif kind == "json":
        write_atomic({str(path): json.dumps(result.to_dict(), indent=2) + "\n"}, backup=True)
    else:
        raise ValueError(f"unknown export kind {kind!r}; one of {', '.join(KINDS)}")


def ask_search_path(parent: QWidget, kind: str) -> str | None:
    from .language import translate

    filters = {"csv": translate("SearchPanel", "CSV table (*.csv)"), "json": translate("SearchPanel", "JSON (*.json)")}
    path, _ = QFileDialog.getSaveFileName(parent, translate("SearchPanel", "Export the search result"),
                                          f"search.{kind}", filters[kind])
    return path or None
