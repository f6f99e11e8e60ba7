"""What one estimate keeps for the next (P-SCALAR-SPEED; the table of what each part reads:
docs/model.md#what-an-edit-re-prices): the resolved plan, and the plan's row book — its priced rows and what is
summed or timed from them alone — each shared by every estimate whose inputs agree on everything the part reads.

Resolving, a row's cost, FLOPs and time, and the sums over a stage form's rows read the model, the strategy, the
device and the options, but of the micro-batch count (``micro_batches``) and the accumulation steps (``n_acc``)
only the degrees m and n_acc (resolve) and whether the step accumulates gradients (the rows: γ of D5 under the
upstream rule, p > 1 or m·n_acc > 1). So both are keyed on the four inputs with those two fields left out (and
the book on γ); an edit of the micro-batch count re-resolves only the degrees and re-prices only the stages' peak
points and the step formula, and going back (undo) finds the state it returns to. The rows' costs themselves
(``row_costs``) are keyed without what only the layout reads of the recompute plan (each row's mode, which is
part of the row's own key), so a recompute edit prices only the rows whose mode changed; the activation slot
tables (``activation_table``) read no degree, so a tp or pp edit keeps them. Every other edit (tp, pp, …) changes
the key: its rows are priced anew. Keys compare by value and carry every value's type,
nested records and tuples included (1, 1.0 and True are equal and hash alike but are different inputs), and hold
what a plug-in or the user's folder may change while the process runs (family profiles, layer kinds) and the
memory terms the chunk sums add up. At most ``MAX_BOOKS`` of each are kept, the least recently used dropped
first.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Any

from .activations import ActivationTable
from .assembly import terms
from .kinds import generation as kinds_generation
from .layout import build_layout, layout_inputs
from .profiles import all_profiles
from .records import at_once
from .resolve import DEGREES, Par, Resolved, Settled, resolve_settled, settle
from .stage import RowBook, RowCosts
from .static import grad_factor

if TYPE_CHECKING:
    from .hardware import Hardware
    from .layout import Layout
    from .model import ModelSpec
    from .options import RunOptions
    from .strategy import Strategy

MAX_BOOKS = 16
NOT_READ = frozenset({"micro_batches", "n_acc"})  # Strategy fields the rows read only through γ
_GETTERS: dict[tuple[type, frozenset[str]], Any] = {}


def _getter(cls: type, skip: frozenset[str]) -> Any:
    got = _GETTERS.get((cls, skip))
    if got is None:
        names = [f.name for f in dataclasses.fields(cls) if f.name not in skip]
        get = attrgetter(*names)
        got = _GETTERS[(cls, skip)] = (lambda x: (get(x),)) if len(names) == 1 else get
    return got


_LEAVES = frozenset({int, float, bool, str, type(None), frozenset})


def _types(value: Any) -> Any:
    """The types of a tuple's items or a record's fields, nested ones included."""
    if isinstance(value, tuple):
        kinds = tuple(map(type, value))
        return kinds if _LEAVES.issuperset(kinds) else tuple(map(_types, value))
    if hasattr(type(value), "__dataclass_fields__"):
        return typed(value)[1]
    if isinstance(value, (dict, list, set)):
        raise TypeError(f"{type(value).__name__} in a record key")  # records hold tuples and frozensets only
    return type(value)


def typed(record: Any, skip: frozenset[str] = frozenset()) -> tuple[tuple, tuple]:
    """A hashable key of a record (its fields but ``skip``): the values, compared by value, and their types
    (those of nested records and tuples too)."""
    values = _getter(type(record), skip)(record)
    kinds = tuple(map(type, values))
    nested = tuple(_types(v) for v, k in zip(values, kinds, strict=True) if k not in _LEAVES)
    return values, (type(record), kinds, nested)


class Key:
    """``typed(record, skip)`` with its hash computed once."""

    __slots__ = ("hash", "value")

    def __init__(self, value: tuple) -> None:
        self.value = value
        self.hash = hash(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Key) and self.hash == other.hash and self.value == other.value)


_LOCK = threading.Lock()  # the app's tasks (search, compare, balance) estimate on their own threads


def _kept(table: OrderedDict, key: Any) -> Any:
    """``table[key]`` made the most recently used, or None."""
    with _LOCK:
        got = table.get(key)
        if got is not None:
            table.move_to_end(key)
        return got


def _keep(table: OrderedDict, key: Any, value: Any, limit: int) -> Any:
    """Keep ``value`` under ``key`` (the one another thread kept meanwhile wins), at most ``limit`` entries."""
    with _LOCK:
        value = table.setdefault(key, value)
        table.move_to_end(key)
        while len(table) > limit:
            table.popitem(last=False)
        return value


_KEYS: OrderedDict[tuple[int, frozenset[str]], tuple[Any, Key]] = OrderedDict()  # (id, skip) → (the record, key)
_TWINS: dict[tuple[type, frozenset[str]], list[tuple[tuple, Key]]] = {}  # the last records' field values, keys
TWINS = 4  # per record type and skip


def _same(new: tuple, old: tuple) -> bool:
    """Whether two records' field values (of one record type) would make equal keys (``typed``): each the same
    object, or equal with the same type, nested tuples and records compared item by item."""
    for a, b in zip(new, old, strict=True):
        if a is b:
            continue
        kind = type(a)
        if kind is not type(b):
            return False
        if kind in _LEAVES:
            if a != b:
                return False
        elif kind is tuple:
            if len(a) != len(b) or not _same(a, b):
                return False
        elif not hasattr(kind, "__dataclass_fields__") or \
                not _same(_getter(kind, frozenset())(a), _getter(kind, frozenset())(b)):
            return False
    return True


_ORIGINALS: OrderedDict[int, tuple[Any, Any]] = OrderedDict()  # id → (the record, the recent one it equals)
_RECENT: dict[type, list[tuple[tuple, Any]]] = {}  # per record type, the last new records' field values, records


def _original(record: Any) -> Any:
    """The recent record of ``record``'s type whose fields all equal its own by value and type (``_same``), or the
    record itself: the plan session rebuilds a plan's records on every edit, and a plan's estimate asks several
    keys of one record (the strategy without different fields), so a rebuilt record is compared field by field
    once and then has each of its keys from the recent one. Found once per record object."""
    got = _kept(_ORIGINALS, id(record))
    if got is not None and got[0] is record:
        return got[1]
    values = _getter(type(record), frozenset())(record)
    recent = _RECENT.get(type(record), ())
    original = next((old for old_values, old in recent
                     if all(map(is_, values, old_values)) or _same(values, old_values)), None)
    if original is None:
        original = record
        with _LOCK:
            kept = _RECENT.setdefault(type(record), [])
            kept.insert(0, (values, record))
            del kept[TWINS:]
    _keep(_ORIGINALS, id(record), (record, original), 8 * MAX_BOOKS)
    return original


def key_of(record: Any, skip: frozenset[str] = frozenset()) -> Key:
    """The key of ``record`` without the fields ``skip``, made once per record object and ``skip`` (a plan's model,
    device and options stay the same objects across its edits; records are frozen, and the object is held while
    its key is kept, so its id is not reused). A new record equal to a recent one (``_original``) has that one's
    keys; one whose fields but ``skip`` are the very objects of a recent one's shares that one's key."""
    got = _kept(_KEYS, (id(record), skip))
    if got is not None and got[0] is record:
        return got[1]
    original = _original(record)
    if original is not record:
        got = _kept(_KEYS, (id(original), skip))
        key = got[1] if got is not None and got[0] is original else _twin_key(original, skip)
    else:
        key = _twin_key(record, skip)
    _keep(_KEYS, (id(record), skip), (record, key), 8 * MAX_BOOKS)
    return key


def _twin_key(record: Any, skip: frozenset[str]) -> Key:
    """The key of a recent record whose fields but ``skip`` equal ``record``'s by value and type, or a new one."""
    values = _getter(type(record), skip)(record)
    twins = _TWINS.get((type(record), skip), ())
    key = next((k for old, k in twins if all(map(is_, values, old)) or _same(values, old)), None)
    if key is None:
        key = Key(typed(record, skip))
        with _LOCK:
            kept = _TWINS.setdefault((type(record), skip), [])
            kept.insert(0, (values, key))
            del kept[TWINS:]
    return key  # type: ignore[no-any-return]


