"""MindFormers YAML reader and writer (docs/model.md#frameworks; docs/model.md#counts-per-slot D39 offsets,
docs/model.md#recompute-assignment D40/D41 recompute, docs/model.md#selective-recompute).

Real files come from ../shared/real-configs/mindformers (skipped without it); the fixtures under
tests/fixtures/mindformers and the examples under resources/examples are this project's own.
"""

from __future__ import annotations

import difflib
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzzing import fuzz_settings
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from estimator import estimate
from estimator.errors import ConfigError, LayoutError, SappError
from estimator.export import export
from estimator.formats import parse, read_file
from estimator.formats.mindformers import comm_switch, detect, llama_ffn, selective_switch
from estimator.formats.mindformers_write import YamlPatch
from estimator.layout import LayoutInputs, build_layout
from estimator.parsed import apply_changes
from estimator.units import GiB

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "mindformers"
EXAMPLES = ROOT / "resources" / "examples"
REAL = "real-configs/mindformers"


def real(shared_dir: Path, name: str) -> Path:
    return shared_dir / REAL / name


def codes(parsed) -> list[str]:
    return [w.code for w in parsed.warnings]


# ------------------------------------------------------------------------------------ real files
# What each real file says (its own keys), checked against the parsed plan.
EXPECTED: dict[str, dict[str, Any]] = {
    "hp_fasttuner_pretrain_deepseek3_671b.yaml": dict(
        dp=16, tp=4, pp=16, vpp=1, ep=8, layers=61, heads=128, mtp=1, seq=4096, G=512, m=32,
        offset=(1,) * 15 + (-1,), full=(3, *[4] * 12, 3, 2, 0), sharding="mf_op", keep=False),
    "hp_nd_pretrain_qwen3_72b.yaml": dict(
        dp=32, tp=4, pp=8, vpp=1, layers=80, heads=64, kv=8, head_dim=128, ffn=29696, seq=4096, G=4608, m=144,
        offset=0, full=(8, 6, 6, 6, 4, 4, 2, 2), sharding="mf_op", os=8, qk_norm=True),
    "hp_sapp_testcase_deepseek3_default.yaml": dict(
        dp=16, tp=4, pp=16, ep=8, layers=61, heads=128, mtp=1, seq=8192, vocab=159744, G=512,
        offset=(0, 0, *[1] * 12, 2, 0), full=(1, *[2] * 13, 1, 1), os=8),
    "mf_deepseek3_671b_pretrain.yaml": dict(
        dp=16, tp=4, pp=16, vpp=1, ep=8, layers=61, heads=128, mtp=1, seq=4096, vocab=129280, G=512, m=32,
        offset=(1,) * 15 + (-1,), full=(3, *[4] * 12, 3, 2, 0), experts=256, topk=8, first_dense=3,
        budget=55 * GiB, capacity=1.5),
    "mf_llama2_70b_pretrain_bf16_64p.yaml": dict(
        dp=2, tp=4, pp=8, layers=80, heads=64, kv=8, ffn=28672, seq=4096, G=512, m=256, offset=0,
        sel=(10, 8, 6, 4, 2, 0, 0, 0), param_bytes=2.0, budget=52 * GiB),
    "mf_llama2_7b_pretrain.yaml": dict(
        dp=8, tp=1, pp=1, layers=32, heads=32, ffn=11008, seq=4096, G=64, m=8, n_acc=1, param_bytes=2.0,
        sharding="mf_op", vocab_emb_dp=True),
    "mf_llama3_70b_pretrain.yaml": dict(
        dp=1, tp=8, pp=8, layers=80, heads=64, kv=8, ffn=28672, vocab=128256, seq=8192, G=256, m=256,
        sel=(10, 8, 6, 4, 2, 0, 0, 0), comm=(10, 8, 6, 4, 2, 0, 0, 0), budget=52.5 * GiB),
    "mf_llama3_8b_finetune_8k_800T_A2_64G.yaml": dict(
        dp=8, tp=1, pp=1, layers=32, heads=32, kv=8, ffn=14336, seq=8192, G=8, mode="full"),
    "mf_mixtral_8x7b_pretrain.yaml": dict(
        dp=8, tp=1, pp=2, ep=8, layers=32, heads=32, kv=8, experts=8, topk=2, capacity=1.1, seq=4096, G=128,
        m=16, mode="full"),
    "mf_mixtral_8x7b_pretrain_32k.yaml": dict(dp=1, tp=8, pp=2, ep=1, experts=8, seq=32768, G=16, mode="full"),
    "mf_qwen2_5_14b_finetune_128k_cp16.yaml": dict(
        dp=1, tp=2, pp=2, cp=16, layers=48, heads=40, kv=8, ffn=13824, seq=131072, G=64, mode="full"),
    "mf_qwen2_5_72b_finetune_32k_seqpipe.yaml": dict(
        dp=1, tp=8, pp=8, layers=80, heads=64, kv=8, ffn=29568, seq=32768, G=32, schedule="seq1f1b", n_s=8,
        offset=(0,) * 8, sel=True, comm=(6, 2, 1, 0, 0, 0, 0, 0), switches=("act",)),
    "mf_qwen3_32b_pretrain_4k.yaml": dict(
        dp=1, tp=4, pp=4, layers=64, heads=64, kv=8, head_dim=128, qk_norm=True, ffn=25600, seq=4096, G=4,
        offset=(-1, -1, 1, 1), mode="full", sharding="none", vocab_emb_dp=False),
    "mf_qwen3_moe_30b_a3b_pretrain_4k.yaml": dict(
        dp=1, tp=4, pp=4, ep=4, layers=48, heads=32, kv=4, experts=128, topk=8, expert_ffn=768, seq=4096, G=16,
        qk_norm=True, mode="full", sharding="none"),
    "mf_telechat2_115b_finetune_vpp3.yaml": dict(
        dp=8, tp=8, pp=8, vpp=3, layers=96, heads=64, kv=8, ffn=40960, seq=8192, G=64, m=8,
        offset=((-1, -1, 0, 0, 0, 0, 0, 0), (-1, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 1, 1, 1, 1, -1)),
        sel=True, comm=(8, 8, 10, 11, 10, 7, 5, 4)),
    "mf_telechat3_105b_a4b_pretrain_4k.yaml": dict(
        dp=4, tp=8, pp=8, layers=45, heads=32, mtp=1, experts=192, topk=4, first_dense=1, seq=4096, G=32,
        offset=0, mode="full", schedule="seq1f1b"),
}

