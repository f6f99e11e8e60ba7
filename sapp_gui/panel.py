"""How a view of the app follows the plan session: one method, ``on_session(event)``, subscribed with ``attach``
(the window does not hand results to its views). A view built late (the analysis tabs) catches up with
``catch_up``. ``StaleFrame`` greys what it holds, with the reason, while what it shows no longer describes the
plan in the forms (the session's ``freshness``): after an edit the forms hold but the estimator refused,
after an edit whose plan cannot be priced, and — after a short grace, so that quick edits do not flicker —
while an estimate is on its way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from estimator.parsed import ParsedConfig
from estimator.session import CURRENT, FAILED, PENDING, REJECTED_EDIT, Freshness, PlanSession, SessionEvent
from estimator.session.events import ESTIMATED, OPENED
from estimator.strategy import Strategy

from .language import error_text, translate

PENDING_GRACE_MS = 400  # an estimate arriving sooner is not announced


class SessionView(Protocol):
    def on_session(self, event: SessionEvent) -> None: ...


def attach(session: PlanSession, view: SessionView) -> Callable[[], None]:
    """Subscribe ``view`` to the session; returns the function that detaches it."""
    return session.subscribe(view.on_session)


def catch_up(session: PlanSession, view: SessionView) -> None:
    """Bring a view built after the document opened up to date: the open, then the estimate on screen."""
    if not session.loaded:
        return
    view.on_session(SessionEvent(OPENED, session))
    if session.shown is not None:
        view.on_session(SessionEvent(ESTIMATED, session))


def strategy_text(st: Strategy) -> str:
    """A strategy in one line (dp · tp · pp …, the degrees above 1, mbs, recompute)."""
    parts = [f"dp {st.dp}", f"tp {st.tp}", f"pp {st.pp}"]
    for name, value in (("vpp", st.vpp), ("cp", st.cp), ("ep", st.ep)):
        if value > 1:
            parts.append(f"{name} {value}")
    parts.append(f"mbs {st.micro_batch_size}")
    rec = st.recompute.default_mode if st.recompute.full_counts is None else "per-stage"
    parts.append(f"rec {rec}")
    return " · ".join(parts)


def plan_text(parsed: ParsedConfig) -> str:
    """A plan in one line: its degrees (``strategy_text``), sequence length, global batch and devices — what a
    compare entry or the pinned baseline must say to be told apart."""
    st = parsed.strategy
    device = parsed.hardware.id or parsed.hardware.name
    return translate("Panel", "{0} · seq {1} · global batch {2} · {3} × {4}").format(
        strategy_text(st), f"{st.seq_length:,}", f"{st.global_batch_size:,}", f"{st.world_size:,}", device)


def plan_difference(plan: ParsedConfig, other: ParsedConfig) -> str:
    """``plan`` in a few words: only what differs from ``other`` (its degrees, micro-batching, sequence length,
    global batch, devices), e.g. "pp 16 · dp 16"; "" when none of those differ."""
    a, b = plan.strategy, other.strategy
    rec = lambda st: st.recompute.default_mode if st.recompute.full_counts is None else "per-stage"  # noqa: E731
    fields = [("dp", a.dp, b.dp), ("tp", a.tp, b.tp), ("pp", a.pp, b.pp), ("vpp", a.vpp, b.vpp),
              ("cp", a.cp, b.cp), ("ep", a.ep, b.ep), ("mbs", a.micro_batch_size, b.micro_batch_size),
              ("m", a.micro_batches, b.micro_batches), ("rec", rec(a), rec(b)),
              (translate("Panel", "seq"), a.seq_length, b.seq_length),
              (translate("Panel", "global batch"), a.global_batch_size, b.global_batch_size),
              (translate("Panel", "devices"), a.world_size, b.world_size),
              ("", plan.hardware.id or plan.hardware.name, other.hardware.id or other.hardware.name)]
    parts = [f"{name} {value:,}" if isinstance(value, int) else f"{name} {value}".strip()
             for name, value, then in fields if value != then]
    return " · ".join(parts)


def refused_text(error: BaseException) -> str:
    """What a chart shows instead of bars when the plan cannot be priced: that, and the estimator's reason."""
    return translate("Stale", "No estimate: this plan cannot be priced.") + "\n" + error_text(error)


