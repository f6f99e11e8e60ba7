"""Writing a strategy back into a MindFormers YAML (spec §11.6): only the strategy keys change.

The text is patched in place instead of being re-dumped: PyYAML's node marks (YAML 1.1, as MindFormers reads
the file) locate the value of every key, and only those character spans are replaced; missing keys are
inserted as new lines under their section. Comments, key order, blank lines, quoting, ``True``/``False``
spelling, flow-list spacing and anchors all stay as written. (A ruamel round trip re-dumps the whole file: on
the real MindFormers configs it rewrote 7–29 untouched lines — dropped anchors on booleans, collapsed
multi-line flow lists, changed flow spacing — so it is not used.)

What changes is decided semantically: the file's own strategy (re-read from its text) and the new strategy
are both mapped onto MindFormers settings, and only the settings that differ are written. A strategy field
MindFormers cannot express raises ``ConfigError`` with code R-FW.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import ConfigError
from ..fields import REGISTRY, coerce
from ..frameworks import framework_defaults
from ..layout import LayoutInputs, build_layout
from ..model import ModelSpec
from ..parsed import ParsedConfig, SourceFile, build_plan
from ..strategy import RecomputePlan, Strategy
from .common import load_yaml
from .mindformers import DATASET_SEQ, MC, PC, PIPE, POC, RC, RUN, dtype_bytes, read, resolve_base

_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL_WORDS = {"true", "false", "yes", "no", "on", "off", "y", "n"}
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_PROPS = re.compile(r"^((?:[&!][^\s\[\]{},]*[ \t]+)*)")


# ------------------------------------------------------------------------------------- text patcher
@dataclass
class YamlPatch:
    """Replaces values and inserts keys in YAML text, leaving every other character alone."""

    text: str
    path: str
    root: yaml.MappingNode = field(init=False)
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    pending: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)  # (position, indent) → keys
    done: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            root = yaml.compose(self.text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise ConfigError(f"malformed YAML: {exc.problem or exc.context}", path=self.path,
                              line=mark.line + 1 if mark else None, column=mark.column + 1 if mark else None) \
                from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"malformed YAML: {exc}", path=self.path) from None
        if not isinstance(root, yaml.MappingNode):
            raise ConfigError("a MindFormers config must be a mapping of sections", path=self.path)
        self.root = root
        self.newline = "\r\n" if "\r\n" in self.text else "\n"
        words = re.findall(r":[ \t]+(True|False|true|false|TRUE|FALSE)\b", self.text)
        capitalised = sum(1 for w in words if w[0].isupper() and not w.isupper())
        self.bool_case = "title" if capitalised * 2 >= len(words) and words else "lower"

    # -- lookup ---------------------------------------------------------------------------------------
    def find(self, keys: tuple[str, ...]) -> tuple[yaml.Node | None, yaml.Node] | None:
        """(key node, value node) of ``keys`` (the last duplicate wins, as in PyYAML); the root for ()."""
        key_node: yaml.Node | None = None
        node: yaml.Node = self.root
        for key in keys:
            if not isinstance(node, yaml.MappingNode):
                return None
            hit = next(((k, v) for k, v in reversed(node.value)
                        if isinstance(k, yaml.ScalarNode) and k.value == key), None)
            if hit is None:
                return None
            key_node, node = hit
        return key_node, node

    def has(self, keys: tuple[str, ...]) -> bool:
        return self.find(keys) is not None

    # -- edits ----------------------------------------------------------------------------------------
    def set(self, keys: tuple[str, ...], value: Any) -> None:
        """Give ``keys`` the value ``value`` (a scalar or list), inserting the key (and sections) if absent.
        A mapping of op patterns gets ``value`` for every pattern."""
        found = self.find(keys)
        if found is not None and found[0] is not None:
            self._replace(found[0], found[1], value)
            return
        cut = len(keys) - 1
        while cut > 0 and self.find(keys[:cut]) is None:
            cut -= 1
        key_node, parent = self.find(keys[:cut])  # type: ignore[misc]
        where = ".".join(keys[:cut]) or "the top level"
        if isinstance(parent, yaml.MappingNode) and parent.value and not parent.flow_style:
            indent = parent.value[0][0].start_mark.column
            pos = self._line_end(self._content_end(parent.value[-1][1]))
        elif isinstance(parent, yaml.ScalarNode) and parent.tag == _NULL_TAG and key_node is not None and \
                parent.start_mark.index == parent.end_mark.index:
            indent = key_node.start_mark.column + 2
            pos = self._line_end(parent.end_mark.index)
        elif isinstance(parent, yaml.MappingNode) and parent.flow_style:
            raise ConfigError(f"[R-FW] cannot add {'.'.join(keys[cut:])} inside the flow mapping {where} "
                              f"(line {parent.start_mark.line + 1}); write that mapping in block style first",
                              path=self.path, key=".".join(keys))
        else:
            raise ConfigError(f"[R-FW] cannot add {'.'.join(keys)}: {where} is not a mapping", path=self.path,
                              key=".".join(keys))
        tree = self.pending.setdefault((pos, indent), {})
        for key in keys[cut:-1]:
            tree = tree.setdefault(key, {})
        tree[keys[-1]] = value

    def _value_start(self, key_node: yaml.Node) -> tuple[int, int]:
        """(index of the ':' after the key, index where its value's text starts on that line)."""
        text = self.text
        colon = key_node.end_mark.index
        while colon < len(text) and text[colon] in " \t":
            colon += 1
        if colon >= len(text) or text[colon] != ":":
            raise ConfigError(f"cannot locate the value of {key_node.value!r} (line {key_node.start_mark.line + 1})",
                              path=self.path)
        start = colon + 1
        while start < len(text) and text[start] in " \t":
            start += 1
        return colon, start

    def is_alias(self, keys: tuple[str, ...]) -> bool:
        """Whether the value of ``keys`` is written as an alias (``key: *name``) at that place."""
        found = self.find(keys)
        if found is None or found[0] is None:
            return False
        start = self._value_start(found[0])[1]
        return self.text[start:start + 1] == "*"

    def _replace(self, key_node: yaml.Node, node: yaml.Node, value: Any) -> None:
        text = self.text
        colon, start = self._value_start(key_node)
        if start < len(text) and text[start] == "*":  # an alias here: the shared anchor stays untouched
            if self.done.get(id(node), object()) == value:
                return
            end = start
            while end < len(text) and text[end] not in " \t\r\n,]}#":
                end += 1
            like = ""
            if isinstance(node, yaml.ScalarNode):  # spell it like the anchored value
                span = text[node.start_mark.index:node.end_mark.index]
                like = span[len(_PROPS.match(span).group(1)):]  # type: ignore[union-attr]
            self.edits.append((start, end, self.render(value, like, getattr(node, "style", None))))
            return
        self.done[id(node)] = value
        if isinstance(node, yaml.MappingNode) and not isinstance(value, dict):
            for sub_key, sub_node in node.value:
                self._replace(sub_key, sub_node, value)
            return
        lo, hi = node.start_mark.index, node.end_mark.index
        if isinstance(node, yaml.ScalarNode) and lo == hi:  # `key:` with no value
            self.edits.append((colon + 1, colon + 1, " " + self.render(value)))
            return
        if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
            span = text[lo:hi]
            props = _PROPS.match(span).group(1)  # type: ignore[union-attr]
            like = span[len(props):]
            self.edits.append((lo, hi, props + self.render(value, like, getattr(node, "style", None))))
            return
        props = _PROPS.match(text[start:]).group(1).strip()  # type: ignore[union-attr]
        self.edits.append((colon + 1, self._content_end(node), " " + (props + " " if props else "") +
                           self.render(value)))

    # -- rendering ------------------------------------------------------------------------------------
    def render(self, value: Any, like: str = "", style: str | None = None) -> str:
        if isinstance(value, bool):
            low = like.lower()
            if low in ("yes", "no", "y", "n"):
                word = "yes" if value else "no"
            elif low in ("on", "off"):
                word = "on" if value else "off"
            else:
                word = "true" if value else "false"
            if like and like.isupper():
                return word.upper()
            if (like and like[0].isupper()) or (not like and self.bool_case == "title"):
                return word.capitalize()
            return word
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, str):
            if style == "'":
                return "'" + value.replace("'", "''") + "'"
            if style == '"' or (style is None and like[:1] == '"'):
                return json.dumps(value)
            if style is None and like and _PLAIN.match(value) and value.lower() not in _BOOL_WORDS | {"null"}:
                return value
            return json.dumps(value)
        if isinstance(value, list | tuple):
            pad = like.startswith("[ ")
            sep = "," if ("," in like and ", " not in like) else ", "
            inner = sep.join(self.render(v, like if isinstance(v, list | tuple) else "") for v in value)
            return f"[ {inner} ]" if pad else f"[{inner}]"
        raise ConfigError(f"cannot write the value {value!r}", path=self.path)

    def _render_tree(self, tree: dict[str, Any], indent: int) -> list[str]:
        lines = []
        for key, sub in tree.items():
            name = key if _PLAIN.match(key) else "'" + key.replace("'", "''") + "'"
            if isinstance(sub, dict):
                lines.append(" " * indent + f"{name}:")
                lines.extend(self._render_tree(sub, indent + 2))
            else:
                lines.append(" " * indent + f"{name}: {self.render(sub)}")
        return lines

    # -- positions ------------------------------------------------------------------------------------
    def _content_end(self, node: yaml.Node) -> int:
        """Index just after the last character of ``node``'s own text (block collections end at their last
        child, not at the next key)."""
        if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
            return self._content_end(node.value[-1][1])
        if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
            return self._content_end(node.value[-1])
        return node.end_mark.index

    def _line_end(self, index: int) -> int:
        newline = self.text.find("\n", index)
        return len(self.text) if newline < 0 else newline + 1

    def result(self) -> str:
        ops = list(self.edits)
        blocks: dict[int, list[tuple[int, str]]] = {}
        for (pos, indent), tree in self.pending.items():
            lines = self._render_tree(tree, indent)
            blocks.setdefault(pos, []).append((indent, self.newline.join(lines) + self.newline))
        for pos, parts in blocks.items():
            # at one position the deeper mapping continues first, then its parents' new keys
            block = "".join(text for _, text in sorted(parts, key=lambda part: -part[0]))
            if pos == len(self.text) and self.text and not self.text.endswith("\n"):
                block = self.newline + block
            ops.append((pos, pos, block))
        ops.sort(key=lambda op: (op[0], op[1]), reverse=True)
        out = self.text
        limit = len(out) + 1
        for lo, hi, new in ops:
            if hi > limit:
                raise ConfigError("internal error: overlapping edits", path=self.path)
            out = out[:lo] + new + out[hi:]
            limit = lo
        return out


