"""Writing a strategy back into a MindSpeed or Megatron-LM launch script (docs/model.md#frameworks): only the flags,
shell variables or computed inputs that define a changed field are touched (array elements included), and the new
text is read again to check that it states the requested strategy. What a launch script cannot express is refused
(R-FW). The flags only Megatron-LM has are chosen by ``megatron_write``."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Any

from ..fields import REGISTRY, coerce
from ..parsed import ParsedConfig, SourceFile, build_plan
from ..strategy import RecomputePlan, ShardingSpec, Strategy
from .feature_flags import feature_flag_edits
from .flag_source import FlagQueries
from .launch_command import Flag, FlagSet, launch_flags
from .megatron_write import megatron_flags
from .mindspeed_flags import (
    ANCHORS,
    CP_ALGO_FLAGS,
    FIXED_FIELDS,
    MEGATRON_SCRIPT,
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
    are touched; what the framework cannot express is refused with a ConfigError naming R-FW."""
    old = parsed.baseline_strategy
    if old == strategy:
        return source.text
    dialect = "megatron" if source.format == MEGATRON_SCRIPT else "mindspeed"
    _script, fl, world, _how, _notes = resolve_script(source.text, source.path, old.world_size)
    desired = desired_flags(source.path, fl, old, strategy, parsed, dialect)
    text = _apply_flags(source.text, source.path, fl, desired)
    if strategy.world_size != old.world_size:
        text = _set_nodes(text, source.path, strategy.world_size, world)
    text = _settle(text, source.path, strategy)
    _verify(text, source, parsed, strategy, dialect)
    return text


def desired_flags(path: str, fl: FlagQueries, old: Strategy, new: Strategy, parsed: ParsedConfig,
                  dialect: str) -> dict[str, Any]:
    """Flag -> new value (str), True (present) or None (absent) for every changed field."""
    want: dict[str, Any] = {}
    changed = {f for f in new.field_names() if getattr(old, f) != getattr(new, f)} - {"softmax_bytes",
                                                                                     "rescale_user_layout"}
    mm_pair = any(src.format == MODEL for src in parsed.sources)
    fixed = set(FIXED_FIELDS) - ({"mtp_in_offset", "emb_out_in_offset", "recompute_slice_activation"}
                                 if dialect == "megatron" else set())
    title = "Megatron-LM" if dialect == "megatron" else "MindSpeed"
    for name in sorted(changed & fixed):
        raise refusal(f"{title} launch scripts cannot express strategy.{name} = {getattr(new, name)!r}", path)
    model_json_owned = sorted(changed & set(MODEL_JSON_FIELDS)) + (
        sorted(changed & {"partition", "recompute"}) if mm_pair else [])
    for name in model_json_owned:
        raise refusal(f"strategy.{name} of a MindSpeed-MM run lives in its model.json (pipeline_num_layers, "
                      "recompute_*, freeze); export rewrites the launch script only — edit the model.json", path)
    if new.n_acc != 1:
        raise refusal(f"{title} runs all G/(b·d) micro-batches in one flush: strategy.n_acc must be 1", path)
    for name, flag in (("tp", "--tensor-model-parallel-size"), ("pp", "--pipeline-model-parallel-size"),
                       ("cp", "--context-parallel-size"), ("micro_batch_size", "--micro-batch-size"),
                       ("seq_length", "--seq-length"),
                       ("vpp_group", "--microbatch-group-size-per-virtual-pipeline-stage")):
        if name in changed:
            want[flag] = None if getattr(new, name) is None else str(getattr(new, name))
    if changed & {"dp", "micro_batch_size", "micro_batches", "n_acc"}:
        want["--global-batch-size"] = str(new.global_batch_size)
    for name, flag in (("sequence_parallel", "--sequence-parallel"), ("grouped_gemm", "--moe-grouped-gemm"),
                       ("overlap_moe_ep_comm", "--overlap-moe-expert-parallel-comm")):
        if name in changed:
            want[flag] = True if getattr(new, name) else None
    if "recompute" in changed:
        want.update(recompute_flags(path, new, dialect))
    if changed & {"param_bytes", "compute_bytes"}:
        widths = (new.param_bytes, new.compute_bytes)
        if widths in ((2, 2), (None, None), (2, None), (None, 2)):
            want["--bf16"] = True if not fl.has("--fp16") else None
        elif widths == (4, 4):
            want["--bf16"] = want["--fp16"] = None
        else:
            raise refusal(f"param/compute bytes {widths}: {title} trains in bf16/fp16 (2, 2) or fp32 (4, 4)", path)
    if "residual_bytes" in changed:
        want["--fp32-residual-connection"] = True if new.residual_bytes == 4 else None
    want.update(feature_flag_edits(path, fl, old, new, parsed.model.is_mla, parsed.options.framework))
    if dialect == "megatron":
        megatron_flags(path, fl, old, new, changed, parsed, want)
    else:
        _mindspeed_flags(path, fl, new, changed, parsed, want)
    return want


