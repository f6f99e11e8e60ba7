"""What a MindSpeed-LLM / MindSpeed-MM launch script runs differently from what is priced (docs/decisions.md
D-MG-AUDIT, D-MS-AUDIT): MindSpeed flags said when given, and the flags whose absence is said because MindSpeed
then runs an unfused PyTorch path. Each warning names the flag and which way the estimate errs. MindSpeed flags
that change neither memory nor time are in ``megatron_vocab.yaml`` under the category that says why."""

from __future__ import annotations

from ..attention_mask import mask_bytes
from ..errors import ConfigError
from ..messages import Text, msg
from ..units import fmt_bytes
from ..warnings import EstimateWarning
from .flag_source import FlagQueries
from .megatron_model_args import MLA_FLAGS

# said when given (MindSpeed-LLM 2.1.0 with MindSpeed 2.1.0_core_r0.12.1; D-MS-AUDIT)
GIVEN: dict[str, Text] = {
    "--moe-permutation-async-comm": msg("mindspeed_unpriced.async-permutation"),
    "--use-fused-moe-token-permute-and-unpermute": msg("mindspeed_unpriced.fused-permute"),
    "--reset-position-ids": msg("mindspeed_unpriced.reset-position-ids"),
}
# a value that runs what is priced (MindSpeed's default) is not said
DEFAULT_VALUES = {"--ai-framework": "pytorch"}
VALUED: dict[str, Text] = {"--ai-framework": msg("mindspeed_unpriced.mindspore-backend")}
# MindSpeed-LLM's --padded-base-length default (features_manager/transformer/multi_latent_attention/mla_feature.py)
PADDED_BASE_LENGTH = 128
# the side of the compressed causal mask MindSpeed's flash attention keeps (generate_mask.py, sparse_mode 2)
COMPRESSED_MASK_SIDE = 2048


def mindspeed_warnings(fl: FlagQueries) -> list[EstimateWarning]:
    """Everything D-MS-AUDIT says about a MindSpeed script's flags (and D-MG-AUDIT's unfused RMSNorm)."""
    out = [said(flag, effect) for flag, effect in GIVEN.items() if fl.has(flag)]
    for check in (_valued, _absent, _dataloader_mask, _flash_attention_mask):
        try:
            out.extend(check(fl))
        except ConfigError:  # a malformed or unresolved value is the readers' to report
            continue
    return out


def _valued(fl: FlagQueries) -> list[EstimateWarning]:
    out = []
    for flag, effect in VALUED.items():
        value = (fl.values(flag) or ("",))[0].strip().lower() if fl.has(flag) else ""
        if value and value != DEFAULT_VALUES[flag]:
            out.append(said(flag, effect))
    return out


def said(flag: str, effect: Text) -> EstimateWarning:
    return EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.megatron-flag", flag=flag, effect=effect))


