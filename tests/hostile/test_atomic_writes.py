"""Writes that never lose data (issue 16): backups never through a symlink, a symlinked config's target updated,
owner, mode and line endings kept, targets that are not regular files refused, temporary files removed on every
error path, and multi-file exports all-or-none — killed right after a rename, the next run finishes the set from
its journal and says so."""

from __future__ import annotations

import os
import random
import re
import signal
import stat
import time
from pathlib import Path

import pytest
from hostile_harness import ROOT, cli, run_cases

from estimator import atomic
from estimator.atomic import JOURNAL_PREFIX, TEMP_MARK, recover_interrupted, write_atomic
from estimator.errors import SappError

PLAN = (ROOT / "tests" / "hostile" / "test_bounded_inputs.py").read_text().split('PLAN = """\\\n', 1)[1] \
    .split('"""', 1)[0]


def leftovers(folder: Path) -> list[str]:
    """Temporary files and journals left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if TEMP_MARK in p.name or p.name.startswith(JOURNAL_PREFIX))


def test_the_backup_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    config, other = tmp_path / "config.yaml", tmp_path / "precious.txt"
    config.write_text("old\n")
    other.write_text("someone else's file\n")
    (tmp_path / "config.yaml.bak").symlink_to(other)
    assert write_atomic({str(config): "new\n"}) == [str(config) + ".bak"]
    assert other.read_text() == "someone else's file\n"
    backup = tmp_path / "config.yaml.bak"
    assert not backup.is_symlink() and backup.read_text() == "old\n" and config.read_text() == "new\n"
    assert leftovers(tmp_path) == []


def test_a_symlinked_config_has_its_target_updated(tmp_path: Path) -> None:
    real = tmp_path / "real" / "config.yaml"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "config.yaml"
    link.symlink_to(real)
    write_atomic({str(link): "new\n"})
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new\n" and (tmp_path / "config.yaml.bak").read_text() == "old\n"
    assert leftovers(tmp_path) == [] and leftovers(real.parent) == []


def test_mode_owner_and_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    config = tmp_path / "run.sh"
    config.write_bytes(b"#!/bin/bash\r\nTP=4\r\n")
    config.chmod(0o751)
    if os.getuid() == 0:
        os.chown(config, 4321, 4321)
    write_atomic({str(config): "#!/bin/bash\nTP=8\n"})
    assert config.read_bytes() == b"#!/bin/bash\r\nTP=8\r\n"
    info = config.stat()
    assert stat.S_IMODE(info.st_mode) == 0o751
    if os.getuid() == 0:
        assert (info.st_uid, info.st_gid) == (4321, 4321)
    backup = (tmp_path / "run.sh.bak").stat()
    assert stat.S_IMODE(backup.st_mode) == 0o751


def test_files_and_their_folders_are_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before a rename counts, the data is on disk: every temporary file (new contents, backup copy, journal) is
    fsynced, and after the renames each folder is, so a power cut cannot leave an empty file in place."""
    other = tmp_path / "other"
    other.mkdir()
    files = [tmp_path / "a.yaml", other / "b.json"]
    for path in files:
        path.write_text("old\n")
    synced: list[tuple[bool, str]] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        info = os.fstat(fd)
        synced.append((stat.S_ISDIR(info.st_mode), os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", recording_fsync)
    write_atomic({str(p): "new\n" for p in files})
    folders = {path for is_dir, path in synced if is_dir}
    assert {str(tmp_path), str(other)} <= folders
    regular = [path for is_dir, path in synced if not is_dir]
    assert len(regular) >= 4, regular  # two new files, two backup copies (journals beside them)


def test_a_new_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_atomic({str(tmp_path / "new.yaml"): "x: 1\n"})
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.yaml").stat().st_mode) == 0o644
    assert not (tmp_path / "new.yaml.bak").exists()


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink to a device", "dangling symlink"])
def test_targets_that_are_not_regular_files_are_refused(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "out.yaml"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "symlink to a device":
        target.symlink_to("/dev/null")
    else:
        target.symlink_to(tmp_path / "missing.yaml")
    first = tmp_path / "first.yaml"
    first.write_text("old\n")
    with pytest.raises(SappError, match=r"not a regular file|symbolic link to a missing file") as info:
        write_atomic({str(first): "new\n", str(target): "x\n"})
    assert "out.yaml" in str(info.value)
    assert first.read_text() == "old\n" and not (tmp_path / "first.yaml.bak").exists()
    assert leftovers(tmp_path) == []


def test_temporary_files_are_removed_when_a_write_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {str(tmp_path / f"f{i}.yaml"): f"new {i}\n" for i in range(3)}
    for path in files:
        Path(path).write_text("old\n")
    calls = {"n": 0}
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 4:  # the second file's backup copy
            raise OSError(28, "No space left on device", "f1.yaml.bak")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", failing_fsync)
    with pytest.raises(SappError, match="No space left on device; nothing was written"):
        write_atomic(files)
    assert all(Path(p).read_text() == "old\n" for p in files)
    assert leftovers(tmp_path) == [] and not list(tmp_path.glob("*.bak"))


def _kill_after_renames(files: dict[str, str], renames: int) -> None:
    """In a forked child: write ``files`` and SIGKILL itself right after ``renames`` renames (0: right after
    the temporary files and the journal are written)."""
    pid = os.fork()
    if pid == 0:  # the child
        try:
            done = {"n": 0}
            real_replace = os.replace
            real_journals = atomic._write_journals

            def journals_then_maybe_die(entries):  # type: ignore[no-untyped-def]
                out = real_journals(entries)
                if renames == 0:
                    os.kill(os.getpid(), signal.SIGKILL)
                return out

            def replace_then_maybe_die(src, dst):  # type: ignore[no-untyped-def]
                real_replace(src, dst)
                if JOURNAL_PREFIX not in os.path.basename(str(dst)):
                    done["n"] += 1
                    if done["n"] == renames:
                        os.kill(os.getpid(), signal.SIGKILL)

            atomic.os.replace = replace_then_maybe_die  # type: ignore[assignment]
            atomic._write_journals = journals_then_maybe_die  # type: ignore[assignment]
            write_atomic(files)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_multi_file_export_killed_after_a_rename_is_finished_by_the_next_run(tmp_path: Path) -> None:
    """Kill after each possible rename (2 files: 2 backups + 2 targets = 4 renames): the set is then half new,
    and the next run finishes it from the journal — both new, both backups old, nothing left behind."""
    other = tmp_path / "other"
    other.mkdir()
    names = [tmp_path / "launch.sh", other / "model.json"]
    for renames in range(0, 5):
        for path in names:
            path.write_text(f"old {path.name}\n")
        _kill_after_renames({str(p): f"new {p.name}\n" for p in names}, renames)
        if renames:
            assert leftovers(tmp_path), "the journal must be there until the set is finished"
        notes = recover_interrupted({str(tmp_path), str(other)})
        assert [p.read_text() for p in names] == [f"new {p.name}\n" for p in names], renames
        assert [Path(f"{p}.bak").read_text() for p in names] == [f"old {p.name}\n" for p in names], renames
        assert leftovers(tmp_path) == [] and leftovers(other) == [], renames
        if renames < 4:  # killed before the last rename: the next run says what it finished
            assert len(notes) == 1 and "was interrupted" in str(notes[0]) and "finished now" in str(notes[0]), notes
        else:
            assert notes == []
        for path in names:
            Path(f"{path}.bak").unlink()


def test_killed_before_the_journal_the_set_stays_old_and_its_temporary_files_go(tmp_path: Path) -> None:
    names = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    for path in names:
        path.write_text("old\n")
    pid = os.fork()
    if pid == 0:
        try:
            def die(entries):  # type: ignore[no-untyped-def]
                os.kill(os.getpid(), signal.SIGKILL)

            atomic._write_journals = die  # type: ignore[assignment]
            write_atomic({str(p): "new\n" for p in names})
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert leftovers(tmp_path), "temporary files of the killed export"
    assert recover_interrupted({str(tmp_path)}) == []
    assert [p.read_text() for p in names] == ["old\n", "old\n"] and leftovers(tmp_path) == []


def test_exports_killed_at_random_moments_are_all_or_none(tmp_path: Path) -> None:
    """A few kills at random times during repeated three-file exports: after the next run every set is whole
    (all files of one generation) and nothing is left behind."""
    names = [tmp_path / f"f{i}.yaml" for i in range(3)]
    rng = random.Random(16)
    for round_ in range(6):
        for path in names:
            path.write_text("generation 0\n" * 2000)
        pid = os.fork()
        if pid == 0:
            try:
                for generation in range(1, 10_000):
                    write_atomic({str(p): f"generation {generation}\n" * 2000 for p in names})
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.01, 0.2))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        recover_interrupted({str(tmp_path)})
        texts = {p.read_text() for p in names}
        assert len(texts) == 1, f"round {round_}: files of different generations"
        assert leftovers(tmp_path) == [], round_
        for backup in tmp_path.glob("*.bak"):  # never empty or cut: a whole earlier generation
            assert re.fullmatch(r"(generation \d+\n){2000}", backup.read_text()), f"round {round_}: {backup.name}"


def test_the_command_line_refuses_unsafe_targets_and_updates_a_symlinked_config(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    fifo = tmp_path / "out.yaml"
    os.mkfifo(fifo)
    (tmp_path / "device.yaml").symlink_to("/dev/null")
    real = tmp_path / "real.yaml"
    real.write_text(PLAN)
    (tmp_path / "link.yaml").symlink_to(real)
    (tmp_path / "full.md").symlink_to("/dev/full")
    report_fifo = tmp_path / "report.md"
    os.mkfifo(report_fifo)
    table = [
        (cli("export -o a FIFO", "export", plan, "--set", "strategy.tp=1", "-o", fifo),
         [r"out\.yaml is a named pipe \(FIFO\), not a regular file"]),
        (cli("report -o a symlink to /dev/full", "report", plan, "-o", tmp_path / "full.md"),
         [r"full\.md is a character device"]),
        (cli("report -o a FIFO", "report", plan, "-o", report_fifo), [r"report\.md is a named pipe \(FIFO\)"]),
        (cli("export -o a symlink to /dev/null", "export", plan, "--set", "strategy.tp=1", "-o",
             tmp_path / "device.yaml"), [r"device\.yaml is a character device"]),
        (cli("export --in-place through a symlink", "export", tmp_path / "link.yaml", "--set", "strategy.tp=1",
             "--in-place"), []),
    ]
    outcomes = run_cases([case for case, _ in table])
    for case, patterns in table:
        got = outcomes[case["name"]]
        assert got.clean and got.rc == (1 if patterns else 0), got.describe()
        assert all(re.search(p, got.stderr) for p in patterns), got.describe()
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and not (tmp_path / "out.yaml.bak").exists()
    assert (tmp_path / "full.md").is_symlink() and not (tmp_path / "full.md.bak").exists()
    assert stat.S_ISFIFO(report_fifo.lstat().st_mode) and not (tmp_path / "report.md.bak").exists()
    assert (tmp_path / "link.yaml").is_symlink() and "tp: 1" in real.read_text()
    assert (tmp_path / "link.yaml.bak").read_text() == PLAN
    assert leftovers(tmp_path) == []


def test_reading_files_finishes_their_interrupted_export_and_says_so(tmp_path: Path) -> None:
    plan, notes = tmp_path / "plan.yaml", tmp_path / "notes.txt"
    plan.write_text(PLAN)
    notes.write_text("old\n")
    _kill_after_renames({str(plan): PLAN.replace("tp: 2", "tp: 1").replace("dp: 2", "dp: 4"), str(notes): "new\n"},
                        1)
    assert plan.read_text() == PLAN  # only the backup was renamed before the kill
    got = run_cases([cli("estimate after a killed export", "estimate", plan)])["estimate after a killed export"]
    assert got.clean and got.rc == 0, got.describe()
    assert "W-EXPORT-FINISHED" in got.stdout + got.stderr and "finished now" in got.stdout + got.stderr
    assert "dp 4 × tp 1" in got.stdout  # the estimate is of the finished export
    assert notes.read_text() == "new\n" and leftovers(tmp_path) == []


def test_two_changed_files_with_one_name_are_not_written_over_each_other(tmp_path: Path) -> None:
    from estimator.session.exporting import targets_for

    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SappError, match=r"two changed files have the name p\.yaml"):
        targets_for({str(tmp_path / "a" / "p.yaml"): "a\n", str(tmp_path / "b" / "p.yaml"): "b\n"}, out)
    assert list(out.iterdir()) == []
