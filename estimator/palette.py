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
    # device-level parts (issue 10): muted, so the tensors the framework holds stay the eye's first read
    "library_workspaces": "#A6761D",     # brown
    "allocator_slack": "#D4D4D4",        # light grey
    "runtime_context": "#5F5F5F",        # dark grey
    "comm_library": "#8E6BBF",           # muted violet
}
CATEGORY_LABELS: dict[str, str] = {
    "parameters": "Parameters",
    "gradients": "Gradients",
    "optimizer_states": "Optimizer states",
    "activations": "Activations",
    "communication_buffers": "Comm. buffers",
    "working_overhead": "Working",
    "reserve": "Reserve",
    "library_workspaces": "Workspaces",
    "allocator_slack": "Allocator slack",
    "runtime_context": "Runtime context",
    "comm_library": "Comm. libraries",
}
# column heads of the plain-text and report tables
CATEGORY_SHORT: dict[str, str] = {
    "parameters": "params", "gradients": "grads", "optimizer_states": "optim", "activations": "activ",
    "communication_buffers": "comm", "working_overhead": "working", "reserve": "reserve",
    "library_workspaces": "wksp", "allocator_slack": "slack", "runtime_context": "ctx", "comm_library": "libs"}
OVER_BUDGET = "#D55E00"  # vermillion
CAPACITY = "#333333"

assert tuple(CATEGORY_COLORS) == CATEGORIES == tuple(CATEGORY_SHORT)
