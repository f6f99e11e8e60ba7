"""Validated export: the strategy is checked by the estimator's rules against the plan the written files will
state (the model, hardware and options as the files give them) before any writer runs, so a plan the
validator rejects is never written. Writing goes through ``estimator.export.write_atomic`` (all files or
none, ``FILE.bak`` kept)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SappError
from ..messages import msg
from ..parsed import ParsedConfig
from ..strategy import Strategy


@dataclass(frozen=True)
class ExportPlan:
    """The new text of every source file the strategy changes (empty: the files already state it) and the
    texts they had when read."""

    files: dict[str, str]
    originals: dict[str, str]
    strategy: Strategy


class ExportRefused(SappError):
    """The strategy breaks the estimator's rules for the plan the files would state: nothing is written."""

    def __init__(self, cause: SappError, edited: tuple[str, ...]) -> None:
        self.cause = cause
        self.edited = edited
        self.violations = getattr(cause, "violations", ())
        super().__init__(msg("exporting.refused.edited", cause=cause, edited=", ".join(edited)) if edited else
                         msg("exporting.refused", cause=cause))


def check_strategy(plan: ParsedConfig, strategy: Strategy) -> None:
    """Raise the estimator's StrategyError / LayoutError / ModelSpecError when ``strategy`` is not a valid
    strategy for ``plan``'s model, hardware and options (the rules ``estimate`` applies, without pricing)."""
    from ..estimate import estimate

    estimate(plan.model, strategy, plan.hardware, plan.options, explain=False, with_time=False)


def prepare_export(original: ParsedConfig, strategy: Strategy, *, edited: tuple[str, ...] = ()) -> ExportPlan:
    """The writers' new texts for ``strategy`` in the files ``original`` was read from, after checking it
    (raises ExportRefused naming every violated rule, or the writers' ConfigError)."""
    from ..export import export

    try:
        check_strategy(original, strategy)
    except SappError as exc:
        raise ExportRefused(exc, edited) from None
    files = export(original, strategy)
    return ExportPlan(files, {s.path: s.text for s in original.sources}, strategy)


def targets_for(files: dict[str, str], output: str | Path) -> dict[str, str]:
    """Where ``-o OUT`` / Save As puts the new texts: one changed file goes to OUT, several into the directory
    OUT (by their own names, which must then differ)."""
    out = Path(output)
    if len(files) == 1:
        path, text = next(iter(files.items()))
        return {str(out / Path(path).name) if out.is_dir() else str(out): text}
    if not out.is_dir():
        raise SappError(msg("exporting.files-change-target", n_files=len(files), files=', '.join(files)))
    targets: dict[str, str] = {}
    for path, text in files.items():
        target = str(out / Path(path).name)
        if target in targets:
            raise SappError(msg("exporting.two-changed-files", name=Path(path).name, files=', '.join(files)))
        targets[target] = text
    return targets
