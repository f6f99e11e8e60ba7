"""Stage tables for the balancer (docs/model.md#balancing): the time and memory of a stage holding layer
positions [a, a + c) with a given recompute assignment, priced by the estimator's own stage assembler.

An assignment is (r_full, r_sel, r_comm): counted from the slot start, layer k is full when k < r_full, else
selective when k < r_sel and comm when k < r_comm (both when both) — MindFormers' ``LayerSetting`` semantics,
which every framework's per-stage recompute can express. Every assignment of a slot is one table row: their
forms are stacked (``assembly.form.stack_forms``) and assembled at once — memory by ``assembly.memory`` (the
estimate's rule at the stage's replay points), time (F + B + W + Rc per micro-batch) by ``steptime``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ..assembly import ChunkSums, chunk_sums, profile_points, stage_memory
from ..assembly.form import StageForm, build_form, stack_forms
from ..assembly.memory import combine
from ..device.ratio import with_slack_ratio
from ..layer_states import (
    LayerLists,
    freeze_inputs,
    grad_option,
    graph_start,
    layer_grad,
    layer_saving,
    saving_counts,
)
from ..layout import (
    EMBEDDING,
    MTP,
    NOOP,
    OUTPUT,
    Item,
    build_layout,
    layout_inputs,
)
from ..parsed import ParsedConfig
from ..resolve import resolve
from ..rowtime import TimeContext
from ..schedules import inflight_profile
from ..stage import Row, StagePricer
from ..stage_entries import EMBEDDING_COPY, Entry
from ..steptime import ChunkTimes, chunk_times, stage_times
from .solver import Choice

OPTION_OF = {(False, False): "none", (True, False): "selective", (False, True): "comm", (True, True): "both"}


@dataclass(frozen=True)
class Assignment:
    full: int
    sel: int
    comm: int

    def option(self, k: int) -> str:
        if k < self.full:
            return "full"
        return OPTION_OF[(k < self.sel, k < self.comm)]


@dataclass(frozen=True)
class Position:
    kind: str   # body kind, "mtp" or "noop"
    block: str
    index: int  # model-order index over body + MTP (−1 for noop)


def layer_positions(parsed: ParsedConfig) -> list[Position]:
    """Layer positions in model order that the partition distributes (docs/model.md#positions-and-slots): body layers
    with noop padding, then MTP modules when they count in the offsets."""
    st, model = parsed.strategy, parsed.model
    noop = set(st.noop_layers)
    body = iter(enumerate(model.body_kinds()))
    out: list[Position] = []
    for k in range(model.num_layers + len(noop)):
        if k in noop:
            out.append(Position(NOOP, "", -1))
        else:
            idx, kind = next(body)
            out.append(Position(kind, kind, idx))
    if st.mtp_in_offset:
        out.extend(Position(MTP, kind, model.num_layers + k) for k, kind in enumerate(model.mtp_kinds()))
    return out


@dataclass(frozen=True)
class Freeze:
    """[A-FREEZE] what decides a layer's gradient state (``layer_states.layer_grad``, ``layer_states.grad_option``)."""

    trainable: frozenset[int] | None = None
    start: float = -1
    checkpoint_trainable_only: bool = False

    def grad(self, index: int) -> str | None:
        return layer_grad(index, self.trainable, self.start)

    def option(self, option: str, grad: str | None) -> str:
        return grad_option(option, grad, self.checkpoint_trainable_only)


def slot_items(parsed: ParsedConfig, positions: list[Position], assign: Assignment, holds_e: bool,
               holds_o: bool, savings: tuple[tuple[bool | tuple[str, ...] | None, str | None], ...] = (),
               mtp_offload: Callable[[int], bool | tuple[str, ...] | None] = lambda index: None,
               freeze: Freeze = Freeze()) -> list[Item]:
    """The layout items of one slot in model order: the embedding first when it holds it, the body positions
    with their recompute options (and ``savings``, each one's activation offload and --moe-zero-memory level,
    ``slot_savings``; ``freeze``, each one's gradient state), the head after the last body layer, then MTP
    modules that do not count in the offsets (each offloading as ``mtp_offload`` says of its model index)."""
    items: list[Item] = [Item(EMBEDDING, "")] if holds_e else []
    k = 0
    for pos in positions:
        if pos.kind == NOOP:
            items.append(Item(NOOP, ""))
            continue
        grad = freeze.grad(pos.index)
        items.append(Item(pos.kind, pos.block, pos.index, freeze.option(assign.option(k), grad), 1, True,
                          *(savings[k] if savings else (None, None)), grad))
        k += 1
    if holds_o:
        at = max((n for n, it in enumerate(items) if it.index >= 0 and it.kind != MTP), default=len(items) - 1)
        items.insert(at + 1, Item(OUTPUT, ""))
        if not parsed.strategy.mtp_in_offset:
            model = parsed.model
            items.extend(Item(MTP, kind, model.num_layers + n, "none", offload=mtp_offload(model.num_layers + n),
                              grad=freeze.grad(model.num_layers + n)) for n, kind in enumerate(model.mtp_kinds()))
    return items


def assignments(options: tuple[str, ...], c: int) -> Iterator[Assignment]:
    """Every (full, selective, comm) count triple of a c-position slot that ``options`` allows."""
    body = c  # noop positions never recompute; bounds above the layer count are harmless
    fulls = range(body + 1) if "full" in options else (0,)
    for full in fulls:
        sels = range(full, body + 1) if "selective" in options else (full,)
        for sel in sels:
            comms = range(full, body + 1) if "comm" in options else (full,)
            for comm in comms:
                if sel > full and comm > full and comm != sel and "both" not in options:
                    continue
                yield Assignment(full, max(sel, full), max(comm, full))


def snap_times(times: object) -> list[float]:
    """Stage times on a 1 ps grid: choices whose times differ only by rounding (the same layers recomputed in
    another chunk, summed in another order) tie exactly, and the tie goes to the lower memory, not to noise."""
    return [float(t) for t in np.round(np.asarray(times, dtype=np.float64).ravel(), 12)]


class PlanTables:
    """What the stage tables of one plan share: the resolved plan, its pricer and time context, and each
    stage's replay points (as ``estimate`` takes them)."""

    def __init__(self, parsed: ParsedConfig, options: tuple[str, ...]) -> None:
        # candidate stages are not the pricer's layout's stages, so their allocator slack cannot be replayed:
        # they take the plan's own slack per dynamic byte (P-SLACK-RATIO)
        parsed = with_slack_ratio(parsed)
        st = parsed.strategy
        self.parsed = parsed
        self.r = resolve(parsed.model, st, parsed.hardware, parsed.options)
        self.layout = build_layout(layout_inputs(self.r))
        self.pricer = StagePricer(self.r, self.layout)
        self.ctx = TimeContext(self.pricer)
        self.options = options
        par, f = self.r.par, self.r.flags
        self.p, self.vp, self.schedule = int(par.p), int(par.vp), f.schedule
        profile = inflight_profile(f.schedule, self.p, self.vp, int(par.m), vpp_group=st.vpp_group,
                                   n_s=int(par.n_s), overlap_moe_ep_comm=st.overlap_moe_ep_comm,
                                   variant=parsed.options.vpp_variant)
        self.points = [profile_points(prof) for prof in profile]
        self.positions: list[Position] = layer_positions(parsed)
        self.saving = saving_counts(self.r)
        got = freeze_inputs(self.r)
        self.freeze = Freeze(got["trainable_layers"], graph_start(got["trainable_layers"], got["embedding_trains"]),
                             got["checkpoint_trainable_only"]) if got else Freeze()  # type: ignore[arg-type]

    def mtp_offload(self, index: int) -> bool | tuple[str, ...] | None:
        """The activation offload of the MTP module at model index ``index`` when it sits outside the offsets:
        what the plan's layer lists say of it (``LayerLists``), else the plan's."""
        lists = self.saving[0]
        return lists.of(index) if isinstance(lists, LayerLists) else None

    def slot_savings(self, i: int, j: int, positions: list[Position]
                     ) -> tuple[tuple[bool | tuple[str, ...] | None, str | None], ...]:
        """Per body position of the slot at (stage i, chunk j): its activation offload and --moe-zero-memory
        level (``layer_states.layer_saving``); () when every layer follows the plan."""
        if self.saving == (None, None):
            return ()
        body = [pos.index for pos in positions if pos.kind != NOOP]
        return tuple(layer_saving(self.saving, k, i, j, self.vp, len(body), index) for k, index in enumerate(body))


class StageTables(PlanTables):
    """Prices candidate stages of one plan (vp = 1)."""

    def __init__(self, parsed: ParsedConfig, options: tuple[str, ...]) -> None:
        super().__init__(parsed, options)
        self._kinds = [(pos.kind, pos.block) for pos in self.positions]
        self._list_cache: dict[tuple, list[Choice]] = {}
        self._slot_cache: dict[tuple, _Slot] = {}

    @property
    def total(self) -> int:
        return len(self.positions)

    def entries(self, i: int, a: int, c: int, assign: Assignment) -> list[Entry]:
        """The rows stage i holds, in model order, as ``stage_entries`` would list them."""
        tie = self.r.dims.tie
        first, last = i == 0, i == self.p - 1
        positions = self.positions[a:a + c]
        items = slot_items(self.parsed, positions, assign, first, last, self.slot_savings(i, 0, positions),
                           self.mtp_offload, self.freeze)
        out = [Entry(it, 0, not (tie and first)) for it in items]
        kinds = {it.kind for it in items}
        if MTP in kinds and EMBEDDING not in kinds and not (tie and OUTPUT in kinds):
            out.append(Entry(Item(EMBEDDING_COPY, ""), 0))
        return out

    def assignments(self, c: int) -> Iterator[Assignment]:
        return assignments(self.options, c)

    def choices(self, i: int, a: int, c: int) -> list[Choice]:
        """Every assignment of a slot (one per distinct recompute pattern), priced at once. A stage's cost
        depends only on the kinds it holds (not on which model indices they are), so slots with the same kinds
        share their priced choices, and stages that hold the same rows share their sums."""
        kinds = tuple(self._kinds[a:a + c])
        if i == self.p - 1 and all(kind in (MTP, NOOP) for kind, _block in kinds):
            # the layout puts the head after the last body layer (layout.build_layout): a last stage of MTP or
            # noop positions alone would move it to the stage before, which these per-stage slots do not price
            return []
        # layer lists and frozen layers: which layers, not only their kinds
        savings = (self.slot_savings(i, 0, self.positions[a:a + c]),
                   tuple(self.freeze.grad(pos.index) for pos in self.positions[a:a + c])
                   if self.freeze.trainable is not None else ())
        listed = self._list_cache.get((i, kinds, savings))
        if listed is not None:
            return listed
        key = (i == 0, i == self.p - 1, kinds, savings)
        slot = self._slot_cache.get(key)
        if slot is None:
            chosen: list[Assignment] = []
            table = []
            seen: set[tuple[str, ...]] = set()
            for assign in self.assignments(c):
                entries = self.entries(i, a, c, assign)
                signature = tuple(e.item.option for e in entries)
                if signature in seen:  # e.g. counts beyond the layers of a slot with noop positions
                    continue
                seen.add(signature)
                chosen.append(assign)
                table.append(entries)
            slot = self._slot_cache[key] = self._sums(table, tuple(chosen))
        times, totals, opt_peaks = self._price(i, slot)
        out = [Choice(t, max(total, opt), assign)
               for t, total, opt, assign in zip(snap_times(times), totals, opt_peaks, slot.assigns, strict=True)]
        self._list_cache[(i, kinds, savings)] = out
        return out

    def _sums(self, table: list[list[Entry]], assigns: tuple[Assignment, ...] = ()) -> _Slot:
        forms = tuple(build_form(entries, 1) for entries in table)
        stacked = stack_forms(forms)
        return _Slot(assigns, tuple(tuple(e) for e in table), forms, stacked, chunk_sums(self.pricer, stacked, 0),
                     chunk_times(self.ctx, stacked, 0))

    def price(self, i: int, table: list[list[Entry]]) -> tuple[list[float], list[float], list[float]]:
        """Per table row (a stage's entries): the stage time S_i = F + B + W + Rc per micro-batch, the stage total
        and the optimizer-step peak of stage i holding those rows."""
        return self._price(i, self._sums(table))

    def _price(self, i: int, slot: _Slot) -> tuple[list[float], list[float], list[float]]:
        """The stage-dependent part (replay points, process groups, pipeline hand-overs) on the slot's sums;
        FSDP2 plans (instants walk the rows) one form at a time."""
        times = stage_times(self.ctx, i, [slot.times])
        if self.r.flags.fsdp2:
            cost = self.pricer.cost
            mems = [stage_memory(self.pricer, i, form, self.points[i],
                                 rows=[Row(e.item, e.chunk, cost(e.item, e.with_head), e.with_head) for e in entries])
                    for form, entries in zip(slot.forms, slot.entries, strict=True)]
        else:
            mems = [combine(self.pricer, i, [slot.sums], self.points[i], slot.stacked.vision, self.pricer.memo)]
        n = len(slot.forms)

        def column(values: list) -> list[float]:
            return [float(x) for x in np.broadcast_to(np.concatenate([np.ravel(v) for v in values]), (n,))]

        return (column([times.F + times.B + times.W + times.Rc]), column([m.total for m in mems]),
                column([m.optimizer_step_peak for m in mems]))


@dataclass(frozen=True)
class _Slot:
    """A slot's table rows: their assignments, forms, stacked form, and chunk sums and times (arrays over them)."""

    assigns: tuple[Assignment, ...]
    entries: tuple[tuple[Entry, ...], ...]
    forms: tuple[StageForm, ...]
    stacked: StageForm
    sums: ChunkSums
    times: ChunkTimes
