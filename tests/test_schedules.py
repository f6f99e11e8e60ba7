"""Tests for estimator.schedules: docs/model.md#in-flight-micro-batches in-flight profiles (V11) and the replayed
operation orders."""

from __future__ import annotations

from collections import Counter
from itertools import product

import pytest

from estimator.schedules import (
    SCHEDULES,
    Op,
    ReplayPoint,
    StageProfile,
    chunk_slot,
    closed_form_counts,
    inflight_profile,
    replay_profile,
    stage_order,
)


def vectors(profile: StageProfile) -> list[tuple[int, ...]]:
    return [pt.counts for pt in profile.points]


# ----------------------------------------------------------------------------------------------- V11

@pytest.mark.parametrize(("p", "m", "expected"), [(4, 8, [4, 3, 2, 1]), (4, 2, [2, 2, 2, 1])])
def test_v11_1f1b(p, m, expected):
    profiles = inflight_profile("1f1b", p, 1, m)
    assert [prof.total for prof in profiles] == expected
    assert [vectors(prof) for prof in profiles] == [[(n,)] for n in expected]


def test_v11_interleaved_p4_vp2_m8():
    profiles = inflight_profile("interleaved", 4, 2, 8, vpp_group=4)
    assert [set(vectors(prof)) for prof in profiles] == [
        {(8, 3), (7, 4)},
        {(8, 1), (7, 2), (6, 3), (5, 4)},
        {(7, 0), (6, 1), (5, 2), (4, 3)},
        {(5, 0), (4, 1)},
    ]
    assert [prof.total for prof in profiles] == [11, 9, 7, 5]
    # Schedule order: the first backward (of the last chunk) comes first and is the peak (ties: earliest).
    assert vectors(profiles[1]) == [(5, 4), (6, 3), (7, 2), (8, 1)]
    assert [prof.peak for prof in profiles] == [ReplayPoint((7, 4), 1), ReplayPoint((5, 4), 1),
                                                ReplayPoint((4, 3), 1), ReplayPoint((4, 1), 1)]
    assert inflight_profile("interleaved", 4, 2, 8) == profiles  # vpp_group defaults to p


def test_v11_interleaved_m_equals_p():
    profiles = inflight_profile("interleaved", 4, 2, 4)
    assert [vectors(prof) for prof in profiles] == [[(4, 4)], [(4, 4)], [(4, 3)], [(4, 1)]]
    assert [prof.total for prof in profiles] == [8, 8, 7, 5]


def test_v11_gpt3_175b_stage0():
    stage0 = inflight_profile("interleaved", 8, 3, 64)[0]
    assert vectors(stage0) == [(15, 8, 8)] + [(16, 8 + k, 7 - k) for k in range(8)]
    assert len(stage0.points) == 9 and {pt.total for pt in stage0.points} == {31}
    assert stage0.peak.counts == (15, 8, 8)
    assert sum(stage0.peak.counts) * 4 == 124  # V3: 4 layers per chunk, 96·31/24 layer-micro-batches


def test_v11_gpipe():
    assert [vectors(prof) for prof in inflight_profile("gpipe", 4, 1, 8)] == [[(8,)]] * 4


def test_v11_zbv():
    profiles = inflight_profile("zbv", 4, 2, 8)
    # the closed form (first point, before a chunk-1 backward) and the equal-total point before chunk 0
    assert [vectors(prof) for prof in profiles] == [[(7 - i, 1 + i), (8 - i, i)] for i in range(4)]
    assert all(prof.peak.backward_chunk == 1 for prof in profiles)
    assert [prof.peak.counts for prof in profiles] == [(7, 1), (6, 2), (5, 3), (4, 4)]


def test_v11_dualpipev():
    profiles = inflight_profile("dualpipev", 4, 2, 8)
    assert [vectors(prof) for prof in profiles] == [[(8, 1)], [(7, 2)], [(6, 3)], [(5, 4)]]
    assert [prof.total for prof in profiles] == [9, 9, 9, 9]


def test_v11_seq1f1b():
    assert [prof.total for prof in inflight_profile("seq1f1b", 4, 1, 8, n_s=4)] == [7, 6, 5, 4]


def test_v11_deepseek_v3_1f1b():
    assert [prof.total for prof in inflight_profile("1f1b", 16, 1, 32)] == [16 - i for i in range(16)]


# ------------------------------------------------------------------------------------- property grid

