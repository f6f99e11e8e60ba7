"""Pipeline formulas of the step-time model (docs/model.md#pipeline): one flush of the pipeline from the stages'
times per micro-batch (per slice for sliced schedules) [T-PIPE]. Values may be numbers or numpy arrays (the
search's candidates); the number of stages may not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .arr import Num, is_array, maximum, where


def largest(values: Sequence[Num]) -> Num:
    """The largest of the stages' values (elementwise for arrays; for numbers ``maximum``'s comparison, so a NaN
    or a tie keeps what ``maximum`` would)."""
    out = values[0]
    if not is_array(*values):  # numbers: ``maximum``'s comparison, inline
        for v in values:
            if not out >= v:
                out = v
        return out
    for v in values[1:]:
        out = maximum(out, v)
    return out


def pipe_1f1b(S: Sequence[Num], m: Num) -> Num:
    """[T-PIPE.1f1b] Σ_i S_i + (m − 1)·S_max (p = 1: m·S_0)."""
    return sum(S) + (m - 1) * largest(S)


def pipe_interleaved(S: Sequence[Num], m: Num, vp: Num) -> Num:
    """[T-PIPE.interleaved] Σ_i S_i/vp + (m·vp − 1)·S_max/vp."""
    return sum(S) / vp + (m * vp - 1) * largest(S) / vp


def pipe_gpipe(F: Sequence[Num], Bk: Sequence[Num], m: Num) -> Num:
    """[T-PIPE.gpipe] Σ_i F_i + (m − 1)·max F + Σ_i Bk_i + (m − 1)·max Bk."""
    return sum(F) + (m - 1) * largest(F) + sum(Bk) + (m - 1) * largest(Bk)


def pipe_looped_bfs(F: Sequence[Num], Bk: Sequence[Num], m: Num, vp: Num) -> Num:
    """[T-PIPE.looped_bfs] PyTorch's looped BFS runs every micro-batch through each local chunk before the next,
    backwards in reverse — GPipe in chunk units: (Σ_i F_i + (m·vp − 1)·max F + Σ_i Bk_i + (m·vp − 1)·max Bk)/vp."""
    return (sum(F) + (m * vp - 1) * largest(F) + sum(Bk) + (m * vp - 1) * largest(Bk)) / vp


def pipe_seq1f1b(S_slice: Sequence[Num], m: Num, n_s: Num) -> Num:
    """[T-PIPE.seq1f1b] Σ_i S_i/n_s + (m·n_s − 1)·S_max/n_s with S_i per micro-batch, i.e. per-slice values
    s_i = S_i/n_s: Σ_i s_i + (m·n_s − 1)·s_max."""
    return sum(S_slice) + (m * n_s - 1) * largest(S_slice)


def pipe_zbv(S_max: Num, m: Num, p: Num, Fc: Num, Bc: Num, Wc: Num) -> Num:
    """[T-PIPE.zbv] m·S_max + (p − 1)·max(0, F^c + B^c − 2·W^c) (ZB-H2 class)."""
    return m * S_max + (p - 1) * maximum(0.0, Fc + Bc - 2 * Wc)


def pipe_dualpipev(S_max: Num, m: Num, p: Num, Fc: Num, Bc: Num, Wc: Num) -> Num:
    """[T-PIPE.dualpipev] m·S_max + (p − 1)·max(0, FB^c + Bf^c − 3·W^c), Bf^c = B^c + W^c, FB^c = F^c + Bf^c (the
    overlapped pair; EP comm hidden through o_ep) — the DualPipe table with PP = 2p stages (D38)."""
    Bf = Bc + Wc
    FB = Fc + Bf
    return m * S_max + (p - 1) * maximum(0.0, FB + Bf - 3 * Wc)


def first_largest(S: Sequence[Num]) -> int:
    """The first stage with the largest S (numbers)."""
    first = 0
    for i in range(1, len(S)):
        if S[i] > S[first]:
            first = i
    return first


def at_largest(S: Sequence[Num], values: Sequence[Num]) -> Num:
    """values[argmax S] (ties to the earliest stage), elementwise for arrays."""
    if not is_array(*S, *values):  # one plan: the first largest stage's value
        return values[first_largest(S)]
    best, out = S[0], values[0]
    for s, v in zip(S[1:], values[1:], strict=True):
        take = s > best
        best = where(take, s, best)
        out = where(take, v, out)
    return out


def pipeline_time(schedule: str, stages: Sequence[Any], m: Num, vp: Num, n_s: Num,
                  S: Sequence[Num] | None = None) -> Num:
    """[T-PIPE] One flush of the pipeline (``steptime.StageTimes``: values per micro-batch, per slice for sliced
    schedules); ``S``: the stages' S when the caller has them."""
    S = [st.S for st in stages] if S is None else S
    p = len(stages)
    if schedule == "1f1b":
        return pipe_1f1b(S, m)
    if schedule == "interleaved":
        return pipe_interleaved(S, m, vp)
    if schedule == "seqsmartvpp":
        return pipe_interleaved(S, m * n_s, vp)
    if schedule == "gpipe":
        return pipe_gpipe([st.F for st in stages], [st.Bk for st in stages], m)
    if schedule == "looped_bfs":
        return pipe_looped_bfs([st.F for st in stages], [st.Bk for st in stages], m, vp)
    if schedule == "seq1f1b":
        return pipe_seq1f1b(S, m, n_s)
    S_max = largest(S)
    # chunk values of the slowest stage: the chunk with the largest F^c + B^c − 2·W^c (resp. the DualPipeV term)
    best: Num = None
    for j in range(len(stages[0].chunk_F)):
        Fc = at_largest(S, [st.chunk_F[j] for st in stages])
        Bc = at_largest(S, [st.chunk_B[j] + (st.chunk_Rc[j] if st.chunk_Rc else 0.0) for st in stages])
        Wc = at_largest(S, [st.chunk_W[j] for st in stages])
        # ZB-V and interleaved ZB1P share the zero-bubble form (the W passes fill the bubble)
        value = pipe_dualpipev(S_max, m, p, Fc, Bc, Wc) if schedule == "dualpipev" else pipe_zbv(S_max, m, p, Fc, Bc,
                                                                                                   Wc)
        best = value if best is None else maximum(best, value)
    return best


__all__ = ["at_largest", "first_largest", "largest", "pipe_1f1b", "pipe_dualpipev", "pipe_gpipe", "pipe_interleaved",
           "pipe_looped_bfs", "pipe_seq1f1b", "pipe_zbv", "pipeline_time"]
