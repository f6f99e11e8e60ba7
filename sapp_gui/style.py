"""Fixed colours and names of the memory categories, and the few other colours the app uses.

The category palette (Okabe–Ito, distinguishable with the common colour-vision deficiencies) and the English
category names live once, in ``estimator.palette`` (the reports use them too); a category keeps its colour
everywhere (stage chart, layer chart, compare and balance bars, legend, hover text). No Qt imports.
"""

from __future__ import annotations

from estimator.palette import CAPACITY, CATEGORY_COLORS, CATEGORY_LABELS, OVER_BUDGET
from estimator.result import CATEGORIES


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Named as pyside6-lupdate expects: marks ``text`` for translation in ``context`` (no Qt needed here)."""
    return text


# the estimator's English category names, marked so that lupdate offers them for translation
_CATEGORY_NAMES = (QT_TRANSLATE_NOOP("Category", "Parameters"), QT_TRANSLATE_NOOP("Category", "Gradients"),
                   QT_TRANSLATE_NOOP("Category", "Optimizer states"), QT_TRANSLATE_NOOP("Category", "Activations"),
                   QT_TRANSLATE_NOOP("Category", "Comm. buffers"), QT_TRANSLATE_NOOP("Category", "Working"),
                   QT_TRANSLATE_NOOP("Category", "Reserve"), QT_TRANSLATE_NOOP("Category", "Workspaces"),
                   QT_TRANSLATE_NOOP("Category", "Allocator slack"), QT_TRANSLATE_NOOP("Category", "Runtime context"),
                   QT_TRANSLATE_NOOP("Category", "Comm. libraries"))

FITS = "#00795A"           # a darker bluish green for text on white
SELECTION = "#000000"
EDITED_BG = "#FFF1C9"
DERIVED_BG = "#E8F1FA"
ERROR = "#B8420A"
PARETO = "#0072B2"         # Pareto front points and line
MUTED = "#9a9a9a"          # other strategies, faded bars

# schedule view: operation kinds (not categories: a legend says which is which)
OP_COLORS: dict[str, str] = {
    "F": "#8EC3E6",        # forward
    "B": "#2C6FAC",        # backward (input gradients)
    "R": "#F2B45A",        # recompute (the forward re-run before a backward)
    "W": "#7BC09A",        # weight gradients (split backward schedules)
}
MEMORY_LINE = "#333333"
PEAK_MARK = OVER_BUDGET

assert tuple(CATEGORY_COLORS) == CATEGORIES, "the palette must follow estimator.result.CATEGORIES"
assert tuple(CATEGORY_LABELS.values()) == _CATEGORY_NAMES, "estimator.palette renamed a category: mark the new name"

__all__ = ["CAPACITY", "CATEGORY_COLORS", "CATEGORY_LABELS", "OVER_BUDGET", "QT_TRANSLATE_NOOP"]

# applied once to the QApplication: marks on form fields (dynamic properties set by forms/fields.py)
APP_STYLESHEET = f"""
*[sappEdited="true"] {{ background-color: {EDITED_BG}; }}
*[sappDerived="true"] {{ background-color: {DERIVED_BG}; }}
*[sappInvalid="true"] {{ border: 2px solid {OVER_BUDGET}; border-radius: 3px; }}
QLabel[sappRole="fieldError"] {{ color: {ERROR}; }}
QLabel[sappRole="banner"] {{ background-color: #FDE7DC; color: #5A1E00; border: 1px solid {OVER_BUDGET};
                            border-radius: 4px; padding: 6px; }}
QLabel[sappRole="note"] {{ color: #555555; }}
QLabel[sappRole="stale"] {{ background-color: #EFEFEF; color: #444444; border-left: 4px solid #8a8a8a;
                           padding: 3px 6px; }}
QLabel[sappRole="chartEmpty"] {{ background-color: #FAFAFA; color: #444444; border: 1px dashed #B0B0B0;
                                padding: 8px; }}
"""
