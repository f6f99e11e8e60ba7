"""MindSpeed-LLM launch scripts and MindSpeed-MM model.json: reading, writing back, robustness
(docs/model.md#frameworks)."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest
from format_helpers import read_estimate_export, roundtrip
from fuzzing import fuzz_settings
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from estimator.errors import ConfigError, SappError, StrategyError
from estimator.estimate import estimate
from estimator.export import export
from estimator.formats import mindspeed, parse, read_file
from estimator.formats.shell import Script, problem_of, text_of
from estimator.parsed import SourceFile, apply_changes

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "mindspeed"
EXAMPLES = ROOT / "resources" / "examples"


def real(shared_dir: Path, name: str) -> str:
    return str(shared_dir / "real-configs" / "mindspeed" / name)


# ------------------------------------------------------------------------------------------ real files
# The degrees and layers each saved file states (SOURCES.md). ep with --moe-tp-extend-ep is EP·TP (experts
# spread over EP×TP ranks, etp 1), e.g. DeepSeek-V3: EP 8 × TP 4 = 32.
REAL = {
    "msl_llama2_7b_pretrain_ptd.sh": dict(dp=4, tp=1, pp=2, vpp=1, cp=1, micro_batches=64, seq_length=4096,
                                          sequence_parallel=True, mode="zero1", layers=32),
    "msl_llama2_70b_pretrain_ptd.sh": dict(dp=1, tp=8, pp=4, vpp=4, micro_batches=1024, mode="none", layers=80,
                                           kv=8),
    "msl_llama31_8b_128k_pretrain_ptd.sh": dict(dp=1, tp=8, pp=1, cp=4, cp_algo="ring", micro_batches=32,
                                                seq_length=131072, layers=32, kv=8),
    "msl_mixtral_8x7b_pretrain_ptd.sh": dict(dp=2, tp=8, pp=1, cp=4, ep=1, micro_batches=16, seq_length=32768,
                                             experts=8, layers=32),
    "msl_deepseek3_671b_4k_pretrain_ptd.sh": dict(dp=16, tp=4, pp=8, ep=32, etp=1, vpp=2, schedule="dualpipev",
                                                  micro_batches=240, noop=(61, 62, 63), layers=61, mtp=1,
                                                  recompute="full", swap=(True, 4), experts=256),
    "msl_qwen3_32b_4k_pretrain_ptd.sh": dict(dp=1, tp=8, pp=2, vpp=8, micro_batches=128, layers=64, kv=8,
                                             head_dim=128, qk_norm=True),
    "msl_qwen3_30b_a3b_4k_pretrain_ptd.sh": dict(dp=8, tp=1, pp=2, ep=8, micro_batches=32, recompute="full",
                                                 layers=48, experts=128),
    "msl_qwen3_235b_a22b_4k_A3_pretrain_ptd.sh": dict(dp=64, tp=1, pp=4, ep=32, vpp=3, micro_batches=16,
                                                      noop=(94, 95), layers=94, full_counts=8, reuse=True),
    "msl_qwen25_72b_32k_pretrain_ptd.sh": dict(dp=1, tp=8, pp=4, cp=4, partition=(17, 20, 22, 21), micro_batches=32,
                                               layers=80),
    "hp_fasttuner_pretrain_deepseek3_671b_4k_A3_ptd.sh": dict(dp=32, tp=2, pp=8, ep=32, vpp=2, micro_batches=120,
                                                              full_counts=8, swap=(True, 16), layers=61),
}
# None: estimates alone; a tuple: the error names all of these
OUTCOME = {
    **dict.fromkeys(REAL),
    "msl_llama31_405b_128k_pretrain_ptd.sh": None,  # vocabulary from the catalogued shape (Llama 3.1 405B)
    "mm_qwen2_5vl_7b_finetune.sh": ("model.hidden_size", "--model config.json"),
    "mm_ms_qwen3vl_30b_finetune.sh": ("model.hidden_size", "--model config.json"),
    "mm_qwen2_5vl_72b_finetune.sh": ("NNODES", "$(cat $HOSTFILE | wc -l)", "--devices"),
    "mm_qwen2_5vl_7b_model.json": ("no strategy source", "launch script"),
    "mm_qwen2_5vl_72b_model.json": ("no strategy source", "launch script"),
    "mm_ms_qwen3vl_30b_model.json": ("no strategy source", "launch script"),
}


def _check(parsed, want: dict) -> None:
    s, m = parsed.strategy, parsed.model
    for key in ("dp", "tp", "pp", "vpp", "cp", "ep", "etp", "micro_batches", "seq_length", "sequence_parallel",
                "cp_algo", "schedule", "partition"):
        if key in want:
            assert getattr(s, key) == want[key], key
    assert s.world_size == s.dp * s.tp * s.pp * s.cp
    if "noop" in want:
        assert s.noop_layers == want["noop"]
    if "layers" in want:
        assert m.num_layers == want["layers"]
    if "mode" in want:
        assert s.sharding.mode == want["mode"]
    if "recompute" in want:
        assert s.recompute.default_mode == want["recompute"]
    if "full_counts" in want:
        assert s.recompute.full_counts == want["full_counts"]
    if "swap" in want:
        assert (s.swap_optimizer, s.swap_times) == want["swap"]
    if "reuse" in want:
        assert s.reuse_fp32_param is want["reuse"]
    for key, field in (("kv", "num_kv_heads"), ("experts", "num_experts"), ("mtp", "mtp_layers"),
                       ("head_dim", "head_dim"), ("qk_norm", "qk_norm")):
        if key in want:
            assert getattr(m, field) == want[key], field


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_script_states_its_strategy(shared_dir, name):
    parsed = parse([real(shared_dir, name)])
    assert parsed.options.framework == "mindspeed"
    assert {s.format for s in parsed.sources} == {"mindspeed_script"}
    _check(parsed, REAL[name])


def test_every_real_file_estimates_or_says_what_is_missing(shared_dir):
    folder = shared_dir / "real-configs" / "mindspeed"
    assert {p.name for p in folder.iterdir()} == set(OUTCOME)
    for name, expected in OUTCOME.items():
        if expected is None:
            parsed = parse([str(folder / name)])
            result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
            assert result.peak_bytes > 0
            continue
        with pytest.raises(SappError) as err:
            parse([str(folder / name)])
        for fragment in expected:
            assert fragment in str(err.value), (name, str(err.value))


def test_405b_reads_as_written_and_estimates_with_a_model_config(shared_dir):
    path = real(shared_dir, "msl_llama31_405b_128k_pretrain_ptd.sh")
    values = read_file(path).values
    assert values["strategy.partition"] == (12, 12, 12, 15, 15, 15, 15, 15, 15)
    assert (values["strategy.tp"], values["strategy.pp"], values["strategy.cp"], values["strategy.dp"]) == \
        (16, 9, 4, 1)
    assert values["model.num_kv_heads"] == 16  # --num-query-groups 16, read as written
    assert values["strategy.recompute"] == "full" and values["strategy.reuse_fp32_param"] is True
    parsed = parse([path], model=str(FIX / "llama31_405b_config.json"))
    assert parsed.model.num_kv_heads == 8 and parsed.model.vocab_size == 128256
    assert any(w.code == "W-MODEL-DIFF" and "num_kv_heads" in w.text for w in parsed.warnings)
    assert parsed.strategy.offload_activations == ("input_norm", "self_attention", "post_attention_norm")
    assert parsed.provenance["strategy.offload_activations"].key.startswith("--swap-attention")
    with pytest.raises(StrategyError, match="R-TP-KV"):  # why the script states 16 groups for TP 16
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    as_written = apply_changes(parsed, {"model.num_kv_heads": 16})
    assert estimate(as_written.model, as_written.strategy, as_written.hardware, as_written.options).peak_bytes > 0


def test_hostfile_script_needs_devices(shared_dir):
    script = real(shared_dir, "mm_qwen2_5vl_72b_finetune.sh")
    model = real(shared_dir, "mm_qwen2_5vl_72b_model.json")
    parsed = parse([script, model], devices=32)
    _check(parsed, dict(dp=2, tp=2, pp=8, micro_batches=96, layers=80, kv=8))
    assert parsed.strategy.global_batch_size == 96 * 2  # GBS = MBS·GRAD_ACC_STEP·DP with DP from --devices


@pytest.mark.parametrize("stem, want", [
    ("mm_qwen2_5vl_7b", dict(dp=4, tp=1, pp=2, micro_batches=48, seq_length=1024, layers=28, kv=4)),
    ("mm_ms_qwen3vl_30b", dict(dp=2, tp=2, pp=4, ep=2, micro_batches=8, layers=48, kv=4, experts=128, head_dim=128,
                               qk_norm=True)),
])
def test_mm_script_and_model_json_pair(shared_dir, stem, want):
    script = real(shared_dir, f"{stem}_finetune.sh")
    model = real(shared_dir, f"{stem}_model.json")
    for order in ([script, model], [model, script]):
        parsed = parse(order)
        _check(parsed, want)
        assert parsed.model.vision is not None and parsed.model.vision.frozen
        assert parsed.model.vision.projector_frozen
        assert estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options).peak_bytes > 0
    if stem == "mm_ms_qwen3vl_30b":  # the script's --vocab-size 152064 loses to model.json's 151936
        assert parsed.model.vocab_size == 151936
        assert any(w.code == "W-MODEL-DIFF" and "vocab_size" in w.text for w in parsed.warnings)
        assert any(w.code == "W-STATED" and "GRAD_ACC_STEP=1" in w.text for w in parsed.warnings)


def test_model_json_states_its_layout(shared_dir):
    reading = read_file(real(shared_dir, "mm_qwen2_5vl_7b_model.json"))
    assert (reading.format, reading.role) == ("mindspeed_model", "model")
    assert reading.values["strategy.partition"] == (12, 16)
    assert reading.values["strategy.vision_partition"] == (32, 0)
    assert reading.values["model.vision"]["num_layers"] == 32 and reading.values["model.vision"]["frozen"]
    moe = read_file(real(shared_dir, "mm_ms_qwen3vl_30b_model.json")).values
    assert moe["strategy.partition"] == (6, 14, 14, 14) and moe["strategy.full_counts"] == 4
    assert moe["model.moe_ffn_hidden_size"] == 768 and moe["model.experts_per_token"] == 8


def test_model_json_layout_reaches_the_plan(shared_dir):
    parsed = parse([real(shared_dir, "mm_qwen2_5vl_7b_finetune.sh"), real(shared_dir, "mm_qwen2_5vl_7b_model.json")])
    assert parsed.strategy.partition == (12, 16)


# ------------------------------------------------------------------------------------------ fixtures
def test_fixture_hostfile_defaults_conditionals():
    path = str(FIX / "hostfile_moe.sh")
    with pytest.raises(ConfigError) as err:
        parse([path])
    assert "NNODES (line 8)" in str(err.value) and "--devices" in str(err.value)
    parsed = parse([path], devices=64)
    s = parsed.strategy
    assert (s.dp, s.tp, s.pp, s.cp, s.ep, s.etp) == (4, 2, 2, 4, 4, 1)
    assert (s.cp_algo, s.ulysses_degree, s.seq_length, s.micro_batches) == ("hybrid", 2, 16384, 8)
    assert s.recompute.full_counts == 1 and s.recompute.default_mode == "selective"  # the if-branch is read
    assert s.recompute.switches == ("act",)
    assert (s.swap_optimizer, s.swap_times, s.residual_bytes) == (True, 16, 4.0)
    assert parsed.model.capacity_factor == 1.25
    assert any(w.code == "W-SHELL" and "RECOMPUTE_LAYERS" in w.text for w in parsed.warnings)
    assert any(a.field == "strategy.swap_times" for a in parsed.assumptions)


def test_fixture_msrun_selective_fp32():
    parsed = parse([str(FIX / "selective_dense.sh")])
    s, m = parsed.strategy, parsed.model
    assert (s.dp, s.tp, s.pp, s.micro_batch_size, s.micro_batches) == (2, 2, 4, 2, 16)
    assert s.partition == (5, 7, 7, 5) and s.vpp_group == 4
    assert s.recompute.default_mode == "selective" and s.recompute.switches == ("core_attn", "layernorm")
    assert (s.param_bytes, s.compute_bytes, s.master_bytes, s.sharding.mode) == (4.0, 4.0, 0.0, "none")
    assert (m.vocab_size, m.make_vocab_divisible_by, m.norm, m.gated_ffn, m.tie_embeddings) == \
        (50257, 128, "layer", False, True)
    assert m.qkv_bias is True  # Megatron's default linear biases
    assert estimate(m, s, parsed.hardware, parsed.options).peak_bytes > 0


def test_upstream_model_json_with_tmp_block():
    parsed = parse([str(FIX / "upstream_tmp_model.json")])
    s, m = parsed.strategy, parsed.model
    assert (s.dp, s.tp, s.pp, s.vpp, s.ep, s.micro_batches) == (4, 1, 2, 2, 2, 2)
    assert s.partition == ((3, 3), (3, 3)) and s.recompute.uniform_group == 2
    assert (m.kv_lora_rank, m.num_shared_experts, m.head_dim, m.mtp_layers) == (512, 2, 128, 1)
    assert estimate(m, s, parsed.hardware, parsed.options).peak_bytes > 0


def test_shell_subset():
    text = ('A=3\nB=${A}\nC=$((A * (B + 1) - 2 ** 2 / 3))\nexport D="x $A"\nE=${UNSET:-7}\nF=$(date)\n'
            "G='lit $A'\nH=${#A}\nI=$((A/0))\nJ=`hostname`\nK=\"a\\\n b\"\n")
    s = Script.parse(text, "t.sh")
    assert [text_of(s.vars[k]) for k in "ABCDEGK"] == ["3", "3", "11", "x 3", "7", "lit $A", "a b"]
    for name, fragment in (("F", "$(date)"), ("H", "unsupported"), ("I", "division by zero"), ("J", "hostname")):
        assert fragment in (problem_of(s.vars[name]) or ""), name
    for bad, where in (("X='open\n", (1, 3)), ('Y="open\n', (1, 3)), ("Z=$((1+\n", (1, 3))):
        with pytest.raises(ConfigError) as err:
            Script.parse(bad, "bad.sh")
        assert (err.value.line, err.value.column) == where


def test_zero_device_launcher_is_refused_with_the_flags_named(tmp_path):
    script = tmp_path / "zero.sh"
    script.write_text("torchrun --nproc_per_node 0 --nnodes 2 pretrain_gpt.py --num-layers 4 --hidden-size 64 "
                      "--num-attention-heads 4 --seq-length 128 --vocab-size 1000\n")
    with pytest.raises(ConfigError, match=r"--nproc_per_node × --nnodes is 0 × 2 = 0 devices") as err:
        parse([str(script)])
    assert str(script) in str(err.value) and "--devices N" in str(err.value)


def test_malformed_model_json_has_line_and_column(tmp_path):
    bad = tmp_path / "model.json"
    bad.write_text('{\n  "model_id": "x",\n  "text_decoder": {"num_layers": 4,,}\n}\n')
    with pytest.raises(ConfigError) as err:
        parse([str(bad)])
    assert (err.value.line, err.value.column) == (3, 36)
    assert f"{bad}:3:36" in str(err.value)


# ------------------------------------------------------------------------------------------ writing
def _copy(tmp_path: Path, *paths: Path) -> list[str]:
    out = []
    for path in paths:
        target = tmp_path / path.name
        shutil.copy(path, target)
        out.append(str(target))
    return out


@pytest.mark.parametrize("name, changes, lines", [
    ("mindspeed_qwen3_32b_pretrain.sh", {"strategy.tp": 8},
     ["-TP=4", "+TP=8"]),
    ("mindspeed_qwen3_32b_pretrain.sh", {"strategy.vpp": 4, "strategy.recompute": [1, 1, 1, 1]},
     ["-LAYERS_PER_VCHUNK=8      # 64 layers / (PP 4 x 8) = 2 virtual chunks per stage",
      "+LAYERS_PER_VCHUNK=4      # 64 layers / (PP 4 x 8) = 2 virtual chunks per stage",
      "-    --recompute-num-layers 2", "+    --recompute-num-layers 1",
      "+    --enable-recompute-layers-per-pp-rank \\"]),
    ("mindspeed_qwen3_32b_pretrain.sh", {"strategy.sharding": "none", "strategy.micro_batch_size": 2},
     ["-    --use-distributed-optimizer", "-MBS=1", "+MBS=2"]),
    ("mindspeed_deepseek_v3_671b_pretrain.sh",
     {"strategy.tp": 4, "strategy.full_counts": None, "strategy.recompute": "full"},
     ["-TP=2", "+TP=4", "-EP=16                    # with --moe-tp-extend-ep experts spread over EP x TP = 32 ranks",
      "+EP=8                    # with --moe-tp-extend-ep experts spread over EP x TP = 32 ranks",
      "-    --recompute-method block \\", "+    --recompute-method uniform \\",
      "-    --recompute-num-layers 2", "+    --recompute-num-layers 1"]),
    ("mindspeed_deepseek_v3_671b_pretrain.sh", {"strategy.swap_times": 4, "strategy.seq_length": 8192},
     ["-    --swap-optimizer-times 8 \\", "+    --swap-optimizer-times 4 \\",
      "-SEQ_LEN=4096", "+SEQ_LEN=8192"]),
])
def test_example_roundtrip(tmp_path, name, changes, lines):
    paths = _copy(tmp_path, EXAMPLES / name)
    _files, changed = roundtrip(paths, changes)
    assert sorted(changed) == sorted(lines)


def test_mm_pair_roundtrip_keeps_global_batch(tmp_path):
    paths = _copy(tmp_path, EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh",
                  EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json")
    files, changed = roundtrip(paths, {"strategy.tp": 1})
    assert list(files) == [paths[0]]  # the model.json is a model source: export leaves it alone
    assert sorted(changed) == ["+GRAD_ACC_STEP=8", "+TP=1", "-GRAD_ACC_STEP=16", "-TP=2"]


def test_fixture_roundtrips(tmp_path):
    paths = _copy(tmp_path, FIX / "hostfile_moe.sh")
    _files, changed = roundtrip(paths, {"strategy.cp": 2, "strategy.cp_algo": "ring"}, devices=64)
    assert sorted(changed) == ["+ACC=4", "+CP=2", "+CP_ALGO=megatron_cp_algo", "-ACC=8", "-CP=4",
                               "-CP_ALGO=hybrid_cp_algo"]
    paths = _copy(tmp_path, FIX / "selective_dense.sh")
    _files, changed = roundtrip(paths, {"strategy.partition": [6, 6, 6, 6],
                                         "strategy.recompute_switches": ["core_attn"]})
    assert sorted(changed) == ["+    --num-layer-list 6,6,6,6 \\", "+    --recompute-modules core_attn \\",
                               "-    --num-layer-list 5,7,7,5 \\", "-    --recompute-modules core_attn layernorm \\"]


@pytest.mark.parametrize("changes, fragment", [
    ({"strategy.recompute": [1, 2, 2, 1]}, "one --recompute-num-layers"),
    ({"strategy.offset": [1, 0, 0, -1]}, "offset"),
    ({"strategy.sharding": "zero3"}, "--use-distributed-optimizer"),
    ({"strategy.n_acc": 2}, "n_acc"),
    ({"strategy.schedule": "gpipe"}, "schedule gpipe"),
])
def test_inexpressible_strategies_are_refused(changes, fragment):
    parsed = parse([str(EXAMPLES / "mindspeed_qwen3_32b_pretrain.sh")])
    edited = apply_changes(parsed, changes)
    with pytest.raises(ConfigError) as err:
        export(edited)
    assert "R-FW" in str(err.value) and fragment in str(err.value)


def test_mm_layout_edits_are_refused_in_the_script(tmp_path):
    paths = _copy(tmp_path, EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh",
                  EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json")
    edited = apply_changes(parse(paths), {"strategy.partition": [14, 14]})
    with pytest.raises(ConfigError, match=r"model\.json"):
        export(edited)


def test_model_json_writer_edits_only_its_keys():
    path = EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json"
    text = path.read_text(encoding="utf-8")
    source = SourceFile(str(path), "mindspeed_model", "model", text)
    parsed = parse([str(EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh"), str(path)])
    new_strategy = parsed.strategy.replace(pp=4, dp=1, partition=(7, 7, 7, 7), vision_partition=None,
                                           recompute=parsed.strategy.recompute.replace(full_counts=2))
    out = mindspeed.write(source, parsed, new_strategy)
    diff = [d for d in difflib.unified_diff(text.splitlines(), out.splitlines(), lineterm="", n=0)
            if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    assert sorted(diff) == sorted(['-            "pipeline_num_layers": [32, 0]',
                                   '+            "pipeline_num_layers": [32, 0, 0, 0]',
                                   '-        "pipeline_num_layers": [10, 18],',
                                   '+        "pipeline_num_layers": [7, 7, 7, 7],',
                                   '-        "recompute_num_layers": 4',
                                   '+        "recompute_num_layers": 2'])
    data = json.loads(out)
    assert data["text_decoder"]["pipeline_num_layers"] == [7, 7, 7, 7]


# ------------------------------------------------------------------------------------------ fuzzing
_SOURCES = [p for p in (*FIX.glob("*.sh"), *FIX.glob("*.json"), *EXAMPLES.glob("mindspeed_*"))]


@st.composite
def _mutations(draw):
    path = draw(st.sampled_from(_SOURCES))
    text = path.read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "number", "quote", "continuation", "type"]))
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        if kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 40)):]
        elif kind == "insert":
            text = text[:pos] + draw(st.sampled_from(['"', "'", "$((", "${", "`", "\\", "\n", "--x", "(", ")",
                                                      "$(", "#", "=", ",", "[", "{", "}"])) + text[pos:]
        elif kind == "number":
            number = draw(st.sampled_from(["0", "-1", "99999999999999999999999", "3.5", "1e9", "-0", "007"]))
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = digits[pos % len(digits)]
                text = text[:i] + number + text[i + 1:]
        elif kind == "quote":
            quotes = [i for i, c in enumerate(text) if c in "\"'"]
            if quotes:
                i = quotes[pos % len(quotes)]
                text = text[:i] + text[i + 1:]
        elif kind == "continuation":
            text = text.replace("\\\n", "\n", 1) if pos % 2 else text.replace("\n", " \\\n", 1)
        else:
            text = text.replace(": 32", ': "32"', 1).replace("true", "1", 1).replace("[", '"[', 1)
    return path.suffix, text


@fuzz_settings(150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_mutations())
def test_fuzzed_inputs_raise_only_sapp_errors(tmp_path, case):
    read_estimate_export(tmp_path, *case, devices=64)


def _pair_warnings(parsed) -> list:
    return [w for w in parsed.warnings if w.code == "W-MODEL-PAIR"]


def test_script_paired_with_another_models_model_json_is_said(tmp_path):
    """The 7B script passes --mm-model ./mindspeed_qwen2_5vl_7b_model.json; a model.json named for 72B given with it
    is said, naming both files (as a second path and through --model); the file it passes, or one whose name says
    no size, is not."""
    script = EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh"
    text = (EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json").read_text()
    other = tmp_path / "qwen2_5vl_72b_model.json"
    other.write_text(text)
    for parsed in (parse([script, other]), parse([script], model=other)):
        said = _pair_warnings(parsed)
        assert len(said) == 1, parsed.warnings
        assert str(script) in str(said[0]) and str(other) in str(said[0])
        assert "--mm-model $MM_MODEL (line 58) ./mindspeed_qwen2_5vl_7b_model.json" in str(said[0])
        assert str(other) in said[0].localized("zh_CN") and "混合" in said[0].localized("zh_CN")
    assert not _pair_warnings(parse([script, EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json"]))
    unnamed = tmp_path / "model.json"
    unnamed.write_text(text)
    assert not _pair_warnings(parse([script, unnamed]))


def test_a_checkpoint_named_for_another_size_is_said_too(tmp_path):
    """--load names the model too: alone (--mm-model names no size) and beside --mm-model (both listed)."""
    seven = tmp_path / "qwen2_5vl_7b_model.json"
    seven.write_text((EXAMPLES / "mindspeed_qwen2_5vl_7b_model.json").read_text())
    said = {}
    for mm_model in ("./model.json", "./model_32b.json"):
        script = tmp_path / "finetune.sh"
        script.write_text((EXAMPLES / "mindspeed_qwen2_5vl_7b_finetune.sh").read_text()
                          .replace('MM_MODEL="./mindspeed_qwen2_5vl_7b_model.json"', f'MM_MODEL="{mm_model}"')
                          .replace("    --bf16\n", "    --bf16 \\\n    --load ckpt/Qwen2.5-VL-32B-Instruct\n"))
        found = _pair_warnings(parse([script, seven]))
        assert len(found) == 1 and "--load (line" in str(found[0]) and "Qwen2.5-VL-32B-Instruct" in str(found[0])
        said[mm_model] = found[0]
    assert "./model.json" not in str(said["./model.json"])  # a name without a size says nothing
    assert "./model_32b.json, --load" in str(said["./model_32b.json"])
    assert "./model_32b.json、--load" in said["./model_32b.json"].localized("zh_CN")
