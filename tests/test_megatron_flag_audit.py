"""Megatron-LM flags that were listed as changing neither memory nor time, checked against Megatron-LM's source
(docs/decisions.md D-MG-AUDIT): each is now said when given, with the direction of the error, in the CLI's JSON;
and the attention mask Megatron-LM's data loader builds by default is said when the script does not turn it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from format_helpers import variant

from estimator.cli import main
from estimator.formats import parse
from estimator.messages import CHINESE

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = ROOT / "tests" / "fixtures" / "megatron" / "train_gpt3_defaults.sh"
NO_MASK = "    --no-create-attention-mask-in-dataloader\n"


def cli_warnings(capsys, path: str) -> list[dict]:
    assert main(["estimate", path, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["warnings"]


def with_flags(tmp_path: Path, flags: str, name: str = "train.sh") -> str:
    return variant(tmp_path, DEFAULTS, ("    --fp16\n", "    --fp16\n" + flags), name=name)


@pytest.mark.parametrize("flag, direction", [
    ("--no-bias-gelu-fusion", "step time a lower bound"),
    ("--no-bias-dropout-fusion", "step time a lower bound"),
    ("--no-persist-layer-norm", "step time may be a lower bound"),
    ("--no-gradient-accumulation-fusion", "device memory a lower bound"),
    ("--no-rope-fusion", "step time a lower bound"),
    ("--moe-permute-fusion", "step time may be an upper bound"),
    ("--deterministic-mode", "step time a lower bound"),
    ("--ddp-pad-buckets-for-high-nccl-busbw", "device memory a lower bound"),
    ("--empty-unused-memory-level 2", "step time a lower bound"),
    ("--external-cuda-graph", "device memory a lower bound"),
    ("--optimizer-cuda-graph", "device memory a lower bound"),
    ("--megatron-fsdp-grad-comm-dtype bf16", "either way"),
])
def test_flags_that_change_memory_or_time_are_said_with_the_direction(capsys, tmp_path, flag, direction):
    path = with_flags(tmp_path, f"    {flag}\n{NO_MASK}")
    name = flag.split()[0]
    said = [w for w in cli_warnings(capsys, path) if w["code"] == "W-UNMODELLED"]
    assert [w["text"] for w in said if w["text"].startswith(f"{name} is given:")] != [], said
    text = next(w["text"] for w in said if w["text"].startswith(f"{name} is given:"))
    assert direction in text
    assert len(said) == 1  # nothing else: the mask is off, the fixture prices everything else


def test_a_flag_turned_off_or_without_its_prerequisite_is_not_said(capsys, tmp_path):
    path = with_flags(tmp_path, f"    --empty-unused-memory-level 0\n    --ddp-bucket-size 10000000\n{NO_MASK}")
    texts = [w["text"] for w in cli_warnings(capsys, path)]
    assert not [t for t in texts if "--empty-unused-memory-level" in t]
    # Megatron-LM ignores the bucket size without --overlap-grad-reduce (one bucket)
    assert not [t for t in texts if "--ddp-bucket-size" in t]
    overlapped = with_flags(tmp_path, f"    --ddp-bucket-size 10000000\n    --overlap-grad-reduce\n{NO_MASK}",
                            name="overlap.sh")
    said = [w["text"] for w in cli_warnings(capsys, overlapped) if w["text"].startswith("--ddp-bucket-size is given")]
    assert len(said) == 1 and "step time may be off either way" in said[0]


def test_flags_megatron_lm_does_not_have_are_no_longer_passed_as_harmless(tmp_path):
    path = with_flags(tmp_path, f"    --disable-tf32\n    --create-attention-mask-in-dataloader\n{NO_MASK}")
    unknown = [w.text for w in parse([path]).warnings if w.code == "W-KEY-UNKNOWN"]
    assert any("--disable-tf32" in t for t in unknown) and any("--create-attention-mask-in-dataloader" in t
                                                               for t in unknown)


def test_the_default_attention_mask_is_assumed_and_priced_at_its_size(capsys, tmp_path):
    # the fixture: --micro-batch-size 4, --seq-length 1024, --context-parallel-size 2; [W-MASK] prices it
    # (tests/test_dataloader_mask.py derives the bytes), the assumption names the flag that turns it off
    assert main(["estimate", str(DEFAULTS), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert not [w for w in out["warnings"] if "attention mask" in w["text"]]
    assumed = [a for a in parse([str(DEFAULTS)]).assumptions if a.field == "options.dataloader_mask"]
    assert len(assumed) == 1 and "--no-create-attention-mask-in-dataloader" in str(assumed[0].source)
    zh = assumed[0].localized(CHINESE)
    assert "[W-MASK]" in zh and "关闭" in zh


@pytest.mark.parametrize("off", [NO_MASK, "    --dataloader-inter-document-masking\n"])
def test_no_mask_nothing_assumed_or_priced(capsys, tmp_path, off):
    path = with_flags(tmp_path, off)
    texts = [w["text"] for w in cli_warnings(capsys, path)]
    assert not [t for t in texts if "attention mask" in t]
    parsed = parse([path])
    assert parsed.options.dataloader_mask is False
    assert not [a for a in parsed.assumptions if a.field == "options.dataloader_mask"]


def test_mindspeeds_memory_efficient_logits_are_said_in_its_dialect_only(capsys, tmp_path):
    mindspeed = ROOT / "tests" / "fixtures" / "mindspeed" / "selective_dense.sh"
    path = variant(tmp_path, mindspeed, ("    --seq-length 2048 \\\n",
                                         "    --seq-length 2048 \\\n    --mtp-mem-efficient-logits \\\n"))
    said = [w["text"] for w in cli_warnings(capsys, path) if w["text"].startswith("--mtp-mem-efficient-logits")]
    assert len(said) == 1 and "device memory an upper bound" in said[0]
    # MindSpeed-LLM's own flag: a Megatron-LM script that gives it is told Megatron-LM does not accept it
    megatron = with_flags(tmp_path, f"    --mtp-mem-efficient-logits\n{NO_MASK}", name="megatron.sh")
    texts = [w["text"] for w in cli_warnings(capsys, megatron) if "--mtp-mem-efficient-logits" in w["text"]]
    assert len(texts) == 1 and "which Megatron-LM does not accept" in texts[0]


def test_mindspeed_rmsnorm_without_the_fused_kernel_is_said(capsys, tmp_path):
    script = ROOT / "tests" / "fixtures" / "mindspeed" / "lora_llama2_7b.sh"
    assert "--use-fused-rmsnorm" not in script.read_text(encoding="utf-8")
    said = [w["text"] for w in cli_warnings(capsys, str(script)) if "--use-fused-rmsnorm" in w["text"]]
    assert len(said) == 1 and "activation memory and step time lower bounds" in said[0]
    fused = variant(tmp_path, script, ("--normalization RMSNorm", "--normalization RMSNorm --use-fused-rmsnorm"))
    assert not [w for w in cli_warnings(capsys, fused) if "--use-fused-rmsnorm" in w["text"]]


def test_megatron_bridges_mask_is_said_only_where_it_reaches_the_device(tmp_path):
    """Megatron-Bridge drops the dataset's mask unless dataset.skip_getting_attention_mask_from_dataset is false
    (D-MG-AUDIT): then every stage holds b×1×(s/cp)×s booleans — here 2 × 1 × 2048 × 4096 = 16 MiB."""
    run = ROOT / "tests" / "fixtures" / "megatron_bridge" / "gpt_run_config.yaml"
    bridge = run.parent / "llama_recipes.py"

    def masks(paths: list[str]) -> list[str]:
        return [w.text for w in parse(paths, devices=16).warnings if "attention mask" in w.text]

    assert masks([str(run)]) == []  # Megatron-Bridge's default: not on the device, nothing to say
    kept = variant(tmp_path, run, ("rng:\n", "dataset:\n  skip_getting_attention_mask_from_dataset: false\nrng:\n"))
    said = masks([kept])
    assert len(said) == 1 and "(2×1×2048×4096, 16 MiB)" in said[0] and "every pipeline stage" in said[0]
    assert "device memory a lower bound" in said[0]
    off = variant(tmp_path, run, ("rng:\n", "dataset:\n  skip_getting_attention_mask_from_dataset: false\n"
                                           "  create_attention_mask: false\nrng:\n"), name="off.yaml")
    assert masks([off]) == []
    recipe = variant(tmp_path, bridge, ("    cfg.train.micro_batch_size = 1\n",
                                        "    cfg.train.micro_batch_size = 1\n"
                                        "    cfg.dataset.skip_getting_attention_mask_from_dataset = False\n"))
    said = [w.text for w in parse([f"{recipe}:llama3_8b_pretrain_config"], devices=16).warnings
            if "attention mask" in w.text]
    assert len(said) == 1 and "(1×1×8192×8192, 64 MiB)" in said[0]