# Every real file estimates, except these, which fail with a precise error.
FAILS = {"mf_telechat3_105b_a4b_pretrain_4k.yaml": (LayoutError, "E-OFF-SCALAR")}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_file_values(shared_dir, name):
    parsed = parse([real(shared_dir, name)])
    want = EXPECTED[name]
    s, m = parsed.strategy, parsed.model
    got = {
        "dp": s.dp, "tp": s.tp, "pp": s.pp, "vpp": s.vpp, "cp": s.cp, "ep": s.ep, "layers": m.num_layers,
        "heads": m.num_attention_heads, "kv": m.num_kv_heads, "head_dim": m.head_dim, "ffn": m.ffn_hidden_size,
        "mtp": m.mtp_layers, "vocab": m.vocab_size, "seq": s.seq_length, "G": s.global_batch_size,
        "m": s.micro_batches, "n_acc": s.n_acc, "offset": s.offset, "full": s.recompute.full_counts,
        "sel": s.recompute.sel_counts, "comm": s.recompute.comm_counts, "mode": s.recompute.default_mode,
        "switches": s.recompute.switches, "sharding": s.sharding.mode, "os": s.sharding.os,
        "keep": s.sharding.keep_gathered_weights, "experts": m.num_experts, "topk": m.experts_per_token,
        "expert_ffn": m.moe_ffn_hidden_size, "first_dense": m.first_k_dense, "capacity": m.capacity_factor,
        "qk_norm": m.qk_norm, "schedule": s.schedule_name, "n_s": s.n_s, "param_bytes": s.param_bytes,
        "vocab_emb_dp": s.vocab_emb_dp, "budget": parsed.options.max_device_memory,
    }
    assert {k: got[k] for k in want} == want
    assert parsed.framework == "mindformers"
    assert parsed.sources[0].format == "mindformers" and parsed.sources[0].role == "both"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_file_estimates_or_fails_precisely(shared_dir, name):
    parsed = parse([real(shared_dir, name)])
    if name in FAILS:
        error, code = FAILS[name]
        with pytest.raises(error) as caught:
            estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
        assert code in str(caught.value)
        return
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert len(result.stages) == parsed.strategy.pp
    assert result.budget == parsed.options.max_device_memory


def test_real_files_all_covered(shared_dir):
    names = {p.name for p in (shared_dir / REAL).glob("*.yaml")}
    assert names == set(EXPECTED)


def test_telechat3_offset_fails_as_mindformers_does(shared_dir):
    """TeleChat3 is an mcore model (use_legacy: False): MindFormers' LayerSetting splits its 45 layers alone (the
    MTP layer joins the last one) and refuses offset 0, whose sum is not 45 mod 8 = 5. The refusal names the file,
    the key and an offset that fits."""
    path = real(shared_dir, "mf_telechat3_105b_a4b_pretrain_4k.yaml")
    parsed = parse([path])
    assert not parsed.strategy.mtp_in_offset
    warning = next(w for w in parsed.warnings if w.code == "W-MF-OFFSET-SUM")
    assert warning.text.startswith(f"{path}, key 'model.model_config.offset': offset 0 sums to 0, but 45 layers over")
    assert "remainder of 5" in warning.text and "[1, 1, 1, 1, 1, 0, 0, 0]" in warning.text
    with pytest.raises(LayoutError, match=r"scalar offset 0 must equal the remainder 5") as caught:
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    located = parsed.locate(caught.value)
    assert str(located).startswith(f"{path}, key 'model.model_config.offset': [E-OFF-SCALAR]")
    assert str(located).endswith("an offset that fits: [1, 1, 1, 1, 1, 0, 0, 0]")
    # the fix the refusal suggests estimates, with the MTP layer on the last stage
    fixed = apply_changes(parsed, {"strategy.offset": [1, 1, 1, 1, 1, 0, 0, 0]})
    result = estimate(fixed.model, fixed.strategy, fixed.hardware, fixed.options)
    assert [sum(st.layer_counts) for st in result.stages] == [6, 6, 6, 6, 6, 5, 5, 5]
    assert [sum(r.kind == "mtp" for r in st.layers) for st in result.stages] == [0] * 7 + [1]


