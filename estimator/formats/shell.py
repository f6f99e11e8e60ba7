"""A small, safe reader for the bash subset launch scripts use (spec §11.2). Nothing is ever executed.

Understood: ``NAME=value`` (also after ``export``/``declare``/``readonly``/``local``, and ``+=``), single and
double quotes, backslash-newline continuations, comments, ``$VAR``/``${VAR}``/``${VAR:-default}`` (``-``,
``:=``, ``=``, ``:+``, ``+``), integer ``$((…))`` arithmetic, and word splitting of unquoted expansions.
Command substitutions, positional parameters and other expansions are *unresolved*: a value that depends on
them is reported only when it is needed, naming the variable. Assignments inside ``if``/``for``/``case``/
functions are kept but marked conditional.

Every piece of expanded text remembers where it came from (``Seg.span`` for literal script text, ``Seg.via``
for the variables it travelled through), so a writer can edit the literal that defines a value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ConfigError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_DECLARERS = {"export", "declare", "typeset", "readonly", "local"}
_OPENERS = {"if", "for", "while", "until", "case", "select"}
_CLOSERS = {"fi", "done", "esac"}
_LEADING = {"then", "else", "elif", "do", "!", "{", "}", "time"}
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

    def inside(self, ref: Ref) -> Seg:
        return Seg(self.text, self.span, (ref, *self.via), self.problem, self.arith)


Value = tuple[Seg, ...]


def text_of(value: Value) -> str:
    return "".join(s.text for s in value)


def problem_of(value: Value) -> str | None:
    return next((s.problem for s in value if s.problem), None)


# ------------------------------------------------------------------------------------------ parts
@dataclass(frozen=True)
class Lit:
    text: str
    span: tuple[int, int]
    quoted: bool


@dataclass(frozen=True)
class Param:
    name: str
    op: str  # "" | ":-" | "-" | ":=" | "=" | ":+" | "+" | "?" (unsupported)
    arg: tuple | None  # the word after the operator (a tuple of parts)
    span: tuple[int, int]
    quoted: bool


@dataclass(frozen=True)
class Arith:
    expr: str
    span: tuple[int, int]
    quoted: bool


@dataclass(frozen=True)
class Opaque:
    """Something that would need execution (command substitution) or is not supported."""

    reason: str
    span: tuple[int, int]
    quoted: bool


@dataclass(frozen=True)
class Word:
    parts: tuple
    span: tuple[int, int]


@dataclass(frozen=True)
class Command:
    words: tuple[Word, ...]
    line: int
    depth: int  # > 0: inside if/for/while/case/function (conditional)


@dataclass
class Assignment:
    name: str
    value: Value
    line: int
    conditional: bool
    word: Word
    value_parts: tuple = ()
    arith_deps: tuple[str, ...] = ()


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def column_of(text: str, pos: int) -> int:
    return pos - (text.rfind("\n", 0, pos) + 1) + 1


# ------------------------------------------------------------------------------------------ lexer
class _Lexer:
    def __init__(self, text: str, path: str) -> None:
        self.t = text
        self.path = path
        self.i = 0
        self.commands: list[Command] = []
        self.words: list[Word] = []
        self.parts: list = []
        self.word_start = -1
        self.depth = 0
        self.skip_next = False  # the next word is a redirection target
        self.heredocs: list[tuple[str, bool]] = []

    def error(self, message: str, pos: int) -> ConfigError:
        return ConfigError(message, path=self.path, line=line_of(self.t, pos), column=column_of(self.t, pos))

    # word assembly
    def add(self, part: object, start: int) -> None:
        if self.word_start < 0:
            self.word_start = start
        self.parts.append(part)

    def end_word(self) -> None:
        if self.word_start >= 0:
            word = Word(tuple(self.parts), (self.word_start, self.i))
            if self.skip_next:
                self.skip_next = False
            else:
                self.words.append(word)
        self.parts, self.word_start = [], -1

    def end_command(self) -> None:
        self.end_word()
        words = self.words
        self.words = []
        if words and _static(words[0]) == "function":
            self.depth += any(_static(w) == "{" for w in words)
            return
        while words and _static(words[0]) in _LEADING | _OPENERS | _CLOSERS:
            key = _static(words[0])
            if key in _OPENERS:
                self.depth += 1
                return  # the rest of an if/while head is a test, a for head a list: not assignments
            if key in _CLOSERS:
                self.depth = max(0, self.depth - 1)
            elif key == "{":
                self.depth += 1
            elif key == "}":
                self.depth = max(0, self.depth - 1)
            words = words[1:]
        if words:
            self.commands.append(Command(tuple(words), line_of(self.t, words[0].span[0]), self.depth))

    def run(self) -> list[Command]:
        t, n = self.t, len(self.t)
        while self.i < n:
            c = t[self.i]
            if c == "\\" and self.i + 1 < n and t[self.i + 1] == "\n":
                self.i += 2
            elif c == "\\" and self.i + 1 < n:
                self.add(Lit(t[self.i + 1], (self.i + 1, self.i + 2), True), self.i)
                self.i += 2
            elif c in " \t\r":
                self.end_word()
                self.i += 1
            elif c == "\n":
                self.end_command()
                self.i += 1
                self._heredoc_bodies()
            elif c == "#" and self.word_start < 0:
                while self.i < n and t[self.i] != "\n":
                    self.i += 1
            elif c == "'":
                end = t.find("'", self.i + 1)
                if end < 0:
                    raise self.error("unterminated single quote", self.i)
                self.add(Lit(t[self.i + 1:end], (self.i + 1, end), True), self.i)
                self.i = end + 1
            elif c == '"':
                self._double()
            elif c == "$" or c == "`":
                self.add(self._dollar(False), self.i)
            elif c in ";&|":
                self.end_word()
                self.i += 2 if t[self.i:self.i + 2] in (";;", "&&", "||", "|&") else 1
                self.end_command()
            elif c in "()":
                if c == "(" and self.parts and isinstance(self.parts[-1], Lit) and \
                        self.parts[-1].text.endswith("=") and not self.parts[-1].quoted:
                    start = self.i
                    close = _match(t, self.i, "(", ")")
                    if close < 0:
                        raise self.error("unterminated array '('", start)
                    self.i = close + 1
                    self.add(Opaque("arrays are not supported", (start, self.i), False), start)
                    continue
                self.end_word()
                if c == "(" and t[self.i:self.i + 2] == "()" and self.words:
                    self.i += 2  # function definition: its { body } counts as conditional
                    self.end_command()
                    continue
                self.i += 1
                self.end_command()
            elif c in "<>":
                if self.parts and all(isinstance(p, Lit) and p.text.isdigit() for p in self.parts):
                    self.parts, self.word_start = [], -1  # the fd number of 2>&1
                self.end_word()
                op = re.match(r"<<<|<<-?|>>|>&|<&|>\||<>|[<>]", t[self.i:])
                assert op is not None
                self.i += len(op.group())
                if op.group().startswith("<<") and op.group() != "<<<":
                    self._heredoc_head(op.group() == "<<-")
                else:
                    self.skip_next = True
            else:
                start = self.i
                while self.i < n and t[self.i] not in " \t\r\n\\'\"$`;&|()<>":
                    self.i += 1
                if self.i == start:  # a lone character the loop above does not take
                    self.i += 1
                self.add(Lit(t[start:self.i], (start, self.i), False), start)
        self.end_command()
        return self.commands

    def _double(self) -> None:
        t, n = self.t, len(self.t)
        start = self.i
        self.i += 1
        run = self.i
        parts: list = []

        def flush(stop: int) -> None:
            if stop > run:
                parts.append(Lit(t[run:stop], (run, stop), True))

        while True:
            if self.i >= n:
                raise self.error("unterminated double quote", start)
            c = t[self.i]
            if c == '"':
                flush(self.i)
                self.i += 1
                break
            if c == "\\" and self.i + 1 < n and t[self.i + 1] in '$`"\\\n':
                flush(self.i)
                if t[self.i + 1] != "\n":
                    parts.append(Lit(t[self.i + 1], (self.i + 1, self.i + 2), True))
                self.i += 2
                run = self.i
            elif c in "$`":
                flush(self.i)
                parts.append(self._dollar(True))
                run = self.i
            else:
                self.i += 1
        if not parts:
            parts.append(Lit("", (start + 1, start + 1), True))
        for part in parts:
            self.add(part, start)

    def _dollar(self, quoted: bool) -> object:
        t, n, start = self.t, len(self.t), self.i
        if t[start] == "`":
            end = start + 1
            while end < n and t[end] != "`":
                end += 2 if t[end] == "\\" else 1
            if end >= n:
                raise self.error("unterminated backquote", start)
            self.i = end + 1
            return Opaque(f"command substitution `{_short(t[start + 1:end])}` (never executed)",
                          (start, self.i), quoted)
        nxt = t[start + 1:start + 2]
        if t.startswith("$((", start):
            close = _match(t, start + 1, "(", ")")
            if close < 0 or t[close - 1] != ")":
                raise self.error("unterminated $((", start)
            self.i = close + 1
            return Arith(t[start + 3:close - 1], (start, self.i), quoted)
        if nxt == "(":
            close = _match(t, start + 1, "(", ")")
            if close < 0:
                raise self.error("unterminated $(", start)
            self.i = close + 1
            return Opaque(f"command substitution $({_short(t[start + 2:close])}) (never executed)",
                          (start, self.i), quoted)
        if nxt == "{":
            close = _match(t, start + 1, "{", "}")
            if close < 0:
                raise self.error("unterminated ${", start)
            self.i = close + 1
            return self._brace(t[start + 2:close], start + 2, (start, self.i), quoted)
        m = _NAME.match(t, start + 1)
        if m:
            self.i = m.end()
            return Param(m.group(), "", None, (start, self.i), quoted)
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.i = start + 2
            return Param(nxt, "", None, (start, self.i), quoted)
        self.i = start + 1
        return Lit("$", (start, start + 1), quoted)

    def _brace(self, body: str, body_at: int, span: tuple[int, int], quoted: bool) -> object:
        m = _NAME.match(body) or re.match(r"[0-9@*#?$!-]", body)
        if not m:
            return Opaque(f"unsupported expansion ${{{_short(body)}}}", span, quoted)
        rest = body[m.end():]
        if not rest:
            return Param(m.group(), "", None, span, quoted)
        op = re.match(r":-|:=|:\+|-|=|\+", rest)
        if not op:
            return Opaque(f"unsupported expansion ${{{_short(body)}}}", span, quoted)
        sub = _Lexer(self.t, self.path)
        arg_at = body_at + m.end() + len(op.group())
        sub.i = arg_at
        arg_parts = sub.parts_until(arg_at + len(rest) - len(op.group()), quoted)
        return Param(m.group(), op.group(), tuple(arg_parts), span, quoted)

    def parts_until(self, stop: int, quoted: bool) -> list:
        """Parts of a ``${VAR:-word}`` argument (quotes and expansions allowed, no splitting)."""
        t = self.t
        out: list = []
        while self.i < stop:
            c = t[self.i]
            if c == "'" and not quoted:
                end = t.find("'", self.i + 1, stop)
                end = stop if end < 0 else end
                out.append(Lit(t[self.i + 1:end], (self.i + 1, end), True))
                self.i = end + 1
            elif c in "$`":
                out.append(self._dollar(True))
            elif c == '"' and not quoted:
                self.i += 1
            else:
                start = self.i
                while self.i < stop and t[self.i] not in "$`" and not (t[self.i] in "'\"" and not quoted):
                    self.i += 1
                out.append(Lit(t[start:self.i], (start, self.i), True))
        return out

    def _heredoc_head(self, strip_tabs: bool) -> None:
        t, n = self.t, len(self.t)
        while self.i < n and t[self.i] in " \t":
            self.i += 1
        m = re.match(r"['\"]?([A-Za-z0-9_]+)['\"]?", t[self.i:])
        if not m:
            raise self.error("here-document without a delimiter", self.i)
        self.i += len(m.group())
        self.heredocs.append((m.group(1), strip_tabs))

    def _heredoc_bodies(self) -> None:
        for delim, strip_tabs in self.heredocs:
            while self.i < len(self.t):
                end = self.t.find("\n", self.i)
                end = len(self.t) if end < 0 else end
                line = self.t[self.i:end]
                self.i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
        self.heredocs = []


def _match(t: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``i`` (quotes skipped), or -1."""
    depth = 0
    j = i
    while j < len(t):
        c = t[j]
        if c == "\\":
            j += 2
            continue
        if c == "'" and open_ != "{":
            k = t.find("'", j + 1)
            if k < 0:
                return -1
            j = k + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _rooted(problem: str) -> bool:
    """Whether a problem message already names the variable assignment it starts from."""
    return " (line " in problem


