"""MindSpeed-MM ``model.json`` (docs/model.md#frameworks): reading its modules' shapes and layer lists, and writing a
changed layer split or recompute back into the JSON text in place.

Each object with a ``model_id`` is a module; the text decoder is the priced language model, a vision encoder
and its projector become ``model.vision``. The file owns the per-module layout (``pipeline_num_layers``,
``recompute_*``, ``freeze``), so those values win over a launch script's (``MODEL_FILE_LAYOUT_KEYS``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..layout import balanced_counts  # layers per slot without a list: the layout's own split (D27)
from ..messages import msg
from ..parsed import ParsedConfig, SourceFile
from ..strategy import Strategy
from .json_patch import json_edit, json_members
from .known_keys import catalogue, check_everywhere
from .mindspeed_flags import MODEL
from .mindspeed_script_write import recompute_flags
from .support import Collector, Reading, refusal
from .text_edits import Editor


def is_model_json(data: dict) -> bool:
    """A MindSpeed-MM model.json: objects with ``model_id`` (or a ``text_decoder`` object)."""
    if "model_id" in data or isinstance(data.get("text_decoder"), dict):
        return True
    return any(isinstance(v, dict) and "model_id" in v for v in data.values())


# model.json key -> ModelSpec field; the first key present wins (upstream aliases k_lora_rank, n_shared_exp)
_JSON_MODEL = (("num_layers", "num_layers"), ("hidden_size", "hidden_size"), ("ffn_hidden_size", "ffn_hidden_size"),
               ("num_attention_heads", "num_attention_heads"), ("qk_nope_head_dim", "head_dim"),
               ("kv_channels", "head_dim"), ("v_head_dim", "v_head_dim"), ("padded_vocab_size", "vocab_size"),
               ("vocab_size", "vocab_size"), ("make_vocab_size_divisible_by", "make_vocab_divisible_by"),
               ("num_moe_experts", "num_experts"), ("num_experts", "num_experts"),
               ("moe_router_topk", "experts_per_token"), ("moe_intermediate_size", "moe_ffn_hidden_size"),
               ("moe_ffn_hidden_size", "moe_ffn_hidden_size"), ("n_shared_experts", "num_shared_experts"),
               ("n_shared_exp", "num_shared_experts"),
               ("moe_shared_expert_intermediate_size", "shared_ffn_hidden_size"),
               ("first_k_dense_replace", "first_k_dense"), ("moe_layer_freq", "moe_layer_freq"),
               ("q_lora_rank", "q_lora_rank"), ("kv_lora_rank", "kv_lora_rank"), ("k_lora_rank", "kv_lora_rank"),
               ("qk_rope_head_dim", "qk_rope_head_dim"), ("mtp_num_layers", "mtp_layers"))
_TMP = (("tp", "tp"), ("pp", "pp"), ("dp", "dp"), ("cp", "cp"), ("ep", "ep"), ("etp", "etp"), ("vpp", "vpp"),
        ("mbs", "micro_batch_size"), ("seqlen", "seq_length"))


def _modules(data: dict, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict]]:
    """Every object carrying ``model_id``, with its key path (depth-limited)."""
    found = [(prefix, data)] if "model_id" in data else []
    if len(prefix) < 4:
        for key, value in data.items():
            if isinstance(value, dict):
                found.extend(_modules(value, (*prefix, str(key))))
    return found


def text_module(data: dict) -> tuple[tuple[str, ...], dict] | None:
    """The language model of a model.json: ``text_decoder``, else the top object when it has a shape."""
    mods = _modules(data)
    for path, mod in mods:
        if path and path[-1] == "text_decoder":
            return path, mod
    if "num_layers" in data and "hidden_size" in data:
        return (), data
    return next(((p, m) for p, m in mods if p and "num_layers" in m and "vision" not in "".join(p)), None)


def _jint(mod: dict, key: str, where: str, path: str, minimum: int = 0) -> int | None:
    value = mod.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(msg("mindspeed_model.must-integer-got", where=where, key=key, minimum=minimum, value=value),
                          path=path,
                          key=f"{where}{key}")
    return value


def _jlayers(value: Any, where: str, path: str) -> tuple:
    ok = isinstance(value, list) and value and (
        all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value) or
        all(isinstance(r, list) and r and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in r)
            for r in value))
    if not ok:
        raise ConfigError(msg("mindspeed_model.pipeline_num_layers-must-list", where=where, value=value), path=path,
                          key=f"{where}pipeline_num_layers")
    return tuple(tuple(r) if isinstance(r, list) else r for r in value)


def model_json_values(data: dict, out: Collector) -> None:
    """One cost model per ``model_id`` object: the text decoder, the vision encoder and its projector."""
    path = out.path
    found = text_module(data)
    if found is None:
        raise ConfigError(msg("mindspeed_model.language-model-model"), path=path, key="text_decoder")
    tpath, mod = found
    where = "".join(f"{k}." for k in tpath)
    out.put("options.framework", "mindspeed", "MindSpeed-MM model.json")
    out.put("model.name", str(mod.get("model_id") or data.get("model_id") or Path(path).stem), f"{where}model_id")
    mla = bool(mod.get("multi_head_latent_attention")) or bool(mod.get("kv_lora_rank") or mod.get("k_lora_rank"))
    for key, name in _JSON_MODEL:
        if f"model.{name}" in out.values or (key == "qk_nope_head_dim" and not mla):
            continue
        value = _jint(mod, key, where, path)
        if value is not None:
            out.put(f"model.{name}", value, where + key)
    if mod.get("num_query_groups") is not None and mod.get("group_query_attention", True) and not mla:
        out.put("model.num_kv_heads", _jint(mod, "num_query_groups", where, path, 1), where + "num_query_groups")
    for key, name, invert in (("untie_embeddings_and_output_weights", "tie_embeddings", True),
                              ("qk_layernorm", "qk_norm", False), ("use_qk_norm", "qk_norm", False),
                              ("gated_linear_unit", "gated_ffn", False), ("swiglu", "gated_ffn", False),
                              ("add_qkv_bias", "qkv_bias", False)):
        if isinstance(mod.get(key), bool) and f"model.{name}" not in out.values:
            out.put(f"model.{name}", mod[key] != invert, where + key)
    bias = mod.get("add_bias_linear")
    if isinstance(mod.get("disable_bias_linear"), bool):
        bias = not mod["disable_bias_linear"]
    if isinstance(bias, bool):
        for name in ("out_bias", "mlp_bias") + (() if "model.qkv_bias" in out.values else ("qkv_bias",)):
            out.put(f"model.{name}", bias, where + "add_bias_linear")
    if isinstance(mod.get("normalization"), str):
        out.put("model.norm", "rms" if "rms" in mod["normalization"].lower() else "layer", where + "normalization")
    if "pipeline_num_layers" in mod:
        layers = _jlayers(mod["pipeline_num_layers"], where, path)
        out.put("strategy.partition", layers, where + "pipeline_num_layers")
        if isinstance(layers[0], tuple):
            out.put("strategy.vpp", len(layers), where + "pipeline_num_layers", raw=f"{len(layers)} chunk lists")
    _json_recompute(mod, where, out)
    if mod.get("freeze") is True:
        out.put("strategy.frozen_modules", ("embedding", "body", "output", "mtp"), where + "freeze")
    _vision(data, out)
    for mpath, other in _modules(data):
        known = mpath in ((), tpath) or (mpath and mpath[-1] in ("vision_encoder", "vision_projector"))
        if not known:
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.module-model_id-priced", mpath='.'.join(mpath),
                                         model_id=other.get('model_id')))
    tmp = data.get("tmp")
    if isinstance(tmp, dict):
        for key, name in _TMP:
            value = _jint(tmp, key, "tmp.", path, 1)
            if value is not None:
                out.put(f"strategy.{name}", value, f"tmp.{key}")
        if "strategy.pp" in out.values:
            out.assume("strategy.micro_batches", out.values["strategy.pp"], msg("mindspeed_model.upstream-tmp-block"))
        out.put("strategy.sharding", "zero1", "tmp block (upstream: optimizer sharding on)")


def _json_recompute(mod: dict, where: str, out: Collector) -> None:
    gran, method = mod.get("recompute_granularity"), mod.get("recompute_method")
    n = _jint(mod, "recompute_num_layers", where, out.path)
    if gran == "full" and method == "block":
        out.put("strategy.full_counts", n if n is not None else 1, where + "recompute_num_layers")
        out.put("strategy.recompute", "none", where + "recompute_method")
    elif gran == "full":
        out.put("strategy.recompute", "full", where + "recompute_granularity")
        if n is not None and n > 1:
            out.put("strategy.uniform_group", n, where + "recompute_num_layers")
    elif gran == "selective":
        out.put("strategy.recompute", "selective", where + "recompute_granularity")
    elif gran is not None:
        raise ConfigError(msg("mindspeed_model.recompute_granularity-expected-full", where=where, gran=gran),
                          path=out.path,
                          key=where + "recompute_granularity")


def _vision(data: dict, out: Collector) -> None:
    enc = proj = None
    epath = ""
    for mpath, mod in _modules(data):
        if mpath and mpath[-1] == "vision_encoder":
            enc, epath = mod, "".join(f"{k}." for k in mpath)
        elif mpath and mpath[-1] == "vision_projector":
            proj = mod
    if enc is None:
        return
    path = out.path
    need = {k: _jint(enc, k, epath, path, 1) for k in ("num_layers", "hidden_size", "num_attention_heads")}
    if None in need.values():
        out.warn("W-UNMODELLED", msg("W-UNMODELLED.lacks-num_layers-hidden_size", epath=epath[:-1]))
        return
    ffn = _jint(enc, "ffn_hidden_size", epath, path, 1) or _jint(enc, "intermediate_size", epath, path, 1)
    vision = {**need, "ffn_hidden_size": ffn or 4 * need["hidden_size"],
              "frozen": enc.get("freeze") is True, "projector_frozen": bool(proj and proj.get("freeze") is True),
              "gated_ffn": bool(enc.get("gated_linear_unit") or enc.get("swiglu")),
              "norm": "rms" if "rms" in str(enc.get("normalization", "LayerNorm")).lower() else "layer"}
    for key, name in (("num_query_groups", "num_kv_heads"), ("kv_channels", "head_dim"), ("patch_size", "patch_size"),
                      ("in_channels", "in_channels"), ("temporal_patch_size", "temporal_patch_size"),
                      ("spatial_merge_size", "spatial_merge_size"),
                      ("max_position_embeddings", "num_position_embeddings")):
        value = _jint(enc, key, epath, path, 1)
        if value is not None:
            vision[name] = value
    out_hidden = enc.get("llm_hidden_size") or (proj or {}).get("hidden_size")
    if isinstance(out_hidden, int) and not isinstance(out_hidden, bool) and out_hidden > 0:
        vision["out_hidden_size"] = out_hidden
    out.put("model.vision", vision, epath + "*", raw=f"{need['num_layers']} layers, h {need['hidden_size']}")
    if "pipeline_num_layers" in enc:
        layers = _jlayers(enc["pipeline_num_layers"], epath, path)
        if isinstance(layers[0], tuple):
            layers = tuple(sum(r[i] for r in layers) for i in range(len(layers[0])))  # type: ignore[index]
        out.put("strategy.vision_partition", layers, epath + "pipeline_num_layers")


def model_json_keys() -> dict[str, str]:
    """The keys a model.json module takes: MindSpeed-MM's own (from its model.json examples), every Megatron /
    MindSpeed argument in its dataclass spelling (a module's keys configure a TransformerConfig), and the
    ``tmp`` block of degrees that the SAPP-ND fixtures add."""
    keys = dict(catalogue("mm_model_keys").known(""))
    keys.update({flag[2:].replace("-", "_"): "Megatron-LM / MindSpeed argument"
                 for flag in catalogue("launch_flags").known("")})
    keys.update({key: "SAPP-ND degrees block" for key in ("tmp", *(k for k, _ in _TMP))})
    keys.update({key: f"model.{field}" for key, field in _JSON_MODEL})  # the upstream aliases read too
    return keys


def read_model_json(data: dict, text: str, path: str) -> Reading:
    out = Collector(path)
    model_json_values(data, out)
    out.warnings.extend(check_everywhere(data, model_json_keys(), catalogue("mm_model_keys"), path))
    role = "both" if isinstance(data.get("tmp"), dict) else "model"
    return out.reading(MODEL, role, text, path)


# ------------------------------------------------------------------------------------------ writing
def write_model_json(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    """pipeline_num_layers (text and vision) and recompute_* of the text decoder, edited in place."""
    old = parsed.baseline_strategy
    text, path = source.text, source.path
    data = json.loads(text)
    found = text_module(data)
    if found is None:
        raise refusal("no text_decoder in this model.json", path)
    tpath, mod = found
    members = json_members(text)
    edits: dict[str, Any] = {}
    p, vp = strategy.pp, strategy.vpp
    stated = mod.get("pipeline_num_layers")
    shape_ok = isinstance(stated, list) and (len(stated) == p if vp == 1 else
                                             len(stated) == vp and all(isinstance(r, list) and len(r) == p
                                                                       for r in stated))
    if strategy.partition is not None or ("pipeline_num_layers" in mod and not shape_ok):
        if strategy.partition is not None:
            layers: Any = [list(r) if isinstance(r, tuple) else r for r in strategy.partition]
        else:
            split = balanced_counts(int(mod.get("num_layers") or parsed.model.num_layers) + len(strategy.noop_layers),
                               p * vp)
            layers = split if vp == 1 else [split[j * p:(j + 1) * p] for j in range(vp)]
        if layers != mod.get("pipeline_num_layers"):
            edits["pipeline_num_layers"] = layers
    if strategy.recompute != old.recompute:
        plan = strategy.recompute
        want = recompute_flags(path, strategy)
        if plan.default_mode == "selective" or plan.switches:
            raise refusal("model.json states full recompute only (recompute_granularity/method/num_layers)", path)
        edits["recompute_granularity"] = want["--recompute-granularity"]
        edits["recompute_method"] = want["--recompute-method"]
        edits["recompute_num_layers"] = None if want["--recompute-num-layers"] is None else \
            int(want["--recompute-num-layers"])
    frozen = bool({"body", "embedding"} & set(strategy.frozen_modules))
    if strategy.frozen_modules != old.frozen_modules and frozen != (mod.get("freeze") is True):
        edits["freeze"] = bool({"body", "embedding"} & set(strategy.frozen_modules))
    vision = [(mp, m) for mp, m in _modules(data) if mp and mp[-1] == "vision_encoder"]
    changes = [((*tpath, k), v) for k, v in edits.items()]
    if vision and ("pipeline_num_layers" in vision[0][1] or strategy.vision_partition is not None):
        vpath, vmod = vision[0]
        vis = list(strategy.vision_partition) if strategy.vision_partition is not None else \
            [int(vmod.get("num_layers") or 0)] + [0] * (p - 1)
        if vis != vmod.get("pipeline_num_layers"):
            changes.append(((*vpath, "pipeline_num_layers"), vis))
    editor = Editor(text, path)
    for key_path, value in changes:
        json_edit(text, members, editor, key_path, value, path)
    return editor.apply()


