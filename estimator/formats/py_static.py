"""Reading Python config modules without running them (torchtitan's config registry, Megatron-Bridge recipes):
the module is parsed (``ast``), never imported or executed, and each recipe function is evaluated symbolically —
literal values, arithmetic on them, calls recorded as ``Call`` nodes with their arguments, other recipe functions
of the same module followed, attribute assignments (``config.training.steps = 10``) applied. Anything else (a
loop, an import-time value, a helper's result) becomes an ``Unresolved`` value naming its line, so a reader can
say which setting it could not read and how to supply it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..limits import MAX_PY_STEPS
from ..messages import msg

_MAX_NODES = 200_000     # a config module is a few thousand nodes
_MAX_DEPTH = 16          # recipe functions calling recipe functions
_MAX_NUMBER = 10 ** 15   # no config value comes near this
_MAX_LIST = 100_000      # values in a list, nested lists counted: a layout lists a few hundred layers
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b}


@dataclass
class Unresolved:
    """A value the static reading cannot know (why, and the line it is written on)."""

    why: str
    line: int

    def __str__(self) -> str:
        return f"line {self.line}: {self.why}"


@dataclass(frozen=True)
class Symbol:
    """A dotted name from an imported module (``torch.bfloat16``, ``AttnBackend.flash``), kept as written."""

    name: str


@dataclass
class Call:
    """A call: ``name`` as written (``TrainingConfig``, ``FullAC.Config``, ``model_registry``), its arguments, and
    attributes assigned to its result afterwards (``config.parallelism.x = …``)."""

    name: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    lines: dict[str, int] = field(default_factory=dict)  # attribute -> the line assigning it after the call
    keyword_lines: dict[str, int] = field(default_factory=dict)  # keyword argument -> the line it is written on

    def where(self, key: str) -> int:
        """The line that sets ``key``: its assignment, else its keyword argument, else the call itself."""
        return self.lines.get(key) or self.keyword_lines.get(key, self.line)

    def get(self, key: str, default: Any = None) -> Any:
        return self.kwargs.get(key, default)

    @property
    def short(self) -> str:
        """The class or function name without ``.Config``."""
        parts = self.name.split(".")
        return parts[-2] if len(parts) > 1 and parts[-1] == "Config" else parts[-1]


class Module:
    """A parsed config module: its top-level functions and imports."""

    def __init__(self, text: str, path: str) -> None:
        self.path = path
        try:
            self.tree = ast.parse(text, filename=path)
        except SyntaxError as exc:
            raise ConfigError(msg("py_static.valid-python", msg=exc.msg), path=path, line=exc.lineno,
                              column=exc.offset) from None
        except (RecursionError, MemoryError, ValueError):
            raise ConfigError(msg("py_static.python-module-estimator"), path=path) from None
        if sum(1 for _ in ast.walk(self.tree)) > _MAX_NODES:
            raise ConfigError(msg("py_static.module-implausibly-large"), path=path)
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        # what reading has cost so far (each expression read and each list element built is a step): recipes
        # calling each other fan out, so a small module could otherwise take forever (docs/limits.md)
        self.steps = 0
        self._sizes: dict[int, tuple[list[Any], int]] = {}  # id -> (list, values in it, nested lists counted)
        # calls made for their effect on a config (``helper(cfg.model)``): code the static reading does not run
        self.side_calls: list[tuple[str, int]] = []
        self.imports: list[str] = []
        self.imported: set[str] = set()  # names the imports bind (torch, AttnBackend, …)
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                self.imports.append(node.module)
                self.imported.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                self.imports.extend(alias.name for alias in node.names)
                self.imported.update((alias.asname or alias.name).split(".")[0] for alias in node.names)

    def returns(self, name: str) -> str:
        """The written return annotation of function ``name`` ('' when none)."""
        node = self.functions[name]
        return ast.unparse(node.returns) if node.returns is not None else ""

    def evaluate(self, name: str, depth: int = 0, args: list[Any] | None = None,
                 kwargs: dict[str, Any] | None = None) -> Any:
        """The value function ``name`` returns for ``args``/``kwargs`` (parameters left out take their written
        defaults, else stay Unresolved), read statically."""
        if depth > _MAX_DEPTH:
            return Unresolved("recipe functions call each other too deeply", 0)
        node = self.functions.get(name)
        if node is None:
            return Unresolved(f"{name}() is not defined in this module", 0)
        env: dict[str, Any] = {}
        positional = [*node.args.posonlyargs, *node.args.args]
        for arg in [*positional, *node.args.kwonlyargs]:
            env[arg.arg] = Unresolved(f"{name}() parameter {arg.arg} (its caller's value)", node.lineno)
        defaults = node.args.defaults
        for arg, default in zip(positional[len(positional) - len(defaults):], defaults, strict=False):
            env[arg.arg] = self.value(default, env, depth)
        for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=False):
            if default is not None:
                env[arg.arg] = self.value(default, env, depth)
        for arg, value in zip(positional, args or [], strict=False):
            env[arg.arg] = value
        env.update({k: v for k, v in (kwargs or {}).items() if k in env})
        try:
            return self._block(node.body, env, depth)
        except RecursionError:
            return Unresolved("expressions nested too deeply to read", node.lineno)

    def _block(self, body: list[ast.stmt], env: dict[str, Any], depth: int) -> Any:
        for stmt in body:
            if isinstance(stmt, ast.Return):
                return self.value(stmt.value, env, depth) if stmt.value is not None else None
            if isinstance(stmt, ast.Assign):
                value = self.value(stmt.value, env, depth)
                for target in stmt.targets:
                    self._assign(target, value, env, depth)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                self._assign(stmt.target, self.value(stmt.value, env, depth), env, depth)
            elif isinstance(stmt, ast.AugAssign):
                line = stmt.lineno
                self._assign(stmt.target, Unresolved("an augmented assignment", line), env, depth)
            elif isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                # what a block assigns (names and config.x attributes) may or may not happen: unknown
                kind = type(stmt).__name__.lower()
                why = f"assigned inside {'an' if kind == 'if' else 'a'} {kind} block"
                for target in _assigned_targets(stmt):
                    self._assign(target, Unresolved(why, getattr(target, "lineno", stmt.lineno)), env, depth)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _touches_config(stmt.value, env):
                self.side_calls.append((ast.unparse(stmt.value)[:80], stmt.lineno))
            # other expressions, asserts, pass, docstrings: no value
        return None

    def _assign(self, target: ast.expr, value: Any, env: dict[str, Any], depth: int) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            return
        if isinstance(target, ast.Attribute):
            owner = self.value(target.value, env, depth)
            if isinstance(owner, Call):
                owner.kwargs[target.attr] = value
                owner.lines[target.attr] = target.lineno
            elif isinstance(target.value, (ast.Name, ast.Attribute)):
                # config.parallelism.x = … on a section the constructor left out: create it
                parent = self._owner(target.value, env, depth)
                if isinstance(parent, Call) and isinstance(target.value, ast.Attribute):
                    section = Call(f"{target.value.attr}", line=target.lineno)
                    parent.kwargs[target.value.attr] = section
                    section.kwargs[target.attr] = value
                    section.lines[target.attr] = target.lineno

    @staticmethod
    def _call_name(func: ast.expr, env: dict[str, Any]) -> str:
        """The called name as written; a method of a variable holding a call is named through that call
        (``bridge.to_megatron_provider`` after ``bridge = AutoBridge.from_hf_pretrained("ORG/NAME", …)`` is
        ``AutoBridge.from_hf_pretrained('ORG/NAME').to_megatron_provider``), so readers see what it is built from."""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            receiver = env.get(func.value.id)
            if isinstance(receiver, Call) and not receiver.lines and \
                    all(isinstance(a, (str, int)) for a in receiver.args):
                return f"{receiver.name}({', '.join(map(repr, receiver.args))}).{func.attr}"
        return ast.unparse(func)

    def _owner(self, node: ast.expr, env: dict[str, Any], depth: int) -> Any:
        return self.value(node.value, env, depth) if isinstance(node, ast.Attribute) else None

    def _spend(self, steps: int, line: int) -> None:
        self.steps += steps
        if self.steps > MAX_PY_STEPS:
            raise ConfigError(msg("py_static.too-many-steps", limit=MAX_PY_STEPS), path=self.path,
                              line=line or None)

    def _size(self, value: Any) -> int:
        """Values in ``value``, nested lists counted (lists built here are remembered with their size)."""
        known = self._sizes.get(id(value)) if isinstance(value, list) else None
        return known[1] if known is not None else 1

    def _list(self, items: list[Any], size: int, line: int) -> list[Any] | Unresolved:
        """A list this reading built, unless it holds implausibly many values."""
        if size > _MAX_LIST:
            return Unresolved("an implausibly long list", line)
        self._spend(len(items), line)
        self._sizes[id(items)] = (items, size)
        return items

    def value(self, node: ast.expr | None, env: dict[str, Any], depth: int) -> Any:
        if node is None:
            return None
        line = getattr(node, "lineno", 0)
        self._spend(1, line)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value(e, env, depth) for e in node.elts]
            return self._list(items, 1 + sum(self._size(e) for e in items), line)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=False):
                if k is None:  # **other
                    continue
                key = _hashable(self.value(k, env, depth))
                if key is _NO_KEY:
                    return Unresolved(f"a dict key {ast.unparse(k)[:60]} that is not a literal", line)
                out[key] = self.value(v, env, depth)
            return out
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            return Unresolved(f"{node.id} is defined outside the recipe", line)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(node.operand, env, depth)
            return -inner if _number(inner) else Unresolved("a negated non-number", line)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = self.value(node.left, env, depth), self.value(node.right, env, depth)
            if isinstance(a, list) and isinstance(b, list) and isinstance(node.op, ast.Add):
                size = self._size(a) + self._size(b) - 1
                return self._list(a + b, size, line) if size <= _MAX_LIST else Unresolved("an implausibly long list",
                                                                                           line)
            if isinstance(a, list) and isinstance(b, int) and not isinstance(b, bool) and \
                    isinstance(node.op, ast.Mult):  # [x] * n
                size = 1 + (self._size(a) - 1) * max(b, 0)
                return self._list(a * b, size, line) if size <= _MAX_LIST else Unresolved("an implausibly long list",
                                                                                          line)
            if _number(a) and _number(b):
                try:
                    result = _BINOPS[type(node.op)](a, b)
                except ZeroDivisionError:
                    return Unresolved("a division by zero", line)
                if abs(result) > _MAX_NUMBER:
                    return Unresolved("an implausibly large number", line)
                return result
            return Unresolved(f"arithmetic on {ast.unparse(node)}", line)
        if isinstance(node, ast.Attribute):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id not in env and root.id in self.imported:
                return Symbol(ast.unparse(node))
            owner = self.value(node.value, env, depth)
            if isinstance(owner, Call):
                return owner.kwargs.get(node.attr, Unresolved(f"{ast.unparse(node)} is not set here", line))
            return Unresolved(f"{ast.unparse(node)}", line)
        if isinstance(node, ast.Call):
            name = self._call_name(node.func, env)
            call = Call(name, [self.value(a, env, depth) for a in node.args], {}, line)
            for kw in node.keywords:
                if kw.arg is not None:
                    call.kwargs[kw.arg] = self.value(kw.value, env, depth)
                    call.keyword_lines[kw.arg] = kw.lineno
            if isinstance(node.func, ast.Name) and node.func.id in self.functions:
                return self.evaluate(node.func.id, depth + 1, call.args, call.kwargs)
            return call
        return Unresolved(f"{ast.unparse(node)[:60]} (not a literal)", line)


def _touches_config(call: ast.Call, env: dict[str, Any]) -> bool:
    """Whether a call statement hands it a config object (``f(cfg)``, ``f(cfg.model)``, ``cfg.x.append(…)``)."""
    nodes = [*call.args, *(kw.value for kw in call.keywords)]
    if isinstance(call.func, ast.Attribute):
        nodes.append(call.func.value)
    for node in nodes:
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and isinstance(env.get(root.id), Call):
            return True
    return False


_NO_KEY = object()


def _hashable(value: Any) -> Any:
    """A dict key as Python would have it (a tuple read as a list becomes a tuple again); _NO_KEY when it cannot
    be one (a call, a dict, an unresolved value)."""
    if isinstance(value, list):
        items = [_hashable(v) for v in value]
        return _NO_KEY if any(i is _NO_KEY for i in items) else tuple(items)
    if isinstance(value, (Unresolved, Call, dict)):
        return _NO_KEY
    try:
        hash(value)
    except TypeError:
        return _NO_KEY
    return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _assigned_targets(stmt: ast.stmt) -> list[ast.expr]:
    """The names and attributes a compound statement assigns anywhere inside it."""
    out: list[ast.expr] = []
    for node in ast.walk(stmt):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        out.extend(t for t in targets if isinstance(t, (ast.Name, ast.Attribute)))
    return out


def split_entry(path: str) -> tuple[str, str | None]:
    """(file, function) of ``FILE.py:FUNCTION``; (path, None) for a plain path."""
    head, sep, tail = path.rpartition(".py:")
    if sep and tail.isidentifier():
        return head + ".py", tail
    return path, None


__all__ = ["Call", "Module", "Symbol", "Unresolved", "split_entry"]
