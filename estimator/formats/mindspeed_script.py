"""Reading a Megatron-LM or MindSpeed-LLM / MindSpeed-MM launch script (``pretrain_*.sh``, ``train_*.sh``,
docs/model.md#frameworks).

The script is evaluated by ``shell`` (nothing is executed) and its launch command's flags are read by
``launch_command``; which framework it runs is decided by ``launch_dialect`` from what the script shows, and said.
The device count N comes from the launcher flags or the node variables (``--devices N`` wins, with a warning,
when given). The arguments are priced by ``megatron_model_args`` and ``megatron_strategy_args``; shape flags make
the script a model source too (role ``both``), with Megatron's defaults stated as assumptions.
"""

from __future__ import annotations

from ..device.knobs import launch_env
from ..errors import ConfigError
from ..messages import Message, Text, msg
from .launch_command import FlagSet, launch_flags
from .megatron_model_args import read_model
from .megatron_strategy_args import READ_FLAGS, read_strategy
from .megatron_vocab import flag_warnings, read_dataloader_mask
from .mindspeed_flags import MEGATRON_SCRIPT, MICRO_BATCH_VARS, NODE_VARS, PER_NODE_VARS, SCRIPT
from .shell import Script, problem_of, text_of
from .support import Collector, Reading

TITLES = {"megatron": "Megatron-LM", "mindspeed": "MindSpeed-LLM"}
MODEL_REFERENCES = ("--mm-model", "--load")  # what a script says about its model besides the shape flags


