"""Recent files (QSettings) and user device presets (YAML in the user's config folder)."""

from __future__ import annotations

from pathlib import Path

import yaml
from gui_helpers import edit_and_wait, open_and_wait
from PySide6.QtCore import Qt

from estimator.units import GiB


def test_recent_files_persist_and_reopen(qtbot, make_window, dsv3_plan: Path, dense_plan: Path,
                                         tmp_path: Path) -> None:
    settings_file = tmp_path / "shared-settings.ini"
    first = make_window(settings_file)
    open_and_wait(qtbot, first, [dsv3_plan])
    open_and_wait(qtbot, first, [dense_plan])
    assert [e[0] for e in first.settings.recent()] == [[str(dense_plan.resolve())], [str(dsv3_plan.resolve())]]
    first.close()

    second = make_window(settings_file)  # a new session reads the same settings
    menu = second.actions_.recent_menu
    actions = [a for a in menu.actions() if a.text() and not a.isSeparator()]
    assert actions[0].text().endswith(dense_plan.name) and actions[1].text().endswith(dsv3_plan.name)
    recent = second.start_page.recent
    assert recent.item(0).text().startswith(dense_plan.name)
    with qtbot.waitSignal(second.estimate_drawn, timeout=20000):
        actions[1].trigger()
    assert second.doc.paths == (str(dsv3_plan.resolve()),)
    assert second.settings.recent()[0][0] == [str(dsv3_plan.resolve())]  # moved to the top

    dense_plan.unlink()  # a recent file that is gone is dropped from the list with a message
    assert second.open_recent([str(dense_plan.resolve())]) is False
    assert [str(dense_plan.resolve())] not in [e[0] for e in second.settings.recent()]


def test_window_layout_persists(qtbot, make_window, dense_plan: Path, tmp_path: Path) -> None:
    settings_file = tmp_path / "layout.ini"
    first = make_window(settings_file)
    assert first.forms_dock.isHidden()  # the start page has the whole window
    open_and_wait(qtbot, first, [dense_plan])
    assert not first.forms_dock.isHidden()
    first.notes_dock.hide()
    first.close()
    second = make_window(settings_file)
    open_and_wait(qtbot, second, [dense_plan])
    assert second.notes_dock.isHidden() and not second.explain_dock.isHidden()
    second.reset_layout()
    assert not second.notes_dock.isHidden()


def test_user_preset_created_from_the_hardware_form(qtbot, make_window, dense_plan: Path, tmp_path: Path) -> None:
    presets = tmp_path / "presets"
    window = make_window(presets_dir=presets)
    open_and_wait(qtbot, window, [dense_plan])
    edit_and_wait(qtbot, window, lambda: window.edit({"hardware.capacity": 60 * GiB}, "capacity"))
    form = window.forms.hardware
    window.forms.setCurrentIndex(window.forms.forms.index(form))
    form.preset_name.setText("A2-60G")
    with qtbot.waitSignal(window.estimate_drawn, timeout=20000):
        qtbot.mouseClick(form.save_button, Qt.MouseButton.LeftButton)
    path = presets / "A2-60G.yaml"
    assert path.is_file()
    data = yaml.safe_load(path.read_text())
    assert data["id"] == "A2-60G" and data["capacity"] == "61440MiB"
    assert window.doc.parsed.hardware.id == "A2-60G"  # the window switched to the new preset
    labels = [form.device.itemText(i) for i in range(form.device.count())]
    assert any(label.startswith("A2-60G") and "(user)" in label for label in labels)
    assert any(label.startswith("H100-80G") for label in labels)  # beside the shipped presets

    other = make_window(tmp_path / "other.ini", presets_dir=presets)  # persists across sessions
    open_and_wait(qtbot, other, [dense_plan])
    assert "A2-60G" in other.forms.hardware.device.values()
    index = other.forms.hardware.device.find_value("A2-60G")
    with qtbot.waitSignal(other.estimate_drawn, timeout=20000) as blocker:
        other.forms.hardware.device.setCurrentIndex(index)
        other.forms.hardware.device.activated.emit(index)
    assert blocker.args[0].capacity == 60 * GiB


def test_a_broken_user_preset_does_not_block_opening(qtbot, make_window, dense_plan: Path, tmp_path: Path) -> None:
    presets = tmp_path / "broken-presets"
    presets.mkdir()
    (presets / "bad.yaml").write_text("id: [unclosed\n")
    window = make_window(presets_dir=presets)
    open_and_wait(qtbot, window, [dense_plan])
    assert any("user presets ignored" in line for line in window.notes.lines())


def test_user_family_profiles_take_part_and_a_broken_one_is_named(qtbot, make_window, dense_plan: Path,
                                                                  tmp_path: Path) -> None:
    from estimator import profiles

    config = tmp_path / "cfg"
    (config / "profiles").mkdir(parents=True)
    baseline = open_and_wait(qtbot, make_window(), [dense_plan]).parameters_total
    # an edited copy of the shipped default profile (the same name replaces it): LayerNorm, two vectors per norm
    edited = profiles.get_profile("default").to_dict()
    text = profiles.profile_yaml(profiles.FamilyProfile.from_dict({**edited, "norm": "layer"}))
    (config / "profiles" / "default.yaml").write_text(text)
    try:
        window = make_window(presets_dir=config / "presets")
        assert window.profile_problem == ""
        result = open_and_wait(qtbot, window, [dense_plan])
        norms = 2 * 32 + 1  # two per layer and the final one, hidden 4096 wide
        assert result.parameters_total == baseline + norms * 4096
    finally:
        if config / "profiles" in profiles._USER_DIRS:
            profiles._USER_DIRS.remove(config / "profiles")
        profiles.all_profiles.cache_clear()
    broken = tmp_path / "broken"
    (broken / "profiles").mkdir(parents=True)
    (broken / "profiles" / "x.yaml").write_text("name: x\nno_such_field: 1\n")
    window = make_window(presets_dir=broken / "presets")
    open_and_wait(qtbot, window, [dense_plan])
    assert any("user profiles ignored" in line and "no_such_field" in line for line in window.notes.lines())


def test_hardware_form_shows_where_each_figure_comes_from(qtbot, make_window, dense_plan: Path) -> None:
    window = make_window()
    open_and_wait(qtbot, window, [dense_plan])
    form = window.forms.hardware
    text = form.figures_label.text()
    assert "device memory: 64.00 GiB" in text and "vendor document" in text and "<b>provisional</b>" in text
    assert "cross_platform_migration_guide" in text  # the vendor document is a link
    edit_and_wait(qtbot, window, lambda: window.edit({"hardware.capacity": 60 * GiB}, "capacity"))
    assert "device memory: 60.00 GiB — edited" in form.figures_label.text()
