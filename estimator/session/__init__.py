"""The plan session: open, edit (hold rules, per-stage rescaling), undo/redo, the estimate on screen and its
freshness, the pinned baseline and compare set, validated export — one set of rules for the CLI and the app
(see ``core.PlanSession``)."""

from .core import (
    CURRENT,
    FAILED,
    MAX_COMPARED,
    NOTHING,
    PENDING,
    REJECTED_EDIT,
    CompareEntry,
    Estimate,
    Freshness,
    PlanSession,
)
from .edits import HOLD_DP, HOLD_WORLD, EditError, canonical_key
from .events import SessionEvent
from .exporting import ExportPlan, ExportRefused, check_strategy, prepare_export, targets_for
from .history import History, PlanState
from .opening import Opened, OpenRequest, read_plan

__all__ = ["CURRENT", "FAILED", "HOLD_DP", "HOLD_WORLD", "MAX_COMPARED", "NOTHING", "PENDING", "REJECTED_EDIT",
           "CompareEntry", "EditError", "Estimate", "ExportPlan", "ExportRefused", "Freshness", "History",
           "OpenRequest", "Opened", "PlanSession", "PlanState", "SessionEvent", "canonical_key", "check_strategy",
           "prepare_export", "read_plan", "targets_for"]
