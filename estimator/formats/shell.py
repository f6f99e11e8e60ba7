"""A small, safe evaluator for the bash subset launch scripts use (docs/model.md#frameworks). Nothing is ever executed.

Understood: ``NAME=value`` (also after ``export``/``declare``/``readonly``/``local``, and ``+=``), arrays
(``NAME=( … )``, ``NAME+=( … )``, ``${NAME[@]}``, ``"${NAME[@]}"``, ``${NAME[*]}``, ``${NAME[i]}``), single and
double quotes, backslash-newline continuations, comments, ``$VAR``/``${VAR}``/``${VAR:-default}`` (``-``,
``:=``, ``=``, ``:+``, ``+``), integer ``$((…))`` arithmetic, and word splitting of unquoted expansions.
Command substitutions, positional parameters and other expansions are *unresolved*: a value that depends on
them is reported only when it is needed, naming the variable (``${1:-x}`` is ``x``: the script is read as run
without arguments). ``if``/``elif``/``else`` branches are followed when their tests can be decided from the
script's own variables (``shell_conditions``); otherwise, and inside loops, ``case`` and functions, assignments
are kept but marked conditional.

Every piece of expanded text remembers where it came from (``Seg.span`` for literal script text, ``Seg.via``
for the variables it travelled through), so a writer can edit the literal that defines a value. The syntax
(text to commands and words) is ``shell_syntax``; the launch command's flags are ``launch_command``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..limits import MAX_NESTING, MAX_SHELL_VALUE_CHARS, MAX_SHELL_VALUE_PARTS
from ..messages import Text, msg
from .shell_conditions import test_value
from .shell_syntax import NAME, Arith, Array, Command, IfBlock, Lit, Opaque, Param, Word, shorten, static_text, tokenize

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_DECLARERS = {"export", "declare", "typeset", "readonly", "local"}
_MAX_INT = 2 ** 63


# ------------------------------------------------------------------------------------------ values
@dataclass(frozen=True)
class Ref:
    """A variable reference ``name`` written at ``span`` (the ``$NAME``/``${…}`` text) in the script."""

    name: str
    span: tuple[int, int]


@dataclass(frozen=True)
class Seg:
    """A run of expanded text. ``span``: where the same characters stand in the script (None when
    computed); ``via``: the variable references it was expanded through, outermost first; ``problem``:
    why it could not be resolved; ``arith``: the variable whose arithmetic assignment produced it."""

    text: str
    span: tuple[int, int] | None = None
    via: tuple[Ref, ...] = ()
    problem: str | None = None
    arith: str | None = None
    sep: bool = False  # the boundary between two array elements of ${NAME[@]} (a blank when joined)

    def inside(self, ref: Ref) -> Seg:
        return Seg(self.text, self.span, (ref, *self.via), self.problem, self.arith, self.sep)


Value = tuple[Seg, ...]


def text_of(value: Value) -> str:
    """The expanded text of a value (unresolved parts contribute nothing)."""
    return "".join(s.text for s in value)


def problem_of(value: Value) -> str | None:
    """Why a value could not be resolved (the first unresolved part), or None."""
    return next((s.problem for s in value if s.problem), None)


@dataclass
class Assignment:
    """One ``NAME=value`` (or ``NAME+=value``); ``conditional`` inside if/loop/case/function bodies,
    ``arith_deps`` the names a ``$((…))`` value is computed from."""

    name: str
    value: Value
    line: int
    conditional: bool
    word: Word
    value_parts: tuple = ()
    arith_deps: tuple[str, ...] = ()
    elements: tuple[Value, ...] | None = None  # an array assignment's elements (after word splitting)


def _rooted(problem: str) -> bool:
    """Whether a problem message already names the variable assignment it starts from."""
    return " (line " in problem


# ------------------------------------------------------------------------------------------ script
@dataclass
class Script:
    """A tokenized script with its variables resolved in order (``pinned`` names keep a fixed value)."""

    text: str
    path: str
    commands: list[Command]
    pinned: dict[str, str] = field(default_factory=dict)
    vars: dict[str, Value] = field(default_factory=dict)
    arrays: dict[str, list[Value]] = field(default_factory=dict)
    assignments: dict[str, Assignment] = field(default_factory=dict)  # the last assignment of each name
    all_assignments: list[Assignment] = field(default_factory=list)
    warnings: list[Text] = field(default_factory=list)
    blocks: list[IfBlock] = field(default_factory=list)
    decisions: dict[int, int | None] = field(default_factory=dict)  # if-block -> branch run (-1: none; None: ?)
    array_spans: list[tuple[int, int]] = field(default_factory=list)  # the ( … ) of every array literal

    @classmethod
    def parse(cls, text: str, path: str, pinned: dict[str, str] | None = None) -> Script:
        try:
            program = tokenize(text, path)
            script = cls(text, path, program.commands, dict(pinned or {}), blocks=program.blocks)
            script._evaluate()
        except RecursionError:
            raise ConfigError(msg("shell.expansions-quotes-nest"), path=path) from None
        return script

    # which commands run
    def runs(self, cmd: Command) -> bool | None:
        """True when ``cmd`` runs, False when an if-branch around it is not taken, None when that cannot be
        told (an undecidable test, or inside a loop, case or function)."""
        state: bool | None = True
        for block, branch in cmd.branches:
            if block not in self.decisions:
                self.decisions[block] = self._decide(self.blocks[block])
            taken = self.decisions[block]
            if taken is None:
                state = None
            elif taken != branch:
                return False
        return None if cmd.depth > len(cmd.branches) else state

    def _decide(self, block: IfBlock) -> int | None:
        for k, test in enumerate(block.tests):
            if test is None:
                return k
            value = test_value(test, self._test_words)
            if value is None:
                return None
            if value:
                return k
        return -1

    def _test_words(self, words: object) -> list[str] | None:
        fields = self.expand_words(list(words))  # type: ignore[call-overload]
        self.warnings.clear()
        if any(problem_of(f) for f in fields):
            return None
        return [text_of(f) for f in fields]

    # evaluation of assignments, in order
    def _evaluate(self) -> None:
        for name, value in self.pinned.items():
            self.vars[name] = (Seg(value, None, (), None, None),)
        for cmd in self.commands:
            state = self.runs(cmd)
            if state is False:
                continue
            conditional = state is None
            words = list(cmd.words)
            head = static_text(words[0])
            if head in _DECLARERS:
                words = [w for w in words[1:] if not (static_text(w) or "").startswith("-")]
                for w in words:
                    if not self._assign(w, cmd, conditional) and head != "export":
                        name = static_text(w)
                        if name and NAME.fullmatch(name):
                            self.vars.setdefault(name, (Seg("", None, (), None, None),))
                continue
            if head == "unset":
                for w in words[1:]:
                    self.vars.pop(static_text(w) or "", None)
                    self.arrays.pop(static_text(w) or "", None)
                continue
            n_assign = 0
            for w in words:
                if not _assign_name(w):
                    break
                n_assign += 1
            if n_assign == len(words):
                for w in words:
                    self._assign(w, cmd, conditional)

    def _assign(self, word: Word, cmd: Command, conditional: bool) -> bool:
        found = _assign_name(word)
        if not found:
            return False
        name, append, rest = found
        if name in self.pinned:
            return True
        if len(rest) == 1 and isinstance(rest[0], Array):
            return self._assign_array(name, append, rest[0], word, cmd, conditional)
        try:
            value = self.expand_value(rest)
        except ConfigError as exc:  # too large: say which assignment
            raise ConfigError(exc.bare_message, path=self.path, key=name, line=cmd.line) from None
        deps: tuple[str, ...] = ()
        if len(rest) == 1 and isinstance(rest[0], Arith):
            value = tuple(Seg(s.text, s.span, s.via, s.problem, name) for s in value)
            deps = tuple(NAME.findall(rest[0].expr))
        if append:
            value = bounded(self.vars.get(name, ()) + value, 0, 0, self.path, name, cmd.line)
        value = self._rooted_value(name, cmd, value)
        self.vars[name] = value
        if name in self.arrays:  # a plain assignment to an array sets its element 0
            self.arrays[name] = [value, *self.arrays[name][1:]]
        record = Assignment(name, value, cmd.line, conditional, word, tuple(rest), deps)
        self.assignments[name] = record
        self.all_assignments.append(record)
        return True

    def _assign_array(self, name: str, append: bool, array: Array, word: Word, cmd: Command,
                      conditional: bool) -> bool:
        self.array_spans.append(array.span)
        elements = [self._rooted_value(name, cmd, e) for e in self.expand_words(array.elements)]
        if append:
            before = self.arrays.get(name)
            if before is None:
                before = [self.vars[name]] if name in self.vars else []
            elements = before + elements
            bounded(tuple(seg for element in elements for seg in element), 0, 0, self.path, name, cmd.line)
        self.arrays[name] = elements
        self.vars[name] = elements[0] if elements else ()
        record = Assignment(name, (), cmd.line, conditional, word, (array,), (), tuple(elements))
        self.assignments[name] = record
        self.all_assignments.append(record)
        return True

    def _rooted_value(self, name: str, cmd: Command, value: Value) -> Value:
        """``value`` with an unresolved part's problem saying which assignment it comes through."""
        if problem_of(value) and not _rooted(problem_of(value) or ""):
            root = f"{name} (line {cmd.line}) comes from {problem_of(value)}"
            return tuple(Seg(s.text, s.span, s.via, root if s.problem else None, s.arith, s.sep) for s in value)
        return value

    # expansion
    def lookup(self, name: str) -> Value | None:
        if name in self.vars:
            return self.vars[name]
        return None

    def _param(self, part: Param) -> Value:
        ref = Ref(part.name, part.span)
        if part.name in ("@", "*"):
            self.warnings.append(msg("shell.script-passes-own", name=part.name))
            return ()
        if not NAME.fullmatch(part.name):
            if part.op in (":-", "-", ":=", "="):  # read as run without arguments: the default applies
                return tuple(s.inside(ref) for s in self.expand_value(part.arg or ()))
            if part.op in (":+", "+"):
                return ()
            return (Seg("", None, (ref,), f"${part.name} is a positional or special parameter of the shell"),)
        if part.index is not None:
            return self._subscript(part, ref)
        value = self.lookup(part.name)
        is_set = value is not None
        empty = not is_set or (not problem_of(value) and text_of(value) == "")
        if (part.op in (":-", ":=") and empty) or (part.op in ("-", "=") and not is_set):
            default = self.expand_value(part.arg or ())
            if part.op in (":=", "="):
                self.vars[part.name] = default
            return tuple(s.inside(ref) for s in default)
        if part.op in (":+", "+"):
            use = not empty if part.op == ":+" else is_set
            return tuple(s.inside(ref) for s in self.expand_value(part.arg or ())) if use else ()
        if value is None:
            return (Seg("", None, (ref,), f"{part.name} is not set in the script"),)
        return tuple(s.inside(ref) for s in value)

    def _subscript(self, part: Param, ref: Ref) -> Value:
        """``${NAME[@]}`` (elements separated by ``sep`` boundaries), ``${NAME[*]}`` (joined by blanks) or
        ``${NAME[i]}``; a plain variable is an array of one element."""
        elements = self.arrays.get(part.name)
        if elements is None:
            value = self.lookup(part.name)
            if value is None:
                return (Seg("", None, (ref,), f"{part.name} is not set in the script"),)
            elements = [value]
        if part.index in ("@", "*"):
            out: list[Seg] = []
            for k, element in enumerate(elements):
                if k:
                    out.append(Seg(" ", None, (ref,), None, None, part.index == "@"))
                out.extend(s.inside(ref) for s in element)
            return tuple(out)
        k = int(part.index or 0)
        return tuple(s.inside(ref) for s in elements[k]) if k < len(elements) else ()

    def _part(self, part: object) -> Value:
        if isinstance(part, Lit):
            return (Seg(part.text, part.span),)
        if isinstance(part, Param):
            return self._param(part)
        if isinstance(part, Arith):
            try:
                return (Seg(str(self.arith(part.expr)), None),)
            except ValueError as exc:
                msg = str(exc) if _rooted(str(exc)) else f"$(({shorten(part.expr)})): {exc}"
                return (Seg("", None, (), msg),)
        if isinstance(part, Array):
            return (Seg("", None, (), "an array literal outside an assignment"),)
        assert isinstance(part, Opaque)
        return (Seg("", None, (), part.reason),)

    def expand_value(self, parts: tuple | list) -> Value:
        """Expansion without word splitting (assignment values, ``${X:-word}`` arguments)."""
        out: list[Seg] = []
        chars = 0
        for part in parts:
            segs = bounded(self._part(part), len(out), chars, self.path)
            chars += sum(len(seg.text) for seg in segs)
            out.extend(segs)
        return tuple(out)

    def expand_words(self, words: tuple[Word, ...] | list[Word]) -> list[Value]:
        """Command words after expansion and word splitting of unquoted expansions (no globbing)."""
        fields: list[Value] = []
        pieces = chars = 0
        for word in words:
            current: list[Seg] = []
            started = False
            for part in word.parts:
                quoted = getattr(part, "quoted", True)
                segs = bounded(self._part(part), pieces, chars, self.path)
                pieces, chars = pieces + len(segs), chars + sum(len(seg.text) for seg in segs)
                if quoted or isinstance(part, Lit):
                    for seg in segs:
                        if seg.sep:  # "${NAME[@]}": every element is a word of its own
                            fields.append(tuple(current))
                            current = []
                        else:
                            current.append(seg)
                    if segs or not (isinstance(part, Param) and part.index == "@"):
                        started = True
                    continue
                for seg in segs:
                    if seg.sep:
                        if started:
                            fields.append(tuple(current))
                        current, started = [], False
                        continue
                    if seg.problem:
                        current.append(seg)
                        started = True
                        continue
                    for piece, gap in _split(seg):
                        if gap:
                            if started:
                                fields.append(tuple(current))
                            current, started = [], False
                        if piece is not None:
                            current.append(piece)
                            started = True
            if started:
                fields.append(tuple(current))
        return fields

    # arithmetic
    def arith(self, expr: str, depth: int = 0) -> int:
        if depth > 20:
            raise ValueError("variables refer to each other too deeply")
        return _Arith(expr, self, depth).parse()


