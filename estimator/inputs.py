"""Reading the user's files safely and within bounds, with precise error locations (file, line, column).

Every reader goes through here (``estimator.formats.common`` re-exports it for the format readers; the hardware
presets, profiles and the writer use it directly): ``read_text`` reads only regular files up to ``MAX_FILE_BYTES``;
``load_yaml``, ``load_json`` and ``load_toml`` refuse documents that nest deeper than ``MAX_NESTING``, hold
integers longer than ``MAX_INT_DIGITS`` digits or (YAML) expand their aliases past ``MAX_YAML_NODES`` values
(estimator/limits.py, docs/limits.md). YAML is read the way the frameworks read it: PyYAML's safe loader
(YAML 1.1: ``yes``/``off`` are booleans, ``1e-5`` is a string), which never constructs objects from tags.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError
from .limits import MAX_FILE_BYTES, MAX_INT_DIGITS, MAX_NESTING
from .messages import msg
from .yamlio import YAMLLimitError, load_bounded

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_text(path: str | Path, limit: int = MAX_FILE_BYTES) -> str:
    """The text of a regular file of at most ``limit`` bytes (UTF-8; line endings read as ``\n``).
    Devices, pipes and directories are refused without reading them (a FIFO would block, /dev/zero never ends);
    a symlink is followed to the file it names."""
    p = os.fspath(path)
    try:
        info = os.stat(p)
    except FileNotFoundError:
        why = "a symbolic link to a missing file" if os.path.islink(p) else "file not found"
        raise ConfigError(why, path=str(path)) from None
    except OSError as exc:
        raise ConfigError(msg("inputs.cannot-read", strerror=exc.strerror), path=str(path)) from None
    _check_regular(info, path, limit)
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the check above cannot block the open
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ConfigError(msg("inputs.cannot-read", strerror=exc.strerror), path=str(path)) from None
    try:
        _check_regular(os.fstat(fd), path, limit)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ConfigError(msg("inputs.cannot-read", strerror=exc.strerror), path=str(path)) from None
    finally:
        os.close(fd)
    if size > limit:
        raise _too_big(path, limit)
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(msg("inputs.utf-text-byte", reason=exc.reason, start=exc.start), path=str(path)) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as Python's text mode reads it


def _check_regular(info: os.stat_result, path: str | Path, limit: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise ConfigError(msg("inputs.directory-config-file"), path=str(path))
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(msg("inputs.regular-file-only", file_kind=file_kind(info.st_mode)), path=str(path))
    if info.st_size > limit:
        raise _too_big(path, limit, info.st_size)


def _too_big(path: str | Path, limit: int, size: int | None = None) -> ConfigError:
    got = f"{size / (1 << 20):,.1f} MiB" if size is not None else "larger than that"
    return ConfigError(msg("inputs.config-files-read", got=got, value=f"{limit / (1 << 20):g}"), path=str(path))


def load_yaml(text: str, path: str) -> Any:
    try:
        return load_bounded(text)
    except YAMLLimitError as exc:
        mark = exc.problem_mark
        raise ConfigError(exc.problem or "too large", path=path, line=mark.line + 1 if mark else None,
                          column=mark.column + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(getattr(exc, "problem", "")):  # libyaml stops at 1,000 levels
            raise _too_deep(path, "YAML") from None
        raise yaml_error(exc, path) from None
    except RecursionError:
        raise _too_deep(path, "YAML") from None


def _too_deep(path: str, kind: str) -> ConfigError:
    return ConfigError(msg("inputs.malformed-values-nest", kind=kind, MAX_NESTING=MAX_NESTING), path=path)


def yaml_error(exc: yaml.YAMLError, path: str) -> ConfigError:
    """The ConfigError for a PyYAML error, at the line and column PyYAML marks."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        return ConfigError(msg("inputs.malformed-yaml-2", problem=problem), path=path,
                           line=mark.line + 1 if mark else None,
                           column=mark.column + 1 if mark else None)
    return ConfigError(msg("inputs.malformed-yaml", exc=exc), path=path)


def load_json(text: str, path: str) -> Any:
    try:
        data = json.loads(text, parse_int=lambda digits: _int(digits, text, path))
    except json.JSONDecodeError as exc:
        raise ConfigError(msg("inputs.malformed-json", msg=exc.msg), path=path, line=exc.lineno,
                          column=exc.colno) from None
    except RecursionError:
        raise _too_deep(path, "JSON") from None
    _check_depth(data, path, "JSON")
    return data


def load_toml(text: str, path: str) -> Any:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        col = getattr(exc, "colno", None)
        problem = getattr(exc, "msg", None) or str(exc)
        if line is None:  # Python 3.11 puts the location only into the message: "… (at line 7, column 11)"
            match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", problem)
            if match:
                line, col = int(match.group(1)), int(match.group(2))
                problem = problem[: match.start()]
        raise ConfigError(msg("inputs.malformed-toml", problem=problem), path=path, line=line, column=col) from None
    except ValueError as exc:  # tomllib lets int()'s digit limit through as a bare ValueError
        raise _long_int(text, path) if _first_long_int(text) >= 0 else \
            ConfigError(msg("inputs.malformed-toml-2", exc=exc), path=path) from None
    except RecursionError:
        raise _too_deep(path, "TOML") from None
    _check_depth(data, path, "TOML")
    return data


def _int(digits: str, text: str, path: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _long_int(text, path)
    return int(digits)


def _first_long_int(text: str) -> int:
    """Where the first run of more than MAX_INT_DIGITS digits starts (-1: none); linear in the text."""
    return next((m.start() for m in re.finditer(r"[0-9_]+", text) if len(m.group()) > MAX_INT_DIGITS), -1)


def _long_int(text: str, path: str) -> ConfigError:
    pos = max(_first_long_int(text), 0)
    length = len(re.match(r"[0-9_]*", text[pos:]).group())
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return ConfigError(msg("inputs.number-written-digits", length=length, MAX_INT_DIGITS=MAX_INT_DIGITS), path=path,
                       line=line,
                       column=column)


def _check_depth(data: Any, path: str, kind: str) -> None:
    """Refuse documents nested deeper than MAX_NESTING (the parser itself may go deeper)."""
    level: list[Any] = [data]
    for _ in range(MAX_NESTING + 1):
        level = [child for item in level if isinstance(item, (dict, list))
                 for child in (item.values() if isinstance(item, dict) else item)
                 if isinstance(child, (dict, list))]
        if not level:
            return
    raise _too_deep(path, kind)
