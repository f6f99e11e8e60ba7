"""Hostile input for the readers that came after the first hostile tables (issue 16, verification pass): the
DeepSpeed and LLaMA-Factory readers, Megatron-Bridge YAML and Python recipes, torchtitan's Python registry,
``sapp calibrate``'s log parsers, the files of the user's config folder (layer kinds and their formulas,
calibration profiles, family profiles, device presets), the schedule-replay cache the CLI keeps between runs and
the app's recent-files list. Every case runs in a child process under the hostile harness' memory limit (1 GiB)
and time limit (20 s) and must end with a message naming the file, the key or line, and the limit or the fix —
or, for the user's own folder, a warning naming the file that was left out.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hostile_harness import ROOT, cli, run_cases
from test_bounded_inputs import check, laughs

FIXTURES = ROOT / "tests" / "fixtures"
LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # the shipped catalogue
DIGITS = "9" * 5001
DEEP_JSON = "[" * 100_000 + "]" * 100_000
# fifteen recipe functions, each calling the next ten times: 10^15 calls if followed
FAN_OUT = "".join(f"\ndef f{i}():\n    return [" + ", ".join([f"f{i + 1}()"] * 10) + "]\n" for i in range(15)) + \
    "\ndef f15():\n    return 1\n"
KIND_PLAN = """\
model: {name: m, hidden_size: 1024, num_layers: 4, num_attention_heads: 16, ffn_hidden_size: 4096, vocab_size: 32000}
strategy: {dp: 2, tp: 2, micro_batch_size: 1, micro_batches: 4, seq_length: 2048, flash_attention: false}
hardware: {device: A2}
options: {framework: mindformers}
"""
CALIBRATION = """\
name: hand-made
created: '2026-01-01'
device: A2
framework: mindformers
terms: {runtime_context: {value: 1000000, from: log}}
"""


def _special(path: Path, kind: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


def test_new_config_readers(tmp_path: Path) -> None:
    def put(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    deepspeed = json.loads((FIXTURES / "deepspeed" / "zero2_auto.json").read_text())
    lf = (FIXTURES / "llamafactory" / "qwen3_lora_sft_ds2.yaml").read_text()
    shutil.copy(FIXTURES / "llamafactory" / "ds_z2_config.json", tmp_path / "ds_z2_config.json")
    os.mkfifo(tmp_path / "pipe.json")
    put("deep.json", DEEP_JSON)
    run = (FIXTURES / "megatron_bridge" / "gpt_run_config.yaml").read_text()
    recipes = (FIXTURES / "megatron_bridge" / "llama_recipes.py").read_text()
    bridge = ("--devices", "16")

    def recipe(name: str, body: str) -> str:
        path = put(f"{name}.py", recipes + FAN_OUT + "\ndef hostile() -> ConfigContainer:\n"
                   "    cfg = llama3_8b_pretrain_config()\n" + body + "    return cfg\n")
        return f"{path}:hostile"

    registry = tmp_path / "titan" / "models" / "llama3" / "config_registry.py"
    registry.parent.mkdir(parents=True)
    registry.write_text((FIXTURES / "torchtitan_py" / "models" / "llama3" / "config_registry.py").read_text() +
                        FAN_OUT + "\ndef hostile() -> Trainer.Config:\n    return _base('8B', f0())\n")
    ds_args = ("--model", LLAMA, "--devices", "8", "--set", "strategy.seq_length=4096")
    table = [
        (cli("DeepSpeed: a FIFO", "estimate", _special(tmp_path / "fifo_ds.json", "fifo"), *ds_args),
         [r"fifo_ds\.json: is a named pipe \(FIFO\)"]),
        (cli("DeepSpeed: /dev/zero", "estimate", _special(tmp_path / "zero_ds.json", "zero"), *ds_args),
         [r"zero_ds\.json: is a character device"]),
        (cli("DeepSpeed: nested 10^5 deep", "estimate", put("deep_ds.json", DEEP_JSON), *ds_args),
         [r"deep_ds\.json: malformed JSON: values nest more than 64 levels"]),
        (cli("DeepSpeed: 5,001 digits", "estimate",
             put("digits_ds.json", json.dumps({**deepspeed, "x": 1}).replace('"x": 1', f'"x": {DIGITS}')), *ds_args),
         [r"digits_ds\.json:\d+:\d+: a number written with 5,001 digits"]),
        (cli("LLaMA-Factory: aliases", "estimate", put("bomb_lf.yaml", lf + f"\nnotes: {laughs(9)}\n"), "--devices",
             "8"), [r"bomb_lf\.yaml:\d+:\d+: this value expands to more than 1,000,000 values"]),
        (cli("LLaMA-Factory: a date that is none", "estimate", put("date_lf.yaml", lf + "\nrun: 2024-02-30\n"),
             "--devices", "8"), [r"date_lf\.yaml:\d+:6: .*is not a date", "put it in quotes"]),
        (cli("LLaMA-Factory: deepspeed: a FIFO beside it", "estimate",
             put("pipe_lf.yaml", lf.replace("ds_z2_config.json", "pipe.json")), "--devices", "8"),
         [r"pipe_lf\.yaml, key 'deepspeed': "]),
        (cli("LLaMA-Factory: deepspeed: a JSON nested 10^5 deep", "estimate",
             put("deep_lf.yaml", lf.replace("ds_z2_config.json", "deep.json")), "--devices", "8"),
         [r"deep\.json: malformed JSON: values nest more than 64 levels"]),
        (cli("LLaMA-Factory: a model name no file system takes", "estimate",
             put("long_lf.yaml", lf.replace("Qwen/Qwen3-8B", "a/" * 3000 + "b")), "--devices", "8"),
         [r"long_lf\.yaml, key 'model\.hidden_size': the model is missing"]),
        (cli("--model: a name no file system takes", "estimate", put("plan_ds.json", json.dumps(deepspeed)),
             "--model", "a/" * 3000 + "b", "--devices", "8"), [r"a/…/a/a/.*/b: cannot read: File name too long"]),
        (cli("Megatron-Bridge YAML: aliases", "estimate", put("bomb_mb.yaml", run + f"\nnotes: {laughs(9)}\n"),
             *bridge), [r"bomb_mb\.yaml:\d+:\d+: this value expands to more than 1,000,000 values"]),
        (cli("Megatron-Bridge YAML: 10^12 layers", "estimate",
             put("layers_mb.yaml", run.replace("num_layers: 24", "num_layers: 1000000000000")), *bridge),
         [r"layers_mb\.yaml, key 'model\.num_layers': 1000000000000 is out of range", "at most 10,000"]),
        (cli("Megatron-Bridge recipe: functions fanning out 10^15 times", "estimate",
             recipe("fan_mb", "    cfg.model.seq_length = f0()\n"), *bridge),
         [r"fan_mb\.py:\d+: reading this recipe takes more than 1,000,000 steps \(the limit", "--set"]),
        (cli("Megatron-Bridge recipe: a list of 10^10 values", "estimate",
             recipe("list_mb", "    cfg.model.pipeline_model_parallel_layout = [[0] * 100000] * 100000\n"), *bridge),
         []),  # read with W-PY-UNRESOLVED "an implausibly long list" (checked below)
        (cli("Megatron-Bridge recipe: tuple keys", "estimate",
             recipe("keys_mb", "    cfg.model.seq_length = {(1, 2): 4096}\n"), *bridge), []),
        (cli("Megatron-Bridge recipe: 10^5 unary minus", "estimate",
             recipe("minus_mb", "    cfg.model.seq_length = " + "-" * 100_000 + "1\n"), *bridge),
         [r"minus_mb\.py: not a Python module the estimator can read \(nesting too deep\)"]),
        (cli("Megatron-Bridge recipe: a FIFO", "estimate", f"{_special(tmp_path / 'fifo.py', 'fifo')}:hostile",
             *bridge), [r"fifo\.py: is a named pipe \(FIFO\)"]),
        (cli("torchtitan registry: functions fanning out 10^15 times", "estimate", f"{registry}:hostile",
             "--devices", "64"), [r"config_registry\.py:\d+: reading this recipe takes more than 1,000,000 steps"]),
    ]
    outcomes = run_cases([case for case, _ in table])
    check(outcomes, [(case, patterns) for case, patterns in table if patterns])
    for case, patterns in table:
        if not patterns:
            got = outcomes[case["name"]]
            assert got.clean and got.rc == 0, got.describe()
    assert "an implausibly long list" in outcomes["Megatron-Bridge recipe: a list of 10^10 values"].stdout


def test_calibration_logs(tmp_path: Path) -> None:
    config = ROOT / "resources" / "examples" / "mindspeed_qwen3_32b_pretrain.sh"

    def log(name: str, text: str) -> Path:
        (tmp_path / name).write_text(text, encoding="utf-8")
        return tmp_path / name

    def case(name: str, path: Path) -> dict:
        return cli(name, "calibrate", path, "--config", config, "--dry-run")

    megatron = "[Rank {rank}] (after 10 iterations) memory (MB) | allocated: 1 | max allocated: 2 | reserved: 3 | " \
               "max reserved: 4\n"
    table = [
        (case("a FIFO", _special(tmp_path / "fifo.log", "fifo")), [r"fifo\.log: is a named pipe \(FIFO\)"]),
        (case("/dev/zero", _special(tmp_path / "zero.log", "zero")), [r"zero\.log: is a character device"]),
        (case("memory_stats nested 10^5 deep", log("deep.json", DEEP_JSON)),
         [r"deep\.json: no usable line \(.*values nest more than 64 levels"]),
        (case("memory_stats with 5,001 digits", log("digits.json", '{"allocated_bytes.all.peak": ' + DIGITS + "}")),
         [r"digits\.json: no usable line \(.*5,001 digits"]),
        (case("memory_stats peak as text", log("text.json", '{"allocated_bytes.all.peak": "abc"}')),
         [r"text\.json\[0\], key 'allocated_bytes\.all\.peak': 'abc' is not a byte count"]),
        (case("memory_stats peak NaN", log("nan.json", '{"allocated_bytes.all.peak": NaN}')),
         [r"nan\.json\[0\], key 'allocated_bytes\.all\.peak': nan is not a byte count"]),
        (case("memory_stats rank 1e400",
              log("rank.json", '[{"rank": 1e400, "stats": {"allocated_bytes.all.peak": 1}}]')),
         [r"rank\.json\[0\], key 'rank': inf is not a rank"]),
        (case("a Megatron rank of 5,000 digits", log("rank.log", megatron.format(rank=DIGITS))),
         [r"rank\.log: no usable line"]),
        (case("a Megatron memory of 400 digits", log("inf.log", megatron.format(rank=0).replace("max allocated: 2",
                                                                                               "max allocated: " +
                                                                                               "9" * 400))),
         [r"inf\.log:1: '9999.*' is not a plausible number"]),
        (case("one line of 50 MiB", log("line.log", "x" * (50 << 20))), [r"line\.log: no usable line"]),
    ]
    check(run_cases([case for case, _ in table]), table)


def _user_folder(root: Path, folder: str, name: str, text: str | None) -> Path:
    """A config folder holding one file ``folder/name``: ``text``, or a FIFO ("fifo") or /dev/zero ("zero")."""
    path = root / folder / name
    if text in ("fifo", "zero"):
        _special(path, text)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(("folder", "text", "expected"), [
    ("kinds", "fifo", r"user layer kinds ignored: .*hostile\.yaml: is a named pipe \(FIFO\)"),
    ("kinds", "zero", r"user layer kinds ignored: .*hostile\.yaml: is a character device"),
    ("kinds", f"overrides: []\nnotes: {laughs(9)}\n", r"user layer kinds ignored: .*hostile\.yaml:2:\d+: .*1,000,000"),
    ("kinds", "overrides:\n  - {kind: '*', slot: a.scores, bytes: '((((9**64)**64)**64)**64)**64'}\n",
     r"hostile\.yaml: formula .*: a value beyond 1e\+30 \(the limit\)"),
    ("kinds", "overrides:\n  - {kind: '*', slot: a.scores, bytes: '(-1)**0.5'}\n",
     r"hostile\.yaml: formula .*: the value is not a real number"),
    ("calibrations", "fifo", r"W-CALIBRATION-UNREADABLE.*hostile\.yaml: is a named pipe \(FIFO\)"),
    ("calibrations", "zero", r"W-CALIBRATION-UNREADABLE.*hostile\.yaml: is a character device"),
    ("calibrations", CALIBRATION.replace("1000000", ".nan"),
     r"W-CALIBRATION-UNREADABLE.*hostile\.yaml, key 'terms\.runtime_context\.value': nan is not a finite number"),
    ("calibrations", CALIBRATION + "logs: 5\n",
     r"W-CALIBRATION-UNREADABLE.*hostile\.yaml, key 'logs': expected a list"),
    ("calibrations", CALIBRATION.replace("terms: {runtime_context: {value: 1000000, from: log}}", "terms: [1]"),
     r"W-CALIBRATION-UNREADABLE.*hostile\.yaml, key 'terms'"),
    ("calibrations", CALIBRATION + "x: 2024-02-30\n", r"W-CALIBRATION-UNREADABLE.*hostile\.yaml:6:4: .*not a date"),
    ("calibrations", DEEP_JSON, r"W-CALIBRATION-UNREADABLE.*hostile\.yaml: malformed YAML: values nest more than 64"),
    ("profiles", "fifo", r"user profiles ignored: .*hostile\.yaml: is a named pipe \(FIFO\)"),
    ("presets", "fifo", r"user presets ignored: .*hostile\.yaml: is a named pipe \(FIFO\)"),
])
def test_the_user_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, text: str,
                         expected: str) -> None:
    """A file in the user's config folder is read within the same bounds; one that cannot be read is named (a
    broken profile or kind file is left out with a warning, a broken preset is an error when presets are read)."""
    import re

    root = _user_folder(tmp_path / "config", folder, "hostile.yaml", text)
    plan = tmp_path / "plan.yaml"
    plan.write_text(KIND_PLAN, encoding="utf-8")
    monkeypatch.setenv("SAPP_CONFIG_DIR", str(root))
    extra = ("--set", "hardware.device=A3") if folder == "presets" else ()
    got = run_cases([cli(folder, "estimate", plan, *extra)])[folder]
    assert got.clean and got.rc in (0, 1), got.describe()
    assert re.search(expected, got.stdout + got.stderr), got.describe() + got.stdout[-1500:]


@pytest.mark.parametrize("kind", ["fifo", "zero", "deep", "digits"])
def test_the_replay_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The schedule replays the CLI keeps between runs (replay_cache.py): a cache file that is not what sapp
    writes is ignored (and replaced by the next write), never read forever."""
    from estimator import replay_cache

    monkeypatch.setenv("SAPP_CACHE_DIR", str(tmp_path))
    path = replay_cache._path()  # the file the command reads (its name versions schedules.py and the format)
    assert path is not None and path.parent == tmp_path
    if kind in ("fifo", "zero"):
        _special(path, kind)
    else:
        path.write_text(DEEP_JSON if kind == "deep" else '{"x": ' + DIGITS + "}")
    plan = tmp_path / "plan.yaml"
    plan.write_text(KIND_PLAN, encoding="utf-8")
    got = run_cases([cli(kind, "estimate", plan)])[kind]
    assert got.clean and got.rc == 0, got.describe()


def test_a_hand_edited_recent_list_opens_the_app(tmp_path: Path) -> None:
    """The app's recent-files list (QSettings): any JSON in it — nested 10^5 deep, arguments that are not a
    mapping, unknown keys — is dropped instead of stopping the window from opening."""
    pytest.importorskip("PySide6")
    from sapp_gui.settings import Settings

    for raw, expected in (
        (DEEP_JSON, []),
        (json.dumps([{"paths": ["/dev/zero"], "args": "ab"}, {"paths": ["x"], "args": 5},
                     {"paths": ["y", 3]}, {"paths": ["z"], "args": {"devices": "abc", "model": "m", "bad": 1}},
                     {"paths": ["w"], "args": {"devices": 10 ** 30}}, 7]),
         [(["/dev/zero"], {}), (["x"], {}), (["z"], {"model": "m"}), (["w"], {})]),
    ):
        settings = Settings.at(tmp_path / "settings.ini")
        settings.q.setValue("recent/entries", raw)
        assert settings.recent() == expected
