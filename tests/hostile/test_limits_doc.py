"""docs/limits.md stays true: it names every bound of estimator/limits.py with its current value."""

from __future__ import annotations

from pathlib import Path

from estimator import limits

DOC = Path(__file__).resolve().parents[2] / "docs" / "limits.md"


def _shown(value: float) -> list[str]:
    """The ways the doc may write a bound's value (1,000,000 / 1 MiB / 2^20 / 10^18)."""
    out = [f"{value:,}" if float(value).is_integer() else str(value)]
    if float(value).is_integer():
        n = int(value)
        out += [f"{n:,}", str(n)]
        for shift, unit in ((20, "MiB"), (50, "PiB")):
            if n >= 1 << shift and n % (1 << shift) == 0:
                out.append(f"{n >> shift} {unit}")
        if n & (n - 1) == 0:
            out.append(f"2^{n.bit_length() - 1}")
        if str(n).startswith("1") and set(str(n)[1:]) == {"0"}:
            out.append(f"10^{len(str(n)) - 1}")
    return out


def test_every_bound_is_documented_with_its_value() -> None:
    text = DOC.read_text(encoding="utf-8")
    names = [name for name in dir(limits) if name.startswith("MAX_")]
    assert len(names) > 20
    for name in names:
        value = getattr(limits, name)
        line = next((row for row in text.splitlines() if f"`{name}`" in row), None)
        assert line is not None, f"{name} is not in docs/limits.md"
        assert any(form in line for form in _shown(value)), f"docs/limits.md does not give {name} = {value}"
