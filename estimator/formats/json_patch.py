"""Editing JSON text in place: the span of every object member, and value replacements, insertions and removals
that leave every other character (indentation, key order, spacing) as written."""

from __future__ import annotations

import json
import re
from typing import Any

from .support import refusal
from .text_edits import Editor

_WS = re.compile(r"\s*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SCALAR = re.compile(r"[^\s,}\]]+")


def json_members(text: str) -> dict[tuple[str, ...], tuple[int, int, int]]:
    """(key path) -> (member start, value start, value end) for every object member of a JSON text (the text must
    be valid JSON: readers load it first)."""
    out: dict[tuple[str, ...], tuple[int, int, int]] = {}

    def skip(i: int) -> int:
        return _WS.match(text, i).end()  # type: ignore[union-attr]

    def value(i: int, path: tuple[str, ...]) -> int:
        i = skip(i)
        c = text[i]
        if c == "{":
            i = skip(i + 1)
            while text[i] != "}":
                m = _STRING.match(text, i)
                assert m is not None
                key = json.loads(m.group())
                start = skip(skip(m.end()) + 1)
                end = value(start, (*path, key))
                out[(*path, key)] = (i, start, end)
                i = skip(end)
                if text[i] == ",":
                    i = skip(i + 1)
            return i + 1
        if c == "[":
            i = skip(i + 1)
            while text[i] != "]":
                i = skip(value(i, path))
                if text[i] == ",":
                    i += 1
                i = skip(i)
            return i + 1
        if c == '"':
            return _STRING.match(text, i).end()  # type: ignore[union-attr]
        return _SCALAR.match(text, i).end()  # type: ignore[union-attr]

    value(0, ())
    return out


def json_edit(text: str, members: dict, editor: Editor, key_path: tuple[str, ...], value: Any,
              path: str | None = None) -> None:
    """Set ``key_path`` to ``value`` (None removes the member); a missing key is added after its last sibling."""
    rendered = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if key_path in members:
        start, vstart, vend = members[key_path]
        if value is None:
            before = text.rfind(",", 0, start)
            after = re.compile(r"\s*,").match(text, vend)
            span = (before, vend) if after is None else (start, after.end())
            editor.replace(span, "")
            return
        editor.replace((vstart, vend), rendered)
        return
    if value is None:
        return
    siblings = [v for k, v in members.items() if k[:-1] == key_path[:-1]]
    if not siblings:
        raise refusal("cannot add a key to an empty or missing object", path=path, key=".".join(key_path))
    last = max(siblings, key=lambda v: v[2])
    line_start = text.rfind("\n", 0, last[0]) + 1
    indent = text[line_start:last[0]] if not text[line_start:last[0]].strip() else " "
    editor.replace((last[2], last[2]), f",\n{indent}{json.dumps(key_path[-1])}: {rendered}")


__all__ = ["json_edit", "json_members"]
