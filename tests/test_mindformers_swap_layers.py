"""MindFormers swap_config write-backs (issue 11): with ``swap_config.swap`` on, MindFormers' LayerSetting reads
the recompute lists and the layer_swap/op_swap ``layers`` as global layer ids (mindformers/models/utils.py:
``_format_recompute_list_select_layer_index``, ``_set_layer_swap`` checks ``layer_id in layers``), placed by
``num_layers // (pp·vpp)`` plus the offset, chunk-major. So the swap lists stay valid at any pipeline degree (kept
as written), and the recompute lists are read and written as layer ids, not per-stage counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator.errors import ConfigError
from estimator.export import export
from estimator.formats import parse
from estimator.formats.mindformers_features import counts_of_layers, layer_slots, layers_of_counts
from estimator.parsed import apply_changes

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "mindformers" / "swap_layers.yaml"
SWAP_BLOCK = FIXTURE.read_text(encoding="utf-8").split("swap_config:")[1]


def _copy(tmp_path: Path, text: str | None = None) -> Path:
    path = tmp_path / "swap.yaml"
    path.write_text(text if text is not None else FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def test_layer_slots_follow_mindformers_layer_setting() -> None:
    """Hand placement: 8 layers, pp 4 → [0,2) [2,4) [4,6) [6,8); pp 2 × vpp 2 chunk-major → chunk 0: [0,2) [2,4),
    chunk 1: [4,6) [6,8); an offset [1, -1] at pp 2 of 8 layers → [0,5) [5,8)."""
    assert layer_slots(8, 4, 1, 0) == [[range(0, 2), range(2, 4), range(4, 6), range(6, 8)]]
    assert layer_slots(8, 2, 2, 0) == [[range(0, 2), range(2, 4)], [range(4, 6), range(6, 8)]]
    assert layer_slots(8, 2, 1, (1, -1)) == [[range(0, 5), range(5, 8)]]
    assert counts_of_layers([1, 2], layer_slots(8, 4, 1, 0)) == (1, 1, 0, 0)
    assert counts_of_layers([0, 5], layer_slots(8, 2, 2, 0)) == ((1, 0), (1, 0))
    assert layers_of_counts((2, 0), layer_slots(8, 2, 1, 0)) == [0, 1]
    assert layers_of_counts(1, layer_slots(8, 2, 2, 0)) == [0, 2, 4, 6]
    assert layers_of_counts((True, 1), layer_slots(8, 2, 1, 0)) == [0, 1, 2, 3, 4]  # True: the whole stage


def test_recompute_under_swap_is_read_as_layer_ids() -> None:
    st = parse([FIXTURE]).strategy
    assert st.pp == 8 and st.recompute.full_counts == (0, 1, 1, 0, 0, 0, 0, 0)  # layers 1 and 2: stages 1 and 2
    assert set(st.offload_activations) == {"layer", "self_attention"}


def test_layer_ids_outside_the_model_are_refused(tmp_path) -> None:
    path = _copy(tmp_path, FIXTURE.read_text(encoding="utf-8").replace("recompute: [1, 2]", "recompute: [1, 9]"))
    with pytest.raises(ConfigError, match=r"recompute_config\.recompute.*layer ids; \[9\] are not layers"):
        parse([path])


def test_pp_8_to_4_keeps_the_swap_lists_and_writes_recompute_as_layer_ids(tmp_path) -> None:
    path = _copy(tmp_path)
    parsed = parse([path])
    text = export(apply_changes(parsed, {"strategy.pp": 4, "strategy.dp": 2, "strategy.micro_batches": 8}))[str(path)]
    assert text.split("swap_config:")[1] == SWAP_BLOCK  # global layer ids: valid at any pipeline degree
    assert "pipeline_stage: 4" in text and "recompute: [0, 2]" in text  # stages [0,2) [2,4): one layer each
    path.write_text(text, encoding="utf-8")
    again = parse([path]).strategy
    assert again.recompute.full_counts == (1, 1, 0, 0)  # the rescaled counts, read back equal
    assert again.offload_activations == parsed.strategy.offload_activations


def test_turning_swap_on_rewrites_per_stage_counts_as_layer_ids(tmp_path) -> None:
    """A file without swap states per-stage counts; once the export turns swap on, MindFormers would read those
    numbers as layer ids, so they are rewritten."""
    text = FIXTURE.read_text(encoding="utf-8").split("swap_config:")[0].replace(
        "recompute: [1, 2]", "recompute: [1, 1, 0, 0, 0, 0, 0, 0]")
    path = _copy(tmp_path, text)
    parsed = parse([path])
    assert parsed.strategy.recompute.full_counts == (1, 1, 0, 0, 0, 0, 0, 0)
    on = export(apply_changes(parsed, {"strategy.offload_activations": ("self_attention",)}))[str(path)]
    assert "swap_config:\n  swap: True" in on and "recompute: [0, 1]" in on  # layer 0 of stage 0, layer 1 of 1
    path.write_text(on, encoding="utf-8")
    again = parse([path]).strategy
    assert again.recompute.full_counts == parsed.strategy.recompute.full_counts
    assert again.offload_activations == ("self_attention",)
