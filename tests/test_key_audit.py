"""Reader keys that were listed as "not priced" without a word, checked against their framework's source
(docs/decisions.md D-MF-AUDIT, D-LF-AUDIT): each is now said in the CLI's JSON, with the direction of the error,
when its value departs from what is priced — MindFormers' context and parallel keys, HyperParallel's
replicate_params, LLaMA-Factory's fp8, DeepSpeed's Apex AMP — and LLaMA-Factory's derived fields are refused as
its argument parser refuses them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from estimator.cli import main

FIX = Path(__file__).resolve().parent / "fixtures"
MINDFORMERS = FIX / "mindformers" / "llama2_13b_8p_parallel_optimizer.yaml"
HYPERPARALLEL = FIX / "hyperparallel" / "auto_inline_model.yaml"
LF = FIX / "llamafactory"


def cli_warnings(capsys, *argv: str) -> list[dict]:
    assert main(["estimate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["warnings"]


def said(warnings: list[dict], key: str) -> list[str]:
    return [w["text"] for w in warnings if w["text"].startswith(f"{key} is ")]


def edited(tmp_path: Path, source: Path, old: str, new: str, *more: tuple[str, str]) -> str:
    text = source.read_text(encoding="utf-8")
    for a, b in ((old, new), *more):
        assert a in text, a
        text = text.replace(a, b, 1)
    target = tmp_path / source.name
    target.write_text(text, encoding="utf-8")
    return str(target)


FP32_PARAMS = ('    param_init_type: "float16"\n', '    param_init_type: "float32"\n')


@pytest.mark.parametrize("old, new, key, direction", [
    ('  max_device_memory: "58GB"\n', '  max_device_memory: "58GB"\n  memory_optimize_level: "O0"\n',
     "context.memory_optimize_level", "device memory may be a lower bound"),
    ("    parallel_optimizer_threshold: 64\n", "    parallel_optimizer_threshold: 4096\n",
     "parallel.parallel_optimizer_config.parallel_optimizer_threshold", "device memory a lower bound"),
    ('  max_device_memory: "58GB"\n', '  max_device_memory: "58GB"\n  deterministic: "ON"\n',
     "context.deterministic", "step time a lower bound"),
    ("run_mode: 'train'\n", "run_mode: 'train'\ntrain_precision_sync: True\n",
     "train_precision_sync", "step time a lower bound"),
])
def test_mindformers_keys_that_change_memory_or_time_are_said(capsys, tmp_path, old, new, key, direction):
    assert not said(cli_warnings(capsys, str(MINDFORMERS)), key)  # the fixture as published: nothing to say
    texts = said(cli_warnings(capsys, edited(tmp_path, MINDFORMERS, old, new)), key)
    assert len(texts) == 1 and direction in texts[0]


def test_mindformers_gradient_fp32_sync_against_the_parameter_width(capsys, tmp_path):
    # the fixture's float16 parameters: MindSpore's default converts their gradients to fp32 for the all-reduce
    default = [w["text"] for w in cli_warnings(capsys, str(MINDFORMERS)) if "gradient_fp32_sync" in w["text"]]
    assert len(default) == 1 and "2-byte parameters" in default[0] and "step time may be a lower bound" in default[0]
    off = edited(tmp_path, MINDFORMERS, "  full_batch: True\n", "  full_batch: True\n  gradient_fp32_sync: False\n")
    assert not [w for w in cli_warnings(capsys, off) if "gradient_fp32_sync" in w["text"]]  # 16-bit as priced
    # float32 parameters: the default reduces in fp32 as priced; False reduces the 16-bit gradients after the cast
    fp32 = edited(tmp_path, MINDFORMERS, *FP32_PARAMS)
    assert not [w for w in cli_warnings(capsys, fp32) if "gradient_fp32_sync" in w["text"]]
    off = edited(tmp_path, MINDFORMERS, "  full_batch: True\n", "  full_batch: True\n  gradient_fp32_sync: False\n",
                 FP32_PARAMS)
    texts = said(cli_warnings(capsys, off), "parallel.gradient_fp32_sync")
    assert len(texts) == 1 and "step time may be an upper bound" in texts[0]


@pytest.mark.parametrize("old, new", [
    ('  max_device_memory: "58GB"\n', '  max_device_memory: "58GB"\n  memory_optimize_level: "O1"\n'),
    ('  max_device_memory: "58GB"\n', '  max_device_memory: "58GB"\n  deterministic: "OFF"\n'),
])
def test_mindformers_values_that_match_the_estimate_are_not_said(capsys, tmp_path, old, new):
    key = new.strip().splitlines()[-1].split(":")[0].strip()
    assert not [t for t in (w["text"] for w in cli_warnings(capsys, edited(tmp_path, MINDFORMERS, old, new)))
                if f".{key} is" in t]


def test_hyperparallel_replicate_params_are_said_when_listed(capsys, tmp_path):
    empty = edited(tmp_path, HYPERPARALLEL, "  reshard_after_forward: false\n",
                   "  reshard_after_forward: false\n  replicate_params: []\n")
    assert not said(cli_warnings(capsys, empty), "fsdp_config.replicate_params")
    listed = edited(tmp_path, HYPERPARALLEL, "  reshard_after_forward: false\n",
                    "  reshard_after_forward: false\n  replicate_params: [model.norm.weight]\n")
    texts = said(cli_warnings(capsys, listed), "fsdp_config.replicate_params")
    assert len(texts) == 1 and "device memory a lower bound" in texts[0]


def _llamafactory(tmp_path: Path, extra: str) -> str:
    for name in ("qwen3_lora_sft_ds2.yaml", "ds_z2_config.json"):
        shutil.copy(LF / name, tmp_path / name)
    path = tmp_path / "qwen3_lora_sft_ds2.yaml"
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return str(path)


def test_llamafactory_fp8_is_said_with_its_backend(capsys, tmp_path):
    assert not said(cli_warnings(capsys, _llamafactory(tmp_path, "fp8_backend: te\n"), "--devices", "16"), "fp8")
    texts = said(cli_warnings(capsys, _llamafactory(tmp_path, "fp8: true\nfp8_backend: te\n"), "--devices", "16"),
                 "fp8")
    assert len(texts) == 1 and "backend te" in texts[0] and "step time an upper bound" in texts[0]


def test_llamafactory_derived_fields_are_refused_like_its_parser_does(capsys, tmp_path):
    # model_args.py declares device_map, compute_dtype, model_max_length, block_diag_attn with init=False
    warnings = cli_warnings(capsys, _llamafactory(tmp_path, "device_map: auto\n"), "--devices", "16")
    assert [w for w in warnings if w["code"] == "W-KEY-UNKNOWN" and "device_map" in w["text"]]


def test_deepspeed_apex_amp_is_said(capsys, tmp_path):
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": 2}}
    argv = ("--model", "meta-llama/Meta-Llama-3.1-8B", "--devices", "16", "--set", "strategy.seq_length=4096")
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({**config, "amp": {"enabled": False}}), encoding="utf-8")
    assert not said(cli_warnings(capsys, str(path), *argv), "amp.enabled")
    path.write_text(json.dumps({**config, "amp": {"enabled": True, "opt_level": "O2"}}), encoding="utf-8")
    texts = said(cli_warnings(capsys, str(path), *argv), "amp.enabled")
    assert len(texts) == 1 and "activation memory and step time upper bounds" in texts[0]


def test_mindformers_memory_level_left_to_mindspore_default_is_said(capsys, tmp_path):
    # MindSpore's set_context default is O0 (SOMAS off): a file that does not set it runs without the static plan
    stated = edited(tmp_path, MINDFORMERS, '  max_device_memory: "58GB"\n',
                    '  max_device_memory: "58GB"\n  memory_optimize_level: "O1"\n')
    assert not [w for w in cli_warnings(capsys, stated) if "memory_optimize_level" in w["text"]]
    silent = str(tmp_path / "silent.yaml")
    Path(silent).write_text("\n".join(line for line in Path(stated).read_text(encoding="utf-8").splitlines()
                                      if "memory_optimize_level" not in line) + "\n", encoding="utf-8")
    texts = [w["text"] for w in cli_warnings(capsys, silent) if "memory_optimize_level" in w["text"]]
    assert len(texts) == 1
    assert '"O0" applies' in texts[0] and "device memory may be a lower bound" in texts[0] and '"O1"' in texts[0]
