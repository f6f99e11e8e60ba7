"""MindSpeed flags of the public MindSpeed-LLM / MindSpeed-MM scripts that the reader neither read, said nor refused,
checked against MindSpeed's source (docs/decisions.md D-MS-AUDIT): each is now said when given, said when its
absence runs an unfused path, or listed with the reason it changes neither memory nor time — one test each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from format_helpers import variant

from estimator.cli import main
from estimator.estimate import estimate
from estimator.formats import parse
from estimator.formats.megatron_vocab import vocabulary
from estimator.messages import CHINESE

ROOT = Path(__file__).resolve().parents[1]
FUSED = ROOT / "tests" / "fixtures" / "mindspeed" / "mla_moe_fused.sh"
MEGATRON = ROOT / "tests" / "fixtures" / "megatron" / "train_gpt3_defaults.sh"


def cli_warnings(capsys, path: str) -> list[dict]:
    assert main(["estimate", path, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["warnings"]


def said(capsys, path: str) -> list[str]:
    """The W-UNMODELLED statements but MindSpeed's own flash-attention mask, which every MindSpeed-LLM script gets
    (test_mindspeeds_own_flash_attention_mask_is_said_with_its_size)."""
    return [w["text"] for w in cli_warnings(capsys, path) if w["code"] == "W-UNMODELLED" and
            "causal mask of its own" not in w["text"]]


def adding(tmp_path: Path, flags: str, name: str = "train.sh") -> str:
    return variant(tmp_path, FUSED, ("    --bf16\n", f"    --bf16 \\\n    {flags}\n"), name=name)


def without(tmp_path: Path, flag: str, *more: tuple[str, str]) -> str:
    return variant(tmp_path, FUSED, (f"    {flag} \\\n", ""), *more)


def test_the_fixture_runs_everything_as_priced(capsys):
    assert said(capsys, str(FUSED)) == []


@pytest.mark.parametrize("flag, words", [
    ("--use-fused-rotary-pos-emb", ("separate PyTorch kernels", "step time a lower bound", "device memory as priced")),
    ("--gemm-gradient-accumulation-fusion", ("weight gradients as new 16-bit tensors", "device memory a lower bound",
                                             "step time a lower bound")),
    ("--use-fused-rmsnorm", ("fp32 copy", "activation memory and step time lower bounds")),
])
def test_a_missing_fused_kernel_flag_is_said_with_the_direction(capsys, tmp_path, flag, words):
    texts = said(capsys, without(tmp_path, flag))
    assert len(texts) == 1 and flag in texts[0], texts
    assert all(word in texts[0] for word in words), texts[0]


def test_mla_without_the_unpadded_flash_attention_says_the_padded_widths(capsys, tmp_path):
    # MindSpeed-LLM pads q, k, v (and so the output) to ceil(max(128 + 64, 128) / 128)·128 = 256 per head (SBH)
    texts = said(capsys, without(tmp_path, "--mla-fa-without-pad"))
    assert texts == [texts[0]] and texts[0].startswith("--mla-fa-without-pad is not given:")
    assert "to q 256, k 256, v 256, o 256 (q/k 192, v 128 unpadded)" in texts[0]
    assert "activation memory and step time lower bounds" in texts[0]
    # BNSD pads v alone to the q/k width (its output follows); a base length of 64 pads 192 to 192
    bnsd = without(tmp_path, "--mla-fa-without-pad", ("    --bf16\n", "    --bf16 \\\n    --shape-order BNSD\n"))
    assert any("to v 192, o 192 (q/k 192, v 128 unpadded)" in t for t in said(capsys, bnsd))
    base = without(tmp_path, "--mla-fa-without-pad", ("    --bf16\n", "    --bf16 \\\n    --padded-base-length 64\n"))
    assert any("to q 192, k 192, v 192, o 192" in t for t in said(capsys, base))
    # no flash attention, no padding; q/k as wide as v needs none
    eager = without(tmp_path, "--mla-fa-without-pad", ("    --use-flash-attn \\\n", ""))
    assert not [t for t in said(capsys, eager) if "--mla-fa-without-pad" in t]
    even = without(tmp_path, "--mla-fa-without-pad", ("--v-head-dim 128", "--v-head-dim 192"))
    assert not [t for t in said(capsys, even) if "--mla-fa-without-pad" in t]


@pytest.mark.parametrize("flags, words", [
    ("--moe-permutation-async-comm", ("step time may be an upper bound", "device memory as priced")),
    ("--use-fused-moe-token-permute-and-unpermute", ("npu_moe_token_permute", "step time may be an upper bound")),
    ("--reset-position-ids", ("actual_seq_len", "attention time an upper bound")),
    ("--ai-framework mindspore", ("MindSpore backend", "either way")),
])
def test_mindspeed_flags_that_change_time_or_memory_are_said_when_given(capsys, tmp_path, flags, words):
    texts = said(capsys, adding(tmp_path, flags))
    flag = flags.split()[0]
    assert len(texts) == 1 and texts[0].startswith(f"{flag} is given:"), texts
    assert all(word in texts[0] for word in words), texts[0]


def test_the_default_backend_is_not_said(capsys, tmp_path):
    assert said(capsys, adding(tmp_path, "--ai-framework pytorch")) == []


@pytest.mark.parametrize("flags", ["--mla-mm-split", "--router-gating-in-fp32", "--coc-fused-kernel",
                                   "--sparse-mode 4", "--no-align-param-gather", "--seq-aux",
                                   "--n-group 4 --topk-group 2 --norm-topk-prob --routed-scaling-factor 2.5"])
def test_flags_that_change_neither_memory_nor_time_are_listed_with_the_reason(tmp_path, flags):
    path = adding(tmp_path, flags)
    parsed, plain = parse([path]), parse([str(FUSED)])
    assert [w.text for w in parsed.warnings] == [w.text for w in plain.warnings] == _flash_masks(str(FUSED))
    ours = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    base = estimate(plain.model, plain.strategy, plain.hardware, plain.options)
    assert ours.peak_bytes == base.peak_bytes and ours.step_time_s == base.step_time_s
    for flag in flags.split():
        if flag.startswith("--"):
            assert vocabulary().category(flag), flag  # the catalogue says why it is harmless


@pytest.mark.parametrize("flag", ["--moe-permutation-async-comm", "--use-fused-moe-token-permute-and-unpermute",
                                  "--mla-fa-without-pad", "--gemm-gradient-accumulation-fusion", "--ai-framework"])
def test_a_megatron_lm_script_is_told_the_flag_is_mindspeeds(tmp_path, flag):
    path = variant(tmp_path, MEGATRON, ("    --fp16\n", f"    --fp16\n    {flag}\n"))
    texts = [w.text for w in parse([path]).warnings if flag in w.text]
    assert len(texts) == 1 and f"{flag} (a MindSpeed flag, which Megatron-LM does not accept)" in texts[0]


def test_mindspeeds_dataloader_mask_is_said_where_mindspeed_llm_builds_it(capsys, tmp_path):
    # MindSpeed-LLM builds it for a document mask of type general: 1 × 1 × 4096 × 4096 booleans = 16 MiB
    general = adding(tmp_path, "--reset-attention-mask --attention-mask-type general")
    texts = [t for t in said(capsys, general) if "attention mask" in t]
    assert len(texts) == 1 and "(--reset-attention-mask --attention-mask-type general: 1×1×4096×4096, 16 MiB)" \
        in texts[0] and "device memory a lower bound" in texts[0] and "first and last pipeline stages" in texts[0]
    left = adding(tmp_path, "--tokenizer-padding-side left", name="left.sh")
    assert [t for t in said(capsys, left) if "attention mask" in t and "--tokenizer-padding-side left" in t]
    # the causal document mask (MindSpeed-LLM's default type) turns it off again
    causal = adding(tmp_path, "--reset-attention-mask", name="causal.sh")
    assert not [t for t in said(capsys, causal) if "attention mask" in t]
    # fine-tuning builds it on every stage, unless --reset-position-ids packs the documents
    sft = [t for t in said(capsys, adding(tmp_path, "--stage sft", name="sft.sh")) if "attention mask" in t]
    assert len(sft) == 1 and "(--stage sft: 1×1×4096×4096, 16 MiB)" in sft[0] and "every pipeline stage" in sft[0]
    packed = adding(tmp_path, "--stage sft --reset-position-ids", name="packed.sh")
    assert not [t for t in said(capsys, packed) if "attention mask" in t]


def test_mindspeeds_dataloader_mask_is_not_divided_by_cp(tmp_path):
    """MindSpeed's get_batch_on_this_cp_rank skips the attention mask for the causal ring and the Ulysses
    algorithms (unlike Megatron-LM's, which keeps s/cp rows): at cp 2 every rank still holds 1×1×4096×4096 = 16 MiB."""
    for algo in ("megatron_cp_algo", "ulysses_cp_algo"):
        flags = f"--tokenizer-padding-side left --context-parallel-size 2 --context-parallel-algo {algo}"
        path = adding(tmp_path, flags, name=f"{algo}.sh")
        texts = [w.text for w in parse([path]).warnings if "attention mask" in w.text]
        assert len(texts) == 1 and "1×1×4096×4096, 16 MiB)" in texts[0], texts


def _flash_masks(path: str, language=None) -> list[str]:
    return [w.localized(language) if language else w.text for w in parse([path]).warnings
            if w.code == "W-UNMODELLED" and "causal mask of its own" in w.text]


def test_mindspeeds_own_flash_attention_mask_is_said_with_its_size(tmp_path):
    """MindSpeed 2.1.0's generate_mask.py keeps one causal mask for the run: s×s with MLA (the fixture: s 4096),
    the compressed 2048×2048 for flash attention otherwise, b×1×s×s without flash attention; none on the host
    (--attention-mask-on-cpu) or where the data loader gives the layers a mask."""
    mla = _flash_masks(str(FUSED))
    assert len(mla) == 1 and "(--multi-head-latent-attention: 4096×4096, 16 MiB)" in mla[0] \
        and "device memory a lower bound by about 16 MiB" in mla[0]
    plain = _flash_masks(without(tmp_path, "--multi-head-latent-attention"))
    assert len(plain) == 1 and "(--use-flash-attn: 2048×2048, 4 MiB)" in plain[0]
    unfused = _flash_masks(variant(tmp_path, FUSED, ("    --use-flash-attn \\\n", ""),
                                   ("--micro-batch-size 1", "--micro-batch-size 2"), name="unfused.sh"))
    assert len(unfused) == 1 and "(--use-flash-attn not given: 2×1×4096×4096, 32 MiB)" in unfused[0]
    assert not _flash_masks(adding(tmp_path, "--attention-mask-on-cpu", name="cpu.sh"))
    assert not _flash_masks(adding(tmp_path, "--tokenizer-padding-side left", name="left.sh"))
    zh = _flash_masks(str(FUSED), CHINESE)
    assert zh and "（--multi-head-latent-attention：4096×4096，16 MiB）" in zh[0] and "下界" in zh[0]


def test_the_new_statements_are_said_in_chinese(tmp_path):
    path = without(tmp_path, "--mla-fa-without-pad")
    zh = [w.localized(CHINESE) for w in parse([path]).warnings if "--mla-fa-without-pad" in w.text]
    assert zh and zh[0].startswith("[W-UNMODELLED] 未给出 --mla-fa-without-pad：") and "下界" in zh[0]
