"""The plan session without Qt: edits under the hold rules, per-stage rescaling, undo/redo over immutable
states, change events, the freshness of what is shown, the pinned baseline, the compare set and the validated
export (a plan the validator rejects is never written)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from estimator.cli import main as cli_main
from estimator.errors import SappError
from estimator.estimate import estimate
from estimator.formats import parse
from estimator.parsed import apply_changes
from estimator.session import (
    CURRENT,
    FAILED,
    HOLD_DP,
    MAX_COMPARED,
    NOTHING,
    PENDING,
    REJECTED_EDIT,
    EditError,
    ExportRefused,
    PlanSession,
    PlanState,
    targets_for,
)
from estimator.session.edits import layout_notes
from estimator.units import GiB

ROOT = Path(__file__).resolve().parents[1]
DSV3_PLAN = ROOT / "resources" / "examples" / "deepseek_v3_671b.plan.yaml"


@pytest.fixture
def plan_copy(tmp_path: Path) -> Path:
    path = tmp_path / DSV3_PLAN.name
    shutil.copy(DSV3_PLAN, path)
    return path


@pytest.fixture
def session(plan_copy: Path) -> PlanSession:
    s = PlanSession()
    s.open([plan_copy])
    return s


def price(s: PlanSession):
    p = s.parsed
    return estimate(p.model, p.strategy, p.hardware, p.options)


# ------------------------------------------------------------------------------------------ hold rules
def test_tp_edit_keeps_devices_and_batch(session: PlanSession) -> None:
    state = session.apply({"strategy.tp": 8}, "tp 8")
    st = state.parsed.strategy
    assert (st.tp, st.dp, st.micro_batches) == (8, 8, 64)
    assert (st.world_size, st.global_batch_size) == (1024, 512)
    assert session.mark("strategy.tp") == "edited"
    assert session.mark("strategy.dp") == "derived"
    assert session.mark("strategy.pp") is None
    assert session.is_modified()
    assert session.parsed.provenance["strategy.dp"].source == "derived"


def test_hold_dp_lets_the_device_count_follow(session: PlanSession) -> None:
    session.set_hold(HOLD_DP)
    st = session.propose({"strategy.tp": 8}).parsed.strategy
    assert (st.tp, st.dp, st.world_size, st.global_batch_size) == (8, 16, 2048, 512)
    with pytest.raises(SappError):
        session.set_hold("devices")


def test_a_refused_edit_names_the_field_and_changes_nothing(session: PlanSession) -> None:
    before = session.state
    events = []
    session.subscribe(events.append)
    with pytest.raises(EditError) as info:
        session.apply({"strategy.tp": 3})
    assert "strategy.tp" in info.value.errors and "not an integer" in info.value.errors["strategy.tp"]
    assert session.state is before and not session.can_undo
    assert [e.kind for e in events] == ["rejected"] and events[0].error is info.value
    assert session.freshness().state == REJECTED_EDIT
    session.apply({"strategy.tp": 4})  # the current value typed back: nothing changes, nothing is refused
    assert session.state is before and session.rejected is None
    assert [e.kind for e in events] == ["rejected", "changed"] and events[1].cause == "unchanged"


@pytest.mark.parametrize("change", [{"strategy.pp": 0}, {"strategy.tp": -1}, {"strategy.micro_batch_size": 0}])
def test_degrees_below_one_are_refused_by_name(session: PlanSession, change: dict) -> None:
    with pytest.raises(EditError) as info:
        session.apply(change)
    (key,) = change
    assert key in info.value.errors and "at least 1" in str(info.value)


def test_device_edit_takes_the_preset_capacity_unless_the_capacity_is_edited(session: PlanSession) -> None:
    session.apply({"hardware.device": "H100-80G"})
    from estimator.hardware import find_preset

    h100 = find_preset("H100-80G", session.presets())
    assert session.parsed.hardware.id == "H100-80G" and session.parsed.hardware.capacity == h100.capacity
    assert session.mark("hardware.device") == "edited" and session.mark("hardware.capacity") == "derived"
    session.apply({"hardware.capacity": 70 * GiB})
    assert session.parsed.hardware.capacity == 70 * GiB
    session.apply({"strategy.tp": 8})  # an unrelated edit keeps the edited hardware
    assert session.parsed.hardware.capacity == 70 * GiB
    with pytest.raises(EditError) as info:
        session.apply({"hardware.device": "no-such-device"})
    assert "hardware.device" in info.value.errors


# ---------------------------------------------------------------------------------- per-stage lists
def test_pp_change_rescales_per_stage_lists_as_the_cli_does(session: PlanSession, plan_copy: Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    state = session.apply({"strategy.pp": 8}, "pp 8")
    st = state.parsed.strategy
    assert st.pp == 8 and st.dp == 32
    assert st.offset == (1, 1, 1, 1, 1, 1, 1, -1)
    assert st.recompute.full_counts == (7, 8, 8, 8, 8, 8, 7, 2)  # the same 56 recomputed layers, per stage
    assert sum(st.recompute.full_counts) == 56
    assert len(state.notes) == 2 and str(state.notes[0]).startswith("offset [1, 1,")
    assert session.mark("strategy.offset") == "derived"
    # one rule: the library's apply_changes (what --set runs) gives the same strategy, and the CLI the same bars
    assert apply_changes(parse([plan_copy]), {"strategy.pp": 8}).strategy == st
    assert cli_main(["estimate", str(plan_copy), "--set", "strategy.pp=8", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    result = price(session)
    assert [s["total"] for s in payload["stages"]] == pytest.approx([s.total for s in result.stages], rel=1e-12)
    assert payload["peak_stage"] == result.peak_stage
    warnings = [w["code"] for w in payload["warnings"]]
    assert warnings.count("W-LAYOUT-RESCALED") == 1


def test_the_rescale_warning_is_said_once_however_often_pp_changes(session: PlanSession) -> None:
    for pp in (8, 16, 8, 4):
        session.apply({"strategy.pp": pp})
    codes = [w.code for w in session.parsed.warnings]
    assert codes.count("W-LAYOUT-RESCALED") == 1
    assert "pp 4" in next(str(w) for w in session.parsed.warnings if w.code == "W-LAYOUT-RESCALED")


def test_layout_notes_only_when_the_pipeline_changes(session: PlanSession) -> None:
    st = session.parsed.strategy
    assert layout_notes(st, st) == ()
    assert session.apply({"strategy.tp": 8}).notes == ()


# --------------------------------------------------------------------------------------- undo/redo
def test_undo_redo_walk_immutable_states(session: PlanSession) -> None:
    base = session.state
    a = session.apply({"strategy.tp": 8}, "tp 8")
    b = session.apply({"strategy.micro_batch_size": 2}, "mbs 2")
    assert (session.can_undo, session.can_redo, len(session.history)) == (True, False, 2)
    assert session.history.undo_label == "mbs 2"
    assert session.undo() is a and session.parsed is a.parsed
    assert session.history.redo_label == "mbs 2"
    assert session.undo() is base and not session.can_undo
    assert session.redo() is a and session.redo() is b
    assert base.parsed.strategy.tp == 4 and a.parsed.strategy.tp == 8  # states never change
    session.undo()
    c = session.apply({"strategy.pp": 8}, "pp 8")  # a new edit after an undo drops what could be redone
    assert not session.can_redo and session.history.states == [base, a, c]
    assert isinstance(c, PlanState) and c.label == "pp 8"


def test_reset_to_file_is_one_undoable_step(session: PlanSession) -> None:
    assert session.reset_to_file() is None  # nothing to drop
    session.apply({"strategy.tp": 8})
    session.apply({"strategy.pp": 8})
    reset = session.reset_to_file("reset")
    assert reset is not None and not session.is_modified() and reset.parsed is session.original
    assert session.undo().parsed.strategy.pp == 8


# ------------------------------------------------------------------------------------------- events
def test_events_follow_every_change(session: PlanSession, plan_copy: Path) -> None:
    seen: list[tuple[str, str]] = []
    unsubscribe = session.subscribe(lambda e: seen.append((e.kind, e.cause)))
    session.apply({"strategy.tp": 8})
    session.undo()
    session.redo()
    session.set_hold(HOLD_DP)
    session.record_estimate(session.parsed, result=price(session))
    session.pin()
    session.unpin()
    session.compare_add("current", session.parsed)
    session.open([plan_copy])
    session.close()
    assert seen == [("changed", "edit"), ("changed", "undo"), ("changed", "redo"), ("hold", ""),
                    ("estimated", ""), ("pinned", ""), ("pinned", ""), ("compared", "added"), ("opened", ""),
                    ("closed", "")]
    unsubscribe()
    session.open([plan_copy])
    assert len(seen) == 10


# ------------------------------------------------------------------------------------- freshness
def test_freshness_says_whether_the_shown_estimate_describes_the_plan(session: PlanSession) -> None:
    assert session.freshness().state == NOTHING
    first = session.parsed
    result = price(session)
    assert session.record_estimate(first, result=result)
    assert session.freshness().state == CURRENT and not session.freshness().stale
    session.apply({"strategy.tp": 8})
    fresh = session.freshness()
    assert fresh.state == PENDING and fresh.stale and fresh.shown.parsed is first
    assert not session.record_estimate(first, result=result)  # an older plan's estimate is not the current one
    bad = session.apply({"strategy.ep": 3})  # valid edit, impossible strategy
    assert bad is not None
    with pytest.raises(SappError) as info:
        price(session)
    assert session.record_estimate(session.parsed, error=info.value)
    fresh = session.freshness()
    assert fresh.state == FAILED and "R-EP-EXP" in fresh.reason and fresh.stale
    assert session.current_estimate is None and session.pin() is None  # no baseline from a stale estimate
    session.undo()
    assert session.freshness().state == PENDING
    session.record_estimate(session.parsed, result=price(session))
    assert session.freshness().state == CURRENT


def test_a_new_document_shows_nothing_of_the_previous_one(session: PlanSession, plan_copy: Path) -> None:
    session.record_estimate(session.parsed, result=price(session))
    session.pin()
    session.open([plan_copy])
    assert session.shown is None and session.pinned is None and session.freshness().state == NOTHING


# ----------------------------------------------------------------------------------- baseline/compare
def test_pinned_baseline_and_compare_set(session: PlanSession) -> None:
    session.record_estimate(session.parsed, result=price(session))
    pinned = session.pin()
    assert pinned is not None and session.pinned is pinned
    session.apply({"strategy.tp": 8})
    assert session.pinned is pinned  # the baseline is a snapshot: edits do not move it
    entry = session.compare_add("tp 8", session.parsed)
    assert entry.pending
    session.compare_priced(entry.key, result=price(session))
    assert not session.compared[0].pending and session.compared[0].result is not None
    session.compare_priced(999, error="gone")  # an entry removed meanwhile: ignored
    for k in range(MAX_COMPARED - 1):
        session.compare_add(f"#{k}", None, pinned.result)
    with pytest.raises(SappError, match="at most"):
        session.compare_add("one too many", session.parsed)
    session.compare_remove(entry.key)
    assert len(session.compared) == MAX_COMPARED - 1
    session.compare_clear()
    assert session.compared == ()


# ------------------------------------------------------------------------------------------- export
def test_export_writes_only_a_plan_the_validator_accepts(session: PlanSession, plan_copy: Path) -> None:
    text = plan_copy.read_text()
    session.apply({"strategy.ep": 3})
    with pytest.raises(ExportRefused) as info:
        session.prepare_export()
    assert "R-EP-EXP" in str(info.value) and info.value.violations
    assert plan_copy.read_text() == text and not Path(f"{plan_copy}.bak").exists()
    session.apply({"strategy.ep": 8, "strategy.tp": 8})
    plan = session.prepare_export()
    assert list(plan.files) == [str(plan_copy)] and "tp: 8" in plan.files[str(plan_copy)]
    assert plan.originals[str(plan_copy)] == text


def test_export_checks_the_plan_the_files_will_state(session: PlanSession) -> None:
    """A model edit is not written: the strategy must hold for the files' own model (61 layers + MTP)."""
    session.apply({"model.num_layers": 47, "strategy.offset": [0] * 16})
    price(session)  # 47 layers + MTP = 3 per stage: valid for the edited model
    with pytest.raises(ExportRefused) as info:
        session.prepare_export()  # zero offsets cannot place the files' 62 slots on 16 stages
    assert "E-OFF-SUM" in str(info.value)
    assert "edits of those are not written" in str(info.value) and "model" in str(info.value)


