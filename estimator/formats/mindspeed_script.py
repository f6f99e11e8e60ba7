"""Reading a MindSpeed-LLM / MindSpeed-MM launch script (``pretrain_*.sh``/``finetune_*.sh``, docs/model.md#frameworks).

The script is evaluated by ``shell`` (nothing is executed) and its launch command's flags are read by
``launch_command``; the device count N comes from the launcher flags or the node variables (or ``--devices``
when the script computes it). Shape flags make the script a model source too (role ``both``); Megatron's
defaults are stated as assumptions only for scripts that give a shape.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..device.knobs import launch_env
from ..errors import ConfigError
from .feature_flags import read_feature_flags
from .known_keys import catalogue, unknown_names
from .launch_command import FlagSet, launch_flags
from .mindspeed_flags import CP_ALGOS, MICRO_BATCH_VARS, NODE_VARS, PER_NODE_VARS, SCRIPT, TOKENIZER_VOCAB
from .shell import Script, problem_of, text_of
from .support import Collector, Reading

# put(key, value, flag): a value read from ``flag``, with the flag, its variable and line as provenance
Put = Callable[[str, Any, str], None]


def resolve_script(text: str, path: str, devices: int | None) -> tuple[Script, FlagSet, int, str, list[str]]:
    """The script evaluated, its launcher flags, the device count N and how N was found, and notes."""
    script = Script.parse(text, path)
    flags = launch_flags(script)
    notes: list[str] = []
    found = device_count(script, flags)
    if isinstance(found, str) and devices:
        pins = {"WORLD_SIZE": str(devices)}
        per_node = first_int(script, PER_NODE_VARS)
        if per_node and devices % per_node == 0:
            pins.update({name: str(devices // per_node) for name in NODE_VARS})
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


def first_int(script: Script, names: tuple[str, ...]) -> int | None:
    """The first of ``names`` the script sets to a plain integer."""
    for name in names:
        value = script.lookup(name)
        if value is not None and not problem_of(value) and text_of(value).strip().isdigit():
            return int(text_of(value).strip())
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
            return int(a[0]) * int(b[0]), how
    per_node = first_int(script, PER_NODE_VARS)
    nodes = first_int(script, NODE_VARS)
    if per_node and nodes:
        return per_node * nodes, f"NPUS_PER_NODE {per_node} × NNODES {nodes}"
    world = first_int(script, ("WORLD_SIZE",))
    if world:
        return world, "WORLD_SIZE"
    for name in ("NNODES", "NUM_NODES", "WORLD_SIZE", "NPUS_PER_NODE"):
        value = script.lookup(name)
        if value is not None and problem_of(value):
            problems.append(problem_of(value) or "")
    return problems[0] if problems else "the script sets neither NPUS_PER_NODE × NNODES nor --nproc_per_node/--nnodes"


def read_script(text: str, path: str, devices: int | None) -> Reading:
    script, fl, world, how, notes = resolve_script(text, path, devices)
    out = Collector(path)
    for note in notes:
        out.warn("W-DEVICES", note)
    for note in script.warnings + fl.notes:
        out.warn("W-SHELL", note)
    flags = catalogue("launch_flags")
    for name, occurrences in fl.flags.items():
        out.warnings.extend(unknown_names(f"{path}:{occurrences[-1].line}", "", [name], flags.known(""), cat=flags))
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
    _device_env(script, out, path)
    role = "both" if any(k.startswith("model.") for k in out.values) else "strategy"
    return out.reading(SCRIPT, role, text, path)


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


def _putter(fl: FlagSet, out: Collector) -> Put:
    """``put(key, value, flag)``: a value read from ``flag``, with the flag, its variable and line as provenance."""

    def put(key: str, value: Any, flag: str) -> None:
        raw = fl.raw(flag) if fl.has(flag) else value
        out.put(key, value, fl.where(flag), raw=raw if raw != "" else value)

    return put


def _model_flags(fl: FlagSet, out: Collector, shaped: bool, path: str) -> None:
    """Shape flags (docs/model.md#frameworks); Megatron defaults are stated only for scripts that give a shape."""
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


def _vocab(fl: FlagSet, out: Collector, put: Put, shaped: bool) -> None:
    padded = fl.int("--padded-vocab-size")
    if padded is not None:
        put("model.vocab_size", padded, "--padded-vocab-size")
        out.derive("model.make_vocab_divisible_by", 1, "--padded-vocab-size is used as is")
        return
    vocab = fl.int("--vocab-size")
    tokenizer = fl.text("--tokenizer-type")
    if vocab is None and tokenizer in TOKENIZER_VOCAB:
        vocab = TOKENIZER_VOCAB[tokenizer]
        out.assume("model.vocab_size", vocab, f"--tokenizer-type {tokenizer} has {vocab} tokens")
    elif vocab is not None:
        put("model.vocab_size", vocab, "--vocab-size")
    if vocab is not None and (fl.has("--make-vocab-size-divisible-by") or shaped):
        divisible = fl.int("--make-vocab-size-divisible-by")
        if divisible is not None:
            put("model.make_vocab_divisible_by", max(1, divisible), "--make-vocab-size-divisible-by")
        else:
            out.assume("model.make_vocab_divisible_by", 128, "Megatron pads the vocabulary to a multiple of 128·t")


def _strategy_flags(fl: FlagSet, out: Collector, world: int, how: str) -> None:
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
    for name in MICRO_BATCH_VARS:
        _stated(fl, out, name, g // (b * d), "micro-batches per step G/(b·d)")
    out.derive("strategy.n_acc", 1, "MindSpeed: one flush of m micro-batches per step")
    seq = fl.int("--seq-length", minimum=1)
    if seq is not None:
        put("strategy.seq_length", seq, "--seq-length")
    put("strategy.sequence_parallel", fl.has("--sequence-parallel"), "--sequence-parallel")
    algo = fl.text("--context-parallel-algo")
    if algo is not None and algo not in CP_ALGOS:
        raise ConfigError(f"unknown --context-parallel-algo {algo!r}; expected one of {', '.join(CP_ALGOS)}",
                          path=path, key="--context-parallel-algo")
    if algo is not None:
        put("strategy.cp_algo", CP_ALGOS[algo], "--context-parallel-algo")
        if "adaptive" in algo:
            out.warn("W-UNMODELLED", f"{algo} is priced as {CP_ALGOS[algo]} context parallelism")
    elif cp > 1:
        out.assume("strategy.cp_algo", "ulysses", "MindSpeed's default --context-parallel-algo ulysses_cp_algo")
    if fl.int("--ulysses-degree-in-cp") is not None:
        put("strategy.ulysses_degree", fl.int("--ulysses-degree-in-cp", minimum=1), "--ulysses-degree-in-cp")
    _pipeline(fl, out, put, p)
    _switches(fl, out, put, seq, b, t, cp)


def _stated(fl: FlagSet, out: Collector, name: str, derived: int, what: str) -> None:
    value = fl.script.lookup(name)
    if value is None or problem_of(value) or not text_of(value).strip().isdigit():
        return
    if int(text_of(value)) != derived:
        out.warn("W-STATED", f"{name}={text_of(value).strip()} in the script, but the {what} is {derived}; "
                             "the flags win")


def _pipeline(fl: FlagSet, out: Collector, put: Put, p: int) -> None:
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


def _switches(fl: FlagSet, out: Collector, put: Put, seq: int | None, b: int, t: int, cp: int) -> None:
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
    read_feature_flags(fl, out, put)
    for flag, what in (("--swap-attention", "attention activations swapped to the host"),
                       ("--moe-zero-memory", "MoE activation recompute (--moe-zero-memory)"),
                       ("--mla-zero-memory", "MLA activation saving (--mla-zero-memory)")):
        if fl.has(flag) and (flag != "--moe-zero-memory" or fl.text(flag) != "disable"):
            out.warn("W-UNMODELLED", f"{flag}: {what} is not modelled; priced as kept")


def _recompute_flags(fl: FlagSet, out: Collector) -> None:
    """--recompute-granularity/method/num-layers and the MindSpeed partial recompute switches
    (docs/model.md#recompute-assignment, docs/model.md#selective-recompute)."""
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
