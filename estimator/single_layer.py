"""Single-layer figures of a plan, for tests, docs and the GUI's per-layer view: the stored activations of
one layer of a kind under a recompute option, and the loss working set."""

from __future__ import annotations

from .hardware import Hardware
from .layout import Item, build_layout, layout_inputs
from .model import ModelSpec
from .options import RunOptions
from .resolve import resolve
from .stage import StagePricer
from .strategy import Strategy


def _pricer(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions) -> StagePricer:
    r = resolve(model, strategy, hardware, options)
    return StagePricer(r, build_layout(layout_inputs(r)))


def layer_activation(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions,
                     kind: str = "dense", option: str = "none") -> float:
    """A(layer, option) in bytes for one micro-batch; ``kind`` is a body kind, ``embedding`` or ``output``."""
    pricer = _pricer(model, strategy, hardware, options)
    item = Item(kind, kind if kind not in ("embedding", "output") else "", 0, option)
    return float(pricer.activation(item))


def loss_working_set(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions) -> float:
    """Gw(O): the loss working set beyond the stored o.loss (DECISION D45)."""
    pricer = _pricer(model, strategy, hardware, options)
    return float(pricer.gw(Item("output", "", -1), backward=True)) - (
        0.0 if pricer.gamma else float(pricer.static("output", "").gradients))