def stale_reason(fresh: Freshness) -> str:
    """Why the numbers on screen are not those of the plan in the forms ("" when they are)."""
    if not fresh.stale or fresh.shown is None:
        return ""
    shown = strategy_text(fresh.shown.parsed.strategy)
    if fresh.state == PENDING:
        return translate("Stale", "Estimating the plan in the forms… These numbers are of the previous plan "
                                  "({0}).").format(shown)
    if fresh.state == FAILED:
        return translate("Stale", "Not the plan in the forms: it cannot be priced. These numbers are of the last "
                                  "plan that could be ({0}).").format(shown)
    if fresh.state == REJECTED_EDIT:
        return translate("Stale", "Not the plan in the forms: the last edit was not applied. These numbers are of "
                                  "the plan before it ({0}).").format(shown)
    return ""


class _Veil(QWidget):
    """A pale layer over a widget (mouse events pass through: the old numbers can still be read). It is a
    sibling laid over the widget, not its child: a splitter would take a child for one of its panes."""

    def __init__(self, frame: QWidget, target: QWidget) -> None:
        super().__init__(frame)
        self.setObjectName("staleVeil")
        self.target = target
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.hide()
        target.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.target and event.type() in (QEvent.Type.Resize, QEvent.Type.Move):
            self.setGeometry(self.target.geometry())
        return False

    def cover(self, on: bool) -> None:
        if on:
            self.setGeometry(self.target.geometry())
            self.raise_()
        self.setVisible(on)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(246, 246, 246, 175))
        painter.end()


class StaleFrame(QWidget):
    """Holds a view and greys it (with the reason above it, when ``caption``) while the session says that what
    it shows does not describe the current plan. A content with ``set_stale(reason)`` is told too (the summary
    replaces its verdict)."""

    def __init__(self, session: PlanSession, content: QWidget, *, caption: bool = True,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"{content.objectName() or 'view'}Frame")
        self.session = session
        self.content = content
        self.caption = QLabel("")
        self.caption.setObjectName("staleCaption")
        self.caption.setProperty("sappRole", "stale")
        self.caption.setWordWrap(True)
        self.caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.caption.setVisible(False)
        self.show_caption = caption
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.caption)
        layout.addWidget(content, 1)
        self.veil = _Veil(self, content)
        self.reason = ""
        self._grace = QTimer(self)
        self._grace.setSingleShot(True)
        self._grace.setInterval(PENDING_GRACE_MS)
        self._grace.timeout.connect(self._show_freshness)
        attach(session, self)
        if session.freshness().state != PENDING:
            self._apply(session.freshness())

    @property
    def stale(self) -> bool:
        return bool(self.reason)

    def on_session(self, event: SessionEvent) -> None:
        fresh = self.session.freshness()
        if fresh.state == PENDING and not self.stale:
            if not self._grace.isActive():
                self._grace.start()
            return
        self._grace.stop()
        self._apply(fresh)

    def _show_freshness(self) -> None:
        fresh = self.session.freshness()
        if fresh.state != CURRENT:
            self._apply(fresh)

    def _apply(self, fresh: Freshness) -> None:
        reason = stale_reason(fresh)
        if reason == self.reason:
            return
        self.reason = reason
        self.caption.setText(reason)
        self.caption.setToolTip(reason)
        self.caption.setVisible(bool(reason) and self.show_caption)
        self.veil.cover(bool(reason))
        set_stale = getattr(self.content, "set_stale", None)
        if set_stale is not None:
            set_stale(reason)

    def retranslate(self) -> None:
        self.reason = "?"  # say it again in the new language
        self._apply(self.session.freshness())