def test_an_mcore_offset_mindformers_refuses_is_refused_naming_file_key_and_fix(tmp_path, capsys):
    """The tiny mcore fixture with offset 0: its 4 layers split evenly over 2 stages, and MTP is not counted (mcore),
    so 0 fits; over 3 stages (remainder 1) MindFormers' LayerSetting refuses 0, and so do the CLI and the library,
    naming the file, the key and an offset that fits. A legacy model counts MTP: 4 + 1 over 3 leaves 2."""
    from estimator.cli import main

    text = (FIXTURES / "tiny_mcore_moe.yaml").read_text()
    even = tmp_path / "even.yaml"
    even.write_text(text.replace("    offset: [1, -1]", "    offset: 0"))
    parsed = parse([even])
    assert not parsed.strategy.mtp_in_offset and not codes(parsed)
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert [st.layer_counts for st in result.stages] == [(2,), (2,)]
    three = tmp_path / "three.yaml"
    three.write_text(even.read_text().replace("  pipeline_stage: 2", "  pipeline_stage: 3")
                     .replace("  data_parallel: 4", "  data_parallel: 2"))
    parsed = parse([three])
    assert [w.text for w in parsed.warnings if w.code == "W-MF-OFFSET-SUM"] == [
        f"{three}, key 'model.model_config.offset': offset 0 sums to 0, but 4 layers over 3 pipeline slots leave a "
        "remainder of 1; MindFormers refuses this too (an offset that fits: [1, 0, 0])"]
    assert main(["estimate", str(three), "--json"]) == 1
    err = capsys.readouterr().err
    assert f"error: {three}, key 'model.model_config.offset': [E-OFF-SCALAR] scalar offset 0 must equal the " \
        "remainder 1 of 4 layers over 3 slots (it is added to all 3); an offset that fits: [1, 0, 0]" in err
    with pytest.raises(LayoutError) as caught:
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert "model.model_config.offset" in parsed.locate(caught.value).localized("zh_CN")
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(three.read_text().replace("use_legacy: False", "use_legacy: True"))
    parsed = parse([legacy])
    assert parsed.strategy.mtp_in_offset
    assert any("4 layers + 1 MTP over 3 pipeline slots leave a remainder of 2" in w.text and "[1, 1, 0]" in w.text
               for w in parsed.warnings if w.code == "W-MF-OFFSET-SUM")


def test_llama2_7b_global_batch_64(shared_dir):
    parsed = parse([real(shared_dir, "mf_llama2_7b_pretrain.yaml")])
    s = parsed.strategy
    # pipeline_stage 1: micro_batch_num is ignored, the 8 accumulation steps are the micro-batches
    assert (s.micro_batch_size, s.dp, s.micro_batches, s.n_acc) == (1, 8, 8, 1)
    assert s.global_batch_size == 64
    assert parsed.provenance["strategy.micro_batches"].key == "runner_config.gradient_accumulation_steps"


def test_v16_telechat_vpp3_layout_and_comm_recompute(shared_dir):
    parsed = parse([real(shared_dir, "mf_telechat2_115b_finetune_vpp3.yaml")])
    s, m = parsed.strategy, parsed.model
    layout = build_layout(LayoutInputs(body_kinds=m.body_kinds(), mtp_kinds=m.mtp_kinds(), p=s.pp, vp=s.vpp,
                                       schedule=s.schedule_name, offset=s.offset, mtp_in_offset=s.mtp_in_offset,
                                       recompute=s.recompute))
    assert layout.chunk_counts() == ((3, 3, 4), (3, 4, 4), (4, 4, 4), (4, 4, 5), (4, 4, 5), (4, 4, 5), (4, 4, 5),
                                     (4, 4, 3))
    both = tuple(tuple(sum(1 for it in layout.slot(i, j).items if it.option == "both") for j in range(3))
                 for i in range(8))
    assert both == ((3, 3, 2), (3, 3, 2), (4, 3, 3), (4, 4, 3), (4, 3, 3), (3, 2, 2), (2, 2, 1), (2, 1, 1))
    options = {it.option for slot in layout.slots for it in slot.items if it.index >= 0}
    assert options == {"both", "selective"}  # select_recompute: True covers every other layer


def test_qwen25_select_recompute_regex_dict(shared_dir):
    parsed = parse([real(shared_dir, "mf_qwen2_5_72b_finetune_32k_seqpipe.yaml")])
    unmatched = sorted(w.text for w in parsed.warnings if w.code == "W-SEL-UNMATCHED")
    assert unmatched == ["selective pattern 'feed_forward\\.reshape' is not modelled; priced as kept",
                         "selective pattern 'feed_forward\\.w2\\.reshape' is not modelled; priced as kept"]
    assert parsed.strategy.recompute.switches == ("act",)
    assert parsed.provenance["strategy.comm_counts"].key == "recompute_config.select_comm_recompute"


def test_mcore_moe_names_and_dataset_sequence(shared_dir):
    parsed = parse([real(shared_dir, "mf_qwen3_moe_30b_a3b_pretrain_4k.yaml")])
    assert parsed.provenance["model.num_experts"].key == "model.model_config.num_experts"
    assert parsed.provenance["strategy.seq_length"].key == "train_dataset.data_loader.config.seq_length"
    assert parsed.strategy.vocab_emb_dp is False
    assert any(a.field == "strategy.vocab_emb_dp" for a in parsed.assumptions)


