"""Fixed category colours (Okabe–Ito, distinguishable with common colour-vision deficiencies) shared by the
reports and the desktop app, so a category looks the same everywhere."""

from __future__ import annotations

from .result import CATEGORIES

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
OVER_BUDGET = "#D55E00"  # vermillion
CAPACITY = "#333333"

assert tuple(CATEGORY_COLORS) == CATEGORIES
