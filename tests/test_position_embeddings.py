"""Learned absolute position embeddings [P-POS] against a hand derivation from Megatron-LM's own module
(megatron/core/models/common/embeddings/language_model_embedding.py @ d98e8a6):

* ``position_embeddings = torch.nn.Embedding(max_sequence_length, hidden_size)`` — a serial module beside the
  vocabulary-parallel word embedding, so n_pos·h elements on every TP rank of the first stage (not ÷ t), and none on
  the last stage's copy of a tied word embedding (only ``word_embeddings`` is shared with the head);
* trained like any dense weight: bf16 parameters, fp32 main gradients, Adam's fp32 m and v and the fp32 master
  copy, the three optimizer tensors split over dp by the distributed optimizer;
* its backward (an embedding backward) keeps the int64 position ids of the micro-batch: 8 bytes per token;
* the add makes no matmul FLOPs; under sequence parallelism the word embedding all-reduces (its
  ``reduce_scatter_embeddings`` is off with a position table) and the scatter's backward all-gathers.
"""

from __future__ import annotations

import pytest

from estimator import ModelSpec, RunOptions, ShardingSpec, Strategy, estimate, find_preset
from estimator import comm as C
from estimator.explain import Quantity

H100 = find_preset("H100-80G")
H, N_POS, S = 1024, 2048, 2048
TABLE = N_POS * H  # 2,097,152 elements
GPT = ModelSpec(name="gpt-small", family="gpt3", hidden_size=H, num_layers=8, num_attention_heads=16,
                ffn_hidden_size=4 * H, vocab_size=50257, tie_embeddings=True)
PLAN = Strategy(tp=2, pp=2, dp=2, seq_length=S, micro_batch_size=1, micro_batches=8, sequence_parallel=True,
                sharding=ShardingSpec(mode="zero1"))
MEGATRON = RunOptions(framework="megatron")


def _pair():
    without = estimate(GPT, PLAN, H100, MEGATRON, explain=True)
    with_table = estimate(GPT.replace(learned_positions=N_POS), PLAN, H100, MEGATRON, explain=True)
    return without, with_table


def _find(q: Quantity, formula_id: str) -> list[Quantity]:
    return ([q] if q.formula_id == formula_id else []) + [x for c in q.children for x in _find(c, formula_id)]


def test_the_table_adds_its_static_bytes_to_the_first_stage_only():
    without, with_table = _pair()
    a, b = without.stages[0].bytes_by_category, with_table.stages[0].bytes_by_category
    assert b["parameters"] - a["parameters"] == pytest.approx(2 * TABLE)            # bf16, replicated over TP
    assert b["gradients"] - a["gradients"] == pytest.approx(4 * TABLE)              # fp32 main gradients
    assert b["optimizer_states"] - a["optimizer_states"] == pytest.approx(12 * TABLE / 2)  # m, v, master ÷ dp
    # the last stage's tied copy is the word embedding alone
    assert with_table.stages[1].bytes_by_category == without.stages[1].bytes_by_category
    assert with_table.parameters_total - without.parameters_total == TABLE


def test_the_position_ids_are_kept_per_micro_batch_in_flight():
    without, with_table = _pair()
    embedding = next(r for r in with_table.stages[0].layers if r.kind == "embedding")
    delta = with_table.stages[0].bytes_by_category["activations"] - without.stages[0].bytes_by_category["activations"]
    assert embedding.inflight == 2  # 1F1B, first of two stages
    assert delta == pytest.approx(8 * S * embedding.inflight)  # int64 ids, b·s tokens (not split by SP or TP)


def test_explain_names_the_position_table():
    _, with_table = _pair()
    tree = with_table.stages[0].explain
    assert tree is not None and tree.check() == []
    [positions] = _find(tree, "P-POS")  # under the embedding's parameter leaf: the elements of its E_d
    assert (positions.value, positions.unit) == (TABLE, "elements")
    assert positions.substituted().startswith(f"{N_POS}·{H} ")
    [words] = _find(tree, "P-EMB")
    parameters = next(q for q in _find(tree, "S-LAYER.params") if words in q.children)
    assert parameters.inputs["E_d"] == words.value + positions.value
    assert words.value == words.inputs["v_pad"] * H / 2  # vocabulary-parallel over t = 2
    assert _find(with_table.stages[1].explain, "P-POS") == []


def test_sequence_parallel_embedding_communication_with_a_position_table():
    link = C.Link(n=4, bw=100e9, alpha=5e-6)
    M = 64 * 2**20
    fwd, bwd = C.tp_embedding(M, link, 1, positions=True)
    assert fwd == pytest.approx(C.all_reduce(M, link)) and bwd == pytest.approx(C.all_gather(M, link))
    fwd, bwd = C.tp_embedding(M, link, 1)
    assert fwd == pytest.approx(C.reduce_scatter(M, link)) and bwd == pytest.approx(C.all_gather(M, link))
    fwd, bwd = C.tp_embedding(M, link, 0, positions=True)
    assert fwd == pytest.approx(C.all_reduce(M, link)) and bwd == 0
