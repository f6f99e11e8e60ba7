"""Resolve (ModelSpec, Strategy, Hardware, RunOptions) into the numbers the formulas use (docs/model.md#resolution).

Three layers, so the search can vectorise: ``Dims`` (model shape, always scalars), ``Widths`` and
``Flags`` (byte widths and implementation switches, scalars), and ``Par`` (parallel degrees and
everything derived from them: Python numbers in a single estimate, numpy arrays in the search).
Every default that is filled in is recorded as an ``Assumption``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .arr import Num, ceil_div, gt, where
from .dims import Dims
from .errors import ModelSpecError
from .features import Features, nf4_bytes, resolve_features, unpriced_warnings
from .frameworks import FrameworkDefaults, framework_defaults
from .hardware import Hardware
from .kinds import data_kind_assumptions
from .kinds import model_symbols as kind_model_symbols
from .messages import Message, Text, msg
from .model import ModelSpec
from .options import RunOptions
from .params import lora_modules
from .profiles import FamilyChoice, FamilyProfile, detect_family, get_profile
from .records import at_once
from .strategy import FSDP_MODES, Strategy
from .warnings import Assumption, EstimateWarning
from .zero_buffers import ZeroBuffers, resolve_zero


@dataclass(frozen=True)
class Widths:
    """Byte widths of docs/model.md#byte-widths-per-framework."""

    p: float   # β_p stored parameter
    c: float   # β_c compute / activation
    g: float   # β_g gradient buffer
    m: float   # β_m master copy
    os: float  # β_os per optimizer state
    n_os: int
    sm: float  # β_sm softmax output
    dm: float  # β_dm dropout mask
    n: float   # β_n saved norm input (fp32 statistics)
    r: float   # β_r residual stream
    l: float   # β_l loss softmax
    rd: float  # β_rd FSDP2 reduce dtype
    a: float = 2.0   # β_a LoRA adapter stored width (default β_p)
    q: float = 0.5   # β_q QLoRA base weight bytes per element, quantisation constants included
    pf: float | None = None  # β_pf stored frozen weight (freeze fine-tuning; None: β_p)

    @property
    def p_frozen(self) -> float:
        return self.p if self.pf is None else self.pf


@dataclass(frozen=True)
class Flags:
    framework: str
    flash_attention: bool
    fused_act: bool
    fused_act_experts: bool
    kv_repeat: bool
    norm_stats: bool
    rule: str
    saves_gathered: bool
    keep_casts: bool
    persistence: str
    optimizer_impl: str
    w_b: float
    w_f: float
    w_b_par: float  # w_b, w_f when the loss is split over the vocabulary, t_V > 1 [W-LOSS.parallel]
    w_f_par: float
    vocab_parallel_loss: bool | None  # None: t_V = t (the default of every framework, see resolve)
    vocab_emb_dp: bool
    slice_full_input: bool  # full-recompute input TP-sliced (recompute_slice_activation / family)
    cp_keeps_kv: bool
    swap_optimizer: bool
    swap_times: int
    sharding_mode: str
    span_cp: bool
    grad_shard: bool
    keep_gathered: bool
    fp32_grad_partition: bool
    fsdp2: bool  # PyTorch FSDP2, priced instant by instant (docs/model.md#fsdp2)
    fsdp_layout: str
    reshard_after_forward: bool
    reshard_head_unit: bool
    fsdp_sync: bool
    schedule: str
    cp_algo: str
    comm_buffer_mode: str
    dtensor_sp: bool  # torchtitan / HyperParallel SP: gathered input saved, no gather buffer (D44)
    frozen: tuple[str, ...]
    causal: bool
    feat: Features = field(default_factory=Features)  # FP8, compile, overlaps, PEFT, offload (issue 11)
    zero: ZeroBuffers | None = None  # DeepSpeed ZeRO buckets and ZeRO-3 window (hf_trainer only)
    eager_norm: bool = False  # transformers' eager RMSNorm (hf_trainer): fp32 upcast + pre-weight copy kept
    dataloader_mask: bool = False  # [W-MASK] the micro-batch's dense attention mask on the E/O chunks' devices


