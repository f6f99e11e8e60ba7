"""Vectorised pricing: many candidates that share a layout (p, vp, m, schedule, recompute) priced at once by
the very same stage code, with the degrees as numpy arrays (docs/model.md#stage-assembly). The search builds on this."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .assembly import Point, price_stage
from .layout import Layout
from .masked_points import MaskBlock, MaskedPoints, mask_blocks, profile_arrays
from .resolve import Par, Resolved
from .result import CATEGORIES
from .schedules import inflight_profile
from .stage import StagePricer

GROUP_FIELDS = ("p", "vp", "n_acc", "n_s", "s")  # equal within a group (layout, schedule); m may vary


def stack_par(pars: Sequence[Par]) -> Par:
    """One Par whose fields are arrays over the candidates (group fields stay scalars)."""
    values = {}
    for field in dataclasses.fields(Par):
        column = [getattr(p, field.name) for p in pars]
        if field.name in GROUP_FIELDS:
            if len(set(column)) != 1:
                raise ValueError(f"candidates of one group must share {field.name}; got {sorted(set(column))}")
            values[field.name] = column[0]
        else:
            values[field.name] = np.asarray(column, dtype=np.float64)
    return Par(**values)


def price_group(r: Resolved, layout: Layout, vpp_group: int | None = None, overlap_moe_ep_comm: bool = False,
                return_pricer: bool = False):
    """Per stage and category, arrays over the candidates in ``r.par``: ``{"total": [p, C], category: [p, C],
    "optimizer_step_peak": [p, C], "host": [p, C]}`` (and the StagePricer, for step times, with ``return_pricer``)."""
    par = r.par
    m = np.asarray(par.m)
    # the distinct micro-batch counts; asking for their counts keeps numpy from importing numpy.ma to look for
    # a mask (~8 ms of a cold process)
    profiles = {int(value): inflight_profile(r.flags.schedule, int(par.p), int(par.vp), int(value),
                                             vpp_group=vpp_group, n_s=int(par.n_s),
                                             overlap_moe_ep_comm=overlap_moe_ep_comm, variant=r.options.vpp_variant)
                for value in np.unique(m, return_counts=True)[0]}
    masks = {value: m == value for value in profiles}  # one shared mask object per micro-batch count
    index = mask_blocks(masks)
    pricer = StagePricer(r, layout)
    size = np.broadcast_shapes(*[np.shape(getattr(par, f.name)) for f in dataclasses.fields(Par)])
    # every row of every array is written below: not zeroed first
    out = {key: np.empty((int(par.p), *size)) for key in (*CATEGORIES, "total", "optimizer_step_peak", "host")}
    for i in range(int(par.p)):
        points = MaskedPoints(tuple(MaskBlock(masks[value], index[value], prof[i], profile_arrays(prof[i]))
                                    for value, prof in profiles.items()), size, Point)
        stage = price_stage(pricer, i, points, explain=False)
        for key in CATEGORIES:
            out[key][i] = stage.bytes_by_category[key]
        out["total"][i] = stage.total
        out["optimizer_step_peak"][i] = stage.optimizer_step_peak
        out["host"][i] = sum(stage.host_bytes.values(), start=0.0)  # [H-DEVICE] host memory of one device
    return (out, pricer) if return_pricer else out


def with_par(r: Resolved, par: Par) -> Resolved:
    return dataclasses.replace(r, par=par)
