"""What ``sapp measure`` prints: the per-slot comparison table, and the measured census as layer-kind YAML
(slot id, bytes per token — per routed copy for the EXP classes — and division class, the vocabulary of the
analytic slot table)."""

from __future__ import annotations

from typing import Any

import yaml

from . import Measurement

EXPERT_CLASSES = ("exp", "expt")


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def render_text(m: Measurement) -> str:
    lines = [f"sapp measure: {m.config} ({m.model_type}); seq {m.seq_length} × micro-batch {m.micro_batch}, "
             f"{m.dtype}, attention {m.attention}, norms {m.norm}, K/V heads "
             f"{'repeated' if m.kv_repeat else 'not repeated'}; torch {m.versions.get('torch')}, "
             f"transformers {m.versions.get('transformers')}",
             "bytes per token (routed copies included); analytic: estimator/activations.py at t = 1, no recompute"]
    for k in m.kinds:
        params = f"{k.param_elements:,} parameters"
        if k.analytic_param_elements is not None:
            params += f" (analytic {k.analytic_param_elements:,.0f})"
        lines.append("")
        lines.append(f"layer kind {k.kind} (layer {k.layer_index}): {params}")
        lines.append(f"  {'slot':<16} {'class':<6} {'measured':>12} {'analytic':>12} {'diff':>9}")
        for c in k.comparison:
            diff = "" if c.diff_pct is None else f"{c.diff_pct:+.1f}%"
            note = "  (measured only)" if c.analytic is None else ("  (analytic only)" if c.measured is None else "")
            lines.append(f"  {c.slot:<16} {c.cls:<6} {_fmt(c.measured):>12} {_fmt(c.analytic):>12} {diff:>9}{note}")
        total_diff = 100.0 * (k.measured_total - k.analytic_total) / k.analytic_total if k.analytic_total else 0.0
        lines.append(f"  {'total':<16} {'':<6} {_fmt(k.measured_total):>12} {_fmt(k.analytic_total):>12} "
                     f"{total_diff:+8.1f}%")
        lines.append(f"  transient working set: forward {_fmt(k.forward_transient)}, backward "
                     f"{_fmt(k.backward_transient)} bytes per token (parameter gradients excluded)")
        for row in k.rows:
            if row.shared:
                lines.append(f"  shared with every layer (not in the total): {row.slot} {_fmt(row.bytes_per_token)}")
    for note in m.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def kind_document(m: Measurement) -> dict[str, Any]:
    """The measured kinds as a document: per kind its base kind and slots (id, bytes, class). A layer kind described
    as data (estimator/kinds) is written on its root base with what it adds besides slots (its parameters,
    FLOPs, symbols, missing mixer), so the file loads as a kind file and prices what the data kind prices."""
    from ..kinds import base_of, get_kind, inherited

    kinds = []
    for k in m.kinds:
        data = get_kind(k.kind)
        classes = {c.slot: c.cls for c in k.comparison}
        slots = []
        for row in k.rows:
            if row.shared:
                continue
            cls = classes.get(row.slot) or ("exp" if row.slot.startswith("e.") else "rep")
            per = m.experts_per_token if cls in EXPERT_CLASSES and m.experts_per_token else 1
            slots.append({"id": row.slot, "bytes": round(row.bytes_per_token / per, 3), "class": cls})
        kinds.append({
            "name": f"{m.model_type}.{k.kind}", "base": base_of(k.kind), "measured_layer": k.layer_index,
            **(inherited(data) if data is not None else {}),
            "slots": slots,
            "transient_bytes_per_token": {"forward": round(k.forward_transient, 3),
                                          "backward": round(k.backward_transient, 3)},
            "parameters": k.param_elements,
        })
    return {
        "source": {"tool": "sapp measure", "config": m.config, "model_type": m.model_type,
                   "seq_length": m.seq_length, "micro_batch": m.micro_batch, "dtype": m.dtype,
                   "attention": m.attention, "norm": m.norm, "kv_repeat": m.kv_repeat, **m.versions},
        "kinds": kinds,
    }


def kind_yaml(m: Measurement) -> str:
    header = ("# Layer kinds measured by `sapp measure` (bytes per token of the slot's unit: per routed copy for\n"
              "# the exp/expt classes). Slot ids and classes follow estimator/activations.py.\n")
    return header + yaml.safe_dump(kind_document(m), sort_keys=False, allow_unicode=True)
