"""The tensors that come and go during training steps of one pipeline stage, as an allocation trace for the
caching-allocator model (issue 10). Built from the same rows, slots and schedule the estimate prices, so the
trace's live bytes follow the estimate's instants; the allocator replays it to learn what it reserves on top.

Order within a layer follows eager PyTorch: the forward allocates each slot of the slot table (docs/model.md#slot-table)
in order and frees the ones its recompute option does not keep; the backward walks the slots in reverse, allocating the
gradient of each slot before freeing the saved slot and the gradient it came from, and the weight gradients at the
matmuls. Streams follow the frameworks' sources: FSDP2 copies in and all-gathers on its all-gather copy-in
stream, writes the reduce-scatter output (the sharded gradient) on its reduce-scatter stream and does the rest
on the compute stream (``torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py``); other frameworks use the
compute stream. ``STEPS`` steps are traced because optimizer states appear lazily in the first one and the
allocator's cache reaches its steady state after it (the measured second and third steps are equal, so the
second is the steady state). A long pipeline schedule is traced with only as many micro-batches as its warm-up
plus one steady 1F1B round: the in-flight maximum and the steady pattern are the same, the trace is shorter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from ..layout import EMBEDDING, OUTPUT
from ..schedules import stage_order
from ..stage import Row, StagePricer
from ..stage_entries import EMBEDDING_COPY
from .allocator import Program
from .tensors import slot_tensors, weight_tensors
from .workspaces import LibraryWorkspaces

if TYPE_CHECKING:
    from ..resolve import Resolved

STEPS = 2
NO_WORKSPACES = LibraryWorkspaces()
COMPUTE, COPY_IN, REDUCE_SCATTER = 0, 1, 2


@dataclass
class Trace:
    """The events as the allocator's ``Program`` reads them, written as they come (a trace is replayed three times
    per replayed stage, so it is never turned into event tuples on the way): ``codes`` holds ``+handle`` for a
    request, ``-handle`` for its free and ``0`` for a step (handles are numbered from 1 and never reused, so a
    handle is its program slot); ``request_of[handle]`` the index of its ``(bytes, stream, transient)`` in
    ``requests``, -1 for a zero-size handle (never requested). The free of a never-allocated (zero-size) or freed
    handle is never recorded (``free``). ``events``: the same as ``("a", handle, bytes, stream, transient)``,
    ``("f", handle)`` and ``("step", n)`` before step n."""

    codes: list[int] = field(default_factory=list)
    requests: dict[tuple[int, int, bool], int] = field(default_factory=dict)
    request_of: list[int] = field(default_factory=lambda: [-1])
    labels: dict[int, str] | None = None  # handle → what it is (when asked for, to explain a peak)
    _next: int = 0
    context: str = ""
    _live: set[int] = field(default_factory=set)  # allocated, not yet freed: a free of another handle is dropped

    def alloc(self, size: float, stream: int = COMPUTE, what: str = "", transient: bool = False) -> int:
        """A new tensor; ``transient``: one that comes and goes within the step (activations, their gradients,
        logits), the tensors the allocator model's sensitivity band scales."""
        self._next += 1
        handle = self._next
        if size >= 1:
            request = (int(size), stream, transient)
            requests = self.requests
            index = requests.get(request)
            if index is None:
                index = requests[request] = len(requests)
            self.request_of.append(index)
            self.codes.append(handle)
            self._live.add(handle)
            if self.labels is not None:
                self.labels[handle] = f"{self.context} {what}".strip()
        else:
            self.request_of.append(-1)
        return handle

    def free(self, handle: int | None) -> None:
        """Free a tensor; nothing for a zero-size one (never allocated), a freed one or None."""
        live = self._live
        if handle in live:
            live.remove(handle)  # type: ignore[arg-type]
            self.codes.append(-handle)  # type: ignore[operator]

    def free_all(self, handles: list[int]) -> None:
        for h in handles:
            self.free(h)
        handles.clear()

    def step(self, n: int) -> None:
        """Step ``n`` begins; steps come in order from 0 (``_Stage.run``), so ``events`` numbers them back."""
        self.codes.append(0)

    def program(self) -> Program:
        return Program(self.codes, tuple(self.requests), self.request_of)

    @property
    def events(self) -> list[tuple]:
        requests = list(self.requests)
        out: list[tuple] = []
        steps = 0
        for code in self.codes:
            if code > 0:
                out.append(("a", code, *requests[self.request_of[code]]))
            elif code:
                out.append(("f", -code))
            else:
                out.append(("step", steps))
                steps += 1
        return out