def bounded(value: Value, pieces: int, chars: int, path: str, name: str | None = None,
            line: int | None = None) -> Value:
    """``value`` when, added to ``pieces`` pieces and ``chars`` characters already expanded, it stays within
    MAX_SHELL_VALUE_CHARS characters and MAX_SHELL_VALUE_PARTS pieces (``X=$X$X`` doubles a value every line)."""
    if pieces + len(value) > MAX_SHELL_VALUE_PARTS or \
            chars + sum(len(seg.text) for seg in value) > MAX_SHELL_VALUE_CHARS:
        raise ConfigError(msg("shell.variable-expands-more", value=MAX_SHELL_VALUE_CHARS >> 20,
                              MAX_SHELL_VALUE_PARTS=MAX_SHELL_VALUE_PARTS), path=path, key=name, line=line)
    return value


def _assign_name(word: Word) -> tuple[str, bool, tuple] | None:
    """(name, append, value parts) when the word is ``NAME=value`` / ``NAME+=value``."""
    if not word.parts or not isinstance(word.parts[0], Lit) or word.parts[0].quoted:
        return None
    first = word.parts[0]
    m = _ASSIGN.match(first.text)
    if not m:
        return None
    rest_text = first.text[m.end():]
    rest = ((Lit(rest_text, (first.span[0] + m.end(), first.span[1]), False),) if rest_text else ()) + \
        tuple(word.parts[1:])
    return m.group(1), bool(m.group(2)), rest