@dataclass(frozen=True)
class Par:
    """Parallel degrees and derived quantities (Python numbers or numpy arrays)."""

    d: Num
    t: Num
    p: Num
    vp: Num
    cp: Num
    ep: Num
    etp: Num
    b: Num
    m: Num
    n_acc: Num
    s: Num
    sp: Num        # 1 on / 0 off
    u: Num         # Ulysses degree inside cp
    n_s: Num
    d_rep: Num
    os: Num
    os_e: Num

    @property
    def sp_div(self) -> Num:
        return 1 + self.sp * (self.t - 1)

    @property
    def world(self) -> Num:
        return self.d * self.t * self.p * self.cp

    @property
    def edp(self) -> Num:
        return self.d * self.t * self.cp / (self.ep * self.etp)

    @property
    def T(self) -> Num:
        """Tokens per device per micro-batch (per slice for Seq1F1B)."""
        return self.b * self.s / (self.cp * self.n_s)

    @property
    def accumulates(self) -> Num:
        """1 when a step accumulates gradients over micro-batches (m·n_acc > 1), else 0: the one rule read by
        γ of D5 (``static.grad_factor``), the FSDP2 walks (``fsdp._stage``) and their keys (``fsdp.accumulates``)."""
        m, n_acc = self.m, self.n_acc
        if type(m) is int and type(n_acc) is int:  # one plan (asked for every stage of every estimate): gt's value
            return 1 if m * n_acc > 1 else 0
        return gt(m * n_acc, 1)


@dataclass(frozen=True)
class Resolved:
    model: ModelSpec
    strategy: Strategy
    hardware: Hardware
    options: RunOptions
    profile: FamilyProfile
    fw: FrameworkDefaults
    dims: Dims
    widths: Widths
    flags: Flags
    par: Par
    capacity: float
    budget: float
    assumptions: tuple[Assumption, ...] = field(default=())
    warnings: tuple[EstimateWarning, ...] = field(default=())


# ------------------------------------------------------------------------------------------ derived
def v_pad(dims: Dims, t: Num) -> Num:
    """Padded vocabulary (DECISION D35): the Megatron family pads to a multiple of divisible_by·t."""
    if dims.vocab_multiple <= 1:
        return dims.v
    unit = dims.vocab_multiple * t
    return ceil_div(dims.v, unit) * unit


def t_head(flags: Flags, dims: Dims, t: Num) -> Num:
    """t_H, the output head's TP split (D58): MindFormers' models build the head's matmul with strategy
    ((dp·cp, 1), (1, 1)) — the weight not split, full-vocabulary logits on every TP rank — when ``vocab_emb_dp`` is
    on or the vocabulary is not a multiple of t (``vocab_emb_dp or vocab_size % mp != 0``); every other framework
    (and MindFormers otherwise) splits it over t."""
    if flags.framework != "mindformers":
        return t
    if flags.vocab_emb_dp:
        return 1
    return where(dims.v % t != 0, 1, t)


def t_vocab(flags: Flags, t: Num) -> Num:
    """t_V: the loss' vocabulary split (t with vocab-parallel loss, else 1)."""
    if flags.vocab_parallel_loss is None or flags.vocab_parallel_loss:
        return t
    return 1


def routed_tokens(dims: Dims, par: Par, rho: float) -> Num:
    """R [A-MOE-TOK]: routed token copies per device per micro-batch (docs/model.md#moe-token-copies)."""
    if not dims.moe:
        return 0
    phi = dims.cap_fact if dims.cap_fact > 0 else rho
    return par.T * dims.n_chosen * phi * par.etp / par.t


def dense_domain(flags: Flags, par: Par) -> Num:
    return par.d * par.cp if flags.span_cp else par.d


