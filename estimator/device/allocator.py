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

import bisect
from dataclasses import dataclass

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
    __slots__ = ("addr", "allocated", "key", "mapped", "next", "pool", "prev", "segment", "size")

    def __init__(self, addr: int, size: int, segment: int, pool: _Pool, prev: _Block | None = None,
                 next: _Block | None = None, mapped: bool = True) -> None:
        self.addr, self.size, self.segment, self.pool = addr, size, segment, pool
        self.allocated = False
        self.mapped = mapped
        self.prev, self.next = prev, next
        self.key: tuple | None = None


class _Pool:
    __slots__ = ("free", "mapped_end", "reserved", "small", "tail")

    def __init__(self, small: bool) -> None:
        self.small = small
        self.free: list[tuple] = []          # (size, addr, serial, block), sorted: best fit, ties to the lower address
        self.tail: _Block | None = None      # expandable: the unmapped tail block
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


class CachingAllocator:
    """Replays ``malloc``/``free`` and keeps the peaks of allocated and reserved bytes."""

    def __init__(self, config: AllocatorConfig | None = None) -> None:
        self.config = config or AllocatorConfig()
        self._expandable = self.config.expandable_segments
        self._limit = self.config.max_split_size
        self._divisions = self.config.roundup_power2_divisions
        self.pools: dict[tuple[int, bool], _Pool] = {}
        self.allocated = self.reserved = 0
        self.max_allocated = self.max_reserved = 0
        self._next_id = 0
        self._segments = 0
        self._live: dict[int, _Block] = {}

    # ------------------------------------------------------------------------------------------ public
    def malloc(self, handle: int, size: int, stream: int = 0) -> None:
        size = int(size)
        if self._divisions > 1 or size < MIN_BLOCK:
            size = round_size(size, self._divisions)
        else:
            size = -(-size // MIN_BLOCK) * MIN_BLOCK
        small = size <= SMALL_SIZE
        pool = self.pools.get((stream, small))
        if pool is None:
            pool = self.pools[(stream, small)] = _Pool(small)
        block = self._take_free(pool, size)
        if block is None:
            block = self._expand(pool, size) if self._expandable else self._new_segment(pool, size)
        if block.size - size >= MIN_BLOCK:  # a remainder that could be split off
            block = self._split(pool, block, size)
        block.allocated = True
        self._live[handle] = block
        self.allocated += block.size
        if self.allocated > self.max_allocated:
            self.max_allocated = self.allocated

    def free(self, handle: int) -> None:
        block = self._live.pop(handle)
        pool = block.pool
        assert pool is not None
        self.allocated -= block.size
        block.allocated = False
        for other in (block.prev, block.next):
            if other is not None and not other.allocated and other.mapped:
                self._remove_free(pool, other)
                if other is block.prev:
                    block.addr, block.prev = other.addr, other.prev
                    if other.prev is not None:
                        other.prev.next = block
                else:
                    block.next = other.next
                    if other.next is not None:
                        other.next.prev = block
                block.size += other.size
        self._insert_free(pool, block)

    def reset_peaks(self) -> None:
        """``torch.cuda.reset_peak_memory_stats``: peaks restart from the current values."""
        self.max_allocated, self.max_reserved = self.allocated, self.reserved

    # ------------------------------------------------------------------------------------------ pools
    def _insert_free(self, pool: _Pool, block: _Block) -> None:
        self._next_id += 1
        key = (block.size, block.addr, self._next_id, block)
        bisect.insort(pool.free, key)
        block.key = key

    def _remove_free(self, pool: _Pool, block: _Block) -> None:
        # (size, address, serial) is unique, so the comparison never reaches the block itself
        del pool.free[bisect.bisect_left(pool.free, block.key)]
        block.key = None

    def _take_free(self, pool: _Pool, size: int) -> _Block | None:
        free = pool.free
        i = bisect.bisect_left(free, (size,))
        n = len(free)
        limit = self._limit
        tail = pool.tail
        while i < n:
            key = free[i]
            block = key[3]
            if tail is not None and block.next is tail and i + 1 < n:
                i += 1  # the tail block can grow into new pages: a block that fits as it is comes first
                continue
            if limit is not None:
                if size < limit <= block.size:
                    return None
                if size >= limit and block.size >= size + LARGE_BUFFER:
                    return None
            del free[i]
            block.key = None
            return block
        return None

    def _new_segment(self, pool: _Pool, size: int) -> _Block:
        grant = allocation_size(size)
        self._segments += 1
        self.reserved += grant
        pool.reserved += grant
        if self.reserved > self.max_reserved:
            self.max_reserved = self.reserved
        return _Block(self._segments << 48, grant, self._segments, pool)

    def _expand(self, pool: _Pool, size: int) -> _Block:
        """Map pages at the end of the stream's segment; a free block ending there grows into them."""
        page = SMALL_BUFFER if pool.small else LARGE_BUFFER
        if pool.tail is None:
            pool.tail = _Block(0, _HUGE, -1, pool, mapped=False)
        tail = pool.tail
        last = tail.prev if tail.prev is not None and not tail.prev.allocated else None
        have = last.size if last is not None else 0
        grow = -(-(size - have) // page) * page
        start = pool.mapped_end
        pool.mapped_end += grow
        pool.reserved += grow
        self.reserved += grow
        self.max_reserved = max(self.max_reserved, self.reserved)
        tail.addr, tail.size = pool.mapped_end, tail.size - grow
        if last is not None:
            self._remove_free(pool, last)
            last.size += grow
            return last
        block = _Block(start, grow, tail.segment, pool, tail.prev, tail)
        if tail.prev is not None:
            tail.prev.next = block
        tail.prev = block
        return block

    def _split(self, pool: _Pool, block: _Block, size: int) -> _Block:
        remaining = block.size - size
        if pool.small or self._expandable:
            split = remaining >= MIN_BLOCK
        else:
            limit = self._limit
            split = remaining > SMALL_SIZE and (limit is None or size < limit)
        if not split:
            return block
        rest = _Block(block.addr + size, remaining, block.segment, pool, block, block.next)
        if block.next is not None:
            block.next.prev = rest
        block.next = rest
        block.size = size
        self._insert_free(pool, rest)
        return block





@dataclass(frozen=True)
class StepPeaks:
    max_allocated: int
    max_reserved: int


def replay(events: list[tuple] | tuple, config: AllocatorConfig | None = None,
           scale: float = 1.0) -> list[StepPeaks]:
    """Replay a trace (``device.trace``); the peaks of each step (peaks reset at each ``step`` event, as
    ``torch.cuda.reset_peak_memory_stats`` before each step). ``scale`` multiplies the transient tensors."""
    alloc = CachingAllocator(config)
    out: list[StepPeaks] = []
    started = False
    for ev in events:
        kind = ev[0]
        if kind == "a":
            alloc.malloc(ev[1], int(ev[2] * scale) if scale != 1.0 and len(ev) > 4 and ev[4] else ev[2], ev[3])
        elif kind == "f":
            alloc.free(ev[1])
        elif kind == "step":
            if started:
                out.append(StepPeaks(alloc.max_allocated, alloc.max_reserved))
            alloc.reset_peaks()
            started = True
    out.append(StepPeaks(alloc.max_allocated, alloc.max_reserved))
    return out

__all__ = ["AllocatorConfig", "CachingAllocator", "StepPeaks", "allocation_size", "replay", "round_size"]
