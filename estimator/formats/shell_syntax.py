"""The syntax of the bash subset launch scripts use (docs/model.md#frameworks): text to commands made of words made of
parts.

Understood: single and double quotes, backslash-newline continuations, comments, ``;``/``&&``/``|``
separators, redirections and here-documents (skipped), ``$VAR``/``${VAR}``/``${VAR<op>word}`` (``:-``, ``-``,
``:=``, ``=``, ``:+``, ``+``), ``$((…))``, array literals ``NAME=( … )`` and subscripts ``${NAME[@]}``,
``${NAME[*]}``, ``${NAME[0]}``. Command substitutions become ``Opaque`` parts: they would need execution,
which never happens. ``if``/``elif``/``else`` branches keep their test commands (``IfBlock``) so that evaluation
can decide which branch runs; ``for``/``while``/``case`` and function bodies raise a command's ``depth`` so that
evaluation marks their assignments conditional. Every part keeps its span in the script text, for error
locations and for writers that edit a literal in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..limits import MAX_SHELL_NESTING
from ..messages import Text, msg

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPENERS = {"if", "for", "while", "until", "case", "select"}
_CLOSERS = {"fi", "done", "esac"}
_LEADING = {"then", "else", "elif", "do", "!", "{", "}", "time"}


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
    index: str | None = None  # an array subscript: "@", "*" or a non-negative integer


@dataclass(frozen=True)
class Array:
    """An array literal ``( word word … )`` after ``NAME=`` or ``NAME+=``."""

    elements: tuple  # Words
    span: tuple[int, int]
    quoted: bool = False


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
    branches: tuple[tuple[int, int], ...] = ()  # (if-block id, branch index) of each enclosing if branch


# A test list: (connector, words) pieces joined by "&&"/"||" ("" for the first), as written between if/elif and then
Test = tuple[tuple[str, tuple[Word, ...]], ...]


@dataclass
class IfBlock:
    """An ``if … fi`` statement: the test of each branch in order (None for ``else``)."""

    line: int
    tests: list[Test | None] = field(default_factory=list)


@dataclass(frozen=True)
class Program:
    commands: list[Command]
    blocks: list[IfBlock]


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
        self.skip_next = False  # the next word is a redirection target
        self.heredocs: list[tuple[str, bool]] = []
        self.nesting = 0  # ${…:-${…}} levels around this lexer
        # open constructs, innermost last: ("if", block id, branch index) or ("other", -1, -1)
        self.stack: list[tuple[str, int, int]] = []
        self.blocks: list[IfBlock] = []
        self.test: list[tuple[str, tuple[Word, ...]]] | None = None  # the if/elif test being read
        self.connector = ""  # the separator that ended the previous command (for test lists)

    def error(self, message: Text, pos: int) -> ConfigError:
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

    def end_command(self, separator: str = "\n") -> None:
        self.end_word()
        words = self.words
        self.words = []
        connector, self.connector = self.connector, separator if separator in ("&&", "||") else ""
        if not words:
            return
        if self.test is not None and static_text(words[0]) != "then":
            self.test.append((connector, tuple(words)))  # a further command of an if/elif test list
            return
        if static_text(words[0]) == "function":
            if any(static_text(w) == "{" for w in words):
                self.stack.append(("other", -1, -1))
            return
        while words and static_text(words[0]) in _LEADING | _OPENERS | _CLOSERS:
            key = static_text(words[0])
            if key in ("if", "elif"):
                if key == "if":
                    self.blocks.append(IfBlock(line_of(self.t, words[0].span[0])))
                    self.stack.append(("if", len(self.blocks) - 1, -1))
                self.test = [("", tuple(words[1:]))]
                return
            if key in _OPENERS:
                self.stack.append(("other", -1, -1))
                return  # the rest of a while head is a test, a for head a list: not assignments
            if key in ("then", "else") and self.stack and self.stack[-1][0] == "if":
                kind, block, _ = self.stack[-1]
                self.blocks[block].tests.append(tuple(self.test or ()) if key == "then" else None)
                self.stack[-1] = (kind, block, len(self.blocks[block].tests) - 1)
                self.test = None
            elif key in _CLOSERS or key == "}":
                if self.stack:
                    self.stack.pop()
            elif key == "{":
                self.stack.append(("other", -1, -1))
            words = words[1:]
        if words:
            branches = tuple((block, branch) for kind, block, branch in self.stack if kind == "if")
            self.commands.append(Command(tuple(words), line_of(self.t, words[0].span[0]), len(self.stack),
                                         branches))

    def run(self) -> list[Command]:
        self._scan(array=False)
        self.end_command()
        return self.commands

    def _scan(self, array: bool) -> None:
        """Read words and commands; in an array literal (``array``), up to its closing parenthesis."""
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
                if array:
                    self.end_word()
                    self.i += 1
                    continue
                self.end_command()
                self.i += 1
                self._heredoc_bodies()
            elif c == "#" and self.word_start < 0:
                while self.i < n and t[self.i] != "\n":
                    self.i += 1
            elif c == "'":
                end = t.find("'", self.i + 1)
                if end < 0:
                    raise self.error(msg("shell_syntax.unterminated-single-quote"), self.i)
                self.add(Lit(t[self.i + 1:end], (self.i + 1, end), True), self.i)
                self.i = end + 1
            elif c == '"':
                self._double()
            elif c == "$" or c == "`":
                self.add(self._dollar(False), self.i)
            elif array and c == ")":
                self.end_word()
                self.i += 1
                return
            elif array and c in ";&|()<>":
                raise self.error(msg("shell_syntax.inside-array-literal", c=c), self.i)
            elif c in ";&|":
                self.end_word()
                sep = t[self.i:self.i + 2] if t[self.i:self.i + 2] in (";;", "&&", "||", "|&") else c
                self.i += len(sep)
                self.end_command(sep)
            elif c in "()":
                if c == "(" and self.parts and isinstance(self.parts[-1], Lit) and \
                        self.parts[-1].text.endswith("=") and not self.parts[-1].quoted:
                    self.add(self._array(), self.i)
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
        if array:
            raise self.error(msg("shell_syntax.unterminated-array"), n)

    def _array(self) -> Array:
        """The array literal ``( … )`` starting at ``self.i``: its elements are words (newlines and comments
        allowed between them)."""
        start = self.i
        sub = _Lexer(self.t, self.path)
        sub.i = start + 1
        try:
            sub._scan(array=True)
        except ConfigError as exc:
            if "unterminated array" in str(exc):
                raise self.error(msg("shell_syntax.unterminated-array"), start) from None
            raise
        self.i = sub.i
        return Array(tuple(sub.words), (start, self.i))

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
                raise self.error(msg("shell_syntax.unterminated-double-quote"), start)
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
                raise self.error(msg("shell_syntax.unterminated-backquote"), start)
            self.i = end + 1
            return Opaque(f"command substitution `{shorten(t[start + 1:end])}` (never executed)",
                          (start, self.i), quoted)
        nxt = t[start + 1:start + 2]
        if t.startswith("$((", start):
            close = _match(t, start + 1, "(", ")")
            if close < 0 or t[close - 1] != ")":
                raise self.error(msg("shell_syntax.unterminated"), start)
            self.i = close + 1
            return Arith(t[start + 3:close - 1], (start, self.i), quoted)
        if nxt == "(":
            close = _match(t, start + 1, "(", ")")
            if close < 0:
                raise self.error(msg("shell_syntax.unterminated-2"), start)
            self.i = close + 1
            return Opaque(f"command substitution $({shorten(t[start + 2:close])}) (never executed)",
                          (start, self.i), quoted)
        if nxt == "{":
            close = _match(t, start + 1, "{", "}")
            if close < 0:
                raise self.error(msg("shell_syntax.unterminated-3"), start)
            self.i = close + 1
            return self._brace(t[start + 2:close], start + 2, (start, self.i), quoted)
        m = NAME.match(t, start + 1)
        if m:
            self.i = m.end()
            return Param(m.group(), "", None, (start, self.i), quoted)
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.i = start + 2
            return Param(nxt, "", None, (start, self.i), quoted)
        self.i = start + 1
        return Lit("$", (start, start + 1), quoted)

    def _brace(self, body: str, body_at: int, span: tuple[int, int], quoted: bool) -> object:
        m = NAME.match(body) or re.match(r"[0-9@*#?$!-]", body)
        if not m:
            return Opaque(f"unsupported expansion ${{{shorten(body)}}}", span, quoted)
        rest = body[m.end():]
        if not rest:
            return Param(m.group(), "", None, span, quoted)
        sub_m = re.fullmatch(r"\[(@|\*|\d{1,9})\]", rest) if NAME.fullmatch(m.group()) else None
        if sub_m:
            return Param(m.group(), "", None, span, quoted, sub_m.group(1))
        op = re.match(r":-|:=|:\+|-|=|\+", rest)
        if not op:
            return Opaque(f"unsupported expansion ${{{shorten(body)}}}", span, quoted)
        sub = _Lexer(self.t, self.path)
        sub.nesting = self.nesting + 1
        if sub.nesting > MAX_SHELL_NESTING:  # every level scans its whole argument again
            raise self.error(msg("shell_syntax.nested-more-than", MAX_SHELL_NESTING=MAX_SHELL_NESTING), span[0])
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
            raise self.error(msg("shell_syntax.here-document-without"), self.i)
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


def tokenize(text: str, path: str) -> Program:
    """The commands of a script in order, and its if-blocks (nothing is executed)."""
    lexer = _Lexer(text, path)
    commands = lexer.run()
    return Program(commands, lexer.blocks)


_BRACKETS = {"(": re.compile(r"[\\'()]"), "{": re.compile(r"[\\{}]")}


def _match(t: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``i`` (quotes skipped), or -1. Jumps from bracket to bracket."""
    depth = 0
    j = i
    pattern = _BRACKETS[open_]
    while (m := pattern.search(t, j)) is not None:
        j = m.start()
        c = t[j]
        if c == "\\":
            j += 2
            continue
        if c == "'":
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


def shorten(s: str) -> str:
    """``s`` on one line, cut to 60 characters, for messages."""
    s = " ".join(s.split())
    return s if len(s) <= 60 else s[:57] + "..."


def static_text(word: Word) -> str | None:
    """The text of a word made only of unquoted literals, else None."""
    if all(isinstance(p, Lit) and not p.quoted for p in word.parts):
        return "".join(p.text for p in word.parts)
    return None
