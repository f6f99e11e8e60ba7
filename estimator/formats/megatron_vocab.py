"""The Megatron-LM / MindSpeed flag vocabulary (``megatron_vocab.yaml``): which flags a launch-script reader knows
without pricing them, and what is said about every other flag."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..messages import Text, msg
from ..warnings import EstimateWarning
from ..yamlio import load_data
from .flag_source import FlagQueries
from .known_keys import catalogue, unknown_names

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
}
_OFF_VALUES = ("none", "false", "0")


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
            if given[0].strip().lower() not in _OFF_VALUES:
                out.append(EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.megatron-flag", flag=name,
                                                               effect=UNPRICED_FLAGS[name])))
        elif name in read or vocab.category(name) or (dialect == "mindspeed" and name in vocab.mindspeed_only):
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
    return out


__all__ = ["UNPRICED_FLAGS", "Vocabulary", "flag_warnings", "vocabulary"]
