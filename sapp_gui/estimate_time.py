"""The status bar's "estimate N ms": how long the shown estimate took, in a label of fixed size."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QLabel, QWidget

from .language import translate

FAILED = "failed"


class EstimateTimeLabel(QLabel):
    """Says the shown estimate's time in ms, "estimate failed", or nothing. Its size is fixed, wide enough for the
    widest text it says in the current language (widening only for a longer one): a label whose size changes on
    every edit re-lays the whole window out and repaints it (docs/decisions.md P-GUI-PAINT)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.setObjectName("estimateTime")
        self._said = ""  # "", FAILED or the milliseconds as shown

    def show_elapsed(self, seconds: float) -> None:
        self._said = f"{seconds * 1000:.0f}"
        self.retranslate()

    def show_failed(self) -> None:
        self._said = FAILED
        self.retranslate()

    def clear_time(self) -> None:
        self._said = ""
        self.retranslate()

    def retranslate(self) -> None:
        if not self._said:
            text = ""
        elif self._said == FAILED:
            text = translate("MainWindow", "estimate failed")
        else:
            text = translate("MainWindow", "estimate {0} ms").format(self._said)
        self._fit(text)
        self.setText(text)

    def _fit(self, text: str) -> None:
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        pad = margins.left() + margins.right() + 2 * self.margin() + metrics.averageCharWidth()
        widest = max(metrics.horizontalAdvance(t) for t in (
            text, translate("MainWindow", "estimate failed"), translate("MainWindow", "estimate {0} ms").format(
                "8" * 5)))
        size = QSize(widest + pad, metrics.height() + margins.top() + margins.bottom() + 2 * self.margin())
        if self.minimumSize() != size or self.maximumSize() != size:
            self.setFixedSize(size)
