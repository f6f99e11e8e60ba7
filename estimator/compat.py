"""Published reference formulas, reproduced exactly for side-by-side comparison (docs/model.md#test-vectors
V2/V3/V5/V6/V8).

Nothing here feeds the estimator's own numbers; these are the closed forms other tools and papers print, so a
plan can be shown next to them.

* Megatron-LM ``megatron/training/theoretical_memory_usage.py`` (NVIDIA/Megatron-LM at commit
  c9c5629071262abff412693ce84d1096ccde0758): ``compute_weight_and_optimizer_memory`` with the dense /
  replicated / expert (EP x ETP, EDP) parameter split, ``compute_activation_memory`` (SP + selective, with
  routed-expert terms), ``compute_activation_memory_without_sp`` ("branch 2", x 1.05) and the total
  ``report_theoretical_memory`` prints.
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models" (arXiv 2205.05198),
  Table 2 per-layer activation bytes and the 12·h²·L parameter count used by its Figure 1.
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
  (arXiv 2104.04473), the FLOPs-per-iteration formula of §5.1 / Appendix and the end-to-end time estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from estimator.errors import ConfigError

from .messages import msg

MIB = 1024 * 1024
GIB = 1024**3

Recompute = Literal["none", "selective", "full"]


# ----------------------------------------------------------------------------------------------------
# Megatron-LM theoretical memory
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MegatronTheoretical:
    """Result of :func:`megatron_theoretical` for the most loaded rank (first pipeline stage).

    Parameter counts are per rank on the most loaded shard, split as Megatron splits them: TP-sharded,
    replicated (norms, router, latent projections), and routed-expert (over ETP·EP, optimizer over EDP).
    """

    weight_and_optimizer_bytes: float
    activation_bytes: float
    tp_sharded_params: float
    replicated_params: float
    expert_sharded_params: float
    total_params: float
    active_params: float
    bytes_per_param: float
    bytes_per_expert_param: float
    data_parallel_size: int
    expert_data_parallel_size: int
    activation_branch: Literal["sp_selective", "without_sp"]

    @property
    def total_bytes(self) -> float:
        return self.weight_and_optimizer_bytes + self.activation_bytes

    @property
    def weight_and_optimizer_mib(self) -> float:
        return self.weight_and_optimizer_bytes / MIB

    @property
    def activation_mib(self) -> float:
        return self.activation_bytes / MIB

    @property
    def total_mib(self) -> float:
        """As ``report_theoretical_memory`` adds them: weight MiB + activation MiB."""
        return self.weight_and_optimizer_mib + self.activation_mib

    def report_line(self) -> str:
        """The line ``report_theoretical_memory`` prints (Megatron labels MiB as "MB")."""
        return ("Theoretical memory footprints: "
                f"weight and optimizer={self.weight_and_optimizer_mib:.2f} MB, "
                f"activation={self.activation_mib:.2f} MB, total={self.total_mib:.2f} MB")


def _moe_layer_pattern(num_layers: int, moe_layer_freq: int | Sequence[int]) -> list[int]:
    """Megatron ``_get_moe_layer_counts``: an int marks layers i with i % freq == 0; a list is used as is."""
    if isinstance(moe_layer_freq, int):
        return [1 if i % moe_layer_freq == 0 else 0 for i in range(num_layers)]
    pattern = [int(x) for x in moe_layer_freq]
    if len(pattern) != num_layers:
        raise ConfigError(msg("compat.moe_layer_freq-has-entries", n_pattern=len(pattern), num_layers=num_layers))
    return pattern


def megatron_theoretical(
    *,
    hidden_size: int,
    num_attention_heads: int,
    num_layers: int,
    ffn_hidden_size: int,
    padded_vocab_size: int,
    seq_length: int,
    micro_batch_size: int,
    kv_channels: int | None = None,
    group_query_attention: bool = False,
    num_query_groups: int | None = None,
    normalization: Literal["LayerNorm", "RMSNorm"] = "LayerNorm",
    swiglu: bool = False,
    untie_embeddings_and_output_weights: bool = False,
    add_bias_linear: bool = True,
    tensor_model_parallel_size: int = 1,
    pipeline_model_parallel_size: int = 1,
    virtual_pipeline_model_parallel_size: int | None = None,
    context_parallel_size: int = 1,
    data_parallel_size: int | None = None,
    world_size: int | None = None,
    expert_model_parallel_size: int = 1,
    expert_tensor_parallel_size: int | None = None,
    sequence_parallel: bool = False,
    recompute_granularity: str | None = None,
    use_distributed_optimizer: bool = False,
    num_microbatches: int | None = None,
    num_experts: int | None = None,
    moe_layer_freq: int | Sequence[int] = 1,
    moe_ffn_hidden_size: int | None = None,
    moe_shared_expert_intermediate_size: int | None = None,
    moe_shared_expert_gate: bool = False,
    moe_router_topk: int = 2,
    moe_latent_size: int | None = None,
    mtp_num_layers: int | None = None,
    multi_latent_attention: bool = False,
    q_lora_rank: int | None = None,
    kv_lora_rank: int = 32,
    qk_head_dim: int = 128,
    qk_pos_emb_head_dim: int = 64,
    v_head_dim: int = 128,
) -> MegatronTheoretical:
    """Megatron-LM's theoretical memory for the most loaded rank, branch for branch.

    Arguments carry Megatron's names and CLI defaults (``add_bias_linear`` True, ``moe_router_topk`` 2, the
    MLA sizes, ``kv_channels`` = h/a, ``moe_ffn_hidden_size`` = ``ffn_hidden_size``, ETP = TP).
    ``data_parallel_size`` defaults to world/(TP·PP·CP) and ``world_size`` to DP·TP·PP·CP;
    EDP = world // (ETP·EP·PP).
    ``num_microbatches`` None means "not known", as in ``report_theoretical_memory(args)``.
    Activations use the SP formula only with ``sequence_parallel`` and selective recompute, otherwise
    ``compute_activation_memory_without_sp`` (10 + 24/t)·sbh per layer with its 1.05 overhead factor.
    Hybrid Mamba models, which Megatron does not estimate, are out of scope.
    """
    h, a, L = hidden_size, num_attention_heads, num_layers
    t, p, cp = tensor_model_parallel_size, pipeline_model_parallel_size, context_parallel_size
    ep = expert_model_parallel_size
    etp = t if expert_tensor_parallel_size is None else expert_tensor_parallel_size
    if min(h, a, L, t, p, cp, ep, etp, seq_length, micro_batch_size) < 1:
        raise ConfigError(msg("compat.sizes-parallel-degrees"))
    if world_size is None:
        if data_parallel_size is None:
            data_parallel_size = 1
        world_size = data_parallel_size * t * p * cp
    elif data_parallel_size is None:
        if world_size % (t * p * cp):
            raise ConfigError(msg("compat.world-size-divisible-2", world_size=world_size, value=t * p * cp))
        data_parallel_size = world_size // (t * p * cp)
    if world_size % (etp * ep * p):
        raise ConfigError(msg("compat.world-size-divisible", world_size=world_size, value=etp * ep * p))
    d, edp = data_parallel_size, world_size // (etp * ep * p)
    if kv_channels is None:
        kv_channels = h // a
    if not group_query_attention:
        num_query_groups = a
    elif num_query_groups is None:
        raise ConfigError(msg("compat.group_query_attention-needs-num_query_groups"))
    if num_experts is not None and moe_ffn_hidden_size is None:
        moe_ffn_hidden_size = ffn_hidden_size

    # ---- compute_weight_and_optimizer_memory ----
    pattern = _moe_layer_pattern(L, moe_layer_freq) if num_experts is not None else [0] * L
    n_moe = sum(pattern)
    n_dense = L - n_moe
    moe_ffn = moe_ffn_hidden_size if num_experts is not None else 0
    mtp_moe = pattern[-1] * mtp_num_layers if mtp_num_layers is not None else 0
    mtp_dense = (1 - pattern[-1]) * mtp_num_layers if mtp_num_layers is not None else 0
    n_exp = 1 if num_experts is None else num_experts
    glu = 3 / 2 if swiglu else 1
    shared_ffn = moe_shared_expert_intermediate_size or 0
    norm_size = 1 if normalization == "RMSNorm" else 2

    if multi_latent_attention:
        if group_query_attention:
            raise ConfigError(msg("compat.multi_latent_attention-excludes-group_query_attention"))
        if q_lora_rank is None:
            q_term = h * a * (qk_head_dim + qk_pos_emb_head_dim)
        else:
            q_term = q_lora_rank * (h + a * (qk_head_dim + qk_pos_emb_head_dim) + norm_size)
        attention = (q_term + kv_lora_rank * (h + a * (qk_head_dim + v_head_dim) + norm_size)
                     + h * qk_pos_emb_head_dim + a * v_head_dim * h)
    else:
        attention = 2 * h * h * ((1 + num_query_groups / a) * (kv_channels * a / h))

    embedding = h * padded_vocab_size
    final_norm = norm_size * h
    dense_mlp = 2 * h * ffn_hidden_size * glu
    shared_mlp = 2 * h * shared_ffn * glu
    routed_h = moe_latent_size if moe_latent_size is not None else h
    routed = 2 * routed_h * moe_ffn * n_exp * glu
    active_routed = 2 * routed_h * moe_ffn * moe_router_topk * glu if num_experts is not None else 0
    latent_proj = 2 * h * moe_latent_size if num_experts is not None and moe_latent_size is not None else 0
    norms = 2 * h * norm_size
    router = h * n_exp + (n_exp if add_bias_linear else 0) if num_experts is not None else 0
    shared_gate = h if shared_ffn > 0 and moe_shared_expert_gate else 0

    moe_replicated = norms + latent_proj + router + shared_gate
    layer_dense = attention + dense_mlp + norms
    layer_moe = attention + shared_mlp + routed + moe_replicated
    layer_moe_active = attention + shared_mlp + active_routed + moe_replicated
    emb_total = 2 * embedding if untie_embeddings_and_output_weights else embedding
    mtp_block = layer_dense * mtp_dense + layer_moe * mtp_moe
    total_params = layer_dense * n_dense + layer_moe * n_moe + final_norm + mtp_block + emb_total
    active_params = layer_dense * n_dense + layer_moe_active * n_moe + final_norm + mtp_block + emb_total

    tp_block = (attention + dense_mlp) * n_dense + (attention + shared_mlp) * n_moe
    rep_block = norms * n_dense + moe_replicated * n_moe + final_norm
    exp_block = routed * n_moe
    tp_mtp = (attention + dense_mlp) * mtp_dense + (attention + shared_mlp) * mtp_moe
    rep_mtp = norms * mtp_dense + moe_replicated * mtp_moe
    exp_mtp = routed * mtp_moe

    tp_shard = (tp_block / p + tp_mtp + embedding) / t
    rep_shard = rep_block / p + rep_mtp
    exp_shard = (exp_block / p + exp_mtp) / (etp * ep)
    if untie_embeddings_and_output_weights and p == 1:
        tp_shard += embedding / t

    def bytes_per_param(dp: int) -> float:
        # bf16 weights, fp32 main grads, fp32 master weights and Adam states
        return 18 if not use_distributed_optimizer else 6 + 12 / dp

    weights = (tp_shard + rep_shard) * bytes_per_param(d) + exp_shard * bytes_per_param(edp)

    # ---- activations ----
    sb = seq_length * micro_batch_size
    sbh = sb * h
    if p > 1 and virtual_pipeline_model_parallel_size is None:
        scale = min(1, num_microbatches / p) if num_microbatches is not None else 1
    elif virtual_pipeline_model_parallel_size is not None:
        scale = 1 + (p - 1) / (p * virtual_pipeline_model_parallel_size)
    else:
        scale = 1
    embedding_act = 8 * sb * p + sbh * p  # input ids and embedding dropout mask, p micro-batches in flight

    if sequence_parallel and recompute_granularity == "selective":
        branch: Literal["sp_selective", "without_sp"] = "sp_selective"
        attn_norm = 18 * sbh
        dense_layer = attn_norm + 4 * sb * ffn_hidden_size
        moe_layer = attn_norm + 4 * sb * shared_ffn
        dispatched = moe_router_topk * sb if n_moe > 0 else 0
        tp_mem = (dense_layer * n_dense + moe_layer * n_moe + embedding_act) * scale
        ep_mem = 4 * dispatched * routed_h * n_moe * scale
        exp_mem = 4 * dispatched * moe_ffn * n_moe * scale
        if p == 1:
            tp_mem += sbh * 4 * (1 + padded_vocab_size / h)
        activations = tp_mem / t + ep_mem / ep + exp_mem / (etp * ep)
    else:
        branch = "without_sp"
        act = (sbh * (10 + 24 / t) * L + embedding_act) * scale
        if p == 1:
            act += (sb * padded_vocab_size / t + sbh) * 2
        activations = act * 1.05

    return MegatronTheoretical(
        weight_and_optimizer_bytes=weights, activation_bytes=activations, tp_sharded_params=tp_shard,
        replicated_params=rep_shard, expert_sharded_params=exp_shard, total_params=total_params,
        active_params=active_params, bytes_per_param=bytes_per_param(d),
        bytes_per_expert_param=bytes_per_param(edp), data_parallel_size=d, expert_data_parallel_size=edp,
        activation_branch=branch,
    )


# ----------------------------------------------------------------------------------------------------
# Korthikanti et al. 2022
# ----------------------------------------------------------------------------------------------------


def korthikanti_layer_activation_bytes(
    s: int, b: int, h: int, a: int, t: int = 1, sp: bool = False, recompute: Recompute = "none",
) -> float:
    """Activation bytes of one transformer layer, Table 2 of Korthikanti et al. 2022 (arXiv 2205.05198).

    none: sbh·(10 + 24/t + 5as/(ht)), with SP sbh·(34/t + 5as/(ht)); selective drops the 5as/(ht) term;
    full: 2sbh (the layer input, as the table prints it, whatever t and SP). t = 1 gives sbh·(34 + 5as/h).
    """
    if recompute not in ("none", "selective", "full"):
        raise ConfigError(msg("compat.recompute-must-none", recompute=recompute))
    sbh = Fraction(s * b * h)
    if recompute == "full":
        return float(2 * sbh)
    per = Fraction(34, t) if sp else 10 + Fraction(24, t)
    if recompute == "none":
        per += Fraction(5 * a * s, h * t)
    return float(sbh * per)


def korthikanti_params_bytes(
    h: int, layers: int, t: int = 1, p: int = 1, bytes_per_param: float = 18,
) -> float:
    """Per-device parameter-and-optimizer bytes 12·h²·L/(t·p)·bytes_per_param (Korthikanti et al. 2022, §5 and
    Figure 1; 18 B/param = bf16 weights and grads + fp32 master weights and two Adam states, no ZeRO)."""
    return float(Fraction(12 * h * h * layers, t * p) * Fraction(bytes_per_param))


# ----------------------------------------------------------------------------------------------------
# Narayanan et al. 2021 (PTD-P)
# ----------------------------------------------------------------------------------------------------


def ptdp_flops_per_iteration(G: int, s: int, l: int, h: int, V: int) -> float:
    """FLOPs per training iteration with full recompute, Narayanan et al. 2021 (arXiv 2104.04473) §5.1:
    F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), B the global batch size in sequences."""
    return float(96 * G * s * l * h * h * (1 + Fraction(s, 6 * h) + Fraction(V, 16 * l * h)))


def ptdp_seconds(flops: float, gpus: int, flops_per_gpu: float) -> float:
    """End-to-end time per iteration at an achieved per-GPU throughput: F/(n·X) (same paper, §5.1)."""
    if gpus <= 0 or flops_per_gpu <= 0:
        raise ConfigError(msg("compat.gpus-flops_per_gpu-must"))
    return flops / (gpus * flops_per_gpu)


# ----------------------------------------------------------------------------------------------------
# SAPP-ND relative score (docs/model.md#upstream-score [T-UPSTREAM])
# ----------------------------------------------------------------------------------------------------

UPSTREAM_PARTS = ("FW", "BW", "REC", "DP", "MP", "EP", "CP", "P2P", "BBL")
_UPSTREAM_OPS = ("attMM", "ffMM", "attBMM", "softmax", "headCast", "gather", "ffAct", "normOp", "dropout")


@dataclass(frozen=True)
class UpstreamScore:
    """SAPP-ND's FLOP-weighted relative score of a plan (dimensionless; compare plans, not seconds)."""

    total: float                  # pipeline score + P2P
    stages: tuple[float, ...]     # per-stage score per micro-batch: compute + comm_w·comm + recompute
    parts: dict[str, float]       # UPSTREAM_PARTS over the step (straggler stage × m, bubble, P2P)
    comm_w: float
    seconds: float | None = None  # Σ part·ratio/1000 with calibration ratios (ms per unit per part)


