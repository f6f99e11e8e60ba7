"""Fixed colours and names of the seven memory categories, and the few other colours the app uses.

The palette is Okabe–Ito (distinguishable with the common colour-vision deficiencies); a category keeps
its colour everywhere (stage chart, layer chart, legend, hover text). No Qt imports.
"""

from __future__ import annotations

from estimator.result import CATEGORIES

CATEGORY_COLORS: dict[str, str] = {
    "parameters": "#0072B2",             # blue
    "gradients": "#56B4E9",              # sky blue
    "optimizer_states": "#009E73",       # bluish green
    "activations": "#E69F00",            # orange
    "communication_buffers": "#CC79A7",  # reddish purple
    "working_overhead": "#F0E442",       # yellow
    "reserve": "#999999",                # grey
}

CATEGORY_LABELS: dict[str, str] = {
    "parameters": "Parameters",
    "gradients": "Gradients",
    "optimizer_states": "Optimizer states",
    "activations": "Activations",
    "communication_buffers": "Comm. buffers",
    "working_overhead": "Working",
    "reserve": "Reserve",
}

OVER_BUDGET = "#D55E00"    # vermillion: bars over budget, the budget line, "does not fit"
FITS = "#00795A"           # a darker bluish green for text on white
CAPACITY = "#333333"
SELECTION = "#000000"
EDITED_BG = "#FFF1C9"
DERIVED_BG = "#E8F1FA"
ERROR = "#B8420A"

assert tuple(CATEGORY_COLORS) == CATEGORIES, "the palette must follow estimator.result.CATEGORIES"

# applied once to the QApplication: marks on form fields (dynamic properties set by forms/fields.py)
APP_STYLESHEET = f"""
*[sappEdited="true"] {{ background-color: {EDITED_BG}; }}
*[sappDerived="true"] {{ background-color: {DERIVED_BG}; }}
*[sappInvalid="true"] {{ border: 2px solid {OVER_BUDGET}; border-radius: 3px; }}
QLabel[sappRole="fieldError"] {{ color: {ERROR}; }}
QLabel[sappRole="banner"] {{ background-color: #FDE7DC; color: #5A1E00; border: 1px solid {OVER_BUDGET};
                            border-radius: 4px; padding: 6px; }}
QLabel[sappRole="note"] {{ color: #555555; }}
"""
