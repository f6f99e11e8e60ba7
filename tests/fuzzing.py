"""The fuzzing budget as a profile, chosen with ``SAPP_FUZZ``: ``ci`` (the default: each fuzz test's own example
count), ``short`` (20 times as many: a deep run that fits in ~10 minutes of CPU) or ``deep`` (230 times as many,
~190,000 for the format readers; ``scripts/fuzz.sh`` runs the deep or short profile under a memory cap)."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

PROFILES = {"ci": 1, "short": 20, "deep": 230}
PROFILE = os.environ.get("SAPP_FUZZ", "ci")
if PROFILE not in PROFILES:
    raise RuntimeError(f"SAPP_FUZZ={PROFILE!r}: use one of {', '.join(PROFILES)}")


def fuzz_settings(examples: int, **kwargs: Any) -> settings:
    """Hypothesis settings for a fuzz test that runs ``examples`` examples in CI (times the profile's factor)."""
    return settings(max_examples=examples * PROFILES[PROFILE], deadline=None, **kwargs)
