"""Example SAPP Planner plug-in: sliding-window attention with attention sinks.

SAPP Planner calls ``register(context)`` once per process (entry point ``swa_sinks`` in the group
``sapp_planner.plugins``, see pyproject.toml). Everything it adds is data shipped in this package.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

HERE = Path(str(resources.files(__name__)))


def register(context: Any) -> None:
    """Add this package's layer kinds and family profile."""
    context.add_kinds_dir(HERE / "kinds")
    context.add_profiles_dir(HERE / "profiles")
