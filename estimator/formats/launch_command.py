"""The training command of a launch script and its argparse-style flags (docs/model.md#frameworks).

``launch_flags`` picks the command that runs a ``.py`` program with the most ``--`` flags (``torchrun …
pretrain_gpt.py --tensor-model-parallel-size 8 …``, the program possibly named through a variable); when no
command of the script runs one, a string variable holding such a command (``TRAINING_CMD="… python
pretrain_gpt.py ${ARGS[@]}"`` run through ``bash -c`` or a batch job) is read instead, split into words as the
shell would. ``FlagSet`` answers typed questions about its flags and keeps, for each value, the script text and
variables it came from (for provenance and for writers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ConfigError
from ..messages import Text, msg
from .flag_source import FlagQueries
from .shell import Script, Seg, Value, problem_of, seg_slice, text_of
from .shell_syntax import Command, line_of


@dataclass
class Flag:
    """One ``--name [values…]`` occurrence on the launch command (``--name=value`` included)."""

    name: str
    token: Value
    values: list[Value]
    line: int


class FlagSet(FlagQueries):
    """The argparse-style flags of the script's launch command (``torchrun … pretrain_gpt.py --flags``).

    Flags before the program (``--nproc_per_node``…) are the launcher's; a flag's values are the tokens up to
    the next ``--flag``; the last occurrence wins, as with argparse. Values are resolved only when asked for.
    """

    def __init__(self, script: Script, command: Command | None, fields: list[Value] | None = None,
                 line: int = 0) -> None:
        self.script = script
        self.path = script.path
        self.command = command
        self.line = command.line if command is not None else line
        self.program = ""
        self.launcher: dict[str, Flag] = {}
        self.flags: dict[str, list[Flag]] = {}
        if fields is None and command is not None:
            fields = script.expand_words(command.words)
        self.notes: list[Text] = list(script.warnings)
        script.warnings.clear()
        if fields is None:
            return
        current: Flag | None = None
        target = self.launcher
        for token in fields:
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
        if span is None:
            return self.line
        return line_of(self.script.text, span[0])

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
            raise ConfigError(msg("launch_command.cannot-resolved-estimator", name=flag.name, problem=problem),
                              path=self.script.path, line=flag.line, key=flag.name)
        return text_of(token)

    def values(self, name: str) -> tuple[str, ...] | None:
        flag = self.last(name)
        if flag is None:
            return None
        return tuple(self._resolved(flag, tok) for tok in flag.values)

    def locate(self, name: str) -> tuple[int | None, str]:
        flag = self.last(name)
        return (flag.line if flag else None), name

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
    """Flags of the launch command: the command running a ``.py`` program with the most ``--`` flags, among the
    commands that run (a branch the script's own variables rule out does not); else such a command held in a
    string variable; else an empty FlagSet (``command`` None, ``found`` False)."""
    best: tuple[int, Command, list[Value]] | None = None
    for cmd in script.commands:
        if script.runs(cmd) is False:
            continue
        fields = script.expand_words(cmd.words)
        script.warnings.clear()
        score = _score(fields)
        if score is not None and (best is None or score > best[0]):
            best = (score, cmd, fields)
    if best is not None:
        flags = FlagSet(script, best[1], best[2])
        if script.runs(best[1]) is None:
            flags.notes.append(msg("launch_command.training-command-line", line=best[1].line))
        return flags
    held: tuple[int, str, int, list[Value]] | None = None
    for record in script.all_assignments:
        if record.elements is not None or not record.value:
            continue
        for fields in split_commands(record.value):
            score = _score(fields)
            if score is not None and (held is None or score > held[0]):
                held = (score, record.name, record.line, fields)
    if held is None:
        return FlagSet(script, None)
    flags = FlagSet(script, None, held[3], held[2])
    flags.notes.append(msg("launch_command.training-command-read", variable=held[1], line=held[2]))
    return flags


def _score(fields: list[Value]) -> int | None:
    """The number of ``--`` flags of a command that runs a ``.py`` program, else None."""
    texts = [text_of(f) for f in fields]
    if not any(t.endswith(".py") and not t.startswith("-") for t in texts):
        return None
    return sum(1 for t in texts if t.startswith("--"))


_COMMAND_BREAK = re.compile(r"&&|\|\||[;|\n]")


def split_commands(value: Value) -> list[list[Value]]:
    """The commands of a string as ``bash -c`` would see them: words split at blanks, commands at ``;``, ``&&``,
    ``||``, ``|`` and newlines (quotes inside the string are not interpreted)."""
    commands: list[list[Value]] = [[]]
    current: list[Seg] = []

    def end_word() -> None:
        nonlocal current
        if current:
            commands[-1].append(tuple(current))
        current = []

    for seg in value:
        if seg.problem:
            current.append(seg)
            continue
        pos = 0
        for piece in re.finditer(r"[ \t]+|&&|\|\||[;|\n]", seg.text):
            if piece.start() > pos:
                current.append(seg_slice(seg, pos, piece.start()))
            end_word()
            if _COMMAND_BREAK.fullmatch(piece.group()):
                commands.append([])
            pos = piece.end()
        if pos < len(seg.text):
            current.append(seg_slice(seg, pos, len(seg.text)))
    end_word()
    return [c for c in commands if c]


__all__ = ["Flag", "FlagSet", "launch_flags"]
