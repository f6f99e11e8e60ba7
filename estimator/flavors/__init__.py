"""Model flavors: the named model shapes frameworks refer to (torchtitan ``[model] name`` + ``flavor``).

One YAML file per model family (``llama3.yaml``, ``deepseek_v3.yaml`` …) holds the shapes as data, written
with the canonical ``model.*`` field names of docs/model.md#inputs-and-outputs, plus two torchtitan sizing fields that
the loader resolves: ``ffn_dim_multiplier`` / ``multiple_of`` (the llama FeedForward rule) when ``ffn_hidden_size`` is
not given, and ``moe_ffn_hidden_size: auto`` (llama4's ``auto_scale_hidden_dim``). Each file has
``model`` (the framework's name), optional ``aliases``, ``defaults`` shared by every flavor and ``flavors``.
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources
from typing import Any

from ..errors import ConfigError
from ..messages import msg
from ..yamlio import load_data

# sizing fields that are not ModelSpec fields: consumed here
_SIZING = ("ffn_dim_multiplier", "multiple_of")


@cache
def _families() -> dict[str, dict[str, Any]]:
    """Family name (and aliases, lower-case) -> the parsed YAML file."""
    out: dict[str, dict[str, Any]] = {}
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        where = f"estimator/flavors/{entry.name}"
        data = load_data(entry.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict) or not isinstance(data.get("flavors"), dict) or "model" not in data:
            raise ConfigError(msg("flavors.flavor-file-needs"), path=where)
        data["_path"] = where
        for name in [data["model"], *data.get("aliases", ())]:
            out[str(name).lower()] = data
    return out


def families() -> list[str]:
    """The model names with a flavor table (framework spelling)."""
    return sorted({str(d["model"]) for d in _families().values()})


def flavor_names(model: str) -> list[str]:
    """The flavors known for ``model`` (empty when the model has no table)."""
    data = _families().get(str(model).lower())
    return list(data["flavors"]) if data else []


def llama_ffn_width(dim: int, multiple_of: int, multiplier: float | None = None, divisor: int = 1) -> int:
    """torchtitan's FeedForward width: 4·dim → ⌊2/3·⌋ → ⌊× multiplier⌋ (→ ⌊÷ divisor⌋) → rounded up to
    ``multiple_of``."""
    hidden = int(2 * (4 * dim) / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    if divisor > 1:
        hidden = int(hidden / divisor)
    return multiple_of * math.ceil(hidden / multiple_of)


def lookup(model: str, flavor: str) -> dict[str, Any] | None:
    """Canonical ``model.*`` values of ``model``/``flavor`` (case-insensitive), or None when unknown."""
    data = _families().get(str(model).lower())
    if data is None:
        return None
    wanted = str(flavor).lower()
    name = next((f for f in data["flavors"] if str(f).lower() == wanted), None)
    if name is None:
        return None
    raw: dict[str, Any] = {**(data.get("defaults") or {}), **(data["flavors"][name] or {})}
    return _resolve(raw, f"{data['model']} {name}", data["_path"])


def source_of(model: str) -> str:
    """Where the table of ``model`` lives (for provenance)."""
    data = _families().get(str(model).lower())
    return data["_path"] if data else "estimator/flavors"


def _resolve(raw: dict[str, Any], label: str, where: str) -> dict[str, Any]:
    values = {k: v for k, v in raw.items() if k not in _SIZING}
    multiple_of = int(raw.get("multiple_of") or 256)
    multiplier = raw.get("ffn_dim_multiplier")
    h = values.get("hidden_size")
    if not isinstance(h, int):
        raise ConfigError(msg("flavors.flavor-has-integer", label=label), path=where)
    if values.get("ffn_hidden_size") is None and not _all_moe(values):
        values["ffn_hidden_size"] = llama_ffn_width(h, multiple_of, multiplier)
    if values.get("moe_ffn_hidden_size") == "auto":
        divisor = int(values.get("experts_per_token") or 1) + int(values.get("num_shared_experts") or 0)
        values["moe_ffn_hidden_size"] = llama_ffn_width(h, multiple_of, multiplier, divisor)
    values.setdefault("name", label.replace(" ", "-"))
    return {f"model.{k}": v for k, v in values.items()}


def _all_moe(values: dict[str, Any]) -> bool:
    """Every layer is MoE (no dense FFN to size)."""
    return bool(values.get("num_experts")) and not values.get("first_k_dense") and \
        int(values.get("moe_layer_freq") or 1) <= 1


__all__ = ["families", "flavor_names", "llama_ffn_width", "lookup", "source_of"]
