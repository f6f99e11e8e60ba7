"""The one "did you mean" rule: the known name nearest to a misspelt one. Used for unknown keys in config files
(``formats.known_keys``), unknown plan fields (``fields.lookup``) and unknown search dimensions."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def suggest(name: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known name nearest to ``name`` (difflib ratio ≥ ``cutoff``), or None. Case and ``-``/``_`` are
    ignored for the comparison, so ``Model-Parallel`` finds ``model_parallel``."""
    def norm(text: str) -> str:
        return text.lower().replace("-", "_")

    by_norm = {norm(c): c for c in candidates}
    close = difflib.get_close_matches(norm(name), list(by_norm), n=1, cutoff=cutoff)
    return by_norm[close[0]] if close else None