def _configs():
    """Small valid (schedule, p, vp, m, kwargs) combinations of every schedule."""
    for p, m in product(range(1, 6), range(1, 11)):
        yield "1f1b", p, 1, m, {}
        yield "gpipe", p, 1, m, {}
        yield "zbv", p, 2, m, {}
        if m >= 2 * p:
            yield "dualpipev", p, 2, m, {}
        for n_s in (2, 3):
            yield "seq1f1b", p, 1, m, {"n_s": n_s}
        for vp, group, n_s, overlap in product((2, 3), range(p, m + 1), (1, 2), (False, True)):
            if p >= 2 and not 0 < m % group < p:
                name = "interleaved" if n_s == 1 else "seqsmartvpp"
                yield name, p, vp, m, {"vpp_group": group, "n_s": n_s, "overlap_moe_ep_comm": overlap}


CONFIGS = list(_configs())
REPLAYED = [c for c in CONFIGS if c[0] not in ("zbv", "dualpipev")]


def _units(schedule, p, vp, m, n_s):
    return {(mb, c, s) for mb in range(m) for c in range(vp) for s in range(n_s)}


@pytest.mark.parametrize(("schedule", "p", "vp", "m", "kw"), CONFIGS)
def test_every_op_exactly_once_and_counts_stay_in_range(schedule, p, vp, m, kw):
    n_s = kw.get("n_s", 1)
    for i in range(p):
        ops = stage_order(schedule, p, vp, m, i, **kw)
        seen = Counter((op.kind, op.microbatch, op.chunk, op.slice) for op in ops)
        assert max(seen.values()) == 1
        units = _units(schedule, p, vp, m, n_s)
        assert {k[1:] for k in seen if k[0] == "F"} == units
        assert {k[1:] for k in seen if k[0] == "B"} == units
        split = {k[1:] for k in seen if k[0] == "W"}
        assert split <= units
        if schedule == "zbv":
            assert split == units  # every ZB-V backward is split
        elif schedule != "dualpipev":
            assert not split
        counts, done = [0] * vp, set()
        for op in ops:
            key = (op.microbatch, op.chunk, op.slice)
            if op.kind == "F":
                counts[op.chunk] += 1
            elif op.kind == "B":
                assert ("F", key) in done  # a backward follows its own forward on this stage
                counts[op.chunk] -= 1
            else:
                assert ("B", key) in done
            assert 0 <= counts[op.chunk] <= m * n_s
            done.add((op.kind, key))
        assert counts == [0] * vp


@pytest.mark.parametrize(("schedule", "p", "vp", "m", "kw"), CONFIGS)
def test_orders_are_executable_across_stages(schedule, p, vp, m, kw):
    """Run all stages in their issue order with asynchronous sends: no stage may wait forever. A forward
    needs the previous model slot's forward (and the earlier slice), a backward its own forward, the next
    slot's backward (and the later slice), a W its B."""
    n_s, n_slots = kw.get("n_s", 1), p * vp
    orders = [stage_order(schedule, p, vp, m, i, **kw) for i in range(p)]
    done: set[tuple[str, int, int, int]] = set()

    def deps(op: Op, q: int) -> list[tuple[str, int, int, int]]:
        mb, s = op.microbatch, op.slice
        if op.kind == "F":
            return [("F", mb, q - 1, s)] * (q > 0) + [("F", mb, q, s - 1)] * (s > 0)
        if op.kind == "B":
            return ([("F", mb, q, s)] + [("B", mb, q + 1, s)] * (q < n_slots - 1)
                    + [("B", mb, q, s + 1)] * (s < n_s - 1))
        return [("B", mb, q, s)]

    pos, progress = [0] * p, True
    while progress:
        progress = False
        for i in range(p):
            while pos[i] < len(orders[i]):
                op = orders[i][pos[i]]
                q = chunk_slot(schedule, p, vp, i, op.chunk)
                if not all(d in done for d in deps(op, q)):
                    break
                done.add((op.kind, op.microbatch, q, op.slice))
                pos[i] += 1
                progress = True
    assert pos == [len(order) for order in orders]


