"""The memory terms the assembler adds up, as data: the extension point for new memory terms.

* ``ROW_TERMS``: bytes every row holds for the whole step, by category (parameters, held gradients, optimizer
  states, weights kept gathered). A stage's category is Σ over its rows; the per-layer table shows each row's.
  Stored activations are not a row term: they are ``RowCost.act``, multiplied by the micro-batches in flight at
  the stage's peak point and walked by the backward [W-BWD] (a new stored-activation term goes into
  ``StagePricer.activation``).
* ``STAGE_TERMS``: bytes a device holds once per stage, computed from the assembled stage (``StageView``): the
  reserve [RESERVE] today. Each one also says what it holds at the optimizer step [S-OPT] and shows as one
  synthetic row of the per-layer table.

Both are evaluated by the one assembler (``assembly.memory``) for the estimate (one element), the search (one
element per candidate) and the balancer (one per table row), under the generic peak-point rule and under
PyTorch FSDP2 alike; ``instant`` marks the categories FSDP2 prices instant by instant (``fsdp``), where a row
term of that category is replaced by the instant's value. See docs/model.md#adding-a-memory-term.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..arr import Num, gt
from ..messages import msg
from ..resolve import Resolved, dense_domain

if TYPE_CHECKING:
    from ..stage import RowCost, StagePricer


@dataclass(frozen=True)
class RowTerm:
    """Bytes one row holds all step long: ``value(cost, pricer)`` in ``category``, and what the row holds at the
    optimizer step [S-OPT] (``at_optimizer_step``; the same by default)."""

    id: str          # formula id (Explain, tests, docs/model.md)
    category: str
    value: Callable[[RowCost, StagePricer], Num]
    at_optimizer_step: Callable[[RowCost, StagePricer], Num] | None = None
    instant: bool = False  # FSDP2 prices this category at its instants instead


def _states_at_step(cost: RowCost, pricer: StagePricer) -> Num:
    """States held on the device at the step: 1/swap_times of them with ``swap_optimizer`` (D48), none when the
    step runs on the host (``offload_optimizer``, ``offload_params``)."""
    f = pricer.r.flags
    if f.feat.offload_optimizer or f.feat.offload_params:
        return 0.0
    return cost.static.optimizer_states / f.swap_times if f.swap_optimizer else cost.static.optimizer_states


def _on_device(cost: RowCost, pricer: StagePricer, value: Num) -> Num:
    """``value`` unless the row's weights and gradients live in host memory (``offload_params``: FSDP2
    CPUOffloadPolicy, DeepSpeed offload_param) [S-OFFLOAD]."""
    return 0.0 if pricer.r.flags.feat.offload_params else value


def _states(cost: RowCost, pricer: StagePricer) -> Num:
    f = pricer.r.flags
    moved = f.swap_optimizer or f.feat.offload_optimizer or f.feat.offload_params
    return 0.0 if moved else cost.static.optimizer_states


def _grads_at_step(cost: RowCost, pricer: StagePricer) -> Num:
    """Every gradient exists at the step (γ = 1, D5) — under MindSpore's optimizer parallel (mf_op) without an
    accumulation buffer (γ = 0) as the reduce-scatter left it, each rank's shard β_g·(E_d/os + E_e/os_e) (D59)."""
    if pricer.r.flags.sharding_mode != "mf_op":
        return _on_device(cost, pricer, cost.static.gradients)
    return _on_device(cost, pricer, pricer.gamma * cost.static.gradients +
                      (1 - pricer.gamma) * cost.static.gradient_shards)


def _resident_at_step(cost: RowCost, pricer: StagePricer) -> Num:
    """Weights kept gathered from the forward to the backward are dead by the step: their last reader is the
    layer's backward, and after the update the next step gathers again (D59)."""
    return 0.0


ROW_TERMS: tuple[RowTerm, ...] = (
    RowTerm("S-LAYER.params", "parameters", lambda c, p: _on_device(c, p, c.static.parameters)),
    # held between steps as γ (D5); at the step every gradient (γ = 1), or its reduce-scattered shard (D59)
    RowTerm("S-LAYER.grads", "gradients", lambda c, p: _on_device(c, p, p.gamma * c.static.gradients),
            _grads_at_step, instant=True),
    RowTerm("S-LAYER.opt", "optimizer_states", _states, _states_at_step),
    RowTerm("C-BUF.resident", "communication_buffers", lambda c, p: c.resident, _resident_at_step, instant=True),
)


def _host_states(cost: RowCost, pricer: StagePricer) -> Num:
    f = pricer.r.flags
    moved = f.swap_optimizer or f.feat.offload_optimizer or f.feat.offload_params
    return cost.static.optimizer_states if moved else 0.0


def _host_grads(cost: RowCost, pricer: StagePricer) -> Num:
    st = cost.static
    return st.host_gradients + (st.gradients if pricer.r.flags.feat.offload_params else 0.0)


