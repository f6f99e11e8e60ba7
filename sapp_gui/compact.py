"""A window a laptop user can live in (issue 12): usable at 1024×640 and on a 1366×768 screen.

- Content that needs more room than the window has scrolls instead of setting the window's minimum size
  (``scrolling``: the analysis tabs, each in a scroll area).
- The side panels are narrower at their minimum and collapse: View ▸ Side panels (F9) hides them all
  and brings back the ones that were shown; on a short screen Explain and Warnings share one tabbed panel.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QFrame, QMainWindow, QScrollArea, QWidget

from .language import translate

FORMS_MIN_WIDTH = 250     # the Strategy panel: labels + spin boxes, narrower with a horizontal scroll bar
SIDE_MIN_WIDTH = 200      # Explain, Warnings & assumptions (their text wraps)
SHORT_SCREEN = 800        # logical pixels of height below which Explain and Warnings share one tabbed panel
NARROW_SCREEN = 1300      # logical pixels of width below which the side panels start at their narrowest


def scrolling(content: QWidget, name: str = "") -> QScrollArea:
    """``content`` in a frameless scroll area that follows its size: it scrolls only when the window is smaller
    than what the content needs."""
    scroll = QScrollArea()
    if name:
        scroll.setObjectName(name)
    scroll.setWidget(content)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setMinimumSize(QSize(0, 0))
    return scroll


class SidePanels(QObject):
    """The window's docks: narrow minimums, one action that collapses / restores them all, and, until the user
    arranges them (or a saved arrangement is restored), a compact arrangement on a small window: the right-hand
    panels share one tabbed panel when the window is short, and start at their narrowest when it is narrow."""

    def __init__(self, window: QMainWindow, docks: tuple[QDockWidget, ...], right: tuple[QDockWidget, ...]) -> None:
        super().__init__(window)
        self.window, self.docks, self.right = window, docks, right
        self._shown: dict[QDockWidget, bool] = {}
        self.auto = True  # False once a saved arrangement is restored: the user's layout wins
        self._tabbed = self._narrowed = False
        window.installEventFilter(self)
        for dock in docks:
            widget = dock.widget()
            if widget is not None:
                widget.setMinimumWidth(FORMS_MIN_WIDTH if dock is docks[0] else SIDE_MIN_WIDTH)
        self.action = QAction(window)
        self.action.setObjectName("toggleSidePanels")
        self.action.setCheckable(True)
        self.action.setChecked(True)
        self.action.setShortcut(QKeySequence("F9"))
        self.action.toggled.connect(self.set_expanded)
        self.retranslate()

    def retranslate(self) -> None:
        self.action.setText(translate("MainWindow", "Side &panels"))
        self.action.setToolTip(translate("MainWindow", "Show or collapse the Strategy, Explain and Warnings panels "
                                                       "(more room for the charts on a small screen)"))

    @property
    def expanded(self) -> bool:
        return self.action.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        """Collapse every side panel (remembering which were shown), or bring those back."""
        if self.action.isChecked() != expanded:
            self.action.setChecked(expanded)  # re-enters through toggled
            return
        if expanded:
            for dock in self.docks:
                dock.setVisible(self._shown.get(dock, True))
        else:
            self._shown = {dock: not dock.isHidden() for dock in self.docks}
            for dock in self.docks:
                dock.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() == QEvent.Type.Resize and self.auto:
            size = self.window.size()
            self.arrange_for(size.width(), size.height())
        return False

    def arrange_for(self, width: int, height: int) -> None:
        """A short window: the right-hand panels share one tabbed panel (Explain in front); a narrow one: the
        side panels at their narrowest, the charts get the rest. Each happens once."""
        if height < SHORT_SCREEN and not self._tabbed and len(self.right) > 1:
            self._tabbed = True
            first, *rest = self.right
            for dock in rest:
                if self.window.dockWidgetArea(dock) == self.window.dockWidgetArea(first):
                    self.window.tabifyDockWidget(first, dock)
            first.raise_()
        if width < NARROW_SCREEN and not self._narrowed:
            self._narrowed = True
            self.window.resizeDocks([self.docks[0], self.right[0]], [FORMS_MIN_WIDTH, SIDE_MIN_WIDTH],
                                    Qt.Orientation.Horizontal)


__all__ = ["FORMS_MIN_WIDTH", "SHORT_SCREEN", "SIDE_MIN_WIDTH", "SidePanels", "scrolling"]
