"""ModelSpec: the shape of the network being trained (docs/model.md#inputs-and-outputs).

Absent is not zero (DECISION D22): hidden size, layers, heads and vocabulary are required; every default
the estimator fills in is reported as an assumption by ``resolve``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

from .errors import ModelSpecError
from .kinds import base_of, kind_for_layer, known_kinds
from .kinds import generation as kinds_generation
from .messages import Message, joined, msg
from .records import Record

BODY_KINDS = ("dense", "moe", "lin_dense", "lin_moe", "noop", "vision")


@dataclass(frozen=True)
class LayerGroup(Record):
    """``count`` consecutive layers of one kind; MTP modules come last with ``is_mtp``."""

    kind: str
    count: int
    is_mtp: bool = False


@dataclass(frozen=True)
class VisionSpec(Record):
    """A vision tower in front of the language model (Qwen2-VL style ViT + patch merger),
    docs/model.md#vision-towers."""

    num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    num_attention_heads: int
    num_kv_heads: int | None = None
    head_dim: int | None = None
    patch_size: int = 14
    in_channels: int = 3
    temporal_patch_size: int = 2
    spatial_merge_size: int = 2
    out_hidden_size: int | None = None
    gated_ffn: bool = False
    norm: str = "layer"
    frozen: bool = True
    projector_frozen: bool = True
    seq_length: int | None = None
    num_position_embeddings: int | None = None


_STACKS: dict[tuple, tuple[LayerGroup, ...]] = {}  # ModelSpec._stack's layer groups, by the values they read
STACKS = 64  # at most this many kept (emptied when full)


