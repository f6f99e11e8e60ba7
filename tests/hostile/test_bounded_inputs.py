"""Hostile input, one table per family (issue 16): every case runs through the ``sapp`` command line in a child
process under a memory limit (1 GiB of address space) and a time limit (20 s per case, killed after), and must
end with a clean message — exit status 1 (2 for a bad command-line argument), no escaped exception — that names
the file, the key and the limit. The bounds themselves are in estimator/limits.py and docs/limits.md.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hostile_harness import ROOT, cli, run_cases

from estimator.limits import MAX_FILE_BYTES, MAX_MESSAGE_CHARS

EXAMPLES = ROOT / "resources" / "examples"
FIXTURES = ROOT / "tests" / "fixtures"
PLAN = """\
model:
  name: tiny
  hidden_size: 1024
  num_layers: 8
  num_attention_heads: 16
  ffn_hidden_size: 4096
  vocab_size: 32000
strategy:
  dp: 2
  tp: 2
  pp: 2
  micro_batch_size: 1
  micro_batches: 4
  seq_length: 2048
hardware:
  device: A2
options:
  framework: megatron
"""
MINDFORMERS = (EXAMPLES / "mindformers_llama3_70b.yaml").read_text()
SCRIPT = (EXAMPLES / "mindspeed_qwen3_32b_pretrain.sh").read_text()
TOML = (EXAMPLES / "torchtitan_llama3_8b_longctx_cp.toml").read_text()
HF = (FIXTURES / "hf" / "llama_small.json").read_text()


def laughs(levels: int) -> str:
    """A YAML "billion laughs" as one flow list: ``levels`` anchors, each a list of ten aliases of the one before
    (10^levels values once expanded, a few hundred characters written)."""
    items = ["&a0 [" + ", ".join(["lol"] * 10) + "]"]
    items += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "[" + ", ".join(items) + "]"


def check(outcomes: dict, table: list[tuple[dict, list[str]]], rc: int = 1) -> None:
    """Every case ended cleanly with ``rc`` and a message matching each pattern (re.search); all problems are
    reported at once."""
    problems = []
    for case, patterns in table:
        got = outcomes[case["name"]]
        expected_rc = 2 if any(p.startswith("argument ") for p in patterns) else rc
        if not got.clean or got.rc != expected_rc:
            problems.append(got.describe())
            continue
        if got.stderr_chars > MAX_MESSAGE_CHARS + 2000:
            problems.append(f"{case['name']}: a message of {got.stderr_chars:,} characters")
        missing = [p for p in patterns if not re.search(p, got.stderr)]
        if missing:
            problems.append(f"{case['name']}: {missing} not in {got.stderr[-800:]!r}")
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hostile")
    out: dict[str, Path] = {}

    def put(name: str, text: str) -> Path:
        path = root / name
        path.write_text(text, encoding="utf-8")
        out[name] = path
        return path

    put("plan.yaml", PLAN)
    # expansion bombs: aliases in the model name, in strategy.recompute, in a key MindFormers ignores; a loop
    put("bomb_name.yaml", PLAN.replace("name: tiny", f"name: {laughs(9)}"))
    put("bomb_recompute.yaml", PLAN.replace("seq_length: 2048", f"seq_length: 2048\n  recompute: {laughs(9)}"))
    put("bomb_mindformers.yaml", MINDFORMERS + f"\nnotes: {laughs(9)}\n")
    put("recursive.yaml", PLAN.replace("seq_length: 2048", "seq_length: 2048\n  noop_layers: &loop [1, *loop]"))
    put("doubling.sh", "X=ab\n" + "X=$X$X\n" * 40 + SCRIPT)
    put("append.sh", "X=abcdefgh\n" + 'X+="$X"\n' * 40 + SCRIPT)
    put("many_refs.sh", "Y=" + "y" * 4000 + "\nX=" + "$Y" * 100_000 + "\n" + SCRIPT)
    put("nested_default.sh", "X=" + "${A:-" * 5000 + "x" + "}" * 5000 + "\n" + SCRIPT)
    # includes: a diamond (every level includes the next twice), a long chain, a wide fan-out
    for i in range(31):
        put(f"diamond{i}.yaml", f"base_config: [diamond{i + 1}.yaml, diamond{i + 1}.yaml]\n" if i < 30 else
            "context: {}\n")
    put("diamond.yaml", "base_config: [diamond24.yaml]\n" + MINDFORMERS)
    for i in range(12):
        put(f"chain{i}.yaml", f"base_config: chain{i + 1}.yaml\n" if i < 11 else "context: {}\n")
    put("chain.yaml", "base_config: chain0.yaml\n" + MINDFORMERS)
    for i in range(80):
        put(f"fan{i}.yaml", f"context: {{}}\nnote{i}: {i}\n")
    put("fan.yaml", "base_config: [" + ", ".join(f"fan{i}.yaml" for i in range(80)) + "]\n" + MINDFORMERS)
    return out


def test_expansion_bombs(files: dict[str, Path]) -> None:
    f = files
    table = [
        (cli("aliases in the model name", "estimate", f["bomb_name.yaml"]),
         [r"bomb_name\.yaml:2:\d+: ", r"more than 1,000,000 values", "aliases"]),
        (cli("aliases in strategy.recompute", "estimate", f["bomb_recompute.yaml"]),
         [r"bomb_recompute\.yaml:15:\d+: ", r"1,000,000 values"]),
        (cli("aliases in a key MindFormers ignores", "estimate", f["bomb_mindformers.yaml"]),
         [r"bomb_mindformers\.yaml:\d+:\d+: ", r"1,000,000 values"]),
        (cli("a recursive anchor", "estimate", f["recursive.yaml"]),
         [r"recursive\.yaml:\d+:\d+: ", "refers to the value it is inside"]),
        (cli("X=$X$X doubling", "estimate", f["doubling.sh"]),
         [r"doubling\.sh:\d+, key 'X': ", "1 MiB", "16,384 pieces", "X=\\$X\\$X"]),
        (cli("X+=$X appending", "estimate", f["append.sh"]), [r"append\.sh:\d+, key 'X': ", "1 MiB"]),
        (cli("one line of 100,000 references", "estimate", f["many_refs.sh"]),
         [r"many_refs\.sh:2, key 'X': ", "1 MiB"]),
        (cli("${A:-${A:-…}} 5,000 deep", "estimate", f["nested_default.sh"]),
         [r"nested_default\.sh:1:\d+: ", "nested more than 16 levels"]),
        (cli("a diamond of base_config includes", "estimate", f["diamond.yaml"]),
         [r"diamond\d+\.yaml, key 'base_config': ", "more than 64 files", "include each base once"]),
        (cli("a chain of 13 includes", "estimate", f["chain.yaml"]),
         [r"chain\d+\.yaml, key 'base_config': ", "more than 8 levels"]),
        (cli("80 includes side by side", "estimate", f["fan.yaml"]),
         [r"fan\.yaml, key 'base_config': ", "more than 64 files"]),
    ]
    check(run_cases([case for case, _ in table]), table)


def test_absurd_sizes(files: dict[str, Path], tmp_path: Path) -> None:
    plan, digits = files["plan.yaml"], "9" * 5001

    def put(name: str, text: str) -> Path:
        (tmp_path / name).write_text(text, encoding="utf-8")
        return tmp_path / name

    model = json.loads((EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json").read_text())
    model["text_decoder"]["num_layers"] = 999999999999999999999992
    (tmp_path / "mm.sh").write_text((EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh").read_text())
    hf = json.loads(HF)
    table = [
        (cli("num_layers 1e12 in a plan", "estimate", put("layers.yaml", PLAN.replace("num_layers: 8",
                                                                                     "num_layers: 1000000000000"))),
         [r"layers\.yaml, key 'model\.num_layers': 1000000000000 is out of range", "at most 10,000"]),
        (cli("num_layers 1e12 by --set", "estimate", plan, "--set", "model.num_layers=1000000000000"),
         [r"key 'model\.num_layers': ", "at most 10,000"]),
        (cli("--num-layers 31000000 in a launch script", "estimate",
             put("layers.sh", SCRIPT.replace("--num-layers 64", "--num-layers 31000000"))),
         [r"layers\.sh, key 'model\.num_layers': 31000000", "at most 10,000"]),
        (cli("a model.json with 1e23 layers", "estimate", tmp_path / "mm.sh",
             put("model.json", json.dumps(model))),
         [r"model\.json, key 'model\.num_layers': 999999999999999999999992", "at most 10,000"]),
        (cli("a config.json with 1e7 layers", "estimate", plan, "--model",
             put("config.json", json.dumps({**hf, "num_hidden_layers": 10_000_000}))),
         [r"config\.json, key 'num_hidden_layers': 10000000", "10000"]),
        (cli("vocabulary 2^40", "estimate", put("vocab.yaml", PLAN.replace("vocab_size: 32000",
                                                                            "vocab_size: 1099511627776"))),
         [r"vocab\.yaml, key 'model\.vocab_size': ", r"at most 16,777,216 \(2\^24\)"]),
        (cli("sequence 2^31", "estimate", put("seq.yaml", PLAN.replace("seq_length: 2048", "seq_length: 2147483648"))),
         [r"seq\.yaml, key 'strategy\.seq_length': ", r"at most 134,217,728 \(2\^27\)"]),
        (cli("hidden size 2^40", "estimate", plan, "--set", "model.hidden_size=1099511627776"),
         [r"key 'model\.hidden_size': ", r"at most 1,048,576 \(2\^20\)"]),
        (cli("tp 2^21", "estimate", plan, "--set", "strategy.tp=2097152"), [r"--set strategy\.tp: ", "2\\^20"]),
        (cli("dp·tp·pp·cp beyond 2^20 devices", "estimate", put("world.yaml", PLAN.replace("dp: 2", "dp: 1048576"))),
         [r"world\.yaml, key 'strategy\.dp': ", r"4,194,304 devices", "at most 1,048,576"]),
        (cli("--devices 2^40", "estimate", plan, "--devices", str(2 ** 40)),
         ["argument --devices: ", "at most 1,048,576"]),
        (cli("5,001 digits in a YAML key nobody reads", "estimate",
             put("digits.yaml", MINDFORMERS + f"\nunused_key: {digits}\n")),
         [r"digits\.yaml:\d+:13: an integer written with 5,001 characters", "4,300 digits"]),
        (cli("5,001 digits in JSON", "estimate", plan, "--model", put("digits.json", HF[:-2] + f', "x": {digits}}}')),
         [r"digits\.json:\d+:\d+: a number written with 5,001 digits", "4,300"]),
        (cli("5,001 digits in TOML", "estimate", put("digits.toml", TOML + f"\n[x]\ny = {digits}\n")),
         [r"digits\.toml:\d+:5: a number written with 5,001 digits"]),
        (cli("5,001 digits in a launch script", "estimate",
             put("digits.sh", SCRIPT.replace("--num-layers 64", f"--num-layers {digits}"))),
         [r"digits\.sh", "num-layers|num_layers"]),
        (cli("5,001 digits after --set", "estimate", plan, "--set", f"strategy.tp={digits}"),
         [r"--set strategy\.tp: expected an integer"]),
    ]
    check(run_cases([case for case, _ in table]), table)


def test_search_blowups(files: dict[str, Path]) -> None:
    plan, deepseek = files["plan.yaml"], EXAMPLES / "mindformers_deepseek_v3_671b.yaml"
    many = ",".join(str(k) for k in range(1, 3000))
    table = [
        (cli("--devices 10^18", "search", plan, "--devices", str(10 ** 18)),
         ["argument --devices: ", "at most 1,048,576"]),
        (cli("--devices 735134400 --global-batch 735134400", "search", plan, "--devices", "735134400",
             "--global-batch", "735134400", "--dims", "all=auto"), ["argument --devices: ", "1,048,576"]),
        (cli("720720 devices, every dimension auto", "search", deepseek, "--devices", "720720", "--global-batch",
             "720720", "--dims", "all=auto"),
         [r"the search space has [\d,]+ candidate strategies, more than the 3,000,000", "narrow it",
          "--dims tp=8"]),
        (cli("a list of 2,999 micro-batch sizes", "search", plan, "--dims", f"mbs={many}"),
         ["--dims mbs: 2,999 values; at most 1,024"]),
        (cli("a degree of 10^18 in --dims", "search", plan, "--dims", f"tp=1,{10 ** 18}"),
         [r"key '--dims tp': ", "at most 1,048,576"]),
        (cli("--top 10^9", "search", plan, "--top", str(10 ** 9)), ["argument --top: ", "at most 10,000"]),
    ]
    check(run_cases([case for case, _ in table]), table)


def test_file_system_tricks(files: dict[str, Path], tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    (tmp_path / "model.json").symlink_to("/dev/zero")
    (tmp_path / "dangling.yaml").symlink_to(tmp_path / "missing.yaml")
    big = tmp_path / "big.yaml"
    big.write_text(PLAN + "# " + "x" * MAX_FILE_BYTES + "\n")
    table = [
        (cli("/dev/zero", "estimate", "/dev/zero"), ["/dev/zero: is a character device, not a regular file"]),
        (cli("/dev/urandom", "estimate", "/dev/urandom"), ["/dev/urandom: is a character device"]),
        (cli("a FIFO nobody writes", "estimate", fifo), [r"fifo\.yaml: is a named pipe \(FIFO\)"]),
        (cli("model.json a symlink to /dev/zero", "estimate", files["plan.yaml"], "--model", tmp_path / "model.json"),
         [r"model\.json: is a character device"]),
        (cli("a symlink to a missing file", "estimate", tmp_path / "dangling.yaml"),
         [r"dangling\.yaml: a symbolic link to a missing file"]),
        (cli("a directory", "estimate", tmp_path), ["is a directory"]),
        (cli("a config larger than 1 MiB", "estimate", big), [r"big\.yaml: is 1\.0 MiB", "up to 1 MiB"]),
    ]
    check(run_cases([case for case, _ in table]), table)


def test_values_the_loaders_reject_and_deep_nesting(tmp_path: Path) -> None:
    def put(name: str, text: str) -> Path:
        (tmp_path / name).write_text(text, encoding="utf-8")
        return tmp_path / name

    table = []
    for tag, value, what in (("int", "!!int abc", "an integer"), ("float", "!!float abc", "a number"),
                             ("bool", "!!bool maybe", "a boolean"), ("timestamp", "!!timestamp 2001-13-45", "a date"),
                             ("date", "2024-02-30", "a date")):
        path = put(f"late_{tag}.yaml", MINDFORMERS + f"\nrun_date: {value}\n")
        line = MINDFORMERS.count("\n") + 2
        table.append((cli(f"{value} in a key MindFormers ignores", "estimate", path),
                      [rf"late_{tag}\.yaml:{line}:11: ", f"is not {what}", "put it in quotes"]))
    table += [
        (cli("a TOML array nested 10^5 deep", "estimate", put("deep.toml", "x = " + "[" * 100_000 + "]" * 100_000)),
         [r"deep\.toml: malformed TOML: values nest more than 64 levels"]),
        (cli("TOML inline tables nested 5,000 deep", "estimate",
             put("tables.toml", "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n")), ["more than 64 levels"]),
        (cli("a JSON array nested 10^5 deep", "estimate", put("deep.json", "[" * 100_000 + "]" * 100_000)),
         [r"deep\.json: malformed JSON: values nest more than 64 levels"]),
        (cli("a YAML list nested 10^5 deep", "estimate", put("deep.yaml", "[" * 100_000 + "]" * 100_000)),
         [r"deep\.yaml: malformed YAML: values nest more than 64 levels"]),
        (cli("YAML nested 100 deep", "estimate", put("deep100.yaml", "a: " + "[" * 100 + "]" * 100)),
         [r"deep100\.yaml:1:\d+: values nest more than 64 levels"]),
        (cli("shell arithmetic nested 10^5 deep", "estimate",
             put("arith.sh", SCRIPT.replace("--num-layers 64", "--num-layers $((" + "(" * 100_000 + "64" +
                                            ")" * 100_000 + "))"))),
         [r"arith\.sh:\d+, key '--num-layers': ", "nested more than 64 levels deep"]),
    ]
    check(run_cases([case for case, _ in table]), table)


def test_absurd_edits(files: dict[str, Path]) -> None:
    plan = files["plan.yaml"]
    table = [
        (cli("--set strategy.pp=0", "estimate", plan, "--set", "strategy.pp=0"),
         [r"--set strategy\.pp: 0 is out of range: a parallel degree must be at least 1"]),
        (cli("--set strategy.pp=-1", "estimate", plan, "--set", "strategy.pp=-1"),
         [r"--set strategy\.pp: -1 .*at least 1"]),
        (cli("--set strategy.dp=0", "estimate", plan, "--set", "strategy.dp=0"),
         [r"--set strategy\.dp: 0 .*at least 1"]),
        (cli("--set hardware.eff_matmul=0", "estimate", plan, "--set", "hardware.eff_matmul=0"),
         [r"key 'hardware\.eff_matmul': 0\.0 is out of range: an efficiency must be above 0 and at most 1"]),
        (cli("--set hardware.hbm_bandwidth=0", "estimate", plan, "--set", "hardware.hbm_bandwidth=0"),
         [r"hardware\.hbm_bandwidth.*a rate must be above 0"]),
        (cli("fit --tokens abc", "fit", plan, "--max", "seq_length", "--tokens", "abc"),
         ["argument --tokens: 'abc': expected a number, e.g. 15e12"]),
        (cli("fit --tokens -5", "fit", plan, "--max", "seq_length", "--tokens", "-5"),
         ["argument --tokens: '-5': .*a token count must be above 0"]),
        (cli("balance --budget nan", "balance", plan, "--budget", "nan"),
         ["argument --budget: 'nan': cannot read size"]),
        (cli("balance --budget 1e400GB", "balance", plan, "--budget", "1e400GB"), ["argument --budget: .*too large"]),
        (cli("estimate --explain --stage 99", "estimate", plan, "--explain", "--stage", "99"),
         ["--stage 99: the plan has 2 pipeline stages, numbered 0 to 1"]),
    ]
    check(run_cases([case for case, _ in table]), table)


def test_accepted_nonsense_is_refused(files: dict[str, Path], tmp_path: Path) -> None:
    def put(name: str, text: str) -> Path:
        (tmp_path / name).write_text(text, encoding="utf-8")
        return tmp_path / name

    table = [
        (cli("sharding: bogus", "estimate", put("sharding.yaml", PLAN.replace("seq_length: 2048",
                                                                             "seq_length: 2048\n  sharding: bogus"))),
         [r"sharding\.yaml, key 'strategy\.sharding': 'bogus' is not one of none, zero1"]),
        (cli("param_bytes: .nan", "estimate", put("nan.yaml", PLAN.replace("seq_length: 2048",
                                                                          "seq_length: 2048\n  param_bytes: .nan"))),
         [r"nan\.yaml, key 'strategy\.param_bytes': nan is not a finite number"]),
        (cli("param_bytes: -2", "estimate", files["plan.yaml"], "--set", "strategy.param_bytes=-2"),
         [r"--set strategy\.param_bytes: -2\.0 .*a byte width must be above 0"]),
        (cli("seq_length: 0", "estimate", put("seq0.yaml", PLAN.replace("seq_length: 2048", "seq_length: 0"))),
         [r"seq0\.yaml, key 'strategy\.seq_length': 0 is out of range"]),
        (cli("micro_batch_size: 0", "estimate", put("mbs0.yaml", PLAN.replace("micro_batch_size: 1",
                                                                             "micro_batch_size: 0"))),
         [r"mbs0\.yaml, key 'strategy\.micro_batch_size': 0 is out of range"]),
    ]
    check(run_cases([case for case, _ in table]), table)


def test_a_long_comment_line_is_read_in_linear_time(tmp_path: Path) -> None:
    """The MindFormers global-batch comment check was quadratic in a comment line's length (37 s on 160 KB of
    keywords); 600 KB of them must be read well inside the harness' 20 s."""
    line = "# " + "global batch size per gbs " * 24_000  # keywords, no '=': every start position used to rescan
    path = tmp_path / "comment.yaml"
    path.write_text(MINDFORMERS + line + "\n", encoding="utf-8")
    assert 500_000 < len(line) < MAX_FILE_BYTES
    got = run_cases([cli("a 600 KB comment line", "estimate", path)])["a 600 KB comment line"]
    assert got.clean and got.rc == 0, got.describe()
    assert got.seconds < 10, got.describe()
