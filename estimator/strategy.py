"""Strategy: how the model is spread over devices and what it keeps in memory (docs/model.md#inputs-and-outputs).

``None`` in a width or switch means "the framework's default" (resolved in ``resolve``), so that a plan
can say only what differs from what the framework does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .records import Record

SCHEDULES = ("1f1b", "interleaved", "gpipe", "seq1f1b", "seqsmartvpp", "zbv", "dualpipev", "looped_bfs",
             "interleaved_zb")
V_SCHEDULES = ("zbv", "dualpipev")
CP_ALGOS = ("ring", "ulysses", "hybrid", "allgather")
RECOMPUTE_MODES = ("none", "selective", "full")
LAYER_OPTIONS = ("none", "selective", "comm", "both", "full")
SHARDING_MODES = ("none", "zero1", "zero2", "zero3", "fsdp", "hsdp", "mf_op")
FSDP_MODES = ("fsdp", "hsdp")
SELECTIVE_RULES = ("hyperparallel", "torchtitan_op", "mindformers", "megatron")
# issue 11: what real runs turn on (docs/plan-files.md names each field)
FP8_RECIPES = ("none", "tensorwise", "delayed", "rowwise", "blockwise", "mxfp8")
COMPILE_COMPONENTS = ("model", "loss")
LOSS_FUSIONS = ("none", "fused", "chunked")
PEFT_METHODS = ("none", "lora", "qlora")
# LoRA target modules, canonical names: separate projections (HF PEFT) or the fused ones Megatron keeps (qkv:
# linear_qkv, fc1: linear_fc1 = gate+up); MLA's projections by their DeepSeek names
LORA_TARGETS = ("q", "k", "v", "qkv", "o", "gate", "up", "fc1", "down", "q_a", "q_b", "kv_a", "kv_b")
# module groups whose saved activations an offload/swap sends to the host (MindSpeed --swap-modules names,
# MindFormers swap_config layer_swap = every group of the layer)
OFFLOAD_GROUPS = ("input_norm", "self_attention", "post_attention_norm", "mlp", "layer")
# freeze (partial-parameter) fine-tuning: module groups of a trainable layer that train (LLaMA-Factory
# freeze_trainable_modules: self_attn, mlp, input_layernorm, post_attention_layernorm)
TRAINABLE_PARTS = ("self_attention", "mlp", "input_norm", "post_attention_norm")
# MindSpeed --moe-zero-memory: the routed experts' dispatched input and activation output freed after the forward
MOE_ZERO_MEMORY = ("disable", "level0", "level1")
# the Strategy fields of issue 11 (writers that do not express one refuse a change of it)
FEATURE_FIELDS = ("fp8", "fp8_param", "fp8_experts", "fp8_amax_history", "compile", "loss_fusion", "async_tp",
                  "overlap_grad_reduce", "overlap_param_gather", "cp_load_balance", "peft", "lora_rank",
                  "lora_targets", "lora_dropout", "lora_param_bytes", "qlora_double_quant", "offload_activations",
                  "offload_counts", "offload_layers", "offload_optimizer", "offload_params", "moe_zero_memory",
                  "moe_zero_memory_layers", "mla_zero_memory", "trainable_layers", "trainable_parts",
                  "frozen_param_bytes", "checkpoint_trainable_only", "tp_comm_overlap_cfg")
# DeepSpeed ZeRO buffer sizes (writers for other frameworks refuse a change of them)
ZERO_BUFFER_FIELDS = ("reduce_bucket", "allgather_bucket", "prefetch_bucket", "max_live_params", "overlap_comm")
SWITCHES = ("core", "head_cast", "dropout", "norm_out", "gather", "act", "qk_v", "mla_up", "moe_act", "mlp", "moe",
            "shared_experts")

# A per-stage count: None (not given), True/False (every layer / none), an int applied to every slot,
# a list[p], or a list[vp][p].
Counts = None | bool | int | tuple[int, ...] | tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class RecomputeRange(Record):
    """``count`` layers from model-order body+MTP index ``first`` get ``option``."""

    first: int
    count: int
    option: str
    switches: tuple[str, ...] | None = None


@dataclass(frozen=True)
class OffloadLayers(Record):
    """The model-order body+MTP indices of the layers that offload ``group``'s saved activations (MindFormers
    swap_config ``layers: [...]`` lists, read as global layer ids)."""

    group: str
    layers: tuple[int, ...]


@dataclass(frozen=True)
class UbGemm(Record):
    """One GEMM's Transformer Engine userbuffer setting from Megatron's ``--tp-comm-overlap-cfg`` YAML (None:
    TE's default): the overlap method, whether it reduce-scatters, whether its buffer is FP8."""

    name: str
    method: str | None = None
    is_reduce_scatter: bool | None = None
    fp8_buf: bool | None = None


@dataclass(frozen=True)
class RecomputePlan(Record):
    default_mode: str = "none"
    full_counts: Counts = None
    sel_counts: Counts = None
    comm_counts: Counts = None
    ranges: tuple[RecomputeRange, ...] = ()
    allow_overlap: bool = False
    uniform_group: int = 0
    switches: tuple[str, ...] | None = None  # switches a selective layer recomputes (overrides the rule)
    rule: str | None = None

    _nested: ClassVar = {"ranges": RecomputeRange}


@dataclass(frozen=True)
class ShardingSpec(Record):
    mode: str = "none"
    os: int | None = None
    os_e: int | None = None
    span_cp: bool = True
    grad_shard: bool = False
    keep_gathered_weights: bool | None = None
    fp32_grad_partition: bool = False
    fsdp_layout: str = "torchtitan"
    reshard_after_forward: bool | None = None
    reshard_head_unit: bool = False


@dataclass(frozen=True)
class Strategy(Record):
    seq_length: int
    dp: int = 1
    tp: int = 1
    pp: int = 1
    vpp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None
    d_rep: int | None = None
    d_sh: int | None = None
    micro_batch_size: int = 1
    micro_batches: int = 1
    n_acc: int = 1
    sequence_parallel: bool = False
    cp_algo: str = "ring"
    ulysses_degree: int | None = None
    schedule: str | None = None
    n_s: int = 1
    vpp_group: int | None = None
    overlap_moe_ep_comm: bool = False
    # layout
    offset: int | tuple[int, ...] | tuple[tuple[int, ...], ...] | None = None
    partition: tuple[int, ...] | tuple[tuple[int, ...], ...] | None = None
    offset_rule: str = "broadcast"
    mtp_in_offset: bool = False
    emb_out_in_offset: bool = False
    noop_layers: tuple[int, ...] = ()
    vision_partition: tuple[int, ...] | None = None
    rescale_user_layout: bool = False
    # memory plans
    recompute: RecomputePlan = field(default_factory=RecomputePlan)
    sharding: ShardingSpec = field(default_factory=ShardingSpec)
    # byte widths (None: framework default, docs/model.md#byte-widths-per-framework)
    param_bytes: float | None = None
    compute_bytes: float | None = None
    grad_bytes: float | None = None
    master_bytes: float | None = None
    optimizer_state_bytes: float | None = None
    n_optimizer_states: int | None = None
    softmax_bytes: float | None = None
    dropout_mask_bytes: float | None = None
    norm_bytes: float | None = None
    residual_bytes: float | None = None
    loss_bytes: float | None = None
    reduce_bytes: float | None = None
    # switches
    vocab_emb_dp: bool = False
    vocab_parallel_loss: bool | None = None
    recompute_slice_activation: bool = False
    flash_attention: bool | None = None
    grouped_gemm: bool = False
    swap_optimizer: bool = False
    swap_times: int = 1
    reuse_fp32_param: bool = False
    frozen_modules: tuple[str, ...] = ()
    # FP8 / MXFP8 training (None or "none": bf16 matmuls)
    fp8: str = "none"
    fp8_param: bool = False
    fp8_experts: bool | None = None
    fp8_amax_history: int | None = None
    # torch.compile and the loss kernel
    compile: tuple[str, ...] = ()
    loss_fusion: str | None = None
    # communication overlaps
    async_tp: bool = False
    tp_comm_overlap_cfg: tuple[UbGemm, ...] = ()  # TE userbuffer settings per GEMM (Megatron --tp-comm-overlap-cfg)
    overlap_grad_reduce: bool | None = None
    overlap_param_gather: bool | None = None
    cp_load_balance: bool | None = None
    # parameter-efficient fine-tuning
    peft: str = "none"
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ()
    lora_dropout: float = 0.0
    lora_param_bytes: float | None = None
    qlora_double_quant: bool = True
    # freeze fine-tuning: the body layers whose weights train (model order, a negative index counted from the last
    # layer; None: every layer), the module groups
    # of those that train ((): all), the stored width of frozen weights (None: param_bytes), and whether
    # activation checkpointing skips layers without trainable weights (LLaMA-Factory's gradient checkpointing)
    trainable_layers: tuple[int, ...] | None = None
    trainable_parts: tuple[str, ...] = ()
    frozen_param_bytes: float | None = None
    checkpoint_trainable_only: bool = False
    # offload and swap to host memory
    offload_activations: tuple[str, ...] = ()
    offload_counts: Counts = None
    # per group, the layers that offload it; a group of offload_activations without a list offloads in every
    # layer (empty: every layer offload_counts picks offloads every group)
    offload_layers: tuple[OffloadLayers, ...] = ()
    offload_optimizer: bool = False
    offload_params: bool = False
    moe_zero_memory: str = "disable"
    moe_zero_memory_layers: int | None = None  # level1 on that many layers of each stage, level0 on the others
    mla_zero_memory: bool = False  # MindSpeed-LLM --mla-zero-memory: MLA attention checkpointed from its input
    # DeepSpeed ZeRO communication buffers, in elements (None: the Hugging Face Trainer's "auto" from the
    # hidden size h — h² buckets, 0.9·h² prefetch — else DeepSpeed's defaults; priced for hf_trainer only)
    reduce_bucket: int | None = None
    allgather_bucket: int | None = None
    prefetch_bucket: int | None = None
    max_live_params: int | None = None
    overlap_comm: bool | None = None

    _nested: ClassVar = {"recompute": RecomputePlan, "sharding": ShardingSpec, "offload_layers": OffloadLayers,
                         "tp_comm_overlap_cfg": UbGemm}

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def global_batch_size(self) -> int:
        return self.micro_batch_size * self.dp * self.micro_batches * self.n_acc

    @property
    def schedule_name(self) -> str:
        """The schedule actually run: an unset schedule is 1F1B, interleaved when vpp > 1."""
        if self.schedule:
            if self.schedule == "1f1b" and self.vpp > 1:
                return "interleaved"
            return self.schedule
        return "interleaved" if self.vpp > 1 else "1f1b"
