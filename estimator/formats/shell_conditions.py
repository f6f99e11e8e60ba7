"""Deciding which ``if``/``elif``/``else`` branch of a launch script runs, without running anything.

A branch test is a list of ``[ … ]``, ``[[ … ]]`` or ``test …`` commands joined by ``&&``/``||``, over the
script's own variables: string (``=``, ``==``, ``!=``, ``[[ … == glob ]]``), integer (``-eq`` … ``-ge``) and
emptiness (``-n``, ``-z``) comparisons, with ``!``. Anything else — a file test, a command, a variable the script
does not set — makes the test undecidable (None), and the caller treats the branch as "may run".
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence

from .shell_syntax import Test, Word

# expand the words of one test command to strings (None: some part cannot be resolved)
Expander = Callable[[Sequence[Word]], "list[str] | None"]
_INT_OPS = {"-eq": lambda a, b: a == b, "-ne": lambda a, b: a != b, "-lt": lambda a, b: a < b,
            "-le": lambda a, b: a <= b, "-gt": lambda a, b: a > b, "-ge": lambda a, b: a >= b}


def test_value(test: Test, expand: Expander) -> bool | None:
    """True/False when the test list can be decided from the script alone, else None (three-valued
    left-to-right ``&&``/``||``, as the shell evaluates a list)."""
    value: bool | None = None
    for k, (connector, words) in enumerate(test):
        piece = _command_value(words, expand)
        if k == 0:
            value = piece
        elif connector == "&&":
            value = False if value is False or piece is False else (None if None in (value, piece) else True)
        elif connector == "||":
            value = True if value is True or piece is True else (None if None in (value, piece) else False)
        else:  # "cmd1; cmd2": the last command decides
            value = piece
    return value


def _command_value(words: Sequence[Word], expand: Expander) -> bool | None:
    args = expand(words)
    if args is None or not args:
        return None
    negate = False
    while args and args[0] == "!":
        negate, args = not negate, args[1:]
    if not args:
        return None
    if args[0] == "[" and args[-1] == "]":
        inner, glob = args[1:-1], False
    elif args[0] == "[[" and args[-1] == "]]":
        inner, glob = args[1:-1], True
    elif args[0] == "test":
        inner, glob = args[1:], False
    else:
        return None  # a command: its exit status would need running it
    result = _expression(inner, glob)
    return None if result is None else result != negate


def _expression(args: list[str], glob: bool) -> bool | None:
    if args and args[0] == "!":
        inner = _expression(args[1:], glob)
        return None if inner is None else not inner
    if len(args) == 0:
        return False
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, operand = args
        if op == "-n":
            return operand != ""
        if op == "-z":
            return operand == ""
        return None  # file tests (-f, -d, -e …) and the like
    if len(args) == 3:
        left, op, right = args
        if op in ("=", "=="):
            return fnmatch.fnmatchcase(left, right) if glob and re.search(r"[*?\[]", right) else left == right
        if op == "!=":
            return not fnmatch.fnmatchcase(left, right) if glob and re.search(r"[*?\[]", right) else left != right
        if op in _INT_OPS:
            if re.fullmatch(r"[-+]?\d{1,18}", left.strip()) and re.fullmatch(r"[-+]?\d{1,18}", right.strip()):
                return _INT_OPS[op](int(left), int(right))
            return None
    return None  # -a/-o, =~, parenthesised expressions: not decided


__all__ = ["test_value"]
