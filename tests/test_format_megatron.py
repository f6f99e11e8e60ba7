"""Megatron-LM launch scripts (bash arrays, commands in variables and strings, branches), Megatron's defaults and
flags, the pipeline split flags, recipe YAMLs, writing back, and fuzzing (docs/model.md#frameworks, issue 13)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from format_helpers import read_estimate_export, roundtrip, variant
from fuzzing import fuzz_settings
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from estimator.errors import ConfigError
from estimator.estimate import estimate
from estimator.export import export
from estimator.formats import parse, read_file
from estimator.formats.megatron_pipeline import PatternError, layer_pattern, moe_layer_groups, parse_layout
from estimator.formats.megatron_write import layout_string
from estimator.formats.shell import Script, problem_of, text_of
from estimator.parsed import apply_changes

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "megatron"
ARRAYS = FIX / "train_moe_mla_arrays.sh"
DEFAULTS = FIX / "train_gpt3_defaults.sh"
SBATCH = FIX / "sbatch_fsdp_string_command.sh"
RECIPE = FIX / "moe_recipe.yaml"



def warning_texts(parsed, code: str) -> list[str]:
    return [w.text for w in parsed.warnings if w.code == code]


def assumption(parsed, field: str):
    return next(a for a in parsed.assumptions if a.field == field)


# ------------------------------------------------------------------------------------------ the shell
def test_bash_arrays_expand_like_bash():
    text = ('B=2\nA=( --x 1\n    # a comment\n    "--y two words" --z $B )\nA+=( --w )\nC=("${A[@]}" --v)\n'
            'D="${A[*]}"\nE=${A[1]}\nF=( $UNSET )\n')
    s = Script.parse(text, "t.sh")
    assert [text_of(e) for e in s.arrays["A"]] == ["--x", "1", "--y two words", "--z", "2", "--w"]
    assert [text_of(e) for e in s.arrays["C"]] == ["--x", "1", "--y two words", "--z", "2", "--w", "--v"]
    assert text_of(s.vars["D"]) == "--x 1 --y two words --z 2 --w" and text_of(s.vars["E"]) == "1"
    assert "UNSET is not set" in (problem_of(s.arrays["F"][0]) or "")  # reported when needed, never guessed


def test_quoted_and_unquoted_array_expansion_split_differently():
    s = Script.parse('A=("--a b" --c)\nrun x.py ${A[@]} "${A[@]}"\n', "t.sh")
    words = [text_of(w) for w in s.expand_words(s.commands[1].words)]
    assert words == ["run", "x.py", "--a", "b", "--c", "--a b", "--c"]


def test_if_branches_are_followed_when_the_script_decides_them():
    text = ('M=fp8\nN=3\nif [[ "$M" == "fp8" ]]; then A=1; elif [ "$N" -gt 1 ]; then A=2; else A=3; fi\n'
            'if [ "$N" -lt 1 ] || [ -n "$M" ]; then B=yes; fi\nif [ "$UNSET" = 1 ]; then C=maybe; fi\n'
            'if [ -f /etc/hosts ]; then D=file; fi\nP=${1:-"default"}\n')
    s = Script.parse(text, "t.sh")
    assert text_of(s.vars["A"]) == "1" and not s.assignments["A"].conditional
    assert text_of(s.vars["B"]) == "yes"
    assert s.assignments["C"].conditional and s.assignments["D"].conditional  # undecidable: may run
    assert text_of(s.vars["P"]) == "default"  # read as run without arguments


# ------------------------------------------------------------------------------------------ reading
def test_array_script_is_read_as_written():
    parsed = parse([str(ARRAYS)])
    s, m = parsed.strategy, parsed.model
    assert parsed.options.framework == "megatron"
    assert "GPUS_PER_NODE" in assumption(parsed, "options.framework").source
    assert (s.dp, s.tp, s.pp, s.ep, s.micro_batches, s.seq_length) == (4, 2, 4, 4, 16, 4096)
    assert s.partition == (2, 6, 6, 2)  # --decoder-first/last-pipeline-num-layers 2 / 2: the middle split evenly
    assert (m.q_lora_rank, m.kv_lora_rank, m.head_dim, m.qk_rope_head_dim, m.v_head_dim) == (512, 256, 64, 32, 64)
    assert (m.first_k_dense, m.moe_layer_freq, m.num_experts, m.experts_per_token) == (2, 1, 16, 4)
    assert (m.shared_ffn_hidden_size, m.num_shared_experts) == (1024, 1)
    assert (m.attention_dropout, m.hidden_dropout, m.vocab_size) == (0.0, 0.0, 32000)
    assert (s.sharding.mode, s.sharding.os) == ("zero1", 2)  # dp·cp 4 / 2 optimizer instances
    assert s.recompute.default_mode == "selective" and s.recompute.switches == ("core_attn", "mla_up_proj")
    assert s.flash_attention is True and "transformer_engine" in assumption(parsed, "strategy.flash_attention").source
    assert s.fp8 == "none" and not s.fp8_param  # the FP8 block is switched off by USE_FP8=0
    assert parsed.provenance["strategy.tp"].key.startswith("--tensor-model-parallel-size $TP_SIZE")
    assert estimate(m, s, parsed.hardware, parsed.options).peak_bytes > 0


def test_fp8_branch_is_read_when_the_script_switches_it_on(tmp_path):
    path = variant(tmp_path, ARRAYS, ("USE_FP8=0", "USE_FP8=1"))
    parsed = parse([path])
    s = parsed.strategy
    assert (s.fp8, s.fp8_param) == ("delayed", True) and "default --fp8-recipe delayed" in \
        assumption(parsed, "strategy.fp8").source
    assert parsed.provenance["strategy.fp8_param"].key.startswith("--fp8-param-gather")


def test_uneven_first_and_last_stages_change_the_price(tmp_path):
    uneven = parse([str(ARRAYS)])
    even_path = variant(tmp_path, ARRAYS, ("    --decoder-first-pipeline-num-layers 2\n", ""),
                        ("    --decoder-last-pipeline-num-layers 2\n", ""))
    even = parse([even_path])
    assert even.strategy.partition is None
    a = estimate(uneven.model, uneven.strategy, uneven.hardware, uneven.options)
    b = estimate(even.model, even.strategy, even.hardware, even.options)
    assert [s.layer_counts for s in a.stages] == [(2,), (6,), (6,), (2,)]
    assert [s.layer_counts for s in b.stages] == [(4,), (4,), (4,), (4,)]
    assert a.stages[1].total > b.stages[1].total and a.stages[0].total < b.stages[0].total


def test_defaults_are_megatrons_and_the_family_is_not_the_file_name(tmp_path):
    misspelt = variant(tmp_path, DEFAULTS, ("    --fp16\n", "    --fp16\n    --sequence-paralel\n"))
    parsed = parse([misspelt])
    s, m = parsed.strategy, parsed.model
    assert m.family == "default" and "not taken from the file name" in assumption(parsed, "model.family").source
    assert m.vocab_size == 50257 and "GPT2BPETokenizer" in assumption(parsed, "model.vocab_size").source
    assert m.ffn_hidden_size == 4 * 1024 and (m.attention_dropout, m.hidden_dropout) == (0.1, 0.1)
    assert (m.norm, m.gated_ffn, m.tie_embeddings, m.qkv_bias) == ("layer", False, True, True)
    assert s.flash_attention is True
    assert (s.vpp, s.cp, s.cp_algo, s.ulysses_degree) == (2, 2, "hybrid", 2)
    # Megatron's default --position-embedding-type learned_absolute: a 1024 × 1024 table priced (P-POS), not warned
    assert m.learned_positions == 1024 and parsed.provenance["model.learned_positions"].key == \
        "--max-position-embeddings"
    # nothing is left unpriced: the attention mask Megatron-LM's data loader builds by default is assumed and
    # priced [W-MASK] (D-MG-AUDIT)
    assert not warning_texts(parsed, "W-UNMODELLED")
    assert parsed.options.dataloader_mask is True and "--no-create-attention-mask-in-dataloader turns it off" in \
        assumption(parsed, "options.dataloader_mask").source
    unknown = warning_texts(parsed, "W-KEY-UNKNOWN")
    assert len(unknown) == 1 and "--sequence-paralel" in unknown[0] and "did you mean '--sequence-parallel'" in \
        unknown[0]
    assert not warning_texts(parsed, "W-FLAG-UNPRICED")  # data and schedule flags are known, not unpriced


def test_learned_positions_follow_the_position_embedding_type(tmp_path):
    """rope (or the legacy --use-rotary-position-embeddings) has no table; without --max-position-embeddings
    (Megatron refuses that) the table is --seq-length rows, said as an assumption."""
    rope = parse([variant(tmp_path, DEFAULTS, ("    --fp16\n", "    --fp16\n    --position-embedding-type rope\n"))])
    legacy = parse([variant(tmp_path, DEFAULTS,
                            ("    --fp16\n", "    --fp16\n    --use-rotary-position-embeddings\n"))])
    assert rope.model.learned_positions == 0 and legacy.model.learned_positions == 0
    missing = parse([variant(tmp_path, DEFAULTS, ("    --max-position-embeddings 1024\n", ""),
                             ("--seq-length 1024", "--seq-length 2048"))])
    assert missing.model.learned_positions == 2048
    assert "--seq-length" in assumption(missing, "model.learned_positions").source


def test_swiglu_default_width_and_unfused_attention(tmp_path):
    path = variant(tmp_path, DEFAULTS, ("    --fp16\n", "    --fp16\n    --swiglu\n    --attention-backend unfused\n"))
    parsed = parse([path])
    assert parsed.model.ffn_hidden_size == int((4 * 1024 * 2 / 3) / 64) * 64 == 2688
    assert parsed.strategy.flash_attention is False


def test_layout_string_places_embedding_loss_and_mtp(tmp_path):
    uneven = "    --decoder-first-pipeline-num-layers 2\n    --decoder-last-pipeline-num-layers 2\n"
    path = variant(tmp_path, ARRAYS, (uneven, '    --pipeline-model-parallel-layout "Et*8|t*8|m|L"\n'),
                   ("--pipeline-model-parallel-size $PP_SIZE", "--pipeline-model-parallel-size 2"),
                   ("    --num-layers 16\n", "    --num-layers 16\n    --mtp-num-layers 1\n"),
                   ("--expert-model-parallel-size $EP_SIZE", "--expert-model-parallel-size 4"))
    parsed = parse([path])
    s = parsed.strategy
    assert (s.pp, s.vpp, s.emb_out_in_offset, s.mtp_in_offset) == (2, 2, True, True)
    assert s.partition == ((9, 8), (1, 1))  # positions: E+8 | 8 ; m | L
    r = estimate(parsed.model, s, parsed.hardware, parsed.options)
    assert "embedding" in r.stages[0].kinds and "mtp" in r.stages[0].kinds  # MTP alone on rank 0's second chunk
    assert "output" in r.stages[1].kinds and "mtp" not in r.stages[1].kinds


def test_layout_string_grammar():
    assert parse_layout("Et*3|(tt|)*29m|L") == ["Ettt"] + ["tt"] * 29 + ["m", "L"]
    assert parse_layout("E,t|((t|)*2t)*2L") == ["Et", "t", "t", "tt", "t", "tL"]
    for bad in ("Ex|L", "(tt|", "t*99999999|L"):
        with pytest.raises(PatternError):
            parse_layout(bad)
    rows = [[4, 2], [2, 3]]
    text = layout_string(rows, True, True, 1)
    assert parse_layout(text) == ["Ettt", "tt", "tt", "tmL"]


def test_moe_layer_freq_expressions_are_evaluated_without_eval():
    assert layer_pattern("([0]*3+[1]*58)") == [0] * 3 + [1] * 58
    assert layer_pattern("[1,1,1,0]*2") == [1, 1, 1, 0, 1, 1, 1, 0] and layer_pattern("4") == 4
    assert moe_layer_groups(layer_pattern("([1]*3+[0]*1)*2"), 8) == [("moe", 3), ("dense", 1), ("moe", 3),
                                                                     ("dense", 1)]
    assert moe_layer_groups(layer_pattern("[0]+[1,0]*3"), 7) == (1, 2)
    for bad in ("__import__('os').system('x')", "[0]*", "[1]*10**9", "[0]+1", "[[0]]"):
        with pytest.raises(PatternError):
            layer_pattern(bad)


def test_list_moe_layer_freq_becomes_layer_groups(tmp_path):
    path = variant(tmp_path, ARRAYS, ('"([0]*2+[1]*14)"', '"([1]*3+[0]*1)*4"'))
    m = parse([path]).model
    assert [(g.kind, g.count) for g in m.layers] == [("moe", 3), ("dense", 1)] * 4
    bad = variant(tmp_path, ARRAYS, ('"([0]*2+[1]*14)"', '"__import__(1)"'), name="bad.sh")
    with pytest.raises(ConfigError, match=r"--moe-layer-freq '__import__\(1\)'") as err:
        parse([bad])
    assert err.value.key == "--moe-layer-freq"


def test_command_held_in_a_string_of_a_batch_job(tmp_path):
    with pytest.raises(ConfigError, match="pass --devices N"):
        parse([str(SBATCH)])
    parsed = parse([str(SBATCH)], devices=16)
    s = parsed.strategy
    assert (s.dp, s.pp, s.vpp, s.micro_batches, s.sharding.mode) == (4, 4, 2, 8, "zero1")
    assert parsed.model.mtp_layers == 1 and parsed.model.num_kv_heads == 2
    assert any("string TRAINING_CMD" in w for w in warning_texts(parsed, "W-SHELL"))
    fsdp = variant(tmp_path, SBATCH, ("${USE_MEGATRON_FSDP:-0}", "${USE_MEGATRON_FSDP:-1}"))
    assert parse([fsdp], devices=16).strategy.sharding.mode == "zero3"


def test_a_script_without_a_training_command_says_so():
    with pytest.raises(ConfigError, match="no training command found"):
        parse([str(FIX / "no_command.sh")])


def test_devices_win_over_the_node_count_with_a_warning():
    parsed = parse([str(ARRAYS)], devices=64)
    assert parsed.strategy.world_size == 64 and parsed.strategy.dp == 8
    assert any("instead of the script's N = --nproc_per_node 8 × --nnodes 4 = 32" in w
               for w in warning_texts(parsed, "W-DEVICES"))


def test_framework_is_detected_from_the_script_and_can_be_forced():
    ascend = parse([str(ROOT / "tests" / "fixtures" / "mindspeed" / "selective_dense.sh")])
    assert ascend.options.framework == "mindspeed"
    assert "msrun" in assumption(ascend, "options.framework").source
    forced = read_file(str(ARRAYS), framework="mindspeed")
    assert forced.format == "mindspeed_script" and forced.values["options.framework"] == "mindspeed"
    assert "as asked" in next(a.source for a in forced.assumptions if a.field == "options.framework")
    assert parse([str(ARRAYS)], framework="mindspeed").options.framework == "mindspeed"


def test_recipe_yaml_reads_the_args_block():
    with pytest.raises(ConfigError, match="--devices N"):
        parse([str(RECIPE)])
    parsed = parse([str(RECIPE)], devices=16)
    s, m = parsed.strategy, parsed.model
    assert {src.format for src in parsed.sources} == {"megatron_recipe"}
    assert (s.dp, s.tp, s.pp, s.vpp, s.ep, s.emb_out_in_offset) == (4, 2, 2, 3, 4, True)  # (10+2)/(2·2) = 3
    assert (m.first_k_dense, m.moe_layer_freq, m.num_kv_heads) == (1, 1, 4)
    assert s.recompute.switches == ("moe_act", "layernorm")
    assert parsed.provenance["strategy.tp"].key == "ARGS.tensor_model_parallel_size"


def test_flags_megatron_does_not_accept_are_named(tmp_path):
    path = variant(tmp_path, ARRAYS, ("    --sequence-parallel\n", "    --sequence-parallel\n    --swap-attention\n"
                                                                  "    --tensor-model-paralell-size 2\n"))
    parsed = parse([path])
    assert "--swap-attention (a MindSpeed flag, which Megatron-LM does not accept)" in \
        warning_texts(parsed, "W-FLAG-UNPRICED")[0]
    assert "did you mean '--tensor-model-parallel-size'" in warning_texts(parsed, "W-KEY-UNKNOWN")[0]



# ------------------------------------------------------------------------------------------ flags that were known
# but not read (D-MG-UNREAD): each is read and priced now, or said with the direction of the error
def test_fp16_gradients_stay_in_fp16_unless_accumulated_in_fp32(tmp_path):
    fp16 = parse([str(DEFAULTS)])
    assert fp16.strategy.grad_bytes == 2.0 and fp16.provenance["strategy.grad_bytes"].key.startswith("--fp16")
    fp32 = parse([variant(tmp_path, DEFAULTS,
                          ("    --fp16\n", "    --fp16\n    --accumulate-allreduce-grads-in-fp32\n"))])
    assert fp32.strategy.grad_bytes == 4.0
    a, b = (estimate(p.model, p.strategy, p.hardware, p.options) for p in (fp16, fp32))
    assert b.stages[0].total > a.stages[0].total
    assert parse([str(ARRAYS)]).strategy.grad_bytes is None  # --bf16: Megatron's fp32 main grads, the default


@pytest.mark.parametrize("flags, states, said", [
    ("--optimizer adam", None, None),
    ("--optimizer sgd", 1, None),
    ("--optimizer sgd --sgd-momentum 0", 0, None),
    ("--optimizer lion", 1, None),
    ("--optimizer muon", None, "--optimizer muon"),
    ("--optimizer soap", None, "a lower bound"),
    ("--optimizer adamw", None, "'adamw' is not one of Megatron-LM's optimizers"),
])
def test_the_optimizer_sets_its_state_count(tmp_path, flags, states, said):
    parsed = parse([variant(tmp_path, ARRAYS, ("    --bf16\n", f"    --bf16\n    {flags}\n"))])
    assert parsed.strategy.n_optimizer_states == states
    texts = [t for t in warning_texts(parsed, "W-NOT-PRICED") if "--optimizer" in t]
    assert (said is None and not texts) or (len(texts) == 1 and said in texts[0])
    assert not any("--optimizer" in t for t in warning_texts(parsed, "W-FLAG-UNPRICED"))


def test_sgd_prices_one_optimizer_state_instead_of_two(tmp_path):
    adam = parse([str(ARRAYS)])
    sgd = parse([variant(tmp_path, ARRAYS, ("    --bf16\n", "    --bf16\n    --optimizer sgd\n"))])
    a, b = (estimate(p.model, p.strategy, p.hardware, p.options) for p in (adam, sgd))
    assert b.stages[0].total < a.stages[0].total


def test_use_custom_fsdp_is_megatron_fsdp(tmp_path):
    path = variant(tmp_path, ARRAYS, ("    --use-distributed-optimizer\n",
                                      "    --use-distributed-optimizer\n    --use-custom-fsdp\n"
                                      "    --data-parallel-sharding-strategy optim_grads_params\n"),
                   ("    --num-distributed-optimizer-instances 2\n", ""))
    parsed = parse([path])
    assert parsed.strategy.sharding.mode == "zero3"
    assert not any("--use-custom-fsdp" in t for t in warning_texts(parsed, "W-FLAG-UNPRICED"))


def test_megatron_fsdp_default_strategy_follows_the_flag_generation(tmp_path):
    fsdp = variant(tmp_path, SBATCH, ("${USE_MEGATRON_FSDP:-0}", "${USE_MEGATRON_FSDP:-1}"),
                   ("        --data-parallel-sharding-strategy optim_grads_params\n", ""))
    parsed = parse([fsdp], devices=16)
    assert parsed.strategy.sharding.mode == "zero3"  # Megatron-LM's optim_grads_params since #3691
    assert "optim_grads_params" in assumption(parsed, "strategy.sharding").source
    custom = variant(tmp_path, SBATCH, ("${USE_MEGATRON_FSDP:-0}", "${USE_MEGATRON_FSDP:-1}"),
                     ("        --data-parallel-sharding-strategy optim_grads_params\n", ""),
                     ("        --use-megatron-fsdp\n", "        --use-custom-fsdp\n"), name="custom.sh")
    parsed = parse([custom], devices=16)
    assert parsed.strategy.sharding.mode == "none" and "0.12" in assumption(parsed, "strategy.sharding").source


def test_unpriced_memory_and_overlap_flags_are_said_with_their_direction(tmp_path):
    path = variant(tmp_path, ARRAYS, ("    --bf16\n", "    --bf16\n    --enable-cuda-graph\n    --moe-fb-overlap\n"
                                                    "    --use-nccl-ub\n    --cuda-graph-impl none\n"))
    parsed = parse([path])
    said = warning_texts(parsed, "W-UNMODELLED")
    by_flag = {flag: [t for t in said if t.startswith(f"{flag} is given")] for flag in
               ("--enable-cuda-graph", "--moe-fb-overlap", "--use-nccl-ub", "--cuda-graph-impl")}
    assert "device memory a lower bound" in by_flag["--enable-cuda-graph"][0]
    assert "step time an upper bound" in by_flag["--moe-fb-overlap"][0]
    assert "device memory a lower bound" in by_flag["--use-nccl-ub"][0]
    assert by_flag["--cuda-graph-impl"] == []  # none: no graphs
    assert not warning_texts(parsed, "W-FLAG-UNPRICED")

# ------------------------------------------------------------------------------------------ writing
@pytest.mark.parametrize("source, changes, lines", [
    (ARRAYS, {"strategy.tp": 4, "strategy.shard_size": None},  # dp 4 -> 2, one optimizer instance
     ["-TP_SIZE=2", "+TP_SIZE=4", "-    --num-distributed-optimizer-instances 2"]),
    (ARRAYS, {"strategy.partition": [3, 5, 5, 3]},
     ["-    --decoder-first-pipeline-num-layers 2", "+    --decoder-first-pipeline-num-layers 3",
      "-    --decoder-last-pipeline-num-layers 2", "+    --decoder-last-pipeline-num-layers 3"]),
    (ARRAYS, {"strategy.partition": [1, 7, 5, 3]},
     ["-    --decoder-first-pipeline-num-layers 2", "-    --decoder-last-pipeline-num-layers 2",
      "+    --pipeline-model-parallel-layout 'Et|t*7|t*5|t*3L'"]),
    (ARRAYS, {"strategy.sharding": "zero3", "strategy.shard_size": None},
     ["-    --num-distributed-optimizer-instances 2",
      "+    --use-megatron-fsdp", "+    --data-parallel-sharding-strategy optim_grads_params"]),
    (DEFAULTS, {"strategy.flash_attention": False}, ["+    --attention-backend unfused"]),
    (DEFAULTS, {"strategy.cp_algo": "ring", "strategy.ulysses_degree": None},
     ["-    --cp-comm-type a2a+p2p", "+    --cp-comm-type p2p", "-    --hierarchical-context-parallel-sizes 2 1"]),
])
def test_script_export_edits_the_arrays_in_place(tmp_path, source, changes, lines):
    path = shutil.copy(source, tmp_path / source.name)
    assert sorted(roundtrip([str(path)], changes)[1]) == sorted(lines)


def test_script_export_refuses_what_megatron_cannot_state(tmp_path):
    path = shutil.copy(ARRAYS, tmp_path / ARRAYS.name)
    parsed = parse([str(path)])
    with pytest.raises(ConfigError, match=r"R-FW.*MindSpeed setting"):
        export(apply_changes(parsed, {"strategy.swap_optimizer": True}))


def test_recipe_export_keeps_the_yaml(tmp_path):
    path = shutil.copy(RECIPE, tmp_path / RECIPE.name)
    _, lines = roundtrip([str(path)], {"strategy.tp": 1, "strategy.sequence_parallel": False}, devices=16)
    assert sorted(lines) == sorted(["-  tensor_model_parallel_size: 2", "+  tensor_model_parallel_size: 1",
                                    "-  sequence_parallel: true", "+  sequence_parallel: false"])


# ------------------------------------------------------------------------------------------ fuzzing
_SOURCES = sorted(FIX.iterdir())


@st.composite
def _mutations(draw):
    path = draw(st.sampled_from(_SOURCES))
    text = path.read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "number", "flag"]))
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        if kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 40)):]
        elif kind == "insert":
            text = text[:pos] + draw(st.sampled_from(['"', "'", "${A[@]}", "(", ")", "[[", "]]", "if [ 1 = 1 ]; then",
                                                      "fi", "\n", "|", "*999", "$((", "#", "+=("])) + text[pos:]
        elif kind == "number":
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = digits[pos % len(digits)]
                text = text[:i] + draw(st.sampled_from(["0", "-1", "99999999999999999999", "3.5"])) + text[i + 1:]
        else:
            flag = draw(st.sampled_from(["--pipeline-model-parallel-layout 'E|t*3|L'", "--moe-layer-freq [1]*3",
                                         "--cp-comm-type allgather", "--decoder-first-pipeline-num-layers 1",
                                         "--num-distributed-optimizer-instances 3", "--attention-backend x"]))
            text = text[:pos] + f"\n    {flag}\n" + text[pos:]
    return path.suffix, text


@fuzz_settings(150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_mutations())
def test_fuzzed_inputs_raise_only_sapp_errors(tmp_path, case):
    read_estimate_export(tmp_path, *case, devices=32)


def test_a_device_count_of_zero_is_refused_by_name():
    # found by the HyperParallel fuzz test: a Megatron-Bridge recipe reached the shared argument reader with 0
    # devices, and 0 % (tp·pp·cp) == 0 let dp 0 through to a division by zero
    from estimator.formats.megatron import read_recipe

    data = {"ARGS": {"--num-layers": 2, "--hidden-size": 64, "--num-attention-heads": 4, "--seq-length": 128,
                     "--max-position-embeddings": 128, "--micro-batch-size": 1, "--global-batch-size": 8,
                     "--vocab-size": 1000}}
    with pytest.raises(ConfigError, match=r"must be at least 1; got 0") as caught:
        read_recipe("", "recipe.yaml", data, 0)
    assert caught.value.key == "--devices"
