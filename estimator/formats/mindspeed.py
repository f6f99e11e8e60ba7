"""MindSpeed-LLM / MindSpeed-MM launch scripts and MindSpeed-MM ``model.json`` (spec §11.2).

One registered format, ``mindspeed``: ``read`` returns a Reading whose ``format`` is ``mindspeed_script`` (a
``pretrain_*.sh``/``finetune_*.sh``, role ``both`` when it carries shape flags) or ``mindspeed_model`` (a
MindSpeed-MM ``model.json``, role ``model``: its dimensions win over the script's shape flags). ``write``
rewrites only the flags, shell variables or JSON keys that define a changed strategy and refuses (R-FW)
what the format cannot express. The shell subset is read by ``shell.py``; nothing is ever executed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..parsed import Provenance
from ..warnings import Assumption, EstimateWarning
from . import Reading
from .shell import Editor, FlagSet, Script, launch_flags, literal_span, local_span, problem_of, text_of

FORMAT = "mindspeed"
SCRIPT, MODEL = "mindspeed_script", "mindspeed_model"
_MARKERS = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--num-layers", "--micro-batch-size",
            "--global-batch-size", "pretrain_gpt.py", "pretrain_vlm.py", "posttrain_gpt.py")
_CP_ALGOS = {"megatron_cp_algo": "ring", "ulysses_cp_algo": "ulysses", "hybrid_cp_algo": "hybrid",
             "adaptive_cp_algo": "ring", "hybrid_adaptive_cp_algo": "hybrid"}
_TOKENIZER_VOCAB = {"Llama2Tokenizer": 32000, "GPT2BPETokenizer": 50257}
_MB_VARS = ("GRAD_ACC_STEP", "GRAD_ACC_STEPS", "GRADIENT_ACCUMULATION_STEPS", "ACC_STEPS")


def detect(data: Any, path: str) -> bool:
    """A launch script (``.sh`` with Megatron flags) or a MindSpeed-MM model.json (objects with model_id)."""
    if isinstance(data, dict):
        return _is_model_json(data)
    if data is None and str(path).endswith(".sh"):
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        return any(marker in text for marker in _MARKERS)
    return False


def _is_model_json(data: dict) -> bool:
    if "model_id" in data or isinstance(data.get("text_decoder"), dict):
        return True
    return any(isinstance(v, dict) and "model_id" in v for v in data.values())


def read(text: str, path: str, data: Any, devices: int | None) -> Reading:
    if isinstance(data, dict):
        return read_model_json(data, text, path)
    return read_script(text, path, devices)


# ------------------------------------------------------------------------------------------ values
@dataclass
class _Out:
    """Values with provenance, warnings and assumptions as one file contributes them."""

    path: str
    values: dict[str, Any] = field(default_factory=dict)
    prov: dict[str, Provenance] = field(default_factory=dict)
    warnings: list[EstimateWarning] = field(default_factory=list)
    assumptions: list[Assumption] = field(default_factory=list)

    def put(self, key: str, value: Any, where: str, raw: Any = None) -> None:
        self.values[key] = value
        self.prov[key] = Provenance("file", path=self.path, key=where, raw=value if raw is None else raw)

    def derive(self, key: str, value: Any, how: str) -> None:
        self.values[key] = value
        self.prov[key] = Provenance("derived", path=self.path, key=how)

    def assume(self, key: str, value: Any, why: str) -> None:
        self.values[key] = value
        self.prov[key] = Provenance("default", path=self.path, key=why)
        self.assumptions.append(Assumption(key, value, why))

    def warn(self, code: str, message: str) -> None:
        self.warnings.append(EstimateWarning(code, message))


# ------------------------------------------------------------------------------------------ scripts
def resolve_script(text: str, path: str, devices: int | None) -> tuple[Script, FlagSet, int, str, list[str]]:
    """The script evaluated, its launcher flags, the device count N and how N was found, and notes."""
    script = Script.parse(text, path)
    flags = launch_flags(script)
    notes: list[str] = []
    found = _world(script, flags)
    if isinstance(found, str) and devices:
        pins = {"WORLD_SIZE": str(devices)}
        per_node = _first_int(script, ("NPUS_PER_NODE", "GPUS_PER_NODE", "NPROC_PER_NODE"))
        if per_node and devices % per_node == 0:
            pins.update({name: str(devices // per_node) for name in ("NNODES", "NUM_NODES")})
        script = Script.parse(text, path, pins)
        flags = launch_flags(script)
        return script, flags, devices, "--devices", notes
    if isinstance(found, str):
        raise ConfigError(f"the device count cannot be resolved: {found}; pass --devices N (the total number of "
                          "NPUs/GPUs) — the estimator never runs the script's commands", path=path,
                          key="NNODES")
    world, how = found
    if devices and devices != world:
        notes.append(f"--devices {devices} ignored: the script states N = {how} = {world}")
    return script, flags, world, how, notes


def _first_int(script: Script, names: tuple[str, ...]) -> int | None:
    for name in names:
        value = script.lookup(name)
        if value is not None and not problem_of(value) and text_of(value).strip().isdigit():
            return int(text_of(value).strip())
    return None


def _world(script: Script, flags: FlagSet) -> tuple[int, str] | str:
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
            return int(a[0]) * int(b[0]), how
    per_node = _first_int(script, ("NPUS_PER_NODE", "GPUS_PER_NODE", "NPROC_PER_NODE"))
    nodes = _first_int(script, ("NNODES", "NUM_NODES"))
    if per_node and nodes:
        return per_node * nodes, f"NPUS_PER_NODE {per_node} × NNODES {nodes}"
    world = _first_int(script, ("WORLD_SIZE",))
    if world:
        return world, "WORLD_SIZE"
    for name in ("NNODES", "NUM_NODES", "WORLD_SIZE", "NPUS_PER_NODE"):
        value = script.lookup(name)
        if value is not None and problem_of(value):
            problems.append(problem_of(value) or "")
    return problems[0] if problems else "the script sets neither NPUS_PER_NODE × NNODES nor --nproc_per_node/--nnodes"


def read_script(text: str, path: str, devices: int | None) -> Reading:
    script, fl, world, how, notes = resolve_script(text, path, devices)
    out = _Out(path)
    for note in notes:
        out.warn("W-DEVICES", note)
    for note in script.warnings + fl.notes:
        out.warn("W-SHELL", note)
    out.put("options.framework", "mindspeed", "MindSpeed launch script")
    used = {ref.name for occs in fl.flags.values() for occ in occs for tok in occ.values for seg in tok
            for ref in seg.via}
    for record in script.all_assignments:
        if record.conditional and record.name in used:
            out.warn("W-SHELL", f"{record.name} is assigned inside if/case/loop/function (line {record.line}); "
                                "the estimator reads the script top to bottom and cannot tell whether it runs")
    shaped = fl.has("--num-layers") or fl.has("--hidden-size")
    _model_flags(fl, out, shaped, path)
    _strategy_flags(fl, out, world, how)
    _recompute_flags(fl, out)
    role = "both" if any(k.startswith("model.") for k in out.values) else "strategy"
    return Reading(SCRIPT, role, out.values, out.prov, out.warnings, out.assumptions, text=text, path=path)


def _putter(fl: FlagSet, out: _Out) -> Any:
    """``put(key, value, flag)``: a value read from ``flag``, with the flag, its variable and line as provenance."""

    def put(key: str, value: Any, flag: str) -> None:
        raw = fl.raw(flag) if fl.has(flag) else value
        out.put(key, value, fl.where(flag), raw=raw if raw != "" else value)

    return put


def _model_flags(fl: FlagSet, out: _Out, shaped: bool, path: str) -> None:
    """Shape flags (spec §11.2); Megatron defaults are stated only for scripts that give a shape."""
    put = _putter(fl, out)
    total = fl.int("--num-layers")
    noop = fl.int_list("--noop-layers")
    if total is not None:
        if noop and (max(noop) >= total or len(set(noop)) != len(noop)):
            raise ConfigError(f"--noop-layers {fl.text('--noop-layers')} must be distinct layer indices below "
                              f"--num-layers {total}", path=path, key="--noop-layers")
        if total - len(noop) < 1:
            raise ConfigError(f"--num-layers {total} leaves no real layer besides {len(noop)} noop layers",
                              path=path, key="--num-layers")
        out.put("model.num_layers", total - len(noop), "--num-layers" + (" − noop layers" if noop else ""),
                raw=total)
    if noop:
        put("strategy.noop_layers", tuple(noop), "--noop-layers")
    for flag, key in (("--hidden-size", "model.hidden_size"), ("--ffn-hidden-size", "model.ffn_hidden_size"),
                      ("--num-attention-heads", "model.num_attention_heads"), ("--num-experts", "model.num_experts"),
                      ("--moe-router-topk", "model.experts_per_token"), ("--n-shared-experts",
                                                                         "model.num_shared_experts"),
                      ("--first-k-dense-replace", "model.first_k_dense"), ("--mtp-num-layers", "model.mtp_layers"),
                      ("--moe-shared-expert-intermediate-size", "model.shared_ffn_hidden_size")):
        value = fl.int(flag)
        if value is not None:
            put(key, value, flag)
    for flag in ("--moe-intermediate-size", "--moe-ffn-hidden-size"):
        if fl.int(flag) is not None:
            put("model.moe_ffn_hidden_size", fl.int(flag), flag)
            break
    else:
        if fl.int("--num-experts") and fl.int("--ffn-hidden-size"):
            out.assume("model.moe_ffn_hidden_size", fl.int("--ffn-hidden-size"),
                       "no --moe-intermediate-size: experts use --ffn-hidden-size (Megatron)")
    freq = fl.text("--moe-layer-freq")
    if freq is not None:
        if not freq.strip().isdigit() or int(freq) < 1:
            raise ConfigError(f"--moe-layer-freq {freq!r}: only a positive integer period is supported; describe "
                              "other patterns with model.layers in a plan file", path=path, key="--moe-layer-freq")
        put("model.moe_layer_freq", int(freq), "--moe-layer-freq")
    if fl.has("--moe-expert-capacity-factor"):
        put("model.capacity_factor", fl.float("--moe-expert-capacity-factor"), "--moe-expert-capacity-factor")
    if fl.has("--shared-expert-gate"):
        put("model.shared_expert_gate", True, "--shared-expert-gate")
    heads = fl.int("--num-attention-heads")
    mla = fl.has("--multi-head-latent-attention")
    if mla:
        for flag, key in (("--q-lora-rank", "model.q_lora_rank"), ("--kv-lora-rank", "model.kv_lora_rank"),
                          ("--qk-rope-head-dim", "model.qk_rope_head_dim"), ("--qk-nope-head-dim", "model.head_dim"),
                          ("--v-head-dim", "model.v_head_dim")):
            if fl.int(flag) is not None:
                put(key, fl.int(flag), flag)
    elif fl.has("--kv-lora-rank"):
        out.warn("W-MLA", "--kv-lora-rank is ignored without --multi-head-latent-attention")
    if fl.int("--kv-channels") is not None and "model.head_dim" not in out.values:
        put("model.head_dim", fl.int("--kv-channels"), "--kv-channels")
    if fl.has("--group-query-attention") and fl.int("--num-query-groups") is not None:
        put("model.num_kv_heads", fl.int("--num-query-groups"), "--num-query-groups")
    elif heads and not mla and shaped:
        out.derive("model.num_kv_heads", heads, "no --group-query-attention: one KV head per query head")
    _vocab(fl, out, put, shaped)
    if fl.has("--qk-layernorm"):
        put("model.qk_norm", True, "--qk-layernorm")
    for flag, key, value in (("--untie-embeddings-and-output-weights", "model.tie_embeddings", False),
                             ("--swiglu", "model.gated_ffn", True), ("--geglu", "model.gated_ffn", True)):
        if fl.has(flag):
            put(key, value, flag)
    norm = fl.text("--normalization")
    if norm:
        put("model.norm", "rms" if "rms" in norm.lower() else "layer", "--normalization")
    if fl.has("--disable-bias-linear"):
        for key in ("model.qkv_bias", "model.out_bias", "model.mlp_bias"):
            put(key, False, "--disable-bias-linear")
    if fl.has("--add-qkv-bias"):
        put("model.qkv_bias", True, "--add-qkv-bias")
    if not shaped:
        return
    out.put("model.name", Path(out.path).stem, "script file name")
    defaults = (("model.tie_embeddings", True, "Megatron ties embedding and output weights by default"),
                ("model.gated_ffn", False, "no --swiglu: Megatron's GeLU MLP"),
                ("model.norm", "layer", "no --normalization: Megatron's LayerNorm"))
    for key, value, why in defaults:
        if key not in out.values:
            out.assume(key, value, why)
    if not fl.has("--disable-bias-linear"):
        for key in ("model.qkv_bias", "model.out_bias", "model.mlp_bias"):
            if key not in out.values:
                out.assume(key, True, "no --disable-bias-linear: Megatron adds linear biases")


def _vocab(fl: FlagSet, out: _Out, put: Any, shaped: bool) -> None:
    padded = fl.int("--padded-vocab-size")
    if padded is not None:
        put("model.vocab_size", padded, "--padded-vocab-size")
        out.derive("model.make_vocab_divisible_by", 1, "--padded-vocab-size is used as is")
        return
    vocab = fl.int("--vocab-size")
    tokenizer = fl.text("--tokenizer-type")
    if vocab is None and tokenizer in _TOKENIZER_VOCAB:
        vocab = _TOKENIZER_VOCAB[tokenizer]
        out.assume("model.vocab_size", vocab, f"--tokenizer-type {tokenizer} has {vocab} tokens")
    elif vocab is not None:
        put("model.vocab_size", vocab, "--vocab-size")
    if vocab is not None and (fl.has("--make-vocab-size-divisible-by") or shaped):
        divisible = fl.int("--make-vocab-size-divisible-by")
        if divisible is not None:
            put("model.make_vocab_divisible_by", max(1, divisible), "--make-vocab-size-divisible-by")
        else:
            out.assume("model.make_vocab_divisible_by", 128, "Megatron pads the vocabulary to a multiple of 128·t")


def _strategy_flags(fl: FlagSet, out: _Out, world: int, how: str) -> None:
    put = _putter(fl, out)
    path = out.path
    deg = {}
    for flag, key in (("--tensor-model-parallel-size", "tp"), ("--pipeline-model-parallel-size", "pp"),
                      ("--context-parallel-size", "cp"), ("--expert-model-parallel-size", "ep")):
        value = fl.int(flag, minimum=1)
        deg[key] = value if value is not None else 1
        if value is not None:
            put(f"strategy.{key}", value, flag)
    t, p, cp = deg["tp"], deg["pp"], deg["cp"]
    if world % (t * p * cp):
        raise ConfigError(f"the {world} devices ({how}) are not divisible by tp {t} × pp {p} × cp {cp}; fix the "
                          "degrees or the device count", path=path, key="--tensor-model-parallel-size")
    d = world // (t * p * cp)
    out.derive("strategy.dp", d, f"N/(tp·pp·cp) = {world}/{t * p * cp} ({how})")
    _stated(fl, out, "DP", d, "data-parallel degree N/(tp·pp·cp)")
    etp = fl.int("--expert-tensor-parallel-size", minimum=1)
    if fl.has("--moe-tp-extend-ep"):
        out.put("strategy.ep", deg["ep"] * t, "--expert-model-parallel-size × tp (--moe-tp-extend-ep)",
                raw=f"{deg['ep']} × {t}")
        out.put("strategy.etp", 1, "--moe-tp-extend-ep")
    elif etp is not None:
        put("strategy.etp", etp, "--expert-tensor-parallel-size")
    b = fl.int("--micro-batch-size", minimum=1)
    if b is None:
        b = 1
        out.assume("strategy.micro_batch_size", 1, "no --micro-batch-size")
    else:
        put("strategy.micro_batch_size", b, "--micro-batch-size")
    g = fl.int("--global-batch-size", minimum=1)
    if g is None:
        g = b * d
        out.assume("strategy.micro_batches", 1, "no --global-batch-size: G = b·d (Megatron)")
    elif g % (b * d):
        raise ConfigError(f"--global-batch-size {g} is not a multiple of micro-batch-size {b} × dp {d}: "
                          f"m = G/(b·d) = {g / (b * d):g}", path=path, key="--global-batch-size")
    else:
        out.derive("strategy.micro_batches", g // (b * d), f"G/(b·d) = {g}/({b}·{d}) (--global-batch-size)")
    for name in _MB_VARS:
        _stated(fl, out, name, g // (b * d), "micro-batches per step G/(b·d)")
    out.derive("strategy.n_acc", 1, "MindSpeed: one flush of m micro-batches per step")
    seq = fl.int("--seq-length", minimum=1)
    if seq is not None:
        put("strategy.seq_length", seq, "--seq-length")
    put("strategy.sequence_parallel", fl.has("--sequence-parallel"), "--sequence-parallel")
    algo = fl.text("--context-parallel-algo")
    if algo is not None and algo not in _CP_ALGOS:
        raise ConfigError(f"unknown --context-parallel-algo {algo!r}; expected one of {', '.join(_CP_ALGOS)}",
                          path=path, key="--context-parallel-algo")
    if algo is not None:
        put("strategy.cp_algo", _CP_ALGOS[algo], "--context-parallel-algo")
        if "adaptive" in algo:
            out.warn("W-UNMODELLED", f"{algo} is priced as {_CP_ALGOS[algo]} context parallelism")
    elif cp > 1:
        out.assume("strategy.cp_algo", "ulysses", "MindSpeed's default --context-parallel-algo ulysses_cp_algo")
    if fl.int("--ulysses-degree-in-cp") is not None:
        put("strategy.ulysses_degree", fl.int("--ulysses-degree-in-cp", minimum=1), "--ulysses-degree-in-cp")
    _pipeline(fl, out, put, p)
    _switches(fl, out, put, seq, b, t, cp)


def _stated(fl: FlagSet, out: _Out, name: str, derived: int, what: str) -> None:
    value = fl.script.lookup(name)
    if value is None or problem_of(value) or not text_of(value).strip().isdigit():
        return
    if int(text_of(value)) != derived:
        out.warn("W-STATED", f"{name}={text_of(value).strip()} in the script, but the {what} is {derived}; "
                             "the flags win")


def _pipeline(fl: FlagSet, out: _Out, put: Any, p: int) -> None:
    path = out.path
    layers = fl.int_list("--num-layer-list")
    if layers:
        put("strategy.partition", tuple(layers), "--num-layer-list")
    total = fl.int("--num-layers")
    per_chunk = fl.int("--num-layers-per-virtual-pipeline-stage", minimum=1)
    chunks = fl.int("--num-virtual-stages-per-pipeline-rank", minimum=1)
    method = fl.text("--schedules-method")
    if method is not None and method != "dualpipev":
        raise ConfigError(f"--schedules-method {method!r} is not known; MindSpeed offers dualpipev", path=path,
                          key="--schedules-method")
    if method == "dualpipev":
        put("strategy.schedule", "dualpipev", "--schedules-method")
        out.derive("strategy.vpp", 2, "DualPipeV runs two chunks per stage")
    elif per_chunk is not None:
        if total is None:
            raise ConfigError("--num-layers-per-virtual-pipeline-stage needs --num-layers in the script", path=path,
                              key="--num-layers-per-virtual-pipeline-stage")
        if total % (p * per_chunk):
            raise ConfigError(f"--num-layers {total} is not divisible by pp {p} × "
                              f"--num-layers-per-virtual-pipeline-stage {per_chunk}", path=path,
                              key="--num-layers-per-virtual-pipeline-stage")
        out.put("strategy.vpp", total // (p * per_chunk), "--num-layers-per-virtual-pipeline-stage",
                raw=f"{total}/({p}·{per_chunk})")
    elif chunks is not None:
        put("strategy.vpp", chunks, "--num-virtual-stages-per-pipeline-rank")
    group = fl.int("--microbatch-group-size-per-virtual-pipeline-stage", minimum=1)
    if group is not None:
        put("strategy.vpp_group", group, "--microbatch-group-size-per-virtual-pipeline-stage")


def _switches(fl: FlagSet, out: _Out, put: Any, seq: int | None, b: int, t: int, cp: int) -> None:
    if fl.has("--bf16") or fl.has("--fp16"):
        flag = "--bf16" if fl.has("--bf16") else "--fp16"
        put("strategy.param_bytes", 2.0, flag)
        put("strategy.compute_bytes", 2.0, flag)
    elif fl.has("--num-layers") or fl.has("--hidden-size"):
        for key in ("strategy.param_bytes", "strategy.compute_bytes"):
            out.assume(key, 4.0, "neither --bf16 nor --fp16: fp32 training")
        out.assume("strategy.master_bytes", 0.0, "fp32 training keeps no separate master copy")
    if fl.has("--fp32-residual-connection"):
        put("strategy.residual_bytes", 4.0, "--fp32-residual-connection")
    heads = fl.int("--num-attention-heads")
    fused = not fl.has("--no-masked-softmax-fusion") and (fl.has("--bf16") or fl.has("--fp16")) and \
        seq is not None and 16 < seq <= 4096 and seq % 4 == 0 and heads is not None and (b * heads // t) % 4 == 0
    if seq is not None:
        out.derive("strategy.softmax_bytes", 2.0 if fused or not fl.has("--attention-softmax-in-fp32") else 4.0,
                   "fused masked softmax" if fused else "--attention-softmax-in-fp32" if
                   fl.has("--attention-softmax-in-fp32") else "16-bit softmax")
    if fl.has("--use-flash-attn") or cp > 1:
        put("strategy.flash_attention", True, "--use-flash-attn" if fl.has("--use-flash-attn") else
            "--context-parallel-size > 1 (MindSpeed turns flash attention on)")
    else:
        out.derive("strategy.flash_attention", False, "no --use-flash-attn")
    put("strategy.sharding", "zero1" if fl.has("--use-distributed-optimizer") else "none",
        "--use-distributed-optimizer")
    for flag, key in (("--moe-grouped-gemm", "strategy.grouped_gemm"), ("--reuse-fp32-param",
                                                                       "strategy.reuse_fp32_param"),
                      ("--swap-optimizer", "strategy.swap_optimizer"),
                      ("--overlap-moe-expert-parallel-comm", "strategy.overlap_moe_ep_comm")):
        if fl.has(flag):
            put(key, True, flag)
    if fl.has("--swap-optimizer"):
        times = fl.int("--swap-optimizer-times", minimum=1)
        if times is None:
            out.assume("strategy.swap_times", 16, "MindSpeed's default --swap-optimizer-times")
        else:
            put("strategy.swap_times", times, "--swap-optimizer-times")
    if fl.has("--o2-optimizer"):
        put("strategy.optimizer_state_bytes", 2.0, "--o2-optimizer")
    if fl.has("--o2-gradient"):
        put("strategy.grad_bytes", 2.0, "--o2-gradient")
    if fl.has("--use-fused-swiglu"):
        put("options.fused_gated_act", True, "--use-fused-swiglu")
    elif fl.has("--no-bias-swiglu-fusion"):
        put("options.fused_gated_act", False, "--no-bias-swiglu-fusion")
    for flag, what in (("--swap-attention", "attention activations swapped to the host"),
                       ("--moe-zero-memory", "MoE activation recompute (--moe-zero-memory)"),
                       ("--mla-zero-memory", "MLA activation saving (--mla-zero-memory)"),
                       ("--lora-target-modules", "LoRA fine-tuning (the base model is priced as trained)")):
        if fl.has(flag) and (flag != "--moe-zero-memory" or fl.text(flag) != "disable"):
            out.warn("W-UNMODELLED", f"{flag}: {what} is not modelled; priced as kept")
    if any(name.startswith("--fp8") for name in fl.names()):
        out.warn("W-FP8", "FP8 training flags are parsed and priced as bf16")


def _recompute_flags(fl: FlagSet, out: _Out) -> None:
    """--recompute-granularity/method/num-layers and the MindSpeed partial recompute switches (§4.4, §6.3)."""
    put = _putter(fl, out)
    gran, method = fl.text("--recompute-granularity"), fl.text("--recompute-method")
    n = fl.int("--recompute-num-layers", minimum=0)
    switches: list[str] = []
    counts = None
    for flag, switch, count_flag in (("--recompute-activation-function", "act",
                                      "--recompute-activation-function-num-layers"),
                                     ("--recompute-norm", "layernorm", "--recompute-norm-num-layers"),
                                     ("--recompute-mla-up-proj", "mla_up_proj", None)):
        if fl.has(flag):
            switches.append(switch)
            if count_flag and fl.int(count_flag, minimum=0) is not None:
                counts = fl.int(count_flag, minimum=0) if counts is None else max(counts, fl.int(count_flag) or 0)
    if gran not in (None, "full", "selective"):
        raise ConfigError(f"--recompute-granularity {gran!r}: expected full or selective", path=out.path,
                          key="--recompute-granularity")
    if method not in (None, "uniform", "block"):
        raise ConfigError(f"--recompute-method {method!r}: expected uniform or block", path=out.path,
                          key="--recompute-method")
    if gran == "full" and method == "block":
        value: Any = n if n is not None else 1
        if fl.has("--enable-recompute-layers-per-pp-rank"):
            value = tuple([value] * (fl.int("--pipeline-model-parallel-size") or 1))
        put("strategy.full_counts", value, "--recompute-method block --recompute-num-layers")
        put("strategy.recompute", "selective" if switches and counts is None else "none", "--recompute-method")
    elif gran == "full":
        if method is None:
            out.warn("W-RECOMPUTE", "--recompute-granularity full without --recompute-method: every layer is "
                                    "priced as fully recomputed")
        put("strategy.recompute", "full", "--recompute-granularity full")
        if n is not None and n > 1:
            put("strategy.uniform_group", n, "--recompute-num-layers")
        switches = []
    elif gran == "selective":
        put("strategy.recompute", "selective", "--recompute-granularity selective")
        modules = fl.values("--recompute-modules")
        if modules is not None:
            switches = list(modules)
    elif switches:
        put("strategy.recompute", "selective", "--recompute-activation-function / --recompute-norm")
    else:
        return
    if switches:
        put("strategy.recompute_switches", tuple(switches), "recompute switches")
        unknown = [s for s in switches if s in ("mlp", "moe", "shared_experts")]
        if unknown:
            out.warn("W-UNMODELLED", f"--recompute-modules {' '.join(unknown)}: whole-block recompute is not "
                                     "modelled; priced as kept")
    if counts is not None and switches and gran != "selective":
        put("strategy.sel_counts", counts, "--recompute-activation-function-num-layers")


# ------------------------------------------------------------------------------------------ model.json
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
        raise ConfigError(f"{where}{key} must be an integer ≥ {minimum}; got {value!r}", path=path,
                          key=f"{where}{key}")
    return value


def _jlayers(value: Any, where: str, path: str) -> tuple:
    ok = isinstance(value, list) and value and (
        all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value) or
        all(isinstance(r, list) and r and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in r)
            for r in value))
    if not ok:
        raise ConfigError(f"{where}pipeline_num_layers must be a list of per-stage layer counts (or one list per "
                          f"virtual chunk); got {value!r}", path=path, key=f"{where}pipeline_num_layers")
    return tuple(tuple(r) if isinstance(r, list) else r for r in value)


def model_json_values(data: dict, out: _Out) -> None:
    """One cost model per ``model_id`` object: the text decoder, the vision encoder and its projector."""
    path = out.path
    found = text_module(data)
    if found is None:
        raise ConfigError("no language model in this model.json: expected a text_decoder object (or num_layers and "
                          "hidden_size at the top)", path=path, key="text_decoder")
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
            out.warn("W-UNMODELLED", f"module {'.'.join(mpath)} (model_id {other.get('model_id')!r}) is not priced")
    tmp = data.get("tmp")
    if isinstance(tmp, dict):
        for key, name in _TMP:
            value = _jint(tmp, key, "tmp.", path, 1)
            if value is not None:
                out.put(f"strategy.{name}", value, f"tmp.{key}")
        if "strategy.pp" in out.values:
            out.assume("strategy.micro_batches", out.values["strategy.pp"], "upstream tmp block: m = pp")
        out.put("strategy.sharding", "zero1", "tmp block (upstream: optimizer sharding on)")


def _json_recompute(mod: dict, where: str, out: _Out) -> None:
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
        raise ConfigError(f"{where}recompute_granularity {gran!r}: expected full or selective", path=out.path,
                          key=where + "recompute_granularity")


def _vision(data: dict, out: _Out) -> None:
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
        out.warn("W-UNMODELLED", f"{epath[:-1]} lacks num_layers/hidden_size/num_attention_heads; not priced")
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


def read_model_json(data: dict, text: str, path: str) -> Reading:
    out = _Out(path)
    model_json_values(data, out)
    role = "both" if isinstance(data.get("tmp"), dict) else "model"
    return Reading(MODEL, role, out.values, out.prov, out.warnings, out.assumptions, text=text, path=path)


# ------------------------------------------------------------------------------------------ writing
_CP_FLAG = {"ring": "megatron_cp_algo", "ulysses": "ulysses_cp_algo", "hybrid": "hybrid_cp_algo"}
_ANCHORS = ("--pipeline-model-parallel-size", "--tensor-model-parallel-size", "--micro-batch-size",
            "--global-batch-size", "--seq-length", "--num-layers")
_RECOMPUTE_FLAGS = ("--recompute-granularity", "--recompute-method", "--recompute-num-layers",
                    "--recompute-activation-function", "--recompute-activation-function-num-layers",
                    "--recompute-norm", "--recompute-norm-num-layers", "--recompute-modules",
                    "--enable-recompute-layers-per-pp-rank", "--recompute-mla-up-proj")
_FIXED = ("d_rep", "d_sh", "n_s", "offset", "offset_rule", "mtp_in_offset", "emb_out_in_offset", "master_bytes",
          "n_optimizer_states", "dropout_mask_bytes", "norm_bytes", "loss_bytes", "reduce_bytes", "vocab_emb_dp",
          "vocab_parallel_loss", "recompute_slice_activation")
_MM_ONLY = ("vision_partition", "frozen_modules")


def _refuse(path: str, what: str) -> ConfigError:
    return ConfigError(f"[R-FW] {what}", path=path)


def write(source: Any, parsed: Any, strategy: Any) -> str:
    """New text of ``source`` for ``strategy``: only the flags, variables or keys of changed fields are touched;
    what MindSpeed cannot express is refused with a ConfigError naming R-FW."""
    if source.format == MODEL:
        return write_model_json(source, parsed, strategy)
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


def _desired_flags(path: str, fl: FlagSet, old: Any, new: Any, parsed: Any) -> tuple[dict[str, Any], Any]:
    """Flag -> new value (str), True (present) or None (absent) for every changed field."""
    want: dict[str, Any] = {}
    changed = {f for f in new.field_names() if getattr(old, f) != getattr(new, f)} - {"softmax_bytes",
                                                                                     "rescale_user_layout"}
    mm_pair = any(src.format == MODEL for src in parsed.sources)
    for name in sorted(changed & set(_FIXED)):
        raise _refuse(path, f"MindSpeed launch scripts cannot express strategy.{name} = {getattr(new, name)!r}")
    for name in sorted(changed & set(_MM_ONLY)) + (sorted(changed & {"partition", "recompute"}) if mm_pair else []):
        raise _refuse(path, f"strategy.{name} of a MindSpeed-MM run lives in its model.json (pipeline_num_layers, "
                            "recompute_*, freeze); export rewrites the launch script only — edit the model.json")
    if new.n_acc != 1:
        raise _refuse(path, "MindSpeed runs all G/(b·d) micro-batches in one flush: strategy.n_acc must be 1")
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
        want["--context-parallel-algo"] = _CP_FLAG[new.cp_algo]
    if changed & {"ep", "etp"} or ("tp" in changed and fl.has("--moe-tp-extend-ep")):
        _experts(path, fl, new, want)
    if changed & {"vpp", "schedule", "pp", "noop_layers"}:
        _vpp(path, fl, new, want)
    if "partition" in changed:
        if new.partition is not None and any(isinstance(x, tuple) for x in new.partition):
            raise _refuse(path, "--num-layer-list is one count per stage; MindSpeed cannot combine it with vpp")
        want["--num-layer-list"] = None if new.partition is None else ",".join(map(str, new.partition))
    if "noop_layers" in changed:
        want["--noop-layers"] = ",".join(map(str, new.noop_layers)) or None
        want["--num-layers"] = str(parsed.model.num_layers + len(new.noop_layers))
    if "recompute" in changed:
        want.update(_recompute_wanted(path, new))
    if "sharding" in changed:
        sh = new.sharding
        if sh.mode not in ("none", "zero1") or sh.os is not None or sh.os_e is not None or not sh.span_cp:
            raise _refuse(path, f"MindSpeed shards the optimizer over d·cp with --use-distributed-optimizer (zero1) or "
                                f"not at all; strategy.sharding {sh.mode} with shard sizes is not expressible")
        want["--use-distributed-optimizer"] = True if sh.mode == "zero1" else None
    if changed & {"param_bytes", "compute_bytes"}:
        widths = (new.param_bytes, new.compute_bytes)
        if widths in ((2, 2), (None, None), (2, None), (None, 2)):
            want["--bf16"] = True if not fl.has("--fp16") else None
        elif widths == (4, 4):
            want["--bf16"] = want["--fp16"] = None
        else:
            raise _refuse(path, f"param/compute bytes {widths}: MindSpeed trains in bf16/fp16 (2, 2) or fp32 (4, 4)")
    for name, flag, on in (("grad_bytes", "--o2-gradient", 2), ("optimizer_state_bytes", "--o2-optimizer", 2),
                           ("residual_bytes", "--fp32-residual-connection", 4)):
        if name in changed:
            want[flag] = True if getattr(new, name) == on else None
    nodes = True if new.world_size != old.world_size else None
    return want, nodes


def _experts(path: str, fl: FlagSet, new: Any, want: dict[str, Any]) -> None:
    if fl.has("--moe-tp-extend-ep") and new.etp in (None, 1):
        if new.etp is None or new.ep % new.tp:
            raise _refuse(path, f"with --moe-tp-extend-ep experts spread over ep·tp: ep {new.ep} must be a multiple "
                                f"of tp {new.tp} and etp 1")
        want["--expert-model-parallel-size"] = str(new.ep // new.tp)
        return
    if new.etp == 1 and new.tp > 1 and not fl.has("--expert-tensor-parallel-size"):
        want["--moe-tp-extend-ep"] = True
        if new.ep % new.tp:
            raise _refuse(path, f"etp 1 is written as --moe-tp-extend-ep: ep {new.ep} must be a multiple of tp")
        want["--expert-model-parallel-size"] = str(new.ep // new.tp)
        return
    want["--moe-tp-extend-ep"] = None
    if new.ep > 1 or fl.has("--expert-model-parallel-size"):
        want["--expert-model-parallel-size"] = str(new.ep)
    if new.etp is not None and (new.etp != new.tp or fl.has("--expert-tensor-parallel-size")):
        want["--expert-tensor-parallel-size"] = str(new.etp)


def _vpp(path: str, fl: FlagSet, new: Any, want: dict[str, Any]) -> None:
    if new.schedule == "dualpipev":
        if new.vpp != 2:
            raise _refuse(path, "DualPipeV (--schedules-method dualpipev) runs exactly 2 chunks per stage")
        want.update({"--schedules-method": "dualpipev", "--num-layers-per-virtual-pipeline-stage": None})
        return
    if new.schedule not in (None, "1f1b", "interleaved"):
        raise _refuse(path, f"schedule {new.schedule}: MindSpeed scripts run 1F1B, interleaved (vpp) or dualpipev")
    want["--schedules-method"] = None
    if fl.has("--num-virtual-stages-per-pipeline-rank"):
        want["--num-virtual-stages-per-pipeline-rank"] = str(new.vpp) if new.vpp > 1 else None
        return
    if new.vpp == 1:
        want["--num-layers-per-virtual-pipeline-stage"] = None
        return
    total = fl.int("--num-layers")
    if total is None:
        raise _refuse(path, "vpp is written as --num-layers-per-virtual-pipeline-stage, which needs --num-layers")
    total += len(new.noop_layers) - len(fl.int_list("--noop-layers"))
    if total % (new.pp * new.vpp):
        raise _refuse(path, f"{total} layers do not split into pp {new.pp} × vpp {new.vpp} equal chunks "
                            "(--num-layers-per-virtual-pipeline-stage); add noop layers or change vpp")
    want["--num-layers-per-virtual-pipeline-stage"] = str(total // (new.pp * new.vpp))


def _recompute_wanted(path: str, new: Any) -> dict[str, Any]:
    plan = new.recompute
    want: dict[str, Any] = dict.fromkeys(_RECOMPUTE_FLAGS)
    if plan.ranges or plan.comm_counts not in (None, False):
        raise _refuse(path, "MindSpeed has no per-layer recompute ranges or communication recompute")
    switches = tuple(plan.switches or ())
    full = plan.full_counts
    if isinstance(full, tuple):
        flat = [x for row in full for x in (row if isinstance(row, tuple) else (row,))]
        if len(set(flat)) != 1 or any(isinstance(x, bool) for x in flat):
            raise _refuse(path, f"per-stage recompute counts {full} differ; MindSpeed has one --recompute-num-layers "
                                f"N (the first N layers of every stage/chunk): use one count, e.g. {max(flat)}")
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
            raise _refuse(path, "selective recompute counts per stage are not expressible in MindSpeed")
    elif want["--recompute-granularity"] is not None:
        raise _refuse(path, "MindSpeed cannot combine full recompute with selective modules other than the "
                            "activation function, norm and MLA up-projection")
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


def _value_span(text: str, occ: Any) -> tuple[int, int] | None:
    if not occ.values:
        return None
    if len(occ.values) == 1:
        return literal_span(occ.values[0])
    depth = len(occ.token[0].via) if occ.token else 0
    first, last = local_span(occ.values[0], depth), local_span(occ.values[-1], depth)
    return (first[0], last[1]) if first and last else None


def _removal(text: str, path: str, occ: Any) -> tuple[tuple[int, int], str]:
    flag_span = literal_span(occ.token)
    depth = len(occ.token[0].via) if occ.token else 0
    ends = [local_span(v, depth) for v in occ.values]
    if flag_span is None or any(e is None for e in ends):
        raise _refuse(path, f"{occ.name} (line {occ.line}) is assembled from several pieces; remove it by hand")
    start, end = flag_span[0], max([flag_span[1]] + [e[1] for e in ends if e])
    if not re.fullmatch(r"[^\n\"']*", text[start:end].replace("\\\n", " ")):
        raise _refuse(path, f"{occ.name} (line {occ.line}) is not written as one piece; remove it by hand")
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
    for name in (*related, *_ANCHORS, *fl.flags):
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
    raise _refuse(path, f"no place to add {new.split()[0]}: the launch command has no literal flags")


def _set_nodes(text: str, path: str, world: int, old_world: int) -> str:
    script = Script.parse(text, path)
    fl = launch_flags(script)
    per_node = _first_int(script, ("NPUS_PER_NODE", "GPUS_PER_NODE", "NPROC_PER_NODE"))
    found = fl.launcher_value(("--nproc_per_node", "--nproc-per-node"))
    if per_node is None and found and found[0].isdigit():
        per_node = int(found[0])
    if not per_node or world % per_node:
        raise _refuse(path, f"{world} devices are not whole nodes of {per_node or '?'}: keep the device count "
                            f"{old_world} (change dp only with tp, pp or cp)")
    editor = Editor(text, path)
    for name in ("NNODES", "NUM_NODES"):
        record = script.assignments.get(name)
        if record and literal_span(record.value):
            editor.replace(literal_span(record.value), str(world // per_node))  # type: ignore[arg-type]
            return editor.apply()
    occ = fl.launcher.get("--nnodes")
    if occ and occ.values and literal_span(occ.values[0]):
        editor.replace(literal_span(occ.values[0]), str(world // per_node))  # type: ignore[arg-type]
        return editor.apply()
    raise _refuse(path, f"the node count is not a literal in the script; cannot change the devices to {world}")


def _settle(text: str, path: str, strategy: Any) -> str:
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
            raise _refuse(path, f"{flag} (line {occ.line}) is computed in a way the estimator cannot rewrite")
        text = _solve(text, path, strategy, flag, goal, record)
    return text


def _pins(text: str, path: str, strategy: Any) -> dict[str, str]:
    script = Script.parse(text, path)
    return {} if not isinstance(_world(script, launch_flags(script)), str) else {"WORLD_SIZE": str(
        strategy.world_size)}


def _solve(text: str, path: str, strategy: Any, flag: str, goal: int, record: Any) -> str:
    pins = _pins(text, path, strategy)
    base = Script.parse(text, path, pins)

    def flags_with(name: str, value: int) -> dict[str, str]:
        fl = launch_flags(Script.parse(text, path, {**pins, name: str(value)}))
        return {f: fl.raw(f) for f in (*_ANCHORS, "--num-layers-per-virtual-pipeline-stage") if fl.has(f)}

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
    from ..strategy import RecomputePlan

    if isinstance(value, RecomputePlan):
        mode = "none" if value.full_counts is not None and value.default_mode == "full" else value.default_mode
        return value.replace(default_mode=mode, uniform_group=value.uniform_group if value.uniform_group > 1 else 0)
    return value


def _verify(text: str, source: Any, parsed: Any, strategy: Any) -> None:
    """Re-read the new text: what it states must be the requested strategy."""
    from ..fields import REGISTRY, coerce
    from ..parsed import build_plan

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
        raise _refuse(source.path, f"the launch script cannot state this strategy: {shown}")


# ------------------------------------------------------------------------------------------ model.json writing
def _json_members(text: str) -> dict[tuple[str, ...], tuple[int, int, int]]:
    """(key path) -> (member start, value start, value end) for every object member of a JSON text."""
    out: dict[tuple[str, ...], tuple[int, int, int]] = {}
    ws = re.compile(r"\s*")
    string = re.compile(r'"(?:[^"\\]|\\.)*"')

    def value(i: int, path: tuple[str, ...]) -> int:
        i = ws.match(text, i).end()  # type: ignore[union-attr]
        c = text[i]
        if c == "{":
            i = ws.match(text, i + 1).end()  # type: ignore[union-attr]
            while text[i] != "}":
                m = string.match(text, i)
                assert m is not None
                key = json.loads(m.group())
                colon = ws.match(text, m.end()).end()  # type: ignore[union-attr]
                start = ws.match(text, colon + 1).end()  # type: ignore[union-attr]
                end = value(start, (*path, key))
                out[(*path, key)] = (i, start, end)
                i = ws.match(text, end).end()  # type: ignore[union-attr]
                if text[i] == ",":
                    i = ws.match(text, i + 1).end()  # type: ignore[union-attr]
            return i + 1
        if c == "[":
            i = ws.match(text, i + 1).end()  # type: ignore[union-attr]
            while text[i] != "]":
                i = ws.match(text, value(i, path)).end()  # type: ignore[union-attr]
                if text[i] == ",":
                    i += 1
                i = ws.match(text, i).end()  # type: ignore[union-attr]
            return i + 1
        if c == '"':
            return string.match(text, i).end()  # type: ignore[union-attr]
        return re.compile(r"[^\s,}\]]+").match(text, i).end()  # type: ignore[union-attr]

    value(0, ())
    return out


def _even_split(total: int, slots: int) -> list[int]:
    """Layers per slot without an explicit list: equal shares, the remainder on the middle slots (D27)."""
    base, rem = divmod(total, slots)
    counts = [base] * slots
    order = [*range(slots - 2, 0, -1), slots - 1, 0] if slots > 1 else [0]
    for q in order[:rem]:
        counts[q] += 1
    return counts


def write_model_json(source: Any, parsed: Any, strategy: Any) -> str:
    """pipeline_num_layers (text and vision) and recompute_* of the text decoder, edited in place."""
    old = parsed.baseline_strategy
    text, path = source.text, source.path
    data = json.loads(text)
    found = text_module(data)
    if found is None:
        raise _refuse(path, "no text_decoder in this model.json")
    tpath, mod = found
    members = _json_members(text)
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
            split = _even_split(int(mod.get("num_layers") or parsed.model.num_layers) + len(strategy.noop_layers),
                                p * vp)
            layers = split if vp == 1 else [split[j * p:(j + 1) * p] for j in range(vp)]
        if layers != mod.get("pipeline_num_layers"):
            edits["pipeline_num_layers"] = layers
    if strategy.recompute != old.recompute:
        plan = strategy.recompute
        want = _recompute_wanted(path, strategy)
        if plan.default_mode == "selective" or plan.switches:
            raise _refuse(path, "model.json states full recompute only (recompute_granularity/method/num_layers)")
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
        _json_edit(text, members, editor, key_path, value)
    return editor.apply()


def _json_edit(text: str, members: dict, editor: Editor, key_path: tuple[str, ...], value: Any) -> None:
    rendered = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if key_path in members:
        start, vstart, vend = members[key_path]
        if value is None:
            before = text.rfind(",", 0, start)
            after = re.compile(r"\s*,").match(text, vend)
            span = (before, vend) if after is None else (start, after.end())
            editor.replace(span, "")
            return
        editor.replace((vstart, vend), rendered)
        return
    if value is None:
        return
    siblings = [v for k, v in members.items() if k[:-1] == key_path[:-1]]
    if not siblings:
        raise ConfigError("[R-FW] cannot add a key to an empty object", key=".".join(key_path))
    last = max(siblings, key=lambda v: v[2])
    line_start = text.rfind("\n", 0, last[0]) + 1
    indent = text[line_start:last[0]] if not text[line_start:last[0]].strip() else " "
    editor.replace((last[2], last[2]), f",\n{indent}{json.dumps(key_path[-1])}: {rendered}")


__all__ = ["FORMAT", "detect", "read", "write"]