def _split(seg: Seg) -> Iterator[tuple[Seg | None, bool]]:
    """Word splitting of an unquoted expansion: pieces with their spans, and field boundaries."""
    pos = 0
    for m in re.finditer(r"[ \t\n]+", seg.text):
        if m.start() > pos:
            yield seg_slice(seg, pos, m.start()), False
        yield None, True
        pos = m.end()
    if pos < len(seg.text):
        yield seg_slice(seg, pos, len(seg.text)), False


def seg_slice(seg: Seg, i: int, j: int) -> Seg:
    """Characters [i, j) of a segment, with the matching part of its script span."""
    span = (seg.span[0] + i, seg.span[0] + j) if seg.span else None
    return Seg(seg.text[i:j], span, seg.via, seg.problem, seg.arith)


# ------------------------------------------------------------------------------------------ arithmetic
class _Arith:
    """Integer arithmetic of ``$((…))``: + - * / % ** ( ), unary ±, names and ``$NAME``/``${NAME}``."""

    _TOKEN = re.compile(r"\s*(?:(\d+)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$?([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[-+*/%()]))")

    def __init__(self, expr: str, script: Script, depth: int) -> None:
        self.tokens: list[tuple[str, object]] = []
        pos = 0
        expr = expr.strip()
        while pos < len(expr):
            m = self._TOKEN.match(expr, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot evaluate {expr[pos:pos + 10]!r}")
            if m.group(1):
                self.tokens.append(("n", int(m.group(1))))
            elif m.group(2) or m.group(3):
                self.tokens.append(("v", m.group(2) or m.group(3)))
            else:
                self.tokens.append(("o", m.group(4)))
            pos = m.end()
            while pos < len(expr) and expr[pos].isspace():
                pos += 1
        self.k = 0
        self.script = script
        self.depth = depth
        nesting = deepest = 0
        for kind, tok in self.tokens:
            nesting += (tok == "(") - (tok == ")") if kind == "o" else 0
            deepest = max(deepest, nesting)
        if deepest > MAX_NESTING or sum(tok == "**" for _, tok in self.tokens) > MAX_NESTING:
            raise ValueError(f"nested more than {MAX_NESTING} levels deep (the limit)")

    def parse(self) -> int:
        if not self.tokens:
            return 0
        value = self.sum()
        if self.k != len(self.tokens):
            raise ValueError("unexpected text after the expression")
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.k][1] if self.k < len(self.tokens) and self.tokens[self.k][0] == "o" else None

    def sum(self) -> int:
        value = self.product()
        while self._peek() in ("+", "-"):
            op = self._peek()
            self.k += 1
            rhs = self.product()
            value = _check(value + rhs if op == "+" else value - rhs)
        return value

    def product(self) -> int:
        value = self.power()
        while self._peek() in ("*", "/", "%"):
            op = self._peek()
            self.k += 1
            rhs = self.power()
            if op == "*":
                value = _check(value * rhs)
            elif rhs == 0:
                raise ValueError("division by zero")
            else:
                q = abs(value) // abs(rhs) * (1 if (value >= 0) == (rhs >= 0) else -1)  # truncates like bash
                value = q if op == "/" else value - q * rhs
        return value

    def power(self) -> int:
        base = self.unary()
        if self._peek() == "**":
            self.k += 1
            exp = self.power()
            if exp < 0 or (abs(base) > 1 and exp > 64):
                raise ValueError("exponent out of range")
            return _check(base ** exp)
        return base

    def unary(self) -> int:
        if self._peek() in ("+", "-"):
            op = self._peek()
            self.k += 1
            value = self.unary()
            return -value if op == "-" else value
        if self._peek() == "(":
            self.k += 1
            value = self.sum()
            if self._peek() != ")":
                raise ValueError("missing ')'")
            self.k += 1
            return value
        if self.k >= len(self.tokens):
            raise ValueError("incomplete expression")
        kind, tok = self.tokens[self.k]
        self.k += 1
        if kind == "n":
            return _check(int(tok))  # type: ignore[call-overload]
        if kind == "v":
            return self._variable(str(tok))
        raise ValueError(f"unexpected {tok!r}")

    def _variable(self, name: str) -> int:
        value = self.script.lookup(name)
        if value is None:
            raise ValueError(f"{name} is not set in the script")
        problem = problem_of(value)
        if problem:
            raise ValueError(problem if _rooted(problem) else f"{name} is unresolved: {problem}")
        text = text_of(value).strip()
        if not text:
            return 0
        if re.fullmatch(r"[-+]?\d+", text):
            return _check(int(text))
        return self.script.arith(text, self.depth + 1)


def _check(value: int) -> int:
    if abs(value) >= _MAX_INT:
        raise ValueError("result out of the 64-bit range")
    return value


# ------------------------------------------------------------------------------------------ spans
def literal_span(token: Value) -> tuple[int, int] | None:
    """The script span defining a token when it is one literal run (possibly behind variables)."""
    segs = [s for s in token if s.text or s.problem]
    if len(segs) == 1 and segs[0].span and not segs[0].problem:
        return segs[0].span
    return None


def local_span(token: Value, depth: int) -> tuple[int, int] | None:
    """Where a token stands at expansion depth ``depth`` (the literal, or the ``$VAR`` that produced it)."""
    segs = [s for s in token if s.text or s.problem or s.via]
    if not segs:
        return None
    starts, ends = [], []
    for seg in segs:
        if len(seg.via) > depth:
            starts.append(seg.via[depth].span[0])
            ends.append(seg.via[depth].span[1])
        elif len(seg.via) == depth and seg.span:
            starts.append(seg.span[0])
            ends.append(seg.span[1])
        else:
            return None
    return min(starts), max(ends)


__all__ = ["Assignment", "Ref", "Script", "Seg", "Value", "literal_span", "local_span", "problem_of", "seg_slice",
           "text_of"]