# ---------------------------------------------------------------------------------- strategy → keys
_SCHEDULER = {"1f1b": "1f1b", "interleaved": "1f1b", "seq1f1b": "seqpipe", "seqsmartvpp": "seqsmartvpp",
              "gpipe": "gpipe", "zbv": "zero_bubble_v"}
_CP_ALGO = {"ring": "colossalai_cp", "ulysses": "ulysses_cp", "hybrid": "hybrid_cp"}
_PATHS = {
    "dp": (*PC, "data_parallel"), "tp": (*PC, "model_parallel"), "pp": (*PC, "pipeline_stage"),
    "cp": (*PC, "context_parallel"), "cp_algo": (*PC, "context_parallel_algo"),
    "ulysses": (*PC, "ulysses_degree_in_cp"), "ep": (*PC, "expert_parallel"), "sp": (*PC, "use_seq_parallel"),
    "vocab_emb_dp": (*PC, "vocab_emb_dp"), "mbn": (*PC, "micro_batch_num"), "seq_split": (*PC, "seq_split_num"),
    "batch": (*RUN, "batch_size"), "gas": (*RUN, "gradient_accumulation_steps"),
    "vpp": (*MC, "pp_interleave_num"), "interleave": (*PIPE, "pipeline_interleave"),
    "scheduler": (*PIPE, "pipeline_scheduler"), "offset": (*MC, "offset"), "rec_full": (*RC, "recompute"),
    "rec_sel": (*RC, "select_recompute"), "rec_comm": (*RC, "select_comm_recompute"),
    "rec_slice": (*RC, "recompute_slice_activation"), "op": ("parallel", "enable_parallel_optimizer"),
    "os": (*POC, "optimizer_weight_shard_size"), "grad_shard": (*POC, "gradient_accumulation_shard"),
    "op_comm_rec": (*RC, "parallel_optimizer_comm_recompute"), "fa": (*MC, "use_flash_attention"),
}
# MindFormers' own defaults: a setting that is absent from the file and keeps its default is not written.
_MF_DEFAULTS = {"cp": 1, "ep": 1, "cp_algo": "colossalai_cp", "sp": False, "vocab_emb_dp": False, "mbn": 1,
                "seq_split": 1, "gas": 1, "vpp": 1, "interleave": False, "scheduler": "1f1b", "rec_full": False,
                "rec_sel": False, "rec_comm": False, "rec_slice": False, "op": False, "os": -1,
                "grad_shard": False, "op_comm_rec": False, "offset": 0}
