"""`sapp measure`: the measured activation census of tiny Llama, Qwen3, Mixtral, DeepSeek-V3, DeepSeek-V3.2 (sparse
attention) and Granite 4.0-H (Mamba-2 hybrid) shapes against the analytic slot table (estimator/activations.py and
the shipped kinds as data, estimator/kinds), slot by slot.

Tolerance: exact (0 bytes) for every slot, except the differences listed and derived below, each asserted to
its derived value, so a change on either side fails. The PyTorch tests skip when torch or transformers is not
installed (the `measure` extra; .ci/run installs it in .venv-measure and runs this file there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.cli import main

SEQ = 64
BF16 = 2

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
         "intermediate_size": 688, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
         "vocab_size": 1000, "tie_word_embeddings": False}
QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 256, "intermediate_size": 640,
         "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 48,
         "vocab_size": 1000, "tie_word_embeddings": True}
MIXTRAL = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 256,
           "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
           "vocab_size": 1000, "num_local_experts": 8, "num_experts_per_tok": 2}
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 256,
               "intermediate_size": 512, "moe_intermediate_size": 128, "num_hidden_layers": 3,
               "first_k_dense_replace": 1, "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000,
               "n_routed_experts": 16, "num_experts_per_tok": 4, "n_shared_experts": 1, "n_group": 4,
               "topk_group": 2, "q_lora_rank": 96, "kv_lora_rank": 64, "qk_rope_head_dim": 16,
               "qk_nope_head_dim": 32, "v_head_dim": 32, "num_nextn_predict_layers": 1}

# DeepSeek-V3.2's sparse attention on the DeepSeek-V3 shape above: 4 indexer heads of 32, top-16 keys of 64
DEEPSEEK_V32 = {**DEEPSEEK_V3, "architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32",
                "index_n_heads": 4, "index_head_dim": 32, "index_topk": 16}

# IBM Granite 4.0-H's shape (GraniteMoeHybrid): a Mamba-2 layer and an attention layer (no RoPE), each with routed
# experts and the shared_mlp; 16 Mamba heads of 32, state 64, 2 groups
GRANITE_H = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
             "hidden_size": 256, "intermediate_size": 128, "shared_intermediate_size": 512, "num_hidden_layers": 2,
             "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "num_local_experts": 8,
             "num_experts_per_tok": 2, "layer_types": ["mamba", "attention"], "mamba_n_heads": 16,
             "mamba_d_head": 32, "mamba_d_state": 64, "mamba_n_groups": 2, "mamba_d_conv": 4, "mamba_expand": 2,
             "mamba_chunk_size": 32, "position_embedding_type": "nope", "tie_word_embeddings": True}


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_measure_without_torch_names_the_extra(tmp_path, capsys, monkeypatch):
    """In the core install (no PyTorch) the command refuses with the install line, never a traceback."""
    import builtins

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'", name="torch")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert main(["measure", str(_write(tmp_path, LLAMA))]) == 1
    err = capsys.readouterr().err
    assert "pip install 'sapp-planner[measure]'" in err and "torch" in err


def test_measure_refuses_a_config_without_model_type(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 8}))
    assert main(["measure", str(path)]) == 1
    assert "model_type" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- PyTorch side
torch_needed = pytest.mark.skipif(
    not all(__import__("importlib").util.find_spec(m) for m in ("torch", "transformers")),
    reason="the measure extra (torch, transformers) is not installed")


def _measure(tmp_path: Path, data: dict, **kwargs):
    from estimator.measure import measure

    return measure(_write(tmp_path, data), seq_length=SEQ, **kwargs)


def _by_slot(kind) -> dict[str, tuple[float | None, float | None]]:
    return {c.slot: (c.measured, c.analytic) for c in kind.comparison}


def _assert_exact_except(kind, explained: set[str]) -> None:
    for slot, (measured, analytic) in _by_slot(kind).items():
        if slot not in explained:
            assert measured == analytic, f"{kind.kind}: {slot} measured {measured} analytic {analytic}"


@torch_needed
def test_llama_census_matches_the_slot_table_exactly(tmp_path):
    m = _measure(tmp_path, LLAMA)
    (dense,) = m.kinds
    assert dense.kind == "dense" and not m.kv_repeat  # flash: K/V heads not repeated (GQA native)
    _assert_exact_except(dense, set())
    slots = _by_slot(dense)
    h, hff = 256, 688
    assert slots["a.k"][0] == BF16 * 2 * 32  # n_kv · dh, not a · dh
    assert slots["m.act_in.gate"][0] == BF16 * hff and slots["a.norm_in"][0] == BF16 * h
    assert dense.param_elements == dense.analytic_param_elements
    # the rotary tables are made once per forward and read by every layer: reported apart
    assert [r.slot for r in dense.rows if r.shared] == ["shared.rope"]
    # the backward holds at least the gradient of the widest activation (the gate/up output) at once
    assert dense.backward_transient >= BF16 * 2 * hff


@torch_needed
def test_llama_eager_and_sdpa_paths(tmp_path):
    """eager: the fp32 scores and their cast are saved and K/V are repeated; transformers' sdpa with the
    decoder's mask also repeats K/V and saves the mask it materialises in the layer (s·β per token)."""
    eager = _measure(tmp_path, LLAMA, attention="eager")
    assert eager.kv_repeat
    (kind,) = eager.kinds
    _assert_exact_except(kind, set())
    assert _by_slot(kind)["a.scores"][0] == 4 * 8 * SEQ and _by_slot(kind)["a.scores_cast"][0] == BF16 * 8 * SEQ
    sdpa = _measure(tmp_path, LLAMA, attention="sdpa", norm="hf")
    (kind,) = sdpa.kinds
    slots = _by_slot(kind)
    assert slots["a.mask"] == (BF16 * SEQ, None)
    # transformers' eager RMSNorm saves an fp32 upcast of its input and the normalised tensor before the
    # weight: norm_in 4·h instead of β·h, norm_out 2·β·h instead of β·h
    for half in ("a", "m"):
        assert slots[f"{half}.norm_in"] == (4 * 256, BF16 * 256)
        assert slots[f"{half}.norm_out"] == (2 * BF16 * 256, BF16 * 256)
    _assert_exact_except(kind, {"a.mask", "a.norm_in", "a.norm_out", "m.norm_in", "m.norm_out"})


