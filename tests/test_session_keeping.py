"""What survives a restart (estimator/session/keeping.py, issue 12 "Session"): the pinned baseline and the
compare set are kept as their files plus what differs from them, rebuilt from the files and priced again; the
search space is kept per document; a broken session file is named and ignored."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from estimator import estimate
from estimator.errors import SappError
from estimator.session import PlanSession
from estimator.session.keeping import (
    Kept,
    KeptDocument,
    KeptPlan,
    KeptSearch,
    load_kept,
    read_kept,
    rebuild_plan,
    save_kept,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"
DENSE = """\
model: {name: kept-dense, hidden_size: 4096, num_layers: 32, num_attention_heads: 32, num_kv_heads: 8,
        ffn_hidden_size: 14336, vocab_size: 128256}
strategy: {dp: 4, tp: 4, pp: 4, micro_batch_size: 1, micro_batches: 16, seq_length: 4096, recompute: selective}
hardware: {device: A2}
options: {framework: megatron}
"""


def _price(session: PlanSession) -> None:
    p = session.parsed
    session.record_estimate(p, estimate(p.model, p.strategy, p.hardware, p.options))


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "dense.plan.yaml"
    path.write_text(DENSE, encoding="utf-8")
    return path


def test_pinned_baseline_round_trip(tmp_path: Path, plan: Path) -> None:
    session = PlanSession()
    session.open([plan])
    session.apply({"strategy.tp": 8})
    session.apply({"hardware.capacity": "48GB"})
    _price(session)
    pinned = session.pin()
    assert pinned is not None
    session.apply({"strategy.tp": 2})
    search = KeptSearch(64, 256, "A2", 10, {"tp": ("auto", "auto"), "pp": ("list", "2,4"), "mb": ("derived", "")})
    kept = Kept().with_document(session.kept_document(search))
    save_kept(kept, tmp_path / "session.json")

    back, problem = load_kept(tmp_path / "session.json")
    assert problem is None
    doc = back.document([str(plan)])
    assert doc is not None and doc.search == search and doc.pinned is not None
    again = read_kept(doc.pinned)
    rebuilt, notes = again.parsed, again.notes
    assert notes == ()
    assert rebuilt.strategy == pinned.parsed.strategy  # tp 8 with its dp, not the tp 2 in the forms
    assert rebuilt.hardware.capacity == 48 * 2**30

    fresh = PlanSession()
    fresh.open([plan])
    result = estimate(rebuilt.model, rebuilt.strategy, rebuilt.hardware, rebuilt.options)
    assert fresh.pin_kept(rebuilt, result)
    assert fresh.pinned is not None and fresh.pinned.result.peak_bytes == pinned.result.peak_bytes
    assert not fresh.pin_kept(rebuilt, result)  # something is pinned already: never replaced


def test_changed_file_is_said_and_impossible_plan_refused(tmp_path: Path, plan: Path) -> None:
    session = PlanSession()
    session.open([plan])
    session.apply({"strategy.pp": 8})
    _price(session)
    session.pin()
    kept = session.kept_document().pinned
    assert kept is not None
    plan.write_text(DENSE.replace("micro_batches: 16", "micro_batches: 32"), encoding="utf-8")
    again = read_kept(kept)
    rebuilt, notes = again.parsed, again.notes
    # the kept plan as kept (pp 8 → dp 2, 32 micro-batches of the file's 64 sequences), not the file's new batch
    assert (rebuilt.strategy.pp, rebuilt.strategy.dp, rebuilt.strategy.micro_batches) == (8, 2, 32)
    assert len(notes) == 1 and "changed since" in str(notes[0]) and "dense.plan.yaml" in str(notes[0])
    gone = dataclasses.replace(kept, device="MY-DELETED-GPU")  # a user preset removed since
    with pytest.raises(SappError, match=r"cannot be rebuilt from dense\.plan\.yaml.*MY-DELETED-GPU"):
        read_kept(gone)


def test_compare_set_keeps_its_files(tmp_path: Path, plan: Path) -> None:
    other = tmp_path / "other.plan.yaml"
    shutil.copy(plan, other)
    session = PlanSession()
    session.open([plan])
    _price(session)
    session.compare_add("Current", session.parsed, session.shown.result)
    session.apply({"strategy.micro_batch_size": 2})
    session.compare_add("mbs 2", session.parsed)
    from estimator.session.opening import OpenRequest, read_plan

    request = OpenRequest.of([other])
    opened = read_plan(request).parsed
    session.compare_add("other file", opened, source=request, base=opened)
    session.compare_add("bare result", None, session.shown.result)  # no files: cannot be kept
    kept = session.kept_compare()
    assert [k.name for k in kept] == ["Current", "mbs 2", "other file"]
    assert kept[2].paths == (str(other),)
    rebuilt = [read_kept(k).parsed for k in kept]
    assert [r.strategy.micro_batch_size for r in rebuilt] == [1, 2, 1]
    assert rebuilt[1].strategy.micro_batches == 8


def test_broken_session_file_is_named_and_ignored(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text("{not json", encoding="utf-8")
    kept, problem = load_kept(path)
    assert kept == Kept() and str(path) in str(problem) and "ignored" in str(problem)
    path.write_text(json.dumps({"version": 1, "documents": [
        {"paths": ["a.yaml"], "search": {"devices": 8, "global_batch": 0, "device": "A2", "top_k": 5}},
        {"paths": ["b.yaml"], "search": {"devices": 8, "global_batch": 8, "device": "A2", "top_k": 5,
                                         "dims": {"tp": ["list", "1,x"]}}},
        {"paths": ["c.yaml"], "args": {"devices": 16}}],
        "compare": [{"paths": ["d.yaml"], "strategy": {}, "capacity": -1}]}), encoding="utf-8")
    kept, problem = load_kept(path)
    problem = str(problem)
    assert [d.paths for d in kept.documents] == [("c.yaml",)]
    assert "document 1: search global_batch" in problem and "document 2" in problem
    assert "compared strategy 1: a kept plan's capacity" in problem
    assert load_kept(tmp_path / "absent.json") == (Kept(), None)


def test_documents_are_newest_first_and_bounded(tmp_path: Path) -> None:
    from estimator.session.keeping import MAX_DOCUMENTS

    kept = Kept()
    for k in range(MAX_DOCUMENTS + 3):
        kept = kept.with_document(KeptDocument((str(tmp_path / f"{k}.yaml"),), {}))
    kept = kept.with_document(KeptDocument((str(tmp_path / "5.yaml"),), {"devices": 8}))
    assert len(kept.documents) == MAX_DOCUMENTS
    assert kept.documents[0].args == {"devices": 8}
    assert kept.document([str(tmp_path / "5.yaml")]).args == {"devices": 8}


def test_rebuild_on_an_example_with_per_stage_lists() -> None:
    """DeepSeek-V3's plan has per-stage offsets and recompute lists: a kept pp change rebuilds exactly."""
    session = PlanSession()
    session.open([EXAMPLES / "deepseek_v3_671b.plan.yaml"])
    session.apply({"strategy.pp": session.parsed.strategy.pp // 2})
    from estimator.session.keeping import keep_plan

    assert session.request is not None and session.original is not None
    kept = KeptPlan.from_json(json.loads(json.dumps(keep_plan(session.request, session.original,
                                                              session.parsed).to_json())))
    rebuilt, notes = rebuild_plan(kept, session.original)
    assert rebuilt.strategy == session.parsed.strategy and notes == ()


def test_changed_on_disk_names_the_files_that_differ(tmp_path: Path, plan: Path) -> None:
    """What the app's file watcher asks before offering a reload: a rewrite with the same text is no change; an
    export through the session is read back, so it is none either; another program's edit is."""
    session = PlanSession()
    session.open([plan])
    assert session.source_paths() == (str(plan),) and session.changed_on_disk() == ()
    plan.write_text(plan.read_text(encoding="utf-8"), encoding="utf-8")
    assert session.changed_on_disk() == ()
    session.apply({"strategy.tp": 8})
    from estimator.export import write_atomic

    write_atomic(dict(session.prepare_export().files))
    assert session.changed_on_disk() == (str(plan),)  # written, not yet read back
    session.reread()
    assert session.changed_on_disk() == () and session.parsed.strategy.tp == 8
    plan.write_text(plan.read_text(encoding="utf-8").replace("seq_length: 4096", "seq_length: 8192"),
                    encoding="utf-8")
    assert session.changed_on_disk() == (str(plan),)
    plan.unlink()
    assert session.changed_on_disk() == (str(plan),)
