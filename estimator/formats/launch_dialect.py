"""Which framework a Megatron-style launch script runs: Megatron-LM on GPUs or MindSpeed-LLM / MindSpeed-MM on
Ascend NPUs. Both run a ``pretrain_gpt.py`` with Megatron flags, so the choice is made from what the script
itself shows (its environment, launcher, program and the flags only one of them accepts) — never from the
device preset or the file's name — and the evidence is reported with the choice.
"""

from __future__ import annotations

import re

from ..messages import Listing, Message, Text, msg

# (pattern, what it shows) — each found pattern is one piece of evidence
MINDSPEED_SIGNS: tuple[tuple[str, Text], ...] = (
    (r"\bNPUS?_PER_NODE\b", "NPUS_PER_NODE"), (r"\bHCCL_\w+", msg("dialect.hccl")),
    (r"\bASCEND_\w+|ascend-toolkit|/Ascend/", msg("dialect.ascend-toolkit")), (r"\bPYTORCH_NPU_\w+", "PYTORCH_NPU_*"),
    (r"\bmsrun\b", msg("dialect.msrun")), (r"(?i)mindspeed", msg("dialect.mindspeed-paths")),
    (r"\bposttrain_gpt\.py\b", msg("dialect.posttrain")), (r"\bpretrain_vlm\.py\b",
                                                                        msg("dialect.pretrain-vlm")),
    (r"--(?:num-layer-list|noop-layers|context-parallel-algo|moe-tp-extend-ep|swap-attention|reuse-fp32-param|"
     r"use-fused-swiglu|use-fused-rmsnorm|schedules-method|multi-head-latent-attention|use-ascend-\w+|"
     r"recompute-activation-function|n-shared-experts|first-k-dense-replace)\b", msg("dialect.mindspeed-flags")),
)
MEGATRON_SIGNS: tuple[tuple[str, Text], ...] = (
    (r"\bGPUS_PER_NODE\b", "GPUS_PER_NODE"), (r"\bNCCL_\w+", msg("dialect.nccl")), (r"\bNVTE_\w+",
                                                                                msg("dialect.te")),
    (r"\bCUDA_VISIBLE_DEVICES\b|\bnvidia-smi\b|--gres=gpu|--gpus", msg("dialect.gpu-devices")),
    (r"(?i)megatron-lm|megatron_path", msg("dialect.megatron-checkout")),
    (r"--(?:transformer-impl|attention-backend|use-megatron-fsdp|multi-latent-attention|cp-comm-type|"
     r"pipeline-model-parallel-layout|decoder-first-pipeline-num-layers|decoder-last-pipeline-num-layers|"
     r"tp-comm-overlap|moe-ffn-hidden-size|fp8-format|fp8-recipe|qk-head-dim|qk-pos-emb-head-dim)\b",
     msg("dialect.megatron-flags")),
)


def script_dialect(text: str) -> tuple[str, Message]:
    """("megatron" | "mindspeed", why): the framework the script runs, and the evidence for it."""
    ms = Listing(what for pattern, what in MINDSPEED_SIGNS if re.search(pattern, text))
    mg = Listing(what for pattern, what in MEGATRON_SIGNS if re.search(pattern, text))
    if not ms and not mg:
        return "megatron", msg("dialect.neither")
    if len(ms) > len(mg):
        return "mindspeed", msg("dialect.mindspeed.also", signs=ms, other=mg) if mg else \
            msg("dialect.mindspeed", signs=ms)
    return "megatron", msg("dialect.megatron.also", signs=mg, other=ms) if ms else msg("dialect.megatron", signs=mg)


__all__ = ["script_dialect"]
