"""The issue-11 flags of Megatron-LM and MindSpeed launch scripts — FP8 (Transformer Engine ``--fp8-*``),
LoRA/QLoRA (MindSpeed-LLM ``--lora-*``, ``--qlora``) — read into ``strategy.*`` and written back. Kept apart from
the script reader so that each feature's flags live in one place: ``FEATURE_FLAGS`` lists every flag read here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..device.overlap import UB_GEMMS, UB_SETTINGS, ub_gemms
from ..errors import ConfigError
from ..features import MEGATRON_LORA_NAMES, lora_targets_of
from ..fields import UB_METHOD_NAMES
from ..inputs import load_yaml, read_text
from ..messages import Text, msg
from ..strategy import Strategy, UbGemm
from .launch_command import FlagSet
from .support import Collector, refusal

Put = Callable[[str, Any, str], None]

LORA_FLAGS = ("--lora-target-modules", "--lora-r", "--lora-alpha", "--lora-dropout", "--qlora", "--lora-fusion",
              "--lora-load", "--lora-modules-to-save", "--lora-register-forward-hook", "--lora-ckpt-filter",
              "--qlora-save-dequantize")
FP8_FLAGS = ("--fp8-format", "--fp8-e4m3", "--fp8-hybrid", "--fp8-recipe", "--fp8-param-gather",
             "--fp8-amax-history-len", "--fp8-amax-compute-algo", "--fp8-margin", "--fp8-interval")
FP8_UNMODELLED = {"--first-last-layers-bf16": "the first/last layers run in bf16",
                  "--num-layers-at-start-in-bf16": "the first layers run in bf16",
                  "--num-layers-at-end-in-bf16": "the last layers run in bf16",
                  "--no-fp8-wgrad": "weight gradients in bf16 (inputs saved in bf16)",
                  "--fp8-dot-product-attention": "FP8 attention", "--fp8-multi-head-attention": "FP8 attention"}
MEGATRON_FP8_RECIPES = ("tensorwise", "delayed", "mxfp8", "blockwise")
# switches: flag -> (field, value when present, value when absent — None: leave the field unstated)
SWITCH_FLAGS = {"--cross-entropy-loss-fusion": ("strategy.loss_fusion", "fused", None),
                "--tp-comm-overlap": ("strategy.async_tp", True, None),
                "--use-ascend-mc2": ("strategy.async_tp", True, None),
                "--use-mc2": ("strategy.async_tp", True, None),
                "--overlap-grad-reduce": ("strategy.overlap_grad_reduce", True, False),
                "--overlap-param-gather": ("strategy.overlap_param_gather", True, False)}
UB_CFG_FLAG = "--tp-comm-overlap-cfg"
FEATURE_FLAGS = LORA_FLAGS + FP8_FLAGS + tuple(FP8_UNMODELLED) + tuple(SWITCH_FLAGS) + \
    ("--cross-entropy-fusion-impl", UB_CFG_FLAG)
MINDSPEED_LORA_RANK = 16  # MindSpeed-LLM's --lora-r default


def read_feature_flags(fl: FlagSet, out: Collector, put: Put) -> None:
    """Every issue-11 flag of a Megatron/MindSpeed launch script."""
    _fp8(fl, out, put)
    _lora(fl, out, put)
    _switches(fl, out, put)
    _ub_config(fl, out, put)


def _ub_config(fl: FlagSet, out: Collector, put: Put) -> None:
    """``--tp-comm-overlap-cfg``: the YAML Megatron hands Transformer Engine's ``initialize_ub`` as ``ub_cfgs``
    (``yaml.safe_load``, megatron/training/initialize.py), read — never executed — from beside the script (or its
    absolute path): each known GEMM's method, is_reduce_scatter and fp8_buf into ``strategy.tp_comm_overlap_cfg``
    ([D-UB] prices them). A file that cannot be read, an entry TE would ignore or refuse, is said naming the file
    and key, and priced with TE's defaults."""
    value = fl.text(UB_CFG_FLAG)
    if value is None:
        return
    where = Path(value) if Path(value).is_absolute() else Path(out.path).parent / value
    try:
        data = load_yaml(read_text(where), str(where))
    except ConfigError as exc:
        out.warn("W-UB-CFG", msg("W-UB-CFG.unreadable", path=out.path, flag=UB_CFG_FLAG, file=str(where),
                                 reason=exc.bare_message))
        return
    if data is None:
        data = {}
    if not isinstance(data, dict):
        out.warn("W-UB-CFG", msg("W-UB-CFG.not-mapping", file=str(where), got=type(data).__name__))
        return
    known = {name for name, _fp8 in UB_GEMMS}
    settings: list[UbGemm] = []
    for name, entry in data.items():
        said = _ub_entry_problem(str(name), entry, known)
        if said is not None:
            out.warn("W-UB-CFG", msg("W-UB-CFG.entry", file=str(where), key=str(name), problem=said))
            continue
        settings.append(UbGemm(str(name), entry.get("method"), entry.get("is_reduce_scatter"), entry.get("fp8_buf")))
    try:
        ub_gemms(tuple(settings))
    except ValueError as exc:
        out.warn("W-UB-CFG", msg("W-UB-CFG.refused", file=str(where), problem=str(exc)))
        return
    if settings:
        put("strategy.tp_comm_overlap_cfg", [s.to_dict() for s in settings], UB_CFG_FLAG)


