"""Screenshots of every analysis panel, in English and in Simplified Chinese, on the DeepSeek-V3 MindFormers
example at the default window size (PNG under tests/artifacts/, git-ignored; look at them after a change)."""

from __future__ import annotations

import pytest
from gui_helpers import MF_DSV3, open_and_wait, run_search, save_shot

from sapp_gui import language


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_screenshots_of_the_panels(qtbot, window, lang) -> None:
    if lang != "en" and not language.has_font_for(lang):
        pytest.skip("no CJK font installed (fonts-noto-cjk or fonts-wqy-microhei)")
    window.set_language(lang)
    open_and_wait(qtbot, window, [MF_DSV3])
    tabs = window.workspace_tabs
    shots = {"memory": save_shot(window, f"gui_panel_memory_{lang}")}
    run_search(qtbot, window, {"tp": "auto", "pp": "auto", "rec": "auto"})
    shots["search"] = save_shot(window, f"gui_panel_search_{lang}")
    panel = tabs.search
    compare = tabs.compare
    window.compare_current()
    panel.select_row(0)
    panel.compare_selected()
    panel.select_row(min(2, len(panel.rows) - 1))
    with qtbot.waitSignal(compare.compared, timeout=30000):
        panel.compare_selected()
    window.show_tab("compare")
    qtbot.waitUntil(lambda: compare.chart.isVisible(), timeout=5000)
    shots["compare"] = save_shot(window, f"gui_panel_compare_{lang}")
    balance = tabs.balance
    with qtbot.waitSignal(balance.balanced, timeout=120000):
        window.run_balance()
    shots["balance"] = save_shot(window, f"gui_panel_balance_{lang}")
    with qtbot.waitSignal(tabs.schedule.drawn, timeout=60000):
        window.show_tab("schedule")
    shots["schedule"] = save_shot(window, f"gui_panel_schedule_{lang}")
    window.show_tab("search")
    qtbot.waitUntil(lambda: panel.isVisible(), timeout=5000)
    shots["pareto"] = save_shot(panel.pareto, f"gui_chart_pareto_{lang}")
    for name, path in shots.items():
        assert path.stat().st_size > (8_000 if name == "pareto" else 20_000), name


def test_start_page_in_chinese(qtbot, window) -> None:
    if not language.has_font_for("zh_CN"):
        pytest.skip("no CJK font installed (fonts-noto-cjk or fonts-wqy-microhei)")
    window.set_language("zh_CN")
    titles = [window.start_page.examples.item(i).text() for i in range(window.start_page.examples.count())]
    assert any("昇腾" in t for t in titles)  # the examples index has Chinese titles
    assert window.start_page.open_button.text() == "打开配置文件(&O)…"
    assert save_shot(window, "gui_start_page_zh_CN").stat().st_size > 20_000
