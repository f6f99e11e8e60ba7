"""The Megatron-LM / MindSpeed flag vocabulary (``megatron_vocab.yaml``): which flags a launch-script reader knows
without pricing them, and what is said about every other flag."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..attention_mask import mask_bytes
from ..errors import ConfigError
from ..messages import Text, msg
from ..units import fmt_bytes
from ..warnings import EstimateWarning
from ..yamlio import load_data
from .flag_source import FlagQueries
from .known_keys import catalogue, unknown_names
from .mindspeed_unpriced import mindspeed_warnings
from .support import Collector

# flags that change memory or time but are not priced: said when given (W-UNMODELLED), with the direction of the
# error; a flag whose value turns the feature off is not said
UNPRICED_FLAGS: dict[str, Text] = {
    "--enable-cuda-graph": msg("megatron_vocab.unpriced-cuda-graph"),
    "--cuda-graph-impl": msg("megatron_vocab.unpriced-cuda-graph"),
    "--fsdp-double-buffer": msg("megatron_vocab.unpriced-fsdp-double-buffer"),
    "--use-nccl-ub": msg("megatron_vocab.unpriced-nccl-ub"),
    "--nccl-ub": msg("megatron_vocab.unpriced-nccl-ub"),
    "--moe-enable-deepep": msg("megatron_vocab.unpriced-deepep"),
    "--moe-flex-dispatcher-backend": msg("megatron_vocab.unpriced-deepep"),
    "--moe-fb-overlap": msg("megatron_vocab.unpriced-fb-overlap"),
    "--moe-alltoall-overlap-comm": msg("megatron_vocab.unpriced-alltoall-overlap"),
    "--delay-wgrad-compute": msg("megatron_vocab.unpriced-delay-wgrad"),
    "--use-cp-send-recv-overlap": msg("megatron_vocab.unpriced-cp-overlap"),
    "--use-ascend-coc": msg("megatron_vocab.unpriced-coc"),
    "--variable-seq-lengths": msg("megatron_vocab.unpriced-variable-seq"),
    # kernels and algorithms that were listed as "same memory and time" (docs/decisions.md D-MG-AUDIT)
    "--external-cuda-graph": msg("megatron_vocab.unpriced-cuda-graph"),
    "--optimizer-cuda-graph": msg("megatron_vocab.unpriced-optimizer-cuda-graph"),
    "--no-bias-gelu-fusion": msg("megatron_vocab.unpriced-no-bias-gelu-fusion"),
    "--no-bias-dropout-fusion": msg("megatron_vocab.unpriced-no-bias-dropout-fusion"),
    "--no-persist-layer-norm": msg("megatron_vocab.unpriced-no-persist-layer-norm"),
    "--no-gradient-accumulation-fusion": msg("megatron_vocab.unpriced-no-gradient-accumulation-fusion"),
    "--no-rope-fusion": msg("megatron_vocab.unpriced-no-rope-fusion"),
    "--moe-permute-fusion": msg("megatron_vocab.unpriced-moe-permute-fusion"),
    "--deterministic-mode": msg("megatron_vocab.unpriced-deterministic"),
    "--ddp-bucket-size": msg("megatron_vocab.unpriced-ddp-buckets"),
    "--ddp-num-buckets": msg("megatron_vocab.unpriced-ddp-buckets"),
    "--ddp-pad-buckets-for-high-nccl-busbw": msg("megatron_vocab.unpriced-ddp-pad-buckets"),
    "--empty-unused-memory-level": msg("megatron_vocab.unpriced-empty-cache"),
    "--megatron-fsdp-grad-comm-dtype": msg("megatron_vocab.unpriced-fsdp-grad-comm-dtype"),
    "--mtp-mem-efficient-logits": msg("megatron_vocab.unpriced-mem-efficient-logits"),
}
# an UNPRICED_FLAGS flag that changes nothing without another one (Megatron-LM sets the DDP bucket size to None
# without --overlap-grad-reduce: distributed_data_parallel.py, d98e8a6)
NEEDS: dict[str, str] = {"--ddp-bucket-size": "--overlap-grad-reduce", "--ddp-num-buckets": "--overlap-grad-reduce"}
_OFF_VALUES = ("none", "false", "0")
# what stops Megatron-LM's data loader from building the dense attention mask (its default): the flag itself, and
# the packed-sequence paths that carry cu_seqlens instead (arguments.py turns the mask off for inter-document
# masking; the SFT dataset asserts it is off)
NO_MASK_FLAGS = ("--no-create-attention-mask-in-dataloader", "--dataloader-inter-document-masking", "--sft")


@dataclass(frozen=True)
class Vocabulary:
    prefixes: tuple[tuple[str, str], ...]  # (prefix, category)
    flags: dict[str, str]  # flag -> category
    mindspeed_only: frozenset[str]

    def category(self, flag: str) -> str | None:
        """Why a known, unpriced flag does not matter to the estimate (its category), or None."""
        if flag in self.flags:
            return self.flags[flag]
        return next((cat for prefix, cat in self.prefixes if flag.startswith(prefix)), None)


@cache
def vocabulary() -> Vocabulary:
    data = load_data(resources.files(__package__).joinpath("megatron_vocab.yaml").read_text(encoding="utf-8"))
    prefixes: list[tuple[str, str]] = []
    flags: dict[str, str] = {}
    for category, entry in data["categories"].items():
        prefixes.extend((p, category) for p in entry.get("prefixes", ()))
        flags.update(dict.fromkeys(entry.get("flags", ()), category))
    return Vocabulary(tuple(prefixes), flags, frozenset(data["mindspeed_only"]))


def flag_warnings(fl: FlagQueries, read: Iterable[str], dialect: str) -> list[EstimateWarning]:
    """What is said about flags the reader does not read: a flag Megatron-LM / MindSpeed do not have at all is a
    W-KEY-UNKNOWN with a did-you-mean (``known_keys``); a MindSpeed-only flag in a Megatron-LM script, and a real
    flag that may change memory or time but is neither read (``read``) nor known as harmless, are named in one
    W-FLAG-UNPRICED warning; a flag of ``UNPRICED_FLAGS`` is said on its own with the direction of the error."""
    vocab = vocabulary()
    flags = catalogue("launch_flags")
    everything = flags.known("")
    read = set(read)
    out: list[EstimateWarning] = []
    unpriced: list[str] = []
    for name in fl.names():
        if dialect != "mindspeed" and name in vocab.mindspeed_only:
            unpriced.append(f"{name} (a MindSpeed flag, which Megatron-LM does not accept)")
        elif name in UNPRICED_FLAGS:
            given = fl.values(name) or ("",)
            if given[0].strip().lower() not in _OFF_VALUES and fl.has(NEEDS.get(name, name)):
                out.append(EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.megatron-flag", flag=name,
                                                               effect=UNPRICED_FLAGS[name])))
        elif name in read or name in NO_MASK_FLAGS or vocab.category(name) or \
                (dialect == "mindspeed" and name in vocab.mindspeed_only):
            continue
        elif name not in everything:
            line, key = fl.locate(name)
            out.extend(unknown_names(f"{fl.path}:{line}" if line else f"{fl.path} ({key})", "", [name], everything,
                                     cat=flags))
        else:
            unpriced.append(name)
    if unpriced:
        out.append(EstimateWarning("W-FLAG-UNPRICED", msg("W-FLAG-UNPRICED.flags", path=fl.path, count=len(unpriced),
                                                          flags="; ".join(unpriced))))
    if dialect == "mindspeed":
        out.extend(mindspeed_warnings(fl))
    return out


def read_dataloader_mask(fl: FlagQueries, out: Collector, dialect: str) -> None:
    """[W-MASK] Megatron-LM's data loader builds a causal mask per sample by default (``create_attention_mask_in_
    dataloader``, gpt_dataset.py) and ``get_batch`` holds the micro-batch's b×1×(s/cp)×s booleans on the chunks
    with the embedding or the output layer through their forward: ``options.dataloader_mask``, an assumption
    naming what turns it off (Megatron-LM's parser defaults only: not Megatron-Bridge, not MindSpeed, whose loaders
    differ). Megatron's unfused PyTorch softmax (the local layers without flash attention, where the fused
    kernel's shape limits send it there) also saves the mask for the backward: said, not priced."""
    if dialect != "megatron" or not fl.parser_defaults or any(fl.has(name) for name in NO_MASK_FLAGS):
        return
    out.assume("options.dataloader_mask", True, msg("megatron_vocab.dataloader-mask"))
    try:
        local = (fl.text("--transformer-impl") or "").lower() == "local"
        seq, micro = fl.int("--seq-length", 1), fl.int("--micro-batch-size", 1) or 1
        cp = fl.int("--context-parallel-size", 1) or 1
    except ConfigError:  # a malformed value is the readers' to report
        return
    if local and not fl.has("--use-flash-attn") and out.values.get("strategy.flash_attention") is not True:
        size = fmt_bytes(mask_bytes(micro, seq, cp)) if seq else "b·(s/cp)·s"
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.megatron-attention-mask.saved", size=size))


__all__ = ["NEEDS", "NO_MASK_FLAGS", "UNPRICED_FLAGS", "Vocabulary", "flag_warnings", "read_dataloader_mask",
           "vocabulary"]
