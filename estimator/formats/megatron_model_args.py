"""The model a Megatron-LM / MindSpeed argument set describes (docs/model.md#frameworks): shape, attention (GQA,
MLA), MoE and its layer pattern, vocabulary, and the architecture switches — with Megatron's own defaults for what
the arguments leave out (NVIDIA/Megatron-LM megatron/training/arguments.py and TransformerConfig @ d98e8a6), each
reported as an assumption. The family profile is never guessed from the file's name: a launch script states its
architecture in flags, so the ``default`` profile supplies only implementation defaults, and the assumption says so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..catalogue import by_shape
from ..limits import FIELD_BOUNDS, check_number
from ..messages import msg
from .flag_source import FlagQueries
from .hub import vocab_of
from .megatron_pipeline import PatternError, layer_pattern, moe_layer_groups
from .support import Collector

# put(key, value, flag): a value read from ``flag``, with the flag, its variable and line as provenance
Put = Callable[[str, Any, str], None]

# tokenizer type -> entries (the ones whose size is fixed by the type itself)
TOKENIZER_VOCAB = {"Llama2Tokenizer": 32000, "GPT2BPETokenizer": 50257}
# flags whose tokenizer (a Hub id or a local path) may name a known model
TOKENIZER_NAME_FLAGS = ("--tokenizer-model", "--tokenizer-name-or-path")
_SHAPE = (("--hidden-size", "model.hidden_size"), ("--ffn-hidden-size", "model.ffn_hidden_size"),
          ("--num-attention-heads", "model.num_attention_heads"), ("--num-experts", "model.num_experts"),
          ("--moe-router-topk", "model.experts_per_token"), ("--n-shared-experts", "model.num_shared_experts"),
          ("--first-k-dense-replace", "model.first_k_dense"), ("--mtp-num-layers", "model.mtp_layers"),
          ("--moe-shared-expert-intermediate-size", "model.shared_ffn_hidden_size"))
# MLA: Megatron's flag, MindSpeed's flag; (flag, field, Megatron's default or None)
MLA_FLAGS = ("--multi-latent-attention", "--multi-head-latent-attention")
_MLA_DIMS = (("--q-lora-rank", "model.q_lora_rank", None), ("--kv-lora-rank", "model.kv_lora_rank", 32),
             ("--qk-head-dim", "model.head_dim", 128), ("--qk-nope-head-dim", "model.head_dim", None),
             ("--qk-pos-emb-head-dim", "model.qk_rope_head_dim", 64),
             ("--qk-rope-head-dim", "model.qk_rope_head_dim", None), ("--v-head-dim", "model.v_head_dim", 128))
MODEL_FLAGS = frozenset({
    "--num-layers", "--noop-layers", *(f for f, _ in _SHAPE), "--moe-intermediate-size", "--moe-ffn-hidden-size",
    "--moe-layer-freq", "--moe-expert-capacity-factor", "--shared-expert-gate", *MLA_FLAGS,
    *(f for f, _, _ in _MLA_DIMS), "--kv-channels", "--group-query-attention", "--num-query-groups",
    "--padded-vocab-size", "--vocab-size", "--tokenizer-type", *TOKENIZER_NAME_FLAGS,
    "--make-vocab-size-divisible-by", "--qk-layernorm", "--untie-embeddings-and-output-weights", "--swiglu",
    "--geglu", "--quick-geglu", "--squared-relu", "--normalization", "--disable-bias-linear", "--add-qkv-bias",
    "--attention-dropout", "--hidden-dropout", "--position-embedding-type", "--max-position-embeddings",
    "--moe-router-dtype"})


def putter(fl: FlagQueries, out: Collector) -> Put:
    """``put(key, value, flag)``: a value read from ``flag``, with the flag, its variable and line as provenance."""

    def put(key: str, value: Any, flag: str) -> None:
        raw = fl.raw(flag) if fl.has(flag) else value
        out.put(key, value, fl.where(flag), raw=raw if raw != "" else value)

    return put


def read_model(fl: FlagQueries, out: Collector, dialect: str, program: str = "") -> bool:
    """Model fields from the arguments; returns whether they give a shape (then Megatron's defaults apply)."""
    put = putter(fl, out)
    shaped = fl.has("--num-layers") or fl.has("--hidden-size")
    total = _layers(fl, out, put)
    for flag, key in _SHAPE:
        value = fl.int(flag, minimum=0)
        if value is not None:
            put(key, value, flag)
    _moe(fl, out, put, total, shaped)
    mla = _attention(fl, out, put, shaped)
    _vocab(fl, out, put, shaped, program)
    _switches(fl, out, put)
    if not shaped:
        return False
    _defaults(fl, out, dialect, mla)
    return True


def _layers(fl: FlagQueries, out: Collector, put: Put) -> int | None:
    total = fl.int("--num-layers", minimum=1)
    noop = fl.int_list("--noop-layers")
    if total is not None:
        check_number(total, FIELD_BOUNDS["model.num_layers"], path=fl.path, key="model.num_layers")  # sizes lists
        if noop and (max(noop) >= total or len(set(noop)) != len(noop)):
            raise fl.error("--noop-layers", msg("megatron_model_args.noop-layers-must", raw=fl.raw('--noop-layers'),
                                                total=total))
        if total - len(noop) < 1:
            raise fl.error("--num-layers", msg("megatron_model_args.num-layers-leaves", total=total, n_noop=len(noop)))
        out.put("model.num_layers", total - len(noop), fl.where("--num-layers") + (" − noop layers" if noop else ""),
                raw=total)
    if noop:
        put("strategy.noop_layers", tuple(noop), "--noop-layers")
    return total - len(noop) if total is not None else None


def _moe(fl: FlagQueries, out: Collector, put: Put, layers: int | None, shaped: bool) -> None:
    experts = fl.int("--num-experts")
    for flag in ("--moe-ffn-hidden-size", "--moe-intermediate-size"):
        if fl.int(flag) is not None:
            put("model.moe_ffn_hidden_size", fl.int(flag), flag)
            break
    if not experts:
        return
    if not fl.has("--moe-router-topk"):
        out.assume("model.experts_per_token", 2, msg("megatron_model_args.moe-router-topk"))
    if fl.int("--moe-shared-expert-intermediate-size") and not fl.has("--n-shared-experts"):
        out.derive("model.num_shared_experts", 1, "--moe-shared-expert-intermediate-size: one shared-expert MLP "
                                                  "of that width (Megatron)")
    if fl.has("--moe-expert-capacity-factor"):
        put("model.capacity_factor", fl.float("--moe-expert-capacity-factor"), "--moe-expert-capacity-factor")
    if fl.has("--shared-expert-gate"):
        put("model.shared_expert_gate", True, "--shared-expert-gate")
    freq = fl.text("--moe-layer-freq")
    if freq is None:
        return
    try:
        pattern = layer_pattern(freq)
        if isinstance(pattern, int):  # layer i is MoE when i % N == 0 (after --first-k-dense-replace, MindSpeed)
            if pattern < 1:
                raise PatternError(f"the MoE layer period must be at least 1; got {pattern}")
            put("model.moe_layer_freq", pattern, "--moe-layer-freq")
            return
        if layers is None:
            raise PatternError("a per-layer pattern needs --num-layers")
        placement = moe_layer_groups(pattern, layers + len(fl.int_list("--noop-layers")))
    except PatternError as exc:
        raise fl.error("--moe-layer-freq", msg("megatron_model_args.moe-layer-freq", freq=freq, exc=exc)) from None
    if isinstance(placement, tuple):
        put("model.first_k_dense", placement[0], "--moe-layer-freq")
        put("model.moe_layer_freq", placement[1], "--moe-layer-freq")
        return
    if fl.has("--noop-layers"):
        raise fl.error("--moe-layer-freq", msg("megatron_model_args.per-layer-moe"))
    groups = [{"kind": kind, "count": count} for kind, count in placement]
    mtp = fl.int("--mtp-num-layers") or 0
    if mtp:
        groups.append({"kind": "moe", "count": mtp, "is_mtp": True})
    put("model.layers", groups, "--moe-layer-freq")


def _attention(fl: FlagQueries, out: Collector, put: Put, shaped: bool) -> bool:
    """GQA or MLA, head dims; returns whether MLA is on."""
    mla_flag = next((f for f in MLA_FLAGS if fl.has(f)), None)
    if mla_flag:
        for flag, key, default in _MLA_DIMS:
            value = fl.int(flag, minimum=0)
            if value is not None:
                put(key, value, flag)
            elif default is not None and key not in out.values and mla_flag == "--multi-latent-attention":
                out.assume(key, default, msg("megatron_model_args.megatron-s-default", flag=flag, default=default))
    else:
        stray = [f for f, _, _ in _MLA_DIMS if fl.has(f) and f != "--qk-head-dim"]
        if stray:
            out.warn("W-MLA", msg("W-MLA", stray=', '.join(stray)))
    if fl.int("--kv-channels") is not None and "model.head_dim" not in out.values:
        put("model.head_dim", fl.int("--kv-channels", minimum=1), "--kv-channels")
    heads = fl.int("--num-attention-heads")
    if fl.has("--group-query-attention") and fl.int("--num-query-groups") is not None:
        put("model.num_kv_heads", fl.int("--num-query-groups", minimum=1), "--num-query-groups")
    elif fl.has("--num-query-groups") and not fl.has("--group-query-attention") and not mla_flag:
        out.warn("W-GQA", msg("W-GQA"))
    if heads and not mla_flag and shaped and "model.num_kv_heads" not in out.values:
        out.derive("model.num_kv_heads", heads, "no --group-query-attention: one KV head per query head")
    return mla_flag is not None


def _vocab(fl: FlagQueries, out: Collector, put: Put, shaped: bool, program: str) -> None:
    padded = fl.int("--padded-vocab-size", minimum=1)
    if padded is not None:
        put("model.vocab_size", padded, "--padded-vocab-size")
        out.derive("model.make_vocab_divisible_by", 1, "--padded-vocab-size is used as is")
        return
    vocab = fl.int("--vocab-size", minimum=1)
    tokenizer = fl.text("--tokenizer-type")
    if vocab is not None:
        put("model.vocab_size", vocab, "--vocab-size")
    elif tokenizer in TOKENIZER_VOCAB:
        vocab = TOKENIZER_VOCAB[tokenizer]
        out.assume("model.vocab_size", vocab, msg("megatron_model_args.tokenizer-type-has", tokenizer=tokenizer,
                                                  vocab=vocab))
    elif tokenizer is None and shaped and program.endswith("pretrain_gpt.py"):
        vocab = TOKENIZER_VOCAB["GPT2BPETokenizer"]
        out.assume("model.vocab_size", vocab, msg("megatron_model_args.tokenizer-type-pretrain_gpt", vocab=vocab))
    elif shaped:
        vocab = _known_vocab(fl, out)
    if vocab is not None and (fl.has("--make-vocab-size-divisible-by") or shaped):
        divisible = fl.int("--make-vocab-size-divisible-by", minimum=1)
        if divisible is not None:
            put("model.make_vocab_divisible_by", divisible, "--make-vocab-size-divisible-by")
        else:
            out.assume("model.make_vocab_divisible_by", 128, msg("megatron_model_args.megatron-pads-vocabulary"))


def _known_vocab(fl: FlagQueries, out: Collector) -> int | None:
    """The vocabulary of the model the tokenizer names (local model directory, Hugging Face cache, catalogue),
    else of the one catalogued model with the script's shape; None when neither is known."""
    for flag in TOKENIZER_NAME_FLAGS:
        name = fl.text(flag)
        found = vocab_of(name) if name else None
        if found is not None:
            out.assume("model.vocab_size", found[0], msg("megatron_model_args.vocab_size-tokenizer-s", flag=flag,
                                                         name=name, found=found[1]))
            return found[0]
    shape = (fl.int("--hidden-size"), fl.int("--num-layers"), fl.int("--num-attention-heads"))
    if None in shape:
        return None
    models = by_shape(*shape, fl.int("--ffn-hidden-size"))  # type: ignore[arg-type]
    vocabs = {m.config.get("text_config", m.config).get("vocab_size") for m in models}
    if len(vocabs) != 1 or None in vocabs:
        return None
    vocab = int(vocabs.pop())  # type: ignore[arg-type]
    names = ", ".join(m.id for m in models)
    out.assume("model.vocab_size", vocab, msg("megatron_model_args.tokenizer-known-but", hidden=shape[0],
                                              layers=shape[1], heads=shape[2], names=names))
    return vocab


def _switches(fl: FlagQueries, out: Collector, put: Put) -> None:
    if fl.has("--qk-layernorm"):
        put("model.qk_norm", True, "--qk-layernorm")
    for flag, key, value in (("--untie-embeddings-and-output-weights", "model.tie_embeddings", False),
                             ("--swiglu", "model.gated_ffn", True), ("--geglu", "model.gated_ffn", True),
                             ("--quick-geglu", "model.gated_ffn", True), ("--squared-relu", "model.gated_ffn", False)):
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
    for flag, key in (("--attention-dropout", "model.attention_dropout"), ("--hidden-dropout", "model.hidden_dropout")):
        rate = fl.float(flag)
        if rate is not None:
            if not 0 <= rate < 1:
                raise fl.error(flag, msg("megatron_model_args.must-probability", flag=flag, rate=rate))
            put(key, rate, flag)


def _defaults(fl: FlagQueries, out: Collector, dialect: str, mla: bool) -> None:
    """Megatron's defaults for a described model, each an assumption with its source."""
    out.assume("model.family", "default", msg("megatron_model_args.megatron-arguments-state"))
    hidden = fl.int("--hidden-size")
    if "model.ffn_hidden_size" not in out.values and hidden:
        if fl.has("--swiglu"):
            ffn = int((4 * hidden * 2 / 3) / 64) * 64
            why = msg("megatron_model_args.ffn-swiglu")
        else:
            ffn, why = 4 * hidden, msg("megatron_model_args.ffn-4h")
        out.assume("model.ffn_hidden_size", ffn, why)
    if fl.int("--num-experts") and "model.moe_ffn_hidden_size" not in out.values and \
            "model.ffn_hidden_size" in out.values:
        out.assume("model.moe_ffn_hidden_size", out.values["model.ffn_hidden_size"],
                   msg("megatron_model_args.moe-ffn-hidden"))
    defaults = (("model.tie_embeddings", True, msg("megatron_model_args.tied")),
                ("model.gated_ffn", False, msg("megatron_model_args.gelu")),
                ("model.norm", "layer", msg("megatron_model_args.layernorm")),
                ("model.attention_dropout", 0.1, msg("megatron_model_args.attention-dropout")),
                ("model.hidden_dropout", 0.1, msg("megatron_model_args.hidden-dropout")))
    for key, value, why in defaults:
        if key not in out.values:
            out.assume(key, value, why)
    if not fl.has("--disable-bias-linear"):
        for key in ("model.qkv_bias", "model.out_bias", "model.mlp_bias"):
            if key not in out.values:
                out.assume(key, True, msg("megatron_model_args.disable-bias-linear"))
    kind = fl.text("--position-embedding-type") or ("rope" if fl.has("--use-rotary-position-embeddings") else
                                                    "learned_absolute")
    if kind == "learned_absolute" and not fl.has("--no-position-embedding") and not mla:
        # [P-POS] Megatron's LanguageModelEmbedding adds a learned table of --max-position-embeddings rows
        # (learned_absolute is the default --position-embedding-type)
        length = fl.int("--max-position-embeddings", minimum=1)
        if length:
            out.put("model.learned_positions", length, "--max-position-embeddings")
        elif seq := fl.int("--seq-length", minimum=1):
            out.assume("model.learned_positions", seq, msg("megatron_model_args.learned-positions-seq"))


__all__ = ["MLA_FLAGS", "MODEL_FLAGS", "TOKENIZER_NAME_FLAGS", "TOKENIZER_VOCAB", "putter", "read_model"]