@torch_needed
def test_qwen3_qk_norm_and_tied_embeddings(tmp_path):
    m = _measure(tmp_path, QWEN3)
    (dense,) = m.kinds
    _assert_exact_except(dense, set())
    slots = _by_slot(dense)
    assert slots["a.qknorm"][0] == BF16 * (8 + 4) * 48 and slots["nstat.qk"][0] == 4 * (8 + 4)
    assert dense.param_elements == dense.analytic_param_elements


@torch_needed
def test_mixtral_routed_experts(tmp_path):
    m = _measure(tmp_path, MIXTRAL)
    (moe,) = m.kinds
    n_exp, k, h, hff = 8, 2, 256, 512
    slots = _by_slot(moe)
    # router: transformers saves the fp32 softmax (4·n_exp), the top-k ids (8·k), the normalising sum (4) and
    # the normalised weights (4·k); the analytic slot counts the fp32 logits and probabilities (2·4·n_exp)
    assert slots["r.router"] == (4 * n_exp + 8 * k + 4 + 4 * k, 4 * 2 * n_exp + 8 * k)
    # dispatch bookkeeping per routed copy, not in the analytic table: the token id of each copy and the sort
    # permutation (int64 each), the copy's routing weight (fp32), the index_put buffer (int64), and the int32
    # group offsets (n_exp per micro-batch)
    assert slots["e.index"] == (k * (8 + 8 + 4 + 8) + 4 * n_exp / SEQ, None)
    assert slots["e.act_in"][0] == k * BF16 * 2 * hff and slots["e.in"][0] == k * BF16 * h
    _assert_exact_except(moe, {"r.router", "e.index"})
    assert moe.param_elements == moe.analytic_param_elements


