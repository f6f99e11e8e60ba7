"""SAPP Planner estimator: per-stage memory of LLM training plans (pure Python + numpy, no Qt).

Public API (docs/model.md#inputs-and-outputs): ``estimate``; the records ``ModelSpec``, ``Strategy``, ``RecomputePlan``,
``ShardingSpec``, ``Hardware``, ``RunOptions`` and ``Result``; plan files via ``load_plan``.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# The public names, imported on first use (PEP 562): ``import estimator`` (and ``sapp --version``) costs nothing
# but this table; ``from estimator import estimate`` imports the estimator.
_LAZY = {
    "ConfigError": "errors", "LayoutError": "errors", "ModelSpecError": "errors", "SappError": "errors",
    "StrategyError": "errors", "Violation": "errors", "estimate": "estimate", "Quantity": "explain",
    "Hardware": "hardware", "Level": "hardware", "find_preset": "hardware", "load_presets": "hardware",
    "shipped_presets": "hardware", "LayerGroup": "model", "ModelSpec": "model", "VisionSpec": "model",
    "FRAMEWORKS": "options", "RunOptions": "options", "CATEGORIES": "result", "LayerRow": "result",
    "Result": "result", "StageResult": "result", "RecomputePlan": "strategy", "RecomputeRange": "strategy",
    "ShardingSpec": "strategy", "Strategy": "strategy", "GiB": "units", "MiB": "units", "fmt_gib": "units",
    "parse_size": "units", "Assumption": "warnings", "EstimateWarning": "warnings",
}

if TYPE_CHECKING:
    from .errors import ConfigError, LayoutError, ModelSpecError, SappError, StrategyError, Violation
    from .estimate import estimate
    from .explain import Quantity
    from .hardware import Hardware, Level, find_preset, load_presets, shipped_presets
    from .model import LayerGroup, ModelSpec, VisionSpec
    from .options import FRAMEWORKS, RunOptions
    from .result import CATEGORIES, LayerRow, Result, StageResult
    from .strategy import RecomputePlan, RecomputeRange, ShardingSpec, Strategy
    from .units import GiB, MiB, fmt_gib, parse_size
    from .warnings import Assumption, EstimateWarning


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


class _Package(types.ModuleType):
    """``estimator.estimate`` is the function, as it always was, even when the submodule of the same name is
    imported first (the import system then sets the package attribute to the submodule)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "estimate" and isinstance(value, types.ModuleType):
            value = value.estimate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "CATEGORIES", "FRAMEWORKS", "Assumption", "ConfigError", "EstimateWarning", "GiB", "Hardware", "LayerGroup",
    "LayerRow", "LayoutError", "Level", "MiB", "ModelSpec", "ModelSpecError", "Quantity", "RecomputePlan",
    "RecomputeRange", "Result", "RunOptions", "SappError", "ShardingSpec", "StageResult", "Strategy",
    "StrategyError", "Violation", "VisionSpec", "__version__", "estimate", "find_preset", "fmt_gib",
    "load_presets", "parse_size", "shipped_presets",
]
