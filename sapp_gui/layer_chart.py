"""Per-layer stacked bars of one pipeline stage: embedding, every layer (with its recompute option), output,
MTP, and the stage-level working / buffers / reserve rows."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QWidget

from estimator.result import CATEGORIES, LayerRow, StageResult
from estimator.units import GiB

from .bars import StackedBarChart
from .language import said, translate
from .style import QT_TRANSLATE_NOOP

OPTION_MARKS = {"full": "F", "selective": "S", "comm": "C", "both": "S+C"}
KIND_SHORT = {"embedding": "emb", "output": "out", "mtp": "mtp", "embedding_copy": "emb copy", "vision": "vit",
              "noop": "noop", "working": "work", "buffers": "buf", "reserve": "res", "gradients": "grads",
              "activations": "act", "workspaces": "wksp", "allocator_slack": "slack", "runtime_context": "ctx",
              "comm_library": "libs", "symmetric_memory": "symm", "userbuffers": "ub"}
KIND_NAMES = {"embedding": QT_TRANSLATE_NOOP("LayerChart", "Embedding"),
              "output": QT_TRANSLATE_NOOP("LayerChart", "Output head"),
              "embedding_copy": QT_TRANSLATE_NOOP("LayerChart", "Embedding copy (MTP)"),
              "working": QT_TRANSLATE_NOOP("LayerChart", "Working overhead"),
              "buffers": QT_TRANSLATE_NOOP("LayerChart", "Communication buffers"),
              "reserve": QT_TRANSLATE_NOOP("LayerChart", "Reserve"),
              "vision": QT_TRANSLATE_NOOP("LayerChart", "Vision tower"),
              "noop": QT_TRANSLATE_NOOP("LayerChart", "No-op layer"),
              "gradients": QT_TRANSLATE_NOOP("LayerChart", "Gradients (FSDP2, stage level)"),
              "activations": QT_TRANSLATE_NOOP("LayerChart", "Activations (FSDP2, stage level)"),
              "workspaces": QT_TRANSLATE_NOOP("LayerChart", "Library workspaces (allocated)"),
              "allocator_slack": QT_TRANSLATE_NOOP("LayerChart", "Caching allocator slack (reserved − allocated)"),
              "runtime_context": QT_TRANSLATE_NOOP("LayerChart", "Runtime context (outside the allocator)"),
              "comm_library": QT_TRANSLATE_NOOP("LayerChart", "Communication library buffers"),
              "symmetric_memory": QT_TRANSLATE_NOOP("LayerChart", "Async TP symmetric memory (outside the allocator)"),
              "userbuffers": QT_TRANSLATE_NOOP("LayerChart", "TP overlap userbuffers (outside the allocator)")}
LAYER_KINDS = {"dense": QT_TRANSLATE_NOOP("LayerChart", "Dense layer {0}"),
               "moe": QT_TRANSLATE_NOOP("LayerChart", "MoE layer {0}"),
               "mtp": QT_TRANSLATE_NOOP("LayerChart", "MTP layer {0}")}
RECOMPUTE_NAMES = {"full": QT_TRANSLATE_NOOP("LayerChart", "full recompute"),
                   "selective": QT_TRANSLATE_NOOP("LayerChart", "selective recompute"),
                   "comm": QT_TRANSLATE_NOOP("LayerChart", "comm recompute"),
                   "both": QT_TRANSLATE_NOOP("LayerChart", "selective + comm recompute")}


TICK_GAP_PX = 10  # between two tick labels on one line

STAGE_LEVEL = ("working", "buffers", "reserve", "gradients", "activations", "workspaces", "allocator_slack",
               "runtime_context", "comm_library", "symmetric_memory", "userbuffers")


def row_label(row: LayerRow, chunks: int = 1) -> str:
    """Short tick label: ``m12·F`` = MoE layer 12 with full recompute; ``emb``, ``out``, ``work``…"""
    if row.index is not None:
        text = f"{row.kind[0] if row.kind in ('dense', 'moe') else row.kind}{row.index}"
    else:
        text = KIND_SHORT.get(row.kind, row.kind)
    mark = OPTION_MARKS.get(row.option)
    if mark:
        text += f"·{mark}"
    if chunks > 1 and row.kind not in STAGE_LEVEL:
        text += f" c{row.chunk}"
    return text


def row_title(row: LayerRow) -> str:
    """Long name: ``MoE layer 12 (full recompute), chunk 0``."""
    if row.index is not None:
        template = LAYER_KINDS.get(row.kind)
        text = translate("LayerChart", template).format(row.index) if template else f"{row.kind} {row.index}"
    else:
        name = KIND_NAMES.get(row.kind)
        text = translate("LayerChart", name) if name else row.kind
    if row.option and row.option != "none":
        option = RECOMPUTE_NAMES.get(row.option)
        text += f" ({translate('LayerChart', option) if option else row.option})"
    return text


def tail_layout(body: int, tail: int, width_px: float, label_px: float) -> float:
    """The spacing, in x units, of ``tail`` stage-level rows after ``body`` rows one unit apart on a plot
    ``width_px`` wide, so that labels ``label_px`` wide on two staggered lines (each line labels every second
    slot) never overlap; the last slot has one more spacing of room on its right, so that its label stays inside
    the plot (the axis drops a label that sticks out). The tail takes at most half the plot: past that the layers
    would be slivers."""
    if tail == 0:
        return 1.0
    # 2·s·p ≥ L, p = W / (body − 0.4 + s·(tail + 1))  ⇒  s·(2W − L·(tail + 1)) ≥ L·(body − 0.4)
    room = 2 * width_px - label_px * (tail + 1)
    needed = label_px * max(body - 0.4, 0.6) / room if room > 0 else float("inf")
    return min(max(1.0, needed), max(1.0, body / (tail + 1)))


class LayerChart(StackedBarChart):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(translate("LayerChart", "Per layer"), self.axis_text(), parent)
        self.setObjectName("layerChart")
        self.stage: StageResult | None = None
        self.chunks = 1
        self._stack_rows = np.zeros((0, len(CATEGORIES)))
        self.plot.getPlotItem().getViewBox().sigResized.connect(self._on_view_resized)

    def set_stage(self, stage: StageResult, chunks: int = 1) -> None:
        self.stage, self.chunks = stage, chunks
        rows = stage.layers
        stack = np.array([row.bytes for row in rows], dtype=float).reshape(len(rows), len(CATEGORIES))
        self._stack_rows = stack
        self._place()
        top = float(stack.sum(axis=1).max(initial=0.0)) / GiB
        self.set_y_top(top * 1.08)
        head = translate("LayerChart", "Stage {0}, per layer: {1} GiB in {2} rows").format(
            stage.index, f"{stage.total / GiB:,.2f}", len(rows))
        peak = translate("LayerChart", "peak point: {0}").format(said(stage.peak_said or stage.peak_instant))
        self.title.setText(f"{head} <span style='font-weight:normal; color:#555'>({peak})</span>")
        self.view.prepareForPaint()  # the new ranges reach the axes now: one paint per edit, not a second one

    def _place(self) -> None:
        """Bars and ticks for the plot's width (again on every resize). The layers sit one per unit, their ticks
        thinned to what fits; the stage-level rows after them (working, buffers, … libs, symm) are spaced so that
        each of them that holds memory is labelled, on two staggered lines (``tail_layout``)."""
        assert self.stage is not None
        rows = self.stage.layers
        labels = [row_label(r, self.chunks) for r in rows]
        tail = len(rows)
        while tail > 0 and rows[tail - 1].kind in STAGE_LEVEL:
            tail -= 1
        axis = self.plot.getPlotItem().getAxis("bottom")
        metrics = QFontMetrics(axis.style.get("tickFont") or self.font())
        named = [i for i in range(tail, len(rows)) if self._stack_rows[i].any()]
        widest_tail = max((metrics.horizontalAdvance(labels[i]) for i in named), default=0)
        width = self._view_width()
        spacing = tail_layout(tail, len(rows) - tail, width, widest_tail + TICK_GAP_PX)
        right = spacing if tail < len(rows) else 0.6
        x = np.arange(len(rows), dtype=float)
        x[tail:] = tail - 1 + spacing * np.arange(1, len(rows) - tail + 1)
        widths = np.full(len(rows), 0.72)
        widths[tail:] = 0.6 * spacing  # as wide for their slot as a layer's bar for its own
        self.set_stack(x, self._stack_rows, widths)
        pad = max(0.0, (6 - len(rows)) / 2)
        end = (float(x[-1]) if len(rows) else 0.0) + right + pad
        first_half = metrics.horizontalAdvance(labels[0]) / 2 + 2 if labels else 0.0
        left = -0.6 - pad
        left = -max(0.6 + pad, first_half / (width / max(end - left, 1e-9)))  # the first label inside the plot
        self.plot.getPlotItem().setXRange(left, end, padding=0)
        px_per_unit = width / max(end - left, 1e-9)
        widest_body = max((metrics.horizontalAdvance(t) for t in labels[:tail]), default=0)
        step = max(1, int(np.ceil((widest_body + TICK_GAP_PX) / max(px_per_unit, 1e-9))))
        ticks = [(float(i), labels[i]) for i in range(0, tail, step)]
        if named:  # the first line's tail labels keep the body's last tick clear of them
            first = x[named[0]]
            reach = (metrics.horizontalAdvance(labels[named[0]]) + widest_body) / 2 + TICK_GAP_PX
            ticks = [(at, text) for at, text in ticks if (first - at) * px_per_unit >= reach]
        ticks += [(float(x[i]), ("\n" if k % 2 else "") + labels[i]) for k, i in enumerate(named)]
        ticks = [(at, text) for at, text in ticks  # what the axis draws: it drops a label that sticks out
                 if min(at - left, end - at) * px_per_unit >= metrics.horizontalAdvance(text.strip()) / 2 - 1]
        if ticks != self._ticks:
            self._ticks = ticks
            axis.setTicks([ticks, []])

    def _view_width(self) -> float:
        view = self.plot.getPlotItem().getViewBox()
        return float(view.width()) if view.width() > 0 else max(100.0, self.plot.width() - 50.0)

    def _on_view_resized(self) -> None:
        if self.stage is not None:
            self._place()

    @staticmethod
    def axis_text() -> tuple[str, ...]:
        """The x axis's title, long to short (the longest that fits is shown)."""
        return (translate("LayerChart", "Layer  (emb = embedding, d/m = dense/MoE layer; recompute ·F full, "
                                        "·S selective, ·C comm)"),
                translate("LayerChart", "Layer  (d/m = dense/MoE; recompute ·F full, ·S selective, ·C comm)"),
                translate("LayerChart", "Layer"))

    def retranslate(self) -> None:
        self.set_labels(translate("LayerChart", "Per layer"), self.axis_text())
        if self.stage is not None:
            self.set_stage(self.stage, self.chunks)

    def clear(self, message: str = "") -> None:
        """No stage: ``message`` says why (by default: the estimate is on its way)."""
        self.stage = None
        self._stack_rows = np.zeros((0, len(CATEGORIES)))
        self.title.setText(translate("LayerChart", "Per layer"))
        self.show_empty(message or translate("Charts", "Estimating…"))

    def hover_html(self, index: int, category: str) -> str:
        assert self.stage is not None
        row = self.stage.layers[index]
        title = row_title(row) + (translate("LayerChart", ", chunk {0}").format(row.chunk) if self.chunks > 1 else "")
        html = self.breakdown_html(index, category, title)
        extra = []
        if row.inflight:
            extra.append(translate("LayerChart", "activations of {0} micro-batch(es) in flight").format(row.inflight))
        if row.note:
            extra.append(said(row.said or row.note))
        if extra:
            html += "<br>" + "<br>".join(extra)
        return html

    def csv_rows(self) -> list[list[object]]:
        rows: list[list[object]] = [["row", "kind", "index", "chunk", "recompute", "in flight",
                                     *(f"{c} (GiB)" for c in CATEGORIES), "total (GiB)"]]
        if self.stage is None:
            return rows
        for i, row in enumerate(self.stage.layers):
            rows.append([i, row.kind, "" if row.index is None else row.index, row.chunk, row.option, row.inflight,
                         *(round(v / GiB, 4) for v in row.bytes), round(row.total / GiB, 4)])
        return rows
