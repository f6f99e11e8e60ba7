"""Writing a strategy back into a MindFormers YAML (docs/model.md#frameworks): only the strategy keys change.

The text is patched in place instead of being re-dumped (``yaml_patch``): only the character spans of changed
values are replaced and missing keys are inserted as new lines under their section, so everything else stays as
written.

What changes is decided semantically: the file's own strategy (re-read from its text) and the new strategy
are both mapped onto MindFormers settings, and only the settings that differ are written. A strategy field
MindFormers cannot express raises ``ConfigError`` with code R-FW.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from ..errors import ConfigError
from ..frameworks import framework_defaults
from ..layout import LayoutInputs, build_layout
from ..model import ModelSpec
from ..parsed import ParsedConfig, SourceFile
from ..strategy import FEATURE_FIELDS, ZERO_BUFFER_FIELDS, RecomputePlan, Strategy
from .common import dig, has_key, load_yaml
from .mindformers import read
from .mindformers_base import resolve_base
from .mindformers_features import counts_of_layers, ids_of_ranges, layer_slots, layers_of_counts
from .mindformers_schema import CP_ALGOS, DATASET_SEQ, MC, PC, PIPE, POC, RC, RUN, mindformers_dtype
from .support import original_strategy, plain_lists, refusal
from .yaml_patch import YamlPatch

# ---------------------------------------------------------------------------------- strategy → keys
_SCHEDULER = {"1f1b": "1f1b", "interleaved": "1f1b", "seq1f1b": "seqpipe", "seqsmartvpp": "seqsmartvpp",
              "gpipe": "gpipe", "zbv": "zero_bubble_v"}
_CP_ALGO = {algo: name for name, algo in CP_ALGOS.items()}  # cp_algo -> context_parallel_algo
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
    "lora_rank": (*MC, "pet_config", "lora_rank"), "lora_dropout": (*MC, "pet_config", "lora_dropout"),
    "swap": ("swap_config", "swap"),
}
_PET_WRITABLE = ("lora_rank", "lora_dropout")  # pet_config keys an export rewrites (the file's LoRA stays LoRA)
_SWAP_WRITABLE = ("offload_activations",)  # swap_config.swap with MindFormers' default policy (flash attention)
# MindFormers' own defaults: a setting that is absent from the file and keeps its default is not written.
_MF_DEFAULTS = {"cp": 1, "ep": 1, "cp_algo": "colossalai_cp", "sp": False, "vocab_emb_dp": False, "mbn": 1,
                "seq_split": 1, "gas": 1, "vpp": 1, "interleave": False, "scheduler": "1f1b", "rec_full": False,
                "rec_sel": False, "rec_comm": False, "rec_slice": False, "op": False, "os": -1,
                "grad_shard": False, "op_comm_rec": False, "offset": 0, "swap": False}
# Strategy fields MindFormers has no setting for: a new value different from the file's is refused (R-FW).
_FIXED = ("d_rep", "d_sh", "vpp_group", "overlap_moe_ep_comm", "vision_partition", "noop_layers",
          "emb_out_in_offset", "grad_bytes", "master_bytes", "optimizer_state_bytes", "n_optimizer_states",
          "dropout_mask_bytes", "loss_bytes", "reduce_bytes", "vocab_parallel_loss", "swap_optimizer", "swap_times",
          "reuse_fp32_param", "frozen_modules", "recompute.uniform_group",
          "recompute.switches", "recompute.rule", "sharding.os_e", "sharding.span_cp",
          "sharding.fp32_grad_partition", *(f for f in FEATURE_FIELDS if f not in (*_PET_WRITABLE, *_SWAP_WRITABLE)),
          *ZERO_BUFFER_FIELDS)


def _get(st: Strategy, dotted: str) -> Any:
    obj: Any = st
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass
class _Target:
    """What the writer needs to know about the file besides its text."""

    data: dict[str, Any]  # merged with base_config
    model: ModelSpec
    mbin: int
    mcore: bool
    moe_path: tuple[str, ...] | None
    path: str
    swap_groups: tuple[str, ...] = ()  # what the file's swap_config swaps (its lists are kept as written)

    @property
    def mtp_counted(self) -> bool:
        """Whether MindFormers counts MTP layers in the offsets: legacy models do; mcore models (use_legacy: False,
        r1.7.0+) place them with the last layer."""
        return self.data.get("use_legacy") is not False

    def first_key(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The model_config key of ``names`` this file uses (the dialect's name when none is present)."""
        block = dig(self.data, *MC)
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
        counted = self.t.mtp_counted
        l_eff = model.num_layers + (model.mtp_layers if counted else 0)
        base, rem = divmod(l_eff, p * vp)
        plain = st.offset is not None and st.partition is None and not (
            st.offset_rule == "split" and vp > 1 and isinstance(st.offset, tuple | list) and
            not any(isinstance(x, tuple | list) for x in st.offset))
        if plain:
            return plain_lists(st.offset)
        if st.offset is None and st.partition is None and rem == 0:
            return 0  # the even split: MindFormers' default offset 0
        layout = build_layout(LayoutInputs(
            body_kinds=model.body_kinds(), mtp_kinds=model.mtp_kinds(), p=p, vp=vp, schedule=st.schedule_name,
            offset=st.offset, partition=st.partition, offset_rule=st.offset_rule, mtp_in_offset=counted,
            recompute=RecomputePlan()))
        grid = [[layout.chunk_counts()[i][j] - base for i in range(p)] for j in range(vp)]
        return grid[0] if vp == 1 else grid

    def etp(self, st: Strategy) -> int:
        default = framework_defaults("mindformers").default_etp(st.tp, st.ep, st.dp, st.cp)
        return st.etp if st.etp is not None else default

    def of(self, st: Strategy, problems: list[str]) -> dict[str, Any]:
        if st.cp_algo not in _CP_ALGO:
            problems.append(f"strategy.cp_algo {st.cp_algo} (MindFormers offers {', '.join(CP_ALGOS)})")
        out: dict[str, Any] = {"dp": st.dp, "tp": st.tp, "pp": st.pp, "cp": st.cp, "ep": st.ep,
                               "cp_algo": _CP_ALGO.get(st.cp_algo), "sp": st.sequence_parallel,
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
        if self.t.model.mtp_layers and st.mtp_in_offset != self.t.mtp_counted:
            problems.append(f"strategy.mtp_in_offset {str(st.mtp_in_offset).lower()} (this MindFormers model "
                            f"{'counts' if self.t.mtp_counted else 'does not count'} MTP layers in the offsets)")
            offset = None
        else:
            offset = self.offsets(st)
            if offset is not None:
                out["offset"] = offset
        rec = st.recompute
        model = self.t.model
        swap_ids = bool(st.offload_activations)  # swap_config.swap as written below
        placed = model.num_layers + (model.mtp_layers if self.t.mtp_counted else 0)  # what LayerSetting splits
        slots = layer_slots(placed, st.pp, st.vpp, offset if st.pp * st.vpp > 1 and offset is not None else 0) \
            if swap_ids else []

        def counts(value: Any) -> Any:
            """An int N (N layers from every slot start) as MindFormers lists: per stage, or per chunk; with
            swap_config.swap on, the layer ids MindFormers then reads (the first N layers of each slot)."""
            if swap_ids and not isinstance(value, bool):
                return layers_of_counts(value, slots)
            if isinstance(value, int) and not isinstance(value, bool):
                return [value] * st.pp if st.vpp == 1 else [[value] * st.pp for _ in range(st.vpp)]
            return plain_lists(value)

        full = rec.full_counts if rec.full_counts is not None else rec.default_mode == "full"
        sel = rec.sel_counts if rec.sel_counts is not None else rec.default_mode == "selective"
        out["rec_full"] = self.full_ranges(st, problems) if rec.ranges else counts(full)
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
        pet = dig(self.t.data, *MC, "pet_config")
        if isinstance(pet, dict) and str(pet.get("pet_type", "")).lower() == "lora":
            out["lora_rank"], out["lora_dropout"] = st.lora_rank, st.lora_dropout
        elif (st.lora_rank, st.lora_dropout) != (0, 0.0):
            problems.append("LoRA settings without a pet_config of pet_type lora in the file")
        self.swap(st, out, problems)
        return out

    def full_ranges(self, st: Strategy, problems: list[str]) -> Any:
        """Full-recompute ranges (layer ids read under swap): with swap_config.swap on, MindFormers' global layer
        ids (an mcore model's MTP layers follow the last layer's id, so their indices are not written); with swap
        off, the per-stage counts of those layers at the strategy's pipeline layout."""
        rec, model = st.recompute, self.t.model
        if any(r.option != "full" for r in rec.ranges) or rec.full_counts is not None or \
                rec.default_mode != "none":
            problems.append("strategy.recompute_ranges with other recompute settings (MindFormers' recompute "
                            "lists name full-recompute layers only)")
            return False
        ids = [i for i in ids_of_ranges(rec.ranges, "full") if self.t.mtp_counted or i < model.num_layers]
        if st.offload_activations:
            return ids
        placed = model.num_layers + (model.mtp_layers if self.t.mtp_counted else 0)
        offset = self.offsets(st) if st.pp * st.vpp > 1 else 0
        counts = counts_of_layers(ids, layer_slots(placed, st.pp, st.vpp, 0 if offset is None else offset))
        return plain_lists(counts)

    def swap(self, st: Strategy, out: dict[str, Any], problems: list[str]) -> None:
        """``swap_config.swap`` turns MindFormers' default policy (every layer's flash-attention activations) on
        or off; the file's own layer_swap/op_swap lists are kept as written (edited by hand)."""
        groups = tuple(st.offload_activations)
        lists = any(has_key(self.t.data, "swap_config", k) for k in ("layer_swap", "op_swap"))
        if lists:
            if groups and groups != self.t.swap_groups:
                problems.append(f"strategy.offload_activations {', '.join(groups)} (the file's swap_config "
                                "layer_swap/op_swap lists are edited by hand; an export turns swap on or off)")
            out["swap"] = bool(groups)
        elif groups in ((), ("self_attention",)):
            out["swap"] = bool(groups)
        else:
            problems.append(f"strategy.offload_activations {', '.join(groups)} (MindFormers' swap_config without "
                            "op_swap/layer_swap lists swaps the attention; add the lists by hand)")


def _dtype_name(width: float, target: _Target, key: str) -> str:
    """A dtype name of ``width`` bytes; 2 bytes keeps the file's float16 when it uses it."""
    if width == 4:
        return "float32"
    if width == 2:
        model = target.data.get("model")
        config = model.get("model_config") if isinstance(model, dict) else None
        compute = config.get("compute_dtype") if isinstance(config, dict) else None
        try:
            is_fp16 = isinstance(compute, str) and mindformers_dtype(compute, key, target.path)[0] == 2 and \
                "16" in compute and "bf" not in compute.lower()
        except ConfigError:
            is_fp16 = False
        return "float16" if is_fp16 else "bfloat16"
    raise refusal(f"MindFormers cannot express {key} of {width:g} bytes (float32, bfloat16, float16)",
                  path=target.path, key=key)


def write_strategy(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """``source.text`` with the MindFormers settings of ``strategy`` that differ from the file's own written
    in place. Raises ConfigError [R-FW] for what MindFormers cannot express."""
    data = load_yaml(source.text, source.path)
    old_st = original_strategy(source, parsed, read, data)
    merged, _ = resolve_base(data, source.path)
    model_config = dig(merged, *MC)
    model_config = model_config if isinstance(model_config, dict) else {}
    moe_path = next((keys for keys in (("moe_config",), (*MC, "moe_config")) if isinstance(dig(merged, *keys), dict)),
                    None)
    mcore = merged.get("use_legacy") is False or "num_hidden_layers" in model_config or \
        "params_dtype" in model_config
    mbin = merged.get("micro_batch_interleave_num")
    target = _Target(merged, parsed.model, mbin if isinstance(mbin, int) and mbin > 1 else 1, mcore, moe_path,
                     source.path, tuple(old_st.offload_activations))
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
                                                       not has_key(merged, *_PATHS[k])))}
    if "etp" in changed and moe_path is None:
        default = framework_defaults("mindformers").default_etp(strategy.tp, strategy.ep, strategy.dp, strategy.cp)
        if changed["etp"] == default:
            del changed["etp"]  # the mcore default already gives it
        else:
            problems.append(f"strategy.etp {changed['etp']} (mcore MindFormers has no expert_model_parallel key)")
    if problems:
        raise refusal("MindFormers cannot express " + "; ".join(problems), path=source.path)
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
        present = [keys for keys in ((*MC, "seq_length"), DATASET_SEQ) if has_key(target.data, *keys)]
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
        if has_key(target.data, *MC, "res_dtype") and not has_key(target.data, *MC, "fp32_residual_connection"):
            patch.set((*MC, "res_dtype"), "float32" if value == 4 else _dtype_name(2, target, "res_dtype"))
        else:
            patch.set((*MC, "fp32_residual_connection"), value == 4)
    elif key == "gmm":
        patch.set((*target.moe_path, "use_gmm") if target.moe_path else (*MC, "moe_grouped_gemm"), value)
    elif key == "etp":
        patch.set((*target.moe_path, "expert_model_parallel"), value)  # type: ignore[misc]

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
