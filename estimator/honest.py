"""Numbers shown with the precision their band allows: a step time whose efficiency band spans ±20 % is "1.2 s",
not "1.2345 s". One rule for the CLI, the reports, the search tables and the app (issue 11); the JSON keeps the
full values and the band's ends.

Step time, tokens/s/device and MFU share one precision: throughput and MFU are the step's work divided by the
step time, so their bands have the step band's relative width. Differences between two plans are shown to the
same decimal places as the figure they are a difference of.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


def digits_for(value: float, low: float | None = None, high: float | None = None) -> int:
    """Significant digits the band (low, high) around ``value`` supports: 2 when it spans 10 % or more, 3 down to
    1 %, else 4 (and 3 without a band: the model itself is not better than a few per cent)."""
    if low is None or high is None or not value:
        return 3
    width = abs(high - low) / abs(value)
    return 2 if width >= 0.10 else 3 if width >= 0.01 else 4


def places_for(x: float, digits: int) -> int:
    """Decimal places that show ``x`` to ``digits`` significant digits (0 for large numbers)."""
    if x == 0 or not math.isfinite(x):
        return 0
    return max(0, digits - 1 - math.floor(math.log10(abs(x))))


def sig(x: float, digits: int) -> str:
    """``x`` rounded to ``digits`` significant digits, with thousands separators ("12,000", "1.2", "0.0034")."""
    if x == 0 or not math.isfinite(x):
        return f"{x:,.0f}" if x == 0 else str(x)
    places = digits - 1 - math.floor(math.log10(abs(x)))
    rounded = round(x, places)
    return f"{rounded:,.{max(0, places)}f}"


@dataclass(frozen=True)
class Honest:
    """One figure at the precision its band allows: ``value`` and the band's ends (low ≤ high), all multiplied by
    ``scale`` when shown (100 for a percentage)."""

    value: float
    band: tuple[float, float] | None
    digits: int
    scale: float = 1.0

    @property
    def text(self) -> str:
        """The value alone: "1.2"."""
        return sig(self.value * self.scale, self.digits)

    @property
    def band_texts(self) -> tuple[str, str]:
        """The band's ends at the value's precision ("1.0", "1.5"); ("", "") without a band."""
        if self.band is None:
            return "", ""
        return sig(self.band[0] * self.scale, self.digits), sig(self.band[1] * self.scale, self.digits)

    @property
    def band_text(self) -> str | None:
        """The band alone: "1.0–1.5" (None without a band)."""
        return None if self.band is None else "–".join(self.band_texts)

    def with_band(self, unit: str = "") -> str:
        """"1.2 s (1.0–1.5)"; without a band "1.2 s"."""
        band = self.band_text
        return self.text + unit + (f" ({band})" if band is not None else "")

    @property
    def places(self) -> int:
        """Decimal places of ``text``: a difference of two such figures is shown to these."""
        return places_for(self.value * self.scale, self.digits)

    def delta(self, difference: float) -> str:
        """A signed difference (in the figure's own units, before ``scale``) at the figure's decimal places."""
        return f"{difference * self.scale:+,.{self.places}f}"


def honest(value: float, band: tuple[float, float] | None, scale: float = 1.0, digits: int | None = None) -> Honest:
    """``value`` with its band (either order) at the precision the band allows (or ``digits`` when given)."""
    ordered = (min(band), max(band)) if band is not None else None
    if digits is None:
        digits = digits_for(value, *(ordered or (None, None)))
    return Honest(float(value), ordered, digits, scale)


@dataclass(frozen=True)
class Throughput:
    """Step time (s), tokens/s/device and MFU (shown in %) of one plan, at one precision (module docstring)."""

    step: Honest
    tokens: Honest
    mfu: Honest

    @property
    def line(self) -> str:
        """"step time 1.2 s (1.0–1.5) · tokens/s/device 3,400 (2,800–4,100) · MFU 41 % (34–50)"."""
        return (f"step time {self.step.with_band(' s')} · tokens/s/device {self.tokens.with_band()} · "
                f"MFU {self.mfu.with_band(' %')}")

    def seconds(self, part: float) -> str:
        """A part of the step (or any time of this plan's timeline) in seconds, at the step's precision."""
        return sig(part, self.step.digits)

    def to_dict(self) -> dict[str, Any]:
        """The JSON fields of the band (full values): step_time_s_low/_high, tokens_per_s_per_device_low/_high,
        mfu_low/_high; empty without a band."""
        if self.step.band is None or self.tokens.band is None or self.mfu.band is None:
            return {}
        return {"step_time_s_low": self.step.band[0], "step_time_s_high": self.step.band[1],
                "tokens_per_s_per_device_low": self.tokens.band[0], "tokens_per_s_per_device_high": self.tokens.band[1],
                "mfu_low": self.mfu.band[0], "mfu_high": self.mfu.band[1]}


def throughput(step_s: float, tokens: float, mfu: float, step_band: tuple[float, float] | None) -> Throughput:
    """[T-BAND] the three figures of a plan from its step time and the step band (fast end, slow end): tokens/s
    and MFU scale as 1/step time, so their bands follow from the step's."""
    step = honest(step_s, step_band)
    if step_band is None or not step_s:
        return Throughput(step, honest(tokens, None, digits=step.digits), honest(mfu, None, 100, step.digits))
    fast, slow = min(step_band), max(step_band)
    return Throughput(step, honest(tokens, (tokens * step_s / slow, tokens * step_s / fast), digits=step.digits),
                      honest(mfu, (mfu * step_s / slow, mfu * step_s / fast), 100, step.digits))


def relative_change(before: float, after: float) -> str:
    """"−1.2 %": how much ``after`` differs from ``before``. Two plans priced on the same device share its
    efficiencies, so their ratio is known far better than either absolute figure: the change keeps one decimal
    where the figures themselves are shown to two significant digits."""
    if not before:
        return ""
    change = round((after / before - 1) * 100, 1)
    return f"{change:+.1f} %".replace("-", "−") if change else "0.0 %"


def versus_best(value: float, best: float) -> str:
    """"+0.34 %": how much slower ``value`` is than the fastest plan ``best`` of one search, with the decimals
    that tell two rows apart where their step times round to the same text: two significant digits of the change,
    at least one decimal and at most three ("+<0.001 %" below that), so that two rows whose step times differ by
    0.1 % of the best or more never read alike (finer near the best); "0 %" for the fastest itself (and a tie).
    The plans of one search share the device's efficiencies, so their ratio is known far better than either step
    time (``relative_change``)."""
    if not best or not math.isfinite(value):
        return ""
    change = (value / best - 1) * 100
    if change == 0:
        return "0 %"
    if abs(change) < 0.001:
        return ("+" if change > 0 else "−") + "<0.001 %"
    places = min(3, max(1, places_for(change, 2)))
    return f"{change:+.{places}f} %".replace("-", "−")


def with_band(value: float, band: tuple[float, float] | None, unit: str = "", scale: float = 1.0) -> str:
    """"1.2 s (1.0–1.5)": the value and its band at the precision the band allows; ``scale`` multiplies all three
    (100 for a percentage)."""
    return honest(value, band, scale).with_band(unit)


__all__ = ["Honest", "Throughput", "digits_for", "honest", "places_for", "relative_change", "sig", "throughput",
           "versus_best", "with_band"]
