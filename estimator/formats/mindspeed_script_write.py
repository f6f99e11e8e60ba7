"""Writing a strategy back into a MindSpeed launch script (docs/model.md#frameworks): only the flags, shell variables or
computed inputs that define a changed field are touched, and the new text is read again to check that it states
the requested strategy. What a launch script cannot express is refused (R-FW)."""

from __future__ import annotations

import re
from typing import Any

from ..fields import REGISTRY, coerce
from ..parsed import ParsedConfig, SourceFile, build_plan
from ..strategy import RecomputePlan, Strategy
from .feature_flags import feature_flag_edits
from .launch_command import Flag, FlagSet, launch_flags
from .mindspeed_flags import (
    ANCHORS,
    CP_ALGO_FLAGS,
    FIXED_FIELDS,
    MODEL,
    MODEL_JSON_FIELDS,
    NODE_VARS,
    PER_NODE_VARS,
    RECOMPUTE_FLAGS,
)
from .mindspeed_script import device_count, first_int, read_script, resolve_script
from .shell import Assignment, Script, literal_span, local_span, text_of
from .support import refusal
from .text_edits import Editor


def write_script(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """New text of the launch script ``source`` for ``strategy``: only the flags or variables of changed fields
    are touched; what MindSpeed cannot express is refused with a ConfigError naming R-FW."""
    old = parsed.baseline_strategy
    if old == strategy:
        return source.text
    _script, fl, world, _how, _notes = resolve_script(source.text, source.path, old.world_size)
    desired, nodes = _desired_flags(source.path, fl, old, strategy, parsed)
    text = _apply_flags(source.text, source.path, fl, desired)
    if nodes is not None:
        text = _set_nodes(text, source.path, strategy.world_size, world)
    text = _settle(text, source.path, strategy)
    _verify(text, source, parsed, strategy)
    return text


def _desired_flags(path: str, fl: FlagSet, old: Strategy, new: Strategy,
                   parsed: ParsedConfig) -> tuple[dict[str, Any], bool | None]:
    """Flag -> new value (str), True (present) or None (absent) for every changed field."""
    want: dict[str, Any] = {}
    changed = {f for f in new.field_names() if getattr(old, f) != getattr(new, f)} - {"softmax_bytes",
                                                                                     "rescale_user_layout"}
    mm_pair = any(src.format == MODEL for src in parsed.sources)
    for name in sorted(changed & set(FIXED_FIELDS)):
        raise refusal(f"MindSpeed launch scripts cannot express strategy.{name} = {getattr(new, name)!r}", path)
    model_json_owned = sorted(changed & set(MODEL_JSON_FIELDS)) + (
        sorted(changed & {"partition", "recompute"}) if mm_pair else [])
    for name in model_json_owned:
        raise refusal(f"strategy.{name} of a MindSpeed-MM run lives in its model.json (pipeline_num_layers, "
                      "recompute_*, freeze); export rewrites the launch script only — edit the model.json", path)
    if new.n_acc != 1:
        raise refusal("MindSpeed runs all G/(b·d) micro-batches in one flush: strategy.n_acc must be 1", path)
    for name, flag in (("tp", "--tensor-model-parallel-size"), ("pp", "--pipeline-model-parallel-size"),
                       ("cp", "--context-parallel-size"), ("micro_batch_size", "--micro-batch-size"),
                       ("seq_length", "--seq-length"), ("ulysses_degree", "--ulysses-degree-in-cp"),
                       ("vpp_group", "--microbatch-group-size-per-virtual-pipeline-stage")):
        if name in changed:
            want[flag] = None if getattr(new, name) is None else str(getattr(new, name))
    if changed & {"dp", "micro_batch_size", "micro_batches", "n_acc"}:
        want["--global-batch-size"] = str(new.global_batch_size)
    for name, flag in (("sequence_parallel", "--sequence-parallel"), ("flash_attention", "--use-flash-attn"),
                       ("grouped_gemm", "--moe-grouped-gemm"), ("swap_optimizer", "--swap-optimizer"),
                       ("reuse_fp32_param", "--reuse-fp32-param"),
                       ("overlap_moe_ep_comm", "--overlap-moe-expert-parallel-comm")):
        if name in changed:
            want[flag] = True if getattr(new, name) else None
    if "swap_times" in changed:
        want["--swap-optimizer-times"] = str(new.swap_times)
    if "cp_algo" in changed:
        want["--context-parallel-algo"] = CP_ALGO_FLAGS[new.cp_algo]
    if changed & {"ep", "etp"} or ("tp" in changed and fl.has("--moe-tp-extend-ep")):
        _experts(path, fl, new, want)
    if changed & {"vpp", "schedule", "pp", "noop_layers"}:
        _vpp(path, fl, new, want)
    if "partition" in changed:
        if new.partition is not None and any(isinstance(x, tuple) for x in new.partition):
            raise refusal("--num-layer-list is one count per stage; MindSpeed cannot combine it with vpp", path)
        want["--num-layer-list"] = None if new.partition is None else ",".join(map(str, new.partition))
    if "noop_layers" in changed:
        want["--noop-layers"] = ",".join(map(str, new.noop_layers)) or None
        want["--num-layers"] = str(parsed.model.num_layers + len(new.noop_layers))
    if "recompute" in changed:
        want.update(recompute_flags(path, new))
    if "sharding" in changed:
        sh = new.sharding
        if sh.mode not in ("none", "zero1") or sh.os is not None or sh.os_e is not None or not sh.span_cp:
            raise refusal(f"MindSpeed shards the optimizer over d·cp with --use-distributed-optimizer (zero1) or "
                          f"not at all; strategy.sharding {sh.mode} with shard sizes is not expressible", path)
        want["--use-distributed-optimizer"] = True if sh.mode == "zero1" else None
    if changed & {"param_bytes", "compute_bytes"}:
        widths = (new.param_bytes, new.compute_bytes)
        if widths in ((2, 2), (None, None), (2, None), (None, 2)):
            want["--bf16"] = True if not fl.has("--fp16") else None
        elif widths == (4, 4):
            want["--bf16"] = want["--fp16"] = None
        else:
            raise refusal(f"param/compute bytes {widths}: MindSpeed trains in bf16/fp16 (2, 2) or fp32 (4, 4)", path)
    for name, flag, on in (("grad_bytes", "--o2-gradient", 2), ("optimizer_state_bytes", "--o2-optimizer", 2),
                           ("residual_bytes", "--fp32-residual-connection", 4)):
        if name in changed:
            want[flag] = True if getattr(new, name) == on else None
    want.update(feature_flag_edits(path, fl, old, new, parsed.model.is_mla, parsed.options.framework))
    nodes = True if new.world_size != old.world_size else None
    return want, nodes


def _experts(path: str, fl: FlagSet, new: Strategy, want: dict[str, Any]) -> None:
    if fl.has("--moe-tp-extend-ep") and new.etp in (None, 1):
        if new.etp is None or new.ep % new.tp:
            raise refusal(f"with --moe-tp-extend-ep experts spread over ep·tp: ep {new.ep} must be a multiple "
                          f"of tp {new.tp} and etp 1", path)
        want["--expert-model-parallel-size"] = str(new.ep // new.tp)
        return
    if new.etp == 1 and new.tp > 1 and not fl.has("--expert-tensor-parallel-size"):
        want["--moe-tp-extend-ep"] = True
        if new.ep % new.tp:
            raise refusal(f"etp 1 is written as --moe-tp-extend-ep: ep {new.ep} must be a multiple of tp", path)
        want["--expert-model-parallel-size"] = str(new.ep // new.tp)
        return
    want["--moe-tp-extend-ep"] = None
    if new.ep > 1 or fl.has("--expert-model-parallel-size"):
        want["--expert-model-parallel-size"] = str(new.ep)
    if new.etp is not None and (new.etp != new.tp or fl.has("--expert-tensor-parallel-size")):
        want["--expert-tensor-parallel-size"] = str(new.etp)


def _vpp(path: str, fl: FlagSet, new: Strategy, want: dict[str, Any]) -> None:
    if new.schedule == "dualpipev":
        if new.vpp != 2:
            raise refusal("DualPipeV (--schedules-method dualpipev) runs exactly 2 chunks per stage", path)
        want.update({"--schedules-method": "dualpipev", "--num-layers-per-virtual-pipeline-stage": None})
        return
    if new.schedule not in (None, "1f1b", "interleaved"):
        raise refusal(f"schedule {new.schedule}: MindSpeed scripts run 1F1B, interleaved (vpp) or dualpipev", path)
    want["--schedules-method"] = None
    if fl.has("--num-virtual-stages-per-pipeline-rank"):
        want["--num-virtual-stages-per-pipeline-rank"] = str(new.vpp) if new.vpp > 1 else None
        return
    if new.vpp == 1:
        want["--num-layers-per-virtual-pipeline-stage"] = None
        return
    total = fl.int("--num-layers")
    if total is None:
        raise refusal("vpp is written as --num-layers-per-virtual-pipeline-stage, which needs --num-layers", path)
    total += len(new.noop_layers) - len(fl.int_list("--noop-layers"))
    if total % (new.pp * new.vpp):
        raise refusal(f"{total} layers do not split into pp {new.pp} × vpp {new.vpp} equal chunks "
                      "(--num-layers-per-virtual-pipeline-stage); add noop layers or change vpp", path)
    want["--num-layers-per-virtual-pipeline-stage"] = str(total // (new.pp * new.vpp))


def recompute_flags(path: str, new: Strategy) -> dict[str, Any]:
    """Recompute flag -> value (str), True (present) or None (absent) stating ``new.recompute``; the model.json
    writer states the same plan with the same names."""
    plan = new.recompute
    want: dict[str, Any] = dict.fromkeys(RECOMPUTE_FLAGS)
    if plan.ranges or plan.comm_counts not in (None, False):
        raise refusal("MindSpeed has no per-layer recompute ranges or communication recompute", path)
    switches = tuple(plan.switches or ())
    full = plan.full_counts
    if isinstance(full, tuple):
        flat = [x for row in full for x in (row if isinstance(row, tuple) else (row,))]
        if len(set(flat)) != 1 or any(isinstance(x, bool) for x in flat):
            raise refusal(f"per-stage recompute counts {full} differ; MindSpeed has one --recompute-num-layers "
                          f"N (the first N layers of every stage/chunk): use one count, e.g. {max(flat)}", path)
        if not isinstance(full[0], tuple) and new.vpp > 1:
            want["--enable-recompute-layers-per-pp-rank"] = True
        full = flat[0]
    if full is True or (full is None and plan.default_mode == "full"):
        want.update({"--recompute-granularity": "full", "--recompute-method": "uniform",
                     "--recompute-num-layers": str(max(1, plan.uniform_group) if full is not True else 1)})
    elif isinstance(full, int) and full > 0:
        want.update({"--recompute-granularity": "full", "--recompute-method": "block",
                     "--recompute-num-layers": str(full)})
    selective = plan.default_mode == "selective" or plan.sel_counts not in (None, False, 0)
    if not selective:
        return want
    partial = set(switches) <= {"act", "layernorm", "mla_up_proj"} and switches
    if partial:
        for switch, flag in (("act", "--recompute-activation-function"), ("layernorm", "--recompute-norm"),
                             ("mla_up_proj", "--recompute-mla-up-proj")):
            want[flag] = True if switch in switches else None
        if isinstance(plan.sel_counts, int) and not isinstance(plan.sel_counts, bool):
            for switch, flag in (("act", "--recompute-activation-function-num-layers"),
                                 ("layernorm", "--recompute-norm-num-layers")):
                want[flag] = str(plan.sel_counts) if switch in switches else None
        elif plan.sel_counts not in (None, True):
            raise refusal("selective recompute counts per stage are not expressible in MindSpeed", path)
    elif want["--recompute-granularity"] is not None:
        raise refusal("MindSpeed cannot combine full recompute with selective modules other than the "
                      "activation function, norm and MLA up-projection", path)
    else:
        want["--recompute-granularity"] = "selective"
        want["--recompute-modules"] = " ".join(switches) if switches else None
    return want


def _apply_flags(text: str, path: str, fl: FlagSet, want: dict[str, Any]) -> str:
    editor = Editor(text, path)
    for name, value in want.items():
        present = fl.flags.get(name, [])
        if value is None:
            for occ in present:
                editor.replace(*_removal(text, path, occ))
        elif value is True:
            if not present:
                _insert(text, path, fl, editor, name)
        elif present:
            for occ in present:
                span = _value_span(text, occ)
                if span is None:
                    continue  # computed in the script ($((…))): settled afterwards
                editor.replace(span, value)
        else:
            _insert(text, path, fl, editor, f"{name} {value}")
    return editor.apply()


def _value_span(text: str, occ: Flag) -> tuple[int, int] | None:
    if not occ.values:
        return None
    if len(occ.values) == 1:
        return literal_span(occ.values[0])
    depth = len(occ.token[0].via) if occ.token else 0
    first, last = local_span(occ.values[0], depth), local_span(occ.values[-1], depth)
    return (first[0], last[1]) if first and last else None


def _removal(text: str, path: str, occ: Flag) -> tuple[tuple[int, int], str]:
    flag_span = literal_span(occ.token)
    depth = len(occ.token[0].via) if occ.token else 0
    ends = [local_span(v, depth) for v in occ.values]
    if flag_span is None or any(e is None for e in ends):
        raise refusal(f"{occ.name} (line {occ.line}) is assembled from several pieces; remove it by hand", path)
    start, end = flag_span[0], max([flag_span[1]] + [e[1] for e in ends if e])
    if not re.fullmatch(r"[^\n\"']*", text[start:end].replace("\\\n", " ")):
        raise refusal(f"{occ.name} (line {occ.line}) is not written as one piece; remove it by hand", path)
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    rest = text[line_start:start] + text[end:line_end]
    inside_value = bool(occ.token and occ.token[0].via)  # in a quoted ARGS="…" string: newlines are blanks
    if re.fullmatch(r"\s*\\?\s*", rest) and (rest.rstrip().endswith("\\") or inside_value):
        return (line_start, min(len(text), line_end + 1)), ""
    while start > line_start and text[start - 1] in " \t":
        start -= 1
    return (start, end), ""


def _insert(text: str, path: str, fl: FlagSet, editor: Editor, new: str) -> None:
    """Add ``new`` after a related flag (the longest shared name prefix), else after a parallelism flag."""
    flag = new.split()[0]
    def shared(name: str) -> int:
        return next((i for i, (a, b) in enumerate(zip(name, flag, strict=False)) if a != b), min(len(name), len(flag)))

    related = sorted((f for f in fl.flags if shared(f) > 6), key=lambda f: -shared(f))
    for name in (*related, *ANCHORS, *fl.flags):
        occ = fl.last(name)
        if occ is None or literal_span(occ.token) is None:
            continue
        depth = len(occ.token[0].via)
        ends = [local_span(v, depth) for v in occ.values]
        if any(e is None for e in ends):
            continue
        end = max([literal_span(occ.token)[1]] + [e[1] for e in ends if e])  # type: ignore[index]
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        line_start = text.rfind("\n", 0, end) + 1
        if re.fullmatch(r"\s*\\\s*", text[end:line_end]):
            indent = re.match(r"\s*", text[line_start:]).group()  # type: ignore[union-attr]
            editor.replace((line_end + 1, line_end + 1), f"{indent}{new} \\\n")
        else:
            editor.replace((end, end), f" {new}")
        return
    raise refusal(f"no place to add {new.split()[0]}: the launch command has no literal flags", path)


def _set_nodes(text: str, path: str, world: int, old_world: int) -> str:
    script = Script.parse(text, path)
    fl = launch_flags(script)
    per_node = first_int(script, PER_NODE_VARS)
    found = fl.launcher_value(("--nproc_per_node", "--nproc-per-node"))
    if per_node is None and found and found[0].isdigit():
        per_node = int(found[0])
    if not per_node or world % per_node:
        raise refusal(f"{world} devices are not whole nodes of {per_node or '?'}: keep the device count "
                      f"{old_world} (change dp only with tp, pp or cp)", path)
    editor = Editor(text, path)
    for name in NODE_VARS:
        record = script.assignments.get(name)
        if record and literal_span(record.value):
            editor.replace(literal_span(record.value), str(world // per_node))  # type: ignore[arg-type]
            return editor.apply()
    occ = fl.launcher.get("--nnodes")
    if occ and occ.values and literal_span(occ.values[0]):
        editor.replace(literal_span(occ.values[0]), str(world // per_node))  # type: ignore[arg-type]
        return editor.apply()
    raise refusal(f"the node count is not a literal in the script; cannot change the devices to {world}", path)


def _settle(text: str, path: str, strategy: Strategy) -> str:
    """Flags computed in the script (``GBS=$((MBS*GRAD_ACC_STEP*DP))``): solve for a literal input variable."""
    targets = {"--global-batch-size": strategy.global_batch_size, "--tensor-model-parallel-size": strategy.tp,
               "--pipeline-model-parallel-size": strategy.pp, "--micro-batch-size": strategy.micro_batch_size,
               "--seq-length": strategy.seq_length}
    for flag, goal in targets.items():
        script = Script.parse(text, path, _pins(text, path, strategy))
        fl = launch_flags(script)
        occ = fl.last(flag)
        if occ is None or not occ.values or text_of(occ.values[0]).strip() == str(goal):
            continue
        arith = next((s.arith for s in occ.values[0] if s.arith), None)
        record = script.assignments.get(arith or "")
        if record is None:
            raise refusal(f"{flag} (line {occ.line}) is computed in a way the estimator cannot rewrite", path)
        text = _solve(text, path, strategy, flag, goal, record)
    return text


def _pins(text: str, path: str, strategy: Strategy) -> dict[str, str]:
    """Pin WORLD_SIZE to the strategy's device count when the script leaves N to the launch environment."""
    script = Script.parse(text, path)
    stated = not isinstance(device_count(script, launch_flags(script)), str)
    return {} if stated else {"WORLD_SIZE": str(strategy.world_size)}


def _solve(text: str, path: str, strategy: Strategy, flag: str, goal: int, record: Assignment) -> str:
    pins = _pins(text, path, strategy)
    base = Script.parse(text, path, pins)

    def flags_with(name: str, value: int) -> dict[str, str]:
        fl = launch_flags(Script.parse(text, path, {**pins, name: str(value)}))
        return {f: fl.raw(f) for f in (*ANCHORS, "--num-layers-per-virtual-pipeline-stage") if fl.has(f)}

    for name in record.arith_deps:
        dep = base.assignments.get(name)
        span = literal_span(dep.value) if dep else None
        if not span or not text_of(dep.value).strip().isdigit():  # type: ignore[union-attr]
            continue
        now = int(text_of(dep.value))  # type: ignore[union-attr]
        f1, f2 = flags_with(name, 1), flags_with(name, 2)
        try:
            y1, y2 = int(f1[flag]), int(f2[flag])
        except (KeyError, ValueError):
            continue
        if y2 == y1 or (goal - y1) % (y2 - y1):
            continue
        x = 1 + (goal - y1) // (y2 - y1)
        if x < 1:
            continue
        trial, before = flags_with(name, x), flags_with(name, now)
        if trial.get(flag) == str(goal) and all(trial[k] == before[k] for k in before if k != flag):
            editor = Editor(text, path)
            editor.replace(span, str(x))
            return editor.apply()
    value = record.word.span
    editor = Editor(text, path)
    editor.replace((value[0] + len(record.name) + 1, value[1]), str(goal))
    return editor.apply()


def _same(value: Any) -> Any:
    """Equal plans compare equal: with per-stage counts a default mode "full" adds nothing; a uniform group of
    1 is no group."""
    if isinstance(value, RecomputePlan):
        mode = "none" if value.full_counts is not None and value.default_mode == "full" else value.default_mode
        return value.replace(default_mode=mode, uniform_group=value.uniform_group if value.uniform_group > 1 else 0)
    return value


def _verify(text: str, source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> None:
    """Re-read the new text: what it states must be the requested strategy."""
    reading = read_script(text, source.path, strategy.world_size)
    def elsewhere(key: str) -> bool:  # a strategy value another file states (edits must come from this text)
        prov = parsed.provenance.get(key)
        return prov is not None and prov.source == "file" and prov.path not in (None, source.path)

    values = {k: v for k, v in parsed.values.items() if not k.startswith("strategy.") or elsewhere(k)}
    values.update({k: coerce(REGISTRY[k], v, source.path) for k, v in reading.values.items() if k in REGISTRY})
    values["strategy.softmax_bytes"] = strategy.softmax_bytes  # derived from t and b: not stated by the flags
    values["strategy.rescale_user_layout"] = strategy.rescale_user_layout
    again = build_plan(values, sources=parsed.sources).strategy
    bad = [f for f in strategy.field_names() if _same(getattr(again, f)) != _same(getattr(strategy, f))]
    if bad:
        shown = ", ".join(f"{f} {getattr(strategy, f)!r} (script gives {getattr(again, f)!r})" for f in bad[:4])
        raise refusal(f"the launch script cannot state this strategy: {shown}", source.path)
