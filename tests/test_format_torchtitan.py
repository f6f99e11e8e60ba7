"""torchtitan TOML: the flavor table, reading both schemas, the real preset files, and export round trips
(docs/model.md#frameworks, docs/model.md#frameworks)."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from estimator.errors import ConfigError, SappError
from estimator.estimate import estimate
from estimator.export import export
from estimator.flavors import families, flavor_names, llama_ffn_width, lookup
from estimator.formats import parse, read_file
from estimator.model import ModelSpec
from estimator.options import RunOptions
from estimator.params import parameter_counts
from estimator.parsed import apply_changes
from estimator.report import render_table
from estimator.resolve import resolve

FIXTURES = Path(__file__).parent / "fixtures" / "torchtitan"
EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"


def _model(model: str, flavor: str) -> ModelSpec:
    values = lookup(model, flavor)
    assert values is not None, (model, flavor)
    return ModelSpec(**{k.split(".", 1)[1]: v for k, v in values.items()})


def _counts(model: ModelSpec):
    from estimator.hardware import find_preset
    from estimator.strategy import Strategy

    r = resolve(model, Strategy(seq_length=4096), find_preset("H100-80G"), RunOptions(framework="torchtitan"))
    return parameter_counts(model, r.dims)


# ------------------------------------------------------------------------------------------ flavors
@pytest.mark.parametrize(("model", "flavor", "total", "active"), [
    ("llama3", "8B", 8_030_261_248, 8_030_261_248),
    ("llama3", "70B", 70_553_706_496, 70_553_706_496),
    ("deepseek_v3", "671B", 671_026_404_352, 37_552_282_624),
    ("qwen3", "32B", 32_762_123_264, 32_762_123_264),
])
def test_flavor_parameter_counts_match_v7(model, flavor, total, active):
    counts = _counts(_model(model, flavor))
    assert counts.total == total
    assert counts.active == active


@pytest.mark.parametrize(("model", "flavor", "ffn", "expert"), [
    ("llama3", "8B", 14336, None), ("llama3", "70B", 28672, None), ("llama3", "405B", 53248, None),
    ("llama4", "17bx128e", 16384, 8192), ("llama4", "17bx16e", None, 8192),
])
def test_flavor_ffn_widths_follow_torchtitan_rules(model, flavor, ffn, expert):
    spec = _model(model, flavor)
    assert spec.ffn_hidden_size == ffn
    assert spec.moe_ffn_hidden_size == expert


def test_flavor_tables_cover_the_named_models():
    assert {"llama3", "deepseek_v3", "qwen3", "llama4"} <= set(families())
    assert {"8B", "70B", "405B", "debugmodel"} <= set(flavor_names("llama3"))
    assert {"debugmodel", "16B", "671B"} <= set(flavor_names("deepseek_v3"))
    assert {"0.6B", "1.7B", "4B", "8B", "14B", "32B", "30B-A3B", "235B-A22B"} <= set(flavor_names("qwen3"))
    assert "17bx128e" in flavor_names("llama4")
    assert lookup("LLAMA3", "8b") == lookup("llama3", "8B")  # case-insensitive
    assert lookup("llama3", "3B") is None and lookup("gpt5", "8B") is None
    assert llama_ffn_width(4096, 1024, 1.3) == 14336


def test_published_sizes_of_other_flavors():
    """Qwen3-30B-A3B 30.5B total / 3.3B active, Qwen3-235B-A22B, Llama 4 Maverick 400B / 17B, DeepSeek 16B."""
    assert round(_counts(_model("qwen3", "30B-A3B")).total / 1e9, 1) == 30.5
    assert round(_counts(_model("qwen3", "30B-A3B")).active / 1e9, 1) == 3.4
    assert round(_counts(_model("qwen3", "235B-A22B")).total / 1e9) == 235
    assert round(_counts(_model("qwen3", "235B-A22B")).active / 1e9) == 22
    maverick = _counts(_model("llama4", "17bx128e"))
    assert round(maverick.total / 1e9) == 401 and round(maverick.active / 1e9) == 17
    assert round(_counts(_model("deepseek_v3", "16B")).total / 1e9, 1) == 15.7
    assert _model("qwen3", "0.6B").tie_embeddings and not _model("qwen3", "8B").tie_embeddings
    maverick_spec = _model("llama4", "17bx128e")
    assert maverick_spec.body_kinds()[:4] == ("dense", "moe", "dense", "moe")


# ------------------------------------------------------------------------------------- real presets
REAL = {
    # file: (devices SOURCES.md states, dp, tp, pp, micro_batch_size, micro_batches, seq, recompute, flavor)
    "tt_llama3_8b.toml": (64, 64, 1, 1, 1, 1, 8192, "selective", "8B"),
    "tt_llama3_8b_2025-06_e7c0cae.toml": (64, 64, 1, 1, 1, 1, 8192, "selective", "8B"),
    "tt_llama3_8b_2024-12_9dec370.toml": (64, 64, 1, 1, 1, 1, 8192, "selective", "8B"),
    "tt_llama3_70b.toml": (64, 8, 8, 1, 8, 1, 8192, "full", "70B"),
    "tt_llama3_70b_2024-12_9dec370.toml": (64, 8, 8, 1, 8, 1, 8192, "full", "70B"),
    "tt_llama3_405b.toml": (128, 16, 8, 1, 2, 1, 8192, "full", "405B"),
    "tt_llama3_405b_2024-12_9dec370.toml": (128, 16, 8, 1, 2, 1, 8192, "full", "405B"),
    "tt_qwen3_32b.toml": (8, 8, 1, 1, 2, 1, 4096, "full", "32B"),
    "hp_fasttuner_torchtitan_debug_model.toml": (8, 8, 1, 1, 8, 1, 2048, "selective", "debugmodel"),
}
# SOURCES.md states no device count: the read fails asking for --devices; a chosen count then estimates
NO_COUNT = {"tt_deepseek_v3_16b.toml": 8, "tt_deepseek_v3_671b.toml": 256, "tt_llama4_17bx128e.toml": 32}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_preset_reads_and_estimates(shared_dir, name):
    devices, dp, tp, pp, b, m, seq, recompute, flavor = REAL[name]
    parsed = parse([shared_dir / "real-configs" / "torchtitan_toml" / name], devices=devices)
    st = parsed.strategy
    assert (st.dp, st.tp, st.pp, st.micro_batch_size, st.micro_batches, st.seq_length) == (dp, tp, pp, b, m, seq)
    assert st.world_size == devices
    assert st.recompute.default_mode == recompute
    assert st.sharding.mode == "fsdp" and st.sequence_parallel == (tp > 1)
    assert parsed.options.framework == "torchtitan"
    assert parsed.model.name.endswith(flavor)
    prov = parsed.provenance.get("strategy.tp")
    if prov is not None:
        assert prov.key.endswith("tensor_parallel_degree") and prov.path.endswith(name)
    result = estimate(parsed.model, st, parsed.hardware, parsed.options)
    assert len(result.stages) == pp and result.peak_bytes > 0


def test_float8_and_compile_are_read(shared_dir):
    """converters = ["float8"] (2025) and [float8] enable_float8_linear (2024-12) turn Float8Linear on; the
    FSDP weights are gathered in FP8 (enable_fsdp_float8_all_gather); [compile] enable compiles model and loss,
    training.compile the model."""
    for name, param, compiled in (("tt_llama3_405b.toml", True, ("model", "loss")),
                                  ("tt_llama3_405b_2024-12_9dec370.toml", True, ("model",))):
        st = parse([shared_dir / "real-configs" / "torchtitan_toml" / name], devices=128).strategy
        assert (st.fp8, st.fp8_param, st.compile) == ("tensorwise", param, compiled), name
    quiet = parse([shared_dir / "real-configs" / "torchtitan_toml" / "tt_llama3_70b.toml"], devices=64)
    assert quiet.strategy.fp8 == "none"  # its converters line is a comment


@pytest.mark.parametrize("name", sorted(NO_COUNT))
def test_real_preset_without_stated_world_needs_devices(shared_dir, name):
    path = shared_dir / "real-configs" / "torchtitan_toml" / name
    with pytest.raises(ConfigError, match="--devices N") as exc:
        parse([path])
    assert exc.value.key == "parallelism.data_parallel_shard_degree"
    parsed = parse([path], devices=NO_COUNT[name])
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.peak_bytes > 0


def test_deepseek_16b_and_llama4_values(shared_dir):
    ds = parse([shared_dir / "real-configs" / "torchtitan_toml" / "tt_deepseek_v3_16b.toml"], devices=8).strategy
    assert (ds.dp, ds.ep, ds.etp, ds.micro_batch_size, ds.seq_length, ds.pp, ds.schedule) == (8, 8, 1, 4, 4096, 1,
                                                                                            None)
    llama4 = parse([shared_dir / "real-configs" / "torchtitan_toml" / "tt_llama4_17bx128e.toml"], devices=32)
    st = llama4.strategy
    assert (st.dp, st.tp, st.pp, st.etp, st.micro_batches, st.emb_out_in_offset) == (1, 8, 4, 8, 1, True)
    assert llama4.options.allow_underfilled_pipeline is True
    assert "W-PP-UNDERFILLED" in [w.code for w in llama4.warnings]


def test_missing_devices_message_is_actionable(shared_dir):
    path = shared_dir / "real-configs" / "torchtitan_toml" / "tt_llama3_70b.toml"
    with pytest.raises(ConfigError) as exc:
        parse([path])
    text = str(exc.value)
    assert "pass --devices N" in text and "64 A100 GPUs" in text and str(path) in text
    with pytest.raises(ConfigError, match="not a multiple"):
        parse([path], devices=60)


# ------------------------------------------------------------------------------------------ fixtures
def test_interleaved_layers_per_stage_and_accumulation():
    st = parse([FIXTURES / "pp_interleaved_lps.toml"]).strategy
    # ceil((32 + 2) / 3) = 12 virtual stages over 4 ranks; local batch 8 in micro-batches of 1; 2 steps
    assert (st.pp, st.vpp, st.schedule, st.micro_batch_size, st.micro_batches, st.n_acc) == (4, 3, "interleaved",
                                                                                            1, 8, 2)
    assert st.global_batch_size == 32 and st.world_size == 8 and st.emb_out_in_offset
    with pytest.raises(ConfigError, match="does not match"):
        parse([FIXTURES / "pp_interleaved_lps.toml"], devices=16)


def test_hsdp_zbv_reshard_and_optimizer_states():
    ddp = parse([FIXTURES / "hsdp_zbv.toml"], devices=8).strategy  # 8/(2·tp 2·pp 2) = 1 shard: DDP
    assert (ddp.dp, ddp.d_rep, ddp.sharding.mode) == (2, None, "none")
    parsed = parse([FIXTURES / "hsdp_zbv.toml"], devices=16)
    st = parsed.strategy
    assert (st.dp, st.d_rep, st.d_sh, st.sharding.mode) == (4, 2, 2, "hsdp")
    assert (st.schedule, st.vpp, st.micro_batch_size, st.micro_batches) == ("zbv", 2, 2, 4)
    assert st.sharding.reshard_after_forward is True and st.sharding.reshard_head_unit is True
    assert parsed.options.optimizer_impl == "fused" and st.optimizer_state_bytes == 2
    assert (st.compute_bytes, st.reduce_bytes) == (2, 4)


def test_selective_every_kth_layer_and_loss_parallel():
    parsed = parse([FIXTURES / "selective_every2.toml"])
    st = parsed.strategy
    assert [r.first for r in st.recompute.ranges] == [1, 3, 5]
    assert all(r.option == "full" and r.count == 1 for r in st.recompute.ranges)
    assert st.recompute.default_mode == "none"
    assert st.vocab_parallel_loss is False and st.tp == 2 and st.sequence_parallel
    assert (st.micro_batch_size, st.micro_batches, st.n_acc) == (2, 4, 1)  # p = 1: m = accumulation steps
    assert st.sharding.reshard_after_forward is False and parsed.options.optimizer_impl == "forloop"


def test_old_schema_pipeline_microbatches():
    st = parse([FIXTURES / "old_schema_pp.toml"], devices=8).strategy
    assert (st.dp, st.tp, st.pp, st.micro_batch_size, st.micro_batches, st.schedule) == (2, 2, 2, 2, 4, "gpipe")
    assert st.emb_out_in_offset is False


def test_memory_budget_loopedbfs_and_float8_converter():
    parsed = parse([FIXTURES / "memory_budget.toml"], devices=8)
    texts = " ".join(str(w) for w in parsed.warnings)
    assert "[W-UNMODELLED] memory_budget" in texts and "LoopedBFS" not in texts  # a modelled schedule now
    st = parsed.strategy
    assert (st.fp8, st.fp8_experts, st.compile) == ("tensorwise", False, ("model", "loss"))
    assert (st.schedule, st.vpp) == ("looped_bfs", 2) and st.recompute.default_mode == "none"


def test_unknown_flavor_needs_a_model_file(tmp_path):
    with pytest.raises(ConfigError, match=r"--model config\.json"):
        parse([FIXTURES / "unknown_flavor.toml"], devices=8)
    reading = read_file(str(FIXTURES / "unknown_flavor.toml"), 8)
    assert any(w.code == "W-FLAVOR" and "known llama3 flavors" in w.text for w in reading.warnings)
    hf = Path(__file__).parent / "fixtures" / "hf" / "llama_small.json"
    parsed = parse([FIXTURES / "unknown_flavor.toml"], devices=8, model=hf)
    assert parsed.model.hidden_size == 512 and parsed.strategy.dp == 8


def test_model_file_wins_and_the_difference_is_named(shared_dir):
    toml = shared_dir / "real-configs" / "torchtitan_toml" / "tt_deepseek_v3_671b.toml"
    hf = shared_dir / "real-configs" / "hf_config" / "hf_deepseek_v3_config.json"
    parsed = parse([toml], devices=256, model=hf)
    assert parsed.model.vocab_size == 129280 and parsed.model.mtp_layers == 1
    assert parsed.provenance["model.hidden_size"].path == str(hf)
    assert not [w for w in parsed.warnings if w.code == "W-MODEL-DIFF"]  # same shape as the flavor


@pytest.mark.parametrize(("text", "match"), [
    ("[parallelism]\ntensor_parallel_degree = 0\n", "must be an integer ≥ 1"),
    ("[parallelism]\ntensor_parallel_degree = 'eight'\n", "expected an integer"),
    ("[parallelism]\ndata_parallel_replicate_degree = -1\n", "only one of"),
    ("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = 'Zigzag'\n", "unknown pipeline"),
    ("[activation_checkpoint]\nmode = 'sometimes'\n", "activation_checkpoint.mode"),
    ("[training]\nglobal_batch_size = 7\n", "not a multiple"),
    ("[optimizer]\nimplementation = 'turbo'\n", "optimizer implementation"),
    ("[parallelism]\nfsdp_reshard_after_forward = 'sometimes'\n", "default, always or never"),
    ("[training]\nmixed_precision_param = 'int3'\n", "unknown dtype"),
    ("[training]\nlocal_batch_size = 1\nglobal_batch_size = 100000000\n", "implausibly many"),
])
def test_bad_values_name_the_key(tmp_path, text, match):
    path = tmp_path / "job.toml"
    path.write_text('[model]\nname = "llama3"\nflavor = "debugmodel"\n' + text)
    with pytest.raises(ConfigError, match=match) as exc:
        parse([path], devices=8)
    assert exc.value.path == str(path)


def test_malformed_toml_points_at_the_line(tmp_path):
    with pytest.raises(ConfigError) as exc:
        parse([FIXTURES / "broken.toml"], devices=8)
    text = str(exc.value)
    assert text.startswith(f"{FIXTURES / 'broken.toml'}:7:11: malformed TOML")
    assert (exc.value.line, exc.value.column) == (7, 11)


# ------------------------------------------------------------------------------------------- export
STRATEGY_KEYS = {"tensor_parallel_degree", "data_parallel_shard_degree", "data_parallel_replicate_degree",
                 "pipeline_parallel_degree", "context_parallel_degree", "expert_parallel_degree",
                 "pipeline_parallel_schedule", "pipeline_parallel_microbatch_size", "pipeline_parallel_microbatches",
                 "pipeline_parallel_layers_per_stage", "pipeline_parallel_first_stage_less_layers",
                 "pipeline_parallel_last_stage_less_layers", "local_batch_size", "batch_size", "global_batch_size",
                 "seq_len", "mode", "selective_ac_option", "fsdp_reshard_after_forward", "disable_loss_parallel",
                 "context_parallel_rotate_method"}


def _round_trip(parsed, changes, tmp_path, devices=None):
    edited = apply_changes(parsed, changes)
    files = export(edited)
    assert len(files) == 1
    (src_path, text), = files.items()
    original = next(s.text for s in parsed.sources if s.path == src_path)
    changed = [line for line in difflib.unified_diff(original.splitlines(), text.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed
    for line in changed:
        assert line[1:].split("=")[0].strip() in STRATEGY_KEYS, line
    out = tmp_path / Path(src_path).name
    out.write_text(text)
    again = parse([out], devices=devices or edited.strategy.world_size)
    assert again.strategy == edited.strategy
    return text


@pytest.mark.parametrize(("name", "devices", "changes"), [
    ("tt_llama3_70b.toml", 64, {"strategy.tp": 4, "strategy.micro_batch_size": 4}),
    ("tt_llama3_70b.toml", 64, {"strategy.recompute": "selective"}),
    ("tt_llama3_8b.toml", 64, {"strategy.tp": 2, "strategy.sequence_parallel": True}),
    ("tt_llama3_8b.toml", 64, {"strategy.cp": 2, "strategy.seq_length": 16384, "strategy.cp_algo": "ring"}),
    ("tt_llama3_8b_2024-12_9dec370.toml", 64, {"strategy.pp": 2, "strategy.micro_batches": 4,
                                               "strategy.micro_batch_size": 1}),
    ("tt_deepseek_v3_16b.toml", 8, {"strategy.pp": 2, "strategy.micro_batches": 4, "strategy.micro_batch_size": 1,
                                    "strategy.schedule": "interleaved", "strategy.vpp": 2}),
    ("tt_qwen3_32b.toml", 8, {"strategy.reshard_after_forward": True, "strategy.reshard_head_unit": True}),
])
def test_export_round_trip_on_real_files(shared_dir, tmp_path, name, devices, changes):
    source = tmp_path / "src" / name
    source.parent.mkdir()
    shutil.copy(shared_dir / "real-configs" / "torchtitan_toml" / name, source)
    parsed = parse([source], devices=devices)
    assert export(parsed) == {}  # unchanged strategy: no file changes
    _round_trip(parsed, changes, tmp_path)


def test_export_keeps_comments_and_quotes(shared_dir, tmp_path):
    source = tmp_path / "src.toml"
    shutil.copy(shared_dir / "real-configs" / "torchtitan_toml" / "tt_llama3_8b_2024-12_9dec370.toml", source)
    parsed = parse([source], devices=64)
    text = _round_trip(parsed, {"strategy.recompute": "full"}, tmp_path)
    assert "mode = 'full'  # ['none', 'selective', 'full']" in text  # literal quotes and the comment kept


def test_export_every_kth_layer_and_layers_per_stage(tmp_path):
    source = tmp_path / "job.toml"
    shutil.copy(FIXTURES / "selective_every2.toml", source)
    parsed = parse([source])
    ranges = [{"first": i, "count": 1, "option": "full"} for i in (2, 5)]
    text = _round_trip(parsed, {"strategy.recompute_ranges": ranges}, tmp_path)
    assert "selective_ac_option = '3'" in text
    source = tmp_path / "pp.toml"
    shutil.copy(FIXTURES / "pp_interleaved_lps.toml", source)
    parsed = parse([source])
    text = _round_trip(parsed, {"strategy.seq_length": 8192}, tmp_path)
    assert "pipeline_parallel_layers_per_stage = 3" in text
    # no layers-per-stage value gives 2 chunks × 4 stages for 32 + 2 positions: the key goes (torchtitan: 2)
    text = _round_trip(parsed, {"strategy.vpp": 2}, tmp_path)
    assert "pipeline_parallel_layers_per_stage" not in text and "Interleaved1F1B" in text


@pytest.mark.parametrize(("changes", "what"), [
    ({"strategy.sharding": "zero1"}, "sharding 'zero1'"),
    ({"strategy.recompute": [1, 1]}, "recompute.full_counts"),
    ({"strategy.cp": 2, "strategy.cp_algo": "ulysses"}, "ring attention"),
    ({"strategy.offset": [1, -1]}, "strategy offset"),
    ({"strategy.param_bytes": 2}, "param_bytes"),
])
def test_export_refuses_what_torchtitan_cannot_say(shared_dir, changes, what):
    parsed = parse([shared_dir / "real-configs" / "torchtitan_toml" / "tt_llama3_8b.toml"], devices=64)
    edited = apply_changes(parsed, changes)
    with pytest.raises(ConfigError, match="R-FW") as exc:
        export(edited)
    assert what in str(exc.value)


@pytest.mark.parametrize(("name", "devices"), [("torchtitan_llama3_70b.toml", 256),
                                               ("torchtitan_llama3_8b_longctx_cp.toml", 8)])
def test_examples_estimate_and_export(tmp_path, name, devices):
    source = tmp_path / name
    shutil.copy(EXAMPLES / name, source)
    parsed = parse([source], devices=devices)
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.fits
    assert export(parsed) == {}
    _round_trip(parsed, {"strategy.seq_length": parsed.strategy.seq_length // 2}, tmp_path)
    if name.endswith("cp.toml"):
        st = parsed.strategy
        assert (st.dp, st.cp, st.seq_length, st.cp_algo) == (2, 4, 131072, "allgather")
    else:
        st = parsed.strategy
        assert (st.dp, st.tp, st.micro_batches, st.global_batch_size) == (32, 8, 8, 512)


def test_errors_are_sapp_errors():
    assert issubclass(ConfigError, SappError)


# --------------------------------------------------------------------------------------------- fuzz
try:
    from fuzzing import fuzz_settings
    from hypothesis import HealthCheck, given
    from hypothesis import strategies as hs
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    hs = None

FUZZ_FILES = [*sorted(FIXTURES.glob("*.toml")), EXAMPLES / "torchtitan_llama3_70b.toml",
              EXAMPLES / "torchtitan_llama3_8b_longctx_cp.toml"]


def _paths(tree, prefix=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))


if hs is not None:
    SCALARS = hs.one_of(hs.integers(-(2 ** 63), 2 ** 63 - 1),
                        hs.sampled_from([0, -1, 1, 2, 3, 7, 8, 64, 2 ** 31, 2 ** 40, 10 ** 15]),
                        hs.floats(allow_nan=False, allow_infinity=False, width=32), hs.text(max_size=12),
                        hs.sampled_from(["op", "full", "none", "selective", "-1", "1F1B", "Interleaved1F1B",
                                         "ZBVZeroBubble", "DualPipeV", "always", "bfloat16", "8B", "debugmodel"]),
                        hs.booleans())
    VALUES = hs.recursive(SCALARS, lambda inner: hs.one_of(hs.lists(inner, max_size=3),
                                                           hs.dictionaries(hs.text(min_size=1, max_size=8), inner,
                                                                           max_size=3)), max_leaves=6)

    @fuzz_settings(150, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
    @given(data=hs.data())
    def test_fuzzed_tomls_fail_only_with_sapp_errors(tmp_path, data):
        """Wrong types, deletions, huge/negative numbers and broken nesting: only SappError escapes."""
        import tomllib

        import tomlkit

        source = data.draw(hs.sampled_from(FUZZ_FILES))
        try:
            tree = tomllib.loads(source.read_text())
        except tomllib.TOMLDecodeError:
            tree = None
        if tree is not None:
            for _ in range(data.draw(hs.integers(1, 4))):
                paths = list(_paths(tree))
                if not paths:
                    break
                path = data.draw(hs.sampled_from(paths))
                parent = tree
                for key in path[:-1]:
                    parent = parent[key]
                if data.draw(hs.booleans()):
                    del parent[path[-1]]
                else:
                    parent[path[-1]] = data.draw(VALUES)
            try:
                text = tomlkit.dumps(tree)
            except Exception:  # values TOML cannot hold are not a reader concern
                return
        else:
            text = source.read_text()
        cut = data.draw(hs.integers(0, len(text)))
        if data.draw(hs.integers(0, 9)) == 0:  # truncated or garbled text
            text = text[:cut] + data.draw(hs.sampled_from(["", "]", "=", "[[", "\x00", "é"]))
        path = tmp_path / "fuzz.toml"
        path.write_text(text, encoding="utf-8")
        devices = data.draw(hs.sampled_from([None, 1, 8, 64, 256, 0, -4, 2 ** 40]))
        try:
            parsed = parse([path], devices=devices)
            estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
        except SappError:
            pass


def test_training_compile_of_the_parallelism_schema_compiles_the_loss_too(tmp_path):
    """From 2025-04 (torchtitan bbb1b616e, ``build_cross_entropy_loss``) until the [compile] table replaced it,
    ``training.compile = true`` compiled the model and the loss function; the 2024-12 schema's compiled the
    model only (the loss compile was commented out in train.py at 9dec370). A public run read with the loss
    eager kept 8 GiB of fp32 logits it never held (docs/fidelity.md, Public runs)."""
    new = tmp_path / "new.toml"
    new.write_text('[model]\nname = "llama3"\nflavor = "8B"\n\n[training]\nlocal_batch_size = 2\nseq_len = 8192\n'
                   'compile = true\n\n[parallelism]\ndata_parallel_shard_degree = -1\n')
    old = tmp_path / "old.toml"
    old.write_text('[model]\nname = "llama3"\nflavor = "8B"\n\n[training]\nbatch_size = 2\nseq_len = 8192\n'
                   'compile = true\ndata_parallel_shard_degree = -1\n\n[experimental]\npipeline_parallel_degree = 1\n')
    assert parse([new], devices=8).strategy.compile == ("model", "loss")
    assert parse([old], devices=8).strategy.compile == ("model",)


TOKENS_TOML = """[model]
name = "llama3"
flavor = "8B"

