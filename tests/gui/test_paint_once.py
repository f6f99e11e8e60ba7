"""Issue 14, paint cost: an edit repaints each chart once. The labels of the stage chart are placed before the
paint (they were placed by a timer after it, which painted every edit twice) and the new ranges reach the axes
before the paint (pyqtgraph applies them while painting, which asked for a second paint of the layer chart)."""

from __future__ import annotations

from collections import Counter

import pytest
from gui_helpers import edit_and_wait, gated_window, open_and_wait


@pytest.fixture
def patient(monkeypatch) -> None:
    """No greying while these tests count paints: an estimate later than the 400 ms grace (a loaded machine)
    greys the charts and announces itself, which are paints of their own (P-STALE; the grace has its own test).
    Requested before ``window``, whose panels read the grace when they are built."""
    import sapp_gui.panel
    import sapp_gui.summary

    monkeypatch.setattr(sapp_gui.panel, "PENDING_GRACE_MS", 60_000)
    monkeypatch.setattr(sapp_gui.summary, "PENDING_GRACE_MS", 60_000)


def settled(qtbot, window) -> None:
    """Build the analysis tabs now (the window builds them in idle time after the first chart, which re-lays out
    and repaints the window: on a loaded machine that lands inside the edits counted here) and let it settle."""
    from sapp_gui.workspace import TAB_NAMES

    for name in TAB_NAMES[1:]:
        window.workspace_tabs.panel(name)
    qtbot.wait(200)


