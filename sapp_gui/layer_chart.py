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


class LayerChart(StackedBarChart):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(translate("LayerChart", "Per layer"), self.axis_text(), parent)
        self.setObjectName("layerChart")
        self.stage: StageResult | None = None
        self.chunks = 1

    def set_stage(self, stage: StageResult, chunks: int = 1) -> None:
        self.stage, self.chunks = stage, chunks
        rows = stage.layers
        stack = np.array([row.bytes for row in rows], dtype=float).reshape(len(rows), len(CATEGORIES))
        self.set_stack(np.arange(len(rows), dtype=float), stack, 0.72)
        labels = [row_label(r, chunks) for r in rows]
        axis = self.plot.getPlotItem().getAxis("bottom")
        metrics = QFontMetrics(axis.style.get("tickFont") or self.font())
        widest = max((metrics.horizontalAdvance(text) for text in labels), default=0)
        # one label per (widest label + a gap) of plot width, again on every resize: ticks never overlap
        self.set_ticks(labels, max_labels=len(labels) or 1, px_per_label=widest + 12)
        top = float(stack.sum(axis=1).max(initial=0.0)) / GiB
        item = self.plot.getPlotItem()
        self.set_y_top(top * 1.08)
        pad = max(0.0, (6 - len(rows)) / 2)
        item.setXRange(-0.6 - pad, len(rows) - 0.4 + pad, padding=0)
        head = translate("LayerChart", "Stage {0}, per layer: {1} GiB in {2} rows").format(
            stage.index, f"{stage.total / GiB:,.2f}", len(rows))
        peak = translate("LayerChart", "peak point: {0}").format(said(stage.peak_said or stage.peak_instant))
        self.title.setText(f"{head} <span style='font-weight:normal; color:#555'>({peak})</span>")

    @staticmethod
    def axis_text() -> str:
        return translate("LayerChart", "Layer  (emb = embedding, d/m = dense/MoE layer; recompute ·F full, "
                                       "·S selective, ·C comm)")

    def retranslate(self) -> None:
        self.set_labels(translate("LayerChart", "Per layer"), self.axis_text())
        if self.stage is not None:
            self.set_stage(self.stage, self.chunks)

    def clear(self) -> None:
        self.stage = None
        self.set_stack(np.zeros(0), np.zeros((0, len(CATEGORIES))))
        self.title.setText(translate("LayerChart", "Per layer"))

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
