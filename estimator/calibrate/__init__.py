"""``sapp calibrate``: read measured logs (``logs``), fit the device-level terms and the matmul efficiency they
determine (``fit``), keep them as a calibration profile applied to later plans on the same device and framework
(``profile``).

The names below are imported from their module on first use: opening a plan reads only ``profile`` (is there a
calibration for this device?), and a cold command line would otherwise pay for the log parsers and the fit too
(docs/decisions.md P-COLD-START)."""

from __future__ import annotations

import importlib
from typing import Any

_MODULE_OF = {
    "Calibration": "fit", "StageFit": "fit", "calibrate": "fit", "save": "fit",
    "LogError": "logs", "LogReading": "logs", "looks_like_log": "logs", "read_log": "logs", "read_logs": "logs",
    "Profile": "profile", "apply_profile": "profile", "matching_profile": "profile", "read_profile": "profile",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = sorted(_MODULE_OF)
