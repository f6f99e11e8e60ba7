"""Formulas in layer-kind files: arithmetic over named symbols, parsed once and evaluated without ``eval``.

Allowed: numbers, ``true``/``false``, symbol names, ``+ - * / // % **``, comparisons, ``and or not``,
``A if C else B``, and the functions ``min max ceil floor abs``. Anything else (attributes, subscripts, other
calls, lambdas, strings) is refused with the formula and the file named — no value from a file is executed.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..limits import DEFAULT_FLOAT
from ..messages import msg

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
        ast.GtE: operator.ge}
def _min(*args: Any) -> Any:
    return functools.reduce(np.minimum, args)


def _max(*args: Any) -> Any:
    return functools.reduce(np.maximum, args)


# numpy forms, so a formula also prices the search's arrays of degrees and lengths
_FUNCS = {"min": _min, "max": _max, "ceil": np.ceil, "floor": np.floor, "abs": np.abs}
_CONSTANTS = {"true": True, "false": False}
_MAX_VALUE = DEFAULT_FLOAT.high  # 10^30: no count of bytes or parameters comes near it


@dataclass(frozen=True)
class Formula:
    text: str
    tree: ast.Expression
    names: frozenset[str]
    where: str = ""

    def __call__(self, symbols: Mapping[str, Any]) -> Any:
        missing = sorted(self.names - set(symbols) - set(_CONSTANTS))
        if missing:
            raise ConfigError(msg("expr.formula-uses-unknown", text=self.text, missing=', '.join(missing),
                                  symbols=', '.join(sorted(symbols))), path=self.where or None)
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # checked by _bounded instead
                return _eval(self.tree.body, symbols)
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
            raise ConfigError(msg("expr.formula", text=self.text, exc=exc), path=self.where or None) from None


def parse_formula(text: Any, where: str = "") -> Formula:
    """A formula from a number or a string; refuses anything outside the grammar above."""
    if isinstance(text, bool):
        text = "true" if text else "false"
    if isinstance(text, (int, float)):
        text = repr(text)
    if not isinstance(text, str) or len(text) > 2000:
        raise ConfigError(msg("expr.formula-number-short", text=text), path=where or None)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConfigError(msg("expr.formula-does-parse", text=text, msg=exc.msg), path=where or None) from None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS) or node.keywords:
                raise ConfigError(msg("expr.formula-only-may", text=text, FUNCS=', '.join(sorted(_FUNCS))),
                                  path=where or None)
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float)) or isinstance(node.value, complex):
                raise ConfigError(msg("expr.formula-only-numbers", text=text), path=where or None)
            try:
                _bounded(node.value)
            except ValueError:  # 1e999 reads as infinity
                raise ConfigError(msg("expr.formula-number-bound", text=text, value=node.value, limit=_MAX_VALUE),
                                  path=where or None) from None
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp,
                                   ast.Load, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
            raise ConfigError(msg("expr.formula-allowed", text=text, construct=type(node).__name__), path=where or None)
        if isinstance(node, ast.BinOp) and type(node.op) not in _BIN:
            raise ConfigError(msg("expr.formula-operator-allowed", text=text, operator=type(node.op).__name__),
                              path=where or None)
    names -= set(_FUNCS)
    return Formula(text.strip(), tree, frozenset(names), where)


def _bounded(value: Any) -> Any:
    """``value`` when it is a real number (or array of them) of magnitude at most _MAX_VALUE: every step of a
    formula is checked, so that ((9**64)**64)**64… stops at its first step instead of computing a number of
    millions of digits (docs/limits.md)."""
    if isinstance(value, complex) or (isinstance(value, np.ndarray) and value.dtype.kind == "c"):
        raise ValueError("the value is not a real number")
    if isinstance(value, int):  # bool too: never large
        if abs(value) > _MAX_VALUE:
            raise ValueError(f"a value beyond {_MAX_VALUE:.0e} (the limit)")
        return value
    magnitude = np.abs(value)
    if not np.all(np.isfinite(magnitude)) or np.any(magnitude > _MAX_VALUE):
        raise ValueError(f"a value that is not finite or beyond {_MAX_VALUE:.0e} (the limit)")
    return value


def _eval(node: ast.AST, symbols: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _CONSTANTS[node.id] if node.id in _CONSTANTS and node.id not in symbols else symbols[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, symbols), _eval(node.right, symbols)
        if isinstance(node.op, ast.Pow) and np.any(np.abs(right) > 64):
            raise ValueError("exponent above 64")
        return _bounded(_BIN[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, symbols)
        if isinstance(node.op, ast.Not):
            return not value
        return _bounded(-value if isinstance(node.op, ast.USub) else +value)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, symbols)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, symbols)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, symbols) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.IfExp):
        return _eval(node.body, symbols) if _eval(node.test, symbols) else _eval(node.orelse, symbols)
    if isinstance(node, ast.Call):
        return _bounded(_FUNCS[node.func.id](*(_eval(a, symbols) for a in node.args)))  # type: ignore[attr-defined]
    raise ValueError(f"{type(node).__name__} is not allowed")