def test_device_num_comment_disagrees(shared_dir):
    parsed = parse([real(shared_dir, "mf_llama2_70b_pretrain_bf16_64p.yaml")])
    texts = [w.text for w in parsed.warnings if w.code == "W-MF-DEVICES"]
    assert len(texts) == 1 and "device num = 32" in texts[0] and "= 64 devices" in texts[0]
    assert parsed.strategy.world_size == 64
    agree = parse([real(shared_dir, "mf_deepseek3_671b_pretrain.yaml")])
    assert "W-MF-DEVICES" not in codes(agree)


def test_provenance_names_the_key(shared_dir):
    path = real(shared_dir, "mf_deepseek3_671b_pretrain.yaml")
    parsed = parse([path])
    prov = parsed.provenance["strategy.tp"]
    assert (prov.source, prov.path, prov.key, prov.raw) == ("file", str(path), "parallel_config.model_parallel", 4)
    assert parsed.provenance["model.mtp_layers"].key == "model.model_config.mtp_depth"
    assert parsed.provenance["model.num_experts"].key == "moe_config.expert_num"
    assert parsed.provenance["options.max_device_memory"].raw == "55GB"


def test_hyperparallel_files_are_not_mindformers(shared_dir):
    for path in (shared_dir / "real-configs" / "hyperparallel").glob("*.yaml"):
        assert not detect(yaml.safe_load(path.read_text(encoding="utf-8")), str(path)), path.name


# ------------------------------------------------------------------------------------- model rules
@pytest.mark.parametrize(("hidden", "multiple", "multiplier", "width"), [
    (4096, 256, None, 11008),     # Llama-2-7B
    (8192, 256, 1.3, 28672),      # Llama-2-70B, Llama-3-70B
    (8192, 4096, 1.3, 28672),
    (16384, 4096, 1.2, 53248),    # Llama-3-405B
])
def test_llama_ffn_rule(hidden, multiple, multiplier, width):
    assert llama_ffn(hidden, multiple, multiplier) == width


@pytest.mark.parametrize(("pattern", "switch"), [
    (r"feed_forward\.mul", "act"), (r"feed_forward\.w1\.activation\.silu", "act"),
    (r"mlp\.activation_func\.silu", "act"), (r"mlp\.shared_experts\.mul", "act"), (r".*\.ffn_norm", "norm_out"),
    (r"attention\.flash_attention", "core"), (r"feed_forward\.reshape", None), (r"attention\.multi_head", None),
])
def test_selective_keywords(pattern, switch):
    assert selective_switch(pattern) == switch


def test_comm_keywords():
    assert [comm_switch(p) for p in (r".*\.norm", r".*\.w_qkv\.reshape", r".*\.w_gate_hidden\.reshape",
                                     r"feed_forward\.mul")] == ["gather", "gather", "gather", None]


# ------------------------------------------------------------------------------------------ fixtures
def test_tiny_legacy_fixture():
    parsed = parse([FIXTURES / "tiny_legacy.yaml"])
    s, m = parsed.strategy, parsed.model
    assert m.ffn_hidden_size == 704  # 4·256 → 2/3 → 682 → multiple of 64
    assert (s.dp, s.tp, s.pp, s.micro_batches, s.n_acc, s.global_batch_size) == (2, 2, 2, 4, 2, 16)
    assert s.offset == (1, -1) and s.recompute.sel_counts == (2, 1) and s.recompute.comm_counts == (1, 0)
    assert s.recompute.switches == ("act",)
    assert s.sharding.mode == "mf_op" and s.sharding.keep_gathered_weights is False
    assert (s.param_bytes, s.compute_bytes, s.softmax_bytes, s.norm_bytes) == (4.0, 2.0, 4.0, 4.0)
    assert codes(parsed) == ["W-SEL-UNMATCHED"]
    result = estimate(m, s, parsed.hardware, parsed.options)
    assert [sum(1 for r in st.layers if r.kind == "dense") for st in result.stages] == [4, 2]


def test_tiny_mcore_moe_fixture():
    parsed = parse([FIXTURES / "tiny_mcore_moe.yaml"])
    s, m = parsed.strategy, parsed.model
    assert (m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size, m.first_k_dense, m.mtp_layers) == \
        (8, 2, 128, 1, 1)
    assert m.qk_norm is True and m.hf_architectures == ("Qwen3MoeForCausalLM",)
    assert s.seq_length == 1024 and s.schedule_name == "seq1f1b" and s.n_s == 2
    assert s.grouped_gemm is True and s.sharding.mode == "none"
    result = estimate(m, s, parsed.hardware, parsed.options)
    assert result.budget == 30 * GiB
    # an mcore model (use_legacy: False): LayerSetting splits the 4 layers alone, the MTP module sits with the last
    assert not s.mtp_in_offset and "outside the offsets" in parsed.provenance["strategy.mtp_in_offset"].key
    assert [st.layer_counts for st in result.stages] == [(3,), (1,)]
    assert [sum(r.kind == "mtp" for r in st.layers) for st in result.stages] == [0, 1]
    assert not codes(parsed)



