"""The MindFormers training YAML's vocabulary (docs/model.md#frameworks): where each setting lives, plausibility limits,
the scheduler and CP names, dtype names, the Llama FFN rule, and how op-regex recompute patterns map onto the
switches of docs/model.md#selective-recompute. Shared by the reader (``mindformers_read``) and the writer
(``mindformers_write``)."""

from __future__ import annotations

import re
from typing import Any

from ..errors import ConfigError
from ..messages import msg
from .support import known_dtype

FORMAT = "mindformers"

# key paths of the sections
MC = ("model", "model_config")
PC = ("parallel_config",)
RC = ("recompute_config",)
RUN = ("runner_config",)
PAR = ("parallel",)
PIPE = ("parallel", "pipeline_config")
POC = ("parallel", "parallel_optimizer_config")
DATASET_SEQ = ("train_dataset", "data_loader", "config", "seq_length")

# plausibility bounds: beyond them a value is a typo, and loops over layers or micro-batches would not end.
MAX_DEGREE = 1 << 16
MAX_MICRO = 1 << 16
MAX_DIM = 1 << 22
MAX_VOCAB = 1 << 24
MAX_SEQ = 1 << 24
MAX_COUNT = 1 << 20

CP_ALGOS = {"colossalai_cp": "ring", "ulysses_cp": "ulysses", "hybrid_cp": "hybrid"}
SCHEDULERS = ("1f1b", "seqpipe", "seqvpp", "seqsmartvpp", "gpipe", "zero_bubble_v")

# docs/model.md#selective-recompute: op-regex keywords of select_recompute / select_comm_recompute and the switch each
# one recomputes.
_SEL_KEYWORDS = (
    (re.compile(r"(?<![a-z0-9])(activate|activation|silu|gelu|mul)(?![a-z0-9])"), "act"),
    (re.compile(r"norm(?![a-z0-9])"), "norm_out"),
    (re.compile(r"(?<![a-z0-9])(flash_attention|softmax)(?![a-z0-9])"), "core"),
)
_COMM_KEYWORDS = re.compile(r"(?<![a-z0-9])(w_qkv|w_gate_hidden|reshape)(?![a-z0-9])|norm(?![a-z0-9])")
# a device count or global batch a comment states (checked against the degrees)
# (numbers of up to 18 digits; the global-batch pattern is anchored at its first keyword, matched from a position,
# so that a long comment with many keywords costs linear time, not quadratic)
DEVICE_COMMENT = re.compile(r"device[ _]?num(?:ber)?\s*(?:=|:|is)\s*(\d{1,18})(?!\d)", re.IGNORECASE)
GBS_COMMENT = re.compile(r"(?>.*?(?:global[ _]batch(?:[ _]size)?|\bgbs)\b).*[=:]\s*(\d{1,18})\b(?!\s*[x×*·+/-])",
                         re.IGNORECASE)
ANCHORED = (GBS_COMMENT,)


def mindformers_dtype(name: Any, key: str, path: str) -> tuple[int, bool]:
    """(bytes, is_fp8) of a MindFormers dtype name (``bfloat16``, ``mstype.float16``); fp8 variants, Ascend's
    ``hif8`` included, are priced as 2 bytes (docs/model.md#byte-widths-per-framework)."""
    if not isinstance(name, str):
        raise ConfigError(msg("mindformers_schema.expected-dtype-name", name=name), path=path, key=key)
    text = name.strip().lower()
    for prefix in ("mstype.", "mindspore.", "ms.", "torch."):
        text = text.removeprefix(prefix)
    found = known_dtype(text) or ((2, True) if text.startswith("hif8") else None)
    if found is not None:
        return found
    raise ConfigError(msg("mindformers_schema.unknown-dtype-use", name=name), path=path, key=key)


def llama_ffn(hidden: int, multiple_of: int, multiplier: float | None) -> int:
    """MindFormers ``LlamaFeedForward`` width without ``intermediate_size``: 4h, times (multiplier + 0.01)
    when given, times 2/3, rounded up to ``multiple_of`` (7B 11008, 70B with 1.3: 28672)."""
    width = 4 * hidden
    if multiplier is not None:
        width = int((multiplier + 0.01) * width)
    width = int(2 * width / 3)
    return multiple_of * ((width + multiple_of - 1) // multiple_of)


def selective_switch(pattern: str) -> str | None:
    """The switch (docs/model.md#selective-recompute) a ``select_recompute`` op regex recomputes, or None (not
    modelled)."""
    low = pattern.lower()
    for regex, switch in _SEL_KEYWORDS:
        if regex.search(low):
            return switch
    return None


def comm_switch(pattern: str) -> str | None:
    """``select_comm_recompute`` patterns recompute the SP all-gather (switch ``gather``)."""
    return "gather" if _COMM_KEYWORDS.search(pattern.lower()) else None


def comment_numbers(text: str, regex: re.Pattern[str]) -> list[tuple[int, int]]:
    """(line number, value) of every match of ``regex`` inside a ``#`` comment."""
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        hash_at = line.find("#")
        if hash_at < 0:
            continue
        comment = line[hash_at:]
        if regex in ANCHORED:  # matched from a position: the first keyword after it, then the last number
            pos = 0
            while (match := regex.match(comment, pos)) and match.end() > pos:
                out.append((lineno, int(match.group(1))))
                pos = match.end()
            continue
        for match in regex.finditer(comment):
            out.append((lineno, int(match.group(1))))
    return out
