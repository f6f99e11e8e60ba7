"""Patching YAML text in place (docs/model.md#frameworks): values are replaced and missing keys inserted at the
character positions PyYAML's node marks give, so comments, key order, blank lines, quoting, ``True``/``False`` spelling,
flow-list spacing and anchors all stay as written. (A ruamel round trip re-dumps the whole file: on the real
MindFormers configs it rewrote 7–29 untouched lines — dropped anchors on booleans, collapsed multi-line flow
lists, changed flow spacing — so it is not used.)"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import ConfigError
from ..messages import msg
from .common import yaml_error
from .support import refusal
from .text_edits import apply_edits

_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL_WORDS = {"true", "false", "yes", "no", "on", "off", "y", "n"}
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_PROPS = re.compile(r"^((?:[&!][^\s\[\]{},]*[ \t]+)*)")


@dataclass
class YamlPatch:
    """Replaces values and inserts keys in YAML text, leaving every other character alone."""

    text: str
    path: str
    root: yaml.MappingNode = field(init=False)
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    pending: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)  # (position, indent) → keys
    done: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            root = yaml.compose(self.text)
        except yaml.YAMLError as exc:
            raise yaml_error(exc, self.path) from None
        if not isinstance(root, yaml.MappingNode):
            raise ConfigError(msg("yaml_patch.mindformers-config-must"), path=self.path)
        self.root = root
        self.newline = "\r\n" if "\r\n" in self.text else "\n"
        words = re.findall(r":[ \t]+(True|False|true|false|TRUE|FALSE)\b", self.text)
        capitalised = sum(1 for w in words if w[0].isupper() and not w.isupper())
        self.bool_case = "title" if capitalised * 2 >= len(words) and words else "lower"

    # -- lookup ---------------------------------------------------------------------------------------
    def find(self, keys: tuple[str, ...]) -> tuple[yaml.Node | None, yaml.Node] | None:
        """(key node, value node) of ``keys`` (the last duplicate wins, as in PyYAML); the root for ()."""
        key_node: yaml.Node | None = None
        node: yaml.Node = self.root
        for key in keys:
            if not isinstance(node, yaml.MappingNode):
                return None
            hit = next(((k, v) for k, v in reversed(node.value)
                        if isinstance(k, yaml.ScalarNode) and k.value == key), None)
            if hit is None:
                return None
            key_node, node = hit
        return key_node, node

    def has(self, keys: tuple[str, ...]) -> bool:
        return self.find(keys) is not None

    # -- edits ----------------------------------------------------------------------------------------
    def set(self, keys: tuple[str, ...], value: Any) -> None:
        """Give ``keys`` the value ``value`` (a scalar or list), inserting the key (and sections) if absent.
        A mapping of op patterns gets ``value`` for every pattern."""
        found = self.find(keys)
        if found is not None and found[0] is not None:
            self._replace(found[0], found[1], value)
            return
        cut = len(keys) - 1
        while cut > 0 and self.find(keys[:cut]) is None:
            cut -= 1
        key_node, parent = self.find(keys[:cut])  # type: ignore[misc]
        where = ".".join(keys[:cut]) or "the top level"
        if isinstance(parent, yaml.MappingNode) and parent.value and not parent.flow_style:
            indent = parent.value[0][0].start_mark.column
            pos = self._line_end(self._content_end(parent.value[-1][1]))
        elif isinstance(parent, yaml.ScalarNode) and parent.tag == _NULL_TAG and key_node is not None and \
                parent.start_mark.index == parent.end_mark.index:
            indent = key_node.start_mark.column + 2
            pos = self._line_end(parent.end_mark.index)
        elif isinstance(parent, yaml.MappingNode) and parent.flow_style:
            raise refusal(f"cannot add {'.'.join(keys[cut:])} inside the flow mapping {where} "
                          f"(line {parent.start_mark.line + 1}); write that mapping in block style first",
                          path=self.path, key=".".join(keys))
        else:
            raise refusal(f"cannot add {'.'.join(keys)}: {where} is not a mapping", path=self.path,
                          key=".".join(keys))
        tree = self.pending.setdefault((pos, indent), {})
        for key in keys[cut:-1]:
            tree = tree.setdefault(key, {})
        tree[keys[-1]] = value

    def _value_start(self, key_node: yaml.Node) -> tuple[int, int]:
        """(index of the ':' after the key, index where its value's text starts on that line)."""
        text = self.text
        colon = key_node.end_mark.index
        while colon < len(text) and text[colon] in " \t":
            colon += 1
        if colon >= len(text) or text[colon] != ":":
            raise ConfigError(msg("yaml_patch.cannot-locate-value", value=key_node.value,
                                  line=key_node.start_mark.line + 1),
                              path=self.path)
        start = colon + 1
        while start < len(text) and text[start] in " \t":
            start += 1
        return colon, start

    def is_alias(self, keys: tuple[str, ...]) -> bool:
        """Whether the value of ``keys`` is written as an alias (``key: *name``) at that place."""
        found = self.find(keys)
        if found is None or found[0] is None:
            return False
        start = self._value_start(found[0])[1]
        return self.text[start:start + 1] == "*"

    def _replace(self, key_node: yaml.Node, node: yaml.Node, value: Any) -> None:
        text = self.text
        colon, start = self._value_start(key_node)
        if start < len(text) and text[start] == "*":  # an alias here: the shared anchor stays untouched
            if self.done.get(id(node), object()) == value:
                return
            end = start
            while end < len(text) and text[end] not in " \t\r\n,]}#":
                end += 1
            like = ""
            if isinstance(node, yaml.ScalarNode):  # spell it like the anchored value
                span = text[node.start_mark.index:node.end_mark.index]
                like = span[len(_PROPS.match(span).group(1)):]  # type: ignore[union-attr]
            self.edits.append((start, end, self.render(value, like, getattr(node, "style", None))))
            return
        self.done[id(node)] = value
        if isinstance(node, yaml.MappingNode) and not isinstance(value, dict):
            for sub_key, sub_node in node.value:
                self._replace(sub_key, sub_node, value)
            return
        lo, hi = node.start_mark.index, node.end_mark.index
        if isinstance(node, yaml.ScalarNode) and lo == hi:  # `key:` with no value
            self.edits.append((colon + 1, colon + 1, " " + self.render(value)))
            return
        if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
            span = text[lo:hi]
            props = _PROPS.match(span).group(1)  # type: ignore[union-attr]
            like = span[len(props):]
            self.edits.append((lo, hi, props + self.render(value, like, getattr(node, "style", None))))
            return
        props = _PROPS.match(text[start:]).group(1).strip()  # type: ignore[union-attr]
        self.edits.append((colon + 1, self._content_end(node), " " + (props + " " if props else "") +
                           self.render(value)))

    # -- rendering ------------------------------------------------------------------------------------
    def render(self, value: Any, like: str = "", style: str | None = None) -> str:
        if value is None:  # a key set to null keeps the file's spelling of null
            return like if like.lower() in ("null", "~") and like else "null"
        if isinstance(value, bool):
            low = like.lower()
            if low in ("yes", "no", "y", "n"):
                word = "yes" if value else "no"
            elif low in ("on", "off"):
                word = "on" if value else "off"
            else:
                word = "true" if value else "false"
            if like and like.isupper():
                return word.upper()
            if (like and like[0].isupper()) or (not like and self.bool_case == "title"):
                return word.capitalize()
            return word
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, str):
            if style == "'":
                return "'" + value.replace("'", "''") + "'"
            if style == '"' or (style is None and like[:1] == '"'):
                return json.dumps(value)
            if style is None and like and _PLAIN.match(value) and value.lower() not in _BOOL_WORDS | {"null"}:
                return value
            return json.dumps(value)
        if isinstance(value, list | tuple):
            pad = like.startswith("[ ")
            sep = "," if ("," in like and ", " not in like) else ", "
            inner = sep.join(self.render(v, like if isinstance(v, list | tuple) else "") for v in value)
            return f"[ {inner} ]" if pad else f"[{inner}]"
        raise ConfigError(msg("yaml_patch.cannot-write-value", value=value), path=self.path)

    def _render_tree(self, tree: dict[str, Any], indent: int) -> list[str]:
        lines = []
        for key, sub in tree.items():
            name = key if _PLAIN.match(key) else "'" + key.replace("'", "''") + "'"
            if isinstance(sub, dict):
                lines.append(" " * indent + f"{name}:")
                lines.extend(self._render_tree(sub, indent + 2))
            else:
                lines.append(" " * indent + f"{name}: {self.render(sub)}")
        return lines

    # -- positions ------------------------------------------------------------------------------------
    def _content_end(self, node: yaml.Node) -> int:
        """Index just after the last character of ``node``'s own text (block collections end at their last
        child, not at the next key)."""
        if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
            return self._content_end(node.value[-1][1])
        if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
            return self._content_end(node.value[-1])
        return node.end_mark.index

    def _line_end(self, index: int) -> int:
        newline = self.text.find("\n", index)
        return len(self.text) if newline < 0 else newline + 1

    def result(self) -> str:
        ops = list(self.edits)
        blocks: dict[int, list[tuple[int, str]]] = {}
        for (pos, indent), tree in self.pending.items():
            lines = self._render_tree(tree, indent)
            blocks.setdefault(pos, []).append((indent, self.newline.join(lines) + self.newline))
        for pos, parts in blocks.items():
            # at one position the deeper mapping continues first, then its parents' new keys
            block = "".join(text for _, text in sorted(parts, key=lambda part: -part[0]))
            if pos == len(self.text) and self.text and not self.text.endswith("\n"):
                block = self.newline + block
            ops.append((pos, pos, block))
        try:
            return apply_edits(self.text, ops)
        except ValueError:
            raise ConfigError(msg("yaml_patch.internal-error-overlapping"), path=self.path) from None


__all__ = ["YamlPatch"]
