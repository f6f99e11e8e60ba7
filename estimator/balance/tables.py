"""Stage tables for the balancer (spec §9.2): the time and memory of a stage holding layer positions
[a, a + c) with a given recompute assignment, priced by the estimator's own row costs.

An assignment is (r_full, r_sel, r_comm): counted from the slot start, layer k is full when k < r_full, else
selective when k < r_sel and comm when k < r_comm (both when both) — MindFormers' ``LayerSetting`` semantics,
which every framework's per-stage recompute can express (§9.1). Memory mirrors ``estimate.price_stage`` for
one chunk per stage (vp = 1): parameters + gradients + optimizer states + μ·activations + resident and
transient buffers + the working overhead of the backward walk + reserve; time is the stage's F + B + W + Rc
per micro-batch from the step-time model.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..estimate import layout_inputs, process_groups
from ..layout import EMBEDDING, MTP, NOOP, OUTPUT, Item, build_layout
from ..parsed import ParsedConfig
from ..resolve import resolve
from ..schedules import inflight_profile
from ..stage import Row, StagePricer
from ..steptime import _Ctx, pp_sends, stage_times
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
    """Layer positions in model order that the partition distributes (§4.1): body layers with noop padding,
    then MTP modules when they count in the offsets."""
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


def slot_items(parsed: ParsedConfig, positions: list[Position], assign: Assignment, holds_e: bool,
               holds_o: bool) -> list[Item]:
    """The layout items of one slot in model order: the embedding first when it holds it, the body positions
    with their recompute options, the head after the last body layer, then MTP modules that do not count in the
    offsets."""
    items: list[Item] = [Item(EMBEDDING, "")] if holds_e else []
    k = 0
    for pos in positions:
        if pos.kind == NOOP:
            items.append(Item(NOOP, ""))
            continue
        items.append(Item(pos.kind, pos.block, pos.index, assign.option(k)))
        k += 1
    if holds_o:
        at = max((n for n, it in enumerate(items) if it.index >= 0 and it.kind != MTP), default=len(items) - 1)
        items.insert(at + 1, Item(OUTPUT, ""))
        if not parsed.strategy.mtp_in_offset:
            model = parsed.model
            items.extend(Item(MTP, kind, model.num_layers + n, "none") for n, kind in enumerate(model.mtp_kinds()))
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


class StageTables:
    """Prices candidate stages of one plan (vp = 1, not FSDP2)."""

    def __init__(self, parsed: ParsedConfig, options: tuple[str, ...]) -> None:
        st = parsed.strategy
        self.parsed = parsed
        self.r = resolve(parsed.model, st, parsed.hardware, parsed.options)
        self.layout = build_layout(layout_inputs(self.r))
        self.pricer = StagePricer(self.r, self.layout)
        self.ctx = _Ctx(self.pricer)
        self.options = options
        r, par = self.r, self.r.par
        self.p = int(par.p)
        self.profile = inflight_profile(r.flags.schedule, self.p, 1, int(par.m), n_s=int(par.n_s),
                                        variant=r.options.vpp_variant)
        self.mu = [max(sum(pt.counts) for pt in prof.points) for prof in self.profile]
        self.positions = self._positions()
        self._kinds = [(pos.kind, pos.block) for pos in self.positions]
        self._time_cache: dict[tuple, float] = {}
        self._choice_cache: dict[tuple, tuple[float, float, tuple[str, ...]]] = {}
        # A stage's rows depend on i only through first/last, its time only through its pipeline sends, its
        # memory only through μ_i and the process groups: the stage-independent parts are priced once.
        self._rows_cache: dict[tuple, list[Row]] = {}
        self._sums_cache: dict[tuple, _Sums] = {}
        self._peak_cache: dict[tuple, float] = {}
        self._list_cache: dict[tuple, list[Choice]] = {}
        self._sends = [tuple(pp_sends(self.r, i, j) for j in range(int(self.r.par.vp))) for i in range(self.p)]
        self._groups = [process_groups(self.r, i) for i in range(self.p)]

    # -------------------------------------------------------------------------------- positions
    def _positions(self) -> list[Position]:
        return layer_positions(self.parsed)

    @property
    def total(self) -> int:
        return len(self.positions)

    # -------------------------------------------------------------------------------- rows
    def rows(self, i: int, a: int, c: int, assign: Assignment) -> list[Row]:
        """The rows stage i holds, in model order, as ``stage_rows`` would build them."""
        pricer = self.pricer
        tie = self.r.dims.tie
        first, last = i == 0, i == self.p - 1
        items = slot_items(self.parsed, self.positions[a:a + c], assign, first, last)
        rows = [Row(it, 0, pricer.cost(it, with_head=not (tie and first))) for it in items]
        kinds = {it.kind for it in items}
        if MTP in kinds and EMBEDDING not in kinds and not (tie and OUTPUT in kinds):
            rows.append(pricer.copy_row(0))
        return rows

    def stage_time(self, i: int, rows: list[Row]) -> float:
        """S_i = F + B + W + Rc per micro-batch (§7.5), from the step-time model."""
        key = (self._sends[i], tuple((row.item.kind, row.item.block, row.item.option, id(row.cost)) for row in rows))
        got = self._time_cache.get(key)
        if got is None:
            times = stage_times(self.ctx, i, rows)
            got = self._time_cache[key] = float(times.F + times.B + times.W + times.Rc)
        return got

    def memory(self, i: int, rows: list[Row], key: tuple | None = None) -> tuple[float, float]:
        """(stage total, optimizer-step peak), as ``estimate.price_stage`` prices one chunk (§6.8–§6.11);
        FSDP2 plans instant by instant (§12). ``key`` names ``rows`` for the stage-independent caches."""
        from ..estimate import optimizer_step_peak, profile_points, reserve_bytes

        f = self.r.flags
        if f.fsdp2:
            from .. import fsdp

            stage = fsdp.price_stage(self.pricer, i, profile_points(self.profile[i]), rows, False)
            return float(stage.total), float(stage.optimizer_step_peak)
        sums = self._sums_cache.get(key) if key is not None else None
        if sums is None:
            sums = _Sums.of(self, rows)
            if key is not None:
                self._sums_cache[key] = sums
        acts = self.mu[i] * sums.act
        groups = self._groups[i]
        reserve = reserve_bytes(self.r, acts + sums.working, i, groups)[0]
        total = sums.params + sums.grads + sums.states + acts + sums.resident + sums.transient + sums.working + reserve
        peak_key = (key, groups)
        peak = self._peak_cache.get(peak_key) if key is not None else None
        if peak is None:
            peak = float(optimizer_step_peak(self.r, rows, sums.resident, groups))
            if key is not None:
                self._peak_cache[peak_key] = peak
        return float(total), peak

    # -------------------------------------------------------------------------------- choices
    def assignments(self, c: int) -> Iterator[Assignment]:
        return assignments(self.options, c)

    def choices(self, i: int, a: int, c: int) -> list[Choice]:
        """Every assignment of a slot. A stage's cost depends only on the kinds it holds (not on which model
        indices they are), so slots with the same kinds share their priced choices."""
        kinds = tuple(self._kinds[a:a + c])
        listed = self._list_cache.get((i, kinds))
        if listed is not None:
            return listed
        out = []
        seen: set[tuple[str, ...]] = set()
        for assign in self.assignments(c):
            key = (i, kinds, assign)
            cached = self._choice_cache.get(key)
            if cached is None:
                rows_key = (i == 0, i == self.p - 1, kinds, assign)
                rows = self._rows_cache.get(rows_key)
                if rows is None:
                    rows = self._rows_cache[rows_key] = self.rows(i, a, c, assign)
                signature = tuple(row.item.option for row in rows)
                total, opt_peak = self.memory(i, rows, rows_key)
                cached = self._choice_cache[key] = (self.stage_time(i, rows), max(total, opt_peak), signature)
            time_, memory, signature = cached
            if signature in seen:  # e.g. counts beyond the layers of a slot with noop positions
                continue
            seen.add(signature)
            out.append(Choice(time_, memory, assign))
        self._list_cache[(i, kinds)] = out
        return out


@dataclass(frozen=True)
class _Sums:
    """The stage-independent sums of one stage's rows (non-FSDP2 memory)."""

    params: float
    grads: float      # γ·Σ gradients
    states: float
    act: float        # Σ stored activations of one micro-batch (× μ_i per stage)
    working: float
    transient: float
    resident: float

    @classmethod
    def of(cls, tables: StageTables, rows: list[Row]) -> _Sums:
        from ..estimate import working_for_chunk

        f = tables.r.flags
        params = sum(row.static.parameters for row in rows)
        grads = tables.pricer.gamma * sum(row.static.gradients for row in rows)
        states = 0.0 if f.swap_optimizer else sum(row.static.optimizer_states for row in rows)
        working, _ = working_for_chunk(tables.pricer, rows, 0)
        if f.comm_buffer_mode == "upstream_sum":
            transient = sum(max(row.parts[0], row.parts[1], row.parts[3]) + row.parts[2] for row in rows)
        else:
            transient = max(row.transient for row in rows)
        resident = sum(row.resident for row in rows)
        return cls(params, grads, states, sum(row.act for row in rows), working, transient, resident)
