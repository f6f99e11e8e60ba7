"""Reading what training runs print about memory and speed (``sapp calibrate``). Nothing in a log is executed;
lines no parser knows are skipped; a file with no usable line is an error naming the lines looked for.

- Megatron-LM / MindSpeed-LLM: ``[Rank R] (after N iterations) memory (MB) | allocated: … | max allocated: … |
  reserved: … | max reserved: …`` (MB = 2^20 bytes), ``elapsed time per iteration (ms): …``, ``throughput per
  GPU (TFLOP/s/GPU): …``, and the ``arguments`` block (degrees and model dimensions, checked against the config).
- torchtitan: ``step: N … memory: X GiB(Y%) … tps: … tflops: … mfu: …%`` (memory is max reserved, tps per
  device) and ``Building N-D device mesh with [names], [sizes]``.
- CANN plog: ``DEV_MEM devN Mem stats (Bytes). (module_name=HCCL; …; alloced_peak_size=…)`` per module.
- MindSpore (MindFormers, dry run or run): ``Used peak memory usage (without fragments): NM``, ``Actual peak
  memory usage (with fragments): NM``, ``MindSpore Used memory size: NM``; step logs ``per_step_time: Nms``
  and ``train_throughput_per_npu: XT``; parallel degrees as ``'model_parallel': 4``.
- ``torch.cuda.memory_stats()`` / ``torch_npu.npu.memory_stats()`` as JSON: ``allocated_bytes.all.peak``,
  ``reserved_bytes.all.peak`` (one object, or a list of ``{"rank": R, "stats": {…}}``).
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..errors import ConfigError, SappError
from ..inputs import file_kind, load_json
from ..limits import MAX_CAPACITY, MAX_DEVICES, MAX_FILE_BYTES, MAX_LOG_BYTES, MAX_LOG_LINE_BYTES, short_repr
from ..messages import msg
from ..units import GiB, MiB


class LogError(SappError):
    """A log that cannot be used: unreadable, no usable line, or a run of another plan."""


@dataclass(frozen=True)
class MemorySample:
    """Memory one rank reports, bytes; None where the line does not say."""

    rank: int | None
    where: str
    max_allocated: float | None = None      # the tensor peak (max_memory_allocated)
    max_reserved: float | None = None       # the allocator peak (max_memory_reserved)


@dataclass
class LogReading:
    path: str
    kinds: set[str] = field(default_factory=set)                 # megatron | torchtitan | plog | mindspore | stats
    memory: list[MemorySample] = field(default_factory=list)
    step_times: list[tuple[float, str]] = field(default_factory=list)   # seconds per step, where
    tokens_per_s: list[float] = field(default_factory=list)              # per device
    tflops: list[float] = field(default_factory=list)                    # per device
    modules: dict[tuple[int | None, str], tuple[float, str]] = field(default_factory=dict)  # (device, module)
    pool: float | None = None                                            # MindSpore Used memory size
    stated: dict[str, tuple[float, str]] = field(default_factory=dict)   # plan field → (value, where)
    rank: int | None = None                                              # the rank the file belongs to
    notes: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        return bool(self.memory or self.step_times or self.modules)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUM = r"([0-9][0-9,]*\.?[0-9]*)"
MEGATRON_MEMORY = re.compile(r"\[Rank (\d{1,9})\][^|]*memory \(MB\) \| allocated: " + _NUM + r" \| max allocated: " +
                             _NUM + r" \| reserved: " + _NUM + r" \| max reserved: " + _NUM)
MEGATRON_ITERATION = re.compile(r"elapsed time per iteration \(ms\): " + _NUM)
MEGATRON_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\): " + _NUM)
MEGATRON_ARG = re.compile(r"^\s*([a-z_0-9]+) \.{2,} (\S+)\s*$")
TORCHTITAN_STEP = re.compile(r"step:\s*(\d+)\s.*?memory:\s*" + _NUM + r"\s*GiB\(" + _NUM + r"%\)")
TORCHTITAN_TPS = re.compile(r"\btps:\s*" + _NUM)
TORCHTITAN_TFLOPS = re.compile(r"\btflops:\s*" + _NUM)
TORCHTITAN_MESH = re.compile(r"Building \d-D device mesh with \[([^\]]*)\], \[([^\]]*)\]")
PLOG_MEM = re.compile(r"DEV_MEM (?:dev(\d{1,9}) )?Mem stats \(Bytes\)\. \(module_name=([A-Za-z_0-9]+);.*?"
                      r"alloced_peak_size=(\d+)")
MS_USED_PEAK = re.compile(r"Used peak memory usage \(without fragments\): (\d+)M")
MS_ACTUAL_PEAK = re.compile(r"Actual peak memory usage \(with fragments\): (\d+)M")
MS_POOL = re.compile(r"MindSpore Used memory size: (\d+)M")
MS_STEP = re.compile(r"per_step_time:\s*(\d+)\s*ms")
MS_THROUGHPUT = re.compile(r"(?:train_throughput_per_npu|throughput):\s*" + _NUM + r"T")
MS_DEGREE = re.compile(r"'(data_parallel|model_parallel|pipeline_stage|context_parallel|expert_parallel|"
                       r"micro_batch_num)': (\d+)")
JSON_START = re.compile(rb"\s*(\{|\[\s*[\[{\]\"0-9-]|\[\s*$)")
RANK_IN_NAME = re.compile(r"(?:worker|rank)[_-]?(\d{1,9})", re.IGNORECASE)

# Megatron arguments → plan fields (checked against the config)
MEGATRON_ARGS = {"tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
                 "context_parallel_size": "cp", "expert_model_parallel_size": "ep", "world_size": "world",
                 "data_parallel_size": "dp", "num_layers": "num_layers", "hidden_size": "hidden_size",
                 "seq_length": "seq_length", "global_batch_size": "global_batch_size",
                 "micro_batch_size": "micro_batch_size", "num_experts": "num_experts",
                 "num_attention_heads": "num_attention_heads", "ffn_hidden_size": "ffn_hidden_size"}
MINDSPORE_DEGREES = {"data_parallel": "dp", "model_parallel": "tp", "pipeline_stage": "pp",
                     "context_parallel": "cp", "expert_parallel": "ep", "micro_batch_num": "micro_batches"}
TORCHTITAN_MESH_NAMES = {"pp": "pp", "tp": "tp", "cp": "cp", "dp_shard": "dp_shard", "dp_replicate": "dp_replicate",
                         "ep": "ep"}
LOOKED_FOR = ("Megatron/MindSpeed 'memory (MB) | allocated: …' or 'elapsed time per iteration (ms)'",
              "torchtitan 'step: … memory: …GiB(…%)'", "CANN plog 'DEV_MEM … Mem stats (Bytes)'",
              "MindSpore 'Used/Actual peak memory usage' or 'per_step_time: …ms'",
              "a torch memory_stats() JSON with 'allocated_bytes.all.peak'")


def _float(text: str) -> float:
    value = float(text.replace(",", ""))
    if not math.isfinite(value) or abs(value) > 1e30:  # '9' × 400 reads as inf
        raise ValueError(repr(text[:40]))
    return value


def read_log(path: str | Path) -> LogReading:
    """Parse one log file (or memory_stats JSON): a regular file, read line by line up to MAX_LOG_BYTES (a longer
    log is read from its start, said so), its numbers checked (docs/limits.md)."""
    p = Path(path)
    try:
        info = os.stat(p)
        if not stat.S_ISREG(info.st_mode):
            raise LogError(msg("logs.not-regular", p=p, kind=file_kind(info.st_mode)))
        # O_NONBLOCK: a file swapped for a FIFO after the check above cannot block the open
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise LogError(msg("logs.cannot-read", p=p, value=exc.strerror or exc)) from None
    out = LogReading(str(p))
    named = RANK_IN_NAME.search(p.name)
    out.rank = int(named.group(1)) if named else None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise LogError(msg("logs.not-regular", p=p, kind=file_kind(os.fstat(fh.fileno()).st_mode)))
        head = fh.read(MAX_FILE_BYTES + 1)
        json_problem = None
        if JSON_START.match(head) and len(head) <= MAX_FILE_BYTES:  # a memory_stats JSON, not "[Rank 0] …"
            try:
                _read_stats(load_json(head.decode("utf-8", errors="replace"), str(p)), out)
            except ConfigError as exc:  # not JSON after all (read as text), or JSON beyond the bounds
                json_problem = exc
        if not out.usable:
            fh.seek(0)
            _read_text(_lines(fh, p, out), out)
    if not out.usable:
        if json_problem is not None:
            raise LogError(msg("logs.no-usable-line-json", path=p, problem=json_problem,
                               looked="; ".join(LOOKED_FOR)))
        raise LogError(msg("logs.no-usable-line", path=p, looked="; ".join(LOOKED_FOR)))
    return out


def _lines(fh: BinaryIO, p: Path, out: LogReading) -> Iterator[str]:
    """The log's lines (UTF-8, undecodable bytes replaced), at most MAX_LOG_BYTES of them, each line cut at
    MAX_LOG_LINE_BYTES (no log line is longer; a regex over a 100 MB "line" would take minutes)."""
    read = 0
    for raw in fh:
        read += len(raw)
        if read > MAX_LOG_BYTES:
            out.notes.append(f"{p.name}: only the first {MAX_LOG_BYTES >> 20} MiB read (the limit)")
            return
        yield raw[:MAX_LOG_LINE_BYTES].decode("utf-8", errors="replace")


def _number(value: object, where: str, key: str, *, optional: bool = False) -> float | None:
    """A finite non-negative number from a memory_stats JSON, else a LogError naming the entry and key."""
    if value is None and optional:
        return None
    # a comparison, not math.isfinite: an integer of 400 digits does not convert to a float (NaN compares False)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_CAPACITY:
        raise LogError(msg("logs.not-byte-count", where=where, key=key, value=short_repr(value)))
    return float(value)


def _read_stats(data: object, out: LogReading) -> None:
    entries = data if isinstance(data, list) else [data]
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        stats = entry.get("stats", entry)
        if not isinstance(stats, dict) or "allocated_bytes.all.peak" not in stats:
            continue
        where = f"{out.path}[{i}]"
        rank = entry.get("rank", out.rank if len(entries) == 1 else i)
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < MAX_DEVICES):
            raise LogError(msg("logs.not-rank", where=where, value=short_repr(rank), high=MAX_DEVICES - 1))
        allocated = _number(stats["allocated_bytes.all.peak"], where, "allocated_bytes.all.peak")
        reserved = _number(stats.get("reserved_bytes.all.peak"), where, "reserved_bytes.all.peak", optional=True)
        out.kinds.add("stats")
        out.memory.append(MemorySample(rank, where, allocated, reserved))


def _read_text(lines: Iterable[str], out: LogReading) -> None:
    in_args = False
    used_peak: tuple[float, str] | None = None
    for number, line in enumerate(lines, 1):
        where = f"{out.path}:{number}"
        try:
            used_peak, in_args = _read_line(line.rstrip("\r\n"), where, out, used_peak, in_args)
        except ValueError as exc:
            raise LogError(msg("logs.implausible-number", where=where, text=str(exc))) from None


def _read_line(line: str, where: str, out: LogReading, used_peak: tuple[float, str] | None,
               in_args: bool) -> tuple[tuple[float, str] | None, bool]:
    """One line of a text log into ``out``; the state carried between lines comes back."""
    line = _ANSI.sub("", line)
    if "arguments ---" in line:
        in_args = "end of arguments" not in line
        return used_peak, in_args
    if in_args and (m := MEGATRON_ARG.match(line)):
        field_name = MEGATRON_ARGS.get(m.group(1))
        if field_name and re.fullmatch(r"-?\d+", m.group(2)):
            out.stated[field_name] = (_float(m.group(2)), where)
        return used_peak, in_args
    if m := MEGATRON_MEMORY.search(line):
        out.kinds.add("megatron")
        out.memory.append(MemorySample(int(m.group(1)), where, _float(m.group(3)) * MiB,
                                       _float(m.group(5)) * MiB))
    if m := MEGATRON_ITERATION.search(line):
        out.kinds.add("megatron")
        out.step_times.append((_float(m.group(1)) / 1000, where))
        if t := MEGATRON_TFLOPS.search(line):
            out.tflops.append(_float(t.group(1)))
    if m := TORCHTITAN_STEP.search(line):
        out.kinds.add("torchtitan")
        out.memory.append(MemorySample(out.rank, where, None, _float(m.group(2)) * GiB))
        if t := TORCHTITAN_TPS.search(line):
            out.tokens_per_s.append(_float(t.group(1)))
        if t := TORCHTITAN_TFLOPS.search(line):
            out.tflops.append(_float(t.group(1)))
    if m := TORCHTITAN_MESH.search(line):
        names = [n.strip().strip("'\"") for n in m.group(1).split(",")]
        sizes = [s.strip() for s in m.group(2).split(",")]
        for name, size in zip(names, sizes, strict=False):
            if name in TORCHTITAN_MESH_NAMES and size.isdigit():
                out.stated[TORCHTITAN_MESH_NAMES[name]] = (_float(size), where)
    if m := PLOG_MEM.search(line):
        out.kinds.add("plog")
        device = int(m.group(1)) if m.group(1) is not None else None
        key = (device, m.group(2))
        peak = _float(m.group(3))
        if peak >= out.modules.get(key, (0.0, ""))[0]:
            out.modules[key] = (peak, where)
    if m := MS_POOL.search(line):
        out.pool = _float(m.group(1)) * MiB
    if m := MS_USED_PEAK.search(line):
        used_peak = (_float(m.group(1)) * MiB, where)
    if m := MS_ACTUAL_PEAK.search(line):
        out.kinds.add("mindspore")
        tensor = used_peak[0] if used_peak else None
        out.memory.append(MemorySample(out.rank, where, tensor, _float(m.group(1)) * MiB))
        used_peak = None
    if m := MS_STEP.search(line):
        out.kinds.add("mindspore")
        out.step_times.append((_float(m.group(1)) / 1000, where))
        if t := MS_THROUGHPUT.search(line):
            out.tflops.append(_float(t.group(1)))
    for m in MS_DEGREE.finditer(line):
        out.stated[MINDSPORE_DEGREES[m.group(1)]] = (_float(m.group(2)), where)
    return used_peak, in_args


SNIFF_BYTES = 1 * MiB
_SNIFF = (MEGATRON_MEMORY, MEGATRON_ITERATION, TORCHTITAN_STEP, PLOG_MEM, MS_USED_PEAK, MS_ACTUAL_PEAK, MS_STEP)


def looks_like_log(path: str | Path) -> bool:
    """Whether a file holds a line ``read_log`` uses, judged from its first MiB (the app routes a dropped file
    to calibration or to opening by this); an unreadable file is not a log, nor is anything but a regular file (a
    FIFO or a device would block the read: the opening path then refuses it with its rule)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with Path(path).open("rb") as fh:
            head = fh.read(SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    if "allocated_bytes.all.peak" in head:
        return True
    head = _ANSI.sub("", head)
    return any(pattern.search(head) for pattern in _SNIFF)


def read_logs(paths: list[str]) -> list[LogReading]:
    if not paths:
        raise LogError(msg("logs.give-least-one"))
    return [read_log(p) for p in paths]


__all__ = ["LOOKED_FOR", "LogError", "LogReading", "MemorySample", "looks_like_log", "read_log", "read_logs"]
