"""The caching-allocator replay (``estimator.device.allocator``: a compiled program, sorted integer keys, blocks
reused, written for speed) against a straightforward replay of the same rules written here for clarity (a list of
blocks per pool, best fit by a scan), on generated traces under every configuration kind (P-COLD-START)."""

from __future__ import annotations

from dataclasses import dataclass

from fuzzing import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from estimator.device.allocator import (
    LARGE_BUFFER,
    MIN_BLOCK,
    SMALL_BUFFER,
    SMALL_SIZE,
    AllocatorConfig,
    CachingAllocator,
    allocation_size,
    compile_events,
    replay,
    round_size,
)

MiB = 1 << 20


@dataclass
class _B:
    addr: int
    size: int
    segment: int
    free: bool = True


def reference(events: list[tuple], config: AllocatorConfig, scale: float) -> list[tuple[int, int]]:
    """Each step's (max allocated, max reserved), then the last's: PyTorch's rules read one by one."""
    pools: dict[tuple[int, bool], list[_B]] = {}  # (stream, small) → its blocks by address
    mapped: dict[tuple[int, bool], int] = {}      # expandable: the pool's mapped end
    live: dict[int, _B] = {}
    allocated = reserved = max_allocated = max_reserved = 0
    next_segment = 0
    started = False
    out = []
    limit = config.max_split_size
    for ev in events:
        if ev[0] == "step":
            if started:
                out.append((max_allocated, max_reserved))
            max_allocated, max_reserved, started = allocated, reserved, True
        elif ev[0] == "a":
            transient = len(ev) > 4 and ev[4]
            size = round_size(int(ev[2] * scale) if transient and scale != 1.0 else int(ev[2]),
                              config.roundup_power2_divisions)
            small = size <= SMALL_SIZE
            key = (ev[3], small)
            blocks = pools.setdefault(key, [])
            end = mapped.get(key, 0)
            fits = sorted((b for b in blocks if b.free and b.size >= size), key=lambda b: (b.size, b.addr))
            if config.expandable_segments and fits and fits[0].addr + fits[0].size == end and len(fits) > 1:
                fits.pop(0)  # the block at the mapped end can grow: another that fits comes first
            got = fits[0] if fits else None
            if got is not None and limit is not None and (size < limit <= got.size or
                                                          (size >= limit and got.size >= size + LARGE_BUFFER)):
                got = None  # an oversize block serves only requests near its size
            if got is None and config.expandable_segments:
                page = SMALL_BUFFER if small else LARGE_BUFFER
                last = blocks[-1] if blocks and blocks[-1].free else None
                grow = -(-(size - (last.size if last else 0)) // page) * page
                mapped[key] = end + grow
                reserved += grow
                if last is not None:
                    last.size += grow
                    got = last
                else:
                    got = _B(end, grow, 0)
                    blocks.append(got)
            elif got is None:
                grant = allocation_size(size)
                got = _B(next_segment, grant, next_segment)
                next_segment += grant
                reserved += grant
                blocks.append(got)
                blocks.sort(key=lambda b: b.addr)
            rest = got.size - size
            if rest >= MIN_BLOCK and (small or config.expandable_segments or
                                      (rest > SMALL_SIZE and (limit is None or size < limit))):
                blocks.insert(blocks.index(got) + 1, _B(got.addr + size, rest, got.segment))
                got.size = size
            got.free = False
            live[ev[1]] = got
            allocated += got.size
        else:
            block = live.pop(ev[1])
            allocated -= block.size
            block.free = True
            blocks = next(b for b in pools.values() if any(x is block for x in b))
            i = next(k for k, x in enumerate(blocks) if x is block)
            after = blocks[i + 1] if i + 1 < len(blocks) else None
            if after is not None and after.free and after.segment == block.segment:
                block.size += after.size
                del blocks[i + 1]
            before = blocks[i - 1] if i > 0 else None
            if before is not None and before.free and before.segment == block.segment:
                before.size += block.size
                del blocks[i]
        max_allocated, max_reserved = max(max_allocated, allocated), max(max_reserved, reserved)
    return [*out, (max_allocated, max_reserved)]


SIZES = [1, 511, 512, 513, 4096, 300 << 10, SMALL_SIZE - 1, SMALL_SIZE, SMALL_SIZE + 1, 2 * MiB, 3 * MiB + 7,
         9 * MiB, 10 * MiB, 11 * MiB, 17 * MiB, 20 * MiB, 21 * MiB, 40 * MiB, 63 * MiB, 64 * MiB, 100 * MiB,
         130 * MiB + 512]


@st.composite
def traces(draw) -> list[tuple]:
    events: list[tuple] = [("step", 0)]
    live: list[int] = []
    handle = 0
    steps = 1
    for _ in range(draw(st.integers(1, 120))):
        op = draw(st.sampled_from("aaaff" + ("s" if steps < 3 else "")))
        if op == "a" or (op == "f" and not live):
            handle += 1
            size = draw(st.sampled_from(SIZES) | st.integers(1, 160 * MiB))
            events.append(("a", handle, size, draw(st.sampled_from([0, 0, 0, 1, 2])), draw(st.booleans())))
            live.append(handle)
        elif op == "f":
            events.append(("f", live.pop(draw(st.integers(0, len(live) - 1)))))
        else:
            events.append(("step", steps))
            steps += 1
    return events


configs = st.builds(AllocatorConfig, st.booleans(), st.sampled_from([None, 16 * MiB, 64 * MiB, 128 * MiB]),
                    st.sampled_from([0, 1, 2, 4, 8]))


@fuzz_settings(300)
@given(traces(), configs, st.sampled_from([1.0, 0.99, 1.01, 0.5, 1.7]))
def test_replay_equals_the_straightforward_replay(events: list[tuple], config: AllocatorConfig, scale: float) -> None:
    want = reference(events, config, scale)
    got = [(p.max_allocated, p.max_reserved) for p in replay(events, config, scale)]
    assert got == want
    # the program of the trace (what device.memory keeps with it) replays as the trace, for every scale
    assert [(p.max_allocated, p.max_reserved) for p in replay(compile_events(events), config, scale)] == want


@fuzz_settings(100)
@given(traces(), configs)
def test_event_by_event_equals_one_run(events: list[tuple], config: AllocatorConfig) -> None:
    """``malloc``/``free`` one at a time (handles carried across runs) leave the allocator as one run does."""
    whole = CachingAllocator(config)
    whole.run(events)
    single = CachingAllocator(config)
    for ev in events:
        single.run((ev,))
    assert (single.allocated, single.reserved, single.max_allocated, single.max_reserved) == \
        (whole.allocated, whole.reserved, whole.max_allocated, whole.max_reserved)


def test_a_stage_traces_program_replays_as_its_events() -> None:
    """The trace builder writes the allocator's program as it goes (``device.trace.Trace``: a handle is its slot,
    a zero-size handle a slot no code names); its replays equal those of its event tuples, for every stage of
    the benchmark's FSDP2 plan, under three configurations and the band's scales."""
    from pathlib import Path

    from estimator.device.trace import stage_trace
    from estimator.device.workspaces import library_workspaces
    from estimator.estimate import layout_inputs
    from estimator.formats import parse
    from estimator.layout import build_layout
    from estimator.resolve import resolve
    from estimator.stage import StagePricer, stage_rows

    inputs = Path(__file__).parents[1] / "benchmarks" / "inputs"
    plan = parse([str(inputs / "llama3_70b_torchtitan_pp8_vpp5.plan.yaml")])
    r = resolve(plan.model, plan.strategy, plan.hardware, plan.options)
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    for stage in (0, r.strategy.pp - 1):
        trace = stage_trace(pricer, stage, stage_rows(pricer, stage), library_workspaces(r))
        events = trace.events
        for config in (AllocatorConfig(), AllocatorConfig(expandable_segments=True),
                       AllocatorConfig(max_split_size=256 * MiB)):
            for scale in (1.0, 0.99, 1.01):
                assert [(p.max_allocated, p.max_reserved) for p in replay(trace.program(), config, scale)] == \
                    [(p.max_allocated, p.max_reserved) for p in replay(events, config, scale)]


@fuzz_settings(100)
@given(st.lists(st.tuples(st.sampled_from("aaf s"), st.sampled_from([0, 0.4, 1, 700, 3 * MiB, 30 * MiB]),
                          st.integers(0, 2), st.booleans()), max_size=60), configs)
def test_a_traces_program_with_zero_size_handles(ops: list, config: AllocatorConfig) -> None:
    """A zero-size tensor gets a handle but no request (a slot no code names), its free is dropped, as is a
    second free: the program the trace writes replays as its events, which say exactly that."""
    from estimator.device.trace import Trace

    trace = Trace()
    handles: list[int] = []
    requested: list[int] = []
    steps = 0
    for op, size, stream, transient in ops:
        if op == "a":
            handles.append(trace.alloc(size, stream, transient=transient))
            if size >= 1:
                requested.append(handles[-1])
        elif op == "f" and handles:
            trace.free(handles[len(handles) // 2])  # sometimes freed again: dropped
        elif op == "s" and steps < 3:
            trace.step(steps)
            steps += 1
    events = trace.events
    assert [e[1] for e in events if e[0] == "a"] == requested and handles == list(range(1, len(handles) + 1))
    assert [e[1] for e in events if e[0] == "step"] == list(range(steps))
    for scale in (1.0, 0.99):
        assert [(p.max_allocated, p.max_reserved) for p in replay(trace.program(), config, scale)] == \
            [(p.max_allocated, p.max_reserved) for p in replay(events, config, scale)]
