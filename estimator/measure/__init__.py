"""``sapp measure``: the activation census of a Hugging Face causal LM, measured with PyTorch on fake tensors.

The model is built from its ``config.json`` with transformers under ``FakeTensorMode`` (no weights, no GPU, no
network), one layer of each kind runs forward and backward at the given sequence length and micro-batch, and
every storage autograd saves is recorded with the module and op that produced it (tracer.py). The census is
named in the slot vocabulary of the analytic model (census.py) and compared with it slot by slot (bytes per
token, difference in %). PyTorch and transformers are the optional ``measure`` extra: nothing here imports them
until a measurement runs.

Known traps, and what this module does about them:
- attention path: ``flash`` (default) runs FlashAttention's contract (saves q, k, v, out and the fp32
  logsumexp; K/V heads not repeated; value width of its own for MLA), as training stacks do; ``sdpa`` and
  ``eager`` run transformers' own paths as they run on a CPU (eager materialises the scores in fp32 and their
  cast, sdpa repeats K/V when the decoder passes a mask).
- GQA: the analytic side is priced with ``kv_repeat`` set from what was measured (the saved key's head count).
- norms: ``fused`` (default) runs every Llama-pattern RMSNorm as a fused kernel's contract (Apex/TE/Megatron:
  saves the input, the weight and the fp32 statistics); ``hf`` runs transformers' eager norm, which saves an
  fp32 upcast of the input and the normalised tensor before the weight as well.
- dropout: measured as the config states (training mode); the analytic side uses the family profile.
- gradient checkpointing: switched off (the census is the no-recompute one).
- tied embeddings: only body layers are measured; parameters are counted per layer.
- routed experts: ``experts_implementation="grouped_mm"`` (one grouped GEMM over the routed copies, static shapes);
  a model without that switch runs its own expert loop, which needs routing values that fake tensors lack.
- DeepSeek sparse attention: transformers runs the indexer under no_grad (inference); it runs here as training
  does, on detached inputs with autograd on — the fused indexer's contract under ``flash`` (the sparse flash
  kernel then keeps the top-k indices), transformers' unfused arithmetic otherwise.
- Mamba-2 mixers: transformers' CPU path is the unfused PyTorch scan; they run here as the fused kernel's
  contract (mamba_ssm's split-conv1d-scan with the gated norm, out_proj apart, as Megatron calls it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, SappError
from ..inputs import load_json, read_text
from ..messages import msg

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
TORCH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
ATTENTION_MODES = ("flash", "sdpa", "eager")
NORM_MODES = ("fused", "hf")
EXTRA_HINT = "pip install 'sapp-planner[measure]' (PyTorch CPU and transformers)"


@dataclass(frozen=True)
class SlotComparison:
    slot: str
    measured: float | None   # bytes per token (routed copies included)
    analytic: float | None
    cls: str = ""

    @property
    def diff_pct(self) -> float | None:
        if self.measured is None or self.analytic is None or self.analytic == 0:
            return None
        return 100.0 * (self.measured - self.analytic) / self.analytic


@dataclass(frozen=True)
class KindMeasurement:
    kind: str
    layer_index: int
    rows: tuple  # census.CensusRow
    comparison: tuple[SlotComparison, ...]
    forward_transient: float   # bytes per token above the forward's end state, at its peak
    backward_transient: float  # bytes per token above the backward's start state, parameter gradients excluded
    param_elements: int
    analytic_param_elements: float | None

    @property
    def measured_total(self) -> float:
        return sum(r.bytes_per_token for r in self.rows if not r.shared)

    @property
    def analytic_total(self) -> float:
        return sum(c.analytic or 0.0 for c in self.comparison)


@dataclass(frozen=True)
class Measurement:
    config: str
    model_type: str
    seq_length: int
    micro_batch: int
    dtype: str
    attention: str
    norm: str
    kv_repeat: bool
    kinds: tuple[KindMeasurement, ...]
    experts_per_token: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _load_config(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    data = load_json(read_text(p), str(p))  # regular files only, bounded (docs/limits.md)
    if not isinstance(data, dict) or not data.get("model_type"):
        raise ConfigError(msg("measure.hugging-face-config"), path=str(p),
                          key="model_type")
    return data


def _model_spec(path: str, data: dict[str, Any]) -> Any:
    """The estimator's ModelSpec of the same config (its layer kinds name the measured layers)."""
    from ..fields import REGISTRY, coerce
    from ..formats.hf import read_hf
    from ..parsed import _model_from

    values, _, _ = read_hf(data, path)
    for key in list(values):
        info = REGISTRY.get(key)
        if info is not None:
            values[key] = coerce(info, values[key], path)
    return _model_from(values, path)


def layers_to_measure(spec: Any) -> dict[str, int]:
    """The first body layer of every kind (noop and vision layers have no census of their own)."""
    first: dict[str, int] = {}
    for index, kind in enumerate(spec.body_kinds()):
        if kind not in ("noop", "vision") and kind not in first:
            first[kind] = index
    return first