[training]
num_tokens_per_microbatch_per_dp_rank = 16384
max_context_length = 8192

[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 2

[compile]
enable = true
enable_async_tensor_parallel = true
"""


def test_the_2026_token_counted_batch_is_read_and_written_in_tokens(tmp_path):
    path = tmp_path / "tokens.toml"
    path.write_text(TOKENS_TOML)
    parsed = parse([str(path)], devices=16)
    s = parsed.strategy
    assert (s.micro_batch_size, s.seq_length, s.dp, s.async_tp) == (2, 8192, 8, True)  # 16384 tokens / 8192
    assert parsed.provenance["strategy.async_tp"].key == "compile.enable_async_tensor_parallel"
    files = export(apply_changes(parsed, {"strategy.micro_batch_size": 1, "strategy.micro_batches": 2,
                                          "strategy.seq_length": 4096}))
    text = files[str(path)]
    assert "num_tokens_per_microbatch_per_dp_rank = 4096" in text and "max_context_length = 4096" in text
    assert "num_tokens_per_train_step = 65536" in text and "local_batch_size" not in text  # 1 × 8 × 2 × 4096
    path.write_text(text)
    again = parse([str(path)], devices=16).strategy
    assert (again.micro_batch_size, again.micro_batches, again.seq_length) == (1, 2, 4096)
    path.write_text(TOKENS_TOML.replace("16384", "10000"))
    with pytest.raises(ConfigError, match="not a whole number of 8192-token sequences"):
        parse([str(path)], devices=16)


def test_optimizer_in_backward_is_said_and_refused_where_torchtitan_refuses_it(tmp_path) -> None:
    """optimizer.early_step_in_backward: an upper bound said out loud (the gradients are priced as held until a
    step after the backward), refused with pp > 1 as torchtitan's build_optimizers refuses it."""
    base = (FIXTURES / "hsdp_zbv.toml").read_text(encoding="utf-8")
    path = tmp_path / "in_bwd.toml"
    path.write_text(base.replace("[optimizer]", "[optimizer]\nearly_step_in_backward = true", 1), encoding="utf-8")
    with pytest.raises(ConfigError, match="pp 2") as caught:
        parse([str(path)], devices=64)
    assert caught.value.key == "optimizer.early_step_in_backward"
    flat = base.replace("pipeline_parallel_degree = 2", "pipeline_parallel_degree = 1")
    path.write_text(flat.replace("[optimizer]", "[optimizer]\nearly_step_in_backward = true", 1), encoding="utf-8")
    parsed = parse([str(path)], devices=64)
    assert any(w.code == "W-UNMODELLED" and "early_step_in_backward" in w.text for w in parsed.warnings)


SPLIT_TOML = (FIXTURES / "hsdp_zbv.toml").read_text(encoding="utf-8") if FIXTURES.is_dir() else ""


def _split(tmp_path, parallelism: str = "", training: str = "") -> Path:
    text = SPLIT_TOML.replace("pipeline_parallel_degree = 2", "pipeline_parallel_degree = 2\n" + parallelism)
    path = tmp_path / "split.toml"
    path.write_text(text.replace("seq_len = 8192", "seq_len = 8192\n" + training), encoding="utf-8")
    return path


def test_split_points_place_the_layers_of_every_stage(tmp_path) -> None:
    """Qwen3-8B's 36 layers split at layers.4, 12 and 24 into 4 stages (ZBV, pp 2: stages 0 and 3 on rank 0, 1 and 2
    on rank 1, the V): positions E+4, 8, 12 and 12+O — rank 0 holds layers 0–3 and 24–35, rank 1 layers 4–23."""
    path = _split(tmp_path, 'pipeline_parallel_split_points = ["layers.4", "layers.12", "layers.24"]')
    parsed = parse([str(path)], devices=64)
    assert parsed.strategy.partition == ((5, 8), (13, 12)) and parsed.strategy.emb_out_in_offset
    assert parsed.provenance["strategy.partition"].key == "parallelism.pipeline_parallel_split_points"
    res = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert [st.layer_counts for st in res.stages] == [(5, 13), (8, 12)]  # positions: E and O count one each
    assert [st.layers_per_chunk for st in res.stages] == [(4, 12), (8, 12)]  # what the tables show
    assert "E+4+12+O" in render_table(parsed, res)
    fqns = [["tok_embeddings", *[f"layers.{i}" for i in range(4)]], [f"layers.{i}" for i in range(4, 12)],
            [f"layers.{i}" for i in range(12, 24)], [*[f"layers.{i}" for i in range(24, 36)], "norm", "output"]]
    path = _split(tmp_path, f"module_fqns_per_model_part = {fqns!r}".replace("'", '"'))
    assert parse([str(path)], devices=64).strategy.partition == ((5, 8), (13, 12))


@pytest.mark.parametrize("line, match", [
    ('pipeline_parallel_split_points = ["layers.4"]', "2 stages"),
    ('pipeline_parallel_split_points = ["layers.12", "layers.4", "layers.24"]', "ascending"),
    ('pipeline_parallel_split_points = ["layers.4", "layers.12", "layers.40"]', "not a decoder layer"),
    ('module_fqns_per_model_part = [["tok_embeddings", "layers.0"], ["layers.2"], ["layers.1"], ["norm"]]',
     "every decoder layer once"),
])
def test_a_split_torchtitan_cannot_run_is_refused_naming_the_key(tmp_path, line, match) -> None:
    with pytest.raises(ConfigError, match=match) as caught:
        parse([str(_split(tmp_path, line))], devices=64)
    assert caught.value.key.endswith(line.split(" =")[0])


def test_training_dtype_and_switches_are_read_or_said(tmp_path) -> None:
    """training.dtype bfloat16 builds the model in bf16: weights, gradients and AdamW states 2 B each; the CP load
    balancer is read; a switch whose cost is not priced is said naming its key."""
    path = _split(tmp_path, 'context_parallel_load_balancer = "ptrr"\nenable_fsdp_symm_mem = true',
                  'dtype = "bfloat16"')
    parsed = parse([str(path)], devices=64)
    st = parsed.strategy
    assert (st.param_bytes, st.grad_bytes, st.optimizer_state_bytes) == (2, 2, 2)
    assert st.cp_load_balance is True
    assert any("parallelism.enable_fsdp_symm_mem" in w.text for w in parsed.warnings)
