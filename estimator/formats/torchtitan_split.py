"""A torchtitan TOML's explicit pipeline split (D-TT-SPLIT): ``pipeline_parallel_split_points`` (the modules that
begin stages 1…S−1, e.g. ``layers.4``) or ``module_fqns_per_model_part`` (every stage's module names), read as the
layers of every model-order stage and stated as the plan's partition — the embedding and the output counted as
positions of the first and last stage, as torchtitan places them. Stage s runs on the rank the schedule gives it
(looped schedules: s mod pp; V schedules down the ranks and back up), which the layout's slots already follow."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from ..errors import ConfigError
from ..layout import slot_index
from ..messages import msg
from .support import Collector

LAYER = re.compile(r"^layers\.(\d+)$")
EMBEDDING, OUTPUT_MODULES = "tok_embeddings", ("norm", "output")


def stage_layer_counts(data: dict[str, Any], path: str, n_layers: int) -> tuple[list[int], str, Any] | None:
    """Decoder layers of every model-order stage, the key that stated them and its raw value; None when the file
    states no split."""
    fqns = (data.get("parallelism") or {}).get("module_fqns_per_model_part")
    if fqns:
        key = "parallelism.module_fqns_per_model_part"
        return _from_parts(fqns, path, key, n_layers), key, fqns
    for section in ("parallelism", "experimental"):
        points = (data.get(section) or {}).get("pipeline_parallel_split_points")
        if points:
            key = f"{section}.pipeline_parallel_split_points"
            return _from_points(points, path, key, n_layers), key, points
    return None


def _layer_of(name: Any, path: str, key: str, n_layers: int) -> int:
    found = LAYER.match(str(name).strip())
    if found is None or int(found.group(1)) >= n_layers:
        raise ConfigError(msg("torchtitan_split.not-a-layer", name=name, n_layers=n_layers), path=path, key=key)
    return int(found.group(1))


def _from_points(points: Any, path: str, key: str, n_layers: int) -> list[int]:
    names = points.split(",") if isinstance(points, str) else points
    if not isinstance(names, list):
        raise ConfigError(msg("torchtitan_split.points-list", value=points), path=path, key=key)
    bounds = [0, *(_layer_of(n, path, key, n_layers) for n in names), n_layers]
    if any(b <= a for a, b in pairwise(bounds[1:-1])):
        raise ConfigError(msg("torchtitan_split.points-ascending", value=points), path=path, key=key)
    return [b - a for a, b in pairwise(bounds)]


def _from_parts(parts: Any, path: str, key: str, n_layers: int) -> list[int]:
    if not isinstance(parts, list) or not all(isinstance(p, list) for p in parts):
        raise ConfigError(msg("torchtitan_split.parts-list", value=parts), path=path, key=key)
    order: list[int] = []
    counts = []
    for index, part in enumerate(parts):
        layers = [_layer_of(n, path, key, n_layers) for n in part if str(n).strip() not in
                  (EMBEDDING, *OUTPUT_MODULES)]
        misplaced = [n for n in part if (str(n).strip() == EMBEDDING and index != 0) or
                     (str(n).strip() in OUTPUT_MODULES and index != len(parts) - 1)]
        if misplaced:
            raise ConfigError(msg("torchtitan_split.parts-ends", names=", ".join(map(str, misplaced))), path=path,
                              key=key)
        order.extend(layers)
        counts.append(len(layers))
    if order != list(range(n_layers)):
        raise ConfigError(msg("torchtitan_split.parts-order", n_layers=n_layers), path=path, key=key)
    return counts


def read_split(c: Collector, data: dict[str, Any], n_layers: int | None, pp: int, vp: int | None,
               schedule: str) -> int | None:
    """State the file's pipeline split as ``strategy.partition`` (positions: the embedding and the output count one
    each) and return the stages per rank it implies; None when the file states no split."""
    if n_layers is None:
        return None
    found = stage_layer_counts(data, c.path, n_layers)
    if found is None:
        return None
    counts, key, raw = found
    stages = len(counts)
    if stages % pp or (vp is not None and stages != pp * vp):
        raise ConfigError(msg("torchtitan_split.stages", stages=stages, pp=pp,
                              vp=vp if vp is not None else "1, 2, …"), path=c.path, key=key)
    per_rank = stages // pp
    positions = list(counts)
    positions[0] += 1  # the embedding
    positions[-1] += 1  # the final norm and the output
    if per_rank == 1:
        partition: Any = tuple(positions)
    else:
        partition = tuple(tuple(positions[slot_index(schedule, pp, per_rank, i, j)] for i in range(pp))
                          for j in range(per_rank))
    c.put("strategy.partition", partition, key, raw)
    c.put("strategy.emb_out_in_offset", True, key, raw)
    return per_rank


__all__ = ["read_split", "stage_layer_counts"]
