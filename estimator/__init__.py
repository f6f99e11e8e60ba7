"""SAPP Planner estimator: per-stage memory of LLM training plans (pure Python + numpy, no Qt).

Public API (docs/model.md#inputs-and-outputs): ``estimate``; the records ``ModelSpec``, ``Strategy``, ``RecomputePlan``,
``ShardingSpec``, ``Hardware``, ``RunOptions`` and ``Result``; plan files via ``load_plan``.
"""

from __future__ import annotations

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

__version__ = "0.1.0"

__all__ = [
    "CATEGORIES", "FRAMEWORKS", "Assumption", "ConfigError", "EstimateWarning", "GiB", "Hardware", "LayerGroup",
    "LayerRow", "LayoutError", "Level", "MiB", "ModelSpec", "ModelSpecError", "Quantity", "RecomputePlan",
    "RecomputeRange", "Result", "RunOptions", "SappError", "ShardingSpec", "StageResult", "Strategy",
    "StrategyError", "Violation", "VisionSpec", "__version__", "estimate", "find_preset", "fmt_gib",
    "load_presets", "parse_size", "shipped_presets",
]