class _Stage:
    """Builds the trace of one stage."""

    def __init__(self, pricer: StagePricer, rows: list[Row], workspace: LibraryWorkspaces) -> None:
        self.p, self.rows, self.workspace = pricer, rows, workspace
        r = pricer.r
        self.w, self.f, self.par = r.widths, r.flags, r.par
        self.t = Trace()
        self.fsdp2 = bool(self.f.fsdp2)
        self.os = float(self.par.os)
        self.slots = {id(row): slot_tensors(pricer, row) for row in rows}
        self.weights = {id(row): weight_tensors(pricer, row) for row in rows}
        self.saved: dict[tuple[int, int, int], list[int]] = {}  # (micro-batch, chunk, row) → handles
        self.unsharded: dict[int, list[int]] = {}               # FSDP2: row → gathered weights
        self.grads: dict[int, list[int]] = {}                   # FSDP2 sharded grads (RS outputs) per row
        self.unsharded_grads: dict[int, list[int]] = {}
        self.rs_input: int | None = None
        self.states: list[int] = []
        self.handles_ws: list[int] = []
        self.backward_ws = False

    # ------------------------------------------------------------------------------------------ static
    def init(self) -> None:
        """Parameters (sharded under FSDP2 / ZeRO), the framework's persistent gradient buffer."""
        w = self.w
        for row in self.rows:
            for n in self.weights[id(row)]:
                self.t.alloc(w.p * n / self._div(row, "p"), what="param")
        if not self.fsdp2:
            grads = sum(float(row.static.gradients) for row in self.rows) * float(self.p.gamma)
            if grads:
                self.t.alloc(grads, what="grad buffer")  # one contiguous buffer (Megatron/DDP buckets)
        if self.f.keep_gathered:
            for row in self.rows:
                self.t.alloc(float(row.resident), what="kept gathered")

    def _div(self, row: Row, what: str) -> float:
        sh = self.p.divisors
        index = {"p": 0, "g": 1, "o": 2}[what]
        dense, expert = float(row.local.dense), float(row.local.expert)
        total = dense + expert
        if total <= 0:
            return 1.0
        stored = dense / float(sh[index]) + expert / float(sh[index + 3])
        return total / stored if stored else 1.0

    # ------------------------------------------------------------------------------------------ FSDP2 units
    def unshard(self, row: Row) -> None:
        """All-gather a unit: the flat copy-in (only when casting to the compute dtype) and output buffers on
        the copy-in stream, then one unsharded tensor per weight on the compute stream (the flat output goes
        once copied out). A 1-way shard skips the collective and copies each shard into its unsharded tensor
        (``FSDPParamGroup.unshard``/``wait_for_unshard`` for world size 1). Under the root layout the
        embedding, final norm and head are one unit."""
        if not self.fsdp2 or id(row) in self.unsharded or not self.weights[id(row)]:
            return
        unit = [x for x in self.rows if self._root(x)] if self._root(row) else [row]
        bc = self.w.c
        out = None
        if self.os > 1:
            elems = sum(sum(self.weights[id(x)]) for x in unit)
            copy_in = self.t.alloc(bc * elems / self.os, COPY_IN, "AG copy-in") if self.w.p != bc else None
            out = self.t.alloc(bc * elems, COPY_IN, "AG output")
            self.t.free(copy_in)
        for x in unit:
            self.unsharded[id(x)] = [self.t.alloc(bc * n, what="unsharded") for n in self.weights[id(x)]]
        self.t.free(out)

    def reshard(self, row: Row) -> None:
        self.t.free_all(self.unsharded.pop(id(row), []))

    def post_backward(self, row: Row, last_microbatch: bool) -> None:
        """FSDP2 reduce-scatter: copy the unsharded gradients into one flat input (compute stream), free them,
        write the sharded gradient on the reduce-scatter stream; the input lives until the next one."""
        grads = self.unsharded_grads.get(id(row), [])
        if not grads or not (last_microbatch or self.f.fsdp_sync):
            return
        elems = sum(self.weights[id(row)])
        rs_in = self.t.alloc(self.w.rd * elems, what="RS input")
        self.t.free_all(grads)
        self.t.free(self.rs_input)
        self.rs_input = rs_in
        out = self.t.alloc(self.w.rd * elems / self.os, REDUCE_SCATTER, "sharded grad")
        if id(row) in self.grads:
            self.t.free(out)  # accumulated into the existing sharded gradient
        else:
            self.grads[id(row)] = [out]

    # ------------------------------------------------------------------------------------------ compute
    def forward(self, mb: int, chunk: int) -> None:
        rows = [(k, row) for k, row in enumerate(self.rows) if row.chunk == chunk]
        carry: int | None = None  # the layer output that becomes the next layer's first slot
        for k, row in rows:
            self.t.context = f"F{mb} {row.item.kind}{row.item.index}"
            self.unshard(row)
            kept: dict[str, int] = {}
            transient: list[int] = []
            for i, slot in enumerate(self.slots[id(row)]):
                if slot.id == "o.loss":
                    kept.update(self._loss_forward(slot.bytes))
                    continue
                if i == 0 and carry is not None and row.item.kind != EMBEDDING:
                    handle, carry = carry, None  # the layer input is the previous layer's output
                else:
                    handle = self.t.alloc(slot.bytes, what=slot.id, transient=True)
                if slot.kept:
                    kept[slot.id] = handle
                else:
                    transient.append(handle)
                    if len(transient) > 1:
                        self.t.free(transient.pop(0))  # an intermediate lives until the next op's output
            self.t.free_all(transient)
            if carry is not None:
                kept["input"] = carry
            carry = None if row.item.kind == OUTPUT else \
                self.t.alloc(self.w.r * self._tokens_h(), what="output", transient=True)
            self.saved[(mb, chunk, k)] = list(kept.items())  # type: ignore[arg-type]
            if self.fsdp2 and self.f.reshard_after_forward and not self._root(row):
                self.reshard(row)
        if carry is not None:
            self.saved[(mb, chunk, -1)] = [("output", carry)]  # type: ignore[list-item]

    def _tokens_h(self) -> float:
        return float(self.p.T) * self.p.r.dims.h / float(self.par.sp_div)

    def _loss_forward(self, saved_bytes: float) -> dict[str, int]:
        """Logits in β_c, the loss' wider copy (w_f − β_c per logit), its saved softmax (the o.loss slot); the
        copy goes after the softmax, the logits once the loss is computed."""
        logits = self.t.alloc(self._logits(self.w.c), what="logits", transient=True)
        wide = None
        if self.f.w_f > self.w.c:
            wide = self.t.alloc(self._logits(self.f.w_f - self.w.c), what="loss copy", transient=True)
        soft = self.t.alloc(saved_bytes, what="o.loss", transient=True)
        self.t.free(wide)
        self.t.free(logits)
        return {"o.loss": soft}

    def _logits(self, width: float) -> float:
        return float(self.p.T) * width * float(self.p.vpad) / float(self.p.t_v)

    def _root(self, row: Row) -> bool:
        return self.f.fsdp_layout == "root" and row.item.kind in (EMBEDDING, OUTPUT, EMBEDDING_COPY)

    def backward(self, mb: int, chunk: int, last_microbatch: bool) -> None:
        rows = [(k, row) for k, row in enumerate(self.rows) if row.chunk == chunk]
        has_output = any(r.item.kind == OUTPUT for _, r in rows)
        # the gradient of the stage's output arrives from the next stage
        grad = None if has_output else self.t.alloc(self.w.c * self._tokens_h(), what="grad in", transient=True)
        for _name, h in self.saved.pop((mb, chunk, -1), []):
            self.t.free(h)
        for k, row in reversed(rows):
            self.t.context = f"B{mb} {row.item.kind}{row.item.index}"
            self.unshard(row)
            saved = dict(self.saved.pop((mb, chunk, k), []))
            slots = [s for s in self.slots[id(row)] if s.id != "o.loss"]
            recomputed: list[int] = []
            if row.item.option != "none" and row.item.kind not in (EMBEDDING, OUTPUT):
                # the slots the option dropped, recomputed from the kept input
                recomputed = [self.t.alloc(s.bytes, what="re " + s.id, transient=True) for s in slots if not s.kept]
            if row.item.kind == OUTPUT:
                grad = self._loss_backward(saved.pop("o.loss", None))
            weights = list(self.weights[id(row)])
            for slot in reversed(slots):
                new = None if row.item.kind == EMBEDDING else \
                    self.t.alloc(slot.bytes, what="grad " + slot.id, transient=True)
                if slot.matmul and weights:
                    self._weight_grad(row, weights.pop())
                self.t.free(grad)
                grad = new
                self.t.free(saved.pop(slot.id, None))
                if recomputed:
                    self.t.free(recomputed.pop())
            for n in weights:
                self._weight_grad(row, n)
            self.t.free_all(recomputed)
            for h in saved.values():
                self.t.free(h)
            if self.fsdp2 and not self._root(row):
                self.post_backward(row, last_microbatch)
                if self.f.reshard_after_forward or last_microbatch:
                    self.reshard(row)
        self.t.free(grad)  # sent to the previous stage
        if self.fsdp2 and last_microbatch:
            for _k, row in rows:
                if self._root(row):
                    self.post_backward(row, last_microbatch)
                    self.reshard(row)

    def _weight_grad(self, row: Row, elems: float) -> None:
        if row.local.frozen:
            return
        if self.fsdp2:
            self.unsharded_grads.setdefault(id(row), []).append(self.t.alloc(self.w.c * elems, what="dW"))
        elif self.f.framework not in ("megatron", "mindspeed"):
            # a weight gradient added into the persistent buffer (Megatron fuses it into main_grad)
            self.t.free(self.t.alloc(self.w.c * elems, what="dW"))

    def _loss_backward(self, soft: int | None) -> int:
        """The softmax's gradient and the loss input's (β_l each, D45's 2·β_l), then the cast to β_c."""
        g_soft = self.t.alloc(self._logits(self.w.l), what="g softmax", transient=True)
        g_wide = self.t.alloc(self._logits(self.w.l), what="g loss in", transient=True)
        self.t.free(g_soft)
        self.t.free(soft)
        if self.w.l == self.w.c:
            return g_wide
        g_logits = self.t.alloc(self._logits(self.w.c), what="g logits", transient=True)
        self.t.free(g_wide)
        return g_logits

    # ------------------------------------------------------------------------------------------ optimizer
    def optimizer_step(self, first: bool) -> None:
        w, f = self.w, self.f
        self.t.context = "optimizer"
        elems = [(row, n / self._div(row, "o")) for row in self.rows if not row.local.frozen
                 for n in self.weights[id(row)]]
        if first:
            self.states = [self.t.alloc(w.os * n, what="state") for _row, n in elems for _ in range(int(w.n_os))]
            self.states += [self.t.alloc(w.m * n, what="master") for _row, n in elems if w.m]
        if f.optimizer_impl == "foreach":
            temps = [self.t.alloc(4 * n, what="opt temp") for _row, n in elems]
            self.t.free_all(temps)
        elif f.optimizer_impl == "forloop":
            for _row, n in elems:
                pair = [self.t.alloc(4 * n, what="opt temp"), self.t.alloc(4 * n, what="opt temp")]
                self.t.free_all(pair)
        # zero_grad(set_to_none=True): FSDP2's sharded gradients go; a persistent buffer stays
        for handles in self.grads.values():
            self.t.free_all(handles)
        self.grads.clear()

    # ------------------------------------------------------------------------------------------ steps
    def run(self, stage: int) -> Trace:
        ops = stage_ops(self.p.r, stage)
        last = {op.chunk: op.microbatch for op in ops if op.kind == "B"}  # the micro-batch that reduces
        self.init()
        for step in range(STEPS):
            self.t.step(step)
            for op in ops:  # a split backward's W ops add nothing here: its weight gradients come with B
                if op.kind == "F":
                    self.forward(op.microbatch, op.chunk)
                    if step == 0 and not self.handles_ws:  # the forward thread's cuBLAS, TE's workspaces
                        if self.workspace.cublas:
                            self.handles_ws.append(self.t.alloc(self.workspace.cublas / 2, what="workspace"))
                        self.handles_ws += [self.t.alloc(size, what="TE workspace") for size in self.workspace.te]
                        if self.workspace.ub:  # the userbuffer GEMMs' (Megatron --tp-comm-overlap)
                            self.handles_ws.append(self.t.alloc(self.workspace.ub, what="TE workspace"))
                elif op.kind == "B":
                    if step == 0 and not self.backward_ws and self.workspace.cublas:  # the autograd thread's cuBLAS
                        self.backward_ws = True
                        self.handles_ws.append(self.t.alloc(self.workspace.cublas / 2, what="workspace"))
                    self.backward(op.microbatch, op.chunk, op.microbatch == last.get(op.chunk))
            # FSDP2's root post-backward callback drops the last reduce-scatter input
            self.t.free(self.rs_input)
            self.rs_input = None
            for k in list(self.unsharded):
                self.t.free_all(self.unsharded.pop(k))
            self.optimizer_step(step == 0)
        return self.t