@dataclass(frozen=True)
class ModelSpec(Record):
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    vocab_size: int
    name: str = "model"
    family: str | None = None
    hf_architectures: tuple[str, ...] = ()
    model_type: str | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    v_head_dim: int | None = None
    ffn_hidden_size: int | None = None
    tie_embeddings: bool = False
    # learned absolute position embeddings: a table of this many positions × hidden beside the word embedding
    # (Megatron's default --position-embedding-type learned_absolute, HF OPT's embed_positions); 0: none
    learned_positions: int = 0
    qk_norm: bool = False
    output_gate: bool = False
    qkv_bias: bool | None = None
    out_bias: bool | None = None
    mlp_bias: bool | None = None
    router_bias: bool = False
    shared_expert_gate: bool = False
    norm: str | None = None
    gated_ffn: bool | None = None
    make_vocab_divisible_by: int | None = None
    num_experts: int = 0
    experts_per_token: int = 0
    num_shared_experts: int = 0
    moe_ffn_hidden_size: int | None = None
    shared_ffn_hidden_size: int | None = None
    first_k_dense: int = 0
    moe_layer_freq: int = 1
    capacity_factor: float | None = None
    attention_dropout: float | None = None  # None: the family profile's
    hidden_dropout: float | None = None  # None: the family profile's (also the embedding's, as in Megatron)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    mtp_layers: int = 0
    linear_num_key_heads: int = 0
    linear_key_head_dim: int = 0
    linear_num_value_heads: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel: int = 4
    sliding_window: int | None = None  # keys a sliding-window layer attends (HF sliding_window)
    # DeepSeek sparse attention's lightning indexer (HF keys of the same names; estimator/kinds/dsa.yaml)
    index_n_heads: int | None = None
    index_head_dim: int | None = None
    index_topk: int | None = None
    # Mamba-2 (state-space) layers of a hybrid model (HF mamba_* keys; estimator/kinds/mamba2.yaml): heads, head dim,
    # state size, B/C groups, causal-conv width, biases of the conv and of the in/out projections
    mamba_num_heads: int | None = None
    mamba_head_dim: int | None = None
    mamba_state_dim: int | None = None
    mamba_num_groups: int | None = None
    mamba_conv_kernel: int | None = None
    mamba_conv_bias: bool | None = None
    mamba_proj_bias: bool | None = None
    layer_types: tuple[str, ...] = ()
    vision: VisionSpec | None = None
    layers: tuple[LayerGroup, ...] = field(default=())

    _nested: ClassVar = {"vision": VisionSpec, "layers": LayerGroup}

    # -- shape predicates -------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def has_linear_attention(self) -> bool:
        return any(g.kind.startswith("lin_") for g in self.layer_stack())

    # -- layer stack ------------------------------------------------------------------------------
    def layer_stack(self) -> tuple[LayerGroup, ...]:
        return self._stack

    @cached_property
    def _stack(self) -> tuple[LayerGroup, ...]:
        """The ordered layer groups: explicit ``layers`` if given, else built from first_k_dense,
        moe_layer_freq and HF ``layer_types``; MTP modules last. Kept by the values it reads (and the layer-kind
        registry's generation) across model records: the plan session makes a new one on every edit."""
        if self.layers:
            return self.layers
        values = (self.num_layers, self.is_moe, self.first_k_dense, self.moe_layer_freq, self.layer_types,
                  self.model_type, self.mtp_layers)
        key = (kinds_generation(), values, tuple(map(type, values)), tuple(map(type, self.layer_types)))
        got = _STACKS.get(key)
        if got is None:
            if len(_STACKS) >= STACKS:
                _STACKS.clear()
            got = _STACKS[key] = self._build_stack()
        return got

    def _build_stack(self) -> tuple[LayerGroup, ...]:
        kinds: list[str] = []
        for index in range(self.num_layers):
            moe = self.is_moe and index >= self.first_k_dense and (
                self.moe_layer_freq <= 1 or (index - self.first_k_dense) % self.moe_layer_freq == 0)
            layer_type = self.layer_types[index] if index < len(self.layer_types) else None
            linear = layer_type is not None and layer_type.startswith("linear")
            kind = ("lin_" if linear else "") + ("moe" if moe else "dense")
            # a layer kind described as data (estimator/kinds) may claim this layer type or model type
            kinds.append(kind_for_layer(kind, layer_type, self.model_type))
        groups: list[LayerGroup] = []
        for kind in kinds:
            if groups and groups[-1].kind == kind:
                groups[-1] = LayerGroup(kind, groups[-1].count + 1)
            else:
                groups.append(LayerGroup(kind, 1))
        if self.mtp_layers:
            mtp_kind = kind_for_layer("moe" if self.is_moe else "dense", None, self.model_type)
            groups.append(LayerGroup(mtp_kind, self.mtp_layers, is_mtp=True))
        return tuple(groups)

    def body_kinds(self) -> tuple[str, ...]:
        """Kind of every body layer in model order (MTP excluded)."""
        return self._body_kinds

    @cached_property
    def _body_kinds(self) -> tuple[str, ...]:
        out: list[str] = []
        for group in self.layer_stack():
            if not group.is_mtp:
                out.extend([group.kind] * group.count)
        return tuple(out)

    def mtp_kinds(self) -> tuple[str, ...]:
        return self._mtp_kinds

    @cached_property
    def _mtp_kinds(self) -> tuple[str, ...]:
        out: list[str] = []
        for group in self.layer_stack():
            if group.is_mtp:
                out.extend([group.kind] * group.count)
        return tuple(out)

    # -- checks -----------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise ModelSpecError for a shape that cannot be priced (checked once per instance)."""
        if "_checked" not in self.__dict__:
            self._check()
            self.__dict__["_checked"] = True

    def _check(self) -> None:
        problems: list[Message] = []
        for name in ("hidden_size", "num_layers", "num_attention_heads", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                problems.append(msg("model.model-must-positive", name=name, value=value))
        if problems:
            raise ModelSpecError(joined(problems))
        n_kv = self.num_kv_heads or self.num_attention_heads
        if not self.is_mla and self.num_attention_heads % n_kv:
            problems.append(msg("model.num_attention_heads-must-multiple", num_attention_heads=self.num_attention_heads,
                                n_kv=n_kv))
        body = sum(g.count for g in self.layer_stack() if not g.is_mtp)
        mtp = sum(g.count for g in self.layer_stack() if g.is_mtp)
        if self.layers and body != self.num_layers:
            problems.append(msg("model.layer-groups-sum", body=body, num_layers=self.num_layers))
        if self.layers and mtp != self.mtp_layers:
            problems.append(msg("model.mtp-layer-groups", mtp=mtp, mtp_layers=self.mtp_layers))
        for group in self.layer_stack():
            if group.kind not in BODY_KINDS and group.kind not in known_kinds():
                problems.append(msg("model.unknown-layer-kind", kind=group.kind, BODY_KINDS=', '.join(BODY_KINDS),
                                    value=', '.join(known_kinds()) or 'none'))
        kinds = {base_of(g.kind) for g in self.layer_stack()}
        if kinds & {"moe", "lin_moe"}:
            if not self.num_experts or not self.experts_per_token:
                problems.append(msg("model.moe-layers-need"))
            if not self.moe_ffn_hidden_size:
                problems.append(msg("model.moe-layers-need-2"))
        if kinds & {"dense", "lin_dense"} and not self.ffn_hidden_size:
            problems.append(msg("model.dense-layers-need"))
        if kinds & {"lin_dense", "lin_moe"} and not (
                self.linear_num_key_heads and self.linear_key_head_dim and self.linear_num_value_heads
                and self.linear_value_head_dim):
            problems.append(msg("model.linear-attention-layers"))
        if self.is_mla and not self.qk_rope_head_dim:
            problems.append(msg("model.mla-kv_lora_rank-needs"))
        for name in ("attention_dropout", "hidden_dropout"):
            rate = getattr(self, name)
            if rate is not None and not 0 <= rate < 1:
                problems.append(msg("model.model-must-probability", name=name, rate=rate))
        if self.experts_per_token > max(self.num_experts, 0):
            problems.append(msg("model.experts_per_token-exceeds-num_experts", experts_per_token=self.experts_per_token,
                                num_experts=self.num_experts))
        if problems:
            raise ModelSpecError(joined(problems))
