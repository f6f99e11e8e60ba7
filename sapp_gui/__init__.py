"""SAPP Planner desktop app (PySide6 + pyqtgraph) over the estimator's public API.

Qt-free modules: ``document`` (texts about the session's values; the rules are ``estimator.session``),
``resources`` (bundled files), ``presets`` (user presets), ``style`` (palette). Everything else imports Qt;
``app.main`` is the entry point.
"""

import os

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")  # pyqtgraph must not pick another installed binding
