"""Byte sizes: parsing config strings and formatting for people.

Config strings such as ``"58GB"`` are binary (docs/model.md#units): K/M/G/T with or without ``i``/``B`` mean
2^10/2^20/2^30/2^40. A bare number is bytes. Internally every size is a number of bytes.
"""

from __future__ import annotations

import re

from .messages import msg

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10

_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMGTP]?)(i?)(B?)\s*$", re.IGNORECASE)


def parse_size(value: str | int | float) -> float:
    """Return bytes for ``value``: a number (bytes) or a string like ``"58GB"``, ``"1.5GiB"``, ``"512M"``.

    Raises ``ValueError`` with the accepted forms when the string cannot be read.
    """
    if isinstance(value, bool):
        raise ValueError(msg("units.size-must-number", value=value))
    if isinstance(value, (int, float)):
        if not value >= 0 or value >= float("inf"):  # NaN fails every comparison
            raise ValueError(msg("units.size-must-finite", value=value))
        try:
            return float(value)
        except OverflowError:
            raise ValueError(msg("units.size-digits-too", digits=len(str(value)))) from None
    match = _SIZE_RE.match(str(value))
    if not match:
        raise ValueError(
            msg("units.cannot-read-size", value=value)
        )
    number, prefix, _i, _b = match.groups()
    size = float(number) * (KiB ** _POWERS[prefix.upper()])
    if size == float("inf"):
        raise ValueError(msg("units.size-too-large", value=value))
    return size


def gib(value: float) -> float:
    return value / GiB


def fmt_gib(value: float, digits: int = 2) -> str:
    """``'12.34 GiB'``: two decimals, unit always shown."""
    return f"{value / GiB:,.{digits}f} GiB"


def fmt_mib(value: float) -> str:
    """``'1,089 MiB'``: integer MiB, unit always shown."""
    return f"{round_half_up(value / MiB):,} MiB"


def fmt_bytes(value: float) -> str:
    """GiB for large values, MiB below 1 GiB, bytes below 1 MiB."""
    magnitude = abs(value)
    if magnitude >= GiB:
        return fmt_gib(value)
    if magnitude >= MiB:
        return fmt_mib(value)
    return f"{round_half_up(value):,} B"


def round_half_up(value: float) -> int:
    """Round half away from zero at the reporting boundary (docs/model.md#units)."""
    if value >= 0:
        return int(value + 0.5)
    return -int(-value + 0.5)