# D-MF-UNREAD: keys the catalogue knew but the reader did not read, said naming the key and the direction
@pytest.mark.parametrize("edit, key, said", [
    ({"optimizer": {"type": "Came"}}, "optimizer.type", "optimizer memory an upper bound"),
    ({"optimizer": {"type": "SGD"}}, "optimizer.type", "may be off either way"),
    ({"recompute_config": {"mp_comm_recompute": False}}, "recompute_config.mp_comm_recompute",
     "device memory a lower bound"),
    ({"recompute_config": {"select_recompute_exclude": ["feed_forward.mul"]}},
     "recompute_config.select_recompute_exclude", "device memory a lower bound"),
    ({"model": {"model_config": {"moe_token_dispatcher_type": "allgather"}}},
     "model.model_config.moe_token_dispatcher_type", "device memory a lower bound"),
    ({"model": {"model_config": {"fine_grain_interleave": 2}}}, "model.model_config.fine_grain_interleave",
     "step time an upper bound"),
    ({"moe_config": {"comp_comm_parallel": True}}, "moe_config.comp_comm_parallel", "step time an upper bound"),
    ({"parallel": {"parallel_mode": 0}}, "parallel.parallel_mode", "semi_auto_parallel"),
    ({"context": {"mode": 1}}, "context.mode", "lower bounds"),
    ({"parallel": {"parallel_optimizer_config": {"optimizer_level": "level3"}}},
     "parallel.parallel_optimizer_config.optimizer_level", "may be off either way"),
])
def test_known_but_unpriced_keys_are_said(tmp_path, edit, key, said):
    data = yaml.safe_load((FIXTURES / "tiny_mcore_moe.yaml").read_text(encoding="utf-8"))

    def merge(into: dict, extra: dict) -> None:
        for k, v in extra.items():
            if isinstance(v, dict) and isinstance(into.get(k), dict):
                merge(into[k], v)
            else:
                into[k] = v

    merge(data, edit)
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    parsed = parse([path])
    texts = [w.text for w in parsed.warnings if w.code in ("W-UNMODELLED", "W-NOT-PRICED") and key in w.text]
    assert len(texts) == 1 and said in texts[0], [w.text for w in parsed.warnings]
    assert not codes(parse([FIXTURES / "tiny_mcore_moe.yaml"]))  # the defaults say nothing

def test_base_config_is_merged_with_provenance():
    parsed = parse([FIXTURES / "base_child.yaml"])
    s = parsed.strategy
    assert (s.dp, s.tp, s.pp, s.seq_length) == (2, 4, 1, 512)
    assert parsed.provenance["strategy.tp"].path == str(FIXTURES / "base_child.yaml")
    assert parsed.provenance["strategy.dp"].path == str(FIXTURES / "base_parent.yaml")
    assert parsed.options.max_device_memory == 40 * GiB


def test_missing_base_config_names_the_key():
    with pytest.raises(ConfigError) as caught:
        parse([FIXTURES / "missing_base.yaml"])
    assert caught.value.key == "base_config" and "not_here.yaml" in str(caught.value)


def test_malformed_yaml_gives_line_and_column():
    with pytest.raises(ConfigError) as caught:
        parse([FIXTURES / "malformed.yaml"])
    assert (caught.value.line, caught.value.column) == (4, 17)
    assert f"{FIXTURES / 'malformed.yaml'}:4:17" in str(caught.value)


def test_statements_and_fp8():
    parsed = parse([FIXTURES / "statements.yaml"])
    s = parsed.strategy
    assert s.micro_batch_size == 2 and s.global_batch_size == 64  # batch_size 1 × interleave 2
    got = {w.code: w.text for w in parsed.warnings}
    assert "device num = 16" in got["W-MF-DEVICES"] and "= 8 devices" in got["W-MF-DEVICES"]
    assert "global batch of 32" in got["W-MF-GBS"] and "= 64" in got["W-MF-GBS"]
    assert s.compute_bytes == 2.0 and "W-FP8" in got


@pytest.mark.parametrize(("key", "value", "message"), [
    ("parallel_config.model_parallel", "four", "expected an integer"),
    ("parallel_config.pipeline_stage", 0, "out of range"),
    ("model.model_config.compute_dtype", "float13", "unknown dtype"),
    ("parallel.pipeline_config.pipeline_scheduler", "warp", "unknown pipeline_scheduler"),
    ("recompute_config.recompute", {"a": 1}, "not op patterns"),
    ("context.max_device_memory", "lots", "cannot read size"),
    ("model.model_config.offset", [1, [2]], "offset must be"),
])
def test_bad_values_name_their_key(tmp_path, key, value, message):
    data = yaml.safe_load((FIXTURES / "tiny_legacy.yaml").read_text(encoding="utf-8"))
    node = data
    *parents, last = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as caught:
        parse([path])
    assert caught.value.key == key