# Strategy fields MindFormers has no setting for: a new value different from the file's is refused (R-FW).
_FIXED = ("d_rep", "d_sh", "vpp_group", "overlap_moe_ep_comm", "vision_partition", "noop_layers",
          "emb_out_in_offset", "grad_bytes", "master_bytes", "optimizer_state_bytes", "n_optimizer_states",
          "dropout_mask_bytes", "loss_bytes", "reduce_bytes", "vocab_parallel_loss", "swap_optimizer", "swap_times",
          "reuse_fp32_param", "frozen_modules", "recompute.ranges", "recompute.uniform_group",
          "recompute.switches", "recompute.rule", "sharding.os_e", "sharding.span_cp",
          "sharding.fp32_grad_partition")


def _get(st: Strategy, dotted: str) -> Any:
    obj: Any = st
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _plain(value: Any) -> Any:
    """Tuples to lists, for comparison and rendering."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass
class _Target:
    """What the writer needs to know about the file besides its text."""

    data: dict[str, Any]  # merged with base_config
    model: ModelSpec
    mbin: int
    mcore: bool
    moe_path: tuple[str, ...] | None
    path: str

    def first_key(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The model_config key of ``names`` this file uses (the dialect's name when none is present)."""
        block = self.data.get("model", {}).get("model_config", {}) if isinstance(self.data.get("model"), dict) \
            else {}
        for name in names:
            if isinstance(block, dict) and name in block:
                return (*MC, name)
        return (*MC, names[1] if self.mcore and len(names) > 1 else names[0])


