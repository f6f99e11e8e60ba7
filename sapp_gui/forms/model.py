"""Model: the network's dimensions, read-only unless "edit model" is on (the file's dimensions are usually
what the user wants to keep)."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractSpinBox, QCheckBox, QWidget

from estimator.warnings import Assumption

from ..document import Document
from .fields import BoolEditor, FieldForm, FieldRow, IntEditor, TextEditor

MODEL_INTS = (
    ("model.hidden_size", "Hidden size", 1, False),
    ("model.num_layers", "Layers", 1, False),
    ("model.num_attention_heads", "Attention heads", 1, False),
    ("model.num_kv_heads", "KV heads", 1, True),
    ("model.head_dim", "Head dim", 1, True),
    ("model.ffn_hidden_size", "FFN hidden size", 1, True),
    ("model.vocab_size", "Vocabulary", 1, False),
    ("model.num_experts", "Experts", 0, False),
    ("model.experts_per_token", "Experts per token", 0, False),
    ("model.num_shared_experts", "Shared experts", 0, False),
    ("model.moe_ffn_hidden_size", "Expert FFN size", 1, True),
    ("model.first_k_dense", "Leading dense layers", 0, False),
    ("model.mtp_layers", "MTP layers", 0, False),
)


class ModelForm(FieldForm):
    def __init__(self, doc: Document, parent: QWidget | None = None) -> None:
        super().__init__(doc, parent)
        self.setObjectName("modelForm")
        self.edit_toggle = QCheckBox("&Edit model")
        self.edit_toggle.setObjectName("edit_model")
        self.edit_toggle.setToolTip("Model dimensions come from the file; turn this on to try other ones.")
        self.edit_toggle.toggled.connect(self.set_editable)
        self.layout_.addRow(self.edit_toggle)
        name = TextEditor()
        name.setObjectName("name")
        self.add_field(FieldRow("model.name", "Name", name, "model name"))
        for key, label, minimum, optional in MODEL_INTS:
            editor = IntEditor(minimum, 10_000_000, optional=optional)
            editor.setObjectName(key.split(".")[1])
            self.add_field(FieldRow(key, label, editor))
        tie = BoolEditor("tied")
        tie.setObjectName("tie_embeddings")
        self.add_field(FieldRow("model.tie_embeddings", "Tied embeddings", tie))
        self.set_editable(False)

    def set_editable(self, on: bool) -> None:
        for row in self.rows.values():
            editor = row.editor
            if isinstance(editor, QAbstractSpinBox):
                editor.setReadOnly(not on)
                editor.setButtonSymbols(QAbstractSpinBox.ButtonSymbols.UpDownArrows if on
                                        else QAbstractSpinBox.ButtonSymbols.NoButtons)
            elif hasattr(editor, "setReadOnly"):
                editor.setReadOnly(not on)
            else:
                editor.setEnabled(on)

    def refresh(self, assumptions: dict[str, Assumption]) -> None:
        super().refresh(assumptions)
