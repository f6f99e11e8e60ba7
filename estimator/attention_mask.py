"""[W-MASK] The bytes of a data loader's dense attention mask (docs/model.md#working-overhead): the one formula the
pricing (``StagePricer.dataloader_mask``) and the readers' warnings about masks they do not price (Megatron-LM's
unfused softmax, Megatron-Bridge's dataset mask, MindSpeed-LLM's data loader) size it with."""

from __future__ import annotations

from .arr import Num


def mask_bytes(b: Num, s: Num, cp: Num) -> Num:
    """A micro-batch's causal mask, b×1×s×s booleans (one byte each), of which a context-parallel rank keeps the
    s/cp rows of its sequence slice (Megatron-LM's ``get_batch_on_this_cp_rank``): b·(s/cp)·s bytes. ``cp`` 1
    where the loader keeps the whole mask."""
    return b * (s / cp) * s


__all__ = ["mask_bytes"]
