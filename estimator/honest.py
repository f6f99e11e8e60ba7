"""Numbers shown with the precision their band allows: a step time whose efficiency band spans ±20 % is "1.2 s",
not "1.2345 s". One rule for the CLI, the reports and the app."""

from __future__ import annotations

import math


def digits_for(value: float, low: float | None = None, high: float | None = None) -> int:
    """Significant digits the band (low, high) around ``value`` supports: 2 when it spans 10 % or more, 3 down to
    1 %, else 4 (and 3 without a band: the model itself is not better than a few per cent)."""
    if low is None or high is None or not value:
        return 3
    width = abs(high - low) / abs(value)
    return 2 if width >= 0.10 else 3 if width >= 0.01 else 4


def sig(x: float, digits: int) -> str:
    """``x`` rounded to ``digits`` significant digits, with thousands separators ("12,000", "1.2", "0.0034")."""
    if x == 0 or not math.isfinite(x):
        return f"{x:,.0f}" if x == 0 else str(x)
    places = digits - 1 - math.floor(math.log10(abs(x)))
    rounded = round(x, places)
    return f"{rounded:,.{max(0, places)}f}"


def with_band(value: float, band: tuple[float, float] | None, unit: str = "", scale: float = 1.0) -> str:
    """"1.2 s (1.0–1.5)": the value and its band at the precision the band allows; ``scale`` multiplies all three
    (100 for a percentage)."""
    low, high = band if band is not None else (None, None)
    digits = digits_for(value, low, high)
    text = sig(value * scale, digits) + unit
    if band is None:
        return text
    lo, hi = sorted(band)
    return f"{text} ({sig(lo * scale, digits)}–{sig(hi * scale, digits)})"


__all__ = ["digits_for", "sig", "with_band"]
