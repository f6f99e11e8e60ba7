"""Writing files so that nothing is lost: every file of a set or none, the user's backup kept.

``write_atomic`` writes each new content to a temporary file next to its target (flushed to disk), and a copy of
each target it replaces to a temporary file next to ``TARGET.bak``; then it records the set in a small journal
in every folder it writes to, renames each temporary file over its target, fsyncs the folders and removes the
journals. Killed at any moment, the targets are all old (no journal yet: the temporary files are removed by the
next run) or the journal says which renames remain, and the next run (``recover_interrupted``, called by
``parse`` and before every write) finishes them and says so.

Rules kept on the way (issue 16): a target must be a regular file or absent (a device, FIFO or directory is
refused, never opened); a symbolic link to a config is followed, so the file it names is updated and the link
stays; ``TARGET.bak`` is always replaced by a rename, never written through (a symlinked backup cannot redirect
the copy); the new file keeps the old one's permissions and, where the process may, its owner; text keeps the
old file's CRLF line endings.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

from .errors import SappError
from .inputs import file_kind
from .limits import MAX_FILE_BYTES
from .messages import Text, msg

JOURNAL_PREFIX = ".sapp-journal-"
TEMP_MARK = ".sapp-tmp-"


class InterruptedExportWarning(UserWarning):
    """An export interrupted earlier was finished now (the message says which files)."""


@dataclass
class Entry:
    """One file of a set: ``target`` is the file written (a symlink's destination), ``named`` the path the
    caller gave; ``tmp`` the new content; ``backup_tmp`` the old content, renamed to ``backup``."""

    target: str
    named: str
    tmp: str
    backup_tmp: str | None = None
    backup: str | None = None


def write_atomic(files: dict[str, str | bytes], *, backup: bool = True, notes: list[Text] | None = None) -> list[str]:
    """Write every file (text, or bytes for images) or none, keeping ``NAMED.bak`` of each replaced file when
    ``backup``. Returns the backup paths. Finishing an export interrupted earlier in the same folders is reported
    in ``notes`` (or as an InterruptedExportWarning when no list is given)."""
    folders = {str(Path(os.path.abspath(p)).parent) for p in files}
    done = recover_interrupted(folders)
    if notes is not None:
        notes.extend(done)
    else:
        for note in done:
            warnings.warn(note, InterruptedExportWarning, stacklevel=2)
    entries: list[Entry] = []
    journals: list[str] = []
    try:
        for path, content in files.items():
            entries.append(_stage(path, content, backup))
        journals = _write_journals(entries)
    except BaseException as exc:  # a failure or an interruption before the commit: nothing of it stays
        for entry in entries:
            _discard(entry.tmp, entry.backup_tmp)
        for journal in journals:
            _discard(journal)
        if isinstance(exc, OSError):
            raise SappError(msg("atomic.cannot-write-nothing", value=exc.filename or '',
                                strerror=exc.strerror)) from None
        raise
    _commit(entries, journals)
    return [e.backup for e in entries if e.backup]


# ------------------------------------------------------------------------------------------ staging
def _stage(path: str, content: str | bytes, backup: bool) -> Entry:
    named = os.path.abspath(path)
    target = _real_target(named)
    info = _existing(target, named)
    folder = os.path.dirname(target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(content, str):
        content = (keep_line_endings(content, target) if info else content).encode("utf-8")
    entry = Entry(target, named, _temp_file(target, lambda fh: fh.write(content), info))
    if backup and info is not None:
        entry.backup = named + ".bak"
        try:
            _check_backup_path(entry.backup)
            entry.backup_tmp = _temp_file(entry.backup, _copy_of(target), info)
        except BaseException:
            _discard(entry.tmp)
            raise
    return entry


def _real_target(named: str) -> str:
    """The file a path names: a symbolic link's destination (so the link keeps pointing at the updated file)."""
    if not os.path.islink(named):
        return named
    real = os.path.realpath(named)
    if not os.path.lexists(real):
        raise SappError(msg("atomic.symbolic-link-missing", named=named, real=real))
    return real


def _existing(target: str, named: str) -> os.stat_result | None:
    """The target's status when it exists; a SappError when it is not a regular file."""
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise SappError(msg("atomic.regular-file-write", named=named, file_kind=file_kind(info.st_mode)))
    return info


def _check_backup_path(backup: str) -> None:
    try:
        info = os.lstat(backup)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        raise SappError(msg("atomic.directory-so-backup", backup=backup))


def keep_line_endings(text: str, like: str) -> str:
    """``text`` with CRLF line endings when the file ``like`` has them (readers see ``\\n``, so a rewritten
    file would otherwise lose them); text that has CRLF already is kept as it is."""
    if "\r\n" in text:
        return text
    try:
        with open(like, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return text
    crlf = head.count(b"\r\n")
    return text.replace("\n", "\r\n") if crlf and crlf >= head.count(b"\n") - crlf else text


def _temp_file(beside: str, fill: Callable[[BinaryIO], object], like: os.stat_result | None) -> str:
    """A temporary file next to ``beside``, filled by ``fill`` and flushed to disk, with ``like``'s mode and
    owner (removed again if anything fails)."""
    import tempfile  # here, not at the top: opening a plan imports this module, and tempfile with shutil is ~3 ms

    folder, name = os.path.split(beside)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}{TEMP_MARK}{os.getpid()}-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        _take_mode(tmp, like)
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def _copy_of(source: str) -> Callable[[BinaryIO], None]:
    """A ``fill`` that copies ``source`` (the file a backup keeps)."""
    import shutil

    def fill(out: BinaryIO) -> None:
        with open(source, "rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
    return fill


def _take_mode(path: str, like: os.stat_result | None) -> None:
    if like is None:  # a new file gets the usual permissions, not mkstemp's private 0600
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(path, 0o666 & ~umask)
        return
    if hasattr(os, "chown") and (like.st_uid, like.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(PermissionError):  # only root may give a file to someone else
            os.chown(path, like.st_uid, like.st_gid)
    os.chmod(path, stat.S_IMODE(like.st_mode))


# ------------------------------------------------------------------------------------------ commit
def _write_journals(entries: list[Entry]) -> list[str]:
    """The set's journal in every folder it writes to (each lists all entries and all journal copies)."""
    folders = sorted({os.path.dirname(p) for e in entries for p in (e.target, e.backup) if p})
    token = f"{os.getpid()}-{time.time_ns()}"
    journals = [os.path.join(folder, f"{JOURNAL_PREFIX}{token}.json") for folder in folders]
    record = json.dumps({"version": 1, "pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                         "entries": [asdict(e) for e in entries], "journals": journals}).encode("utf-8")
    written: list[str] = []
    try:
        for journal in journals:
            tmp = _temp_file(journal, lambda fh: fh.write(record), None)
            os.replace(tmp, journal)
            written.append(journal)
        for folder in folders:
            _sync_folder(folder)
    except BaseException:
        for journal in written:
            _discard(journal)
        raise
    return journals


def _commit(entries: list[Entry], journals: list[str]) -> None:
    """The renames, then the journals removed; a failure leaves the journal for the next run to finish."""
    try:
        for entry in entries:
            _finish(entry)
        for folder in {os.path.dirname(j) for j in journals}:
            _sync_folder(folder)
    except OSError as exc:
        raise SappError(msg("atomic.export-stopped-after", filename=exc.filename, strerror=exc.strerror,
                            journals=journals[0])) from None
    for journal in journals:
        _discard(journal)
    for folder in {os.path.dirname(j) for j in journals}:
        _sync_folder(folder)


def _finish(entry: Entry) -> list[str]:
    """Rename what remains of one entry; returns the files it put in place."""
    done = []
    if entry.backup_tmp and entry.backup and os.path.exists(entry.backup_tmp):
        os.replace(entry.backup_tmp, entry.backup)  # replaces a symlinked .bak itself, never its destination
        done.append(entry.backup)
    if os.path.exists(entry.tmp):
        os.replace(entry.tmp, entry.target)
        done.append(entry.named)
    return done


def _sync_folder(folder: str) -> None:
    """fsync a folder, so that renames in it survive a crash (not possible on every platform)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _discard(*paths: str | None) -> None:
    for path in paths:
        if path:
            with contextlib.suppress(OSError):
                os.unlink(path)


# ------------------------------------------------------------------------------------------ recovery
def recover_interrupted(folders: set[str] | list[str]) -> list[Text]:
    """Finish every export interrupted in ``folders`` (renames its journal lists whose temporary files exist)
    and remove temporary files that dead exports left without a journal; one message per finished export."""
    notes: list[Text] = []
    for folder in sorted({os.path.abspath(f) for f in folders}):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        listed: set[str] = set()
        for name in sorted(n for n in names if n.startswith(JOURNAL_PREFIX) and n.endswith(".json")):
            journal = os.path.join(folder, name)
            record = _read_journal(journal)
            if record is None:
                continue
            entries = [e for e in record["entries"] if _trusted(e)]
            listed.update(p for e in entries for p in (e.tmp, e.backup_tmp) if p)
            if _alive(record.get("pid")):
                continue  # another process is exporting right now
            written = [p for e in entries for p in _finish_quietly(e)]
            for copy in record.get("journals", []):
                if isinstance(copy, str) and os.path.basename(copy).startswith(JOURNAL_PREFIX):
                    _discard(copy)
            _discard(journal)
            if written:
                notes.append(msg("W-EXPORT-FINISHED.interrupted", started=record.get('started', '?'),
                                 written=', '.join(written)))
        for name in names:  # temporary files of dead exports that never reached their journal
            path = os.path.join(folder, name)
            pid = _temp_pid(name)
            if pid is not None and path not in listed and not _alive(pid):
                _discard(path)
    return notes


def _read_journal(path: str) -> dict | None:
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES or \
                (hasattr(os, "getuid") and info.st_uid != os.getuid()):
            return None  # only our own journals are acted on
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
        record["entries"] = [Entry(**e) for e in record["entries"]]
        return record
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _trusted(entry: Entry) -> bool:
    """Whether an entry renames only its own temporary files into place beside them (a planted journal cannot
    move other files)."""
    pairs = [(entry.tmp, entry.target)] + ([(entry.backup_tmp, entry.backup)] if entry.backup_tmp else [])
    for tmp, dest in pairs:
        if not (isinstance(tmp, str) and isinstance(dest, str) and os.path.dirname(tmp) == os.path.dirname(dest)
                and os.path.basename(tmp).startswith(f".{os.path.basename(dest)}{TEMP_MARK}")):
            return False
    return entry.backup is None or entry.backup.endswith(".bak")


def _finish_quietly(entry: Entry) -> list[str]:
    try:
        return _finish(entry)
    except OSError:
        return []


def _temp_pid(name: str) -> int | None:
    """The process id in one of our temporary file names (``.NAME.sapp-tmp-PID-….tmp``)."""
    if not (name.startswith(".") and name.endswith(".tmp") and TEMP_MARK in name):
        return None
    rest = name.rsplit(TEMP_MARK, 1)[1]
    pid = rest.split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _alive(pid: object) -> bool:
    """Whether process ``pid`` runs (our own counts as finished: its export is over or failed). Where that
    cannot be asked safely (Windows' os.kill terminates), every process counts as running, so nothing is
    finished or removed automatically."""
    if os.name != "posix":
        return True
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


__all__ = ["InterruptedExportWarning", "keep_line_endings", "recover_interrupted", "write_atomic"]
