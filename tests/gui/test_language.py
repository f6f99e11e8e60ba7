"""The interface in Simplified Chinese: View ▸ Language switches the visible texts now (menus, tabs, tiles, forms,
docks) and back, the choice is remembered, "system" follows the locale, and the shipped translation covers
every marked string (checked against a fresh pyside6-lupdate run)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from gui_helpers import open_and_wait, type_into

from sapp_gui import i18n_build, language


def texts(window) -> dict[str, str]:
    acts = window.actions_
    return {"file": acts.menus["file"].title(), "analysis": acts.menus["analysis"].title(),
            "open": acts.open.text(), "tab": window.workspace_tabs.tabText(1),
            "verdict": window.summary.verdict.caption.text(), "dock": window.forms_dock.windowTitle(),
            "tp_tip": window.forms.row("strategy.tp").editor.toolTip(),
            "run": window.workspace_tabs.search.run_button.text(),
            "legend": window.chart.legend.text().replace("\u2060", ""), "memory_tab": window.forms.tabText(1)}


def test_switch_to_chinese_and_back(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    english = texts(window)
    assert english["file"] == "&File" and english["tab"] == "Search" and english["verdict"] == "Verdict"
    window.actions_.language_actions["zh_CN"].trigger()
    chinese = texts(window)
    assert language.current() == "zh_CN"
    assert chinese["file"] == "文件(&F)"
    assert chinese["analysis"] == "分析(&A)"
    assert chinese["open"] == "打开(&O)…"
    assert chinese["tab"] == "搜索"
    assert chinese["verdict"] == "结论"
    assert chinese["dock"] == "策略"
    assert chinese["run"] == "运行搜索(&R)"
    assert "张量并行度" in chinese["tp_tip"]
    assert "激活值" in chinese["legend"] and "优化器状态" in chinese["legend"]
    assert chinese["memory_tab"] == "显存(&M)"
    assert window.summary.verdict.value.text() == "满足预算"
    assert window.actions_.language_actions["zh_CN"].isChecked()
    assert window.settings.language() == "zh_CN"
    window.actions_.language_actions["en"].trigger()
    assert texts(window) == english
    assert window.settings.language() == "en"


def test_the_language_setting_is_used_by_a_new_window(qtbot, make_window, tmp_path, monkeypatch) -> None:
    from sapp_gui.settings import Settings

    settings_file = tmp_path / "lang.ini"
    Settings.at(settings_file).set_language("zh_CN")
    window = make_window(settings_file)
    assert window.actions_.menus["file"].title() == "文件(&F)"
    assert window.start_page.open_button.text() == "打开配置文件(&O)…"
    language.apply(language.ENGLISH)
    # "system" follows the locale (SAPP_LANG stands in for it here)
    monkeypatch.setenv("SAPP_LANG", "zh_CN")
    assert language.resolve("system") == "zh_CN"
    monkeypatch.setenv("SAPP_LANG", "de_DE")
    assert language.resolve("system") == "en"
    monkeypatch.delenv("SAPP_LANG")
    from PySide6.QtCore import QLocale

    assert language.system_language(QLocale(QLocale.Language.Chinese, QLocale.Country.China)) == "zh_CN"
    assert language.system_language(QLocale(QLocale.Language.English, QLocale.Country.UnitedStates)) == "en"


def test_the_shipped_translation_is_complete_and_compiled(tmp_path) -> None:
    assert language.available() == ["en", "zh_CN"]
    assert i18n_build.problems("zh_CN") == []
    lupdate = Path(sys.executable).with_name("pyside6-lupdate")
    if not lupdate.is_file() and not shutil.which("pyside6-lupdate"):
        pytest.skip("pyside6-lupdate is not installed")
    fresh = tmp_path / "fresh.ts"
    shutil.copy(i18n_build.ts_path("zh_CN"), fresh)
    i18n_build.update("zh_CN", ts=fresh)  # every string marked in the code now, merged into the shipped ones
    unfinished = [(m.context, m.source) for m in i18n_build.messages(fresh) if not m.finished]
    assert unfinished == [], f"untranslated strings: {unfinished[:10]}"


def test_a_chinese_font_is_installed() -> None:
    # scripts/bootstrap.sh installs fonts-wqy-microhei; without a CJK font the Chinese interface shows boxes
    assert language.has_font_for("zh_CN"), "no CJK font: run scripts/bootstrap.sh (installs fonts-wqy-microhei)"


def test_the_estimators_own_words_follow_the_interface_language(qtbot, window, dsv3_plan, tmp_path) -> None:
    """Warnings, assumptions, Explain headings and errors: in Chinese when the app is, English again after."""
    result = open_and_wait(qtbot, window, [dsv3_plan])
    window.chart.select(result.peak_stage, "activations")
    qtbot.waitUntil(lambda: window.explain.quantity is not None, timeout=20000)
    english = [window.notes.item(i).text() for i in range(window.notes.count())]
    assert window.explain.tree.topLevelItem(0).text(0) == "activations"
    assumptions = window.notes._last["assumptions"]
    assert any(a.catalogued is not None for a in assumptions)

    window.actions_.language_actions["zh_CN"].trigger()
    qtbot.waitUntil(lambda: window.explain.quantity is not None, timeout=20000)
    chinese = [window.notes.item(i).text() for i in range(window.notes.count())]
    for assumption in assumptions:
        assert assumption.localized("zh_CN") in chinese
    assert [line for line in chinese if line not in english and re.search("[\u4e00-\u9fff]", line)]
    assert window.explain.tree.topLevelItem(0).text(0) == "激活值"
    assert window.explain.quantity.label == "activations"  # what the JSON and the app's lookups use
    broken = tmp_path / "broken.toml"
    broken.write_text("[training]\nsteps = [\n", encoding="utf-8")
    with qtbot.waitSignal(window.open_failed, timeout=20000) as blocker:
        window.open_paths([str(broken)])
    assert "TOML 格式错误" in blocker.args[0]

    window.actions_.language_actions["en"].trigger()
    qtbot.waitUntil(lambda: window.explain.quantity is not None, timeout=20000)
    assert window.explain.tree.topLevelItem(0).text(0) == "activations"
    assert [window.notes.item(i).text() for i in range(window.notes.count())] == english


def test_a_fields_error_is_said_in_the_interface_language(qtbot, window, dsv3_plan) -> None:
    open_and_wait(qtbot, window, [dsv3_plan])
    window.actions_.language_actions["zh_CN"].trigger()
    tp = window.forms.row("strategy.tp")
    type_into(qtbot, tp.editor, "3")  # refused: dp would not be an integer
    assert "不是整数" in tp.error.text()
    type_into(qtbot, tp.editor, "4")
    ep = window.forms.row("strategy.ep")
    with qtbot.waitSignal(window.estimate_failed, timeout=20000):
        type_into(qtbot, ep.editor, "3")  # priced and refused by a rule
    assert "[R-EP-EXP] EP 3 不能整除 256 个专家" in ep.error.text()
    assert "R-EP-EXP" in window.banner.text() and "不能整除" in window.banner.text()
