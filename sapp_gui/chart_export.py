"""Export of any chart widget: PNG (rendered at 2× the on-screen size), SVG (QSvgGenerator — pyqtgraph's own
SVGExporter is broken with PySide6 6.11/6.12, see docs/gui notes) and, where the chart has numbers behind it,
CSV. Mixed into every chart of the app (stage, layer, compare, balance, Pareto, schedule)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QWidget

from estimator.errors import SappError
from estimator.export import write_atomic

from .clipboard import copy_image, copy_text, tsv, widget_image
from .language import translate


def render_png(widget: QWidget, path: str | Path, scale: float = 2.0) -> None:
    size = widget.size()
    image = QImage(max(1, int(size.width() * scale)), max(1, int(size.height() * scale)), QImage.Format.Format_ARGB32)
    image.setDevicePixelRatio(scale)
    image.fill(QColor("white"))
    painter = QPainter(image)
    widget.render(painter, QPoint(0, 0))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise SappError(f"cannot encode the chart as PNG for {path}")
    buffer.close()
    write_atomic({str(path): bytes(data.data())}, backup=True)


def render_svg(widget: QWidget, path: str | Path, title: str = "") -> None:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    generator = QSvgGenerator()
    generator.setOutputDevice(buffer)
    generator.setSize(widget.size())
    generator.setViewBox(widget.rect())
    generator.setResolution(widget.logicalDpiX())
    if title:
        generator.setTitle(title)
    painter = QPainter(generator)
    widget.render(painter, QPoint(0, 0))
    painter.end()
    buffer.close()
    if not data.size():
        raise SappError(f"cannot render the chart as SVG for {path}")
    write_atomic({str(path): bytes(data.data())}, backup=True)


class ExportableChart:
    """``export_png/svg(path)``, ``export_csv`` when ``csv_rows`` exists, a context menu and a save dialog."""

    def export_title(self) -> str:
        return ""

    def export_png(self, path: str | Path, scale: float = 2.0) -> None:
        render_png(self, path, scale)  # type: ignore[arg-type]

    def export_svg(self, path: str | Path) -> None:
        render_svg(self, path, self.export_title())  # type: ignore[arg-type]

    def export_csv(self, path: str | Path) -> None:
        buffer = io.StringIO()
        csv.writer(buffer).writerows(self.csv_rows())  # type: ignore[attr-defined]
        write_atomic({str(path): buffer.getvalue()}, backup=True)

    def export_kinds(self) -> tuple[str, ...]:
        return ("png", "svg", "csv") if hasattr(self, "csv_rows") else ("png", "svg")

    def export_menu(self, parent: QWidget) -> QMenu:
        menu = QMenu(translate("Charts", "Export chart"), parent)
        menu.addAction(translate("Charts", "Copy chart (PNG)"), self.copy_png)
        if hasattr(self, "csv_rows"):
            menu.addAction(translate("Charts", "Copy numbers (tab-separated)"), self.copy_tsv)
        menu.addSeparator()
        labels = {"png": translate("Charts", "Export as PNG…"), "svg": translate("Charts", "Export as SVG…"),
                  "csv": translate("Charts", "Export numbers as CSV…")}
        for kind in self.export_kinds():
            menu.addAction(labels[kind], lambda k=kind: self.ask_export(k))
        return menu

    def copy_png(self) -> None:
        """The chart as an image on the clipboard (what is on screen)."""
        copy_image(widget_image(self))  # type: ignore[arg-type]

    def copy_tsv(self) -> None:
        """The numbers behind the chart on the clipboard, tab-separated (a spreadsheet pastes them as cells)."""
        copy_text(tsv(self.csv_rows()))  # type: ignore[attr-defined]

    def enable_export_menu(self, view: QWidget) -> None:
        """Right-click on ``view`` offers the exports."""
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(lambda pos: self.export_menu(view).exec(view.mapToGlobal(pos)))

    def ask_export(self, kind: str) -> str | None:
        filters = {"png": translate("Charts", "PNG image (*.png)"), "svg": translate("Charts", "SVG image (*.svg)"),
                   "csv": translate("Charts", "CSV table (*.csv)")}
        path, _ = QFileDialog.getSaveFileName(self, translate("Charts", "Export chart as {0}").format(  # type: ignore[arg-type]
            kind.upper()), f"chart.{kind}", filters[kind])
        if not path:
            return None
        try:
            getattr(self, f"export_{kind}")(path)
        except SappError as exc:
            QMessageBox.warning(self, translate("Charts", "Export chart"), str(exc))  # type: ignore[arg-type]
            return None
        return path
