"""The app under hostile input (issue 16): a model name with HTML is shown as text, never rendered; a value at the
top of a field's bound is shown as it is (a spin box never clamps it); bad drops end in seconds with the rule's
message on the --screenshot path, inside a memory limit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gui_helpers import DENSE_PLAN, open_and_wait

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hostile"))
from hostile_harness import GUI_MEMORY, gui, run_cases

from estimator.limits import MAX_MESSAGE_CHARS

HOSTILE_NAME = "<b>BOLD</b><i>it</i> &amp; <img src=x>"


def _shown_text(label) -> str:  # type: ignore[no-untyped-def]
    """What a QLabel shows, as plain text (rich text rendered the way Qt renders it)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import Qt as GuiQt
    from PySide6.QtGui import QTextDocument

    text = label.text()
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(text))
    if not rich:
        return text
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


def test_a_model_name_with_html_is_shown_as_text(qtbot, window, tmp_path: Path) -> None:
    from PySide6.QtWidgets import QLabel, QWidget

    plan = tmp_path / "html.plan.yaml"
    plan.write_text(DENSE_PLAN.replace("name: test-dense-8b", f"name: {HOSTILE_NAME!r}"), encoding="utf-8")
    open_and_wait(qtbot, window, [plan])
    labels = [w for w in window.findChildren(QLabel) if "BOLD" in w.text()]
    assert labels, "the model name is shown somewhere"
    for label in labels:
        assert HOSTILE_NAME in _shown_text(label), f"{label.objectName() or label}: {label.text()!r} is rendered"
    for widget in window.findChildren(QWidget):
        tip = widget.toolTip()
        if "BOLD" in tip:
            from PySide6.QtGui import Qt as GuiQt

            assert not GuiQt.mightBeRichText(tip) or "&lt;b&gt;BOLD" in tip, f"tooltip {tip!r}"


def test_the_markdown_report_escapes_the_model_name(tmp_path: Path) -> None:
    from estimator.estimate import estimate
    from estimator.formats import parse
    from estimator.reports import render_html, render_markdown

    plan = tmp_path / "html.plan.yaml"
    plan.write_text(DENSE_PLAN.replace("name: test-dense-8b", f"name: {HOSTILE_NAME!r}"), encoding="utf-8")
    parsed = parse([plan])
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    markdown = render_markdown(parsed, result, "chart.svg")
    assert "<b>" not in markdown and "<img" not in markdown and "&lt;b&gt;BOLD&lt;/b&gt;" in markdown
    assert markdown.splitlines()[0].startswith("# &lt;b&gt;BOLD")
    assert "<b>BOLD" not in render_html(parsed, result)


def test_a_value_at_the_top_of_its_bound_is_shown_unclamped(qtbot, window, tmp_path: Path) -> None:
    from estimator.limits import MAX_SEQ_LENGTH, MAX_VOCAB
    from sapp_gui.forms.fields import IntEditor

    plan = tmp_path / "big.plan.yaml"
    plan.write_text(DENSE_PLAN.replace("vocab_size: 128256", f"vocab_size: {MAX_VOCAB}"), encoding="utf-8")
    open_and_wait(qtbot, window, [plan])
    vocab = next(e for e in window.findChildren(IntEditor) if e.objectName() == "vocab_size")
    assert vocab.value() == MAX_VOCAB == vocab.maximum()
    seq = next(e for e in window.findChildren(IntEditor) if e.objectName() == "seq_length")
    assert seq.maximum() == MAX_SEQ_LENGTH


def test_every_integer_editor_reaches_its_field_bound(window) -> None:
    from estimator.limits import bound_of
    from sapp_gui.forms.fields import QT_INT_MAX, IntEditor

    editors = window.findChildren(IntEditor)
    assert len(editors) > 15
    for editor in editors:
        key = editor.key
        assert editor.maximum() == bound_of(key, int).high <= QT_INT_MAX, key


