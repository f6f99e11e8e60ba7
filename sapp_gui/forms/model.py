"""Model: the network's dimensions, read-only unless "edit model" is on (the file's dimensions are usually
what the user wants to keep)."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractSpinBox, QCheckBox, QWidget

from estimator.session import PlanSession
from estimator.warnings import Assumption

from ..language import translate
from ..style import QT_TRANSLATE_NOOP
from .fields import BoolEditor, FieldForm, FieldRow, IntEditor, TextEditor

CONTEXT = "ModelForm"
MODEL_INTS = (
    ("model.hidden_size", QT_TRANSLATE_NOOP("ModelForm", "Hidden size"), 1, False),
    ("model.num_layers", QT_TRANSLATE_NOOP("ModelForm", "Layers"), 1, False),
    ("model.num_attention_heads", QT_TRANSLATE_NOOP("ModelForm", "Attention heads"), 1, False),
    ("model.num_kv_heads", QT_TRANSLATE_NOOP("ModelForm", "KV heads"), 1, True),
    ("model.head_dim", QT_TRANSLATE_NOOP("ModelForm", "Head dim"), 1, True),
    ("model.ffn_hidden_size", QT_TRANSLATE_NOOP("ModelForm", "FFN hidden size"), 1, True),
    ("model.vocab_size", QT_TRANSLATE_NOOP("ModelForm", "Vocabulary"), 1, False),
    ("model.num_experts", QT_TRANSLATE_NOOP("ModelForm", "Experts"), 0, False),
    ("model.experts_per_token", QT_TRANSLATE_NOOP("ModelForm", "Experts per token"), 0, False),
    ("model.num_shared_experts", QT_TRANSLATE_NOOP("ModelForm", "Shared experts"), 0, False),
    ("model.moe_ffn_hidden_size", QT_TRANSLATE_NOOP("ModelForm", "Expert FFN size"), 1, True),
    ("model.first_k_dense", QT_TRANSLATE_NOOP("ModelForm", "Leading dense layers"), 0, False),
    ("model.mtp_layers", QT_TRANSLATE_NOOP("ModelForm", "MTP layers"), 0, False),
)


class ModelForm(FieldForm):
    def __init__(self, doc: PlanSession, parent: QWidget | None = None) -> None:
        super().__init__(doc, parent)
        self.setObjectName("modelForm")
        self.edit_toggle = QCheckBox()
        self.edit_toggle.setObjectName("edit_model")
        self.edit_toggle.toggled.connect(self.set_editable)
        self.layout_.addRow(self.edit_toggle)
        name = TextEditor()
        name.setObjectName("name")
        self.add_field(FieldRow("model.name", QT_TRANSLATE_NOOP("ModelForm", "Name"), name,
                                QT_TRANSLATE_NOOP("ModelForm", "model name"), context=CONTEXT))
        for key, label, minimum, optional in MODEL_INTS:
            editor = IntEditor(key, minimum, optional=optional)
            editor.setObjectName(key.split(".")[1])
            self.add_field(FieldRow(key, label, editor, context=CONTEXT))
        tie = BoolEditor(QT_TRANSLATE_NOOP("ModelForm", "tied"), CONTEXT)
        tie.setObjectName("tie_embeddings")
        self.add_field(FieldRow("model.tie_embeddings", QT_TRANSLATE_NOOP("ModelForm", "Tied embeddings"), tie,
                                context=CONTEXT))
        self.set_editable(False)
        self.retranslate_static()

    def retranslate_static(self) -> None:
        self.edit_toggle.setText(translate("ModelForm", "&Edit model"))
        self.edit_toggle.setToolTip(translate("ModelForm", "Model dimensions come from the file; turn this on to try "
                                                       "other ones."))

    def retranslate(self, assumptions: dict[str, Assumption]) -> None:
        self.retranslate_static()
        super().retranslate(assumptions)

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
