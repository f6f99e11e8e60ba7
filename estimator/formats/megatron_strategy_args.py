"""The strategy a Megatron-LM / MindSpeed argument set states (docs/model.md#frameworks): parallel degrees, batch,
context parallelism, the pipeline split (virtual stages, uneven first/last stages, the layout string, embedding and
loss counted as layers), precision, optimizer sharding (distributed optimizer and its instances, Megatron-FSDP),
attention kernels and recompute. Megatron's defaults (NVIDIA/Megatron-LM @ d98e8a6) fill what is left out and are
reported; settings the estimator does not price yet are named in a warning, never dropped silently."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..messages import msg
from ..strategy import MOE_ZERO_MEMORY
from .feature_flags import FEATURE_FLAGS as ISSUE11_FLAGS
from .feature_flags import read_feature_flags
from .flag_source import FlagQueries
from .megatron_model_args import MODEL_FLAGS, Put, putter
from .megatron_pipeline import PatternError, account_counts, layout_rows, parse_layout, uneven_counts
from .support import Collector, check_micro_batches

# MindSpeed --context-parallel-algo value -> cp_algo (the adaptive variants are priced as their base algorithm) …
CP_ALGOS = {"megatron_cp_algo": "ring", "ulysses_cp_algo": "ulysses", "hybrid_cp_algo": "hybrid",
            "adaptive_cp_algo": "ring", "hybrid_adaptive_cp_algo": "hybrid", "kvallgather_cp_algo": "allgather"}
# … and Megatron's --cp-comm-type
CP_COMM_TYPES = {"p2p": "ring", "a2a": "ulysses", "a2a+p2p": "hybrid", "allgather": "allgather"}
# --data-parallel-sharding-strategy of Megatron-FSDP -> sharding mode
FSDP_STRATEGIES = {"no_shard": "none", "optim": "zero1", "optim_grads": "zero2", "optim_grads_params": "zero3"}
RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
# settings read that have no Strategy field yet: (flags, what is not priced)
NOT_PRICED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("--overlap-p2p-communication", "--moe-shared-expert-overlap"), "this communication overlap in the step time"),
    (("--cpu-offloading-weights",), "weight offloading to host memory (priced as kept on the device)"),
)
# --offload-modules of Megatron's fine-grained activation offloading -> Strategy.offload_activations groups
OFFLOAD_MODULES = {"attn_norm": "input_norm", "qkv_linear": "self_attention", "core_attn": "self_attention",
                   "attn_proj": "self_attention", "gdp_qkv": "self_attention", "mlp_norm": "post_attention_norm",
                   "expert_fc1": "mlp", "moe_act": "mlp", "fused_group_mlp": "mlp"}
FEATURE_FLAGS = frozenset({
    *ISSUE11_FLAGS, "--cpu-offloading", "--cpu-offloading-num-layers", "--fine-grained-activation-offloading",
    "--offload-modules", "--swap-attention", "--swap-modules"})
STRATEGY_FLAGS = frozenset({
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
    "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--moe-tp-extend-ep", "--micro-batch-size",
    "--global-batch-size", "--seq-length", "--sequence-parallel", "--context-parallel-algo", "--ulysses-degree-in-cp",
    "--cp-comm-type", "--hierarchical-context-parallel-sizes", "--num-layer-list",
    "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank", "--schedules-method",
    "--microbatch-group-size-per-virtual-pipeline-stage", "--decoder-first-pipeline-num-layers",
    "--decoder-last-pipeline-num-layers", "--pipeline-model-parallel-layout",
    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split", "--bf16", "--fp16",
    "--fp32-residual-connection", "--no-masked-softmax-fusion", "--attention-softmax-in-fp32", "--use-flash-attn",
    "--attention-backend", "--transformer-impl", "--use-distributed-optimizer",
    "--num-distributed-optimizer-instances", "--use-megatron-fsdp", "--use-custom-fsdp",
    "--data-parallel-sharding-strategy", "--optimizer", "--sgd-momentum", "--accumulate-allreduce-grads-in-fp32",
    "--use-torch-fsdp2", "--megatron-fsdp-main-grads-dtype", "--moe-grouped-gemm", "--reuse-fp32-param",
    "--swap-optimizer", "--swap-optimizer-times", "--overlap-moe-expert-parallel-comm", "--o2-optimizer",
    "--o2-gradient", "--use-fused-swiglu", "--no-bias-swiglu-fusion", "--swap-attention", "--moe-zero-memory",
    "--moe-zero-memory-num-layers", "--mla-zero-memory", "--lora-target-modules", "--moe-token-dispatcher-type",
    "--grad-reduce-in-bf16", "--use-precision-aware-optimizer", "--exp-avg-dtype", "--exp-avg-sq-dtype",
    "--main-params-dtype", "--main-grads-dtype", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--recompute-modules", "--recompute-activation-function",
    "--recompute-activation-function-num-layers", "--recompute-norm", "--recompute-norm-num-layers",
    "--recompute-mla-up-proj",
    "--enable-recompute-layers-per-pp-rank", "--distribute-saved-activations", *FEATURE_FLAGS,
    *(f for flags, _ in NOT_PRICED for f in flags)})
# every flag the Megatron readers read
READ_FLAGS = MODEL_FLAGS | STRATEGY_FLAGS
_DTYPE_BYTES = {"fp32": 4.0, "float32": 4.0, "bf16": 2.0, "bfloat16": 2.0, "fp16": 2.0, "float16": 2.0,
                "fp8": 1.0, "uint8": 1.0}


def read_strategy(fl: FlagQueries, out: Collector, world: int, how: str, dialect: str) -> None:
    put = putter(fl, out)
    deg = {}
    for flag, key in (("--tensor-model-parallel-size", "tp"), ("--pipeline-model-parallel-size", "pp"),
                      ("--context-parallel-size", "cp"), ("--expert-model-parallel-size", "ep")):
        value = fl.int(flag, minimum=1)
        deg[key] = value if value is not None else 1
        if value is not None:
            put(f"strategy.{key}", value, flag)
    t, p, cp = deg["tp"], deg["pp"], deg["cp"]
    if world < 1:  # a device count of 0 would divide every degree product and leave dp 0
        raise ConfigError(msg("megatron_strategy_args.devices-at-least-one", world=world, how=how),
                          path=out.path, key=how)
    if world % (t * p * cp):
        raise ConfigError(msg("megatron_strategy_args.devices-divisible-tp", world=world, how=how, t=t, p=p, cp=cp),
                          path=out.path, key="--tensor-model-parallel-size")
    d = world // (t * p * cp)
    out.derive("strategy.dp", d, f"N/(tp·pp·cp) = {world}/{t * p * cp} ({how})")
    if fl.has("--moe-tp-extend-ep"):
        out.put("strategy.ep", deg["ep"] * t, "--expert-model-parallel-size × tp (--moe-tp-extend-ep)",
                raw=f"{deg['ep']} × {t}")
        out.put("strategy.etp", 1, "--moe-tp-extend-ep")
    elif fl.int("--expert-tensor-parallel-size", minimum=1) is not None:
        put("strategy.etp", fl.int("--expert-tensor-parallel-size"), "--expert-tensor-parallel-size")
    _batch(fl, out, put, d)
    _context_parallel(fl, out, put, cp, dialect)
    _pipeline(fl, out, put, p)
    _precision(fl, out, put, t, cp, dialect)
    _sharding(fl, out, put, d, cp)
    _optimizer(fl, out, put)
    _recompute(fl, out, put, p)
    _features(fl, out, put)
    _not_priced(fl, out, dialect)


def _features(fl: FlagQueries, out: Collector, put: Put) -> None:
    """Issue 11's Strategy fields: FP8, LoRA/QLoRA, loss fusion and TP/DP communication overlap
    (``feature_flags``), activation offload."""
    read_feature_flags(fl, out, put)
    groups: list[str] = []
    if fl.has("--cpu-offloading"):
        groups.append("layer")
        layers = fl.int("--cpu-offloading-num-layers", minimum=0)
        if layers is not None:
            put("strategy.offload_counts", layers, "--cpu-offloading-num-layers")
    if fl.has("--fine-grained-activation-offloading"):
        modules = [m for v in fl.values("--offload-modules") or () for m in v.replace(",", " ").split()]
        unknown = [m for m in modules if m not in OFFLOAD_MODULES]
        if unknown:
            raise fl.error("--offload-modules", msg("megatron_strategy_args.offload-modules-megatron",
                                                    unknown=' '.join(unknown),
                                                    OFFLOAD_MODULES=', '.join(OFFLOAD_MODULES)))
        groups += [OFFLOAD_MODULES[m] for m in modules]
    if fl.has("--swap-attention"):
        modules = (fl.text("--swap-modules") or "input_norm,self_attention,post_attention_norm").split(",")
        groups += [m.strip() for m in modules if m.strip()]
    if groups:
        flag = next(f for f in ("--cpu-offloading", "--fine-grained-activation-offloading", "--swap-attention")
                    if fl.has(f))
        put("strategy.offload_activations", tuple(dict.fromkeys(groups)), flag)


def _batch(fl: FlagQueries, out: Collector, put: Put, d: int) -> None:
    b = fl.int("--micro-batch-size", minimum=1)
    if b is None:
        b = 1
        out.assume("strategy.micro_batch_size", 1, msg("megatron_strategy_args.micro-batch-size"))
    else:
        put("strategy.micro_batch_size", b, "--micro-batch-size")
    g = fl.int("--global-batch-size", minimum=1)
    if g is None:
        out.assume("strategy.micro_batches", 1, msg("megatron_strategy_args.global-batch-size"))
    elif g % (b * d):
        raise fl.error("--global-batch-size", msg("megatron_strategy_args.global-batch-size-2", g=g, b=b, d=d,
                                                  value=g / (b * d)))
    else:
        m = check_micro_batches(g // (b * d), out.path, "--global-batch-size")
        out.derive("strategy.micro_batches", m, f"G/(b·d) = {g}/({b}·{d}) (--global-batch-size)")
    out.derive("strategy.n_acc", 1, "Megatron: one flush of m micro-batches per step")
    seq = fl.int("--seq-length", minimum=1)
    if seq is not None:
        put("strategy.seq_length", seq, "--seq-length")
    put("strategy.sequence_parallel", fl.has("--sequence-parallel"), "--sequence-parallel")


def _context_parallel(fl: FlagQueries, out: Collector, put: Put, cp: int, dialect: str) -> None:
    algo = fl.text("--context-parallel-algo")
    if algo is not None:
        if algo not in CP_ALGOS:
            raise fl.error("--context-parallel-algo", msg("megatron_strategy_args.unknown-context-parallel", algo=algo,
                                                          CP_ALGOS=', '.join(CP_ALGOS)))
        put("strategy.cp_algo", CP_ALGOS[algo], "--context-parallel-algo")
        if "adaptive" in algo:
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.priced-context-parallelism", algo=algo, CP_ALGOS=CP_ALGOS[algo]))
    comm = fl.values("--cp-comm-type")
    if comm is not None:
        kinds = set(comm)
        unknown = kinds - set(CP_COMM_TYPES)
        if unknown or not kinds:
            raise fl.error("--cp-comm-type", msg("megatron_strategy_args.cp-comm-type", comm=' '.join(comm),
                                                 CP_COMM_TYPES=', '.join(CP_COMM_TYPES)))
        if len(kinds) > 1:
            out.warn("W-UNMODELLED", msg("W-UNMODELLED.cp-comm-type", comm=' '.join(comm), comm2=comm[0]))
        put("strategy.cp_algo", CP_COMM_TYPES[comm[0]], "--cp-comm-type")
        if comm[0] == "a2a+p2p":
            sizes = fl.int_list("--hierarchical-context-parallel-sizes")
            if len(sizes) < 2:
                raise fl.error("--cp-comm-type", msg("megatron_strategy_args.cp-comm-type-2"))
            put("strategy.ulysses_degree", sizes[0], "--hierarchical-context-parallel-sizes")
    elif algo is None and cp > 1:
        if dialect == "mindspeed":
            out.assume("strategy.cp_algo", "ulysses", msg("megatron_strategy_args.mindspeed-s-default-2"))
        else:
            out.assume("strategy.cp_algo", "ring", msg("megatron_strategy_args.megatron-s-default"))
    if fl.int("--ulysses-degree-in-cp") is not None:
        put("strategy.ulysses_degree", fl.int("--ulysses-degree-in-cp", minimum=1), "--ulysses-degree-in-cp")


def _pipeline(fl: FlagQueries, out: Collector, put: Put, p: int) -> None:
    layers = fl.int_list("--num-layer-list")
    if layers:
        put("strategy.partition", tuple(layers), "--num-layer-list")
    total = fl.int("--num-layers")
    per_chunk = fl.int("--num-layers-per-virtual-pipeline-stage", minimum=1)
    chunks = fl.int("--num-virtual-stages-per-pipeline-rank", minimum=1)
    layout = fl.text("--pipeline-model-parallel-layout")
    first = fl.int("--decoder-first-pipeline-num-layers", minimum=0)
    last = fl.int("--decoder-last-pipeline-num-layers", minimum=0)
    emb = fl.has("--account-for-embedding-in-pipeline-split")
    loss = fl.has("--account-for-loss-in-pipeline-split")
    given = [f for f in ("--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
                         "--pipeline-model-parallel-layout") if fl.has(f)]
    if len(given) > 1:
        raise fl.error(given[1], msg("megatron_strategy_args.megatron-accepts-only", given=', '.join(given)))
    method = fl.text("--schedules-method")
    if method is not None and method != "dualpipev":
        raise fl.error("--schedules-method", msg("megatron_strategy_args.schedules-method-known", method=method))
    vp = 1
    if method == "dualpipev":
        put("strategy.schedule", "dualpipev", "--schedules-method")
        out.derive("strategy.vpp", 2, "DualPipeV runs two chunks per stage")
    elif layout is not None:
        vp = _layout(fl, out, layout, p, total)
    elif per_chunk is not None:
        if total is None:
            raise fl.error("--num-layers-per-virtual-pipeline-stage", msg("megatron_strategy_args.num-layers-per"))
        positions = total + int(emb) + int(loss)
        if positions % (p * per_chunk):
            raise fl.error("--num-layers-per-virtual-pipeline-stage",
                           msg("megatron_strategy_args.vpp-layers.extra", total=total, extra=int(emb) + int(loss),
                               p=p, per_chunk=per_chunk) if emb or loss else
                           msg("megatron_strategy_args.vpp-layers", total=total, p=p, per_chunk=per_chunk))
        vp = positions // (p * per_chunk)
        out.put("strategy.vpp", vp, fl.where("--num-layers-per-virtual-pipeline-stage"),
                raw=f"{positions}/({p}·{per_chunk})")
    elif chunks is not None:
        vp = chunks
        put("strategy.vpp", chunks, "--num-virtual-stages-per-pipeline-rank")
    group = fl.int("--microbatch-group-size-per-virtual-pipeline-stage", minimum=1)
    if group is not None:
        put("strategy.vpp_group", group, "--microbatch-group-size-per-virtual-pipeline-stage")
    if layout is None and total is not None and (first is not None or last is not None or emb or loss):
        _uneven(fl, out, total, p, vp, first, last, emb, loss)


def _uneven(fl: FlagQueries, out: Collector, total: int, p: int, vp: int, first: int | None, last: int | None,
            emb: bool, loss: bool) -> None:
    """``--decoder-first/last-pipeline-num-layers`` or embedding/loss counted as layers: the per-chunk layers."""
    noop = len(fl.int_list("--noop-layers"))
    flag = "--decoder-first-pipeline-num-layers" if first is not None else \
        "--decoder-last-pipeline-num-layers" if last is not None else \
        "--account-for-embedding-in-pipeline-split" if emb else "--account-for-loss-in-pipeline-split"
    try:
        if first is not None or last is not None:
            if emb or loss:
                raise PatternError("Megatron does not combine uneven first/last stages with the embedding or loss "
                                   "counted as a layer")
            rows = uneven_counts(total, p, vp, first, last)
        elif emb and loss:
            account_counts(total, p, vp, emb, loss)  # checks the split
            out.put("strategy.emb_out_in_offset", True, fl.where(flag), raw=True)
            return
        else:
            rows = account_counts(total, p, vp, emb, loss)
    except PatternError as exc:
        raise fl.error(flag, msg("megatron_strategy_args.text", flag=flag, exc=exc)) from None
    if noop:
        raise fl.error(flag, msg("megatron_strategy_args.together-noop-layers", flag=flag))
    partition: Any = tuple(tuple(r) for r in rows) if vp > 1 else tuple(rows[0])
    out.put("strategy.partition", partition, fl.where(flag), raw=fl.raw(flag) or True)


def _layout(fl: FlagQueries, out: Collector, text: str, p: int, total: int | None) -> int:
    """``--pipeline-model-parallel-layout``: the per-chunk positions, with the embedding, loss and MTP layers
    placed where the string puts them (all counted as positions, MTP before the loss)."""
    flag = "--pipeline-model-parallel-layout"
    try:
        stages = parse_layout(text)
        rows = layout_rows(stages, p)
    except PatternError as exc:
        raise fl.error(flag, msg("megatron_strategy_args.text-2", flag=flag, text=text, exc=exc)) from None
    flat = "".join(stages)
    if not (stages[0].startswith("E") and stages[-1].endswith("L") and flat.count("E") == 1 and
            flat.count("L") == 1):
        raise fl.error(flag, msg("megatron_strategy_args.megatron-needs-exactly", flag=flag, text=text))
    decoders = flat.count("t")
    if total is not None and decoders != total - len(fl.int_list("--noop-layers")) and decoders != total:
        raise fl.error(flag, msg("megatron_strategy_args.places-decoder-layers", flag=flag, decoders=decoders,
                                 total=total))
    mtp = flat.count("m")
    if mtp != (fl.int("--mtp-num-layers") or 0):
        raise fl.error(flag, msg("megatron_strategy_args.places-mtp-layers", flag=flag, mtp=mtp,
                                 value=fl.int('--mtp-num-layers') or 0))
    if "m" in flat and ("t" in flat[flat.index("m"):] or flat.rindex("m") > flat.index("L")):
        raise fl.error(flag, msg("megatron_strategy_args.mtp-layers-come", flag=flag, text=text))
    vp = len(rows)
    # the embedding with layers of the first stage and the loss (and MTP) with layers of the last is the usual
    # placement, stated by layer counts alone; else every E, t, m, L is a position of the split
    order = [rows[q // p][q % p] for q in range(p * vp)]
    usual = all("t" in stage for stage in order) and "m" not in "".join(order[:-1])
    counted = (lambda s: s.count("t")) if usual else len
    out.put("strategy.partition", tuple(tuple(counted(s) for s in row) for row in rows) if vp > 1 else
            tuple(counted(s) for s in rows[0]), fl.where(flag), raw=text)
    if not usual:
        out.put("strategy.emb_out_in_offset", True, fl.where(flag), raw=text)
        if mtp:
            out.put("strategy.mtp_in_offset", True, fl.where(flag), raw=text)
    if vp > 1:
        out.put("strategy.vpp", vp, fl.where(flag), raw=f"{len(stages)} stages / pp {p}")
    return vp


def _precision(fl: FlagQueries, out: Collector, put: Put, t: int, cp: int, dialect: str) -> None:
    if fl.has("--bf16") or fl.has("--fp16"):
        flag = "--bf16" if fl.has("--bf16") else "--fp16"
        put("strategy.param_bytes", 2.0, flag)
        put("strategy.compute_bytes", 2.0, flag)
    elif fl.has("--num-layers") or fl.has("--hidden-size"):
        for key in ("strategy.param_bytes", "strategy.compute_bytes"):
            out.assume(key, 4.0, msg("megatron_strategy_args.neither-bf16-nor"))
        out.assume("strategy.master_bytes", 0.0, msg("deepspeed.fp32-training-keeps"))
    if fl.has("--fp32-residual-connection"):
        put("strategy.residual_bytes", 4.0, "--fp32-residual-connection")
    if fl.has("--grad-reduce-in-bf16"):
        put("strategy.grad_bytes", 2.0, "--grad-reduce-in-bf16")
    elif fl.has("--accumulate-allreduce-grads-in-fp32"):
        put("strategy.grad_bytes", 4.0, "--accumulate-allreduce-grads-in-fp32")
    elif fl.has("--fp16"):
        # DDP's grad_dtype is fp32 only with grad_reduce_in_fp32 (= --accumulate-allreduce-grads-in-fp32), which
        # Megatron turns on for --bf16 alone: fp16 gradients are accumulated and reduced in fp16
        put("strategy.grad_bytes", 2.0, "--fp16")
    if fl.has("--use-precision-aware-optimizer"):
        _precision_aware(fl, out, put)
    elif any(fl.has(f) for f in ("--exp-avg-dtype", "--exp-avg-sq-dtype", "--main-params-dtype",
                                 "--main-grads-dtype")):
        out.warn("W-FLAG", msg("W-FLAG.exp-avg-dtype"))
    _attention_kernel(fl, out, put, t, cp, dialect)
    if fl.has("--transformer-impl"):  # Transformer Engine's layers hold its cuBLASLt workspaces [D-WORKSPACE]
        impl = (fl.text("--transformer-impl") or "").lower()
        out.put("options.transformer_engine", impl != "local", fl.where("--transformer-impl"), raw=impl)
    if fl.has("--moe-grouped-gemm"):
        put("strategy.grouped_gemm", True, "--moe-grouped-gemm")


def _precision_aware(fl: FlagQueries, out: Collector, put: Put) -> None:
    """Megatron's precision-aware optimizer: moments, master weights and main gradients in the named dtypes."""
    def width(flag: str) -> float:
        value = (fl.text(flag) or "fp32").lower().replace("torch.", "")
        if value not in _DTYPE_BYTES:
            raise fl.error(flag, msg("megatron_strategy_args.expected-fp32-bf16", flag=flag, value=value))
        return _DTYPE_BYTES[value]

    moments = (width("--exp-avg-dtype"), width("--exp-avg-sq-dtype"))
    if moments != (4.0, 4.0):
        out.put("strategy.optimizer_state_bytes", sum(moments) / 2, fl.where("--exp-avg-dtype"),
                raw=f"exp_avg {moments[0]:g} B, exp_avg_sq {moments[1]:g} B (mean per state)")
    if fl.has("--main-params-dtype"):
        put("strategy.master_bytes", width("--main-params-dtype"), "--main-params-dtype")
    if fl.has("--main-grads-dtype"):
        put("strategy.grad_bytes", width("--main-grads-dtype"), "--main-grads-dtype")


