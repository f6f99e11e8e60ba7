"""Copy to the clipboard wherever a user reads numbers (issue 12): tables as tab-separated text with their headers
(what a spreadsheet pastes as cells), charts as PNG images, the summary tiles as caption–value–detail lines.
Right-click offers it; Ctrl+C in a table copies it."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication, QImage, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractItemView, QMenu, QWidget

from .language import translate


def cell_text(value: object) -> str:
    """A cell for TSV: one line, no tabs."""
    return " ".join(str(value if value is not None else "").split())


def tsv(rows: list[list[object]]) -> str:
    return "".join("\t".join(cell_text(cell) for cell in row) + "\n" for row in rows)


def table_rows(view: QAbstractItemView) -> list[list[str]]:
    """The visible table as shown (sorted, filtered): the header row, then every row; hidden columns left out."""
    model = view.model()
    header = view.horizontalHeader() if hasattr(view, "horizontalHeader") else None  # type: ignore[attr-defined]
    columns = [c for c in range(model.columnCount()) if header is None or not header.isSectionHidden(c)]
    if header is not None:  # in the order the user arranged them
        columns.sort(key=header.visualIndex)
    rows = [[cell_text(model.headerData(c, Qt.Orientation.Horizontal)) for c in columns]]
    for r in range(model.rowCount()):
        rows.append([cell_text(model.index(r, c).data(Qt.ItemDataRole.DisplayRole)) for c in columns])
    return rows


def copy_text(text: str) -> None:
    QGuiApplication.clipboard().setText(text)


def copy_image(image: QImage) -> None:
    QGuiApplication.clipboard().setImage(image)


def widget_image(widget: QWidget) -> QImage:
    """What the widget shows, at the screen's resolution."""
    return widget.grab().toImage()


def install_table_copy(view: QAbstractItemView) -> None:
    """Right-click and Ctrl+C copy the table as TSV (header row included)."""
    def copy() -> None:
        copy_text(tsv(table_rows(view)))  # type: ignore[arg-type]

    shortcut = QShortcut(QKeySequence.StandardKey.Copy, view)
    shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
    shortcut.activated.connect(copy)
    view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)

    def menu(pos: QPoint) -> None:
        popup = QMenu(view)
        popup.addAction(translate("Clipboard", "Copy table (tab-separated)"), copy)
        popup.exec(view.viewport().mapToGlobal(pos))

    view.customContextMenuRequested.connect(menu)


__all__ = ["copy_image", "copy_text", "install_table_copy", "table_rows", "tsv", "widget_image"]