@torch_needed
def test_deepseek_v3_mla_shared_experts_group_routing(tmp_path):
    m = _measure(tmp_path, DEEPSEEK_V3)
    dense, moe = m.kinds
    assert (dense.kind, dense.layer_index, moe.kind, moe.layer_index) == ("dense", 0, "moe", 1)
    a, h, d_nope, dv, dhr, n_exp, k, groups, top_groups = 8, 256, 32, 32, 16, 16, 4, 4, 2
    for kind in (dense, moe):
        slots = _by_slot(kind)
        # the value is a view of kv_b_proj's output, whose storage also holds the nope key: β·a·(d_nope + dv)
        assert slots["a.v"] == (BF16 * a * (d_nope + dv), BF16 * a * dv)
        # the rope key is a view of kv_a_proj's output and is saved with the latent: mla.lat + β·dhr,
        # mla.rope not apart
        assert slots["mla.lat"][0] == slots["mla.lat"][1] + BF16 * dhr
        assert slots["mla.rope"] == (None, BF16 * dhr)
        assert kind.param_elements == kind.analytic_param_elements
    slots = _by_slot(moe)
    # group-limited sigmoid router (transformers): fp32 upcast of the input (4·h), sigmoid scores (4·n_exp),
    # per-group top-2 ids (8·2·groups), chosen group ids (8·top_groups), the bool expert mask (n_exp),
    # chosen expert ids (8·k), the normalising sum (4), the normalised weights (4·k)
    router = 4 * h + 4 * n_exp + 8 * 2 * groups + 8 * top_groups + n_exp + 8 * k + 4 + 4 * k
    assert slots["r.router"] == (router, 4 * 2 * n_exp + 8 * k)
    assert slots["e.index"] == (k * (8 + 8 + 4 + 8) + 4 * n_exp / SEQ, None)
    explained = {"a.v", "mla.lat", "mla.rope", "r.router", "e.index"}
    _assert_exact_except(dense, explained)
    _assert_exact_except(moe, explained)


