"""Which framework a Megatron-style launch script runs: Megatron-LM on GPUs or MindSpeed-LLM / MindSpeed-MM on
Ascend NPUs. Both run a ``pretrain_gpt.py`` with Megatron flags, so the choice is made from what the script
itself shows (its environment, launcher, program and the flags only one of them accepts) — never from the
device preset or the file's name — and the evidence is reported with the choice.
"""

from __future__ import annotations

import re

# (pattern, what it shows) — each found pattern is one piece of evidence
MINDSPEED_SIGNS: tuple[tuple[str, str], ...] = (
    (r"\bNPUS?_PER_NODE\b", "NPUS_PER_NODE"), (r"\bHCCL_\w+", "HCCL_* settings"),
    (r"\bASCEND_\w+|ascend-toolkit|/Ascend/", "the Ascend toolkit"), (r"\bPYTORCH_NPU_\w+", "PYTORCH_NPU_*"),
    (r"\bmsrun\b", "the msrun launcher"), (r"(?i)mindspeed", "MindSpeed paths or modules"),
    (r"\bposttrain_gpt\.py\b", "posttrain_gpt.py (MindSpeed-LLM)"), (r"\bpretrain_vlm\.py\b",
                                                                        "pretrain_vlm.py (MindSpeed-MM)"),
    (r"--(?:num-layer-list|noop-layers|context-parallel-algo|moe-tp-extend-ep|swap-attention|reuse-fp32-param|"
     r"use-fused-swiglu|use-fused-rmsnorm|schedules-method|multi-head-latent-attention|use-ascend-\w+|"
     r"recompute-activation-function|n-shared-experts|first-k-dense-replace)\b", "MindSpeed-only flags"),
)
MEGATRON_SIGNS: tuple[tuple[str, str], ...] = (
    (r"\bGPUS_PER_NODE\b", "GPUS_PER_NODE"), (r"\bNCCL_\w+", "NCCL_* settings"), (r"\bNVTE_\w+",
                                                                                "Transformer Engine settings"),
    (r"\bCUDA_VISIBLE_DEVICES\b|\bnvidia-smi\b|--gres=gpu|--gpus", "GPU devices"),
    (r"(?i)megatron-lm|megatron_path", "a Megatron-LM checkout"),
    (r"--(?:transformer-impl|attention-backend|use-megatron-fsdp|multi-latent-attention|cp-comm-type|"
     r"pipeline-model-parallel-layout|decoder-first-pipeline-num-layers|decoder-last-pipeline-num-layers|"
     r"tp-comm-overlap|moe-ffn-hidden-size|fp8-format|fp8-recipe|qk-head-dim|qk-pos-emb-head-dim)\b",
     "Megatron-LM-only flags"),
)


def script_dialect(text: str) -> tuple[str, str]:
    """("megatron" | "mindspeed", why): the framework the script runs, and the evidence for it."""
    ms = [what for pattern, what in MINDSPEED_SIGNS if re.search(pattern, text)]
    mg = [what for pattern, what in MEGATRON_SIGNS if re.search(pattern, text)]
    if len(ms) > len(mg):
        chosen, why = "mindspeed", f"MindSpeed-LLM launch script ({', '.join(ms)})"
    elif mg:
        chosen, why = "megatron", f"Megatron-LM launch script ({', '.join(mg)})"
    else:
        return "megatron", ("the script shows neither Ascend nor CUDA specifics; read as Megatron-LM "
                            "(pass --framework mindspeed for MindSpeed-LLM)")
    if ms and mg:
        other = mg if chosen == "mindspeed" else ms
        why += f"; it also shows {', '.join(other)}"
    return chosen, why


__all__ = ["script_dialect"]