# ------------------------------------------------------------------------------------------ export
def changed_lines(old: str, new: str) -> list[str]:
    return [line[1:] for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def line_keys(lines: list[str]) -> set[str]:
    out = set()
    for line in lines:
        match = re.match(r"^\s*(?:- )?'?([^:']+)'?:", line)
        out.add(match.group(1) if match else line.strip())
    return out


def comments(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("#")]


def round_trip(path: Path, tmp_path: Path, changes: dict[str, Any]) -> tuple[str, str, Any, Any]:
    """Copy ``path`` (with any base files) to tmp, edit, export, re-read: (old, new, edited, re-read)."""
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    for sibling in path.parent.glob("base_*.yaml"):
        shutil.copy(sibling, tmp_path / sibling.name)
    parsed = parse([copy])
    edited = apply_changes(parsed, changes)
    files = export(edited)
    assert list(files) == [str(copy)]
    old, new = copy.read_text(encoding="utf-8"), files[str(copy)]
    copy.write_text(new, encoding="utf-8")
    return old, new, edited, parse([copy])


STRATEGY_KEYS = {"data_parallel", "model_parallel", "pipeline_stage", "context_parallel", "context_parallel_algo",
                 "expert_parallel", "micro_batch_num", "use_seq_parallel", "vocab_emb_dp", "seq_split_num",
                 "batch_size", "gradient_accumulation_steps", "seq_length", "pp_interleave_num",
                 "pipeline_interleave", "pipeline_scheduler", "pipeline_config", "offset", "recompute",
                 "select_recompute", "select_comm_recompute", "recompute_slice_activation",
                 "enable_parallel_optimizer", "optimizer_weight_shard_size", "gradient_accumulation_shard",
                 "parallel_optimizer_comm_recompute", "expert_model_parallel", "dataset_strategy",
                 "param_init_type", "layernorm_compute_type", r"feed_forward\.mul", r"feed_forward\.activate\.silu",
                 r"feed_forward\.reshape", r"feed_forward\.w2\.reshape", r".*\.norm", r".*\.w_qkv\.reshape",
                 r".*\.w_gate_hidden\.reshape", r"feed_forward\.w1\.activation\.silu", r"attention\.wo\.reshape"}

REAL_EDITS = [
    ("mf_deepseek3_671b_pretrain.yaml", {"strategy.tp": 8},
     {"data_parallel", "model_parallel", "micro_batch_num"}),
    ("mf_deepseek3_671b_pretrain.yaml", {"strategy.pp": 8, "strategy.offset": [1, 1, 1, 1, 1, 1, 1, -1],
                                         "strategy.recompute": [4, 4, 4, 4, 4, 4, 4, 0]},
     {"data_parallel", "pipeline_stage", "micro_batch_num", "offset", "recompute"}),
    ("mf_llama2_7b_pretrain.yaml", {"strategy.pp": 2, "strategy.sel_counts": [2, 1]},
     {"data_parallel", "pipeline_stage", "micro_batch_num", "gradient_accumulation_steps", "select_recompute"}),
    ("mf_qwen2_5_72b_finetune_32k_seqpipe.yaml",
     {"strategy.sel_counts": [4, 4, 4, 4, 2, 2, 2, 2], "strategy.comm_counts": [1, 1, 1, 1, 0, 0, 0, 0],
      "strategy.n_s": 4},
     {"seq_split_num", r"feed_forward\.mul", r"feed_forward\.activate\.silu", r"feed_forward\.reshape",
      r"feed_forward\.w2\.reshape", r".*\.norm", r".*\.w_qkv\.reshape", r".*\.w_gate_hidden\.reshape"}),
    ("mf_telechat2_115b_finetune_vpp3.yaml", {"strategy.vpp": 2, "strategy.offset": 0,
                                              "strategy.comm_counts": [6, 6, 6, 6, 4, 4, 2, 2]},
     {"pp_interleave_num", "offset", "select_comm_recompute"}),
    ("mf_qwen3_32b_pretrain_4k.yaml", {"strategy.tp": 2, "strategy.cp": 2, "strategy.cp_algo": "ulysses",
                                       "strategy.vpp": 2, "strategy.offset": [[0, 0, 0, 0], [0, 0, 0, 0]],
                                       "strategy.sharding": "mf_op"},
     {"model_parallel", "context_parallel", "context_parallel_algo", "enable_parallel_optimizer",
      "pipeline_config", "pipeline_interleave", "offset", "pp_interleave_num"}),
    ("mf_mixtral_8x7b_pretrain.yaml", {"strategy.etp": 2, "strategy.micro_batch_size": 2},
     {"expert_model_parallel", "batch_size", "micro_batch_num"}),
]


@pytest.mark.parametrize(("name", "changes", "keys"), REAL_EDITS, ids=[f"{e[0]}-{i}" for i, e in enumerate(REAL_EDITS)])
def test_export_round_trip_real(shared_dir, tmp_path, name, changes, keys):
    old, new, edited, reread = round_trip(real(shared_dir, name), tmp_path, changes)
    assert reread.strategy == edited.strategy
    assert line_keys(changed_lines(old, new)) == keys
    assert comments(old) == comments(new)


FIXTURE_EDITS = [
    # tp 2 → 1 re-derives dp 4 and m 2: the anchored &dp and &mbn follow, the literal dataset_strategy row too
    ("tiny_legacy.yaml", {"strategy.tp": 1}, {"data_parallel", "model_parallel", "micro_batch_num",
                                              "dataset_strategy"}),
    ("tiny_legacy.yaml", {"strategy.sel_counts": [3, 2], "strategy.offset": [0, 0],
                          "strategy.keep_gathered_weights": True},
     {r"feed_forward\.mul", r"feed_forward\.w1\.activation\.silu", r"attention\.wo\.reshape", "offset",
      "parallel_optimizer_comm_recompute"}),
    ("tiny_mcore_moe.yaml", {"strategy.n_s": 4, "strategy.pp": 1, "strategy.offset": None},
     {"data_parallel", "pipeline_stage", "seq_split_num", "gradient_accumulation_steps"}),
    ("base_child.yaml", {"strategy.tp": 1}, {"data_parallel", "model_parallel", "runner_config",
                                             "gradient_accumulation_steps"}),
]


@pytest.mark.parametrize(("name", "changes", "keys"), FIXTURE_EDITS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(FIXTURE_EDITS)])
def test_export_round_trip_fixtures(tmp_path, name, changes, keys):
    old, new, edited, reread = round_trip(FIXTURES / name, tmp_path, changes)
    assert reread.strategy == edited.strategy
    assert line_keys(changed_lines(old, new)) == keys
    assert comments(old) == comments(new)