def _ub_entry_problem(name: str, entry: Any, known: set[str]) -> Text | None:
    """Why TE would not take one ``--tp-comm-overlap-cfg`` entry as written (None: it would)."""
    if name not in known:
        return msg("W-UB-CFG.unknown-gemm", known=", ".join(sorted(known)))
    if not isinstance(entry, dict):
        return msg("W-UB-CFG.not-settings", got=type(entry).__name__)
    extra = sorted(str(k) for k in entry if k not in UB_SETTINGS)
    if extra:
        return msg("W-UB-CFG.unknown-setting", names=", ".join(extra))
    if entry.get("method") is not None and entry["method"] not in UB_METHOD_NAMES:
        return msg("W-UB-CFG.method", method=entry["method"], methods=", ".join(UB_METHOD_NAMES))
    bad = [k for k in ("is_reduce_scatter", "fp8_buf") if entry.get(k) is not None and
           not isinstance(entry[k], bool)]
    if bad:
        return msg("W-UB-CFG.not-bool", names=", ".join(bad))
    return None


def _switches(fl: FlagSet, out: Collector, put: Put) -> None:
    """Loss fusion, TP communication overlap (TE userbuffers; MindSpeed's MC2 fused matmul-communication) and the
    distributed optimizer's overlapped gradient reduction / parameter gather (off unless the flag is given)."""
    for flag, (field, present, absent) in SWITCH_FLAGS.items():
        if fl.has(flag):
            put(field, present, flag)
        elif absent is not None and field not in out.values:
            out.derive(field, absent, f"no {flag}: Megatron does not overlap it")
    impl = fl.text("--cross-entropy-fusion-impl")
    if impl == "te" and fl.has("--cross-entropy-loss-fusion"):
        # Megatron's native fused loss keeps an fp32 softmax (docs/model.md#working-overhead); Transformer Engine's
        # parallel_cross_entropy saves the bf16 logits and writes the gradient into them
        out.warn("W-FLAG-UNPRICED", msg("W-FLAG-UNPRICED"))


def _fp8(fl: FlagSet, out: Collector, put: Put) -> None:
    """--fp8-format (e4m3 | hybrid; older scripts --fp8-e4m3 / --fp8-hybrid) turns Transformer Engine's FP8 on;
    --fp8-recipe picks the scaling (Megatron's default delayed); --fp8-param-gather keeps the weights in FP8. The
    settings are read whether or not FP8 is on (they do nothing without it), so a script reads back as written."""
    if fl.has("--fp8-param-gather"):
        put("strategy.fp8_param", True, "--fp8-param-gather")
    history = fl.int("--fp8-amax-history-len", minimum=1)
    if history is not None:
        put("strategy.fp8_amax_history", history, "--fp8-amax-history-len")
    on = next((flag for flag in ("--fp8-format", "--fp8-e4m3", "--fp8-hybrid") if fl.has(flag)), None)
    if on is None:
        stray = [flag for flag in FP8_FLAGS if fl.has(flag)]
        if stray:
            out.warn("W-FP8", msg("W-FP8", stray=' '.join(stray)))
        return
    recipe = fl.text("--fp8-recipe")
    if recipe is None:
        out.assume("strategy.fp8", "delayed", msg("feature_flags.megatron-s-default", on=on))
    elif recipe not in MEGATRON_FP8_RECIPES:
        raise ConfigError(msg("feature_flags.fp8-recipe-expected", recipe=recipe,
                              MEGATRON_FP8_RECIPES=', '.join(MEGATRON_FP8_RECIPES)),
                          path=out.path, key="--fp8-recipe")
    else:
        put("strategy.fp8", recipe, "--fp8-recipe")
    for flag, what in FP8_UNMODELLED.items():
        if fl.has(flag):
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.modelled-priced-fp8", flag=flag, what=what))


