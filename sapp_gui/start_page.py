"""The page shown when nothing is open: drop hint, Open…, the bundled examples and the recent files."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from estimator.limits import MAX_DEVICES

from . import language
from .compact import scrolling
from .language import translate
from .resources import Example, load_examples


class TwoLineDelegate(QStyledItemDelegate):
    """List items whose text is ``title\ndescription``: the title in bold, the description in grey below."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        title, _, description = str(index.data(Qt.ItemDataRole.DisplayRole) or "").partition("\n")
        opt.text = ""
        style = opt.widget.style() if opt.widget else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        rect = opt.rect.adjusted(6, 3, -6, -3)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        painter.save()
        bold = QFont(opt.font)
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(opt.palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text))
        metrics = QFontMetrics(bold)
        painter.drawText(rect.left(), rect.top() + metrics.ascent(),
                         metrics.elidedText(title, Qt.TextElideMode.ElideRight, rect.width()))
        if description:
            painter.setFont(opt.font)
            if not selected:
                painter.setPen(QColor("#5a5a5a"))
            plain = QFontMetrics(opt.font)
            painter.drawText(rect.left(), rect.top() + metrics.height() + plain.ascent(),
                             plain.elidedText(description, Qt.TextElideMode.ElideRight, rect.width()))
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        lines = 2 if "\n" in str(index.data(Qt.ItemDataRole.DisplayRole) or "") else 1
        return QSize(size.width(), QFontMetrics(option.font).height() * lines + 10)