@pytest.fixture(scope="module")
def drops(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import os

    root = tmp_path_factory.mktemp("drops")
    out = {}
    bomb = "[" + ", ".join(["&a0 [" + ", ".join(["lol"] * 10) + "]"] +
                           [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]) + "]"
    for name, text in (("bomb.yaml", DENSE_PLAN.replace("name: test-dense-8b", f"name: {bomb}")),
                       ("vocab.yaml", DENSE_PLAN.replace("vocab_size: 128256", "vocab_size: 1099511627776")),
                       ("seq.yaml", DENSE_PLAN.replace("seq_length: 4096", "seq_length: 2147483648")),
                       ("digits.yaml", DENSE_PLAN + "\n# the next key is unknown\n" + "x: " + "9" * 5001 + "\n"),
                       ("date.yaml", DENSE_PLAN + "\nrun_date: 2024-02-30\n")):
        (root / name).write_text(text, encoding="utf-8")
        out[name] = root / name
    for i in range(31):
        (root / f"d{i}.yaml").write_text(f"base_config: [d{i + 1}.yaml, d{i + 1}.yaml]\n" if i < 30 else "{}\n")
    mindformers = (Path(__file__).resolve().parents[2] / "resources" / "examples" / "mindformers_llama3_70b.yaml")
    (root / "diamond.yaml").write_text("base_config: [d24.yaml]\n" + mindformers.read_text(), encoding="utf-8")
    script = mindformers.with_name("mindspeed_qwen3_32b_pretrain.sh").read_text()
    (root / "doubling.sh").write_text("X=ab\n" + "X=$X$X\n" * 40 + script, encoding="utf-8")
    out["doubling.sh"] = root / "doubling.sh"
    out["diamond.yaml"] = root / "diamond.yaml"
    os.mkfifo(root / "fifo.yaml")
    out["fifo.yaml"] = root / "fifo.yaml"
    return out


# what each bad file ends with, in the app as in the CLI: the rule's message
BAD_DROPS = {
    "bomb.yaml": r"bomb\.yaml:\d+:\d+: this value expands to more than 1,000,000 values",
    "vocab.yaml": r"vocab\.yaml, key 'model\.vocab_size': .*at most 16,777,216",
    "seq.yaml": r"seq\.yaml, key 'strategy\.seq_length': .*at most 134,217,728",
    "digits.yaml": r"digits\.yaml:\d+:\d+: an integer written with 5,001 characters",
    "date.yaml": r"date\.yaml:\d+:\d+: malformed YAML: '2024-02-30' is not a date",
    "diamond.yaml": r"d\d+\.yaml, key 'base_config': .*more than 64 files",
    "fifo.yaml": r"fifo\.yaml: is a named pipe \(FIFO\)",
    "doubling.sh": r"doubling\.sh:\d+, key 'X': a variable expands to more than 1 MiB",
    "/dev/zero": r"/dev/zero: is a character device",
}


def _problems(outcomes: dict, expected_rc: int = 1) -> list[str]:
    import re

    problems = []
    for name, pattern in BAD_DROPS.items():
        got = outcomes[name]
        if not got.clean or got.rc != expected_rc or not re.search(pattern, got.stderr):
            problems.append(got.describe())
        elif got.stderr_chars > MAX_MESSAGE_CHARS + 2000:  # the message shown stays readable (was 140 MB)
            problems.append(f"{name}: a message of {got.stderr_chars:,} characters")
    return problems


def test_bad_files_by_screenshot_end_in_seconds_with_the_rule(drops: dict[str, Path], tmp_path: Path) -> None:
    """The app's --screenshot path under a 3 GiB memory limit and 20 s per case: the message, and a picture of it."""
    cases = [gui(name, str(drops.get(name, name)), "--screenshot", str(tmp_path / f"{k}.png"), "--size", "800x600")
             for k, name in enumerate(BAD_DROPS)]
    problems = _problems(run_cases(cases, memory=GUI_MEMORY))
    problems += [f"{name}: no screenshot of the message" for k, name in enumerate(BAD_DROPS)
                 if not (tmp_path / f"{k}.png").is_file()]
    assert not problems, "\n".join(problems)


def test_bad_files_dropped_on_the_window_end_in_seconds_with_the_rule(drops: dict[str, Path]) -> None:
    """A drop on the window (drag-enter + drop events, tests/hostile/hostile_drop.py) under the same limits: the
    open fails with the rule's message, and the window answers throughout (never blocked for 2 s)."""
    good = drops["vocab.yaml"].with_name("good.yaml")
    good.write_text(DENSE_PLAN, encoding="utf-8")
    cases = [{"name": name, "kind": "call", "call": "hostile_drop:drop_files", "args": [str(drops.get(name, name))]}
             for name in BAD_DROPS]
    cases.append({"name": "good", "kind": "call", "call": "hostile_drop:drop_files", "args": [str(good)]})
    outcomes = run_cases(cases, memory=GUI_MEMORY)
    problems = _problems(outcomes)
    assert outcomes["good"].clean and outcomes["good"].rc == 0, outcomes["good"].describe()  # the drop is real
    assert not problems, "\n".join(problems)


def test_a_search_space_too_large_is_refused_with_its_count(qtbot, window, dsv3_plan) -> None:
    """The candidate count is estimated before anything is built; the panel says it and how to narrow."""
    open_and_wait(qtbot, window, [dsv3_plan])
    panel = window.workspace_tabs.search
    window.show_tab("search")
    panel.space.set_dims({name: "auto" for name in ("tp", "pp", "cp", "ep", "vpp", "mbs", "os", "sp", "rec")})
    panel.space.devices.setValue(720720)
    panel.space.global_batch.setValue(720720)
    with qtbot.waitSignal(panel.status, timeout=60000) as blocker:
        assert window.run_search() is not None
    assert "more than the 3,000,000 that are searched at once" in blocker.args[0]
    assert "narrow it" in panel.summary.text()