def _lora(fl: FlagSet, out: Collector, put: Put) -> None:
    """MindSpeed-LLM turns LoRA on with a non-empty --lora-target-modules (linear_qkv linear_proj linear_fc1
    linear_fc2 …); --lora-alpha only scales the adapter output (no memory, no time)."""
    names = fl.values("--lora-target-modules")
    if not names:
        if fl.has("--qlora"):
            out.warn("W-LORA", msg("W-LORA"))
        return
    targets, unknown = lora_targets_of(names)
    if unknown:
        out.warn("W-LORA-TARGET", msg("W-LORA-TARGET", unknown=' '.join(unknown)))
    if not targets:
        return
    put("strategy.peft", "qlora" if fl.has("--qlora") else "lora", "--qlora" if fl.has("--qlora") else
        "--lora-target-modules")
    put("strategy.lora_targets", targets, "--lora-target-modules")
    rank = fl.int("--lora-r", minimum=1)
    if rank is None:
        out.assume("strategy.lora_rank", MINDSPEED_LORA_RANK, msg("feature_flags.mindspeed-llm-s"))
    else:
        put("strategy.lora_rank", rank, "--lora-r")
    dropout = fl.float("--lora-dropout")
    if dropout is None:
        out.assume("strategy.lora_dropout", 0.0, msg("feature_flags.mindspeed-llm-builds"))
    else:
        put("strategy.lora_dropout", dropout, "--lora-dropout")


def feature_flag_edits(path: str, fl: FlagSet, old: Strategy, new: Strategy, mla: bool,
                       framework: str) -> dict[str, Any]:
    """Flag -> new value (str), True (present) or None (absent) for every changed issue-11 field a launch script
    can state; a change it cannot state is refused (R-FW). ``mla``: the model's attention is MLA."""
    want: dict[str, Any] = {}
    if (old.fp8, old.fp8_param, old.fp8_amax_history) != (new.fp8, new.fp8_param, new.fp8_amax_history):
        want.update(_fp8_edits(old, new))
    if old.fp8_experts != new.fp8_experts:
        raise refusal("Transformer Engine runs the experts in FP8 with the rest: strategy.fp8_experts cannot be "
                      "set apart in a launch script", path)
    if (old.peft, old.lora_rank, old.lora_targets) != (new.peft, new.lora_rank, new.lora_targets):
        want.update(_lora_edits(path, new, mla))
    want.update(_switch_edits(path, fl, old, new, framework))
    # MindSpeed only (megatron_write refuses them for Megatron-LM)
    if (old.moe_zero_memory, old.moe_zero_memory_layers) != (new.moe_zero_memory, new.moe_zero_memory_layers):
        if old.moe_zero_memory != new.moe_zero_memory:
            want["--moe-zero-memory"] = None if new.moe_zero_memory in (None, "disable") else new.moe_zero_memory
        # the count needs --moe-zero-memory on (MindSpeed asserts it); it does something under level1 only
        layers = new.moe_zero_memory_layers if new.moe_zero_memory in ("level0", "level1") else None
        if layers is not None or fl.has("--moe-zero-memory-num-layers"):
            want["--moe-zero-memory-num-layers"] = None if layers is None else str(layers)
    if old.mla_zero_memory != new.mla_zero_memory:
        want["--mla-zero-memory"] = True if new.mla_zero_memory else None
    if (old.offload_activations, old.offload_counts) != (new.offload_activations, new.offload_counts):
        want.update(_offload_edits(path, fl, new, framework))
    if old.lora_dropout != new.lora_dropout:
        want["--lora-dropout"] = str(new.lora_dropout) if new.lora_dropout else None
    for name in ("lora_param_bytes", "qlora_double_quant"):
        if getattr(old, name) != getattr(new, name):
            raise refusal(f"a MindSpeed launch script cannot state strategy.{name} = {getattr(new, name)!r}", path)
    return want


def _switch_edits(path: str, fl: FlagSet, old: Strategy, new: Strategy, framework: str) -> dict[str, Any]:
    want: dict[str, Any] = {}
    if old.loss_fusion != new.loss_fusion:
        if new.loss_fusion == "chunked":
            raise refusal("Megatron has no chunked (fused linear) cross-entropy: strategy.loss_fusion chunked", path)
        want["--cross-entropy-loss-fusion"] = True if new.loss_fusion == "fused" else None
    if old.async_tp != new.async_tp:
        overlap = ("--use-ascend-mc2", "--use-mc2", "--tp-comm-overlap")
        if new.async_tp:  # MindSpeed overlaps TP with MC2, Megatron with Transformer Engine's userbuffers
            want["--use-ascend-mc2" if framework == "mindspeed" else "--tp-comm-overlap"] = True
        else:
            want.update(dict.fromkeys((f for f in overlap if fl.has(f)), None))
    for name, flag in (("overlap_grad_reduce", "--overlap-grad-reduce"),
                       ("overlap_param_gather", "--overlap-param-gather")):
        if getattr(old, name) != getattr(new, name):
            want[flag] = True if getattr(new, name) else None
    return want