def test_an_edit_paints_each_chart_once(qtbot, patient, window, dsv3_plan) -> None:
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    painted: Counter[str] = Counter()

    class Count(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                painted[watched.objectName()] += 1
            return False

    open_and_wait(qtbot, window, [dsv3_plan])
    settled(qtbot, window)
    counter = Count()
    for name, chart in (("stage", window.chart), ("layer", window.layer_chart)):
        chart.plot.viewport().setObjectName(name)
        chart.plot.viewport().installEventFilter(counter)
    for changes in ({"strategy.tp": 8}, {"strategy.recompute": "full"}, {"strategy.tp": 2}):
        painted.clear()
        edit_and_wait(qtbot, window, lambda c=changes: window.edit(dict(c), "edit"))
        for _ in range(3):
            QApplication.processEvents()
        assert painted["stage"] == 1 and painted["layer"] == 1, (changes, painted)
        # what that one paint shows is final: the labels are already where declutter puts them
        before = window.chart.peak_label.pos()
        window.chart.declutter()
        assert window.chart.peak_label.pos() == before


def test_an_edit_repaints_only_what_changed(qtbot, patient, window, dsv3_plan) -> None:
    """A recompute edit changes the tiles' numbers and the charts, nothing in the docks: the Explain and forms
    docks do not repaint, each tile's label paints at most once (the tiles were selectable text, which laid
    itself out again after a paint and repainted them twice more), and the status bar's estimate time keeps its
    size (its new width re-laid the whole window out and repainted it)."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication, QWidget

    painted: Counter[str] = Counter()
    resized: list[str] = []
    docks = {window.explain_dock: "explain", window.forms_dock: "forms"}
    tiles = {label: f"{card.objectName()}.{i}" for card in window.summary.cards
             for i, label in enumerate((card.caption, card.value, card.sub))}

    class Count(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if isinstance(watched, QWidget) and event.type() == QEvent.Type.Paint:
                if watched in tiles:
                    painted[tiles[watched]] += 1
                widget = watched
                while widget is not None and widget not in docks:
                    widget = widget.parentWidget()
                if widget is not None:
                    painted[docks[widget]] += 1
            elif event.type() == QEvent.Type.Resize and watched is window.time_label:
                resized.append("estimateTime")
            return False

    open_and_wait(qtbot, window, [dsv3_plan])
    window.explain_dock.show()
    settled(qtbot, window)
    counter = Count()
    QApplication.instance().installEventFilter(counter)
    try:
        for changes in ({"strategy.recompute": "full"}, {"strategy.recompute": "none"},
                        {"strategy.recompute": "full"}):
            painted.clear()
            resized.clear()
            edit_and_wait(qtbot, window, lambda c=changes: window.edit(dict(c), "edit"))
            qtbot.wait(50)
            assert painted["explain"] == 0 and painted["forms"] == 0, (changes, painted)
            assert all(painted[name] <= 1 for name in tiles.values()), (changes, painted)
            assert sum(painted[name] for name in tiles.values()) > 0  # the tiles did show the new numbers
            assert not resized, window.time_label.text()
            assert window.time_label.text().endswith("ms")
    finally:
        QApplication.instance().removeEventFilter(counter)


def test_the_notes_are_built_once_per_edit(qtbot, patient, window, dsv3_plan) -> None:
    """The notes list is built when the estimate arrives, not also when the edit goes stale a few milliseconds
    before it (it was rebuilt twice per edit, and its scroll bar came and went), and not at all when its rows
    stay the same; what it shows is what a list built from scratch shows."""
    from PySide6.QtWidgets import QApplication

    from estimator.session import SessionEvent
    from estimator.session.events import ESTIMATED
    from sapp_gui.summary import NotesList

    open_and_wait(qtbot, window, [dsv3_plan])
    settled(qtbot, window)
    for changes in ({"strategy.pp": 8}, {"strategy.tp": 8}, {"strategy.recompute": "full"}, {"strategy.pp": 16}):
        builds = window.notes.builds
        edit_and_wait(qtbot, window, lambda c=changes: window.edit(dict(c), "edit"))
        QApplication.processEvents()
        assert window.notes.builds - builds <= 1, changes
        fresh = NotesList()
        fresh.on_session(SessionEvent(ESTIMATED, window.doc))
        assert window.notes.lines() == fresh.lines()
        fresh.deleteLater()
    assert any(line.startswith("offset [") for line in window.notes.lines())  # pp 16 again: adapted offsets


def test_a_slow_estimate_shows_the_edits_notes_after_the_grace(qtbot, make_window, dsv3_plan) -> None:
    """While an estimate is late the list does not wait for it: after the grace (when the charts grey) it shows
    the plan in the forms' own notes, the edit's adaptations included."""
    window, gate = gated_window(qtbot, make_window, [dsv3_plan])
    before = window.notes.lines()
    window.edit({"strategy.pp": 8}, "pp 8")
    assert window.notes.lines() == before  # within the grace: one build, when the estimate comes
    qtbot.waitUntil(lambda: any(line.startswith("offset [") for line in window.notes.lines()), timeout=5000)
    assert window.summary_frame.stale
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        gate.set()
    assert any(line.startswith("offset [") for line in window.notes.lines())


def test_an_axis_keeps_the_pictures_of_its_scales(qtbot, window, dsv3_plan) -> None:
    """Back to a scale drawn before, the value axis draws nothing new (pyqtgraph drew its picture again on every
    range signal, the same range included), and what it shows is what it showed then."""
    from PySide6.QtWidgets import QApplication

    open_and_wait(qtbot, window, [dsv3_plan])
    settled(qtbot, window)
    axis = window.chart.plot.getPlotItem().getAxis("left")
    drawn: list[object] = []
    original = type(axis).generateDrawSpecs

    def counting(self, p):  # type: ignore[no-untyped-def]
        drawn.append(self)
        return original(self, p)

    results, images = [], []
    for changes in ({"strategy.tp": 8}, {"strategy.pp": 8}):
        results.append(edit_and_wait(qtbot, window, lambda c=changes: window.edit(dict(c), "edit")))
        for _ in range(3):
            QApplication.processEvents()
        images.append(window.chart.plot.grab().toImage())
    assert window.chart.plot.getPlotItem().getAxis("left").range != [0, 1]
    type(axis).generateDrawSpecs = counting  # type: ignore[method-assign]
    try:
        window.undo_stack.undo()  # back to tp 8: its scale was drawn before
        qtbot.waitUntil(lambda: window.doc.freshness().state == "current", timeout=20000)
        for _ in range(3):
            QApplication.processEvents()
        assert axis not in drawn
        assert window.chart.plot.grab().toImage() == images[0]
        axis.setRange(*axis.range)  # the same range: nothing to draw again
        assert axis.picture is not None
    finally:
        type(axis).generateDrawSpecs = original  # type: ignore[method-assign]


def test_an_edit_refreshes_only_the_fields_it_changed(qtbot, window, dsv3_plan, monkeypatch) -> None:
    """A form row is shown again only when its value, mark, provenance or assumption changed; every row still
    shows what a refresh from scratch shows (value, label, tooltip)."""
    from sapp_gui.forms import fields

    open_and_wait(qtbot, window, [dsv3_plan])
    rows = [row for form in window.forms.forms for row in form.rows.values()]
    described: list[str] = []
    real = fields.describe
    monkeypatch.setattr(fields, "describe", lambda doc, key, assumptions=None: described.append(key) or
                        real(doc, key, assumptions))
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.recompute": "full"}, "edit"))
    assert 0 < len(described) < len(rows) // 4, described

    def shown() -> list[tuple[object, ...]]:
        return [(row.key, row.editor.field_value(), row.label.text(), row.editor.toolTip()) for row in rows]

    for changes in ({"strategy.tp": 8}, {"strategy.pp": 8}, {"strategy.micro_batch_size": 2}):
        edit_and_wait(qtbot, window, lambda c=changes: window.edit(dict(c), "edit"))
        before = shown()
        for row in rows:
            row.retranslate()  # forget what was shown: the next refresh redraws every row
        window.forms.refresh(window.forms.assumptions)
        assert shown() == before, changes


def test_a_resize_places_the_labels_before_the_paint(qtbot, window, dsv3_plan) -> None:
    """The stage chart places its labels when its view is resized, not a turn later (a timer did, which painted
    the chart a second time on every edit that shows or hides the fixes bar above it)."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    open_and_wait(qtbot, window, [dsv3_plan])
    settled(qtbot, window)
    chart = window.chart
    labels = [chart.peak_label, chart.capacity_line.label, chart.budget_line.label]

    def placed() -> list[tuple[object, ...]]:
        return [(label.pos(), label.isVisible(), tuple(getattr(label, "anchors", [()])[0])) for label in labels]

    for height in (520, 300, 700):
        window.resize(1400, height + 200)
        for _ in range(8):  # the layouts, without running timers or painting
            QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        before = placed()
        chart.declutter()
        assert placed() == before, height


def test_a_strategy_edit_keeps_the_device_figures(qtbot, window, dsv3_plan, monkeypatch) -> None:
    """The Hardware form's figures (one line per device figure, with its source) are written again only for
    another device or framework, or in another language; a strategy edit keeps them."""
    from estimator.units import GiB
    from sapp_gui.forms import hardware

    open_and_wait(qtbot, window, [dsv3_plan])
    form = window.forms.hardware
    made: list[object] = []
    real = hardware.device_figures
    monkeypatch.setattr(hardware, "device_figures", lambda *args: made.append(args) or real(*args))
    before = form.figures_label.text()
    edit_and_wait(qtbot, window, lambda: window.edit({"strategy.tp": 8}, "tp"))
    assert not made and form.figures_label.text() == before
    edit_and_wait(qtbot, window, lambda: window.edit({"hardware.capacity": 60 * GiB}, "capacity"))
    assert made and "60.00 GiB" in form.figures_label.text()
    window.set_language("zh_CN")
    assert form.figures_label.text() != before and "60.00 GiB" in form.figures_label.text()
