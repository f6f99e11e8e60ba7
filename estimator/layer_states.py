"""Each layer's own state in a layout (docs/model.md#layout): whether it trains, records a graph and is
checkpointed under freeze fine-tuning ([A-FREEZE]), and whether it offloads its saved activations or runs MoE
zero-memory level1 ([A-OFFLOAD-LAYERS], [A-ZERO-MEMORY]) — the rules the layout and the balancer's candidate slots
both apply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import LayoutError
from .messages import msg

if TYPE_CHECKING:
    from .resolve import Resolved


def is_int(x: object) -> bool:
    """A whole number that is not a bool (True == 1 would otherwise pass for a count)."""
    return isinstance(x, int) and not isinstance(x, bool)


def freeze_inputs(r: Resolved) -> dict[str, object]:
    """What decides each layer's [A-FREEZE] state: the trainable layers, whether the embedding trains, and
    whether checkpointing skips frozen layers."""
    feat = r.flags.feat
    if feat.trainable_layers is None:
        return {}
    frozen = (*r.flags.frozen, "embedding", "output") if feat.lora else r.flags.frozen
    return {"trainable_layers": trainable_indices(feat.trainable_layers, r.model.num_layers),
            "embedding_trains": "embedding" not in frozen,
            "checkpoint_trainable_only": feat.checkpoint_trainable_only}


def trainable_indices(layers: frozenset[int], body: int) -> frozenset[int]:
    """``strategy.trainable_layers`` as model indices: a negative entry counts from the last body layer (−1: the
    last), and one before the first layer names none (LLaMA-Factory's last n layers of a shorter model: all)."""
    return frozenset(i if i >= 0 else body + i for i in layers if i >= 0 or body + i >= 0)


def graph_start(trainable: frozenset[int] | None, embedding_trains: bool) -> float:
    """The model index from which autograd records the forward: the first trainable layer (−1 when the embedding
    trains; ∞ when nothing in the body does)."""
    if trainable is None or embedding_trains:
        return -1
    return min(trainable, default=float("inf"))


def layer_grad(index: int, trainable: frozenset[int] | None, start: float) -> str | None:
    """[A-FREEZE] A body/MTP layer's gradient state: None when it trains; 'frozen' when its weights are frozen but
    a trainable layer before it needs the input gradients it passes back (it saves what those need); 'off' when
    nothing before it trains — its input needs no gradient and its weights none, so autograd records nothing."""
    if trainable is None or index in trainable:
        return None
    return "frozen" if index > start else "off"


def grad_option(option: str, grad: str | None, checkpoint_trainable_only: bool) -> str:
    """A layer's recompute option under [A-FREEZE]: a layer without a graph is never checkpointed, nor a frozen
    one where checkpointing skips layers without trainable weights (LLaMA-Factory's gradient checkpointing)."""
    if grad == "off" or (grad == "frozen" and checkpoint_trainable_only):
        return "none"
    return option


@dataclass(frozen=True)
class LayerLists:
    """[A-OFFLOAD-LAYERS] ``strategy.offload_layers`` as the layout reads it: per group, the model indices (body +
    MTP) that offload it. A layer offloads the listed groups whose lists name it and the plan's groups that have
    no list (``everywhere``); nothing when there is none."""

    groups: tuple[tuple[str, frozenset[int]], ...]
    everywhere: tuple[str, ...] = ()

    def of(self, index: int) -> tuple[str, ...] | bool:
        found = self.everywhere + tuple(group for group, ids in self.groups if index in ids)
        return found or False

    @property
    def top(self) -> int:
        return max((max(ids) for _group, ids in self.groups if ids), default=-1)


def saving_counts(r: Resolved) -> tuple[object, int | None]:
    """What picks the layers that save activations: the plan's layer lists (``LayerLists``) or ``offload_counts``
    when the plan offloads and not every layer, the level1 layer count of --moe-zero-memory level1; None each
    where every layer follows the plan."""
    st, feat = r.strategy, r.flags.feat
    offload: object = st.offload_counts if feat.offload_groups and st.offload_counts is not True else None
    if feat.offload_groups and st.offload_layers:
        if offload is not None:
            raise LayoutError("E-OFFLOAD-LAYERS", msg("E-OFFLOAD-LAYERS.counts", counts=st.offload_counts))
        listed = {o.group for o in st.offload_layers}
        offload = LayerLists(tuple((o.group, frozenset(o.layers)) for o in st.offload_layers),
                             tuple(sorted(feat.offload_groups - listed)))
    return offload, st.moe_zero_memory_layers if feat.moe_zero_memory == "level1" else None


def layer_saving(counts: tuple[object, int | None], k: int, stage: int, chunk: int, vp: int,
                 layers: int, index: int) -> tuple[bool | tuple[str, ...] | None, str | None]:
    """(offload, zero) of the k-th of ``layers`` layers (model index ``index``) of the slot at (stage, chunk) —
    the balancer's rule, which prices candidate slots one at a time (``slot_count``); the layout deals them with
    ``_counts_grid``."""
    offload, zero = counts
    if isinstance(offload, LayerLists):
        return offload.of(index), zero_level(k, chunk, vp, zero)
    return (None if offload is None else k < slot_count(offload, stage, chunk, vp, layers),
            zero_level(k, chunk, vp, zero))


def zero_level(k: int, chunk: int, vp: int, layers: int | None) -> str | None:
    """[A-ZERO-MEMORY] MindSpeed's --moe-zero-memory-num-layers: the k-th layer of chunk ``chunk`` runs level1 when
    its priority k·vp + chunk is below the count, else level0 (``only_recompute_activation``); None: the plan's
    level on every layer."""
    if layers is None:
        return None
    return "level1" if k * vp + chunk < layers else "level0"


def slot_count(counts: object, stage: int, chunk: int, vp: int, layers: int) -> int:
    """The layers a per-stage count (``strategy.Counts``) gives the slot at (stage, chunk) holding ``layers``: all
    (None, True), none (False), n per slot (int), list[vp][p] as given, list[p] dealt one at a time over the
    stage's chunks (D40, taken here as no chunk being full)."""
    if counts is None or counts is True:
        return layers
    if counts is False:
        return 0
    if is_int(counts):
        return min(int(counts), layers)  # type: ignore[call-overload]
    values = list(counts)  # type: ignore[call-overload]
    if values and isinstance(values[0], Sequence):
        return min(int(values[chunk][stage]), layers)
    total = int(values[stage])
    return min(total // vp + (1 if chunk < total % vp else 0), layers)


__all__ = ["LayerLists", "freeze_inputs", "grad_option", "graph_start", "is_int", "layer_grad",
           "layer_saving", "saving_counts", "slot_count", "trainable_indices", "zero_level"]
