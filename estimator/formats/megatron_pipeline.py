"""Megatron-LM's layer-placement values, evaluated without ``eval``: the ``--moe-layer-freq`` list expression
(``([0]*3+[1]*58)``), the ``--pipeline-model-parallel-layout`` string (``Et*3|(tt|)*29m|L``), and the layers per
(virtual) pipeline stage that ``--decoder-first/last-pipeline-num-layers`` and
``--account-for-embedding/loss-in-pipeline-split`` give (megatron/core/transformer/transformer_block.py
``get_num_layers_to_build`` and pipeline_parallel_layer_layout.py @ Megatron-LM d98e8a6).
"""

from __future__ import annotations

import re

from .support import MAX_LAYERS


class PatternError(ValueError):
    """A malformed or oversized expression (the message says what and where)."""


# ------------------------------------------------------------------------------------------ --moe-layer-freq
_TOKEN = re.compile(r"\s*(?:(\d{1,9})|(.))")


class _ListExpr:
    """``expr := term ('+' term)*``, ``term := factor ('*' factor)*``, ``factor := INT | '[' INT (',' INT)* ']'
    | '(' expr ')'`` — the list arithmetic Megatron's pattern flags use; at most MAX_LAYERS entries."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str | int] = []
        for m in _TOKEN.finditer(text.strip()):
            if m.group(1) is not None:
                self.tokens.append(int(m.group(1)))
            elif m.group(2) is not None and not m.group(2).isspace():
                if m.group(2) not in "[](),+*":
                    raise PatternError(f"unexpected {m.group(2)!r} in {text!r}: only integers, [ ], ( ), +, * "
                                       "and commas are allowed")
                self.tokens.append(m.group(2))
        self.k = 0

    def parse(self) -> int | list[int]:
        value = self._expr(0)
        if self.k != len(self.tokens):
            raise PatternError(f"unexpected text after position {self.k} in {self.text!r}")
        return value

    def _peek(self) -> str | int | None:
        return self.tokens[self.k] if self.k < len(self.tokens) else None

    def _take(self, want: str) -> None:
        if self._peek() != want:
            raise PatternError(f"expected {want!r} in {self.text!r}")
        self.k += 1

    def _expr(self, depth: int) -> int | list[int]:
        value = self._term(depth)
        while self._peek() == "+":
            self.k += 1
            rhs = self._term(depth)
            if isinstance(value, int) != isinstance(rhs, int):
                raise PatternError(f"cannot add a list and a number in {self.text!r}")
            value = self._bounded(value + rhs)  # type: ignore[operator]
        return value

    def _term(self, depth: int) -> int | list[int]:
        value = self._factor(depth)
        while self._peek() == "*":
            self.k += 1
            rhs = self._factor(depth)
            if isinstance(value, list) and isinstance(rhs, list):
                raise PatternError(f"cannot multiply two lists in {self.text!r}")
            count = rhs if isinstance(value, list) else value
            if isinstance(count, int) and isinstance(value, int) and isinstance(rhs, int):
                value = self._bounded(value * rhs)
                continue
            items = value if isinstance(value, list) else rhs
            assert isinstance(count, int) and isinstance(items, list)
            if len(items) * count > MAX_LAYERS:
                raise PatternError(f"{self.text!r} describes more than {MAX_LAYERS} layers")
            value = items * count
        return value

    def _factor(self, depth: int) -> int | list[int]:
        if depth > 20:
            raise PatternError(f"{self.text!r} nests too deeply")
        tok = self._peek()
        if isinstance(tok, int):
            self.k += 1
            return tok
        if tok == "(":
            self.k += 1
            value = self._expr(depth + 1)
            self._take(")")
            return value
        if tok == "[":
            self.k += 1
            items: list[int] = []
            while self._peek() != "]":
                if items:
                    self._take(",")
                item = self._peek()
                if not isinstance(item, int):
                    raise PatternError(f"list entries must be integers in {self.text!r}")
                items.append(item)
                self.k += 1
            self._take("]")
            return items
        raise PatternError(f"unexpected {tok!r} in {self.text!r}" if tok is not None else
                           f"{self.text!r} ends early")

    def _bounded(self, value: int | list[int]) -> int | list[int]:
        if (isinstance(value, int) and value > 10 ** 12) or (isinstance(value, list) and len(value) > MAX_LAYERS):
            raise PatternError(f"{self.text!r} is implausibly large")
        return value


def layer_pattern(text: str) -> int | list[int]:
    """An integer period, or the per-layer list (1: MoE, 0: dense) of a Megatron pattern expression."""
    return _ListExpr(text.strip().strip("\"'")).parse()


def moe_layer_groups(pattern: int | list[int], num_layers: int) -> tuple[int, int] | list[tuple[str, int]]:
    """(first_k_dense, moe_layer_freq) when the pattern is expressible that way, else explicit (kind, count)
    groups. An integer period N makes layer i MoE when i % N == 0 (Megatron)."""
    if isinstance(pattern, int):
        if pattern < 1:
            raise PatternError(f"the MoE layer period must be at least 1; got {pattern}")
        flags = [1 if i % pattern == 0 else 0 for i in range(num_layers)]
    else:
        if len(pattern) != num_layers or any(x not in (0, 1) for x in pattern):
            raise PatternError(f"the pattern has {len(pattern)} entries of 0/1 ({pattern[:8]}…); Megatron needs one "
                               f"per layer: {num_layers}")
        flags = pattern
    if 1 not in flags:
        return [("dense", num_layers)]
    first = flags.index(1)
    rest = flags[first:]
    for period in range(1, len(rest) + 1):
        if all(x == (1 if i % period == 0 else 0) for i, x in enumerate(rest)):
            return first, period
    groups: list[tuple[str, int]] = []
    for x in flags:
        kind = "moe" if x else "dense"
        if groups and groups[-1][0] == kind:
            groups[-1] = (kind, groups[-1][1] + 1)
        else:
            groups.append((kind, 1))
    return groups


# ------------------------------------------------------------------------------------------ layout string
def parse_layout(text: str) -> list[str]:
    """The virtual stages of a ``--pipeline-model-parallel-layout`` string, each a string over E (embedding),
    t (decoder layer), m (MTP layer) and L (loss): ``(…)*n`` and ``x*n`` are unrolled, commas are cosmetic."""
    s = text.strip().strip("\"'").replace(",", "").replace(" ", "")
    if len(s) > 10_000:
        raise PatternError("the layout string is implausibly long")
    out, pos = _unroll(s, 0, 0)
    if pos != len(s):
        raise PatternError(f"unmatched ')' at position {pos} of {text!r}")
    bad = set(out) - set("EtmL|")
    if bad:
        raise PatternError(f"unknown layer character(s) {''.join(sorted(bad))!r} in {text!r}; Megatron knows "
                           "E (embedding), t (decoder layer), m (MTP layer), L (loss) and | (stage boundary)")
    return out.split("|")


def _unroll(s: str, pos: int, depth: int) -> tuple[str, int]:
    if depth > 20:
        raise PatternError("the layout string nests too deeply")
    out: list[str] = []
    while pos < len(s) and s[pos] != ")":
        if s[pos] == "(":
            inner, pos = _unroll(s, pos + 1, depth + 1)
            if pos >= len(s):
                raise PatternError(f"unmatched '(' in {s!r}")
            pos += 1
            piece = inner
        else:
            piece, pos = s[pos], pos + 1
        m = re.match(r"\*(\d{1,6})", s[pos:])
        if m:
            piece *= int(m.group(1))
            pos += m.end()
        out.append(piece)
        if sum(map(len, out)) > 100_000:
            raise PatternError("the layout string unrolls to an implausible size")
    return "".join(out), pos


def layout_rows(stages: list[str], pp: int) -> list[list[str]]:
    """[chunk][stage] of the virtual stages (stage i·pp + r runs on pipeline rank r, chunk i)."""
    if len(stages) % pp:
        raise PatternError(f"the layout has {len(stages)} stages, not a multiple of pp {pp}")
    vp = len(stages) // pp
    return [[stages[j * pp + i] for i in range(pp)] for j in range(vp)]


# ------------------------------------------------------------------------------------------ layer counts
def uneven_counts(total: int, pp: int, vp: int, first: int | None, last: int | None) -> list[list[int]]:
    """[chunk][stage] decoder layers with ``--decoder-first/last-pipeline-num-layers``: the first (last) rank
    holds ``first`` (``last``) layers, the middle ranks split the rest evenly, each rank over its vp chunks."""
    per_rank = [0] * pp
    left, ranks = total, pp
    if first is not None:
        left, ranks = left - first, ranks - 1
    if last is not None:
        left, ranks = left - last, ranks - 1
    if left < 0 or (ranks > 0 and left % ranks) or (ranks == 0 and left):
        raise PatternError(f"{total} layers minus first {first} and last {last} leave {left} for {ranks} middle "
                           "stages: Megatron needs an even split")
    per_rank = [left // ranks if ranks else 0] * pp
    if first is not None:
        per_rank[0] = first
    if last is not None:
        per_rank[-1] = last
    return _chunks(per_rank, vp)


def account_counts(total: int, pp: int, vp: int, embedding: bool, loss: bool) -> list[list[int]]:
    """[chunk][stage] decoder layers when the embedding and/or loss count as a layer in the even split."""
    positions = total + int(embedding) + int(loss)
    if positions % pp:
        raise PatternError(f"{total} layers + {int(embedding) + int(loss)} (embedding/loss) = {positions} do not "
                           f"split evenly over pp {pp}")
    rows = _chunks([positions // pp] * pp, vp)
    if embedding:
        rows[0][0] -= 1
    if loss:
        rows[-1][-1] -= 1
    if min(min(r) for r in rows) < 0:
        raise PatternError("a pipeline stage would hold fewer than zero layers")
    return rows


def _chunks(per_rank: list[int], vp: int) -> list[list[int]]:
    for i, n in enumerate(per_rank):
        if n % vp:
            raise PatternError(f"pipeline stage {i} holds {n} layers, not divisible into {vp} chunks")
    return [[n // vp for n in per_rank] for _ in range(vp)]


__all__ = ["PatternError", "account_counts", "layer_pattern", "layout_rows", "moe_layer_groups", "parse_layout",
           "uneven_counts"]
