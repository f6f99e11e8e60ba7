"""Render resources/icons/sapp-planner.svg to the PNG sizes the app and the .desktop entry use.

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/render_icon.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"


def main() -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(ICONS / "sapp-planner.svg"))
    for size, name in ((256, "sapp-planner.png"), (48, "sapp-planner-48.png")):
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        image.save(str(ICONS / name))
        print(f"wrote {ICONS / name}")
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