class StartPage(QWidget):
    open_requested = Signal(list, dict)    # paths, open arguments ({"devices": 256})
    open_dialog_requested = Signal()

    def __init__(self, examples_folder: Path | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("startPage")
        self.examples_folder = examples_folder
        title = QLabel("SAPP Planner")  # the product's name: never translated
        font = QFont(self.font())
        font.setPointSizeF(self.font().pointSizeF() * 2.0)
        font.setBold(True)
        title.setFont(font)
        self.subtitle = subtitle = QLabel()
        subtitle.setWordWrap(True)
        self.open_button = QPushButton()
        self.open_button.setObjectName("open")
        self.open_button.clicked.connect(self.open_dialog_requested)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setProperty("sappRole", "banner")
        self.message.setVisible(False)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._retry: tuple[list[str], dict] | None = None
        self.retry_box = QWidget()
        retry_row = QHBoxLayout(self.retry_box)
        retry_row.setContentsMargins(0, 0, 0, 0)
        self.devices_label = devices_label = QLabel()
        self.devices = QSpinBox()
        self.devices.setObjectName("devices")
        self.devices.setRange(1, MAX_DEVICES)
        self.devices.setValue(8)
        devices_label.setBuddy(self.devices)
        self.retry_button = QPushButton()
        self.retry_button.setObjectName("retry")
        self.retry_button.clicked.connect(self._retry_open)
        retry_row.addWidget(devices_label)
        retry_row.addWidget(self.devices)
        retry_row.addWidget(self.retry_button)
        retry_row.addStretch(1)
        self.retry_box.setVisible(False)

        self.examples = QListWidget()
        self.examples.setObjectName("examples")

        self.examples.setItemDelegate(TwoLineDelegate(self.examples))
        self.examples.itemActivated.connect(self._activate)
        self.examples.itemDoubleClicked.connect(self._activate)
        self.recent = QListWidget()
        self.recent.setObjectName("recent")

        self.recent.setItemDelegate(TwoLineDelegate(self.recent))
        self.recent.itemActivated.connect(self._activate)
        self.recent.itemDoubleClicked.connect(self._activate)

        grid = QGridLayout()
        self.examples_label = examples_label = QLabel()
        examples_label.setBuddy(self.examples)
        self.recent_label = recent_label = QLabel()
        recent_label.setBuddy(self.recent)
        grid.addWidget(examples_label, 0, 0)
        grid.addWidget(recent_label, 0, 1)
        grid.addWidget(self.examples, 1, 0)
        grid.addWidget(self.recent, 1, 1)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 2)

        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addStretch(1)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(40, 30, 40, 30)
        layout.addWidget(title)
        layout.addWidget(subtitle)
        layout.addSpacing(8)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addWidget(self.retry_box)
        layout.addSpacing(8)
        layout.addLayout(grid, 1)
        outer = QVBoxLayout(self)  # scrolls on a small window instead of setting its minimum size (issue 12)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scrolling(body, "startScroll"))
        self._recent: list[tuple[list[str], dict]] = []
        self.retranslate()

    def retranslate(self) -> None:
        self.subtitle.setText(translate("StartPage", "Drop a training config anywhere on this window (several files "
                                                     "together: "
                                             "a launch script with its model.json, a TOML with its config.json), or "
                                             "open one. Every pipeline stage's memory is shown against the device, "
                                             "and you can try other parallel degrees, search the strategy space, "
                                             "balance the pipeline and see the schedule."))
        self.open_button.setText(translate("StartPage", "&Open config…"))
        self.devices_label.setText(translate("StartPage", "This config does not state the device count. &Devices:"))
        self.retry_button.setText(translate("StartPage", "Open with this device count"))
        self.examples.setAccessibleName(translate("StartPage", "Bundled examples"))
        self.recent.setAccessibleName(translate("StartPage", "Recent files"))
        self.examples_label.setText(translate("StartPage", "&Examples (written in the frameworks' own formats; "
                                                           "export works "
                                                   "on them)"))
        self.recent_label.setText(translate("StartPage", "&Recent"))
        self.reload_examples()
        self.set_recent(self._recent)

    def reload_examples(self) -> list[Example]:
        self.examples.clear()
        found = load_examples(self.examples_folder, language.current())
        for example in found:
            text = example.title + (f"\n{example.description}" if example.description else "")
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, ([str(p) for p in example.paths], example.open_args()))
            item.setToolTip("\n".join(str(p) for p in example.paths))
            self.examples.addItem(item)
        if not found:
            item = QListWidgetItem(translate("StartPage", "No bundled examples found."))
            item.setData(Qt.ItemDataRole.UserRole, ([], {}))  # never read an unset role (see forms/fields.py)
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.examples.addItem(item)
        return found

    def set_recent(self, entries: list[tuple[list[str], dict]]) -> None:
        self._recent = list(entries)
        self.recent.clear()
        for paths, args in entries:
            extra = "  " + translate("StartPage", "({0} devices)").format(args["devices"]) if args.get("devices") \
                else ""
            folder = str(Path(paths[0]).parent)
            item = QListWidgetItem(" + ".join(Path(p).name for p in paths) + extra + "\n" + folder)
            item.setData(Qt.ItemDataRole.UserRole, (paths, args))
            item.setToolTip("\n".join(paths))
            self.recent.addItem(item)
        if not entries:
            item = QListWidgetItem(translate("StartPage", "Nothing opened yet."))
            item.setData(Qt.ItemDataRole.UserRole, ([], {}))
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.recent.addItem(item)

    def show_message(self, text: str, retry: tuple[list[str], dict] | None = None) -> None:
        """An open error; with ``retry`` the device-count row offers to open the same files again."""
        self.message.setText(text)
        self.message.setVisible(bool(text))
        self._retry = retry
        self.retry_box.setVisible(retry is not None)
        if retry is not None:
            self.devices.setFocus()

    def _retry_open(self) -> None:
        if self._retry is not None:
            paths, args = self._retry
            self.open_requested.emit(list(paths), {**args, "devices": self.devices.value()})

    def _activate(self, item: QListWidgetItem) -> None:
        paths, args = item.data(Qt.ItemDataRole.UserRole)
        if paths:
            self.open_requested.emit(list(paths), dict(args))
