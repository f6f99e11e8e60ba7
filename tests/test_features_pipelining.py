"""torch.distributed.pipelining as torchtitan runs it (issue 11 feature 7), against PyTorch's schedule code restated
here in a few lines:

* ``ScheduleLoopedBFS._calculate_single_rank_operations``: forwards of every micro-batch for local stage 0, then
  stage 1, …; backwards for the local stages in reverse, micro-batches in reverse;
* ``ScheduleInterleaved1F1B`` / ``ScheduleInterleavedZeroBubble``: ``number_of_rounds = max(1, m // pp)``,
  ``microbatches_per_round = m // rounds``, warm-up ``(n_local − 1)·per_round + k·(pp − 1 − rank)`` with k = 2
  (1F1B) or 1 (ZB1P), then one forward and one (input-)backward per step;
* torchtitan's 2024-12 ``experimental.pipeline_parallel_microbatches`` defaults to the pipeline degree.
"""

from __future__ import annotations

import pytest

from estimator.formats import parse
from estimator.schedules import _fast_points, _replay, _validate, closed_form_counts, inflight_profile, stage_order


def pytorch_counts(schedule: str, p: int, vp: int, m: int, rank: int) -> tuple[int, ...]:
    """Per local stage, micro-batches forwarded and not yet back-propagated just before the rank's first
    backward, from PyTorch's issue order."""
    if schedule == "looped_bfs":
        return (m,) * vp
    rounds = max(1, m // p)
    per_round = m // rounds
    k = 1 if schedule == "interleaved_zb" else 2
    warmup = min((vp - 1) * per_round + k * (p - 1 - rank), m * vp)
    # forward_stage_index(step) = (step // per_round) % vp; the first backward follows warmup + 1 forwards
    counts = [0] * vp
    for step in range(min(warmup + 1, m * vp)):
        counts[(step // per_round) % vp] += 1
    return tuple(counts)


@pytest.mark.parametrize(("schedule", "p", "vp", "m"), [
    ("looped_bfs", 4, 2, 8), ("looped_bfs", 3, 3, 5), ("looped_bfs", 2, 1, 4),
    ("interleaved_zb", 4, 2, 8), ("interleaved_zb", 4, 3, 12), ("interleaved_zb", 2, 2, 6),
    ("interleaved", 4, 2, 10),  # PyTorch: rounds 2 of 5 micro-batches (Megatron would need m % p = 0)
])
def test_first_backward_matches_pytorch(schedule, p, vp, m):
    group = m // max(1, m // p)
    for rank in range(p):
        ops = stage_order(schedule, p, vp, m, rank, vpp_group=group)
        counts = [0] * vp
        for op in ops:
            if op.kind == "B":
                break
            counts[op.chunk] += 1
        assert tuple(counts) == pytorch_counts(schedule, p, vp, m, rank), rank
    closed = closed_form_counts(schedule, p, vp, m, vpp_group=group)
    assert closed == tuple(pytorch_counts(schedule, p, vp, m, r) for r in range(p))


@pytest.mark.parametrize(("schedule", "p", "vp", "m"), [("looped_bfs", 4, 2, 8), ("looped_bfs", 3, 3, 7),
                                                        ("interleaved_zb", 4, 2, 8), ("interleaved_zb", 3, 3, 9)])
def test_fast_replay_equals_op_replay(schedule, p, vp, m):
    group = _validate(schedule, p, vp, m, None, 1, "megatron")
    for i in range(p):
        assert _fast_points(schedule, p, vp, m, i, group, 1, False) == _replay(stage_order(schedule, p, vp, m, i), vp)


def test_zero_bubble_holds_fewer_micro_batches_than_interleaved():
    zb = inflight_profile("interleaved_zb", 4, 2, 8)
    one = inflight_profile("interleaved", 4, 2, 8)
    assert [s.total for s in zb] == [8, 7, 6, 5] and [s.total for s in one] == [11, 9, 7, 5]
    assert [s.total for s in inflight_profile("looped_bfs", 4, 2, 8)] == [16] * 4


def _toml(tmp_path, body: str) -> str:
    path = tmp_path / "job.toml"
    path.write_text('[model]\nname = "llama3"\nflavor = "8B"\n' + body)
    return str(path)


def test_old_toml_micro_batches_default_to_the_pipeline_degree(tmp_path):
    path = _toml(tmp_path, "[training]\nbatch_size = 8\nseq_len = 4096\ndata_parallel_shard_degree = -1\n"
                           "[experimental]\npipeline_parallel_degree = 4\n")
    parsed = parse([path], devices=8)
    st = parsed.strategy
    assert (st.pp, st.micro_batches, st.micro_batch_size) == (4, 4, 2)
    assert any(a.field == "strategy.micro_batches" and "pipeline_parallel_degree" in a.source
               for a in parsed.assumptions)


def test_new_toml_keeps_the_micro_batch_size_default(tmp_path):
    path = _toml(tmp_path, "[training]\nlocal_batch_size = 8\nseq_len = 4096\n[parallelism]\n"
                           "data_parallel_shard_degree = -1\npipeline_parallel_degree = 4\n")
    st = parse([path], devices=8).strategy
    assert (st.micro_batches, st.micro_batch_size) == (8, 1)


def test_pytorch_interleaved_rounds_become_the_vpp_group(tmp_path):
    path = _toml(tmp_path, "[training]\nlocal_batch_size = 10\nseq_len = 4096\n[parallelism]\n"
                           "data_parallel_shard_degree = -1\npipeline_parallel_degree = 4\n"
                           'pipeline_parallel_schedule = "InterleavedZeroBubble"\n')
    st = parse([path], devices=8).strategy
    assert (st.schedule, st.vpp, st.micro_batches, st.vpp_group) == ("interleaved_zb", 2, 10, 5)