@pytest.mark.parametrize(("schedule", "p", "vp", "m", "kw"), REPLAYED)
def test_replay_matches_closed_form(schedule, p, vp, m, kw):
    closed = closed_form_counts(schedule, p, vp, m, **kw)
    profiles = inflight_profile(schedule, p, vp, m, **kw)
    assert [prof.total for prof in profiles] == [sum(vec) for vec in closed]
    # The first replay point (first backward, of the last chunk) is the closed-form vector and the peak.
    assert [prof.points[0].counts for prof in profiles] == list(closed)
    assert [prof.peak for prof in profiles] == [ReplayPoint(vec, vp - 1) for vec in closed]


@pytest.mark.parametrize(("schedule", "p", "vp", "m", "kw"), CONFIGS)
def test_points_are_distinct_and_non_dominated(schedule, p, vp, m, kw):
    for prof in replay_profile(schedule, p, vp, m, **kw):
        vecs = vectors(prof)
        assert len(set(vecs)) == len(vecs)
        for a, b in product(vecs, vecs):
            assert a == b or not all(x >= y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(("p", "m"), list(product(range(1, 9), range(1, 17))))
def test_1f1b_stage0_holds_min_p_m(p, m):
    profiles = inflight_profile("1f1b", p, 1, m)
    assert profiles[0].total == min(p, m)
    assert [prof.total for prof in profiles] == [min(p - i, m) for i in range(p)]


def test_interleaved_overlap_adds_one_warmup_forward():
    plain = [prof.total for prof in inflight_profile("interleaved", 4, 2, 8)]
    overlap = [prof.total for prof in inflight_profile("interleaved", 4, 2, 8, overlap_moe_ep_comm=True)]
    assert overlap == [12, 10, 8, 6] and [a - b for a, b in zip(overlap, plain, strict=True)] == [1] * 4
    assert inflight_profile("interleaved", 4, 2, 4, overlap_moe_ep_comm=True)[0].total == 8  # capped at vp·m


def test_interleaved_shorter_last_group():
    # p 2, vp 2, m 5, group 3: table (0..2 chunk 0), (0..2 chunk 1), (3, 4 chunk 0), (3, 4 chunk 1).
    ops = stage_order("interleaved", 2, 2, 5, 0, vpp_group=3)
    assert [(op.microbatch, op.chunk) for op in ops if op.kind == "F"] == [
        (0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (3, 0), (4, 0), (3, 1), (4, 1)]
    assert [(op.microbatch, op.chunk) for op in ops if op.kind == "B"] == [
        (0, 1), (1, 1), (2, 1), (0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (3, 0), (4, 0)]
    assert [prof.total for prof in inflight_profile("interleaved", 2, 2, 5, vpp_group=3)] == [6, 4]


def test_seq1f1b_order():
    ops = stage_order("seq1f1b", 2, 1, 2, 0, n_s=2)
    # warm-up p - i - 2 + n_s = 2 forward slices, then F/B alternately; backward slices last-first.
    assert [(op.kind, op.microbatch, op.slice) for op in ops] == [
        ("F", 0, 0), ("F", 0, 1), ("F", 1, 0), ("B", 0, 1),
        ("F", 1, 1), ("B", 0, 0), ("B", 1, 1), ("B", 1, 0)]


def test_seqsmartvpp_counts_slices():
    profiles = inflight_profile("seqsmartvpp", 4, 2, 8, n_s=2)
    # 2·(p-1-i) + ((vp-1)·group + 1)·n_s slices: 16, 14, 12, 10; first point from the first group.
    assert [prof.total for prof in profiles] == [16, 14, 12, 10]
    assert [prof.peak.counts for prof in profiles] == [(8, 8), (8, 6), (8, 4), (8, 2)]


# --------------------------------------------------------------------------- V schedules: replay vs closed

@pytest.mark.parametrize(("p", "m"), list(product(range(1, 7), range(1, 20))))
def test_zbv_replay_vs_closed_form(p, m):
    """The replay's first point (before the first chunk-1 backward) is (min(m, 2p-1-i), min(m, i+1)) and is
    maximal. The module's closed form uses 2p - 1 - i for chunk 0; the spec's 2·B_pm - 1 - i understates it
    (down to negative values) when m < p on stages i >= m, where the V order forwards every chunk-0
    micro-batch before any chunk-0 backward."""
    closed = closed_form_counts("zbv", p, 2, m)
    for i, prof in enumerate(replay_profile("zbv", p, 2, m)):
        replayed = (min(m, 2 * p - 1 - i), min(m, i + 1))
        assert prof.points[0] == ReplayPoint(replayed, 1)
        assert prof.total == sum(replayed)
        # the spec's 2·B_pm − 1 − i would give 2m − 1 − i here; the module uses 2p − 1 − i (D-ZBV-UNDERFILL)
        assert closed[i] == replayed


def test_zbv_replay_second_maximum_before_chunk0_backward():
    """In steady state the chunk-0 backward follows one more chunk-0 forward: (2p - i, i), same total."""
    profiles = replay_profile("zbv", 4, 2, 8)
    assert [vectors(prof) for prof in profiles] == [[(7 - i, 1 + i), (8 - i, i)] for i in range(4)]
    assert [[pt.backward_chunk for pt in prof.points] for prof in profiles] == [[1, 0]] * 4


@pytest.mark.parametrize(("p", "m"), [(p, m) for p in range(1, 7) for m in range(2 * p, 2 * p + 12)])
def test_dualpipev_replay_equals_closed_form(p, m):
    closed = closed_form_counts("dualpipev", p, 2, m)
    assert [vectors(prof) for prof in replay_profile("dualpipev", p, 2, m)] == [[vec] for vec in closed]
    assert closed == tuple((2 * p - i, i + 1) for i in range(p))


@pytest.mark.parametrize(("schedule", "p", "m"),
                         [("zbv", p, m) for p in range(1, 6) for m in range(1, 13)]
                         + [("dualpipev", p, m) for p in range(1, 6) for m in range(2 * p, 2 * p + 6)])
def test_freeing_at_w_does_not_move_the_maxima(schedule, p, m):
    at_b = replay_profile(schedule, p, 2, m)
    at_w = replay_profile(schedule, p, 2, m, free_at="W")
    assert [prof.total for prof in at_w] == [prof.total for prof in at_b]


def test_dualpipev_order_stage_last():
    ops = stage_order("dualpipev", 2, 2, 4, 1)
    assert [(op.kind, op.microbatch, op.chunk) for op in ops] == [
        ("F", 0, 0), ("F", 0, 1), ("F", 1, 0), ("F", 1, 1),            # steps 1-2
        ("F", 2, 0), ("B", 0, 1), ("F", 2, 1), ("B", 0, 0),            # step 4 (2 rounds)
        ("F", 3, 0), ("B", 1, 1), ("F", 3, 1), ("B", 1, 0),
        ("B", 2, 1), ("B", 2, 0), ("B", 3, 1), ("B", 3, 0), ("W", 3, 1), ("W", 3, 0)]  # steps 6, 8


# ------------------------------------------------------------------------------------- variants, API

def test_upstream_variants():
    big = inflight_profile("interleaved", 4, 2, 8, variant="upstream_big")
    less = inflight_profile("interleaved", 4, 2, 8, variant="upstream_less")
    assert [vectors(prof) for prof in big] == [[(6, 4)], [(5, 4)], [(4, 3)], [(4, 1)]]
    assert [vectors(prof) for prof in less] == [[(4, 4)], [(4, 3)], [(4, 2)], [(4, 1)]]
    assert [vectors(prof) for prof in inflight_profile("interleaved", 4, 3, 8, variant="upstream_less")] == [
        [(4, 4, 4)], [(4, 4, 3)], [(4, 4, 2)], [(4, 4, 1)]]
    assert big[0].peak.backward_chunk == 1
    # Only the interleaved profile changes.
    assert inflight_profile("1f1b", 4, 1, 8, variant="upstream_big") == inflight_profile("1f1b", 4, 1, 8)


def test_profile_is_cached():
    assert inflight_profile("interleaved", 8, 3, 64) is inflight_profile("interleaved", 8, 3, 64)


def test_peak_ties_go_to_earliest():
    prof = StageProfile((ReplayPoint((1, 2), 1), ReplayPoint((3, 0), 0), ReplayPoint((2, 1), 1)))
    assert prof.total == 3 and prof.peak == ReplayPoint((1, 2), 1)


def test_chunk_slot():
    assert [chunk_slot("interleaved", 4, 2, i, j) for j in range(2) for i in range(4)] == list(range(8))
    assert [chunk_slot("zbv", 4, 2, i, 0) for i in range(4)] == [0, 1, 2, 3]
    assert [chunk_slot("dualpipev", 4, 2, i, 1) for i in range(4)] == [7, 6, 5, 4]
    with pytest.raises(ValueError, match="out of range"):
        chunk_slot("1f1b", 4, 1, 4, 0)


@pytest.mark.parametrize(("args", "kw", "message"), [
    (("1f1b", 0, 1, 4), {}, "PP"),
    (("1f1b", 4, 1, 0), {}, "micro-batches"),
    (("1f1b", 4, 0, 4), {}, "VPP"),
    (("pipedream", 4, 1, 4), {}, "unknown pipeline schedule"),
    (("1f1b", 4, 2, 4), {}, "one chunk per stage"),
    (("gpipe", 4, 1, 4), {"n_s": 2}, "n_s"),
    (("zbv", 4, 3, 8), {}, "exactly 2 chunks"),
    (("dualpipev", 4, 1, 8), {}, "exactly 2 chunks"),
    (("dualpipev", 4, 2, 7), {}, "at least 2×PP = 8"),
    (("interleaved", 4, 1, 8), {}, "VPP ≥ 2"),
    (("interleaved", 1, 2, 8), {}, "PP ≥ 2"),
    (("interleaved", 4, 2, 8), {"vpp_group": 3}, "group 3"),
    (("interleaved", 4, 2, 8), {"vpp_group": 9}, "group 9"),
    (("interleaved", 4, 2, 8), {"vpp_group": 0}, "group 0"),
    (("interleaved", 4, 2, 6), {}, "last group of 0 or ≥ PP 4 micro-batches; 6 .* groups of 4 leave 2"),
    (("interleaved", 4, 2, 3), {}, "micro-batches 3"),
    (("seqsmartvpp", 4, 2, 10), {"vpp_group": 4, "n_s": 2}, "last group"),
    (("interleaved", 4, 2, 8), {"variant": "upstream"}, "variant"),
])
def test_invalid_arguments(args, kw, message):
    with pytest.raises(ValueError, match=message):
        inflight_profile(*args, **kw)


def test_stage_out_of_range_and_closed_form_validation():
    with pytest.raises(ValueError, match="free_at"):
        replay_profile("zbv", 4, 2, 8, free_at="F")
    with pytest.raises(ValueError, match="stage 4"):
        stage_order("1f1b", 4, 1, 8, 4)
    with pytest.raises(ValueError, match="DualPipeV"):
        closed_form_counts("dualpipev", 4, 2, 4)


def test_interleaved_accepts_long_last_group():
    # m 10, group 4, p 2: last group of 2 ≥ p is allowed (Megatron), so is m % group = 0.
    assert len(inflight_profile("interleaved", 2, 2, 10, vpp_group=4)) == 2
    assert set(SCHEDULES) == {"1f1b", "interleaved", "gpipe", "seq1f1b", "seqsmartvpp", "zbv", "dualpipev",
                              "looped_bfs", "interleaved_zb"}


# ------------------------------------------------------------------------------ fast replay = op replay
@pytest.mark.parametrize(("schedule", "p", "vp", "m", "kwargs"), [
    *[("1f1b", p, 1, m, {}) for p in (1, 2, 4, 7) for m in (1, 3, 8, 13)],
    *[("gpipe", p, 1, m, {}) for p in (2, 4) for m in (2, 9)],
    *[("seq1f1b", p, 1, m, {"n_s": n}) for p in (2, 4) for m in (2, 5) for n in (1, 3)],
    *[("interleaved", p, vp, m, {"vpp_group": g, "overlap_moe_ep_comm": o})
      for p, vp, m, g in ((2, 2, 4, 2), (4, 2, 8, 4), (4, 3, 12, 4), (4, 2, 14, 5), (3, 4, 10, 5), (8, 3, 64, 8))
      for o in (False, True)],
    *[("seqsmartvpp", 4, 2, 8, {"n_s": 2}), ("seqsmartvpp", 3, 3, 6, {"n_s": 3})],
])
def test_fast_replay_equals_op_replay(schedule, p, vp, m, kwargs):
    from estimator.schedules import _fast_points, _replay, _validate

    group = _validate(schedule, p, vp, m, kwargs.get("vpp_group"), kwargs.get("n_s", 1), "megatron")
    for i in range(p):
        ops = stage_order(schedule, p, vp, m, i, **kwargs)
        assert _fast_points(schedule, p, vp, m, i, group, kwargs.get("n_s", 1),
                            kwargs.get("overlap_moe_ep_comm", False)) == _replay(ops, vp)