# [H-DEVICE] bytes every row keeps in host memory all step (per device), by kind; the offloaded activations are
# RowCost.offload × the micro-batches in flight at the stage's peak point (assembly.memory)
HOST_TERMS: tuple[RowTerm, ...] = (
    RowTerm("H-DEVICE.params", "parameters",
            lambda c, p: c.static.parameters if p.r.flags.feat.offload_params else 0.0),
    RowTerm("H-DEVICE.grads", "gradients", _host_grads),
    RowTerm("H-DEVICE.opt", "optimizer_states", _host_states),
)
HOST_KINDS = ("activations", "parameters", "gradients", "optimizer_states")


class StageView(NamedTuple):
    """What a stage term may read: the plan, the stage, its categories so far and its process groups (a
    NamedTuple: every stage makes one per stage term)."""

    r: Resolved
    stage: int | np.ndarray  # an array of one plan's stage indices where its stages are priced at once
    categories: dict[str, Num]
    groups: Num
    pricer: StagePricer | None = None  # the device terms replay the stage's tensors (one plan)

    @property
    def dynamic(self) -> Num:
        """Activations + working overhead: what the caching allocator fragments (D6)."""
        return self.categories["activations"] + self.categories["working_overhead"]


@dataclass(frozen=True)
class StageTerm:
    """Bytes a device holds once per stage, in ``category``; ``at_optimizer_step`` its part of S-OPT."""

    id: str
    category: str
    row: str                                        # the synthetic per-layer row it shows as
    value: Callable[[StageView], Num]
    at_optimizer_step: Callable[[StageView], Num] | None  # None: the same bytes as at the peak point
    inputs: Callable[[StageView], dict[str, Num]]  # named inputs for Explain
    note: Callable[[StageView], str] = lambda view: ""


def process_groups(r: Resolved, stage: int | np.ndarray, memo: dict | None = None) -> Num:
    """Distinct groups of size > 1 a rank belongs to (D6); ``memo`` (a pricer's) keeps the count the stages share.
    ``stage``: one stage, or an array of one plan's stage indices (``assembly.stages``: one count each)."""
    par, f, d = r.par, r.flags, r.dims
    groups = memo.get("process-groups") if memo is not None else None
    if groups is None:
        sizes = [par.t, par.cp, dense_domain(f, par), par.p]
        if d.moe:
            sizes += [par.ep, par.etp, par.edp]
        if f.sharding_mode == "hsdp":
            sizes.append(par.d_rep)
        groups = sum(gt(x, 1) for x in sizes)
        if memo is not None:
            memo["process-groups"] = groups
    if d.tie and par.p > 1:  # the embedding group of a tied table on two stages (a bool, or one per stage)
        groups = groups + ((stage == 0) | (stage == par.p - 1))
    return groups


def _reserve(view: StageView) -> Num:
    """[RESERVE] reserve_fixed + frag_fraction·(activations + working) + comm_lib_per_group·groups (D6)."""
    opts = view.r.options
    return opts.reserve + opts.frag_fraction * view.dynamic + opts.comm_lib_per_group * view.groups


def _reserve_at_step(view: StageView) -> Num:
    opts = view.r.options
    return opts.reserve + opts.comm_lib_per_group * view.groups


def _reserve_inputs(view: StageView) -> dict[str, Num]:
    opts = view.r.options
    return {"reserve_fixed": opts.reserve, "frag_fraction": opts.frag_fraction,
            "comm_lib_per_group": opts.comm_lib_per_group, "groups": view.groups}


def _device_terms() -> tuple[StageTerm, ...]:
    """Device-level memory (issue 10, ``estimator/device``): workspaces first (the slack of a calibration
    profile's fraction reads the tensor categories), then the allocator slack, the context, the libraries."""
    from ..device import overlap
    from ..device import stage_terms as d

    # the device holds each of them at the optimizer step too (the allocator never gives a segment back)
    return (
        StageTerm("D-WORKSPACE", "library_workspaces", "workspaces", d.workspaces, None,
                  d.inputs_workspaces, d.note_workspaces),
        StageTerm("D-SLACK", "allocator_slack", "allocator_slack", d.slack, None, d.inputs_slack, d.note_slack),
        StageTerm("D-CONTEXT", "runtime_context", "runtime_context", d.context, None, d.inputs_context,
                  lambda view: msg("explain.device-context")),
        StageTerm("D-COMM", "comm_library", "comm_library", d.comm_library, None, d.inputs_comm, d.note_comm),
        StageTerm("D-SYMM", "comm_library", "symmetric_memory", d.symmetric_memory, None, d.inputs_symmetric_memory,
                  lambda view: msg("explain.device-symmetric-memory")),
        StageTerm("D-UB", "comm_library", "userbuffers", lambda view: overlap.te_userbuffers(view.r), None,
                  lambda view: overlap.inputs_te_userbuffers(view.r), lambda view: msg("explain.device-userbuffers")),
    )


STAGE_TERMS: tuple[StageTerm, ...] = (
    StageTerm("RESERVE", "reserve", "reserve", _reserve, _reserve_at_step, _reserve_inputs,
              lambda view: msg("explain.process-groups", groups=view.groups)),
    *_device_terms(),
)

__all__ = ["HOST_KINDS", "HOST_TERMS", "ROW_TERMS", "STAGE_TERMS", "RowTerm", "StageTerm", "StageView",
           "process_groups"]