def score_upstream(
    *, stages: Sequence[Sequence[Sequence[str]]], h: int, a: int, s: int, b: int, hff: int, v: int, t: int = 1,
    p: int = 1, m: int = 1, vp: int = 1, cp: int = 1, ep: int = 1, n_kv: int | None = None, sp: bool = False,
    bytes_p: float = 2.0, bytes_compute: float = 2.0, n_exp: int = 1, n_shared: int = 0, hff_exp: int = 0,
    n_chosen: int = 1, cap_fact: float = 1.0, layer_params: float | None = None, zero_level: int = 0,
    n_ops: dict[str, float] | None = None, rec_ops: dict[str, float] | None = None, cp_algo: str = "ring",
    dp_overlap: float = 0.9, tp_overlap: float = 0.5, devices_per_node: int = 8, device: str = "A2",
    calibration: dict[str, float] | None = None,
) -> UpstreamScore:
    """SAPP-ND's performance score (docs/model.md#upstream-score), kept for side-by-side comparison with the step time
    in seconds.

    ``stages[i][chunk]`` lists layer codes: ``E`` embedding, ``N``/``S``/``F`` body layer not / selectively / fully
    recomputed, ``O`` output. Per-op work (attMM 3·(1 + n_kv/a)·b·s·h², ffMM 6·b·s·h·hff, attBMM 6·b·s²·h, softmax
    13·a·b·s², headCast 3·a·b·s², gather b·s·h·(t−1), ffAct 21·b·hff, normOp 30·b·s·h·t/sp, dropout 3·b·s·max(a·s,
    3·h·t/sp)), each × bytes_p/(t·cp), sp = t with sequence parallelism else 1; MoE layers scale ffMM by
    hff_exp/hff·n_chosen·cap_fact. Layer work Σ (1 + rf_op)·n_op·work (rf: F 1, N 0, S ``rec_ops[op]``); the head
    6·b·v·h·s·bytes_p/(16·t). Comm per stage from per-layer volumes at μ = 1: DP (ZeRO level 2: E/(cp·t) + E/t;
    3: E/t; E = ``layer_params``), TP 0.25·s·b·(h + hff)/cp (selective layers keep it only if ``rec_ops['gather']``),
    EP 2·n_chosen·s·b/cp·(ep−1)/ep·h·bytes_compute, CP ring 2·s·b·((rf + 0.5)·h + hff)/t (Ulysses (0.5·rf + 0.5)·h);
    penalties max(1, degree // devices_per_node) for TP, EP, CP; overlaps (1 − dp_overlap) DP and (1 − tp_overlap)
    TP; A3 halves all comm. Stage = compute + comm_w·comm + max(0, recompute − compute)/3 with comm_w =
    1.5·(hff + s)·8192/(h + s) (hff_exp for MoE); pipeline as T-PIPE's p = 1 / 1F1B / interleaved rows; P2P 0.002 ×
    the schedule's send/recv count / p × straggler / sp. Parts FW = compute/3, BW = 2·FW, REC, DP, MP, EP, CP of the
    last straggler stage × m, P2P, and BBL = the rest. Not validated against upstream runs (none are stored).
    """
    if n_kv is None:
        n_kv = a
    sp_div = t if sp else 1
    ops = dict.fromkeys(_UPSTREAM_OPS, 1.0) | (n_ops or {})
    rec = rec_ops or {}
    scale = bytes_p / (t * cp)
    table = {
        "attMM": 3 * (1 + n_kv / a) * b * s * h * h, "ffMM": 6 * b * s * h * hff, "attBMM": 6 * b * s * s * h,
        "softmax": 13 * a * b * s * s, "headCast": 3 * a * b * s * s, "gather": b * s * h * (t - 1),
        "ffAct": 21 * b * hff, "normOp": 30 * b * s * h * t / sp_div,
        "dropout": 3 * b * s * max(a * s, 3 * h * t / sp_div),
    }
    table = {k: w * scale for k, w in table.items()}
    moe = n_exp > 1
    if moe:
        table["ffMM"] *= hff_exp / hff * max(1, n_chosen) * cap_fact

    def rf(code: str, op: str) -> float:
        return 1.0 if code == "F" else float(rec.get(op, 0)) if code == "S" else 0.0

    def work(code: str, with_recomp: bool) -> float:
        if code == "E":
            return 0.0
        if code == "O":
            return 6 * b * v * h * s * bytes_p / (16 * t)
        return sum((1 + with_recomp * rf(code, op)) * ops[op] * w for op, w in table.items())

    params = layer_params if layer_params is not None else 2 * h * h * (1 + n_kv / a) + 2 * h * hff + 4 * h
    comm_t, comm_ep, comm_cp = float(t > 1), float(ep > 1), float(cp > 1)

    def comm(code: str) -> dict[str, float]:
        keep_gather = int(code != "S") | int(bool(rec.get("gather", 0)))
        out = dict.fromkeys(("DP", "MP", "EP", "CP"), 0.0)
        if code not in ("E", "O"):
            out["DP"] = params / (cp * t) + params / t if zero_level == 2 else params / t if zero_level == 3 else 0.0
        if moe:
            tp_vol = 0.25 * h * bytes_compute * (h * ops["attMM"] + ops["ffMM"] * (n_exp / ep * hff_exp +
                                                                                    n_shared * hff))
            out["EP"] = 2 * n_chosen * s * b / cp * (ep - 1) / ep * h * bytes_compute * comm_ep
        else:
            tp_vol = 0.25 * s * b * (h + hff)
        out["MP"] = keep_gather * comm_t * tp_vol / cp
        rf_cp = keep_gather * int(p == 1)
        coeff = (0.5 * rf_cp + 0.5) if cp_algo == "ulysses" else (rf_cp + 0.5)
        out["CP"] = comm_cp * 2 * s * b * (coeff * ops["attMM"] * h + ops["ffMM"] * hff) / t
        return out

    comm_w = 1.5 * ((hff_exp if moe else hff) + s) * 8192 / (h + s)
    penalty = {"DP": 1 - dp_overlap, "MP": max(1, t // devices_per_node) * (1 - tp_overlap),
               "EP": max(1, ep // devices_per_node), "CP": max(1, cp // devices_per_node)}
    a3 = 0.5 if device.upper() == "A3" else 1.0
    stage_scores, stage_parts = [], []
    for stage in stages:
        codes = [code for chunk in stage for code in chunk]
        comp = sum(work(c, False) for c in codes)
        recomp = sum(work(c, True) for c in codes)
        kinds = dict.fromkeys(("DP", "MP", "EP", "CP"), 0.0)
        for c in codes:
            for k, value in comm(c).items():
                kinds[k] += value
        kinds = {k: value * penalty[k] * a3 * comm_w for k, value in kinds.items()}
        rec_part = max(0.0, recomp - comp) / 3
        stage_scores.append(comp + sum(kinds.values()) + rec_part)
        stage_parts.append({"FW": comp / 3, "BW": 2 * comp / 3, "REC": rec_part, **kinds})
    straggler = max(stage_scores)
    total_sum = sum(stage_scores)
    if p == 1:
        pipeline = total_sum * m
    elif vp == 1:
        pipeline = total_sum + (m - 1) * straggler
    else:
        pipeline = total_sum / vp + (m * vp - 1) * straggler / vp
    if p == 1:
        sends = 0
    elif vp == 1:
        sends = 4 * m if p == 2 else 4 * p * m + 4 * p * p - 14 * p
    else:
        sends = 8 * m * vp - 4 * m if p == 2 else 16 * m * vp + 12 if p == 4 else 4 * p * m * vp + 4 * p * p - 13 * p
    p2p = 0.002 * sends / p * straggler / sp_div
    last = len(stage_scores) - 1 - stage_scores[::-1].index(straggler)
    parts = {k: value * m for k, value in stage_parts[last].items()}
    parts["P2P"] = p2p
    parts["BBL"] = pipeline - sum(value for k, value in parts.items() if k != "P2P")
    parts = {k: parts[k] for k in UPSTREAM_PARTS}
    seconds = None
    if calibration is not None:
        seconds = sum(parts[k] * calibration.get(k, 0.0) for k in UPSTREAM_PARTS) / 1000
    return UpstreamScore(total=pipeline + p2p, stages=tuple(stage_scores), parts=parts, comm_w=comm_w, seconds=seconds)