_BOOKS: OrderedDict[tuple, RowBook] = OrderedDict()
_COSTS: OrderedDict[tuple, RowCosts] = OrderedDict()
LAYOUT_ONLY = frozenset({"default_mode", "full_counts", "sel_counts", "comm_counts", "ranges", "allow_overlap",
                         "uniform_group"})  # RecomputePlan fields only the layout reads (as each row's mode)


def row_book(r: Resolved) -> RowBook:
    """The book of the rows a resolved plan prices (a new one when none is kept): keyed on its four inputs
    (the strategy without ``NOT_READ``), γ, and what a plug-in or the user's folder may change while the process
    runs — the family profile the plan resolved to and the generation of the registered layer kinds — and the
    memory terms the chunk sums add up (``assembly.terms``: where a new term goes). Its row costs are kept under
    the same key with the recompute plan's ``LAYOUT_ONLY`` fields left out (``row_costs``)."""
    gamma = grad_factor(r.flags, r.par)
    rows = (key_of(r.model), key_of(r.hardware), key_of(r.options), key_of(r.profile), kinds_generation(), gamma,
            type(gamma), terms.ROW_TERMS, terms.HOST_TERMS)
    key = (key_of(r.strategy, NOT_READ), *rows)
    book = _kept(_BOOKS, key)
    if book is None:
        book = _keep(_BOOKS, key, RowBook(row_costs(r, rows)), MAX_BOOKS)
    return book