def _short(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= 60 else s[:57] + "..."


def _static(word: Word) -> str | None:
    """The text of a word made only of unquoted literals, else None."""
    if all(isinstance(p, Lit) and not p.quoted for p in word.parts):
        return "".join(p.text for p in word.parts)
    return None


# ------------------------------------------------------------------------------------------ script
@dataclass
class Script:
    """A tokenized script with its variables resolved in order (``pinned`` names keep a fixed value)."""

    text: str
    path: str
    commands: list[Command]
    pinned: dict[str, str] = field(default_factory=dict)
    vars: dict[str, Value] = field(default_factory=dict)
    assignments: dict[str, Assignment] = field(default_factory=dict)  # the last assignment of each name
    all_assignments: list[Assignment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str, path: str, pinned: dict[str, str] | None = None) -> Script:
        commands = _Lexer(text, path).run()
        script = cls(text, path, commands, dict(pinned or {}))
        script._evaluate()
        return script

    # evaluation of assignments, in order
    def _evaluate(self) -> None:
        for name, value in self.pinned.items():
            self.vars[name] = (Seg(value, None, (), None, None),)
        for cmd in self.commands:
            words = list(cmd.words)
            head = _static(words[0])
            if head in _DECLARERS:
                words = [w for w in words[1:] if not (_static(w) or "").startswith("-")]
                for w in words:
                    if not self._assign(w, cmd) and head != "export":
                        name = _static(w)
                        if name and _NAME.fullmatch(name):
                            self.vars.setdefault(name, (Seg("", None, (), None, None),))
                continue
            if head == "unset":
                for w in words[1:]:
                    self.vars.pop(_static(w) or "", None)
                continue
            n_assign = 0
            for w in words:
                if not _assign_name(w):
                    break
                n_assign += 1
            if n_assign == len(words):
                for w in words:
                    self._assign(w, cmd)

    def _assign(self, word: Word, cmd: Command) -> bool:
        found = _assign_name(word)
        if not found:
            return False
        name, append, rest = found
        if name in self.pinned:
            return True
        value = self.expand_value(rest)
        deps: tuple[str, ...] = ()
        if len(rest) == 1 and isinstance(rest[0], Arith):
            value = tuple(Seg(s.text, s.span, s.via, s.problem, name) for s in value)
            deps = tuple(_NAME.findall(rest[0].expr))
        if append:
            value = self.vars.get(name, ()) + value
        if problem_of(value) and not _rooted(problem_of(value)):
            root = f"{name} (line {cmd.line}) comes from {problem_of(value)}"
            value = tuple(Seg(s.text, s.span, s.via, root if s.problem else None, s.arith) for s in value)
        conditional = cmd.depth > 0
        self.vars[name] = value
        record = Assignment(name, value, cmd.line, conditional, word, tuple(rest), deps)
        self.assignments[name] = record
        self.all_assignments.append(record)
        return True

    # expansion
    def lookup(self, name: str) -> Value | None:
        if name in self.vars:
            return self.vars[name]
        return None

    def _param(self, part: Param) -> Value:
        ref = Ref(part.name, part.span)
        if part.name in ("@", "*"):
            self.warnings.append(f"the script passes its own arguments (${part.name}) on; flags given on its "
                                 "command line are not seen")
            return ()
        if not _NAME.fullmatch(part.name):
            return (Seg("", None, (ref,), f"${part.name} is a positional or special parameter of the shell"),)
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

    def _part(self, part: object) -> Value:
        if isinstance(part, Lit):
            return (Seg(part.text, part.span),)
        if isinstance(part, Param):
            return self._param(part)
        if isinstance(part, Arith):
            try:
                return (Seg(str(self.arith(part.expr)), None),)
            except ValueError as exc:
                msg = str(exc) if _rooted(str(exc)) else f"$(({_short(part.expr)})): {exc}"
                return (Seg("", None, (), msg),)
        assert isinstance(part, Opaque)
        return (Seg("", None, (), part.reason),)

    def expand_value(self, parts: tuple | list) -> Value:
        """Expansion without word splitting (assignment values, ``${X:-word}`` arguments)."""
        out: list[Seg] = []
        for part in parts:
            out.extend(self._part(part))
        return tuple(out)

    def expand_words(self, words: tuple[Word, ...] | list[Word]) -> list[Value]:
        """Command words after expansion and word splitting of unquoted expansions (no globbing)."""
        fields: list[Value] = []
        for word in words:
            current: list[Seg] = []
            started = False
            for part in word.parts:
                quoted = getattr(part, "quoted", True)
                segs = self._part(part)
                if quoted or isinstance(part, Lit):
                    current.extend(segs)
                    started = True
                    continue
                for seg in segs:
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


def _split(seg: Seg):
    """Word splitting of an unquoted expansion: pieces with their spans, and field boundaries."""
    pos = 0
    for m in re.finditer(r"[ \t\n]+", seg.text):
        if m.start() > pos:
            yield _sub(seg, pos, m.start()), False
        yield None, True
        pos = m.end()
    if pos < len(seg.text):
        yield _sub(seg, pos, len(seg.text)), False


def _sub(seg: Seg, i: int, j: int) -> Seg:
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


# ------------------------------------------------------------------------------------------ launch flags
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
            out.append(_sub(seg, a - pos, b - pos) if a < b else seg)
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


# ------------------------------------------------------------------------------------------ editing
class Editor:
    """Span replacements on the script text, applied together (overlaps are refused)."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.edits: list[tuple[int, int, str]] = []

    def replace(self, span: tuple[int, int], new: str) -> None:
        self.edits.append((span[0], span[1], new))

    def apply(self) -> str:
        out = self.text
        last = len(out) + 1
        for start, end, new in sorted(set(self.edits), key=lambda e: (e[0], e[1]), reverse=True):
            if end > last:
                raise ConfigError("two edits of the script overlap; change fewer fields at once", path=self.path)
            out = out[:start] + new + out[end:]
            last = start
        return out


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


__all__ = ["Assignment", "Command", "Editor", "Flag", "FlagSet", "Ref", "Script", "Seg", "Value", "column_of",
           "launch_flags", "line_of", "literal_span", "local_span", "problem_of", "text_of"]
