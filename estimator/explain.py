"""Explain trace (docs/model.md#explain): every reported number can print its formula, the values substituted, and
its children. Traces are built only in scalar mode with ``explain=True``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .messages import ENGLISH, Message, Text, english, msg
from .units import fmt_bytes

# formula_id -> template. Symbols are those of docs/model.md#symbols; inputs use the same names.
FORMULAS: dict[str, str] = {
    "M-STAGE": "parameters + gradients + optimizer_states + activations + communication_buffers + "
               "working_overhead + reserve",
    "S-LAYER.params": "β_p·(E_d/sh_p + E_e/sh_pe)",
    "S-LAYER.grads": "γ·β_g·(E_d/sh_g + E_e/sh_ge)",
    "S-LAYER.opt": "(n_os·β_os + β_m)·(E_d/sh_o + E_e/sh_oe)",
    "S-LAYER.params.peft": "(β_p·(E_d − E_a − E_q) + β_a·E_a + β_q·E_q)/sh_p + (β_p·(E_e − E_qe) + β_q·E_qe)/sh_pe",
    "S-LAYER.grads.peft": "γ·β_g·E_a/sh_g (the frozen base has none)",
    "S-LAYER.opt.peft": "(n_os·β_os + β_m)·E_a/sh_o (adapters only)",
    "S-LAYER.params.freeze": "(β_pf·(E_d − E_t) + β_p·E_t)/sh_p + (β_pf·(E_e − E_te) + β_p·E_te)/sh_pe",
    "S-LAYER.grads.freeze": "γ·β_g·(E_t/sh_g + E_te/sh_ge) (frozen weights have none)",
    "S-LAYER.opt.freeze": "(n_os·β_os + β_m)·(E_t/sh_o + E_te/sh_oe) (trainable weights only)",
    "P-LORA": "E_a = Σ over adapted modules r·(d_in + d_out), column-parallel B and row-parallel A ÷ t",
    "P-NF4": "β_q = 0.5 + 1/64 + 4/(64·256) with double quantisation, else 0.5 + 4/64",
    "S-FP8": "TE: 2·β_8·E_8 (cached rowwise + columnwise FP8 weights) | with FP8 weights (β_8 − β_p)·E_8/sh_p + "
             "β_8·E_8 | + 20·(len + 2) per GEMM with delayed scaling",
    "A-FP8": "linear inputs saved at β_8 instead of β_c (Transformer Engine, columnwise); β_8 = 1, +4/128 blockwise, "
             "+1/32 MXFP8",
    "P-LOCAL": "E_d = tp/t + rep; E_e = exp/(ep·etp)",
    "P-EMB": "v_pad·h / t (÷ 1 with vocab_emb_dp)",
    "P-POS": "n_pos·h (learned absolute positions: replicated across TP, on the first stage only)",
    "P-HEAD": "c_norm·h + v_pad·h/t_H (t_H = 1: MindFormers replicates the head with vocab_emb_dp, D58)",
    "A-LAYER": "n_j·(T·(Σ_SP/sp_div + Σ_TP/t + Σ_REP + Σ_V·v_pad/t_V) + R·(Σ_EXP + Σ_EXPT/etp) + β_c·casts)",
    "A-FULL": "n_j·β_r·h·T/d_in",
    "A-STAGE": "max over replay points r of Σ_j n_j(r)·A_chunk(j) + working(r) + buffers",
    "W-BWD": "max(0, max_ℓ Rc(ℓ) + Gw(ℓ) − Σ A1(ℓ' already back-propagated))",
    "W-MASK": "on a chunk holding the embedding or the output: max(W-BWD, F + M, [cp > 1]·(b·s·s + M) − A_chunk), "
              "M = b·(s/cp)·s (Megatron-LM's dataloader mask, booleans)",
    "C-BUF": "resident gathered weights + max over layers of transient buffers C(ℓ)",
    "C-BUF.layer": "2·β_c·h·T·[sp] + CP + 2·β_c·h·R·[ep>1] + 2·β_c·E·[zero3] + 2·β_c·h·T/sp_div·[p>1]",
    "C-BUF.resident": "β_c·(E_d + E_e)",
    "C-BUF.sp": "2·β_c·h·T (double-buffered sequence-parallel all-gather); MindSpeed MC2: max of it and "
                "C-BUF.mc2",
    "C-BUF.mc2": "max over the layer's TP linears on the hidden states of ⌈k⌉₂₅₆·⌈n⌉₂₅₆·β_c (the local weight in "
                 "NZ) + β_c·h·T + 16 MiB (CANN all_gather_matmul / matmul_reduce_scatter workspace)",
    "C-BUF.cp": "ring 2·β_c·n_kv·(dqk + dv)·T/t | Ulysses β_c·(q_w + k_w + v_w + o_w)·T/t | all-gather "
                "2·cp·β_c·n_kv·(dqk + dv)·T/t",
    "C-BUF.ep": "2·β_c·h·R (dispatch and combine)",
    "C-BUF.dp": "2·β_c·(E_d + E_e) (current + prefetched gathered weights)",
    "C-BUF.zero": "DeepSpeed (hf_trainer): ZeRO-3 min(β_c·E + β_c·prefetch, max(β_c·E, β_c·max_live)) + β_g·reduce; "
                  "ZeRO-1/2 f·(β_g·reduce + β_p·allgather), f = 4.5 with overlap_comm else 1",
    "C-BUF.pp": "2·β_c·h·T/sp_div (send and receive)",
    "D-UB": "[t>1]·(bytes_per_row·S·h + fixed + 132 B·world), S = s·b/cp; bytes_per_row = Σ over TE's 12 "
            "overlapped GEMMs of β_buf, ×(2t − 1)/t for a ring_exchange reduce-scatter (β_buf 2: bf16; 1 for an "
            "fp8_buf one under FP8 — by default the 8 all-gather ones; --tp-comm-overlap-cfg as TE applies it)",
    "RESERVE": "reserve_fixed + frag_fraction·(activations + working) + comm_lib_per_group·groups",
    "S-OPT": "parameters + gradients + optimizer_states/swap_times + temporaries + resident gathered + "
             "reserve_fixed + comm-library reserve",
    "F-INST": "max over FSDP2 instants of gradients + activations + communication_buffers + working_overhead",
    "F-UNIT": "β_c·E_u gathered per unit",
    "BUDGET": "(budget_override | framework limit | capacity) − margin",
    "H-NODE": "devices_per_node · max over stages of H-DEVICE (against host_ram_per_node)",
    "H-DEVICE": "Σ_j n_j·offload_chunk(j) + host-kept optimizer states + parameters + gradients",
}

# an Explain heading per memory category (its label stays the category's name, as the JSON and the app match it)
CATEGORY_LABELS: dict[str, Message] = {
    "parameters": msg("category.parameters"), "gradients": msg("category.gradients"),
    "optimizer_states": msg("category.optimizer_states"), "activations": msg("category.activations"),
    "communication_buffers": msg("category.communication_buffers"),
    "working_overhead": msg("category.working_overhead"), "reserve": msg("category.reserve"),
    "library_workspaces": msg("category.library_workspaces"), "allocator_slack": msg("category.allocator_slack"),
    "runtime_context": msg("category.runtime_context"), "comm_library": msg("category.comm_library")}


@dataclass
class Quantity:
    """One explained number. ``op``: sum | max | product | formula; a sum equals the sum of its children,
    a max equals the largest child and its ``note`` names the argmax."""

    label: Text
    value: float
    formula_id: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    children: list[Quantity] = field(default_factory=list)
    note: Text = ""
    op: str = "formula"
    unit: str = "B"
    # the catalogue messages of label and note (``label``/``note`` hold their English text, as the JSON does)
    messages: dict[str, Message] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("label", "note"):
            text = getattr(self, name)
            if isinstance(text, Message):
                self.messages[name] = text
                setattr(self, name, english(text))

    def localized(self, name: str, language: str = ENGLISH) -> str:
        """``label`` or ``note`` in ``language`` (as written when it is not a catalogue message, or was
        replaced by plain text since)."""
        text = getattr(self, name)
        message = self.messages.get(name)
        if message is None or language == ENGLISH or english(message) != text:
            return text
        return message.render(language)

    @property
    def template(self) -> str:
        return FORMULAS.get(self.formula_id, "")

    def substituted(self) -> str:
        """The template with the input values written in place of their symbols."""
        text = self.template
        if not text:
            return ""
        for name in sorted(self.inputs, key=len, reverse=True):
            value = self.inputs[name]
            shown = _fmt_value(value.value if isinstance(value, Quantity) else value)
            text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", shown, text)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label, "value": self.value, "unit": self.unit, "formula_id": self.formula_id,
            "template": self.template, "substituted": self.substituted(),
            "inputs": {k: (v.value if isinstance(v, Quantity) else v) for k, v in self.inputs.items()},
            "op": self.op, "note": self.note, "children": [c.to_dict() for c in self.children],
        }

    def number(self) -> str:
        """The value without its unit: a whole count with thousands separators (elements), else 6 digits."""
        whole = float(self.value).is_integer() and abs(self.value) < 1e15
        return f"{self.value:,.0f}" if whole else f"{self.value:g}"

    def render(self, depth: int = 0, max_depth: int = 4, language: str = ENGLISH) -> str:
        """Indented text: label = value, the formula and its substitution, then the children."""
        pad = "  " * depth
        value = fmt_bytes(self.value) if self.unit == "B" else f"{self.number()} {self.unit}"
        note = self.localized("note", language)
        lines = [f"{pad}{self.localized('label', language)} = {value}" +
                 (f"  [{self.formula_id}]" if self.formula_id else "") + (f"  ({note})" if note else "")]
        if self.template and self.op == "formula":
            lines.append(f"{pad}    = {self.template}")
            sub = self.substituted()
            if sub and sub != self.template:
                lines.append(f"{pad}    = {sub}")
        if depth < max_depth:
            lines.extend(c.render(depth + 1, max_depth, language) for c in self.children)
        return "\n".join(lines)

    def check(self, rel: float = 1e-9) -> list[str]:
        """Inconsistencies between sum/max nodes and their children (for tests)."""
        problems = []
        if self.children and self.op == "sum":
            total = sum(c.value for c in self.children)
            if abs(total - self.value) > rel * max(1.0, abs(self.value)):
                problems.append(f"{self.label}: sum of children {total} != {self.value}")
        if self.children and self.op == "max":
            top = max(c.value for c in self.children)
            if abs(top - self.value) > rel * max(1.0, abs(self.value)):
                problems.append(f"{self.label}: max of children {top} != {self.value}")
        for child in self.children:
            problems.extend(child.check(rel))
        return problems


def _fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.6g}"
    return str(value)


def sum_node(label: Text, children: list[Quantity], formula_id: str = "", note: Text = "") -> Quantity:
    return Quantity(label, float(sum(c.value for c in children)), formula_id, children=children, op="sum",
                    note=note)


def max_node(label: Text, children: list[Quantity], formula_id: str = "") -> Quantity:
    if not children:
        return Quantity(label, 0.0, formula_id, op="max")
    best = max(children, key=lambda c: c.value)
    return Quantity(label, best.value, formula_id, children=children, op="max", note=msg("explain.argmax",
                                                                                         name=best.messages.get("label",
                                                                                                                best.label)))