def _mindspeed_flags(path: str, fl: FlagQueries, new: Strategy, changed: set[str], parsed: ParsedConfig,
                     want: dict[str, Any]) -> None:
    """The flags only MindSpeed has, or spells its own way."""
    for name, flag in (("flash_attention", "--use-flash-attn"), ("swap_optimizer", "--swap-optimizer"),
                       ("reuse_fp32_param", "--reuse-fp32-param")):
        if name in changed:
            want[flag] = True if getattr(new, name) else None
    if "swap_times" in changed:
        want["--swap-optimizer-times"] = str(new.swap_times)
    if "ulysses_degree" in changed:
        want["--ulysses-degree-in-cp"] = None if new.ulysses_degree is None else str(new.ulysses_degree)
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
    if "sharding" in changed:
        sh = new.sharding
        if sh.mode not in ("none", "zero1") or sh.os is not None or sh.os_e is not None or not sh.span_cp:
            raise refusal(f"MindSpeed shards the optimizer over d·cp with --use-distributed-optimizer (zero1) or "
                          f"not at all; strategy.sharding {sh.mode} with shard sizes is not expressible", path)
        want["--use-distributed-optimizer"] = True if sh.mode == "zero1" else None
    for name, flag in (("grad_bytes", "--o2-gradient"), ("optimizer_state_bytes", "--o2-optimizer")):
        if name in changed:
            want[flag] = True if getattr(new, name) == 2 else None


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


def recompute_flags(path: str, new: Strategy, dialect: str = "mindspeed") -> dict[str, Any]:
    """Recompute flag -> value (str), True (present) or None (absent) stating ``new.recompute``; the model.json
    writer states the same plan with the same names. Megatron-LM states selective recompute with
    ``--recompute-modules`` only (MindSpeed also has its partial-recompute switches)."""
    plan = new.recompute
    want: dict[str, Any] = dict.fromkeys(RECOMPUTE_FLAGS)
    want["--distribute-saved-activations"] = True if new.recompute_slice_activation and dialect == "megatron" else None
    title = "Megatron-LM" if dialect == "megatron" else "MindSpeed"
    if plan.ranges or plan.comm_counts not in (None, False):
        raise refusal(f"{title} has no per-layer recompute ranges or communication recompute", path)
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
    if dialect == "megatron":
        if "act" in switches:
            raise refusal("Megatron-LM has no recompute of the dense MLP activation alone (its --recompute-modules "
                          "are core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts)", path)
        if plan.sel_counts not in (None, True, False, 0):
            raise refusal("Megatron-LM recomputes the selected modules in every layer; selective counts are not "
                          "expressible", path)
        if want["--recompute-granularity"] is not None:
            raise refusal("Megatron-LM cannot combine full recompute with selective modules", path)
        want["--recompute-granularity"] = "selective"
        want["--recompute-modules"] = " ".join(switches) if switches and switches != ("core_attn",) else None
    elif partial:
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
                _insert(text, path, fl, editor, name, "")
        elif present:
            for occ in present:
                span = _value_span(text, occ)
                if span is None:
                    continue  # computed in the script ($((…))): settled afterwards
                bare = text[span[0] - 1:span[0]] not in ("'", '"') and (not occ.token[0].via or _in_array(fl, span))
                editor.replace(span, _words(value) if bare else value)
        else:
            _insert(text, path, fl, editor, name, value)
    return editor.apply()


def _in_array(fl: FlagSet, span: tuple[int, int]) -> bool:
    """Whether script text at ``span`` stands inside an array literal ``( … )``."""
    return any(a <= span[0] < b for a, b in fl.script.array_spans)