def measure(config: str | Path, seq_length: int = 4096, micro_batch: int = 1, dtype: str = "bf16",
            attention: str = "flash", norm: str = "fused") -> Measurement:
    """Measure one layer of each kind of the model in ``config`` (a config.json or its folder)."""
    if norm not in NORM_MODES:
        raise SappError(msg("measure.norm-one", norm=norm, NORM_MODES=', '.join(NORM_MODES)))
    if dtype not in DTYPE_BYTES:
        raise SappError(msg("measure.dtype-one", dtype=dtype, DTYPE_BYTES=', '.join(DTYPE_BYTES)))
    if attention not in ATTENTION_MODES:
        raise SappError(msg("measure.attention-one", attention=attention, ATTENTION_MODES=', '.join(ATTENTION_MODES)))
    if seq_length < 1 or micro_batch < 1:
        raise SappError(msg("measure.seq-length-micro"))
    data = _load_config(config)
    spec = _model_spec(str(config), data)
    chosen = layers_to_measure(spec)
    try:
        import torch
        import transformers

        from . import tracer
    except ImportError as exc:
        raise SappError(msg("measure.sapp-measure-needs", name=exc.name, EXTRA_HINT=EXTRA_HINT)) \
            from None
    from .census import Saved, census_rows

    torch.set_num_threads(min(2, torch.get_num_threads()))
    try:
        mode, model, unfused = tracer.build_model(data, dtype, attention, max(chosen.values()) + 1,
                                                  fused_norms=norm == "fused")
        traces = tracer.trace_layers(mode, model, sorted(chosen.values()), micro_batch, seq_length, dtype)
    except (ValueError, NotImplementedError, RuntimeError, TypeError) as exc:
        raise SappError(msg("measure.transformers-could-build", data=data['model_type'], exc=exc)) \
            from None
    tokens = micro_batch * seq_length
    kinds: list[KindMeasurement] = []
    rows_by_kind = {}
    for kind, index in chosen.items():
        tr = traces[index]
        saved = [Saved(e.producer_module, e.producer_op, e.shape, e.dtype, e.nbytes, e.lineage,
                       tuple(s[0] for s in e.savers), tuple(s[2] for s in e.savers)) for e in tr.saved]
        rows_by_kind[kind] = census_rows(saved, tokens, TORCH_DTYPE[dtype], kind.endswith("moe"), spec.hidden_size)
    kv_repeat = _measured_kv_repeat(rows_by_kind, spec, DTYPE_BYTES[dtype])
    for kind, index in chosen.items():
        tr = traces[index]
        analytic, classes, params = _analytic(spec, kind, seq_length, micro_batch, dtype, attention, kv_repeat)
        comparison = compare(rows_by_kind[kind], analytic, classes)
        kinds.append(KindMeasurement(
            kind, index, tuple(rows_by_kind[kind]), comparison,
            forward_transient=(tr.fwd_peak - tr.fwd_end) / tokens,
            backward_transient=(tr.bwd_peak - tr.bwd_start) / tokens,
            param_elements=tr.param_elements, analytic_param_elements=params))
    notes = [f"{name} is not a Llama-pattern RMSNorm: measured as transformers runs it" for name in unfused]
    if any(float(data.get(k) or 0) > 0 for k in ("attention_dropout", "hidden_dropout", "resid_pdrop")):
        notes.append("the config sets dropout; it was measured as configured (training mode)")
    return Measurement(str(config), str(data["model_type"]), seq_length, micro_batch, dtype, attention, norm,
                       kv_repeat, tuple(kinds), spec.experts_per_token,
                       {"torch": str(torch.__version__), "transformers": str(transformers.__version__)},
                       tuple(notes))


def _measured_kv_repeat(rows_by_kind: dict[str, list], spec: Any, width: int) -> bool:
    """K/V heads repeated before the kernel: the saved key is as wide as the query."""
    n_kv = spec.num_kv_heads or spec.num_attention_heads
    if spec.is_mla or n_kv == spec.num_attention_heads:
        return False
    for rows in rows_by_kind.values():
        for row in rows:
            if row.slot == "a.k":
                return row.bytes_per_token > width * n_kv * (spec.head_dim or spec.hidden_size //
                                                             spec.num_attention_heads)
    return False


def _analytic(spec: Any, kind: str, seq: int, batch: int, dtype: str, attention: str,
              kv_repeat: bool) -> tuple[dict[str, float], dict[str, str], float | None]:
    """Bytes per token by slot of the analytic table for this layer kind, priced as the measurement ran:
    t = 1, no recompute, the measured widths, flash as measured, SwiGLU unfused (transformers' eager MLP),
    norm statistics kept. EXP-class slots are per routed copy: × experts_per_token here (ρ = 1)."""
    from ..activations import ActivationTable
    from ..hardware import find_preset
    from ..options import RunOptions
    from ..params import block
    from ..resolve import resolve
    from ..strategy import Strategy

    width = DTYPE_BYTES[dtype]
    strategy = Strategy(seq_length=seq, micro_batch_size=batch, flash_attention=attention != "eager",
                        compute_bytes=width, param_bytes=width, residual_bytes=width, norm_bytes=width,
                        softmax_bytes=4.0)
    options = RunOptions(framework="torchtitan", fused_gated_act=False, fused_gated_act_experts=False,
                         kv_repeat=kv_repeat, norm_stats=True)
    r = resolve(spec, strategy, find_preset("H100-80G"), options)
    table = ActivationTable(r.dims, r.widths, r.flags, float(seq), None)
    per_copy = r.dims.n_chosen or 1
    out: dict[str, float] = {}
    classes: dict[str, str] = {}
    for slot in table.slots(kind):
        if slot.op_only:
            continue
        factor = per_copy if slot.cls in ("exp", "expt") else 1
        out[slot.id] = out.get(slot.id, 0.0) + slot.bytes * factor
        classes[slot.id] = slot.cls
    return out, classes, float(block(r.dims, kind).total)


def compare(rows: list, analytic: dict[str, float], classes: dict[str, str]) -> tuple[SlotComparison, ...]:
    measured = {r.slot: r.bytes_per_token for r in rows if not r.shared}
    order = list(analytic) + [s for s in measured if s not in analytic]
    return tuple(SlotComparison(s, measured.get(s), analytic.get(s), classes.get(s, "")) for s in order)


__all__ = ["ATTENTION_MODES", "KindMeasurement", "Measurement", "SlotComparison", "measure"]