def resolve_script(text: str, path: str, devices: int | None) -> tuple[Script, FlagSet, int, str, list[str]]:
    """The script evaluated, its launch command's flags, the device count N and how N was found, and notes.
    ``devices`` (``--devices N``) wins over the count the script states (the node count is what users change
    at launch), with a note."""
    script = Script.parse(text, path)
    flags = launch_flags(script)
    if not flags.program:
        raise ConfigError(msg("mindspeed_script.training-command-found"), path=path)
    notes: list[Message] = []
    found = device_count(script, flags)
    if devices and (isinstance(found, str) or found[0] != devices):
        pins = {"WORLD_SIZE": str(devices)}
        per_node = first_int(script, PER_NODE_VARS)
        if per_node and devices % per_node == 0:
            pins.update({name: str(devices // per_node) for name in NODE_VARS})
        script = Script.parse(text, path, pins)
        flags = launch_flags(script)
        if not isinstance(found, str):
            notes.append(msg("W-DEVICES.devices-instead", devices=devices, variables=found[1], count=found[0]))
        return script, flags, devices, "--devices", notes
    if isinstance(found, str):
        raise ConfigError(msg("mindspeed_script.device-count-cannot", found=found), path=path,
                          key="NNODES")
    return script, flags, found[0], found[1], notes


def first_int(script: Script, names: tuple[str, ...]) -> int | None:
    """The first of ``names`` the script sets to a plain integer."""
    found = first_named(script, names)
    return found[1] if found else None


def first_named(script: Script, names: tuple[str, ...]) -> tuple[str, int] | None:
    """(name, value) of the first of ``names`` the script sets to a plain integer."""
    for name in names:
        value = script.lookup(name)
        if value is not None and not problem_of(value) and text_of(value).strip().isdigit():
            return name, int(text_of(value).strip())
    return None


def device_count(script: Script, flags: FlagSet) -> tuple[int, str] | str:
    """N from the launcher flags, else NPUS_PER_NODE·NNODES, else WORLD_SIZE; a str says what is missing."""
    problems: list[str] = []
    candidates = (
        (("--nproc_per_node", "--nproc-per-node"), ("--nnodes",), "--nproc_per_node × --nnodes"),
        (("--worker_num",), (), "msrun --worker_num"),
    )
    for per_node, nodes, how in candidates:
        a = flags.launcher_value(per_node)
        b = flags.launcher_value(nodes) if nodes else ("1", None)
        if a is None or b is None:
            continue
        if a[1] or b[1]:
            problems.append(a[1] or b[1] or "")
            continue
        if a[0].isdigit() and b[0].isdigit():
            if int(a[0]) * int(b[0]) == 0:
                problems.append(f"{how} is {a[0]} × {b[0]} = 0 devices; give both a positive count")
                continue
            return int(a[0]) * int(b[0]), how.replace(" ×", f" {a[0]} ×") + (f" {b[0]}" if nodes else "")
    per_node = first_named(script, PER_NODE_VARS)
    nodes = first_named(script, NODE_VARS)
    if per_node and nodes:
        return per_node[1] * nodes[1], f"{per_node[0]} {per_node[1]} × {nodes[0]} {nodes[1]}"
    world = first_int(script, ("WORLD_SIZE",))
    if world:
        return world, "WORLD_SIZE"
    for name in ("NNODES", "NUM_NODES", "WORLD_SIZE", "NPUS_PER_NODE"):
        value = script.lookup(name)
        if value is not None and problem_of(value):
            problems.append(problem_of(value) or "")
    return problems[0] if problems else ("the script sets neither GPUS_PER_NODE/NPUS_PER_NODE × NNODES/NUM_NODES nor "
                                         "--nproc_per_node/--nnodes")


def read_script(text: str, path: str, devices: int | None, dialect: str, why: Text = "") -> Reading:
    """The plan a launch script states, read as ``dialect`` (megatron | mindspeed); ``why`` says how that was
    chosen (reported as the assumption on options.framework)."""
    script, fl, world, how, notes = resolve_script(text, path, devices)
    out = Collector(path)
    for note in notes:
        out.warn("W-DEVICES", note)
    for note in fl.notes:
        out.warn("W-SHELL", note)
    out.assume("options.framework", dialect, why or msg("dialect.read-as", title=TITLES[dialect]))
    used = {ref.name for occs in fl.flags.values() for occ in occs for tok in [*occ.values, occ.token] for seg in tok
            for ref in seg.via}
    for record in script.all_assignments:
        if record.conditional and record.name in used:
            out.warn("W-SHELL", msg("W-SHELL", name=record.name, line=record.line))
    read_model(fl, out, dialect, fl.program)
    read_strategy(fl, out, world, how, dialect)
    _stated(fl, out, "DP", out.values["strategy.dp"], "data-parallel degree N/(tp·pp·cp)")
    for name in MICRO_BATCH_VARS:
        _stated(fl, out, name, out.values.get("strategy.micro_batches", 1), "micro-batches per step G/(b·d)")
    out.warnings.extend(flag_warnings(fl, READ_FLAGS, dialect))
    read_dataloader_mask(fl, out, dialect)
    _device_env(script, out, path)
    role = "both" if any(k.startswith("model.") for k in out.values) else "strategy"
    reading = out.reading(SCRIPT if dialect == "mindspeed" else MEGATRON_SCRIPT, role, text, path)
    reading.references = tuple((fl.where(name), fl.raw(name)) for name in MODEL_REFERENCES if fl.raw(name).strip())
    return reading


def _device_env(script: Script, out: Collector, path: str) -> None:
    """Allocator and communication-buffer knobs the script exports (PYTORCH_NPU_ALLOC_CONF, HCCL_BUFFSIZE…)."""
    def lookup(name: str) -> str | None:
        value = script.lookup(name)
        return text_of(value) if value is not None and not problem_of(value) else None

    def where(name: str) -> str:
        record = script.assignments.get(name)
        return f"{path}:{record.line}" if record else path

    knobs, warnings = launch_env(lookup, where)
    for key, value, at in knobs:
        out.put(key, value, at)
    for text in warnings:
        out.warn("W-ENV", text)


def _stated(fl: FlagSet, out: Collector, name: str, derived: int, what: str) -> None:
    value = fl.script.lookup(name)
    if value is None or problem_of(value) or not text_of(value).strip().isdigit():
        return
    if int(text_of(value)) != derived:
        out.warn("W-STATED", msg("W-STATED", name=name, text_of=text_of(value).strip(), what=what, derived=derived))