def test_reread_carries_the_edits_an_export_does_not_write(session: PlanSession) -> None:
    session.apply({"hardware.capacity": 60 * GiB, "strategy.tp": 8})
    session.reread()
    assert session.parsed.hardware.capacity == 60 * GiB and session.parsed.strategy.tp == 4
    assert session.mark("hardware.capacity") == "edited" and not session.can_undo


def test_export_targets(tmp_path: Path) -> None:
    one = {"/a/p.yaml": "x"}
    assert targets_for(one, tmp_path) == {str(tmp_path / "p.yaml"): "x"}
    assert targets_for(one, tmp_path / "q.yaml") == {str(tmp_path / "q.yaml"): "x"}
    with pytest.raises(SappError, match="directory"):
        targets_for({"/a/p.sh": "x", "/a/m.json": "y"}, tmp_path / "nope.yaml")
    with pytest.raises(SappError, match=r"the name p\.yaml"):
        targets_for({"/a/p.yaml": "x", "/b/p.yaml": "y"}, tmp_path)


def test_cli_export_refuses_an_invalid_plan(plan_copy: Path, capsys: pytest.CaptureFixture) -> None:
    text = plan_copy.read_text()
    assert cli_main(["export", str(plan_copy), "--set", "strategy.ep=3", "--in-place"]) == 1
    assert "R-EP-EXP" in capsys.readouterr().err
    assert plan_copy.read_text() == text and not Path(f"{plan_copy}.bak").exists()


