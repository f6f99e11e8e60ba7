"""The search's replay points per micro-batch mask (estimator/masked_points.py): they read like the list of points
they stand for, and the peak point and FSDP2's other micro-batches' activations computed from their arrays are
the generic code's to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from estimator import fsdp
from estimator.assembly import Point
from estimator.assembly.memory import peak_point
from estimator.masked_points import MaskBlock, MaskedPoints, mask_blocks, profile_arrays
from estimator.schedules import inflight_profile


def _points(schedule: str, p: int, vp: int, counts: list[int], n: int, stage: int,
            shuffle: bool) -> tuple[MaskedPoints, list[Point]]:
    """A stage's points over ``n`` candidates whose micro-batch counts cycle through ``counts`` (contiguous runs,
    as the search orders them, or shuffled: the masks' indices are then arrays)."""
    m = np.repeat(np.asarray(counts, dtype=np.float64), -(-n // len(counts)))[:n]
    if shuffle:
        m = np.random.default_rng(7).permutation(m)
    profiles = {c: inflight_profile(schedule, p, vp, c) for c in counts}
    masks = {c: m == c for c in counts}
    index = mask_blocks(masks)
    masked = MaskedPoints(tuple(MaskBlock(masks[c], index[c], prof[stage], profile_arrays(prof[stage]))
                                for c, prof in profiles.items()), (n,), Point)
    plain = [Point(pt.counts, pt.backward_chunk, masks[c]) for c, prof in profiles.items()
             for pt in prof[stage].points]
    return masked, plain


@pytest.mark.parametrize("shuffle", [False, True])
def test_masked_points_read_like_the_list_of_points(shuffle: bool) -> None:
    masked, plain = _points("interleaved", 4, 2, [8, 12, 16], 30, 1, shuffle)
    assert len(masked) == len(plain) > 3
    assert all(a.counts == b.counts and a.backward_chunk == b.backward_chunk and a.valid is b.valid
               for a, b in zip(masked, plain, strict=True))
    assert masked[-1] == plain[-1] and masked[1:3] == plain[1:3]
    assert masked.backward_chunks == sorted({pt.backward_chunk for pt in plain})
    with pytest.raises(IndexError):
        masked[len(plain)]
    assert isinstance(masked.blocks[0].index, np.ndarray if shuffle else slice)


@pytest.mark.parametrize("schedule,p,vp", [("interleaved", 4, 2), ("interleaved", 4, 3), ("1f1b", 4, 1)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_masked_paths_give_the_generic_bytes(schedule: str, p: int, vp: int, shuffle: bool) -> None:
    rng = np.random.default_rng(11)
    n = 40
    for stage in range(p):
        masked, plain = _points(schedule, p, vp, [8, 12, 16], n, stage, shuffle)
        # activations and walk needs in bytes with fractions (not exact in any summation order)
        act = [rng.random(n) * 3.7e9 / 7 for _ in range(vp)]
        work = [rng.random(n) * 1.3e9 / 3 for _ in range(vp)]
        chunks = sorted({pt.backward_chunk for pt in plain})
        ours = fsdp._other_activations(masked, act, chunks, {})
        theirs = fsdp._other_activations(plain, act, chunks, {})
        assert ours.keys() == theirs.keys()
        for j in chunks:
            assert np.array_equal(ours[j][0], theirs[j][0])
        counts, working, point = peak_point(masked, act, work, {})
        counts_g, working_g, point_g = peak_point(plain, act, work, {})
        assert point == point_g == -1
        assert np.array_equal(working, working_g)
        assert all(np.array_equal(a, b) for a, b in zip(counts, counts_g, strict=True))
