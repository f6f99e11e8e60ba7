"""Static memory per layer (docs/model.md#per-device-bytes [S-LAYER], docs/model.md#tied-tables-and-mtp-copies) and the
optimizer-step peak (docs/model.md#optimizer-step-peak [S-OPT]).

Element counts come from ``params``; this module applies TP/EP division, the sharding divisors of
docs/model.md#sharding-divisors and the byte widths. All functions accept numbers or numpy arrays for the degrees.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import params as P
from .arr import Num, gt, maximum
from .resolve import Dims, Flags, Par, Widths, shard_divisors, v_pad


@dataclass(frozen=True)
class Local:
    """Local (per-device, after TP/EP, before sharding) elements of one layer row."""

    dense: Num          # E_d = tp/t + rep (LoRA adapters included)
    expert: Num         # E_e = exp/(ep·etp)
    largest: Num = 0    # largest local trainable tensor (for the for-loop optimizer)
    cast: Num = 0       # matmul weights cast to β_c and kept for backward (D7): tp_mm/t + rep_mm + E_e
    frozen: bool = False
    adapters: Num = 0   # LoRA adapter elements (part of dense): the only trainable ones when base_frozen
    base_frozen: bool = False  # PEFT: the row's own weights are frozen, its adapters train
    quantized: Num = 0  # QLoRA: dense matmul weights stored as NF4 (part of dense)
    quantized_expert: Num = 0  # … routed-expert weights stored as NF4 (part of expert)
    fp8: Num = 0        # dense weights of FP8 linears (part of dense)
    fp8_expert: Num = 0  # routed-expert weights run in FP8 (part of expert)
    fp8_gemms: Num = 0  # FP8 GEMMs of the row (each keeps its scaling state)
    partial: bool = False  # freeze fine-tuning: only ``part`` / ``part_expert`` train ([A-FREEZE] trainable_parts)
    part: Num = 0       # trainable dense elements of a partial row (part of dense)
    part_expert: Num = 0  # … expert elements (part of expert)

    @property
    def total(self) -> Num:
        return self.dense + self.expert

    @property
    def trainable_dense(self) -> Num:
        """Dense elements that get gradients and optimizer states."""
        if self.frozen:
            return 0
        if self.partial:
            return self.part
        return self.adapters if self.base_frozen else self.dense

    @property
    def trainable_expert(self) -> Num:
        if self.partial and not self.frozen:
            return self.part_expert
        return 0 if (self.frozen or self.base_frozen) else self.expert


def local_elements(el: P.Elements, par: Par, frozen: bool = False, adapters: P.Elements | None = None,
                   quantize: bool = False, fp8: P.Elements | None = None, fp8_experts: bool = False,
                   fp8_gemms: Num = 0, part: P.Elements | None = None) -> Local:
    """A row's local elements; ``adapters``: LoRA on a frozen base (PEFT), ``quantize``: the base's matmul
    weights stored as NF4 (QLoRA), ``fp8``: the weights of its FP8 linears (with ``fp8_experts`` the routed
    experts' too; ``fp8_gemms`` GEMMs with scaling state), ``part``: the elements that train when only some of
    the row's module groups do (freeze fine-tuning)."""
    expert = el.exp / (par.ep * par.etp) if el.exp else 0
    largest = maximum(maximum(el.largest_tp / par.t, el.largest_rep), el.largest_exp / par.etp if el.exp else 0)
    cast = el.tp_mm / par.t + el.rep_mm + expert
    eight: dict = {}
    if fp8 is not None:
        eight = {"fp8": fp8.tp / par.t + fp8.rep, "fp8_expert": expert if fp8_experts else 0,
                 "fp8_gemms": fp8_gemms}
    if part is not None:
        eight.update(partial=True, part=part.tp / par.t + part.rep,
                     part_expert=part.exp / (par.ep * par.etp) if part.exp else 0)
    if adapters is None:
        return Local(dense=el.tp / par.t + el.rep, expert=expert, largest=largest, cast=cast, frozen=frozen, **eight)
    ad = adapters.tp / par.t + adapters.rep
    return Local(dense=el.tp / par.t + el.rep + ad, expert=expert,
                 largest=maximum(adapters.largest_tp / par.t, adapters.largest_rep), cast=cast, frozen=frozen,
                 adapters=ad, base_frozen=True, quantized=(el.tp_mm / par.t + el.rep_mm) if quantize else 0,
                 quantized_expert=expert if quantize else 0, **eight)


def embedding_local(d: Dims, f: Flags, par: Par, frozen: bool = False, positions: bool = True) -> Local:
    """[P-EMB] v_pad·h: class tp unless ``vocab_emb_dp`` (class rep); with ``positions`` (the first stage's
    embedding, not a copy of a tied table) plus [P-POS] the learned position table, class rep."""
    table = v_pad(d, par.t) * d.h
    words = table if f.vocab_emb_dp else table / par.t
    pos = P.position_table(d) if positions else 0
    return Local(dense=words + pos, expert=0, largest=maximum(words, pos), cast=0, frozen=frozen)


def output_local(d: Dims, par: Par, with_head: bool, frozen: bool = False, t_head: Num | None = None) -> Local:
    """[P-FNORM] + [P-HEAD] (the head only when untied, or tied with the table not on this stage, D56), split over
    t_H (D58: ``resolve.t_head``)."""
    head = v_pad(d, par.t) * d.h / (par.t if t_head is None else t_head) if with_head else 0
    return Local(dense=P.final_norm(d) + head, expert=0, largest=maximum(head, d.h), cast=head,
                 frozen=frozen)


@dataclass(frozen=True)
class StaticBytes:
    parameters: Num
    gradients: Num       # with γ = 1 (callers scale by γ or price per instant)
    optimizer_states: Num
    opt_temporaries: Num  # optimizer-step temporaries of this row (foreach)
    host_gradients: Num = 0  # DeepSpeed's fp32 gradient partition when the optimizer runs on the host
    gradient_shards: Num = 0.0  # β_g over the optimizer shard: what a reduce-scatter leaves (D59)


def stored_bytes(loc: Local, w: Widths, divisors: tuple[Num, ...]) -> Num:
    """[S-LAYER.params] β_p·(E_d/sh_p + E_e/sh_pe); with PEFT the adapters at β_a and, under QLoRA, the quantised
    base weights at β_q (NF4 with its constants, features.nf4_bytes)."""
    sh_p, sh_pe = divisors[0], divisors[3]
    if loc.frozen and not loc.base_frozen:  # [S-LAYER.params.freeze] at their own width (freeze: the load dtype)
        return w.p_frozen * (loc.dense / sh_p + loc.expert / sh_pe)
    if loc.partial:
        return (w.p_frozen * (loc.dense - loc.part) + w.p * loc.part) / sh_p + \
            (w.p_frozen * (loc.expert - loc.part_expert) + w.p * loc.part_expert) / sh_pe
    if not loc.base_frozen:
        return w.p * (loc.dense / sh_p + loc.expert / sh_pe)
    plain = loc.dense - loc.adapters - loc.quantized
    dense = w.p * plain + w.a * loc.adapters + w.q * loc.quantized
    expert = w.p * (loc.expert - loc.quantized_expert) + w.q * loc.quantized_expert
    return dense / sh_p + expert / sh_pe


def fp8_weight_bytes(loc: Local, w: Widths, f: Flags, divisors: tuple[Num, ...]) -> Num:
    """[S-FP8] What an FP8 recipe adds to a row's parameter memory (Transformer Engine; torchao keeps nothing:
    its casts live for one matmul). Without FP8 weights TE caches a rowwise and a columnwise FP8 copy of every FP8
    weight across the micro-batches (its weight workspace, ``is_first_microbatch``): 2·β_8·E_8. With FP8 weights
    (``--fp8-param-gather``) the weight itself is FP8 — β_8 instead of β_p, sharded like the parameters — and
    only the columnwise copy is cached: (β_8 − β_p)·E_8/sh_p + β_8·E_8. Delayed scaling keeps an fp32 amax history
    and scales for 3 forward and 2 backward tensors per GEMM: 20·(len + 2) bytes each."""
    feat = f.feat
    if not feat.fp8_on or feat.fp8_impl != "te":
        return 0.0
    b8 = feat.fp8_weight_bytes
    sh_p, sh_pe = divisors[0], divisors[3]
    if feat.fp8_param:
        out = (b8 - w.p) * (loc.fp8 / sh_p + loc.fp8_expert / sh_pe) + b8 * (loc.fp8 + loc.fp8_expert)
    else:
        out = 2 * b8 * (loc.fp8 + loc.fp8_expert)
    if feat.fp8 == "delayed":
        out = out + 20 * (feat.fp8_amax_history + 2) * loc.fp8_gemms
    return out


def gather_bytes(loc: Local, f: Flags, width: float, dense: Num = 1, expert: Num = 1) -> Num:
    """Bytes of the row's weights gathered at ``width`` (β_c for ZeRO-3/FSDP gathers, β_p for the ZeRO-1/2
    parameter all-gather), the dense part times ``dense`` and the expert part times ``expert`` (0 or 1 each): FP8
    weights travel in FP8 (β_8) when the recipe gathers them so (torchtitan ``enable_fsdp_float8_all_gather``,
    Megatron ``--fp8-param-gather``)."""
    out = width * (loc.dense * dense + loc.expert * expert)
    feat = f.feat
    if feat.fp8_param:
        out = out - (width - feat.fp8_weight_bytes) * (loc.fp8 * dense + loc.fp8_expert * expert)
    return out


def gather_trainable_bytes(loc: Local, f: Flags, width: float, dense: Num = 1, expert: Num = 1) -> Num:
    """``gather_bytes`` of the trainable weights only (what the ZeRO-1/2 all-gather sends after the step)."""
    out = width * (loc.trainable_dense * dense + loc.trainable_expert * expert)
    if f.feat.fp8_param and not (loc.frozen or loc.base_frozen):
        out = out - (width - f.feat.fp8_weight_bytes) * (loc.fp8 * dense + loc.fp8_expert * expert)
    return out


def static_bytes(loc: Local, w: Widths, f: Flags, par: Par, divisors: tuple[Num, ...]) -> StaticBytes:
    """[S-LAYER] parameters (``stored_bytes``); gradients β_g·(E_d/sh_g + E_e/sh_ge) (+ 4·(E_d/sh_o + E_e/sh_oe)
    with fp32_grad_partition, kept in host memory when the step runs there); optimizer states (n_os·β_os +
    β_m)·(E_d/sh_o + E_e/sh_oe) — over the trainable elements only: 0 for frozen rows, the adapters for a PEFT row
    (no master copy of adapters stored at ≥ 4 B)."""
    _sh_p, sh_g, sh_o, _sh_pe, sh_ge, sh_oe = divisors
    params = stored_bytes(loc, w, divisors) + fp8_weight_bytes(loc, w, f, divisors)
    if loc.frozen:
        return StaticBytes(params, 0, 0, 0)
    dense, expert = loc.trainable_dense, loc.trainable_expert
    opt_elems = dense / sh_o + expert / sh_oe
    grads = w.g * (dense / sh_g + expert / sh_ge)
    partition = 4 * opt_elems if f.fp32_grad_partition else 0.0
    on_host = f.feat.offload_optimizer or f.feat.offload_params  # DeepSpeed keeps the partition beside the step
    master = 0.0 if (loc.base_frozen and w.a >= 4) else w.m
    states = (w.n_os * w.os + master) * opt_elems
    temps = 4 * opt_elems if f.optimizer_impl == "foreach" else 0
    shards = w.g * opt_elems  # what a reduce-scatter over the optimizer shard leaves (D59)
    if on_host:
        return StaticBytes(params, grads, states, temps, partition, shards)
    return StaticBytes(params, grads + partition, states, temps, gradient_shards=shards)


def grad_factor(f: Flags, par: Par) -> Num:
    """γ of D5 for the non-FSDP2 paths: upstream_rule holds gradients only when p > 1 or the run
    accumulates (m·n_acc > 1); persistent (and progressive outside FSDP2) always."""
    if f.persistence == "upstream_rule":
        return maximum(gt(par.p, 1), par.accumulates)
    return 1


def forloop_temporaries(largest_local: Num, divisor: Num) -> Num:
    """for-loop AdamW: 2 fp32 temporaries of the largest local parameter tensor (docs/model.md#optimizer-step-peak)."""
    return 2 * 4 * largest_local / divisor


__all__ = ["Local", "StaticBytes", "embedding_local", "forloop_temporaries", "fp8_weight_bytes", "gather_bytes",
           "gather_trainable_bytes",
           "grad_factor", "local_elements",
           "output_local", "shard_divisors", "static_bytes", "stored_bytes"]
