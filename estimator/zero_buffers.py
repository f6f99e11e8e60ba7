"""DeepSpeed ZeRO communication buffers (C-BUF.zero, docs/decisions.md "DeepSpeed ZeRO buffers").

What a ZeRO run holds besides the weights, gradients and optimizer states, sized by the settings users tune when
ZeRO-3 runs out of memory:

- stage 1/2: the gradient reduction bucket (``reduce_bucket_size`` elements at β_g) and the parameter all-gather
  bucket (``allgather_bucket_size`` elements at β_p); with ``overlap_comm`` DeepSpeed double-buffers them, which
  the Hugging Face DeepSpeed guide states as 4.5× the two bucket sizes;
- stage 3: the gradient reduction bucket once, and instead of the current + next layer's gathered weights the
  gathered window: the weights in use plus ``stage3_prefetch_bucket_size`` prefetched elements, capped by
  ``stage3_max_live_parameters`` (never below the weights in use).

Unset sizes are the Hugging Face Trainer's ``"auto"`` values from the hidden size h (h² for the reduce bucket,
0.9·h² for the prefetch bucket) and DeepSpeed's defaults for the rest (all-gather 5·10⁸, max live 10⁹); each is
said as an assumption. Only ``hf_trainer`` plans run DeepSpeed; a size given for another framework is named.
"""

from __future__ import annotations

from dataclasses import dataclass

from .messages import Text, msg
from .strategy import ZERO_BUFFER_FIELDS, Strategy
from .warnings import Assumption, EstimateWarning

# DeepSpeed's defaults (deepspeed/runtime/zero/config.py)
ALLGATHER_BUCKET, MAX_LIVE = 500_000_000, 1_000_000_000
# Hugging Face DeepSpeed guide: "overlap_comm uses 4.5x the allgather_bucket_size and reduce_bucket_size values"
OVERLAP_FACTOR = 4.5
ZERO_MODES = ("zero1", "zero2", "zero3")


@dataclass(frozen=True)
class ZeroBuffers:
    """Resolved sizes, in elements."""

    mode: str
    reduce: float
    allgather: float
    prefetch: float
    max_live: float
    overlap: bool

    def bucket_bytes(self, grad_bytes: float, param_bytes: float) -> float:
        """The reduction (and, at stage 1/2, all-gather) buckets a rank holds during the step."""
        if self.mode == "zero3":
            return grad_bytes * self.reduce
        factor = OVERLAP_FACTOR if self.overlap else 1.0
        return factor * (grad_bytes * self.reduce + param_bytes * self.allgather)


def resolve_zero(st: Strategy, framework: str, hidden: int,
                 assumptions: list[Assumption]) -> tuple[ZeroBuffers | None, list[EstimateWarning]]:
    """The ZeRO buffers of an ``hf_trainer`` plan with ZeRO (None otherwise), and warnings for sizes given to a
    plan that does not run DeepSpeed ZeRO."""
    given = [name for name in ZERO_BUFFER_FIELDS if getattr(st, name) is not None]
    mode = st.sharding.mode
    if framework != "hf_trainer" or mode not in ZERO_MODES:
        if not given:
            return None, []
        why = f"framework {framework}" if framework != "hf_trainer" else f"sharding {mode}"
        return None, [EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.strategy-deepspeed-zero",
                                                          given=', '.join(given), why=why))]

    def take(name: str, default: float, source: Text) -> float:
        value = getattr(st, name)
        if value is not None:
            return float(value)
        assumptions.append(Assumption(f"strategy.{name}", default, source))
        return default

    h2 = float(hidden * hidden)
    overlap = st.overlap_comm
    if overlap is None:
        overlap = mode == "zero3"
        assumptions.append(Assumption("strategy.overlap_comm", overlap,
                                      msg("zero_buffers.deepspeed-s-default", mode=mode,
                                          value='on' if overlap else 'off')))
    return ZeroBuffers(
        mode=mode,
        reduce=take("reduce_bucket", h2, msg("zero_buffers.auto-unset-trainer", hidden=hidden)),
        allgather=take("allgather_bucket", ALLGATHER_BUCKET,
                       msg("zero_buffers.deepspeed-s-default-2")) if mode != "zero3" else 0.0,
        prefetch=take("prefetch_bucket", 0.9 * h2, msg("zero_buffers.auto-unset-trainer-2", hidden=hidden))
        if mode == "zero3" else 0.0,
        max_live=take("max_live_params", MAX_LIVE,
                      msg("zero_buffers.deepspeed-s-default-3")) if mode == "zero3" else 0.0,
        overlap=bool(overlap)), []


__all__ = ["ZeroBuffers", "resolve_zero"]
