"""The training command of a launch script and its argparse-style flags (docs/model.md#frameworks).

``launch_flags`` picks the command that runs a ``.py`` program with the most ``--`` flags (``torchrun …
pretrain_gpt.py --tensor-model-parallel-size 8 …``); ``FlagSet`` answers typed questions about its flags and
keeps, for each value, the script text and variables it came from (for provenance and for writers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ConfigError
from .shell import Script, Seg, Value, problem_of, seg_slice, text_of
from .shell_syntax import Command, Lit, line_of


@dataclass
class Flag:
    """One ``--name [values…]`` occurrence on the launch command (``--name=value`` included)."""

    name: str
    token: Value
    values: list[Value]
    line: int


class FlagSet:
    """The argparse-style flags of the script's launch command (``torchrun … pretrain_gpt.py --flags``).

    Flags before the program (``--nproc_per_node``…) are the launcher's; a flag's values are the tokens up to
    the next ``--flag``; the last occurrence wins, as with argparse. Values are resolved only when asked for.
    """

    def __init__(self, script: Script, command: Command | None) -> None:
        self.script = script
        self.command = command
        self.program = ""
        self.launcher: dict[str, Flag] = {}
        self.flags: dict[str, list[Flag]] = {}
        self.notes: list[str] = list(script.warnings)
        script.warnings.clear()
        if command is None:
            return
        current: Flag | None = None
        target = self.launcher
        for token in script.expand_words(command.words):
            raw = text_of(token)
            if not self.program and raw.endswith(".py") and not raw.startswith("-"):
                self.program, target, current = raw, {}, None
                continue
            if raw.startswith("--") and len(raw) > 2 and not problem_of(token):
                name, eq, _rest = raw.partition("=")
                head = _cut(token, 0, len(name))
                current = Flag(name, head, [_cut(token, len(name) + 1, len(raw))] if eq else [],
                               self._line(head))
                if target is self.launcher and self.program == "":
                    self.launcher[name] = current
                else:
                    self.flags.setdefault(name, []).append(current)
            elif current is not None:
                current.values.append(token)

    def _line(self, token: Value) -> int:
        span = next((s.span for s in token if s.span), None)
        if span is None:
            ref = next((s.via[0] for s in token if s.via), None)
            span = ref.span if ref else None
        if span is None and self.command is not None:
            return self.command.line
        return line_of(self.script.text, span[0]) if span else 0

    # queries
    def names(self) -> list[str]:
        return list(self.flags)

    def has(self, name: str) -> bool:
        return name in self.flags

    def last(self, name: str) -> Flag | None:
        found = self.flags.get(name)
        return found[-1] if found else None

    def where(self, name: str) -> str:
        """``--flag`` plus the variables its value came through and its line, for provenance."""
        flag = self.last(name)
        if flag is None:
            return name
        names = [r.name for tok in flag.values[:1] for s in tok for r in s.via
                 if r.name.isupper() and not r.name.endswith("_ARGS")]
        via = f" ${names[-1]}" if names else ""
        return f"{name}{via} (line {flag.line})"

    def raw(self, name: str) -> str:
        """The values of the last ``name`` as written after expansion (unresolved parts left empty)."""
        flag = self.last(name)
        return " ".join(text_of(tok) for tok in flag.values) if flag else ""

    def _resolved(self, flag: Flag, token: Value) -> str:
        problem = problem_of(token)
        if problem:
            raise ConfigError(f"{flag.name} cannot be resolved: {problem}; the estimator never runs commands — "
                              "write the value into the script (or pass --devices N for the device count)",
                              path=self.script.path, line=flag.line, key=flag.name)
        return text_of(token)

    def values(self, name: str) -> tuple[str, ...] | None:
        flag = self.last(name)
        if flag is None:
            return None
        return tuple(self._resolved(flag, tok) for tok in flag.values)

    def text(self, name: str) -> str | None:
        flag = self.last(name)
        if flag is None:
            return None
        if not flag.values:
            raise ConfigError(f"{name} needs a value", path=self.script.path, line=flag.line, key=name)
        return self._resolved(flag, flag.values[0]).strip()

    def int(self, name: str, minimum: int | None = None) -> int | None:
        raw = self.text(name)
        if raw is None:
            return None
        flag = self.last(name)
        if not re.fullmatch(r"[-+]?\d+", raw) or len(raw) > 19:
            raise ConfigError(f"{name} expects an integer, got {raw!r}", path=self.script.path,
                              line=flag.line if flag else None, key=name)
        value = int(raw)
        if minimum is not None and value < minimum:
            raise ConfigError(f"{name} must be at least {minimum}, got {value}", path=self.script.path,
                              line=flag.line if flag else None, key=name)
        return value

    def float(self, name: str) -> float | None:
        raw = self.text(name)
        if raw is None:
            return None
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if value != value or value in (float("inf"), float("-inf")):
            flag = self.last(name)
            raise ConfigError(f"{name} expects a number, got {raw!r}", path=self.script.path,
                              line=flag.line if flag else None, key=name)
        return value

    def int_list(self, name: str) -> list[int]:
        """``a,b,c`` (or space-separated values) as non-negative integers."""
        values = self.values(name)
        if values is None:
            return []
        items = [x for v in values for x in re.split(r"[,\s]+", v.strip().strip("[]")) if x]
        if not items or not all(x.isdigit() and len(x) < 10 for x in items):
            flag = self.last(name)
            raise ConfigError(f"{name} expects comma-separated non-negative integers, got {' '.join(values)!r}",
                              path=self.script.path, line=flag.line if flag else None, key=name)
        return [int(x) for x in items]

    def launcher_value(self, names: tuple[str, ...]) -> tuple[str, str | None] | None:
        """(text, problem) of the first launcher flag present among ``names``."""
        for name in names:
            flag = self.launcher.get(name)
            if flag is not None and flag.values:
                return text_of(flag.values[0]).strip(), problem_of(flag.values[0])
        return None


def _cut(token: Value, i: int, j: int) -> Value:
    """The segments covering characters [i, j) of a token's text."""
    out: list[Seg] = []
    pos = 0
    for seg in token:
        a, b = max(i, pos), min(j, pos + len(seg.text))
        if a < b or (seg.problem and i <= pos < j):
            out.append(seg_slice(seg, a - pos, b - pos) if a < b else seg)
        pos += len(seg.text)
    return tuple(out)


def launch_flags(script: Script) -> FlagSet:
    """Flags of the launch command: the command running a ``.py`` program with the most ``--`` flags."""
    best: tuple[int, Command] | None = None
    for cmd in script.commands:
        statics = ["".join(p.text for p in w.parts if isinstance(p, Lit)) for w in cmd.words]
        if not any(s.endswith(".py") for s in statics):
            continue
        fields = script.expand_words(cmd.words)
        score = sum(1 for f in fields if text_of(f).startswith("--"))
        if best is None or score > best[0]:
            best = (score, cmd)
        script.warnings.clear()
    return FlagSet(script, best[1] if best else None)


__all__ = ["Flag", "FlagSet", "launch_flags"]