def row_costs(r: Resolved, rows: tuple) -> RowCosts:
    """The row costs of a plan (``stage.RowCosts``: each row's cost, term values, FLOPs and times per device),
    shared by the books of plans that differ only in what the layout reads of the recompute plan: a row's cost
    reads its own mode (``stage.cost_key``: the layout's item) and, of the recompute plan, only the selective
    switches the plan states (the activation table) and the rule (resolve's flags) — so a recompute edit
    prices only the rows whose mode it changed. ``rows``: the book's key but the strategy."""
    key = (key_of(r.strategy, NOT_READ | {"recompute"}), key_of(r.strategy.recompute, LAYOUT_ONLY), *rows)
    costs = _kept(_COSTS, key)
    if costs is None:
        fresh = RowCosts()
        fresh.acts = activation_table(r)
        costs = _keep(_COSTS, key, fresh, MAX_BOOKS)
    return costs


_TABLES: OrderedDict[tuple, ActivationTable] = OrderedDict()


def activation_table(r: Resolved) -> ActivationTable:
    """The plan's activation slot tables and class sums (``activations.ActivationTable``), shared by every row book
    whose plan agrees on what the table reads: the dims, widths and flags, the sequence length, the selective
    recompute switches the plan states, and the registered layer kinds (their slot edits and the user's
    overrides) — not the degrees, so a tp, pp or recompute edit keeps the slots and class sums it already summed.
    Keyed by value and type, ``MAX_BOOKS`` kept."""
    s, switches = float(r.par.s), r.strategy.recompute.switches
    key = (key_of(r.dims), key_of(r.widths), key_of(r.flags), s, switches,
           None if switches is None else tuple(map(type, switches)), kinds_generation())
    table = _kept(_TABLES, key)
    if table is None:
        table = _keep(_TABLES, key, ActivationTable(r.dims, r.widths, r.flags, s, switches), MAX_BOOKS)
    return table


