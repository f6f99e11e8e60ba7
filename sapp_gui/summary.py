"""The summary tiles (verdict, peak, headroom, step time, tokens/s per device, MFU, devices, global batch,
parameters, host memory per node) and the list of warnings, assumptions and what the last edit adapted — both
views of the plan session (``on_session``). The tiles never show a verdict for a plan the forms do not hold:
while the estimate on screen is stale (``set_stale``, from the StaleFrame around them) the verdict tile says so
instead.

The tiles flow into as many columns as the width allows (one row on a wide window, two beside the docks).
The step-time tile's tooltip is the breakdown of the step into its parts (compute, exposed communication,
pipeline bubble, optimizer step); the Schedule tab shows the same parts as a table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QMouseEvent, QResizeEvent
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QListWidget, QListWidgetItem, QMenu, QWidget

from estimator.honest import relative_change
from estimator.parsed import ParsedConfig
from estimator.result import Result
from estimator.session import FAILED, PENDING, PlanSession, SessionEvent
from estimator.session.events import CHANGED, CLOSED, ESTIMATED, OPENED, PINNED
from estimator.units import GiB
from estimator.warnings import Assumption, EstimateWarning

from .clipboard import copy_text, tsv
from .document import preset_problem
from .language import said, translate
from .panel import PENDING_GRACE_MS
from .style import FITS, MUTED, OVER_BUDGET, QT_TRANSLATE_NOOP

CARD_MIN_WIDTH = 100  # five tiles in a row from 530 px: two rows on a 1024-px window

# step-time parts (estimator.steptime.PARTS), in the order they are listed
PART_NAMES: dict[str, str] = {
    "fwd": QT_TRANSLATE_NOOP("StepParts", "forward"),
    "bwd": QT_TRANSLATE_NOOP("StepParts", "backward"),
    "recompute": QT_TRANSLATE_NOOP("StepParts", "recompute"),
    "tp": QT_TRANSLATE_NOOP("StepParts", "TP communication"),
    "cp": QT_TRANSLATE_NOOP("StepParts", "CP communication"),
    "ep": QT_TRANSLATE_NOOP("StepParts", "EP communication"),
    "dp": QT_TRANSLATE_NOOP("StepParts", "DP communication"),
    "pp": QT_TRANSLATE_NOOP("StepParts", "PP communication"),
    "host": QT_TRANSLATE_NOOP("StepParts", "host transfers"),
    "fsdp": QT_TRANSLATE_NOOP("StepParts", "FSDP communication"),
    "bubble": QT_TRANSLATE_NOOP("StepParts", "pipeline bubble"),
    "optimizer": QT_TRANSLATE_NOOP("StepParts", "optimizer step"),
}


# host-memory kinds (estimator.host.HostStage), for the host tile's tooltip
HOST_PARTS: dict[str, str] = {
    "activations": QT_TRANSLATE_NOOP("Summary", "offloaded activations"),
    "optimizer_states": QT_TRANSLATE_NOOP("Summary", "optimizer states"),
    "parameters": QT_TRANSLATE_NOOP("Summary", "parameters"),
    "gradients": QT_TRANSLATE_NOOP("Summary", "gradients"),
}


def part_name(key: str) -> str:
    name = PART_NAMES.get(key)
    return translate("StepParts", name) if name else key


def fmt_count(n: float) -> str:
    if n >= 1e12:
        return f"{n / 1e12:,.2f} T"
    if n >= 1e9:
        return f"{n / 1e9:,.2f} B"
    if n >= 1e6:
        return f"{n / 1e6:,.1f} M"
    return f"{n:,.0f}"


def parts_html(result: Result) -> str:
    """The step time split into its parts: seconds (at the step's honest precision) and share, largest first."""
    total = result.step_time_s or 0.0
    shown = result.throughput
    if not total or shown is None:
        return ""
    head = translate("Summary", "Step time {0} per optimizer step").format(shown.step.with_band(" s"))
    rows = [f"<b>{head}</b><table cellspacing='0' cellpadding='1'>"]
    for key, value in sorted(result.parts.items(), key=lambda kv: -kv[1]):
        if value <= 0:
            continue
        rows.append(f"<tr><td>{part_name(key)}</td><td align='right'>&nbsp;{shown.seconds(value)} s</td>"
                    f"<td align='right'>&nbsp;{100 * value / total:4.1f}%</td></tr>")
    rows.append("</table>")
    return "".join(rows)


class _Card(QFrame):
    clicked = Signal()

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName(f"card_{name}")
        self.setMinimumWidth(CARD_MIN_WIDTH - 10)
        layout = QGridLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setVerticalSpacing(0)
        self.caption = QLabel("")
        self.caption.setProperty("sappRole", "note")
        self.caption.setWordWrap(True)
        self.value = QLabel("–")
        font = QFont(self.font())
        font.setPointSizeF(self.font().pointSizeF() * 1.35)
        font.setBold(True)
        self.value.setFont(font)
        self.value.setWordWrap(True)  # "Does not fit" / "−37.58 GiB" wrap in a narrow tile instead of being cut
        self.sub = QLabel("")
        self.sub.setProperty("sappRole", "note")
        self.sub.setWordWrap(True)
        # not selectable by mouse: a selectable label lays its text out again after a paint and repaints the
        # tiles twice more per edit; the panel's context menu copies every tile (tab-separated) instead
        for row, widget in enumerate((self.caption, self.value, self.sub)):
            layout.addWidget(widget, row, 0)
        self.extra_tip = ""

    def mousePressEvent(self, event: QMouseEvent) -> None:
        super().mousePressEvent(event)
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()

    def set(self, value: str, sub: str = "", color: str | None = None, tip: str = "") -> None:
        # only what changed: a style sheet set again re-polishes and repaints the label even when it is the same
        self.value.setText(value)
        style = f"color: {color};" if color else ""
        if self.value.styleSheet() != style:
            self.value.setStyleSheet(style)
        self.sub.setText(sub)
        self.extra_tip = tip
        tip = tip or f"{self.caption.text()}: {value}" + (f" ({sub})" if sub else "")
        if self.toolTip() != tip:
            self.setToolTip(tip)


class SummaryPanel(QFrame):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("summary")
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(6)
        self.grid.setVerticalSpacing(4)
        names = ("verdict", "peak", "headroom", "step_time", "throughput", "mfu", "devices", "batch", "params",
                 "host")
        self.verdict, self.peak, self.headroom, self.step_time, self.throughput, self.mfu, self.devices, \
            self.batch, self.params, self.host = (_Card(n) for n in names)
        self.cards = (self.verdict, self.peak, self.headroom, self.step_time, self.throughput, self.mfu,
                      self.devices, self.batch, self.params, self.host)
        self.context = QLabel("")
        self.context.setTextFormat(Qt.TextFormat.PlainText)  # it shows the model name: text, never HTML
        self.context.setWordWrap(True)
        self.context.setProperty("sappRole", "note")
        self.columns = 0
        self._flow(5)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._copy_menu)
        # an explicit minimum width: the tiles re-flow on resize, so the columns they have now must never make
        # the window wider (a hidden page of the central stack is resized to the whole window)
        self.setMinimumWidth(3 * (CARD_MIN_WIDTH + 6))
        self.fits: bool | None = None
        self.stale = ""  # why the tiles do not describe the plan in the forms ("" when they do)
        self._last: tuple[ParsedConfig, Result, Result | None] | None = None
        self.retranslate()

    # ---------------------------------------------------------------------------------- session
    def on_session(self, event: SessionEvent) -> None:
        session = event.session
        if event.kind in (OPENED, CLOSED):
            self.clear()
        elif event.kind in (ESTIMATED, PINNED) and session.shown is not None:
            self.set_result(session.shown.parsed, session.shown.result,
                            session.pinned.result if session.pinned else None)

    def set_stale(self, reason: str) -> None:
        """No verdict while the tiles are of another plan than the forms' (``reason`` says why; "" = current)."""
        self.stale = reason
        if self._last is not None:
            self.set_result(*self._last)

    # ---------------------------------------------------------------------------------- clipboard
    def tiles_tsv(self) -> str:
        """Every tile as caption – value – detail, tab-separated, and the context line."""
        rows = [[card.caption.text(), card.value.text(), card.sub.text()] for card in self.cards]
        return tsv(rows) + (self.context.text() + "\n" if self.context.text() else "")

    def _copy_menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
        menu.addAction(translate("Clipboard", "Copy the numbers (tab-separated)"), lambda: copy_text(self.tiles_tsv()))
        menu.exec(self.mapToGlobal(pos))

    # ------------------------------------------------------------------------------------- layout
    def _flow(self, columns: int) -> None:
        """Lay the tiles out in ``columns`` columns (rows as needed), the context line under them."""
        columns = max(1, min(columns, len(self.cards)))
        if columns == self.columns:
            return
        self.columns = columns
        for card in self.cards:
            self.grid.removeWidget(card)
        self.grid.removeWidget(self.context)
        for col in range(len(self.cards)):
            self.grid.setColumnStretch(col, 1 if col < columns else 0)
        for k, card in enumerate(self.cards):
            self.grid.addWidget(card, k // columns, k % columns)
        rows = -(-len(self.cards) // columns)
        self.grid.addWidget(self.context, rows, 0, 1, columns)

    def columns_for(self, width: int) -> int:
        fit = max(1, (width + 6) // (CARD_MIN_WIDTH + 6))
        if fit >= len(self.cards):
            return len(self.cards)
        return -(-len(self.cards) // -(-len(self.cards) // fit))  # the same tiles per row, rows balanced

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._flow(self.columns_for(event.size().width()))

    def retranslate(self) -> None:
        captions = (translate("Summary", "Verdict"), translate("Summary", "Peak"), translate("Summary", "Headroom"),
                    translate("Summary", "Step time"), translate("Summary", "Tokens/s/device"),
                    translate("Summary", "MFU"), translate("Summary", "Devices"), translate("Summary", "Global batch"),
                    translate("Summary", "Parameters"), translate("Summary", "Host memory"))
        for card, caption in zip(self.cards, captions, strict=True):
            card.caption.setText(caption)
        if self._last is not None:
            self.set_result(*self._last)

    # --------------------------------------------------------------------------------------- data
    def set_result(self, parsed: ParsedConfig, result: Result, pinned: Result | None = None) -> None:
        self._last = (parsed, result, pinned)
        st = parsed.strategy
        self.fits = result.fits
        limit = translate("Summary", "optimizer step decides") if result.limit == "optimizer_step" else \
            translate("Summary", "peak decides")
        self.verdict.set(translate("Summary", "Fits") if result.fits else translate("Summary", "Does not fit"), limit,
                         FITS if result.fits else OVER_BUDGET)
        # the peak the verdict reads (the device's, the optimizer step included): peak + headroom = the limit
        peak_text = f"{result.peak_bytes / GiB:,.2f} GiB"
        sub = translate("Summary", "stage {0}, tensors {1} GiB").format(
            result.peak_stage, f"{result.tensor_peak_bytes / GiB:,.1f}")
        if pinned is not None:
            delta = f"{(result.peak_bytes - pinned.peak_bytes) / GiB:+,.2f}"
            sub += translate("Summary", ", {0} GiB vs pinned").format(delta)
        low, high = result.device_peak_low_bytes, result.device_peak_high_bytes
        self.peak.set(peak_text, sub, tip=translate(
            "Summary", "Device peak {0} GiB (band {1}–{2} GiB): what the device shows, the optimizer step "
                       "included. Tensor peak {3} GiB (max allocated), allocator peak {4} GiB (max reserved).").format(
            *(f"{v / GiB:,.2f}" for v in (result.peak_bytes, low, high, result.tensor_peak_bytes,
                                          result.allocator_peak_bytes))))
        if result.framework_limit is not None:  # the smaller margin decides: say which, so the sum is visible
            pool_margin = result.framework_limit - result.allocator_peak_bytes
            if pool_margin <= result.headroom + 1:
                limit_sub = translate("Summary", "pool {0} GiB − allocator peak {1} GiB").format(
                    f"{result.framework_limit / GiB:,.2f}", f"{result.allocator_peak_bytes / GiB:,.2f}")
            else:
                limit_sub = translate("Summary", "device {0} GiB − peak").format(
                    f"{(result.device_limit or result.capacity) / GiB:,.2f}")
        else:
            limit_sub = translate("Summary", "budget {0} GiB").format(f"{result.budget / GiB:,.2f}")
        self.headroom.set(f"{result.headroom / GiB:,.2f} GiB", limit_sub,
                          FITS if result.headroom >= 0 else OVER_BUDGET)
        self._set_time(result, pinned, parsed)
        self.devices.set(f"{result.world_size:,}", f"dp {st.dp} × tp {st.tp} × pp {st.pp} × cp {st.cp}")
        self.batch.set(f"{result.global_batch_size:,}",
                       f"mbs {st.micro_batch_size} × dp {st.dp} × m {st.micro_batches}"
                       + (f" × {st.n_acc}" if st.n_acc > 1 else ""))
        params_sub = translate("Summary", "{0} active").format(fmt_count(result.parameters_active)) \
            if parsed.model.is_moe \
            else translate("Summary", "dense")
        self.params.set(fmt_count(result.parameters_total), params_sub)
        if result.parameters_mtp:
            self.params.setToolTip(self.params.toolTip() + f"; MTP {fmt_count(result.parameters_mtp)}")
        self._set_host(result)
        self.context.setText(self._context(parsed, result))
        if self.stale:
            self.fits = None
            self.verdict.set(translate("Summary", "No verdict"), translate("Summary", "not the plan in the forms"),
                             MUTED, tip=self.stale)

    def _set_time(self, result: Result, pinned: Result | None, parsed: ParsedConfig) -> None:
        shown = result.throughput
        if shown is None:
            self.mfu.caption.setText(translate("Summary", "MFU"))
            for card in (self.step_time, self.throughput, self.mfu):
                card.set("–", translate("Summary", "not priced"))
            return
        # shown at the precision the efficiency band allows (estimator.honest), the band itself under the value
        largest = max(result.parts.items(), key=lambda kv: kv[1], default=("", 0.0))
        sub = translate("Summary", "most: {0}").format(part_name(largest[0])) if largest[1] > 0 else ""
        if pinned is not None and pinned.step_time_s is not None:
            # the ratio of two plans on one device is known better than either step (estimator.honest)
            sub = translate("Summary", "{0} vs pinned").format(relative_change(pinned.step_time_s, shown.step.value))
        elif shown.step.band is not None:
            sub = translate("Summary", "{0}–{1} s").format(*shown.step.band_texts)
        self.step_time.set(shown.step.text + " s", sub, tip=parts_html(result))
        cluster = translate("Summary", "{0} tokens/s in all").format(
            fmt_count(shown.tokens.value * result.world_size))
        self.throughput.set(shown.tokens.text, shown.tokens.band_text or cluster, tip=cluster)
        self._set_mfu(result, parsed)

    def _set_mfu(self, result: Result, parsed: ParsedConfig) -> None:
        """MFU against the device's dense BF16 peak, said on the tile (P-MFU-PEAK): FP8 matmuls run above that
        peak, so an FP8 plan's MFU can pass 100 % without being a bug."""
        shown = result.throughput
        assert shown is not None
        precision = (result.mfu_peak or "bf16").upper()
        self.mfu.caption.setText(translate("Summary", "MFU of {0} peak").format(precision))
        hw = parsed.hardware
        peak = hw.peak(precision.lower()) or 0.0
        tip = translate("Summary", "Model FLOPs utilisation: the model's FLOPs per step ÷ (step time × devices × the "
                                   "device's dense {0} peak, {1} TFLOP/s).").format(precision, f"{peak / 1e12:,.1f}")
        recipe = parsed.strategy.fp8
        fp8 = recipe != "none"
        fast = hw.peak("mxfp8" if recipe == "mxfp8" else "fp8") or 0.0  # the recipe's own matmul peak
        if fp8 and peak and fast > peak:
            tip += " " + translate("Summary", "This plan's FP8 matmuls run at up to {0}× that peak, so its MFU can "
                                              "pass 100 %.").format(f"{fast / peak:.3g}")
        band = shown.mfu.band_text
        sub = band + "%" if band is not None else translate("Summary", "model FLOPs utilisation")
        if fp8 and shown.mfu.value > 1:
            sub = translate("Summary", "{0} · FP8 runs above the {1} peak").format(sub, precision)
        self.mfu.set(shown.mfu.text + "%", sub, tip=tip)

    def _set_host(self, result: Result) -> None:
        """[H-NODE] host memory per node (offload and swap) against the node's RAM from the device preset."""
        host = result.host
        if host is None or not host.used:
            self.host.set("–", translate("Summary", "nothing offloaded"))
            return
        per_device = translate("Summary", "{0} GiB per device × {1}").format(
            f"{host.per_device / GiB:,.2f}", host.devices_per_node)
        if host.ram_per_node is None:
            sub, color = translate("Summary", "{0}; the preset states no host RAM").format(per_device), None
        else:
            sub = translate("Summary", "{0}; of {1} GiB RAM").format(per_device, f"{host.ram_per_node / GiB:,.0f}")
            color = FITS if host.fits else OVER_BUDGET
        parts = ", ".join(f"{translate('Summary', HOST_PARTS[k])} {v / GiB:,.2f} GiB"
                          for k, v in max(host.stages, key=lambda s: s.total).to_dict().items()
                          if k in HOST_PARTS and v > 0)
        tip = translate("Summary", "Host memory per node: per device {0}. Click for its Explain.").format(parts)
        self.host.set(translate("Summary", "{0} GiB/node").format(f"{host.per_node / GiB:,.2f}"), sub, color, tip=tip)

    @staticmethod
    def _context(parsed: ParsedConfig, result: Result) -> str:
        st = parsed.strategy
        extras = []
        if st.vpp > 1:
            extras.append(f"vpp {st.vpp}")
        if st.ep > 1:
            extras.append(f"ep {st.ep}")
        if st.sequence_parallel:
            extras.append("SP")
        schedule = result.echo.get("strategy", {}).get("schedule", st.schedule_name)
        text = translate("Summary", "{0} · {1} · {2} · seq {3} · schedule {4}").format(
            parsed.model.name, parsed.framework, parsed.hardware.name, f"{st.seq_length:,}", schedule)
        return text + "".join(f" · {x}" for x in extras)

    def clear(self) -> None:
        for card in self.cards:
            card.set("–")
        self.context.clear()
        self.fits = None
        self._last = None

    def data(self) -> dict[str, Any]:
        """What the tiles show (tests)."""
        return {card.objectName()[5:]: (card.value.text(), card.sub.text()) for card in self.cards}


class NotesList(QListWidget):
    """Warnings, assumptions and the adaptations an edit made, grouped under headers. Built once per estimate:
    an edit's own notes and its estimate's arrive milliseconds apart, and the list waits for the estimate (at most
    ``PENDING_GRACE_MS``, as the charts keep the last numbers before they are greyed: P-STALE) instead of being
    rebuilt for each; and not at all when its rows are those shown."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notes")
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)
        self.setAccessibleName(translate("Notes", "Warnings and assumptions"))
        self._last: dict[str, Any] = {}
        self._rows: list[tuple[str, str, str]] = []  # (kind, text, colour) of each item shown
        self.builds = 0  # how many times the rows changed (tests: once per edit)
        self.extra_errors: tuple[str, ...] = ()  # problems of the app itself (user profiles that cannot be read)
        self._session: PlanSession | None = None
        self._grace = QTimer(self)
        self._grace.setSingleShot(True)
        self._grace.setInterval(PENDING_GRACE_MS)
        self._grace.timeout.connect(self._show_session)

    def on_session(self, event: SessionEvent) -> None:
        """Warnings and assumptions of the plan in the forms, and of its estimate when it is the one shown."""
        self._session = event.session
        if event.kind == CHANGED and event.session.loaded and event.session.freshness().state == PENDING:
            if not self._grace.isActive():  # a burst of edits still shows its notes after the grace
                self._grace.start()
            return
        self._grace.stop()
        self._show_session()

    def _show_session(self) -> None:
        session = self._session
        if session is None:
            return
        if not session.loaded:
            self.set_notes(errors=self.extra_errors)
            return
        parsed = session.parsed
        shown = session.shown  # its warnings count while it is of the session's plan (a refused edit is not)
        result = shown.result if shown is not None and shown.parsed is parsed else None
        fresh = session.freshness()
        errors: list[object] = [fresh.error or fresh.reason] if fresh.state == FAILED else []
        errors += [text for text in (preset_problem(session), *self.extra_errors) if text]
        self.set_notes(warnings=(*parsed.warnings, *(result.warnings if result else ())),
                       assumptions=(*parsed.assumptions, *(result.assumptions if result else ())),
                       edits=session.state.notes, errors=errors)

    def set_notes(self, *, warnings: Iterable[EstimateWarning] = (), assumptions: Iterable[Assumption] = (),
                  edits: Iterable[object] = (), errors: Iterable[object] = ()) -> None:
        self._last = {"warnings": tuple(warnings), "assumptions": tuple(assumptions), "edits": tuple(edits),
                      "errors": tuple(errors)}
        groups = [(translate("Notes", "Errors"), [said(e) for e in self._last["errors"]], OVER_BUDGET),
                  (translate("Notes", "Adapted by the last edit"), [said(e) for e in self._last["edits"]], "#0072B2"),
                  (translate("Notes", "Warnings"), [said(w) for w in dict.fromkeys(self._last["warnings"])], "#A05A00"),
                  (translate("Notes", "Assumptions (defaults the estimator filled in)"),
                   [said(a) for a in dict.fromkeys(self._last["assumptions"])], "#444444")]
        rows: list[tuple[str, str, str]] = []
        for title, lines, color in groups:
            if lines:
                rows.append(("header", f"{title} ({len(lines)})", color))
                rows += [("line", line, "") for line in lines]
        if not rows:
            rows.append(("empty", translate("Notes", "No warnings; every value comes from the files."), ""))
        self._replace_rows(rows)

    def _replace_rows(self, rows: list[tuple[str, str, str]]) -> None:
        """Show ``rows``: nothing is done when they are the rows shown (most edits keep their notes); otherwise
        the list is built again from empty, so that its rows and scroll bar are laid out as for a new list."""
        if rows == self._rows:
            return
        self.builds += 1
        self.clear()
        self.doItemsLayout()  # laid out empty first, as a new list: its scroll bar goes, the rows get the full width
        for row in rows:
            self.addItem(self._item(*row))
        self._rows = rows

    @staticmethod
    def _item(kind: str, text: str, color: str) -> QListWidgetItem:
        item = QListWidgetItem(text)
        if kind == "header":
            font = item.font()
            font.setBold(True)
            item.setFont(font)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            item.setForeground(QBrush(QColor(color)))
        elif kind == "line":
            item.setToolTip(text)
        return item

    def retranslate(self) -> None:
        self.setAccessibleName(translate("Notes", "Warnings and assumptions"))
        self.set_notes(**self._last)

    def lines(self) -> list[str]:
        return [self.item(i).text() for i in range(self.count())]