def shard_divisors(flags: Flags, par: Par, params_divided_by_cp: bool = False) -> tuple[Num, ...]:
    """(sh_p, sh_g, sh_o, sh_pe, sh_ge, sh_oe) [X-SHARD], docs/model.md#sharding-divisors."""
    mode = flags.sharding_mode
    os, os_e = par.os, par.os_e
    if mode == "none":
        dense = (1, 1, 1)
        expert = (1, 1, 1)
    elif mode == "zero1":
        dense, expert = (1, 1, os), (1, 1, os_e)
    elif mode == "zero2":
        dense, expert = (1, os, os), (1, os_e, os_e)
    elif mode in ("zero3", "fsdp", "hsdp"):
        dense, expert = (os, os, os), (os_e, os_e, os_e)
    else:  # mf_op
        dense = (os, os if flags.grad_shard else 1, os)
        expert = (os_e, os_e if flags.grad_shard else 1, os_e)
    if params_divided_by_cp:  # upstream compat: divided by cp even without sharding spanning it
        factor = par.cp if (mode == "none" or not flags.span_cp) else 1
        dense = tuple(x * factor for x in dense)
    return (*dense, *expert)


# ------------------------------------------------------------------------------------------ resolve
class _Recorder:
    def __init__(self) -> None:
        self.assumptions: list[Assumption] = []

    def take(self, field_name: str, given: object, default: object, source: Text) -> object:
        if given is not None:
            return given
        self.assumptions.append(Assumption(field_name, default, source))
        return default


def _pick(*values: object) -> object:
    for value in values:
        if value is not None:
            return value
    return None