@torch_needed
def test_cli_writes_the_layer_kind_yaml(tmp_path, capsys):
    import yaml

    out = tmp_path / "kinds.yaml"
    assert main(["measure", str(_write(tmp_path, MIXTRAL)), "--seq-length", str(SEQ), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "layer kind moe (layer 0)" in text and "r.router" in text
    doc = yaml.safe_load(out.read_text())
    assert doc["source"]["attention"] == "flash" and doc["source"]["model_type"] == "mixtral"
    (kind,) = doc["kinds"]
    slots = {s["id"]: s for s in kind["slots"]}
    # EXP-class slots are per routed copy in the kind file (the unit of the analytic table)
    assert slots["e.in"] == {"id": "e.in", "bytes": 512.0, "class": "exp"}
    assert slots["a.q"]["class"] == "tp" and "shared.rope" not in slots


@torch_needed
def test_deepseek_v32_sparse_attention_indexer(tmp_path):
    """The dsa_dense / dsa_moe kinds (estimator/kinds/dsa.yaml) against transformers' DeepseekV32 modules, the
    indexer run as training runs it (detached inputs, autograd on; kernels.train_indexers)."""
    n_idx, d_idx, topk = 4, 32, 16
    m = _measure(tmp_path, DEEPSEEK_V32)
    dense, moe = m.kinds
    assert (dense.kind, moe.kind) == ("dsa_dense", "dsa_moe")
    mla = {"a.v", "mla.lat", "mla.rope"}  # the MLA differences derived in the DeepSeek-V3 test
    for kind in (dense, moe):
        assert kind.param_elements == kind.analytic_param_elements  # the indexer's 4 tensors, replicated
        slots = _by_slot(kind)
        # fused contract: the rotated query (β·n_idx·d_idx), the head weights (fp32), the int32 top-k indices
        # (one copy, kept by the indexer's loss and by the sparse attention kernel)
        assert slots["dsa.q"] == (BF16 * n_idx * d_idx,) * 2
        assert slots["dsa.w"] == (4 * n_idx,) * 2
        assert slots["dsa.topk"] == (4 * topk,) * 2
        # the key norm's input and the rotated key (2·β·d_idx) and its mean and rstd: fp32 on GPUs (8 bytes,
        # the analytic value), in the input's dtype in PyTorch's CPU LayerNorm (2 × 2 bytes measured)
        assert slots["dsa.k"] == (2 * BF16 * d_idx + 2 * BF16, 2 * BF16 * d_idx + 8)
        _assert_exact_except(kind, mla | {"dsa.k", "r.router", "e.index"})
    # unfused (eager): transformers' arithmetic — fp32 q and k, the ReLU'd per-head scores over every key,
    # topk's int64 indices; the MLA eager scores as in the table
    (dense, _moe) = _measure(tmp_path, DEEPSEEK_V32, attention="eager").kinds
    slots = _by_slot(dense)
    assert slots["dsa.scores"] == (4 * n_idx * SEQ,) * 2
    assert slots["dsa.q"] == (4 * n_idx * d_idx,) * 2 and slots["dsa.topk"] == (8 * topk,) * 2
    assert slots["dsa.k"] == (BF16 * d_idx + 2 * BF16 + 4 * d_idx, BF16 * d_idx + 8 + 4 * d_idx)
    assert slots["a.scores"][0] == 4 * 8 * SEQ and slots["a.out"][0] == BF16 * 8 * 32
    _assert_exact_except(dense, mla | {"dsa.k"})


@torch_needed
def test_granite_mamba2_hybrid(tmp_path):
    """The mamba2_moe kind (estimator/kinds/mamba2.yaml) against transformers' GraniteMoeHybrid modules, the Mamba-2
    mixer run as the fused kernel's contract (kernels.fuse_mamba_mixers), the attention layer as the moe kind."""
    m = _measure(tmp_path, GRANITE_H)
    mamba, attention = m.kinds
    assert (mamba.kind, mamba.layer_index, attention.kind) == ("mamba2_moe", 0, "moe")
    heads, head_dim, state, groups, k, n_exp = 16, 32, 64, 2, 2, 8
    d_in = heads * head_dim
    for kind in (mamba, attention):
        assert kind.param_elements == kind.analytic_param_elements
        slots = _by_slot(kind)
        # Granite's shared_mlp projects gate and up in one input_linear (one storage of β·2·hff_sh): measured as
        # s.act_in.gate, the analytic table splits it in two equal slots
        assert slots["s.act_in.gate"] == (BF16 * 2 * 512, BF16 * 512) and slots["s.act_in.up"] == (None, BF16 * 512)
        # Granite's router takes the top-k of the logits and a softmax over those k: top-k ids (8·k) and the k
        # probabilities (4·k); the analytic slot counts the fp32 logits and probabilities of all n_exp (2·4·n_exp)
        assert slots["r.router"] == (8 * k + 4 * k, 4 * 2 * n_exp + 8 * k)
        # dispatch bookkeeping as Mixtral's, but each copy's routing weight in bf16 (2 B): Granite casts the
        # router's probabilities back to the hidden states' dtype
        assert slots["e.index"] == (k * (8 + 8 + BF16 + 8) + 4 * n_exp / SEQ, None)
        _assert_exact_except(kind, {"s.act_in.gate", "s.act_in.up", "r.router", "e.index"})
    slots = _by_slot(mamba)
    assert slots["ssm.in"][0] == BF16 * (2 * d_in + 2 * groups * state + heads)
    assert slots["ssm.y"][0] == slots["ssm.out_in"][0] == BF16 * d_in and slots["ssm.rstd"][0] == 4 * groups
    assert not [s for s in slots if s.startswith(("a.q", "a.k", "a.v", "a.out", "a.fa"))]  # no attention in it


@torch_needed
def test_measured_data_kinds_load_as_kind_files(tmp_path, capsys):
    """`sapp measure -o` on a model priced by kinds described as data writes each on its root base with what the
    data kind adds besides slots, so the file loads as a kind file and keeps the Mamba-2 parameters and FLOPs."""
    from estimator import kinds

    folder = tmp_path / "kinds"
    folder.mkdir()
    assert main(["measure", str(_write(tmp_path, GRANITE_H)), "--seq-length", str(SEQ), "-o",
                 str(folder / "granite.yaml")]) == 0
    capsys.readouterr()
    saved = list(kinds._DIRS)
    try:
        kinds.add_kinds_dir(folder)
        got = kinds.get_kind("granitemoehybrid.mamba2_moe")
        assert got.base == "moe" and got.without == ("mixer",) and got.origin == "user"
        assert kinds.inherited(got) == kinds.inherited(kinds.get_kind("mamba2_moe"))
        assert {s.id for s in got.slots} >= {"ssm.in", "ssm.y", "ssm.rstd", "ssm.out_in"}
        assert kinds.get_kind("granitemoehybrid.moe").base == "moe"  # a shipped kind is written as itself
    finally:
        kinds._DIRS[:] = saved
        kinds._changed()