def test_export_keeps_anchors_and_spelling(tmp_path):
    _, new, _, reread = round_trip(FIXTURES / "tiny_legacy.yaml", tmp_path, {"strategy.tp": 1})
    assert "  data_parallel: &dp 4\n" in new and "  micro_batch_num: &mbn 2\n" in new
    assert "dataset_strategy: [[*dp, 1], [4, 1]]   # the second row is written out literally" in new
    assert "use_seq_parallel: True" in new  # untouched lines keep their spelling
    assert reread.strategy.dp == 4 and reread.strategy.micro_batches == 2


def test_export_data_parallel_written_as_alias(tmp_path):
    """`data_parallel: *dp` gets a literal; rows that aliased the same anchor get it too."""
    text = (FIXTURES / "base_parent.yaml").read_text(encoding="utf-8")
    text = text.replace("  data_parallel: 2\n", "  data_parallel: *dp\n")
    text = "common:\n  dp: &dp 2\n" + text + "parallel:\n  dataset_strategy: [[*dp, 1], [ *dp, 1]]\n"
    (tmp_path / "src").mkdir()
    path = tmp_path / "src" / "alias.yaml"
    path.write_text(text, encoding="utf-8")
    _, new, edited, reread = round_trip(path, tmp_path, {"strategy.tp": 1})
    assert "  dp: &dp 2\n" in new and "  data_parallel: 4\n" in new
    assert "  dataset_strategy: [[4, 1], [ 4, 1]]\n" in new
    assert reread.strategy == edited.strategy and reread.strategy.dp == 4


def test_export_inserts_missing_keys_in_their_section(tmp_path):
    old, new, _, reread = round_trip(FIXTURES / "base_child.yaml", tmp_path, {"strategy.tp": 1})
    # dp comes from the base file: the override is added under this file's own parallel_config, and the
    # accumulation steps (m = 16/8) get a new runner_config section at the end
    assert new.splitlines()[2:5] == ["parallel_config:", "  model_parallel: 1", "  data_parallel: 8"]
    assert new.endswith(old[old.index("model:"):] + "runner_config:\n  gradient_accumulation_steps: 2\n")
    assert (reread.strategy.dp, reread.strategy.micro_batches) == (8, 2)


def test_export_to_one_stage_leaves_a_dead_offset_list(shared_dir, tmp_path):
    """With one stage MindFormers ignores `offset`; the old per-stage list stays in the file and is ignored
    on reading (a list of 8 cannot apply to 1 stage)."""
    _, new, edited, reread = round_trip(real(shared_dir, "mf_qwen2_5_72b_finetune_32k_seqpipe.yaml"), tmp_path,
                                        {"strategy.pp": 1})
    assert "    offset: [0, 0, 0, 0, 0, 0, 0, 0]\n" in new
    assert reread.strategy.pp == 1 and reread.strategy.offset is None
    before = estimate(edited.model, edited.strategy, edited.hardware, edited.options)
    after = estimate(reread.model, reread.strategy, reread.hardware, reread.options)
    assert [s.total for s in after.stages] == [s.total for s in before.stages]


def test_export_nothing_changed_returns_nothing(shared_dir):
    parsed = parse([real(shared_dir, "mf_telechat2_115b_finetune_vpp3.yaml")])
    assert export(parsed) == {}


def test_export_writes_edits_made_after_parsing(tmp_path):
    """The file's own values are the reference, not the parsed plan: an edit made with --set is written."""
    copy = tmp_path / "tiny.yaml"
    shutil.copy(FIXTURES / "tiny_legacy.yaml", copy)
    parsed = apply_changes(parse([copy]), {"strategy.cp": 2})
    new = export(parsed, parsed.strategy)[str(copy)]
    assert "  context_parallel: 2\n" in new and "  data_parallel: &dp 1\n" in new


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"strategy.sharding": "zero1"}, "strategy.sharding zero1"),
    ({"strategy.swap_optimizer": True}, "strategy.swap_optimizer True"),
    ({"strategy.vpp": 2, "strategy.schedule": "dualpipev", "strategy.offset": None}, "strategy.schedule dualpipev"),
    ({"strategy.noop_layers": [5]}, "strategy.noop_layers"),
    ({"strategy.micro_batch_size": 3, "strategy.micro_batches": 8}, "not a multiple of micro_batch_interleave_num"),
])
def test_export_refuses_what_mindformers_cannot_express(changes, fragment):
    path = FIXTURES / ("statements.yaml" if "micro_batch_size" in str(changes) else "tiny_legacy.yaml")
    parsed = apply_changes(parse([path]), changes, hold="dp")
    with pytest.raises(ConfigError, match=r"\[R-FW\]") as caught:
        export(parsed)
    assert fragment in str(caught.value)


def test_export_partition_becomes_offsets(tmp_path):
    copy = tmp_path / "tiny.yaml"
    shutil.copy(FIXTURES / "tiny_legacy.yaml", copy)
    parsed = apply_changes(parse([copy]), {"strategy.partition": [2, 4], "strategy.offset": None})
    new = export(parsed)[str(copy)]
    assert "    offset: [-1, 1]" in new