class _Settings:
    """MindFormers settings (symbolic key → value) of a strategy, and what cannot be expressed."""

    def __init__(self, target: _Target) -> None:
        self.t = target

    def offsets(self, st: Strategy) -> Any:
        p, vp = st.pp, st.vpp
        if p * vp <= 1:
            return None
        model = self.t.model
        l_eff = model.num_layers + model.mtp_layers
        base, rem = divmod(l_eff, p * vp)
        plain = st.offset is not None and st.partition is None and not (
            st.offset_rule == "split" and vp > 1 and isinstance(st.offset, tuple | list) and
            not any(isinstance(x, tuple | list) for x in st.offset))
        if plain:
            return _plain(st.offset)
        if st.offset is None and st.partition is None and rem == 0:
            return 0  # the even split: MindFormers' default offset 0
        layout = build_layout(LayoutInputs(
            body_kinds=model.body_kinds(), mtp_kinds=model.mtp_kinds(), p=p, vp=vp, schedule=st.schedule_name,
            offset=st.offset, partition=st.partition, offset_rule=st.offset_rule, mtp_in_offset=True,
            recompute=RecomputePlan()))
        grid = [[layout.chunk_counts()[i][j] - base for i in range(p)] for j in range(vp)]
        return grid[0] if vp == 1 else grid

    def etp(self, st: Strategy) -> int:
        default = framework_defaults("mindformers").default_etp(st.tp, st.ep, st.dp, st.cp)
        return st.etp if st.etp is not None else default

    def of(self, st: Strategy, problems: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"dp": st.dp, "tp": st.tp, "pp": st.pp, "cp": st.cp, "ep": st.ep,
                               "cp_algo": _CP_ALGO[st.cp_algo], "sp": st.sequence_parallel,
                               "vocab_emb_dp": st.vocab_emb_dp, "seq": st.seq_length, "vpp": st.vpp}
        if st.cp_algo == "hybrid" and st.ulysses_degree:
            out["ulysses"] = st.ulysses_degree
        elif st.ulysses_degree not in (None, st.cp if st.cp_algo == "ulysses" else 1):
            problems.append(f"strategy.ulysses_degree {st.ulysses_degree} with cp_algo {st.cp_algo} (MindFormers "
                            "sets a Ulysses degree only with hybrid_cp)")
        batch, rest = divmod(st.micro_batch_size, self.t.mbin)
        if rest:
            problems.append(f"strategy.micro_batch_size {st.micro_batch_size} is not a multiple of "
                            f"micro_batch_interleave_num {self.t.mbin}")
        out["batch"] = max(1, batch)
        if st.pp > 1:
            out["mbn"], out["gas"] = st.micro_batches, st.n_acc
        else:
            out["gas"] = st.micro_batches * st.n_acc
        schedule = st.schedule_name
        if schedule not in _SCHEDULER:
            problems.append(f"strategy.schedule {schedule} (MindFormers schedulers: 1f1b, interleaved 1f1b, "
                            "seqpipe, seqsmartvpp, gpipe, zero_bubble_v)")
        out["interleave"] = st.vpp > 1 or schedule not in ("1f1b", "interleaved")
        out["scheduler"] = _SCHEDULER.get(schedule, "1f1b")
        if schedule in ("seq1f1b", "seqsmartvpp"):
            out["seq_split"] = st.n_s
        if self.t.model.mtp_layers and not st.mtp_in_offset:
            problems.append("strategy.mtp_in_offset false (MindFormers always counts MTP layers in the offsets)")
        else:
            offset = self.offsets(st)
            if offset is not None:
                out["offset"] = offset
        rec = st.recompute

        def counts(value: Any) -> Any:
            """An int N (N layers from every slot start) as MindFormers lists: per stage, or per chunk."""
            if isinstance(value, int) and not isinstance(value, bool):
                return [value] * st.pp if st.vpp == 1 else [[value] * st.pp for _ in range(st.vpp)]
            return _plain(value)

        full = rec.full_counts if rec.full_counts is not None else rec.default_mode == "full"
        sel = rec.sel_counts if rec.sel_counts is not None else rec.default_mode == "selective"
        out["rec_full"] = counts(full)
        out["rec_sel"] = counts(sel)
        out["rec_comm"] = counts(rec.comm_counts if rec.comm_counts is not None else False)
        out["rec_slice"] = st.recompute_slice_activation
        mode = st.sharding.mode
        if mode not in ("none", "mf_op"):
            problems.append(f"strategy.sharding {mode} (MindFormers shards with its parallel optimizer: mf_op, "
                            "or none)")
        out["op"] = mode == "mf_op"
        if mode == "mf_op":
            out["os"] = st.sharding.os if st.sharding.os is not None else -1
            out["grad_shard"] = st.sharding.grad_shard
            keep = st.sharding.keep_gathered_weights
            out["op_comm_rec"] = not (True if keep is None else keep)
        for key, width in (("param_dtype", st.param_bytes), ("compute_dtype", st.compute_bytes),
                           ("softmax_dtype", st.softmax_bytes)):
            if width is not None:
                out[key] = width
        out["norm_dtype"] = 4.0 if st.norm_bytes == 4 else None
        out["residual"] = 4.0 if st.residual_bytes == 4 else None
        compute = st.compute_bytes if st.compute_bytes is not None else 2
        if st.norm_bytes not in (None, 4) and st.norm_bytes != compute:
            problems.append(f"strategy.norm_bytes {st.norm_bytes:g} (MindFormers: float32 or the compute dtype)")
        if st.residual_bytes not in (None, 4) and st.residual_bytes != compute:
            problems.append(f"strategy.residual_bytes {st.residual_bytes:g} (MindFormers: float32 or the compute "
                            "dtype)")
        if st.flash_attention is not None:
            out["fa"] = st.flash_attention
        if self.t.model.is_moe:
            out["gmm"] = st.grouped_gemm
            out["etp"] = self.etp(st)
        return out


