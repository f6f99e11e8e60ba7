"""The PyTorch caching allocator, replayed on a trace of tensor allocations and frees (issue 10).

The rules are PyTorch's ``c10/cuda/CUDACachingAllocator.cpp`` (torch_npu's ``NPUCachingAllocator`` follows the
same source):

- every request is rounded up to a multiple of 512 bytes (``kMinBlockSize``), or, with
  ``roundup_power2_divisions``, to the next of that many divisions of its power-of-two interval;
- requests of at most 1 MiB (``kSmallSize``) use the small pool, larger ones the large pool; pools are per
  stream, and a freed block is reused only by the stream that allocated it;
- a request takes the smallest free block of its pool that fits (best fit, ties to the lower address); with
  ``max_split_size_mb`` a block at least that large serves only requests within 20 MiB of its size;
- when nothing fits, a new segment is reserved: 2 MiB for the small pool, 20 MiB for requests under 10 MiB,
  else the request rounded up to 2 MiB; segments are never returned while memory lasts (no OOM here);
- a block is split when the remainder is at least 512 bytes (small pool, or any pool with expandable
  segments) or more than 1 MiB (large pool), and a freed block merges with free neighbours of its segment;
- ``expandable_segments:True``: one segment per stream and pool that maps pages (2 MiB small, 20 MiB large)
  at its end as needed; a free block at the end of the mapped range grows into new pages, and the best-fit
  search passes over that tail block while another free block fits.

``allocated`` counts whole blocks (so the rounding and an unsplit remainder count), as
``torch.cuda.max_memory_allocated`` does; ``reserved`` counts segments or mapped pages, as
``max_memory_reserved`` does.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from dataclasses import dataclass
from typing import Any

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
LARGE_BUFFER = 20 << 20
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20
_HUGE = 1 << 62  # the unmapped address space of an expandable segment


@dataclass(frozen=True)
class AllocatorConfig:
    """What ``PYTORCH_CUDA_ALLOC_CONF`` / ``PYTORCH_NPU_ALLOC_CONF`` say (only the keys that change sizes)."""

    expandable_segments: bool = False
    max_split_size: int | None = None          # bytes; None = unlimited
    roundup_power2_divisions: int = 0          # 0 or 1: plain 512-byte rounding


class _Block:
    __slots__ = ("addr", "avail", "id", "key", "next", "pool", "prev", "size")

    def __init__(self, addr: int, size: int, pool: _Pool | None, prev: _Block | None, next: _Block | None) -> None:
        self.addr, self.size, self.pool = addr, size, pool
        self.prev, self.next = prev, next
        self.avail = False  # free and mapped: a neighbour a freed block merges with
        self.key = 0  # while free: its key in the pool's sorted list
        self.id = 0  # its index in the allocator's list of blocks (``_blocks``): the low bits of its key


# A free block's key in its pool's sorted list: size << _KEY_SHIFT | address << _ADDR_SHIFT | id, so that the
# order is best fit, ties to the lower address (as PyTorch's (size, address) comparison), with one integer
# comparison per probe, and the key names its block (``_blocks[key & _ID]``: no key → block map to keep). (size,
# address) is unique in a pool: its blocks never overlap (segments take consecutive address ranges, an expandable
# segment maps pages at its end), so the id never decides the order. Addresses stay below 2**128 (the bytes a
# replay reserves in all, far beyond any device) and ids below 2**64.
_KEY_SHIFT = 192
_ADDR_SHIFT = 64
_ID = (1 << _ADDR_SHIFT) - 1
_NEVER = math.inf  # the split minimum of a request whose remainder is never split off (no remainder reaches it)


class _Pool:
    __slots__ = ("free", "mapped_end", "reserved", "small", "tail")

    def __init__(self, small: bool, tail: _Block) -> None:
        self.small = small
        self.free: list[int] = []              # the free blocks' keys, sorted
        self.tail = tail                       # expandable: the unmapped tail block; else one linked to no block
        self.mapped_end = 0
        self.reserved = 0


def round_size(size: int, divisions: int = 0) -> int:
    if size < MIN_BLOCK:
        return MIN_BLOCK
    if divisions > 1 and size > MIN_BLOCK * divisions:
        power = 1 << (size - 1).bit_length()  # next power of two ≥ size
        step = max(power // 2 // divisions, 1)
        return -(-size // step) * step
    return -(-size // MIN_BLOCK) * MIN_BLOCK


def allocation_size(size: int) -> int:
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class Program:
    """A trace's events as the replay loop reads them: one integer per event — ``+slot`` a request, ``-slot`` the
    free of the block that request got, ``0`` a ``step`` — and each slot's request as an index into the trace's
    distinct requests ``(bytes, stream, transient)`` (a stage's trace has a few dozen), so that what a scale and an
    allocator configuration make of a request (its rounded size, its pool, whether a remainder is split off) is
    worked out once per distinct request instead of once per event. The trace builder writes it as it goes
    (``device.trace``), ``compile_events`` from event tuples. Equal by value (two equal programs replay alike),
    its hash computed once: ``device.memory`` keeps replays per program."""

    __slots__ = ("_hash", "codes", "request_of", "requests")

    def __init__(self, codes: list[int] | tuple[int, ...], requests: tuple[tuple[Any, ...], ...],
                 request_of: list[int] | tuple[int, ...]) -> None:
        self.codes = tuple(codes)
        self.requests = requests
        self.request_of = tuple(request_of)  # slot → index into ``requests``; -1: a slot no code names
        self._hash: int | None = None

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.codes, self.requests, self.request_of))
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is Program and self.codes == other.codes
                                 and self.requests == other.requests and self.request_of == other.request_of)


def compile_events(events: list[tuple] | tuple, slot_of: dict[int, int] | None = None, first: int = 1) -> Program:
    """The ``Program`` of a trace's events (``device.trace``'s ``("a", handle, bytes, stream[, transient])``,
    ``("f", handle)``, ``("step", n)``); slots numbered from ``first``, and ``slot_of`` (handle → slot of its live
    block; updated) for frees of handles requested before these events. A free of a handle that holds no block
    raises ``KeyError``, as the replay of the events themselves did."""
    slot_of = {} if slot_of is None else slot_of
    codes: list[int] = []
    requests: dict[tuple, int] = {}
    request_of = [-1] * first
    add = codes.append
    for ev in events:
        kind = ev[0]
        if kind == "f":
            add(-slot_of.pop(ev[1]))
        elif kind == "a":
            slot = len(request_of)
            slot_of[ev[1]] = slot
            request = ev[2:]  # (bytes, stream[, transient])
            index = requests.get(request)
            if index is None:
                index = requests[request] = len(requests)
            request_of.append(index)
            add(slot)
        elif kind == "step":
            add(0)
    return Program(codes, tuple(requests), request_of)


class CachingAllocator:
    """Replays ``malloc``/``free`` and keeps the peaks of allocated and reserved bytes.

    A replay runs tens of thousands of events per stage on every cold estimate and every edit that changes a
    stage's tensors, so the events are first made a ``Program`` (what each distinct request becomes is worked out
    once: its rounded size, pool, best-fit key and split minimum) and run by one loop (``_run``) with the common
    path (a free block that fits, split, freed and merged back) written out in it, the allocator's fields held in
    local variables, blocks found by slot in a list, a free block found from its sorted-list key by the id the
    key ends with, and segment ends marked by a block that is never free (no ``None`` tests); ``malloc`` and
    ``free`` run one event through it."""

    def __init__(self, config: AllocatorConfig | None = None) -> None:
        self.config = config or AllocatorConfig()
        self._expandable = self.config.expandable_segments
        self._limit = self.config.max_split_size
        self._divisions = self.config.roundup_power2_divisions
        self.pools: dict[int, _Pool] = {}  # stream << 1 | small → its pool
        self.allocated = self.reserved = 0
        self.max_allocated = self.max_reserved = 0
        self._next_segment = 0  # the address of the next segment
        self._edge = _Block(0, 0, None, None, None)  # before a segment's first block, after its last: never free
        self._no_tail = _Block(0, 0, None, None, None)  # a non-expandable pool's tail: no block's neighbour
        self._slot_of: dict[int, int] = {}  # handle → the slot of its live block (``malloc``/``free``/``run``)
        self._live: list[_Block | None] = [None]  # slot → its block
        self._blocks: list[_Block] = []  # every block a free-list key names, by id
        self._started = False  # a ``step`` event was run: the next one closes a step

    # ------------------------------------------------------------------------------------------ public
    def malloc(self, handle: int, size: int, stream: int = 0) -> None:
        self.run((("a", handle, size, stream),))

    def free(self, handle: int) -> None:
        self.run((("f", handle),))

    def address(self, handle: int) -> int:
        """Where the block of a live tensor starts (the placement rules' tests)."""
        return self._live[self._slot_of[handle]].addr  # type: ignore[union-attr]

    def run(self, events: list[tuple] | tuple, scale: float = 1.0) -> list[StepPeaks]:
        """Run a trace's events (``device.trace``: ``("a", handle, bytes, stream[, transient])``, ``("f",
        handle)``, ``("step", n)``), the transient tensors' bytes × ``scale``; the peaks of each step a ``step``
        event closes (peaks reset at each, as ``torch.cuda.reset_peak_memory_stats`` before each step)."""
        return self._run(compile_events(events, self._slot_of, len(self._live)), scale)

    def reset_peaks(self) -> None:
        """``torch.cuda.reset_peak_memory_stats``: peaks restart from the current values."""
        self.max_allocated, self.max_reserved = self.allocated, self.reserved

    # ------------------------------------------------------------------------------------------ the loop
    def _request(self, request: tuple[Any, ...], scale: float) -> tuple[int, _Pool, int, float]:
        """What a request ``(bytes, stream[, transient])`` becomes: its rounded size, its pool, its best-fit key
        (the smallest free-block key that fits) and the least remainder that is split off."""
        size, stream = request[0], request[1]
        transient = len(request) > 2 and request[2]
        size = round_size(int(size * scale) if transient and scale != 1.0 else int(size), self._divisions)
        small = size <= SMALL_SIZE
        pool = self.pools.get(stream << 1 | small)
        if pool is None:
            pool = self.pools[stream << 1 | small] = _Pool(
                small, _Block(0, _HUGE, None, self._edge, None) if self._expandable else self._no_tail)
            pool.tail.pool = pool
        limit = self._limit
        if small or self._expandable:
            split: float = MIN_BLOCK  # sizes are multiples of 512: any remainder
        elif limit is None or size < limit:
            split = SMALL_SIZE + 1  # the large pool: a remainder of more than 1 MiB
        else:
            split = _NEVER  # an oversize block is never split
        return size, pool, size << _KEY_SHIFT, split

    def _run(self, program: Program, scale: float) -> list[StepPeaks]:
        table = [self._request(request, scale) for request in program.requests]
        table.append(None)  # type: ignore[arg-type]  # the request of a slot no code names (-1)
        first = len(self._live)
        spec = [table[i] for i in program.request_of[first:]]
        spec[:0] = [None] * first  # type: ignore[list-item]
        live = self._live
        byid = self._blocks
        live.extend([None] * (len(spec) - first))
        limit, expandable = self._limit, self._expandable
        allocated, max_allocated = self.allocated, self.max_allocated
        out: list[StepPeaks] = []
        spare: list[_Block] = []  # blocks merged into a neighbour, reused by the next split
        for code in program.codes:
            if code > 0:  # a request
                size, pool, low, split = spec[code]
                free = pool.free
                n = len(free)
                i = bisect_left(free, low)  # the first free block at least this large: best fit
                if i < n:
                    got = byid[free[i] & _ID]
                    if got.next is pool.tail and i + 1 < n:
                        # the tail block can grow into new pages: a block that fits as it is comes first
                        i += 1
                        got = byid[free[i] & _ID]
                    if limit is not None and (size < limit <= got.size or
                                              (size >= limit and got.size >= size + LARGE_BUFFER)):
                        # an oversize block serves only requests near its size: a new segment instead
                        got = self._expand(pool, size) if expandable else self._new_segment(pool, size)
                    else:
                        del free[i]
                else:
                    got = self._expand(pool, size) if expandable else self._new_segment(pool, size)
                remaining = got.size - size
                if remaining >= split:  # split off the remainder
                    nxt = got.next
                    if spare:  # a block object a merge let go: set every field, not a constructor call
                        rest = spare.pop()
                        rest.addr, rest.size, rest.pool, rest.prev, rest.next = got.addr + size, remaining, pool, \
                            got, nxt
                    else:
                        rest = _Block(got.addr + size, remaining, pool, got, nxt)
                        rest.id = len(byid)
                        byid.append(rest)
                    rest.avail = True
                    nxt.prev = rest  # type: ignore[union-attr]
                    got.next = rest
                    got.size = size
                    rest.key = key = remaining << _KEY_SHIFT | rest.addr << _ADDR_SHIFT | rest.id
                    insort(free, key)
                got.avail = False
                live[code] = got
                allocated += got.size
                if allocated > max_allocated:
                    max_allocated = allocated
            elif code:  # a free
                block = live[-code]
                pool = block.pool  # type: ignore[union-attr]
                free = pool.free
                size = block.size  # type: ignore[union-attr]
                allocated -= size
                prev, nxt = block.prev, block.next  # type: ignore[union-attr]
                if prev.avail:  # merge with a free block before it
                    del free[bisect_left(free, prev.key)]
                    block.addr = prev.addr  # type: ignore[union-attr]
                    block.prev = before = prev.prev  # type: ignore[union-attr]
                    before.next = block
                    size += prev.size
                    spare.append(prev)
                if nxt.avail:  # and after it
                    del free[bisect_left(free, nxt.key)]
                    block.next = after = nxt.next  # type: ignore[union-attr]
                    after.prev = block
                    size += nxt.size
                    spare.append(nxt)
                block.size = size  # type: ignore[union-attr]
                block.avail = True  # type: ignore[union-attr]
                block.key = key = size << _KEY_SHIFT | block.addr << _ADDR_SHIFT | block.id  # type: ignore[union-attr]
                insort(free, key)
            else:  # a step
                if self._started:
                    out.append(StepPeaks(max_allocated, self.max_reserved))
                max_allocated = allocated  # reset_peaks
                self.max_reserved = self.reserved
                self._started = True
        self.allocated, self.max_allocated = allocated, max_allocated
        return out

    # ------------------------------------------------------------------------------------------ pools
    def _new_segment(self, pool: _Pool, size: int) -> _Block:
        grant = allocation_size(size)
        address = self._next_segment
        self._next_segment += grant
        self.reserved += grant
        pool.reserved += grant
        if self.reserved > self.max_reserved:
            self.max_reserved = self.reserved
        block = _Block(address, grant, pool, self._edge, self._edge)
        block.id = len(self._blocks)
        self._blocks.append(block)
        return block

    def _expand(self, pool: _Pool, size: int) -> _Block:
        """Map pages at the end of the stream's segment; a free block ending there grows into them."""
        page = SMALL_BUFFER if pool.small else LARGE_BUFFER
        tail = pool.tail
        before = tail.prev
        last = before if before.avail else None  # type: ignore[union-attr]
        have = last.size if last is not None else 0
        grow = -(-(size - have) // page) * page
        start = pool.mapped_end
        pool.mapped_end += grow
        pool.reserved += grow
        self.reserved += grow
        self.max_reserved = max(self.max_reserved, self.reserved)
        tail.addr, tail.size = pool.mapped_end, tail.size - grow
        if last is not None:
            del pool.free[bisect_left(pool.free, last.key)]
            last.size += grow
            return last
        block = _Block(start, grow, pool, before, tail)
        block.id = len(self._blocks)
        self._blocks.append(block)
        before.next = block  # type: ignore[union-attr]
        tail.prev = block
        return block


@dataclass(frozen=True)
class StepPeaks:
    max_allocated: int
    max_reserved: int


def replay(events: list[tuple] | tuple | Program, config: AllocatorConfig | None = None,
           scale: float = 1.0) -> list[StepPeaks]:
    """Replay a trace (``device.trace``); the peaks of each step (peaks reset at each ``step`` event, as
    ``torch.cuda.reset_peak_memory_stats`` before each step). ``scale`` multiplies the transient tensors. A
    ``Program`` (``compile_events``) of the trace replays as the trace."""
    alloc = CachingAllocator(config)
    out = alloc._run(events, scale) if isinstance(events, Program) else alloc.run(events, scale)
    out.append(StepPeaks(alloc.max_allocated, alloc.max_reserved))
    return out


__all__ = ["AllocatorConfig", "CachingAllocator", "Program", "StepPeaks", "allocation_size", "compile_events", "replay",
           "round_size"]
