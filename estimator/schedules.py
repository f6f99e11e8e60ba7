"""Pipeline schedules: per-stage operation order and the in-flight profile (docs/model.md#in-flight-micro-batches,
docs/model.md#peak-replay-point, docs/model.md#positions-and-slots).

A stage's activation memory depends on which micro-batches each of its virtual chunks holds at the moment a
backward starts, and that depends on the exact order the framework issues forwards and backwards. So instead
of trusting per-schedule formulas, this module rebuilds the issue order of every stage (``stage_order``) and
replays it (``replay_profile``): just before each backward op it records, per chunk, forwards done minus
backwards done. The closed forms (docs/model.md#in-flight-micro-batches, ``closed_form_counts``) are kept as a
cross-check and, for the V schedules (ZB-V, DualPipeV), as what the estimator prices (``inflight_profile``).

Split backwards (ZB-V, DualPipeV): a micro-batch leaves the count at its B (input gradient), not at its W.
Zero Bubble (Qi et al. 2024, Table 1) has B release M_B - M_W and W the remaining M_W (matmul inputs and
output gradients); the in-flight counts (docs/model.md#in-flight-micro-batches) count micro-batches whose backward has
not started. Where forwards are still to come, every schedule here issues W right after its B (deferred Ws only occur in
cool-downs, where counts only fall), so counting at W gives the same maxima (tested); the W residue belongs to the
timeline model.

The orders are this project's own implementations of: Megatron-LM's 1F1B and interleaved schedules
(``get_schedule_table``/``get_pp_rank_microbatches``), GPipe, Seq1F1B as described in
docs/model.md#in-flight-micro-batches, PyTorch's ``ScheduleZBVZeroBubble`` (Zero Bubble paper §6),
``ScheduleLoopedBFS`` (every micro-batch through each local stage before the next, backwards in reverse) and
``ScheduleInterleavedZeroBubble`` (ZB1P: the interleaved table with a warm-up of (vp − 1)·group + (p − 1 − i) and
split backwards), and DeepSeek's ``DualPipeV``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache

from . import replay_cache

SCHEDULES = ("1f1b", "interleaved", "gpipe", "seq1f1b", "seqsmartvpp", "zbv", "dualpipev", "looped_bfs",
             "interleaved_zb")
V_SCHEDULES = ("zbv", "dualpipev")
INTERLEAVED = ("interleaved", "seqsmartvpp", "interleaved_zb")
SLICED = ("seq1f1b", "seqsmartvpp")
VARIANTS = ("megatron", "upstream_big", "upstream_less")


@dataclass(frozen=True, slots=True)
class Op:
    """One compute operation of a stage. ``kind``: "F" forward; "B" backward (the input gradient when the
    same (microbatch, chunk, slice) also has a "W" later, else the whole backward); "W" weight gradient."""

    kind: str
    microbatch: int
    chunk: int
    slice: int = 0


@dataclass(frozen=True, slots=True)
class ReplayPoint:
    """Per chunk j, units (micro-batches; slices for sliced schedules) whose activations chunk j holds just
    before the backward of ``backward_chunk`` starts."""

    counts: tuple[int, ...]
    backward_chunk: int

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass(frozen=True, slots=True)
class StageProfile:
    """The non-dominated replay points of one stage, earliest first (Π_i of docs/model.md#in-flight-micro-batches)."""

    points: tuple[ReplayPoint, ...]

    @property
    def total(self) -> int:
        """N_i^mu: the units in flight at a maximal point."""
        return max(pt.total for pt in self.points)

    @property
    def peak(self) -> ReplayPoint:
        """The earliest point with the maximal total (ties go to the earliest, docs/model.md#peak-replay-point)."""
        best = self.points[0]
        for pt in self.points[1:]:
            if pt.total > best.total:
                best = pt
        return best


def _validate(schedule: str, p: int, vp: int, m: int, vpp_group: int | None, n_s: int, variant: str) -> int:
    """Reject what the frameworks reject; return the effective vpp_group (Megatron default: p)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {schedule!r}; expected one of {', '.join(SCHEDULES)}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown in-flight variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    for name, value in (("PP (p)", p), ("micro-batches (m)", m), ("VPP (vp)", vp), ("n_s", n_s)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1; got {value}")
    if n_s != 1 and schedule not in SLICED:
        raise ValueError(f"sequence slices n_s = {n_s} need schedule seq1f1b or seqsmartvpp, not {schedule}")
    group = p if vpp_group is None else vpp_group
    if schedule in V_SCHEDULES:
        if vp != 2:
            raise ValueError(f"VPP {vp} not valid for schedule {schedule}: V schedules hold exactly 2 chunks")
        if schedule == "dualpipev" and m < 2 * p:
            raise ValueError(f"DualPipeV needs at least 2×PP = {2 * p} micro-batches; got {m}")
    elif schedule in INTERLEAVED:
        if vp < 2 or p < 2:
            raise ValueError(f"VPP {vp} not valid for schedule {schedule} with PP {p}: it needs VPP ≥ 2 and "
                             "PP ≥ 2 (use 1f1b / seq1f1b otherwise)")
        if not p <= group <= m:
            raise ValueError(f"interleaved schedule needs PP {p} ≤ group {group} ≤ micro-batches {m}")
        if 0 < m % group < p:
            raise ValueError(f"interleaved schedule needs a last group of 0 or ≥ PP {p} micro-batches; {m} "
                             f"micro-batches in groups of {group} leave {m % group}")
    elif vp != 1 and schedule != "looped_bfs":
        raise ValueError(f"VPP {vp} not valid for schedule {schedule}: it runs one chunk per stage")
    return group


def _megatron_table(m: int, vp: int, group: int) -> list[tuple[int, int]]:
    """Forward issue order (microbatch, chunk) of the interleaved schedule: groups of ``group`` micro-batches
    run through every chunk before the next group starts; the last group holds the remainder."""
    table: list[tuple[int, int]] = []
    for first in range(0, m, group):
        last = m if first + group >= m else first + group
        table += [(mb, chunk) for chunk in range(vp) for mb in range(first, last)]
    return table


def _one_f_one_b(forwards: list[Op], backwards: list[Op], warmup: int) -> list[Op]:
    """``warmup`` forwards, then one forward and one backward alternately, then the remaining backwards:
    the shape shared by 1F1B, interleaved 1F1B, Seq1F1B and (warmup = all) GPipe."""
    warmup = min(warmup, len(forwards))
    ops = forwards[:warmup]
    for k, fwd in enumerate(forwards[warmup:]):
        ops += [fwd, backwards[k]]
    return ops + backwards[len(forwards) - warmup:]


def _order_zbv(p: int, m: int, i: int) -> list[Op]:
    """ZB-V on stage i, as PyTorch's ScheduleZBVZeroBubble issues it: chunk-0 warm-up, chunk-1 forwards
    interleaved, then F/B/W triples alternating between the chunks, and a cool-down with deferred Ws. The
    order is built for at least 2p - 1 micro-batches and the padding ops are dropped, as PyTorch does."""
    n = max(2 * p - 1, m)
    ops: list[Op] = []
    f, b = [0, 0], [0, 0]

    def fwd(c: int) -> None:
        ops.append(Op("F", f[c], c))
        f[c] += 1

    def bwd(c: int, weight: bool) -> None:
        ops.append(Op("B", b[c], c))
        if weight:
            ops.append(Op("W", b[c], c))
        b[c] += 1

    for _ in range(2 * (p - i) - 1):  # warm-up: chunk 0 only
        fwd(0)
    for _ in range(i):  # then chunk 1 joins
        fwd(1)
        fwd(0)
    for _ in range(p - i):  # chunk-1 backwards start (this stage is the V's turning side)
        fwd(1)
        bwd(1, True)
    while f[1] < f[0] or f[0] < n:  # steady state: F0 B0 W0 F1 B1 W1
        if f[0] < n:
            fwd(0)
        bwd(0, True)
        fwd(1)
        bwd(1, True)
    w = b.copy()  # cool-down: input gradients first, chunk-0 weight gradients fill in, the rest at the end
    for _ in range(i):
        bwd(0, False)
        bwd(1, False)
    for _ in range(p - i):
        bwd(0, False)
        ops.append(Op("W", w[0], 0))
        w[0] += 1
    ops += [Op("W", mb, 1) for mb in range(w[1], b[1])] + [Op("W", mb, 0) for mb in range(w[0], b[0])]
    return [op for op in ops if op.microbatch < m]


def _order_dualpipev(p: int, m: int, i: int) -> list[Op]:
    """DualPipeV on stage i, as DeepSeek's DualPipeV.step issues it (steps 1-8). An overlapped
    forward/backward pair is listed forward first: the forward's activations exist while the backward runs.
    Zero-bubble backwards push their W onto a FIFO that later W steps pop (WeightGradStore)."""
    ops: list[Op] = []
    f, b = [0, 0], [0, 0]
    pending: deque[tuple[int, int]] = deque()

    def fwd(c: int) -> None:
        ops.append(Op("F", f[c], c))
        f[c] += 1

    def bwd(c: int, split: bool = False) -> None:
        ops.append(Op("B", b[c], c))
        if split:
            pending.append((b[c], c))
        b[c] += 1

    def weight() -> None:
        if pending:
            mb, c = pending.popleft()
            ops.append(Op("W", mb, c))

    for _ in range(2 * (p - i - 1)):  # step 1: F0
        fwd(0)
    for _ in range(i + 1):  # step 2: F0 F1
        fwd(0)
        fwd(1)
    for _ in range(p - i - 1):  # step 3: B1 W F1 (zero bubble)
        bwd(1, split=True)
        weight()
        fwd(1)
    for _ in range(m - 2 * p + i + 1):  # step 4: (F0 B1) (F1 B0), overlapped pairs
        fwd(0)
        bwd(1)
        fwd(1)
        bwd(0)
    for _ in range(p - i - 1):  # step 5: B1 (F1 B0)
        bwd(1)
        fwd(1)
        bwd(0)
    split, half = False, (i + 1) // 2
    for k in range(i + 1):  # step 6: B1 B0, the second half split
        split = split or (k == half and i % 2 == 1)
        bwd(1, split)
        split = split or (k == half and i % 2 == 0)
        bwd(0, split)
    for _ in range(p - i - 1):  # step 7: W B0
        weight()
        bwd(0, split=True)
    for _ in range(i + 1):  # step 8: W
        weight()
    return ops


@lru_cache(maxsize=256)
def stage_order(schedule: str, p: int, vp: int, m: int, stage: int, *, vpp_group: int | None = None,
                n_s: int = 1, overlap_moe_ep_comm: bool = False) -> tuple[Op, ...]:
    """The operation order one stage executes (forward/backward/weight ops), as the framework issues it.

    Every F and B of every (micro-batch, chunk, slice) appears exactly once, and a W once after its B where
    the schedule splits the backward. ``overlap_moe_ep_comm`` (Megatron's combined 1F1B) adds one warm-up
    forward to the interleaved schedules and is ignored by the others.
    """
    group = _validate(schedule, p, vp, m, vpp_group, n_s, "megatron")
    if not 0 <= stage < p:
        raise ValueError(f"stage {stage} out of range for PP {p}")
    if schedule == "zbv":
        return tuple(_order_zbv(p, m, stage))
    if schedule == "dualpipev":
        return tuple(_order_dualpipev(p, m, stage))
    table = _table(schedule, m, vp, group)
    slices = range(n_s)
    forwards = [Op("F", mb, c, s) for mb, c in table for s in slices]
    # Backwards run through the same table with the chunk order reversed and slices last-to-first.
    backwards = [Op("B", mb, vp - 1 - c, s) for mb, c in table for s in reversed(slices)]
    hops = p - 1 - stage
    if schedule == "interleaved_zb":  # ZB1P: each input-gradient backward followed by its weight gradient
        warmup = _warmup(schedule, p, vp, stage, group, n_s, overlap_moe_ep_comm)
        ops = _one_f_one_b(forwards, backwards, warmup)
        return tuple(x for op in ops for x in ((op, Op("W", op.microbatch, op.chunk)) if op.kind == "B" else (op,)))
    if schedule in ("gpipe", "looped_bfs"):
        warmup = len(forwards)
    elif schedule in INTERLEAVED:
        # Megatron: 2·(p-1-i) + (vp-1)·group warm-up micro-batches (+1 with MoE overlap); in slice units
        # the first backward also waits for the n_s slices of its micro-batch (D37 for n_s = 1).
        warmup = 2 * hops + ((vp - 1) * group + 1) * n_s - 1 + int(overlap_moe_ep_comm)
    else:
        warmup = hops + n_s - 1  # 1F1B: p-1-i; Seq1F1B: p-i-2+n_s slices
    return tuple(_one_f_one_b(forwards, backwards, warmup))


def _replay(ops: Iterable[Op], vp: int, free_at: str = "B") -> tuple[ReplayPoint, ...]:
    """Points just before each backward op, reduced to the non-dominated ones in schedule order."""
    ops = tuple(ops)
    split = {(op.microbatch, op.chunk, op.slice) for op in ops if op.kind == "W"} if free_at == "W" else set()
    counts = [0] * vp
    seen: dict[tuple[int, ...], ReplayPoint] = {}  # first occurrence of each vector, in schedule order
    for op in ops:
        if op.kind == "F":
            counts[op.chunk] += 1
            continue
        if op.kind == "B" and (vec := tuple(counts)) not in seen:
            seen[vec] = ReplayPoint(vec, op.chunk)
        if (op.kind == "W") == ((op.microbatch, op.chunk, op.slice) in split):
            counts[op.chunk] -= 1
    # w dominates v only if sum(w) > sum(v): scanning by decreasing total, comparing with the maxima kept
    # so far suffices (domination is transitive).
    kept: list[tuple[int, ...]] = []
    for vec in sorted(seen, key=sum, reverse=True):
        if not any(all(a >= b for a, b in zip(k, vec, strict=True)) for k in kept):
            kept.append(vec)
    keep = set(kept)
    return tuple(pt for vec, pt in seen.items() if vec in keep)


def _table(schedule: str, m: int, vp: int, group: int) -> list[tuple[int, int]]:
    """Forward issue order (micro-batch, chunk): the interleaved table, chunk by chunk (looped BFS), or one chunk."""
    if schedule in INTERLEAVED:
        return _megatron_table(m, vp, group)
    if schedule == "looped_bfs":
        return [(mb, c) for c in range(vp) for mb in range(m)]
    return [(mb, 0) for mb in range(m)]


def _warmup(schedule: str, p: int, vp: int, stage: int, group: int, n_s: int, overlap: bool) -> int:
    hops = p - 1 - stage
    if schedule in ("gpipe", "looped_bfs"):
        return 1 << 62
    if schedule == "interleaved_zb":  # PyTorch's ZB1P: one extra forward per hop, not two
        return hops + (vp - 1) * group
    if schedule in INTERLEAVED:
        return 2 * hops + ((vp - 1) * group + 1) * n_s - 1 + int(overlap)
    return hops + n_s - 1


def _fast_points(schedule: str, p: int, vp: int, m: int, stage: int, group: int, n_s: int,
                 overlap: bool) -> tuple[ReplayPoint, ...]:
    """The replay of the 1F1B family (1F1B, interleaved, GPipe, Seq1F1B, seqsmartvpp) without building ops.

    Their order is ``w`` forwards, then forward/backward pairs, then the remaining backwards, so just before
    backward k the stage has issued min(w + 1 + k, F) forwards and k backwards; cumulative per-chunk counts
    of the forward and backward sequences give every point at once. Equal to ``_replay(stage_order(...))``
    (tested); the op lists stay the reference and feed the timeline."""
    import numpy as np

    table = np.array(_table(schedule, m, vp, group), dtype=np.int64)[:, 1]
    f_chunks = np.repeat(table, n_s)
    b_chunks = vp - 1 - f_chunks
    total = len(f_chunks)
    w = min(_warmup(schedule, p, vp, stage, group, n_s, overlap), total)
    f_cum = np.zeros((total + 1, vp), dtype=np.int64)
    b_cum = np.zeros((total + 1, vp), dtype=np.int64)
    f_cum[1:] = np.cumsum(np.eye(vp, dtype=np.int64)[f_chunks], axis=0)
    b_cum[1:] = np.cumsum(np.eye(vp, dtype=np.int64)[b_chunks], axis=0)
    k = np.arange(total)
    counts = f_cum[np.minimum(w + 1 + k, total)] - b_cum[k]
    # first occurrence of each distinct vector: one int64 key per row (counts < 2^(63/vp))
    shift = 63 // vp
    keys = np.zeros(total, dtype=np.int64)
    for j in range(vp):
        keys = (keys << shift) | counts[:, j]
    _, first = np.unique(keys, return_index=True)
    first.sort()
    seen = {tuple(int(x) for x in counts[i]): ReplayPoint(tuple(int(x) for x in counts[i]), int(b_chunks[i]))
            for i in first}
    kept: list[tuple[int, ...]] = []
    for vec in sorted(seen, key=sum, reverse=True):
        if not any(all(a >= b for a, b in zip(kk, vec, strict=True)) for kk in kept):
            kept.append(vec)
    keep = set(kept)
    return tuple(pt for vec, pt in seen.items() if vec in keep)


@cache
def replay_profile(schedule: str, p: int, vp: int, m: int, *, vpp_group: int | None = None, n_s: int = 1,
                   overlap_moe_ep_comm: bool = False, free_at: str = "B") -> tuple[StageProfile, ...]:
    """The in-flight profile of every stage obtained by replaying ``stage_order`` (any schedule, including
    the V schedules, whose replay the estimator uses only as a cross-check of their closed forms).
    ``free_at="W"`` releases split backwards at their W instead (a check that the maxima do not move)."""
    if free_at not in ("B", "W"):
        raise ValueError(f"free_at must be 'B' or 'W'; got {free_at!r}")
    key = (schedule, p, vp, m, vpp_group, n_s, overlap_moe_ep_comm)
    stored = replay_cache.get(key) if free_at == "B" else None
    if stored is not None:  # a replay an earlier process made (replay_cache)
        return tuple(StageProfile(tuple(ReplayPoint(counts, b) for counts, b in stage)) for stage in stored)
    if schedule not in V_SCHEDULES and free_at == "B":
        group = _validate(schedule, p, vp, m, vpp_group, n_s, "megatron")
        out = tuple(StageProfile(_fast_points(schedule, p, vp, m, i, group, n_s, overlap_moe_ep_comm))
                    for i in range(p))
    else:
        out = tuple(StageProfile(_replay(stage_order(schedule, p, vp, m, i, vpp_group=vpp_group, n_s=n_s,
                                                     overlap_moe_ep_comm=overlap_moe_ep_comm), vp, free_at))
                    for i in range(p))
    if free_at == "B":
        replay_cache.put(key, tuple(tuple((pt.counts, pt.backward_chunk) for pt in prof.points) for prof in out))
    return out


def closed_form_counts(schedule: str, p: int, vp: int, m: int, *, vpp_group: int | None = None, n_s: int = 1,
                       overlap_moe_ep_comm: bool = False) -> tuple[tuple[int, ...], ...]:
    """The closed-form (docs/model.md#in-flight-micro-batches) maximal count vector per stage (for tests and for the V
    schedules).

    Interleaved family: the first N_i forwards of the schedule table, N_i = min(total, warm-up + 1) (D37);
    seqsmartvpp counts slices. V schedules: chunk 0 / chunk 1 as in the closed forms of
    docs/model.md#in-flight-micro-batches (B_pm = min(p, m)).
    """
    group = _validate(schedule, p, vp, m, vpp_group, n_s, "megatron")
    min(p, m)
    out: list[tuple[int, ...]] = []
    for i in range(p):
        if schedule == "1f1b":
            out.append((min(p - i, m),))
        elif schedule == "gpipe":
            out.append((m,))
        elif schedule == "looped_bfs":
            out.append((m,) * vp)
        elif schedule == "seq1f1b":
            out.append((min(m * n_s, p - i - 1 + n_s),))
        elif schedule == "zbv":
            # the closed form (docs/model.md#in-flight-micro-batches) writes chunk 0 as min(m, 2·B_pm − 1 − i); with m <
            # p that goes negative on stages i >= m, where the V order forwards every chunk-0 micro-batch first. 2p − 1
            # − i equals it for m >= p and matches the replay everywhere (docs/decisions.md, D-ZBV-UNDERFILL).
            out.append((min(m, 2 * p - 1 - i), min(m, i + 1)))
        elif schedule == "dualpipev":
            out.append((2 * p - i, min(m, i + 1)))
        else:
            hops = (1 if schedule == "interleaved_zb" else 2) * (p - 1 - i)
            first = hops + ((vp - 1) * group + 1) * n_s + int(overlap_moe_ep_comm and schedule != "interleaved_zb")
            n = min(vp * m * n_s, first)
            units = [chunk for _, chunk in _megatron_table(m, vp, group) for _ in range(n_s)][:n]
            out.append(tuple(units.count(j) for j in range(vp)))
    return tuple(out)


def _upstream_vpp(p: int, vp: int, m: int, variant: str) -> tuple[tuple[int, ...], ...]:
    """SAPP-ND's interleaved counts (``vpp_variant``, docs/model.md#in-flight-micro-batches), kept for comparison only.
    Middle chunks hold B_pm in both variants (upstream_less names only the first and last chunk)."""
    b_pm = min(p, m)
    out = []
    for i in range(p):
        if variant == "upstream_less":
            first, last = b_pm, b_pm - i
        else:
            extra, last = b_pm - i - 1, b_pm - i
            if last < b_pm:
                last += min(1, extra)
                extra = max(0, extra - 1)
            first = b_pm + extra - (1 if i == 0 else 0)
        out.append((first, *([b_pm] * (vp - 2)), last))
    return tuple(out)


@cache
def inflight_profile(schedule: str, p: int, vp: int, m: int, *, vpp_group: int | None = None, n_s: int = 1,
                     overlap_moe_ep_comm: bool = False,
                     variant: str = "megatron") -> tuple[StageProfile, ...]:
    """One StageProfile per stage: the replay of the schedule's operation order (every schedule, the V ones
    included, whose first point is their closed form, docs/model.md#in-flight-micro-batches); the upstream interleaved
    variants as their closed form, a single point followed by a backward of the last chunk."""
    _validate(schedule, p, vp, m, vpp_group, n_s, variant)
    kwargs = {"vpp_group": vpp_group, "n_s": n_s, "overlap_moe_ep_comm": overlap_moe_ep_comm}
    if schedule == "interleaved" and variant != "megatron":
        vectors = _upstream_vpp(p, vp, m, variant)
    else:
        # V schedules too: their replay's first point is the closed form (tested), and ZB-V has a second
        # maximal point before each chunk-0 backward that matters when the two chunks differ (D-V-REPLAY).
        return replay_profile(schedule, p, vp, m, **kwargs)
    return tuple(StageProfile((ReplayPoint(vec, vp - 1),)) for vec in vectors)


def chunk_slot(schedule: str, p: int, vp: int, stage: int, chunk: int) -> int:
    """Model-order slot index q of (chunk, stage): q = chunk*p + stage, or for V schedules (vp = 2) chunk 0
    -> stage, chunk 1 -> 2p-1-stage (docs/model.md#positions-and-slots: the model runs down the stages and back up)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {schedule!r}; expected one of {', '.join(SCHEDULES)}")
    if not (0 <= stage < p and 0 <= chunk < vp):
        raise ValueError(f"(chunk {chunk}, stage {stage}) out of range for PP {p}, VPP {vp}")
    if schedule in V_SCHEDULES:
        if vp != 2:
            raise ValueError(f"VPP {vp} not valid for schedule {schedule}: V schedules hold exactly 2 chunks")
        return stage if chunk == 0 else 2 * p - 1 - stage
    return chunk * p + stage