def resolve_dims(model: ModelSpec, profile: FamilyProfile, rec: _Recorder,
                 fw: FrameworkDefaults) -> Dims:
    model.check()
    h, a = model.hidden_size, model.num_attention_heads
    mla = model.is_mla
    n_kv = a if mla else int(rec.take("model.num_kv_heads", model.num_kv_heads, a, msg("resolve.equal-heads-mha")))
    if model.head_dim is not None:
        dh = model.head_dim
    elif h % a:
        raise ModelSpecError(msg("resolve.model-head_dim-given", h=h, a=a))
    else:
        dh = int(rec.take("model.head_dim", None, h // a, msg("resolve.hidden_size-heads-d1")))
    dv = model.v_head_dim if model.v_head_dim is not None else dh
    dhr = model.qk_rope_head_dim if mla else 0
    gated = model.gated_ffn if model.gated_ffn is not None else profile.ffn_gated
    norm = model.norm or profile.norm
    c_norm = 2 if norm == "layer" else 1
    moe = model.is_moe
    hff_exp = model.moe_ffn_hidden_size or 0
    if moe and model.num_shared_experts and model.shared_ffn_hidden_size is None:
        rec.assumptions.append(Assumption("model.shared_ffn_hidden_size",
                                          model.num_shared_experts * hff_exp,
                                          msg("resolve.num_shared_experts-moe_ffn_hidden_size")))
    hff_sh = model.shared_ffn_hidden_size if model.shared_ffn_hidden_size is not None else \
        model.num_shared_experts * hff_exp
    if model.make_vocab_divisible_by is not None:
        multiple = model.make_vocab_divisible_by
    else:
        multiple = 128 if fw.megatron_vocab_padding else 1
    if moe and model.capacity_factor is None:
        rec.assumptions.append(Assumption("model.capacity_factor", None, msg("resolve.dropless-routing-applies")))
    return Dims(
        h=h, a=a, n_kv=n_kv, dh=dh, dv=dv, dqk=dh + dhr, dhr=dhr,
        hff=model.ffn_hidden_size or 0, hff_exp=hff_exp, hff_sh=hff_sh, v=model.vocab_size,
        vocab_multiple=multiple, g=2 if gated else 1, c_norm=c_norm, c_stat=2 if norm == "layer" else 1,
        n_lay=model.num_layers, n_mtp=model.mtp_layers, n_exp=model.num_experts if moe else 0,
        n_chosen=model.experts_per_token if moe else 0, n_shared=model.num_shared_experts, dc_q=model.q_lora_rank,
        dc_kv=model.kv_lora_rank, mla=mla, moe=moe, qk_norm=model.qk_norm and not mla,
        output_gate=model.output_gate,
        qkv_bias=bool(_pick(model.qkv_bias, profile.qkv_bias)),
        out_bias=bool(_pick(model.out_bias, profile.out_bias)),
        mlp_bias=bool(_pick(model.mlp_bias, profile.mlp_bias)),
        router_bias=model.router_bias, shared_gate=model.shared_expert_gate, tie=model.tie_embeddings,
        cap_fact=model.capacity_factor if model.capacity_factor is not None else 0.0,
        lin_k=model.linear_num_key_heads * model.linear_key_head_dim,
        lin_v=model.linear_num_value_heads * model.linear_value_head_dim,
        n_lv=model.linear_num_value_heads, lin_d_k=model.linear_key_head_dim,
        lin_d_v=model.linear_value_head_dim, conv=model.linear_conv_kernel,
        attn_dropout=float(_pick(model.attention_dropout, profile.attn_dropout)) > 0,  # type: ignore[arg-type]
        hidden_dropout=float(_pick(model.hidden_dropout, profile.hidden_dropout)) > 0,  # type: ignore[arg-type]
        emb_dropout=float(_pick(model.hidden_dropout, profile.emb_dropout)) > 0,  # type: ignore[arg-type]
        router_bytes=profile.router_bytes,
        kind_symbols=kind_model_symbols(model, (*model.body_kinds(), *model.mtp_kinds())),
        n_pos=model.learned_positions,
    )


# Strategy fields ``settle`` never reads (the degrees, the layout, the recompute plan but its rule): what a tp, pp,
# cp, ep, recompute, micro-batch or sequence-length edit changes. tests/test_resolve_settled.py reads settle
# through a strategy that refuses these.
DEGREES = frozenset({"dp", "tp", "pp", "vpp", "cp", "ep", "etp", "d_rep", "d_sh", "micro_batch_size", "micro_batches",
                     "n_acc", "sequence_parallel", "ulysses_degree", "schedule", "n_s", "seq_length", "vpp_group",
                     "overlap_moe_ep_comm", "offset", "partition", "offset_rule", "mtp_in_offset",
                     "emb_out_in_offset", "noop_layers", "vision_partition", "rescale_user_layout", "recompute"})


class Settled:
    """What resolving reads of a plan but ``DEGREES`` (and the recompute plan's rule, which it reads): the
    profile, the dims, the widths, the flags but the three a degree sets, and the assumptions and warnings that
    come before the degrees' in the Result (``resolve_settled`` adds those). Its Flags are made once per value of
    the three (``flags``), so plans that differ in degrees share the records (and their keys, reuse.key_of)."""

    __slots__ = ("_assumed", "_flags", "assumptions", "choice", "dims", "flag_fields", "fw", "layouts", "profile",
                 "warnings_head", "warnings_tail", "widths")

    def __init__(self, choice: FamilyChoice, profile: FamilyProfile, fw: FrameworkDefaults, dims: Dims,
                 widths: Widths, flag_fields: dict[str, object], assumptions: tuple[Assumption, ...],
                 warnings_head: tuple[EstimateWarning, ...], warnings_tail: tuple[EstimateWarning, ...]) -> None:
        self.choice, self.profile, self.fw, self.dims, self.widths = choice, profile, fw, dims, widths
        self.flag_fields, self.assumptions = flag_fields, assumptions
        self.warnings_head, self.warnings_tail = warnings_head, warnings_tail
        self._flags: dict[tuple[bool, bool, str], Flags] = {}
        self.layouts: dict[tuple, object] = {}  # the layouts reuse.py keeps, by what they read of the degrees
        self._assumed: dict[tuple, Assumption] = {}

    def flags(self, reshard: bool, fsdp_sync: bool, schedule: str) -> Flags:
        """The Flags with the three fields a degree sets (bool, bool, str: the key tells every value apart)."""
        key = (reshard, fsdp_sync, schedule)
        got = self._flags.get(key)
        if got is None:
            got = Flags(**self.flag_fields, reshard_after_forward=reshard, fsdp_sync=fsdp_sync,  # type: ignore[arg-type]
                        schedule=schedule)
            if len(self._flags) < 64:  # 2 × 2 × the schedules
                self._flags[key] = got
        return got

    def assumed(self, field_name: str, value: object, source: Callable[[], Message]) -> Assumption:
        """``Assumption(field_name, value, source())`` of a degree, made once per field and value (and its type):
        an Assumption renders its English text when made. What a field's assumption says reads nothing but the
        framework, which is the Settled's own."""
        memo = (field_name, value, type(value))
        got = self._assumed.get(memo)
        if got is None:
            got = Assumption(field_name, value, source())
            if len(self._assumed) < 256:
                self._assumed[memo] = got
        return got


def resolve(model: ModelSpec, strategy: Strategy, hardware: Hardware, options: RunOptions) -> Resolved:
    """Fill every default from the framework and the family profile, and derive the parallel numbers."""
    return resolve_settled(settle(model, strategy, options), model, strategy, hardware, options)


def settle(model: ModelSpec, strategy: Strategy, options: RunOptions) -> Settled:
    """The part of ``resolve`` that reads no field of ``DEGREES`` (nor the device)."""
    rec = _Recorder()
    fw = framework_defaults(options.framework)
    choice = detect_family(model.family, model.hf_architectures, model.model_type, model.name)
    family, family_source = choice.name, choice.how
    if not model.family:
        rec.assumptions.append(Assumption("model.family", family, family_source))
    profile = get_profile(family)
    dims = resolve_dims(model, profile, rec, fw)
    rec.assumptions.extend(data_kind_assumptions((*model.body_kinds(), *model.mtp_kinds())))
    st = strategy
    sh = st.sharding
    mode = sh.mode

    # byte widths (docs/model.md#byte-widths-per-framework)
    bp = float(rec.take("strategy.param_bytes", st.param_bytes, fw.param_bytes, msg("resolve.default", title=fw.title)))
    bc = float(rec.take("strategy.compute_bytes", st.compute_bytes, fw.compute_bytes, msg("resolve.default",
        title=fw.title)))
    bg = float(rec.take("strategy.grad_bytes", st.grad_bytes, fw.grad_bytes if fw.grad_bytes else bp,
                        msg("resolve.default", title=fw.title) if fw.grad_bytes else
                        msg("resolve.default.param-bytes", title=fw.title)))
    if st.master_bytes is not None:
        bm = float(st.master_bytes)
    elif st.reuse_fp32_param and fw.master_bytes:
        bm = max(0.0, 4.0 - bp)
        rec.assumptions.append(Assumption("strategy.master_bytes", bm, msg("resolve.reuse_fp32_param-p-m")))
    else:
        bm = float(rec.take("strategy.master_bytes", None, fw.master_bytes, msg("resolve.default", title=fw.title)))
    bos = float(rec.take("strategy.optimizer_state_bytes", st.optimizer_state_bytes, 4.0,
                         msg("resolve.adamw-fp32-states")))
    nos = int(rec.take("strategy.n_optimizer_states", st.n_optimizer_states, 2,
                       msg("resolve.adamw-exp_avg-exp_avg_sq")))
    from_profile = profile.softmax_bytes is not None
    bsm = float(rec.take("strategy.softmax_bytes", st.softmax_bytes,
                         profile.softmax_bytes if from_profile else fw.softmax_bytes,
                         msg("resolve.profile", name=profile.name) if from_profile else
                         msg("resolve.default", title=fw.title)))
    bdm = float(st.dropout_mask_bytes if st.dropout_mask_bytes is not None else 1.0)
    bn = float(st.norm_bytes if st.norm_bytes is not None else bc)
    br = float(st.residual_bytes if st.residual_bytes is not None else bc)
    bl = float(st.loss_bytes if st.loss_bytes is not None else 4.0)
    brd = float(st.reduce_bytes if st.reduce_bytes is not None else (fw.reduce_bytes or bg))
    feat = resolve_features(st, fw, dims.moe, rec.assumptions)
    ba = float(st.lora_param_bytes if st.lora_param_bytes is not None else bp)
    widths = Widths(p=bp, c=bc, g=bg, m=bm, os=bos, n_os=nos, sm=bsm, dm=bdm, n=bn, r=br, l=bl, rd=brd, a=ba,
                    q=nf4_bytes(st.qlora_double_quant),
                    pf=float(st.frozen_param_bytes) if st.frozen_param_bytes is not None else None)

    # implementation flags (docs/model.md#slot-table): strategy / options > profile > framework
    fa = bool(rec.take("strategy.flash_attention", _pick(st.flash_attention, profile.flash_attention), True,
                       msg("resolve.flash-attention-assumed")))
    fused_act = bool(_pick(options.fused_gated_act, profile.fused_gated_act, fw.fused_gated_act))
    fused_exp = bool(_pick(options.fused_gated_act_experts, options.fused_gated_act, profile.fused_gated_act,
                           fw.fused_gated_act_experts))
    kv_repeat = bool(_pick(options.kv_repeat, profile.kv_repeat, fw.kv_repeat(fa)))
    norm_stats = bool(_pick(options.norm_stats, profile.norm_stats, True))
    rule = str(_pick(st.recompute.rule, profile.selective_rule, fw.selective_rule))
    persistence = str(_pick(options.grad_persistence, fw.grad_persistence(mode)))
    opt_impl = str(_pick(options.optimizer_impl, fw.optimizer_impl))
    keep_casts = bool(_pick(options.keep_weight_casts, fw.keep_weight_casts(bp, bc, mode)))
    w_b, w_f = fw.loss_widths(bc, bl, feat.loss_fusion)
    w_b_par, w_f_par = fw.loss_widths(bc, bl, feat.loss_fusion, vocab_parallel=True)
    fsdp2 = fw.fsdp_native and mode in FSDP_MODES
    zero, zero_warnings = resolve_zero(st, fw.name, dims.h, rec.assumptions)
    flag_fields: dict[str, object] = dict(  # Flags but reshard_after_forward, fsdp_sync, schedule (Settled.flags)
        framework=fw.name, flash_attention=fa, fused_act=fused_act, fused_act_experts=fused_exp,
        kv_repeat=kv_repeat, norm_stats=norm_stats, rule=rule,
        saves_gathered=bool(_pick(options.saves_gathered_input, fw.saves_gathered_input)),
        keep_casts=keep_casts, persistence=persistence, optimizer_impl=opt_impl, w_b=w_b, w_f=w_f,
        w_b_par=w_b_par, w_f_par=w_f_par,
        vocab_parallel_loss=st.vocab_parallel_loss, vocab_emb_dp=st.vocab_emb_dp,
        slice_full_input=st.recompute_slice_activation or profile.shards_activations,
        cp_keeps_kv=options.cp_keeps_kv, swap_optimizer=st.swap_optimizer, swap_times=max(1, st.swap_times),
        sharding_mode=mode, span_cp=sh.span_cp, grad_shard=sh.grad_shard,
        keep_gathered=bool(_pick(sh.keep_gathered_weights, True)) if mode == "mf_op" else False,
        fp32_grad_partition=sh.fp32_grad_partition, fsdp2=fsdp2, fsdp_layout=sh.fsdp_layout,
        reshard_head_unit=sh.reshard_head_unit, cp_algo=st.cp_algo, comm_buffer_mode=options.comm_buffer_mode,
        dtensor_sp=fw.fsdp_native, frozen=tuple(st.frozen_modules), causal=profile.causal, feat=feat,
        zero=zero, eager_norm=fw.eager_norm, dataloader_mask=options.dataloader_mask,
    )
    if persistence != fw.grad_persistence(mode) or options.grad_persistence is None:
        rec.assumptions.append(Assumption("options.grad_persistence", persistence,
                                          msg("resolve.given") if options.grad_persistence else msg("resolve.default",
                                                                                                    title=fw.title)))
    head = (*_family_warnings(choice, model), *unpriced_warnings(st, fsdp2), *lora_warnings(model, dims, feat),
            *zero_warnings)
    tail = (EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.fsdp2-instants-count")),) if feat.lora and fsdp2 else ()
    return Settled(choice, profile, fw, dims, widths, flag_fields, tuple(rec.assumptions), head, tail)


def resolve_settled(settled: Settled, model: ModelSpec, strategy: Strategy, hardware: Hardware,
                    options: RunOptions) -> Resolved:
    """``resolve`` from the plan's ``Settled`` (made from the same model and options, and a strategy equal to
    this one but in ``DEGREES`` and the recompute plan but its rule): the flags a degree sets, the degrees and
    what they derive, the budget, and the assumptions and warnings that read a degree."""
    fw, dims, st = settled.fw, settled.dims, strategy
    sh = st.sharding
    mode = sh.mode
    p = st.pp
    reshard = sh.reshard_after_forward if sh.reshard_after_forward is not None else p == 1
    fsdp_sync = options.fsdp_sync_every_microbatch if options.fsdp_sync_every_microbatch is not None else p == 1
    schedule = st.schedule_name
    flags = settled.flags(bool(reshard), bool(fsdp_sync), schedule)
    assumptions = list(settled.assumptions)

    # degrees (docs/model.md#resolution)
    d = st.dp
    d_rep = st.d_rep if st.d_rep is not None else (1 if mode != "hsdp" else d)
    d_sh = st.d_sh if st.d_sh is not None else d // max(1, d_rep)
    etp = st.etp if st.etp is not None else (fw.default_etp(st.tp, st.ep, d, st.cp) if dims.moe else 1)
    if dims.moe and st.etp is None:
        assumptions.append(settled.assumed("strategy.etp", etp, lambda: msg("resolve.default", title=fw.title)))
    u = st.ulysses_degree if st.ulysses_degree is not None else (st.cp if st.cp_algo == "ulysses" else 1)
    span = sh.span_cp
    domain = d * st.cp if span else d
    edp = d * st.tp * st.cp // max(1, st.ep * etp)
    if mode == "hsdp":
        os_default = d_sh * (st.cp if span else 1)
        os_e_default = max(1, edp // max(1, d_rep))
    elif mode == "none":
        os_default, os_e_default = 1, 1
    else:
        os_default, os_e_default = domain, edp
    os = sh.os if sh.os is not None else os_default
    os_e = sh.os_e if sh.os_e is not None else os_e_default
    if mode != "none" and sh.os is None:
        assumptions.append(settled.assumed("strategy.shard_size", os, lambda: msg("resolve.whole-sharding-domain")))
    n_s = st.n_s if schedule in ("seq1f1b", "seqsmartvpp") else 1
    par = at_once(Par, d=d, t=st.tp, p=p, vp=st.vpp, cp=st.cp, ep=st.ep, etp=etp, b=st.micro_batch_size,
                  m=st.micro_batches, n_acc=st.n_acc, s=st.seq_length,
                  sp=1 if (st.sequence_parallel and st.tp > 1) else 0, u=u, n_s=n_s, d_rep=d_rep, os=os, os_e=os_e)

    capacity = hardware.capacity
    budget = plan_budget(capacity, options)
    warnings = list(settled.warnings_head)
    if flags.feat.async_tp:
        if st.tp > 1 and not st.sequence_parallel:
            warnings.append(EstimateWarning("W-ASYNC-TP", msg("W-ASYNC-TP")))
        if st.tp == 1:  # Megatron's arguments.py turns SP off at tp 1, then asserts --tp-comm-overlap needs SP
            said = (msg("W-ASYNC-TP.t1-refused", framework=fw.title) if fw.name in ("megatron", "mindspeed") else
                    msg("W-ASYNC-TP.t1-no-effect", framework=fw.title))
            warnings.append(EstimateWarning("W-ASYNC-TP", said))
        # priced: PyTorch's symmetric memory [D-SYMM], TE userbuffers [D-UB], MindSpeed's MC2 workspace [C-BUF.mc2]
        if not fw.fsdp_native and fw.name not in ("megatron", "mindspeed"):
            warnings.append(EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.async-tp-workspace", framework=fw.title)))
        if fw.name == "mindspeed" and dims.moe:  # mindspeed/arguments.py: 'mc2 is not compatible with moe models'
            warnings.append(EstimateWarning("W-MC2-MOE", msg("W-MC2-MOE")))
    warnings.extend(settled.warnings_tail)
    return at_once(Resolved, model=model, strategy=strategy, hardware=hardware, options=options,
                   profile=settled.profile, fw=fw, dims=dims, widths=settled.widths, flags=flags, par=par,
                   capacity=capacity, budget=budget, assumptions=tuple(assumptions), warnings=tuple(warnings))


def lora_warnings(model: ModelSpec, dims: Dims, feat: Features) -> list[EstimateWarning]:
    """LoRA targets this model has no module for, and FFN targets that leave the routed experts frozen."""
    if not feat.lora:
        return []
    kinds = set(model.body_kinds()) | set(model.mtp_kinds())
    present = set().union(*(lora_modules(dims, kind) for kind in kinds)) if kinds else set()
    out = []
    missing = sorted(feat.lora_targets - present)
    if missing:
        out.append(EstimateWarning("W-LORA-TARGET", msg("W-LORA-TARGET.lora-targets-match", missing=', '.join(missing),
                                                        present=', '.join(sorted(present)))))
    if dims.moe and feat.lora_targets & {"gate", "up", "fc1", "down"}:
        out.append(EstimateWarning("W-LORA-EXPERTS", msg("W-LORA-EXPERTS")))
    return out


def _family_warnings(choice: FamilyChoice, model: ModelSpec) -> tuple[EstimateWarning, ...]:
    """A model that says what it is (model_type, architectures) but has no profile is priced as a generic
    decoder: said out loud, since its norms, biases, FFN and attention may differ (issue 12)."""
    if not choice.generic or not (model.model_type or model.hf_architectures):
        return ()
    kind = "MoE" if (model.num_experts or 0) > 1 else "dense"
    return (EstimateWarning("W-MODEL-FAMILY", msg("W-MODEL-FAMILY", kind=kind, how=choice.how)),)


def plan_budget(capacity: float, options: RunOptions) -> float:
    """(budget_override | the framework limit | capacity) − margin (D6). A framework limit above the device's
    capacity cannot be used (P-BUDGET-CAP): the smaller of the two applies."""
    if options.budget_override is not None:
        limit = options.budget_override
    elif options.max_device_memory is not None:
        limit = min(options.max_device_memory, capacity)
    else:
        limit = capacity
    return limit - options.margin


def world_and_batch(par: Par) -> tuple[Num, Num]:
    return par.world, par.b * par.d * par.m * par.n_acc


__all__ = ["DEGREES", "Dims", "Flags", "Par", "Resolved", "Settled", "Widths", "dense_domain", "resolve",
           "resolve_settled", "routed_tokens", "settle",
           "shard_divisors", "t_head", "t_vocab", "v_pad", "where"]
