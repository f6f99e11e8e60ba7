"""The summary strip (verdict, peak, headroom, devices, global batch, parameters) and the list of warnings,
assumptions and what the last edit adapted."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QListWidget, QListWidgetItem, QWidget

from estimator.parsed import ParsedConfig
from estimator.result import Result
from estimator.units import GiB
from estimator.warnings import Assumption, EstimateWarning

from .style import FITS, OVER_BUDGET


def fmt_count(n: float) -> str:
    if n >= 1e12:
        return f"{n / 1e12:,.2f} T"
    if n >= 1e9:
        return f"{n / 1e9:,.2f} B"
    if n >= 1e6:
        return f"{n / 1e6:,.1f} M"
    return f"{n:,.0f}"


class _Card(QFrame):
    def __init__(self, caption: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName(f"card_{caption.lower().replace(' ', '_')}")
        layout = QGridLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setVerticalSpacing(0)
        self.caption = QLabel(caption)
        self.caption.setProperty("sappRole", "note")
        self.value = QLabel("–")
        font = QFont(self.font())
        font.setPointSizeF(self.font().pointSizeF() * 1.35)
        font.setBold(True)
        self.value.setFont(font)
        self.sub = QLabel("")
        self.sub.setProperty("sappRole", "note")
        self.sub.setWordWrap(True)
        for row, widget in enumerate((self.caption, self.value, self.sub)):
            widget.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(widget, row, 0)

    def set(self, value: str, sub: str = "", color: str | None = None) -> None:
        self.value.setText(value)
        self.value.setStyleSheet(f"color: {color};" if color else "")
        self.sub.setText(sub)
        self.setToolTip(f"{self.caption.text()}: {value}" + (f" ({sub})" if sub else ""))


class SummaryPanel(QFrame):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("summary")
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setHorizontalSpacing(6)
        self.verdict = _Card("Verdict")
        self.peak = _Card("Peak")
        self.headroom = _Card("Headroom")
        self.devices = _Card("Devices")
        self.batch = _Card("Global batch")
        self.params = _Card("Parameters")
        self.cards = (self.verdict, self.peak, self.headroom, self.devices, self.batch, self.params)
        for col, card in enumerate(self.cards):
            layout.addWidget(card, 0, col)
            layout.setColumnStretch(col, 1)
        self.context = QLabel("")
        self.context.setWordWrap(True)
        self.context.setProperty("sappRole", "note")
        layout.addWidget(self.context, 1, 0, 1, len(self.cards))
        self.fits: bool | None = None

    def set_result(self, parsed: ParsedConfig, result: Result, pinned: Result | None = None) -> None:
        st = parsed.strategy
        self.fits = result.fits
        limit = "optimizer step decides" if result.limit == "optimizer_step" else "peak decides"
        self.verdict.set("Fits" if result.fits else "Does not fit", limit, FITS if result.fits else OVER_BUDGET)
        peak_text = f"{result.peak_bytes / GiB:,.2f} GiB"
        sub = f"stage {result.peak_stage}"
        if pinned is not None:
            sub += f", {(result.peak_bytes - pinned.peak_bytes) / GiB:+,.2f} GiB vs pinned"
        self.peak.set(peak_text, sub)
        self.headroom.set(f"{result.headroom / GiB:,.2f} GiB",
                          f"budget {result.budget / GiB:,.2f} GiB",
                          FITS if result.headroom >= 0 else OVER_BUDGET)
        self.devices.set(f"{result.world_size:,}", f"dp {st.dp} × tp {st.tp} × pp {st.pp} × cp {st.cp}")
        self.batch.set(f"{result.global_batch_size:,}",
                       f"mbs {st.micro_batch_size} × dp {st.dp} × m {st.micro_batches}"
                       + (f" × {st.n_acc}" if st.n_acc > 1 else ""))
        params_sub = f"{fmt_count(result.parameters_active)} active" if parsed.model.is_moe else "dense"
        self.params.set(fmt_count(result.parameters_total), params_sub)
        if result.parameters_mtp:
            self.params.setToolTip(self.params.toolTip() + f"; MTP {fmt_count(result.parameters_mtp)}")
        hw = parsed.hardware
        extras = []
        if st.vpp > 1:
            extras.append(f"vpp {st.vpp}")
        if st.ep > 1:
            extras.append(f"ep {st.ep}")
        if st.sequence_parallel:
            extras.append("SP")
        self.context.setText(
            f"{parsed.model.name} · {parsed.framework} · {hw.name} · seq {st.seq_length:,} · schedule "
            f"{result.echo.get('strategy', {}).get('schedule', st.schedule_name)}"
            + ("".join(f" · {x}" for x in extras)))

    def clear(self) -> None:
        for card in self.cards:
            card.set("–")
        self.context.clear()
        self.fits = None


class NotesList(QListWidget):
    """Warnings, assumptions and the adaptations an edit made, grouped under headers."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notes")
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)
        self.setAccessibleName("Warnings and assumptions")

    def set_notes(self, *, warnings: Iterable[EstimateWarning] = (), assumptions: Iterable[Assumption] = (),
                  edits: Iterable[str] = (), errors: Iterable[str] = ()) -> None:
        self.clear()
        groups = [("Errors", [str(e) for e in errors], OVER_BUDGET),
                  ("Adapted by the last edit", list(edits), "#0072B2"),
                  ("Warnings", [str(w) for w in dict.fromkeys(warnings)], "#A05A00"),
                  ("Assumptions (defaults the estimator filled in)",
                   [str(a) for a in dict.fromkeys(assumptions)], "#444444")]
        for title, lines, color in groups:
            if not lines:
                continue
            header = QListWidgetItem(f"{title} ({len(lines)})")
            font = header.font()
            font.setBold(True)
            header.setFont(font)
            header.setFlags(Qt.ItemFlag.ItemIsEnabled)
            header.setForeground(QBrush(QColor(color)))
            self.addItem(header)
            for line in lines:
                item = QListWidgetItem(line)
                item.setToolTip(line)
                self.addItem(item)
        if self.count() == 0:
            self.addItem(QListWidgetItem("No warnings; every value comes from the files."))

    def lines(self) -> list[str]:
        return [self.item(i).text() for i in range(self.count())]
