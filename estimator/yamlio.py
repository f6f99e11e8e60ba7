"""Reading YAML safely and within bounds: the package's own data (profiles, presets, flavors) and the user's
files (``formats.common.load_yaml``), with libyaml's C parser when PyYAML has it (about three times faster to
parse, which matters for the desktop app's start and for the time a large file takes).

Both compose the document first and check it before anything is built from it: aliases may not expand the
document beyond ``MAX_YAML_NODES`` values ("billion laughs") nor refer to the value they are inside, nesting
stays within ``MAX_NESTING`` and integers within ``MAX_INT_DIGITS`` digits. A value the loader cannot build
(``!!int abc``, ``2024-02-30``) is a YAML error at its line and column, never a Python exception.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

from .limits import MAX_INT_DIGITS, MAX_NESTING, MAX_YAML_NODES

SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_INT_TAG = "tag:yaml.org,2002:int"
_KINDS = {"tag:yaml.org,2002:int": "an integer", "tag:yaml.org,2002:float": "a number",
          "tag:yaml.org,2002:bool": "a boolean (true/false, yes/no, on/off)",
          "tag:yaml.org,2002:timestamp": "a date or timestamp", "tag:yaml.org,2002:binary": "base64 data"}


class YAMLLimitError(yaml.MarkedYAMLError):
    """The document exceeds one of the bounds (its ``problem`` states the limit and the fix)."""


class _Values:
    """Construction errors become YAML errors at the value's line and column."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)  # type: ignore[misc]
        except yaml.YAMLError:
            raise
        except (ValueError, KeyError, TypeError, OverflowError, AttributeError) as exc:
            value = node.value if isinstance(node, yaml.ScalarNode) else type(node).__name__
            shown = value if len(str(value)) <= 60 else f"{str(value)[:60]}…"
            kind = _KINDS.get(node.tag, f"the tag {node.tag}")
            detail = f" ({exc})" if isinstance(exc, ValueError) and str(exc) else ""
            raise ConstructorError(None, None, f"{shown!r} is not {kind}{detail}; if it is meant as text, "
                                               "put it in quotes", node.start_mark) from None


class BoundedLoader(_Values, SAFE_LOADER):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader (YAML 1.1, never constructs objects from tags; libyaml's parser when available) with
    values checked per node."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def check_document(node: yaml.Node) -> None:
    """Raise YAMLLimitError when the composed document is recursive, too large once its aliases are expanded,
    nested too deep, or holds an integer with too many digits. Aliases share their node, so each distinct node
    is visited once (with its expanded size and depth remembered)."""
    done: dict[int, tuple[int, int]] = {}  # id -> (expanded values, depth)
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        current, finished = stack.pop()
        key = id(current)
        if finished:
            open_.discard(key)
            children = _children(current)
            size = 1 + sum(done[id(c)][0] for c in children)
            depth = 1 + max((done[id(c)][1] for c in children), default=0)
            if size > MAX_YAML_NODES:
                raise YAMLLimitError(None, None, f"this value expands to more than {MAX_YAML_NODES:,} values "
                                                 f"through its aliases (*name), the limit; write the values "
                                                 "out or use fewer aliases", current.start_mark)
            if depth > MAX_NESTING:
                raise YAMLLimitError(None, None, f"values nest more than {MAX_NESTING} levels deep here (the "
                                                 "limit; aliases count as the value they stand for)",
                                     current.start_mark)
            done[key] = (size, depth)
            continue
        if key in done:
            continue
        if key in open_:
            raise YAMLLimitError(None, None, "an alias refers to the value it is inside (a recursive anchor), "
                                             "which never ends; write the value out", current.start_mark)
        if isinstance(current, yaml.ScalarNode) and current.tag == _INT_TAG and \
                len(current.value) > MAX_INT_DIGITS:
            raise YAMLLimitError(None, None, f"an integer written with {len(current.value):,} characters; at "
                                             f"most {MAX_INT_DIGITS:,} digits are read (the limit) — if it is "
                                             "meant as text, put it in quotes", current.start_mark)
        open_.add(key)
        stack.append((current, True))
        stack.extend((child, False) for child in _children(current) if id(child) not in done)


def load_bounded(text: str, loader: type = BoundedLoader) -> Any:
    """The single document in ``text``, checked by ``check_document`` before it is built (YAMLError otherwise;
    RecursionError when the text nests deeper than the parser can follow)."""
    instance = loader(text)
    try:
        node = instance.get_single_node()
        if node is None:
            return None
        check_document(node)
        return instance.construct_document(node)
    finally:
        instance.dispose()


def load_data(text: str) -> Any:
    """The package's own YAML data (same results as ``yaml.safe_load``, within the same bounds)."""
    return load_bounded(text)


__all__ = ["SAFE_LOADER", "BoundedLoader", "YAMLLimitError", "check_document", "load_bounded", "load_data"]