def _absent(fl: FlagQueries) -> list[EstimateWarning]:
    """The fused kernels MindSpeed runs only with their flag, said when the flag is absent where it applies."""
    out = []
    norm = fl.text("--normalization")
    if norm and "rms" in norm.lower() and not fl.has("--use-fused-rmsnorm"):
        # PTNorm → megatron.legacy.model.rms_norm.RMSNorm; MindSpeed's mindspeed/core/fusions/rms_norm.py runs
        # torch_npu.npu_rms_norm only with the flag, otherwise the input's fp32 copy is saved ([A-NORM.eager])
        out.append(EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.mindspeed-unfused-rmsnorm")))
    position = (fl.text("--position-embedding-type") or "").lower()
    if ("rope" in position or fl.has("--use-rotary-position-embeddings")) and \
            not fl.has("--use-fused-rotary-pos-emb"):
        # mindspeed/core/models/common/embeddings/rotary_pos_embedding.py: (t·cos) + (rotate_half(t)·sin) in
        # PyTorch without the flag; both paths keep the same cos/sin for the backward
        out.append(said_absent("--use-fused-rotary-pos-emb", msg("mindspeed_unpriced.unfused-rope")))
    if any(fl.has(f) for f in MLA_FLAGS) and fl.has("--use-flash-attn") and not fl.has("--mla-fa-without-pad") \
            and not fl.has("--mla-fa-divide-qk"):
        out.extend(_mla_padding(fl))
    # grouped GEMMs run the experts (a MindSpeed-MM model.json states them, not the script's flags)
    if fl.has("--moe-grouped-gemm") and fl.int("--num-experts") != 0 and \
            not fl.has("--gemm-gradient-accumulation-fusion"):
        # mindspeed/core/transformer/moe/experts.py: gmm(..., gemm_fusion=False) returns the experts' weight
        # gradients as new tensors that the gradient hook adds into main_grad
        out.append(said_absent("--gemm-gradient-accumulation-fusion", msg("mindspeed_unpriced.gmm-grad-unfused")))
    return out


def _mla_padding(fl: FlagQueries) -> list[EstimateWarning]:
    """MindSpeed-LLM's MLA (tasks/models/transformer/multi_latent_attention.py) pads the flash attention's q, k and
    v to a multiple of --padded-base-length per head (BNSD: v to the q/k width) unless --mla-fa-without-pad, and
    slices the output back: the padded tensors are what the kernel saves. Priced unpadded."""
    nope = fl.int("--qk-nope-head-dim") or fl.int("--qk-head-dim")
    rope = fl.int("--qk-rope-head-dim") or fl.int("--qk-pos-emb-head-dim")
    value = fl.int("--v-head-dim")
    if not (nope and rope and value):
        return [said_absent("--mla-fa-without-pad", msg("mindspeed_unpriced.mla-padding"))]
    qk = nope + rope
    if qk == value:
        return []
    base = fl.int("--padded-base-length", minimum=1) or PADDED_BASE_LENGTH
    if (fl.text("--shape-order") or "SBH").upper() == "BNSD":
        widths = {"v": qk, "o": qk}
    else:
        padded = -(-max(qk, value) // base) * base
        widths = {"q": padded, "k": padded, "v": padded, "o": padded}
    return [said_absent("--mla-fa-without-pad", msg("mindspeed_unpriced.mla-padding.sized", qk=qk, v=value,
                                                   padded=", ".join(f"{k} {w}" for k, w in widths.items())))]


def _dataloader_reasons(fl: FlagQueries) -> list[str]:
    """Why MindSpeed-LLM's data loader builds the attention mask (``_dataloader_mask``); empty when it does not."""
    position = (fl.text("--position-embedding-type") or "").lower()
    why = [flag for flag, on in (
        ("--reset-attention-mask --attention-mask-type general", fl.has("--reset-attention-mask") and
         (fl.text("--attention-mask-type") or "causal").lower() == "general"),
        ("--position-embedding-type alibi", "alibi" in position and not fl.has("--use-flash-attn")),
        ("--tokenizer-padding-side left", (fl.text("--tokenizer-padding-side") or "right").lower() == "left"),
    ) if on]
    if (fl.text("--stage") or "").lower() == "sft" and not fl.has("--reset-position-ids"):
        why.append("--stage sft")
    return why


def _dataloader_mask(fl: FlagQueries) -> list[EstimateWarning]:
    """MindSpeed (megatron_basic/arguments_basic.py) turns Megatron's dataloader mask off, and MindSpeed-LLM
    (training/arguments.py ``_validate_create_attention_mask_in_dataloader``) back on only for a document mask
    (--reset-attention-mask with --attention-mask-type general), ALiBi without flash attention, or left padding;
    then ``get_batch_on_this_tp_rank`` (training/utils.py) puts each micro-batch's b×1×s×s boolean mask on the
    devices of the first and last pipeline stages (every stage with --reset-position-ids). Fine-tuning (``--stage
    sft``, tasks/posttrain/sft/sft_trainer.py) builds it on every stage with ``get_tune_attention_mask`` unless
    --reset-position-ids packs the documents. Not priced: said, with the whole mask's size: MindSpeed's
    ``get_batch_on_this_cp_rank`` (mindspeed/utils.py in 2.1.0; core/context_parallel/get_batch_utils.py later)
    skips the ``attention_mask`` key for the causal ring, Ulysses and hybrid algorithms, so unlike Megatron-LM's
    (b×1×(s/cp)×s) every context-parallel rank keeps b×1×s×s. Only the ``general`` mask type under the ring or hybrid
    algorithm slices it to its s/cp rows (cut into cp column pieces); whether the whole mask is then freed depends
    on the version (MindSpeed-LLM's later get_batch_utils.py keeps it through ``set_attention_mask``), so there the
    size said is the larger figure, not divided by cp."""
    why = _dataloader_reasons(fl)
    if not why:
        return []
    sft = "--stage sft" in why
    where = msg("mindspeed_unpriced.mask-every-stage") if sft or fl.has("--reset-position-ids") else \
        msg("mindspeed_unpriced.mask-first-last")
    seq, micro = fl.int("--seq-length", 1), fl.int("--micro-batch-size", 1) or 1
    if seq is None:
        return [EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.mindspeed-attention-mask", why="; ".join(why),
                                                    where=where))]
    size = fmt_bytes(mask_bytes(micro, seq, 1))  # cp 1: MindSpeed's context parallelism keeps the whole mask
    return [EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.mindspeed-attention-mask.sized", why="; ".join(why),
                                                where=where, b=micro, s=seq, size=size))]