# --------------------------------------------------------------------------------------- helpers
def test_step_candidates_keep_the_device_count_integral(session: PlanSession) -> None:
    from estimator.search.candidates import divisors

    assert session.step_candidates("strategy.tp") == divisors(1024 // 16)
    assert session.step_candidates("strategy.ep") == divisors(256)
    assert session.step_candidates("strategy.seq_length") is None


def test_recompute_changes_keep_mode_and_counts_apart(session: PlanSession) -> None:
    changes = session.recompute_changes(mode="selective")
    assert changes["strategy.recompute"] == "selective"
    assert changes["strategy.full_counts"][0] == 3  # the counts survive a mode change
    plan = session.propose(changes).parsed.strategy.recompute
    assert plan.default_mode == "selective" and plan.full_counts[0] == 3
    plan = session.propose(session.recompute_changes(counts=2)).parsed.strategy.recompute
    assert plan.full_counts == 2 and plan.default_mode == "none"


def test_changes_to_a_strategy(session: PlanSession) -> None:
    target = session.propose({"strategy.tp": 8}).parsed.strategy
    changes = session.changes_to(target, pin=("dp", "micro_batches"))
    assert changes["strategy.tp"] == 8 and changes["strategy.dp"] == 8 and changes["strategy.micro_batches"] == 64
    session.apply(changes)
    assert session.parsed.strategy == target and session.changes_to(target) == {}


def test_estimator_violations_map_to_fields(session: PlanSession) -> None:
    from estimator.errors import ConfigError, StrategyError

    session.apply({"strategy.ep": 3})
    with pytest.raises(StrategyError) as info:
        price(session)
    fields = session.error_fields(info.value, ["strategy.ep"])
    assert "strategy.ep" in fields and "R-EP-EXP" in fields["strategy.ep"]
    err = ConfigError("bad", key="strategy.tp")
    assert session.error_fields(err, ["strategy.pp"]) == {"strategy.tp": "bad", "strategy.pp": "bad"}


def test_pp_change_rescales_counts_kept_beside_a_mode(tmp_path: Path) -> None:
    """A plan stating ``recompute: selective`` and ``full_counts: [...]``: the counts follow the new depth and the
    mode stays (the counts are written back where the plan had them)."""
    text = DSV3_PLAN.read_text().replace(
        "  recompute: [3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 2, 0]   # full-recompute layers per stage",
        "  recompute: selective\n  full_counts: [3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 2, 0]")
    assert "full_counts:" in text
    path = tmp_path / "counts.plan.yaml"
    path.write_text(text)
    s = PlanSession()
    s.open([path])
    s.apply({"strategy.pp": 8})
    plan = s.parsed.strategy.recompute
    assert plan.default_mode == "selective" and plan.full_counts == (7, 8, 8, 8, 8, 8, 7, 2)
    assert s.parsed.values["strategy.recompute"] == "selective"