def _words(value: str) -> str:
    """``value``'s blank-separated words for a command line, each quoted when the shell would read it otherwise
    (a layout string's ``|`` and ``(``)."""
    return " ".join(w if re.fullmatch(r"[\w./:,+=@%-]+", w) else shlex.quote(w) for w in value.split())


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
    if not text[line_start:start].strip():  # first on its line: keep the indentation, drop the blanks after it
        while end < line_end and text[end] in " \t":
            end += 1
        return (start, end), ""
    while start > line_start and text[start - 1] in " \t":
        start -= 1
    return (start, end), ""


def _insert(text: str, path: str, fl: FlagSet, editor: Editor, flag: str, value: str) -> None:
    """Add ``flag value`` after a related flag (the longest shared name prefix), else after a parallelism flag: on
    a line of its own where the flags stand one per line (continued command, array), else beside it."""
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
        indent = re.match(r"[ \t]*", text[line_start:]).group()  # type: ignore[union-attr]
        array = _in_array(fl, (end - 1, end))
        new = f"{flag} {_words(value) if array or not occ.token[0].via else value}".rstrip()
        if re.fullmatch(r"\s*\\\s*", text[end:line_end]):
            editor.replace((line_end + 1, line_end + 1), f"{indent}{new} \\\n")
        elif array and re.fullmatch(r"\s*(#.*)?", text[end:line_end]):
            editor.replace((line_end + 1, line_end + 1), f"{indent}{new}\n")
        else:
            editor.replace((end, end), f" {new}")
        return
    raise refusal(f"no place to add {flag}: the launch command has no literal flags", path)


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


def _same(value: Any, st: Strategy) -> Any:
    """Equal plans compare equal: with per-stage counts a default mode "full" adds nothing; a uniform group of
    1 is no group; an optimizer shard group of the whole dp·cp domain is the default one."""
    if isinstance(value, RecomputePlan):
        mode = "none" if value.full_counts is not None and value.default_mode == "full" else value.default_mode
        return value.replace(default_mode=mode, uniform_group=value.uniform_group if value.uniform_group > 1 else 0)
    if isinstance(value, ShardingSpec) and value.span_cp and value.os == st.dp * st.cp:
        return value.replace(os=None)
    return value


def _verify(text: str, source: SourceFile, parsed: ParsedConfig, strategy: Strategy, dialect: str) -> None:
    """Re-read the new text: what it states must be the requested strategy."""
    reading = read_script(text, source.path, strategy.world_size, dialect)
    def elsewhere(key: str) -> bool:  # a strategy value another file states (edits must come from this text)
        prov = parsed.provenance.get(key)
        return prov is not None and prov.source == "file" and prov.path not in (None, source.path)

    same_plan_as_read(reading.values, source, parsed, strategy, elsewhere)


def same_plan_as_read(read: dict[str, Any], source: SourceFile, parsed: ParsedConfig, strategy: Strategy,
                      keep: Callable[[str], bool] = lambda key: False) -> None:
    """Refuse (R-FW) unless the values ``read`` back from a rewritten file, over the plan's model, hardware and
    options (and the strategy values ``keep`` names: stated elsewhere), build the requested strategy."""
    values = {k: v for k, v in parsed.values.items() if not k.startswith("strategy.") or keep(k)}
    values.update({k: coerce(REGISTRY[k], v, source.path) for k, v in read.items() if k in REGISTRY})
    values["strategy.softmax_bytes"] = strategy.softmax_bytes  # derived from t and b: not stated by the flags
    values["strategy.rescale_user_layout"] = strategy.rescale_user_layout
    same_plan(build_plan(values, sources=parsed.sources).strategy, strategy, source.path)


def same_plan(again: Strategy, strategy: Strategy, path: str) -> None:
    """Refuse (R-FW) when the re-read strategy ``again`` is not the requested one."""
    bad = [f for f in strategy.field_names()
           if _same(getattr(again, f), again) != _same(getattr(strategy, f), strategy)]
    if bad:
        shown = ", ".join(f"{f} {getattr(strategy, f)!r} (the file gives {getattr(again, f)!r})" for f in bad[:4])
        raise refusal(f"the file cannot state this strategy: {shown}", path)