def _attention_kernel(fl: FlagQueries, out: Collector, put: Put, t: int, cp: int, dialect: str) -> None:
    seq, b, heads = fl.int("--seq-length"), fl.int("--micro-batch-size") or 1, fl.int("--num-attention-heads")
    fused = not fl.has("--no-masked-softmax-fusion") and (fl.has("--bf16") or fl.has("--fp16")) and \
        seq is not None and 16 < seq <= 4096 and seq % 4 == 0 and heads is not None and (b * heads // t) % 4 == 0
    if seq is not None:
        out.derive("strategy.softmax_bytes", 2.0 if fused or not fl.has("--attention-softmax-in-fp32") else 4.0,
                   "fused masked softmax" if fused else "--attention-softmax-in-fp32" if
                   fl.has("--attention-softmax-in-fp32") else "16-bit softmax")
    backend = (fl.text("--attention-backend") or "").lower()
    impl = (fl.text("--transformer-impl") or "").lower()
    if fl.has("--use-flash-attn"):
        put("strategy.flash_attention", True, "--use-flash-attn")
    elif dialect == "mindspeed":
        if cp > 1:
            out.derive("strategy.flash_attention", True, "--context-parallel-size > 1 (MindSpeed turns flash "
                                                         "attention on)")
        else:
            out.derive("strategy.flash_attention", False, "no --use-flash-attn")
    elif backend in ("unfused", "local") or impl == "local":
        put("strategy.flash_attention", False, "--attention-backend" if backend in ("unfused", "local") else
            "--transformer-impl")
    elif backend and backend not in ("auto", "flash", "fused"):
        raise fl.error("--attention-backend", msg("megatron_strategy_args.attention-backend-expected", backend=backend))
    elif backend:
        put("strategy.flash_attention", True, "--attention-backend")
    else:
        out.assume("strategy.flash_attention", True, msg("megatron_strategy_args.megatron-s-defaults"))


def _sharding(fl: FlagQueries, out: Collector, put: Put, d: int, cp: int) -> None:
    if fl.has("--use-megatron-fsdp") or fl.has("--use-custom-fsdp") or fl.has("--use-torch-fsdp2"):
        if fl.has("--use-torch-fsdp2"):
            put("strategy.sharding", "fsdp", "--use-torch-fsdp2")
        else:
            # the parser's default changed with Megatron-LM #3691 (2026-04): optim_grads_params; core 0.12-0.13's
            # --use-custom-fsdp (and --use-megatron-fsdp up to core 0.15) defaulted to no_shard, and so does
            # DistributedDataParallelConfig, which Megatron-Bridge builds directly
            custom = not fl.has("--use-megatron-fsdp")
            parsed = fl.parser_defaults and not custom
            strategy = fl.text("--data-parallel-sharding-strategy") or ("optim_grads_params" if parsed else "no_shard")
            if strategy not in FSDP_STRATEGIES:
                raise fl.error("--data-parallel-sharding-strategy", msg("megatron_strategy_args.data-parallel-sharding",
                                                                        strategy=strategy,
                                                                        FSDP_STRATEGIES=', '.join(FSDP_STRATEGIES)))
            mode = FSDP_STRATEGIES[strategy]
            if fl.has("--data-parallel-sharding-strategy"):
                put("strategy.sharding", mode, "--data-parallel-sharding-strategy")
            else:
                out.assume("strategy.sharding", mode, msg("megatron_strategy_args.use-megatron-fsdp") if parsed else
                           msg("megatron_strategy_args.use-custom-fsdp") if custom else
                           msg("megatron_strategy_args.ddp-config-fsdp"))
            dtype = fl.text("--megatron-fsdp-main-grads-dtype")
            if dtype is not None and dtype.lower() in _DTYPE_BYTES:
                put("strategy.grad_bytes", _DTYPE_BYTES[dtype.lower()], "--megatron-fsdp-main-grads-dtype")
        return
    put("strategy.sharding", "zero1" if fl.has("--use-distributed-optimizer") else "none",
        "--use-distributed-optimizer")
    instances = fl.int("--num-distributed-optimizer-instances", minimum=1)
    if instances is not None and instances > 1:
        if not fl.has("--use-distributed-optimizer"):
            raise fl.error("--num-distributed-optimizer-instances",
                           msg("megatron_strategy_args.num-distributed-optimizer"))
        domain = d * cp
        if domain % instances:
            raise fl.error("--num-distributed-optimizer-instances",
                           msg("megatron_strategy_args.num-distributed-optimizer-2", instances=instances,
                               domain=domain))
        out.put("strategy.shard_size", domain // instances, fl.where("--num-distributed-optimizer-instances"),
                raw=f"dp·cp {domain} / {instances} instances")


def _optimizer(fl: FlagQueries, out: Collector, put: Put) -> None:
    """``--optimizer`` (Megatron's choices; megatron/core/optimizer/__init__.py): Adam's two states are the
    default; SGD keeps one momentum buffer (none when ``--sgd-momentum`` is 0), Lion one (exp_avg). The Muon and
    SOAP families keep other states per kind of parameter, which are not priced: said, priced as Adam."""
    name = (fl.text("--optimizer") or "adam").lower()
    if name == "adam":
        return
    if name == "sgd":
        momentum = fl.float("--sgd-momentum")
        put("strategy.n_optimizer_states", 0 if momentum == 0 else 1, "--sgd-momentum" if momentum == 0 else
            "--optimizer")
    elif name == "lion":
        put("strategy.n_optimizer_states", 1, "--optimizer")
    elif name in ("muon", "dist_muon", "adaptive_muon"):
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.megatron-optimizer-muon", name=name))
    elif name == "soap":
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.megatron-optimizer-soap"))
    else:  # a fork's own optimizer (Megatron's parser refuses any other name)
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.megatron-optimizer-other", name=name))


def _recompute(fl: FlagQueries, out: Collector, put: Put, p: int) -> None:
    """--recompute-granularity/method/num-layers/modules and the MindSpeed partial recompute switches."""
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
        raise fl.error("--recompute-granularity", msg("megatron_strategy_args.recompute-granularity-expected",
                                                      gran=gran))
    if method not in (None, "uniform", "block"):
        raise fl.error("--recompute-method", msg("megatron_strategy_args.recompute-method-expected", method=method))
    if fl.has("--distribute-saved-activations"):
        put("strategy.recompute_slice_activation", True, "--distribute-saved-activations")
    if gran == "full" and method == "block":
        value: Any = n if n is not None else 1
        if fl.has("--enable-recompute-layers-per-pp-rank"):
            value = tuple([value] * p)
        put("strategy.full_counts", value, "--recompute-method block --recompute-num-layers")
        put("strategy.recompute", "selective" if switches and counts is None else "none", "--recompute-method")
    elif gran == "full":
        if method is None:
            out.warn("W-RECOMPUTE", msg("W-RECOMPUTE"))
        put("strategy.recompute", "full", "--recompute-granularity full")
        if n is not None and n > 1:
            put("strategy.uniform_group", n, "--recompute-num-layers")
        switches = []
    elif gran == "selective":
        put("strategy.recompute", "selective", "--recompute-granularity selective")
        modules = fl.values("--recompute-modules")
        if modules is not None:
            switches = [m for value in modules for m in value.split()]
        elif not switches:
            out.assume("strategy.recompute_switches", ("core_attn",),
                       msg("megatron_strategy_args.recompute-modules-megatron"))
    elif switches:
        put("strategy.recompute", "selective", "--recompute-activation-function / --recompute-norm")
    else:
        return
    if switches:
        unknown = [s for s in switches if s not in RECOMPUTE_MODULES and s != "act"]
        if unknown:
            raise fl.error("--recompute-modules", msg("megatron_strategy_args.recompute-modules-megatron-2",
                                                      unknown=' '.join(unknown),
                                                      RECOMPUTE_MODULES=', '.join(RECOMPUTE_MODULES)))
        put("strategy.recompute_switches", tuple(switches), "--recompute-modules" if fl.has("--recompute-modules")
            else "recompute switches")
    if counts is not None and switches and gran != "selective":
        put("strategy.sel_counts", counts, "--recompute-activation-function-num-layers")


def _not_priced(fl: FlagQueries, out: Collector, dialect: str) -> None:
    for flags, what in NOT_PRICED:
        found = [f for f in flags if fl.has(f)]
        if found:
            out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.read-priced-yet", found=', '.join(found), what=what))
    dispatcher = fl.text("--moe-token-dispatcher-type")
    if dispatcher is not None and dispatcher not in ("allgather", "alltoall", "alltoall_seq", "flex"):
        raise fl.error("--moe-token-dispatcher-type", msg("megatron_strategy_args.moe-token-dispatcher",
                                                          dispatcher=dispatcher))
    if dispatcher == "allgather":
        out.warn("W-NOT-PRICED", msg("W-NOT-PRICED.moe-token-dispatcher"))
    for flag, key in (("--reuse-fp32-param", "strategy.reuse_fp32_param"),
                      ("--swap-optimizer", "strategy.swap_optimizer"),
                      ("--overlap-moe-expert-parallel-comm", "strategy.overlap_moe_ep_comm")):
        if fl.has(flag):
            out.put(key, True, fl.where(flag), raw=True)
    if fl.has("--swap-optimizer"):
        times = fl.int("--swap-optimizer-times", minimum=1)
        if times is None:
            out.assume("strategy.swap_times", 16, msg("megatron_strategy_args.mindspeed-s-default"))
        else:
            out.put("strategy.swap_times", times, fl.where("--swap-optimizer-times"), raw=times)
    if fl.has("--o2-optimizer"):
        out.put("strategy.optimizer_state_bytes", 2.0, fl.where("--o2-optimizer"), raw=True)
    if fl.has("--o2-gradient"):
        out.put("strategy.grad_bytes", 2.0, fl.where("--o2-gradient"), raw=True)
    if fl.has("--use-fused-swiglu"):
        out.put("options.fused_gated_act", True, fl.where("--use-fused-swiglu"), raw=True)
    elif fl.has("--no-bias-swiglu-fusion"):
        out.put("options.fused_gated_act", False, fl.where("--no-bias-swiglu-fusion"), raw=True)
    _moe_zero_memory(fl, out)
    if fl.has("--mla-zero-memory"):  # MindSpeed-LLM: the MLA attention checkpointed (docs/model.md [A-ZERO-MEMORY])
        out.put("strategy.mla_zero_memory", True, fl.where("--mla-zero-memory"), raw=True)


def _moe_zero_memory(fl: FlagQueries, out: Collector) -> None:
    """MindSpeed --moe-zero-memory frees MoE activations after the forward and rebuilds them in the backward
    (docs/model.md [A-ZERO-MEMORY]): level0 the experts' dispatched input and activation output, level1 also the
    experts' and shared experts' fc1 outputs; --moe-zero-memory-num-layers N runs level1 on N layers of each
    stage and level0 on the others."""
    if not fl.has("--moe-zero-memory"):
        return
    level = fl.text("--moe-zero-memory") or ""
    if level not in MOE_ZERO_MEMORY:
        raise fl.error("--moe-zero-memory", f"--moe-zero-memory {level!r}: expected one of "
                                            f"{', '.join(MOE_ZERO_MEMORY)}")
    out.put("strategy.moe_zero_memory", level, fl.where("--moe-zero-memory"), raw=level)
    layers = fl.int("--moe-zero-memory-num-layers", minimum=0)
    if layers is not None:
        out.put("strategy.moe_zero_memory_layers", layers, fl.where("--moe-zero-memory-num-layers"), raw=str(layers))
        if level != "level1":  # MindSpeed consults the count under level1 only
            out.warn("W-MOE-ZERO-LAYERS", msg("W-MOE-ZERO-LAYERS", level=level))


__all__ = ["CP_ALGOS", "CP_COMM_TYPES", "FSDP_STRATEGIES", "READ_FLAGS", "STRATEGY_FLAGS", "read_strategy"]