def _flash_attention_mask(fl: FlagQueries) -> list[EstimateWarning]:
    """MindSpeed's own causal mask (core/transformer/flash_attention/generate_mask: its adaptor wraps Megatron's
    DotProductAttention.forward and, when the layer gets no mask — MindSpeed-LLM's data loader builds none unless
    ``_dataloader_reasons`` — makes one with ``get_attention_mask`` and keeps it in a module global for the run, on
    the device unless --attention-mask-on-cpu). MindSpeed 2.1.0_core_r0.12.1 (the audited version, D-MS-AUDIT;
    generate_mask.py read at Ascend/MindSpeed 1af125f) makes the compressed 2048×2048 booleans for flash attention
    (sparse_mode 2), s×s with --multi-head-latent-attention, and b×1×s×s without --use-flash-attn. Not priced:
    said with its size on every device (a lower bound by about that). Later MindSpeed compresses by another rule
    (causal mask type without --use-fusion-attn-v2, MLA included), so with another MindSpeed the size said may
    differ. MindSpeed-MM scripts (``--mm-model``) are not said: their models pass the data's masks (not audited)."""
    if fl.has("--mm-model") or fl.has("--attention-mask-on-cpu") or _dataloader_reasons(fl):
        return []
    seq, micro = fl.int("--seq-length", 1), fl.int("--micro-batch-size", 1) or 1
    flash = fl.has("--use-flash-attn")
    if not flash:
        why, b, side = "--use-flash-attn not given", micro, seq
    elif fl.has("--multi-head-latent-attention"):
        why, b, side = "--multi-head-latent-attention", 1, seq
    else:
        why, b, side = "--use-flash-attn", 1, COMPRESSED_MASK_SIDE
    if side is None:
        return [EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.mindspeed-flash-mask", why=why))]
    dims = f"{side}×{side}" if flash else f"{b}×1×{side}×{side}"
    return [EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.mindspeed-flash-mask.sized", why=why, shape=dims,
                                                size=fmt_bytes(mask_bytes(b, side, 1))))]


def said_absent(flag: str, effect: Text) -> EstimateWarning:
    return EstimateWarning("W-UNMODELLED", msg("W-UNMODELLED.mindspeed-absent", flag=flag, effect=effect))


__all__ = ["GIVEN", "VALUED", "mindspeed_warnings"]