def _dtype_name(width: float, target: _Target, key: str) -> str:
    """A dtype name of ``width`` bytes; 2 bytes keeps the file's float16 when it uses it."""
    if width == 4:
        return "float32"
    if width == 2:
        compute = target.data.get("model", {}).get("model_config", {}).get("compute_dtype") \
            if isinstance(target.data.get("model"), dict) else None
        try:
            is_fp16 = isinstance(compute, str) and dtype_bytes(compute, key, target.path)[0] == 2 and \
                "16" in compute and "bf" not in compute.lower()
        except ConfigError:
            is_fp16 = False
        return "float16" if is_fp16 else "bfloat16"
    raise ConfigError(f"[R-FW] MindFormers cannot express {key} of {width:g} bytes (float32, bfloat16, float16)",
                      path=target.path, key=key)


def _file_strategy(source: SourceFile, parsed: ParsedConfig) -> tuple[Strategy, dict[str, Any]]:
    """The strategy the file itself states (edits applied since parsing are not in it) and its merged data."""
    data = load_yaml(source.text, source.path)
    reading = read(source.text, source.path, data, None)
    values = {k: v for k, v in parsed.values.items() if not k.startswith("strategy.")}
    for key, value in reading.values.items():
        if key.startswith("strategy."):
            values[key] = coerce(REGISTRY[key], value, source.path)
    merged, _ = resolve_base(data, source.path)
    return build_plan(values, where=source.path).strategy, merged