def _inflight(ops: tuple) -> int:
    live = best = 0
    for op in ops:
        live += 1 if op.kind == "F" else (-1 if op.kind == "B" else 0)
        best = max(best, live)
    return best


def stage_ops(r: Resolved, stage: int) -> tuple:
    """The operation order a stage's trace follows: all the trace reads of the micro-batch count m (an edit of m
    that keeps it keeps the trace, ``memory.stage_events``)."""
    par = r.par
    return _short_order(r.flags.schedule, int(par.p), int(par.vp), int(par.m), stage, r.strategy.vpp_group,
                        int(par.n_s), r.strategy.overlap_moe_ep_comm)


@lru_cache(maxsize=256)
def _short_order(schedule: str, p: int, vp: int, m: int, stage: int, vpp_group: int | None, n_s: int,
                 overlap: bool) -> tuple:
    """The stage's operation order with micro-batches cut to the warm-up plus one steady round when that
    keeps the same in-flight maximum (and the schedule accepts the count)."""
    full = stage_order(schedule, p, vp, m, stage, vpp_group=vpp_group, n_s=n_s, overlap_moe_ep_comm=overlap)
    peak = _inflight(full)
    for short in range(-(-peak // (vp * n_s)) + 1, m):
        try:
            ops = stage_order(schedule, p, vp, short, stage, vpp_group=vpp_group, n_s=n_s,
                              overlap_moe_ep_comm=overlap)
        except ValueError:  # a count the schedule does not accept (an interleaved group, DualPipeV's 2·p)
            continue
        if _inflight(ops) == peak:
            return ops
    return full


def stage_trace(pricer: StagePricer, stage: int, rows: list[Row],
                workspace: LibraryWorkspaces = NO_WORKSPACES, labels: bool = False) -> Trace:
    """The allocation trace of ``STEPS`` training steps of ``stage`` (eager PyTorch semantics); with
    ``labels`` every tensor says what it is."""
    builder = _Stage(pricer, rows, workspace)
    if labels:
        builder.t.labels = {}
    return builder.run(stage)


__all__ = ["COMPUTE", "COPY_IN", "REDUCE_SCATTER", "STEPS", "Trace", "stage_ops", "stage_trace"]