# MindSpeed's --swap-modules default, and the groups it can swap; Megatron's --offload-modules per group
SWAP_MODULES = ("input_norm", "self_attention", "post_attention_norm")
MEGATRON_OFFLOAD = {"input_norm": "attn_norm", "self_attention": "qkv_linear core_attn attn_proj",
                    "post_attention_norm": "mlp_norm"}
OFFLOAD_FLAGS = ("--swap-attention", "--swap-modules", "--cpu-offloading", "--cpu-offloading-num-layers",
                 "--fine-grained-activation-offloading", "--offload-modules")


def _offload_edits(path: str, fl: FlagSet, new: Strategy, framework: str) -> dict[str, Any]:
    """Activation offload: MindSpeed's --swap-attention (--swap-modules), Megatron's --cpu-offloading (whole
    layers, --cpu-offloading-num-layers) or --fine-grained-activation-offloading (--offload-modules)."""
    want: dict[str, Any] = dict.fromkeys((f for f in OFFLOAD_FLAGS if fl.has(f)), None)
    groups = tuple(new.offload_activations)
    if not groups:
        return want
    counts = new.offload_counts
    if framework == "mindspeed":
        if not set(groups) <= set(SWAP_MODULES) or counts not in (None, True):
            raise refusal(f"MindSpeed swaps the attention block's modules ({', '.join(SWAP_MODULES)}) in every "
                          f"layer: strategy.offload_activations {', '.join(groups)}"
                          + (f" on {counts!r} layers" if counts not in (None, True) else ""), path)
        want["--swap-attention"] = True
        want["--swap-modules"] = ",".join(groups) if (groups != SWAP_MODULES or fl.has("--swap-modules")) else None
        return want
    if groups == ("layer",):
        want["--cpu-offloading"] = True
        if isinstance(counts, int) and not isinstance(counts, bool):
            want["--cpu-offloading-num-layers"] = str(counts)
        elif counts not in (None, True):
            raise refusal(f"Megatron offloads the first --cpu-offloading-num-layers layers: strategy.offload_counts "
                          f"{counts!r} is not one number", path)
        return want
    if not set(groups) <= set(MEGATRON_OFFLOAD) or counts not in (None, True):
        raise refusal(f"Megatron's --offload-modules cannot state strategy.offload_activations {', '.join(groups)}"
                      " (whole layers are --cpu-offloading; the MLP is offloaded only in MoE layers)", path)
    want["--fine-grained-activation-offloading"] = True
    want["--offload-modules"] = " ".join(MEGATRON_OFFLOAD[g] for g in groups)
    return want


def _fp8_edits(old: Strategy, new: Strategy) -> dict[str, Any]:
    want: dict[str, Any] = {"--fp8-param-gather": True if new.fp8_param else None,
                            "--fp8-amax-history-len": None if new.fp8_amax_history is None else
                            str(new.fp8_amax_history)}
    if new.fp8 in (None, "none"):
        want.update({"--fp8-format": None, "--fp8-e4m3": None, "--fp8-hybrid": None, "--fp8-recipe": None})
        return want
    want["--fp8-recipe"] = new.fp8
    if old.fp8 in (None, "none"):
        want["--fp8-format"] = "hybrid"  # E4M3 forward, E5M2 gradients: Megatron's usual training format
    return want


def _lora_edits(path: str, new: Strategy, mla: bool) -> dict[str, Any]:
    if new.peft in (None, "none"):
        return {"--lora-target-modules": None, "--lora-r": None, "--qlora": None}
    names = []
    for target in new.lora_targets:
        name = MEGATRON_LORA_NAMES.get(target) if (mla or target != "q") else None
        if name is None:
            raise refusal(f"LoRA target {target!r}: Megatron fuses it into "
                          f"{'linear_qkv' if target in ('q', 'k', 'v') else 'linear_fc1'} (target that instead)",
                          path)
        names.append(name)
    return {"--lora-target-modules": " ".join(names), "--lora-r": str(new.lora_rank),
            "--qlora": True if new.peft == "qlora" else None}


__all__ = ["FEATURE_FLAGS", "feature_flag_edits", "read_feature_flags"]