def write_strategy(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """``source.text`` with the MindFormers settings of ``strategy`` that differ from the file's own written
    in place. Raises ConfigError [R-FW] for what MindFormers cannot express."""
    old_st, merged = _file_strategy(source, parsed)
    model_config = merged.get("model", {}).get("model_config", {}) if isinstance(merged.get("model"), dict) else {}
    model_config = model_config if isinstance(model_config, dict) else {}
    moe_path = None
    for keys in (("moe_config",), (*MC, "moe_config")):
        block: Any = merged
        for key in keys:
            block = block.get(key) if isinstance(block, dict) else None
        if isinstance(block, dict):
            moe_path = keys
            break
    mcore = merged.get("use_legacy") is False or "num_hidden_layers" in model_config or \
        "params_dtype" in model_config
    mbin = merged.get("micro_batch_interleave_num")
    target = _Target(merged, parsed.model, mbin if isinstance(mbin, int) and mbin > 1 else 1, mcore, moe_path,
                     source.path)
    problems: list[str] = []
    for dotted in _FIXED:
        new, old = _get(strategy, dotted), _get(old_st, dotted)
        if new != old and not (dotted == "recompute.rule" and new in (None, "mindformers") and
                               old in (None, "mindformers")):
            problems.append(f"strategy.{dotted.split('.')[-1]} {new!r} (the file gives {old!r})")
    settings = _Settings(target)
    old = settings.of(old_st, [])
    new = settings.of(strategy, problems)
    changed = {k: v for k, v in new.items() if (old[k] != v if k in old else
                                                  not (_MF_DEFAULTS.get(k, object()) == v and
                                                       not _in(merged, _PATHS[k])))}
    if "etp" in changed:
        default = framework_defaults("mindformers").default_etp(strategy.tp, strategy.ep, strategy.dp, strategy.cp)
        if moe_path is None:
            problems.append(f"strategy.etp {changed['etp']} (mcore MindFormers has no expert_model_parallel key)")
        elif changed["etp"] == default:
            changed["etp"] = 1  # expert_model_parallel 1 means "MindFormers' default"
        elif changed["etp"] == 1:
            problems.append(f"strategy.etp 1 (with expert_model_parallel 1 MindFormers uses the default {default})")
    if problems:
        raise ConfigError("[R-FW] MindFormers cannot express " + "; ".join(problems), path=source.path)
    patch = YamlPatch(source.text, source.path)
    for key, value in changed.items():
        _write_setting(patch, target, key, value, old_st)
    return patch.result()


def _write_setting(patch: YamlPatch, target: _Target, key: str, value: Any, old_st: Strategy) -> None:
    if key in _PATHS:
        patch.set(_PATHS[key], value)
        if key == "dp":
            _follow_dataset_strategy(patch, old_st.dp, value)
    elif key == "seq":
        present = [keys for keys in ((*MC, "seq_length"), DATASET_SEQ) if _in(target.data, keys)]
        for keys in present or [(*MC, "seq_length")]:
            patch.set(keys, value)
    elif key in ("param_dtype", "compute_dtype", "softmax_dtype"):
        names = {"param_dtype": ("param_init_type", "params_dtype"), "compute_dtype": ("compute_dtype",),
                 "softmax_dtype": ("softmax_compute_type", "softmax_compute_dtype")}[key]
        keys = target.first_key(names)
        patch.set(keys, _dtype_name(value, target, ".".join(keys)))
    elif key == "norm_dtype":
        keys = target.first_key(("layernorm_compute_type", "layernorm_compute_dtype"))
        patch.set(keys, "float32" if value == 4 else _dtype_name(2, target, ".".join(keys)))
    elif key == "residual":
        if _in(target.data, (*MC, "res_dtype")) and not _in(target.data, (*MC, "fp32_residual_connection")):
            patch.set((*MC, "res_dtype"), "float32" if value == 4 else _dtype_name(2, target, "res_dtype"))
        else:
            patch.set((*MC, "fp32_residual_connection"), value == 4)
    elif key == "gmm":
        patch.set((*target.moe_path, "use_gmm") if target.moe_path else (*MC, "moe_grouped_gemm"), value)
    elif key == "etp":
        patch.set((*target.moe_path, "expert_model_parallel"), value)  # type: ignore[misc]


def _in(data: Any, keys: tuple[str, ...]) -> bool:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return False
        data = data[key]
    return True


def _follow_dataset_strategy(patch: YamlPatch, old_dp: int, new_dp: int) -> None:
    """``parallel.dataset_strategy`` rows start with the DP degree; literal ones are updated with it (rows
    written as ``[*dp, 1]`` follow the anchor by themselves)."""
    found = patch.find(("parallel", "dataset_strategy"))
    dp_node = patch.find((*PC, "data_parallel"))
    if found is None or not isinstance(found[1], yaml.SequenceNode):
        return
    dp_alias = patch.is_alias((*PC, "data_parallel"))
    for row in found[1].value:
        if not isinstance(row, yaml.SequenceNode) or not row.value:
            continue
        head = row.value[0]
        if dp_node is not None and head is dp_node[1]:
            # `[*dp, 1]` follows the anchor, unless data_parallel itself only aliased it and got a literal
            span = patch.text[row.start_mark.index:row.end_mark.index]
            alias = re.match(r"\[\s*(\*[^\s,\]]+)", span) if row.flow_style else None
            if dp_alias and alias:
                lo = row.start_mark.index + alias.start(1)
                patch.edits.append((lo, lo + len(alias.group(1)), str(new_dp)))
            continue
        if isinstance(head, yaml.ScalarNode) and head.value == str(old_dp):
            lo, hi = head.start_mark.index, head.end_mark.index
            if patch.text[lo:hi] == str(old_dp):
                patch.edits.append((lo, hi, str(new_dp)))


__all__ = ["YamlPatch", "write_strategy"]