class Same:
    """A key part that is one object (compared by identity, held so that its id is not reused)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.obj is self.obj


class _Kept:
    """A resolved plan, the ``Settled`` it was resolved from and, once built, its layout."""

    __slots__ = ("layout", "r", "settled")

    def __init__(self, r: Resolved, settled: Settled) -> None:
        self.r = r
        self.settled = settled
        self.layout: Layout | None = None


_RESOLVED: OrderedDict[tuple, _Kept] = OrderedDict()


def resolved(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions) -> Resolved:
    """``resolve(model, strategy, hardware, options)``, kept: resolving reads the micro-batch count and the
    accumulation steps only to put them in ``Par`` (m, n_acc), so a plan that differs from a kept one in those
    alone is the kept one with its strategy and those two degrees replaced. Keyed like the row book (without γ),
    and on the family profiles and layer kinds registered now (a plug-in or the user's folder may add some)."""
    return _plan(model, strategy, hardware, options)[0]


def resolved_layout(model: ModelSpec, strategy: Strategy, hardware: Hardware,
                    options: RunOptions) -> tuple[Resolved, Layout]:
    """``resolved`` and its layout, ``build_layout(layout_inputs(r))``, kept with the resolved plan: the layout's
    inputs read neither m nor n_acc (a plan whose layout is refused raises LayoutError every time)."""
    r, kept = _plan(model, strategy, hardware, options)
    if kept.layout is None:
        kept.layout = _layout(r, kept.settled)
    return r, kept.layout


LAYOUT_READ = ("pp", "vpp", "schedule", "offset", "partition", "offset_rule", "mtp_in_offset", "emb_out_in_offset",
               "noop_layers", "vision_partition", "recompute")  # the fields of resolve.DEGREES the layout reads
_LAYOUT_READ = attrgetter(*LAYOUT_READ[:-1])  # and the recompute plan, by its key


def _layout(r: Resolved, settled: Settled) -> Layout:
    """``build_layout(layout_inputs(r))``, kept with the plan's ``Settled`` (which holds the model, the options
    and every strategy field but ``resolve.DEGREES`` by value) under the values and types of what the layout
    reads of those (``LAYOUT_READ``), so a tp, cp or ep edit finds its layout. 64 kept per Settled."""
    values = _LAYOUT_READ(r.strategy)
    kinds = tuple(map(type, values))
    key = (values, kinds, tuple(_types(v) for v, k in zip(values, kinds, strict=True) if k not in _LEAVES),
           key_of(r.strategy.recompute))
    got = settled.layouts.get(key)
    if got is None:
        got = build_layout(layout_inputs(r))
        with _LOCK:
            if len(settled.layouts) >= 64:
                settled.layouts.clear()
            settled.layouts[key] = got
    return got  # type: ignore[return-value]


def _plan(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions) -> tuple[Resolved, _Kept]:
    """This plan resolved, and the kept entry it came from."""
    model_key, options_key, profiles, generation = key_of(model), key_of(options), Same(all_profiles()), \
        kinds_generation()
    key = (model_key, key_of(strategy, NOT_READ), key_of(hardware), options_key, profiles, generation)
    kept = _kept(_RESOLVED, key)
    if kept is None:
        found = settled(model, strategy, options, (model_key, options_key, profiles, generation))
        kept = _keep(_RESOLVED, key, _Kept(resolve_settled(found, model, strategy, hardware, options), found),
                     MAX_BOOKS)
    r = kept.r
    if r.strategy is not strategy:  # replace(r, strategy=…, par=replace(r.par, m=…, n_acc=…)), made at once
        par = at_once(Par, **{**vars(r.par), "m": strategy.micro_batches, "n_acc": strategy.n_acc})
        r = at_once(Resolved, **{**vars(r), "strategy": strategy, "par": par})
    return r, kept


_SETTLED: OrderedDict[tuple, Settled] = OrderedDict()


def settled(model: ModelSpec, strategy: Strategy, options: RunOptions, rest: tuple) -> Settled:
    """``resolve.settle(model, strategy, options)``, kept: it reads no field of ``resolve.DEGREES`` and of the
    recompute plan only its rule, so a tp, pp, cp, ep, recompute, micro-batch or sequence-length edit finds the
    plan's dims, widths, flags and their assumptions and warnings (and the same records: their keys are found by
    identity). Keyed on the strategy without those fields, the rule by value and type, and ``rest``: the model's
    and the options' keys, the family profiles and the layer kinds' generation (``_plan``'s)."""
    rule = strategy.recompute.rule
    key = (key_of(strategy, DEGREES), rule, type(rule), *rest)
    got = _kept(_SETTLED, key)
    if got is None:
        got = _keep(_SETTLED, key, settle(model, strategy, options), MAX_BOOKS)
    return got  # type: ignore[no-any-return]


def forget() -> None:
    """Drop every kept book and resolved plan (the keys of records still held stay: they describe the
    records)."""
    with _LOCK:
        _BOOKS.clear()
        _COSTS.clear()
        _RESOLVED.clear()
        _SETTLED.clear()
        _TABLES.clear()


__all__ = ["LAYOUT_ONLY", "LAYOUT_READ", "MAX_BOOKS", "NOT_READ", "RowBook", "RowCosts", "Same",
           "activation_table", "forget", "key_of", "resolved", "resolved_layout", "row_book", "row_costs", "settled",
           "typed"]
