"""A scripted user session over one config (issue 12 "Proof"): open, edit tp / pp / micro-batch size, search,
apply the best row, balance, export — through the library's plan session, the way the CLI and the app drive it.

Every step either works or is refused with a SappError (a message for the user); anything else is a crash. After
every step the estimate on record must describe the plan the session holds (no stale verdict). Imported by the
library test (tests/test_scripted_sessions.py) and by the app's (tests/gui), which adds the window on top.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from estimator import estimate
from estimator.errors import SappError
from estimator.parsed import ParsedConfig
from estimator.search import SearchSpace, parse_dims, search
from estimator.session import PlanSession
from estimator.session.core import CURRENT, FAILED, REJECTED_EDIT

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "resources" / "examples"


@dataclass
class Transcript:
    """What happened, step by step: (step, "ok" | "refused: message")."""

    name: str
    steps: list[tuple[str, str]] = field(default_factory=list)

    def add(self, step: str, outcome: str) -> None:
        self.steps.append((step, outcome))


def config_sets(shared: Path | None) -> Iterator[tuple[str, list[Path], dict]]:
    """(name, files, open arguments) for every bundled example and every real config that is a plan on its own
    or as its known pair (launch script + model.json); Hugging Face configs go with a torchtitan TOML."""
    singles = [p for p in sorted(EXAMPLES.iterdir()) if p.suffix in (".yaml", ".toml", ".sh") and
               p.name != "index.yaml" and not p.name.endswith("_finetune.sh")]
    for path in singles:
        yield path.name, [path], {}
    for script in sorted(EXAMPLES.glob("*_finetune.sh")):
        model = script.with_name(script.name.replace("_finetune.sh", "_model.json"))
        yield script.name, [script, model], {}
    if shared is None:
        return
    real = shared / "real-configs"
    for folder in ("mindformers", "hyperparallel", "torchtitan_toml", "mindspeed"):
        for path in sorted((real / folder).iterdir()):
            if path.suffix in (".yaml", ".toml") or (path.suffix == ".sh" and not path.name.startswith("mm_")):
                yield f"{folder}/{path.name}", [path], {}
            elif path.suffix == ".sh":
                model = path.with_name(path.name.replace("_finetune.sh", "_model.json"))
                yield f"{folder}/{path.name}", [path, model], {}
    toml = EXAMPLES / "torchtitan_llama3_8b_longctx_cp.toml"
    for path in sorted((real / "hf_config").glob("*.json")):
        yield f"hf_config/{path.name}", [toml], {"model": path}


def _open(session: PlanSession, files: list[Path], args: dict) -> None:
    """Open, with a device count only when the files need one to be told (as a user answers the prompt)."""
    try:
        session.open(files, **args)
    except SappError as exc:
        if "--devices" not in str(exc):
            raise
        session.open(files, devices=64, **args)


def opened_plan(files: list[Path], args: dict) -> ParsedConfig | None:
    """The plan of ``files`` opened in a new session (``_open``), or None where the session refuses it (a config
    the session refuses to open is another test's subject)."""
    session = PlanSession()
    try:
        _open(session, files, args)
    except SappError:
        return None
    return session.parsed


def check_fresh(session: PlanSession, transcript: Transcript, step: str) -> None:
    """Price the session's plan and record it; the session must then call its estimate current (or the plan
    unpriceable, or the last edit refused), never a verdict of another plan."""
    parsed = session.parsed
    try:
        result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
        session.record_estimate(parsed, result)
    except SappError as exc:
        session.record_estimate(parsed, error=exc)
    fresh = session.freshness()
    assert fresh.state in (CURRENT, FAILED, REJECTED_EDIT), f"{transcript.name} {step}: {fresh.state}"
    if fresh.state == CURRENT:
        assert fresh.shown is not None and fresh.shown.parsed is session.parsed, f"{transcript.name} {step}: stale"


def edit(session: PlanSession, transcript: Transcript, step: str, changes: dict) -> bool:
    try:
        applied = session.apply(changes, step)
    except SappError as exc:
        transcript.add(step, f"refused: {exc}")
        return False
    transcript.add(step, "ok" if applied is not None else "no change")
    check_fresh(session, transcript, step)
    return applied is not None


def run(name: str, files: list[Path], args: dict, workdir: Path, search_dims: tuple[str, ...] = ("tp=auto",),
        balance: bool = True) -> Transcript:
    """The scripted session on copies of ``files`` in ``workdir`` (the export writes them)."""
    from estimator.balance import balance as balance_plan

    transcript = Transcript(name)
    copies = []
    for path in files:
        target = workdir / path.name
        shutil.copy(path, target)
        copies.append(target)
    args = dict(args)
    if "model" in args:
        args["model"] = Path(shutil.copy(args["model"], workdir))
    session = PlanSession()
    try:
        _open(session, copies, args)
    except SappError as exc:
        transcript.add("open", f"refused: {exc}")
        return transcript
    transcript.add("open", "ok")
    check_fresh(session, transcript, "open")
    st = session.parsed.strategy
    for key, value in (("strategy.tp", st.tp * 2), ("strategy.tp", st.tp), ("strategy.pp", st.pp * 2),
                       ("strategy.pp", st.pp), ("strategy.micro_batch_size", st.micro_batch_size + 1),
                       ("strategy.micro_batch_size", st.micro_batch_size)):
        edit(session, transcript, f"{key}={value}", {key: value})
    parsed = session.parsed
    try:
        space = SearchSpace(parsed.strategy.world_size, parsed.strategy.global_batch_size,
                            parse_dims(list(search_dims)), top_k=3)
        found = search(parsed, space)
    except SappError as exc:
        transcript.add("search", f"refused: {exc}")
    else:
        assert found.current is not None or session.freshness().state != CURRENT, f"{name}: plan not a row"
        transcript.add("search", f"ok ({found.fitting} fit)")
        if found.ranked:
            changes = session.changes_to(found.ranked[0].strategy, pin=("dp", "micro_batches"))
            edit(session, transcript, "apply search #1", changes)
    if balance:
        try:
            balanced = balance_plan(session.parsed)
        except SappError as exc:
            transcript.add("balance", f"refused: {exc}")
        else:
            transcript.add("balance", "ok")
            edit(session, transcript, "apply balance", session.changes_to(balanced.strategy))
    try:
        plan = session.prepare_export()
    except SappError as exc:
        transcript.add("export", f"refused: {exc}")
    else:
        from estimator.export import write_atomic

        if plan.files:
            write_atomic(plan.files, backup=True)
        transcript.add("export", f"ok ({len(plan.files)} files)")
        if plan.files:
            session.written(list(plan.files))
            session.reread()
            check_fresh(session, transcript, "reopen after export")
    return transcript
