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

from bisect import bisect_left, insort
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
    __slots__ = ("addr", "allocated", "key", "mapped", "next", "pool", "prev", "size")

    def __init__(self, addr: int, size: int, pool: _Pool, prev: _Block | None = None,
                 next: _Block | None = None, mapped: bool = True) -> None:
        self.addr, self.size, self.pool = addr, size, pool
        self.allocated = False
        self.mapped = mapped
        self.prev, self.next = prev, next
        self.key = 0  # while free: its key in the pool's sorted list


# A free block's key in its pool's sorted list: size << _KEY_SHIFT | address, so that the order is best fit, ties
# to the lower address (as PyTorch's (size, address) comparison), with one integer comparison per probe. Unique in
# a pool: its blocks never overlap (segments take consecutive address ranges, an expandable segment maps pages at
# its end). Addresses stay below 2**_KEY_SHIFT: the bytes a replay reserves in all (far beyond any device).
_KEY_SHIFT = 128


class _Pool:
    __slots__ = ("blocks", "free", "mapped_end", "reserved", "small", "tail")

    def __init__(self, small: bool) -> None:
        self.small = small
        self.free: list[int] = []              # the free blocks' keys, sorted
        self.blocks: dict[int, _Block] = {}    # key → free block
        self.tail: _Block | None = None        # expandable: the unmapped tail block
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
    """Replays ``malloc``/``free`` and keeps the peaks of allocated and reserved bytes.

    A replay runs tens of thousands of events per stage on every cold estimate and every edit that changes a
    stage's tensors, so the events are run by one loop (``run``) with the common path (a free block that fits,
    split, freed and merged back) written out in it and the allocator's fields held in local variables; ``malloc``
    and ``free`` run one event through it."""

    def __init__(self, config: AllocatorConfig | None = None) -> None:
        self.config = config or AllocatorConfig()
        self._expandable = self.config.expandable_segments
        self._limit = self.config.max_split_size
        self._divisions = self.config.roundup_power2_divisions
        self.pools: dict[int, _Pool] = {}  # stream << 1 | small → its pool
        self.allocated = self.reserved = 0
        self.max_allocated = self.max_reserved = 0
        self._next_segment = 0  # the address of the next segment
        self._live: dict[int, _Block] = {}
        self._started = False  # a ``step`` event was run: the next one closes a step

    # ------------------------------------------------------------------------------------------ public
    def malloc(self, handle: int, size: int, stream: int = 0) -> None:
        self.run((("a", handle, size, stream),))

    def free(self, handle: int) -> None:
        self.run((("f", handle),))

    def run(self, events: list[tuple] | tuple, scale: float = 1.0) -> list[StepPeaks]:
        """Run a trace's events (``device.trace``: ``("a", handle, bytes, stream[, transient])``, ``("f",
        handle)``, ``("step", n)``), the transient tensors' bytes × ``scale``; the peaks of each step a ``step``
        event closes (peaks reset at each, as ``torch.cuda.reset_peak_memory_stats`` before each step)."""
        scaled = scale != 1.0
        divisions, limit, expandable = self._divisions, self._limit, self._expandable
        pools, live = self.pools, self._live
        allocated, max_allocated = self.allocated, self.max_allocated
        out: list[StepPeaks] = []
        spare: list[_Block] = []  # blocks merged into a neighbour, reused by the next split
        for ev in events:
            kind = ev[0]
            if kind == "f":
                block = live.pop(ev[1])
                pool = block.pool
                free, blocks = pool.free, pool.blocks
                size = block.size
                allocated -= size
                block.allocated = False
                prev, nxt = block.prev, block.next
                if prev is not None and not prev.allocated and prev.mapped:  # merge with a free block before it
                    key = prev.key
                    del free[bisect_left(free, key)]
                    del blocks[key]
                    block.addr = prev.addr
                    block.prev = before = prev.prev
                    if before is not None:
                        before.next = block
                    size += prev.size
                    spare.append(prev)
                if nxt is not None and not nxt.allocated and nxt.mapped:  # and after it
                    key = nxt.key
                    del free[bisect_left(free, key)]
                    del blocks[key]
                    block.next = after = nxt.next
                    if after is not None:
                        after.prev = block
                    size += nxt.size
                    spare.append(nxt)
                block.size = size
                block.key = key = size << _KEY_SHIFT | block.addr
                insort(free, key)
                blocks[key] = block
            elif kind == "a":
                size = int(ev[2] * scale) if scaled and len(ev) > 4 and ev[4] else int(ev[2])
                if divisions > 1 or size < MIN_BLOCK:
                    size = round_size(size, divisions)
                else:
                    size = -(-size // MIN_BLOCK) * MIN_BLOCK
                small = size <= SMALL_SIZE
                pool = pools.get(ev[3] << 1 | small)
                if pool is None:
                    pool = pools[ev[3] << 1 | small] = _Pool(small)
                free = pool.free
                n = len(free)
                i = bisect_left(free, size << _KEY_SHIFT)  # the first free block at least this large: best fit
                got: _Block | None = None
                if i < n:
                    blocks = pool.blocks
                    tail = pool.tail
                    while i < n:
                        candidate = blocks[free[i]]
                        if tail is not None and candidate.next is tail and i + 1 < n:
                            i += 1  # the tail block can grow into new pages: a block that fits as it is comes first
                            continue
                        if limit is not None and (size < limit <= candidate.size or
                                                  (size >= limit and candidate.size >= size + LARGE_BUFFER)):
                            break  # an oversize block serves only requests near its size: a new segment instead
                        del blocks[free.pop(i)]
                        got = candidate
                        break
                if got is None:
                    got = self._expand(pool, size) if expandable else self._new_segment(pool, size)
                remaining = got.size - size
                if remaining >= MIN_BLOCK and (small or expandable or (  # split off the remainder
                        remaining > SMALL_SIZE and (limit is None or size < limit))):
                    nxt = got.next
                    if spare:  # a block object a merge let go: set every field, not a constructor call
                        rest = spare.pop()
                        rest.addr, rest.size, rest.pool = got.addr + size, remaining, pool
                        rest.prev, rest.next, rest.allocated, rest.mapped = got, nxt, False, True
                    else:
                        rest = _Block(got.addr + size, remaining, pool, got, nxt)
                    if nxt is not None:
                        nxt.prev = rest
                    got.next = rest
                    got.size = size
                    rest.key = key = remaining << _KEY_SHIFT | rest.addr
                    insort(free, key)
                    pool.blocks[key] = rest
                got.allocated = True
                live[ev[1]] = got
                allocated += got.size
                if allocated > max_allocated:
                    max_allocated = allocated
            elif kind == "step":
                if self._started:
                    out.append(StepPeaks(max_allocated, self.max_reserved))
                max_allocated = allocated  # reset_peaks
                self.max_reserved = self.reserved
                self._started = True
        self.allocated, self.max_allocated = allocated, max_allocated
        return out

    def reset_peaks(self) -> None:
        """``torch.cuda.reset_peak_memory_stats``: peaks restart from the current values."""
        self.max_allocated, self.max_reserved = self.allocated, self.reserved

    # ------------------------------------------------------------------------------------------ pools
    def _new_segment(self, pool: _Pool, size: int) -> _Block:
        grant = allocation_size(size)
        address = self._next_segment
        self._next_segment += grant
        self.reserved += grant
        pool.reserved += grant
        if self.reserved > self.max_reserved:
            self.max_reserved = self.reserved
        return _Block(address, grant, pool)

    def _expand(self, pool: _Pool, size: int) -> _Block:
        """Map pages at the end of the stream's segment; a free block ending there grows into them."""
        page = SMALL_BUFFER if pool.small else LARGE_BUFFER
        if pool.tail is None:
            pool.tail = _Block(0, _HUGE, pool, mapped=False)
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
            key = last.key
            del pool.free[bisect_left(pool.free, key)]
            del pool.blocks[key]
            last.size += grow
            return last
        block = _Block(start, grow, pool, tail.prev, tail)
        if tail.prev is not None:
            tail.prev.next = block
        tail.prev = block
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
    out = alloc.run(events, scale)
    out.append(StepPeaks(alloc.max_allocated, alloc.max_reserved))
    return out


__all__ = ["AllocatorConfig", "CachingAllocator", "StepPeaks", "allocation_size", "replay", "round_size"]
