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

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SappError
from ..messages import msg
from ..units import GiB, MiB

MAX_LOG_BYTES = 512 * MiB  # a log larger than this is read from its first 512 MiB only (said so)


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
MEGATRON_MEMORY = re.compile(r"\[Rank (\d+)\][^|]*memory \(MB\) \| allocated: " + _NUM + r" \| max allocated: " +
                             _NUM + r" \| reserved: " + _NUM + r" \| max reserved: " + _NUM)
MEGATRON_ITERATION = re.compile(r"elapsed time per iteration \(ms\): " + _NUM)
MEGATRON_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\): " + _NUM)
MEGATRON_ARG = re.compile(r"^\s*([a-z_0-9]+) \.{2,} (\S+)\s*$")
TORCHTITAN_STEP = re.compile(r"step:\s*(\d+)\s.*?memory:\s*" + _NUM + r"\s*GiB\(" + _NUM + r"%\)")
TORCHTITAN_TPS = re.compile(r"\btps:\s*" + _NUM)
TORCHTITAN_TFLOPS = re.compile(r"\btflops:\s*" + _NUM)
TORCHTITAN_MESH = re.compile(r"Building \d-D device mesh with \[([^\]]*)\], \[([^\]]*)\]")
PLOG_MEM = re.compile(r"DEV_MEM (?:dev(\d+) )?Mem stats \(Bytes\)\. \(module_name=([A-Za-z_0-9]+);.*?"
                      r"alloced_peak_size=(\d+)")
MS_USED_PEAK = re.compile(r"Used peak memory usage \(without fragments\): (\d+)M")
MS_ACTUAL_PEAK = re.compile(r"Actual peak memory usage \(with fragments\): (\d+)M")
MS_POOL = re.compile(r"MindSpore Used memory size: (\d+)M")
MS_STEP = re.compile(r"per_step_time:\s*(\d+)\s*ms")
MS_THROUGHPUT = re.compile(r"(?:train_throughput_per_npu|throughput):\s*" + _NUM + r"T")
MS_DEGREE = re.compile(r"'(data_parallel|model_parallel|pipeline_stage|context_parallel|expert_parallel|"
                       r"micro_batch_num)': (\d+)")
RANK_IN_NAME = re.compile(r"(?:worker|rank)[_-]?(\d+)", re.IGNORECASE)

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
    return float(text.replace(",", ""))


def read_log(path: str | Path) -> LogReading:
    """Parse one log file (or memory_stats JSON)."""
    p = Path(path)
    try:
        if not p.is_file():
            raise LogError(msg("logs.file", p=p))
        with p.open("rb") as fh:
            raw = fh.read(MAX_LOG_BYTES + 1)
    except OSError as exc:
        raise LogError(msg("logs.cannot-read", p=p, value=exc.strerror or exc)) from None
    text = raw[:MAX_LOG_BYTES].decode("utf-8", errors="replace")
    out = LogReading(str(p))
    if len(raw) > MAX_LOG_BYTES:
        out.notes.append(f"{p.name}: only the first 512 MiB read")
    named = RANK_IN_NAME.search(p.name)
    out.rank = int(named.group(1)) if named else None
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        with contextlib.suppress(json.JSONDecodeError):  # not JSON after all: read it as text
            _read_stats(json.loads(text), out)
    if not out.usable:
        _read_text(text, out)
    if not out.usable:
        raise LogError(msg("logs.no-usable-line", path=p, looked="; ".join(LOOKED_FOR)))
    return out


def _read_stats(data: object, out: LogReading) -> None:
    entries = data if isinstance(data, list) else [data]
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        stats = entry.get("stats", entry)
        rank = entry.get("rank", out.rank if len(entries) == 1 else i)
        if not isinstance(stats, dict) or "allocated_bytes.all.peak" not in stats:
            continue
        out.kinds.add("stats")
        reserved = stats.get("reserved_bytes.all.peak")
        out.memory.append(MemorySample(int(rank) if rank is not None else None, f"{out.path}[{i}]",
                                       float(stats["allocated_bytes.all.peak"]),
                                       float(reserved) if reserved is not None else None))


def _read_text(text: str, out: LogReading) -> None:
    in_args = False
    used_peak: tuple[float, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{out.path}:{number}"
        line = _ANSI.sub("", line)
        if "arguments ---" in line:
            in_args = "end of arguments" not in line
            continue
        if in_args and (m := MEGATRON_ARG.match(line)):
            field_name = MEGATRON_ARGS.get(m.group(1))
            if field_name and re.fullmatch(r"-?\d+", m.group(2)):
                out.stated[field_name] = (float(m.group(2)), where)
            continue
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
                    out.stated[TORCHTITAN_MESH_NAMES[name]] = (float(size), where)
        if m := PLOG_MEM.search(line):
            out.kinds.add("plog")
            device = int(m.group(1)) if m.group(1) is not None else None
            key = (device, m.group(2))
            peak = float(m.group(3))
            if peak >= out.modules.get(key, (0.0, ""))[0]:
                out.modules[key] = (peak, where)
        if m := MS_POOL.search(line):
            out.pool = float(m.group(1)) * MiB
        if m := MS_USED_PEAK.search(line):
            used_peak = (float(m.group(1)) * MiB, where)
        if m := MS_ACTUAL_PEAK.search(line):
            out.kinds.add("mindspore")
            tensor = used_peak[0] if used_peak else None
            out.memory.append(MemorySample(out.rank, where, tensor, float(m.group(1)) * MiB))
            used_peak = None
        if m := MS_STEP.search(line):
            out.kinds.add("mindspore")
            out.step_times.append((float(m.group(1)) / 1000, where))
            if t := MS_THROUGHPUT.search(line):
                out.tflops.append(_float(t.group(1)))
        for m in MS_DEGREE.finditer(line):
            out.stated[MINDSPORE_DEGREES[m.group(1)]] = (float(m.group(2)), where)


def read_logs(paths: list[str]) -> list[LogReading]:
    if not paths:
        raise LogError(msg("logs.give-least-one"))
    return [read_log(p) for p in paths]


__all__ = ["LOOKED_FOR", "LogError", "LogReading", "MemorySample", "read_log", "read_logs"]