def test_patch_preserves_styles():
    text = "a:\n  x: &x yes\n  y: *x\n  l: [ 1, 2 ]\n  s: 'one'\n  b:\n    - 1\n    - 2\n  n:\nz: 1"
    patch = YamlPatch(text, "t.yaml")
    patch.set(("a", "x"), False)
    patch.set(("a", "l"), [3, 4, 5])
    patch.set(("a", "s"), "two")
    patch.set(("a", "b"), [7])
    patch.set(("a", "n", "k"), 1)
    patch.set(("a", "y"), True)
    patch.set(("c", "d"), "v w")
    assert patch.result() == ("a:\n  x: &x no\n  y: yes\n  l: [ 3, 4, 5 ]\n  s: 'two'\n  b: [7]\n  n:\n    k: 1\n"
                              "z: 1\nc:\n  d: \"v w\"\n")


# --------------------------------------------------------------------------------------- examples
EXAMPLE_FILES = sorted(EXAMPLES.glob("mindformers_*.yaml"))


def test_examples_present():
    assert {p.name for p in EXAMPLE_FILES} >= {"mindformers_deepseek_v3_671b.yaml", "mindformers_qwen3_32b.yaml",
                                               "mindformers_mixtral_8x7b.yaml", "mindformers_llama3_70b.yaml"}


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_examples_estimate_fit_and_export(path, tmp_path):
    parsed = parse([path])
    assert parsed.warnings == ()
    result = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert result.fits
    pp = parsed.strategy.pp
    old, new, edited, reread = round_trip(path, tmp_path, {"strategy.recompute": [1] * pp})
    assert reread.strategy == edited.strategy
    assert line_keys(changed_lines(old, new)) == {"recompute"}


def test_deepseek_example_strategy():
    parsed = parse([EXAMPLES / "mindformers_deepseek_v3_671b.yaml"])
    s, m = parsed.strategy, parsed.model
    assert (m.num_layers, m.mtp_layers, m.num_experts, m.kv_lora_rank) == (61, 1, 256, 512)
    assert (s.dp, s.tp, s.pp, s.ep, s.micro_batches, s.global_batch_size) == (16, 4, 16, 8, 32, 512)
    assert s.world_size == 1024 and not s.mtp_in_offset  # an mcore model: MTP outside the offsets


# ------------------------------------------------------------------------------------------- fuzz
def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.extend(_paths(value, (*prefix, index)))
    return out


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6), st.sampled_from([0, -1, 2**31, 10**30, 10**18]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.lists(st.integers(-5, 70), max_size=20), st.lists(st.lists(st.integers(-3, 9), max_size=9), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(-2, 5), max_size=3),
)
FUZZ_SOURCES = ["tiny_legacy.yaml", "tiny_mcore_moe.yaml", "statements.yaml", "base_parent.yaml"]
REAL_FUZZ = ["mf_deepseek3_671b_pretrain.yaml", "mf_qwen2_5_72b_finetune_32k_seqpipe.yaml",
             "mf_telechat2_115b_finetune_vpp3.yaml", "mf_qwen3_moe_30b_a3b_pretrain_4k.yaml"]


def _source(shared: Path | None, name: str) -> str:
    path = FIXTURES / name if (FIXTURES / name).exists() else real(shared, name)  # type: ignore[arg-type]
    return path.read_text(encoding="utf-8")


def _parse_and_estimate(path: Path) -> None:
    try:
        parsed = parse([path])
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    except SappError:
        pass


@fuzz_settings(120, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_configs_raise_only_sapp_errors(shared_dir, tmp_path_factory, data):
    name = data.draw(st.sampled_from(FUZZ_SOURCES + REAL_FUZZ))
    doc = yaml.safe_load(_source(shared_dir, name))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(doc)
        if not paths:
            break
        target = data.draw(st.sampled_from(paths))
        parent = doc
        for part in target[:-1]:
            parent = parent[part]
        action = data.draw(st.sampled_from(["replace", "delete", "nest", "hoist"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[target[-1]]
        elif action == "nest":  # broken nesting: wrap the value one level deeper
            parent[target[-1]] = data.draw(st.sampled_from([[parent[target[-1]]], {"x": parent[target[-1]]}]))
        elif action == "hoist" and isinstance(parent, dict) and isinstance(doc, dict):
            doc[str(target[-1])] = parent.pop(target[-1])
        else:
            parent[target[-1]] = data.draw(VALUES)
    path = tmp_path_factory.mktemp("fuzz") / "config.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    _parse_and_estimate(path)


@fuzz_settings(60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_broken_text_raises_only_sapp_errors(tmp_path_factory, data):
    text = _source(None, data.draw(st.sampled_from(FUZZ_SOURCES)))
    at = data.draw(st.integers(0, len(text)))
    cut = data.draw(st.integers(0, 40))
    junk = data.draw(st.sampled_from(["", ":", "- ", "[", "]", "{", "  ", "\n  x", "&a ", "*b", "'", "\t"]))
    path = tmp_path_factory.mktemp("fuzz") / "config.yaml"
    path.write_text(text[:at] + junk + text[at + cut:], encoding="utf-8")
    try:
        read_file(str(path))
    except ConfigError as exc:
        if exc.line is not None:
            assert f"{path}:{exc.line}:" in str(exc)
    except SappError:
        pass
    _parse_and_estimate(path)
