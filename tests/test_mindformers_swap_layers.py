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
from estimator.strategy import RecomputeRange

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
    """Under swap the recompute list names layers 1 and 2: kept as those layers (a range), not per-stage counts,
    so that the layers it names and the swapped ones stay what the file says at any pipeline layout."""
    st = parse([FIXTURE]).strategy
    assert st.pp == 8 and st.recompute.ranges == (RecomputeRange(1, 2, "full"),)
    assert st.recompute.full_counts is None
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
    assert "pipeline_stage: 4" in text and "recompute: [1, 2]" in text  # the same layers, at any pp
    path.write_text(text, encoding="utf-8")
    again = parse([path]).strategy
    assert again.recompute == parsed.strategy.recompute
    assert again.offload_activations == parsed.strategy.offload_activations
    assert again.offload_layers == parsed.strategy.offload_layers


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
    assert again.recompute.ranges == (RecomputeRange(0, 2, "full"),)  # the layers the counts placed
    assert again.offload_activations == ("self_attention",)


# -------------------------------------------------------------------------------- pricing the listed layers
def test_swap_lists_price_only_the_listed_layers() -> None:
    """The fixture swaps whole layers 0 and 4 (layer_swap) and the attention of layers 5 and 6 (op_swap), at pp 8
    with one layer per stage and 16 micro-batches. Hand derivation: 1F1B keeps p − i = 8 − i micro-batches in
    flight at stage i's peak, so host(i) = (8 − i)·A_swapped(layer) and device(i) + host(i) = the unswapped
    plan's activations: stage 0 → 8·A_layer, stage 4 → 4·A_layer, stage 5 → 3·A_attn, stage 6 → 2·A_attn, stages
    1, 2 (full recompute: swap does not act), 3 and 7 (not listed) → 0. A_layer from the unswapped plan's stage 3
    (5 in flight), which no list names."""
    from estimator.estimate import estimate

    parsed = parse([FIXTURE])
    st = parsed.strategy
    assert {(o.group, o.layers) for o in st.offload_layers} == {("layer", (0, 4)), ("self_attention", (5, 6))}
    assert not any(w.code == "W-UNMODELLED" for w in parsed.warnings)  # priced as listed: no lower-bound warning
    res = estimate(parsed.model, st, parsed.hardware, parsed.options)
    plain = estimate(parsed.model, st.replace(offload_activations=()), parsed.hardware, parsed.options)
    host = [s.host_bytes["activations"] for s in res.stages]
    act = [s.bytes_by_category["activations"] for s in res.stages]
    act0 = [s.bytes_by_category["activations"] for s in plain.stages]
    a_layer = act0[3] / 5
    assert act0[4] == pytest.approx(4 * a_layer)
    assert host[0] == pytest.approx(8 * a_layer) and host[4] == pytest.approx(4 * a_layer)
    assert act[4] == 0 and host[1] == host[2] == host[3] == host[7] == 0
    a_attn = host[5] / 3
    assert 0 < a_attn < a_layer and host[6] == pytest.approx(2 * a_attn)
    for i in range(8):
        assert act[i] + host[i] == pytest.approx(act0[i])
    # the old reading (every layer swapping both groups) put 8·A_layer on the host at every stage 0 … 7 − i
    every = estimate(parsed.model, st.replace(offload_layers=()), parsed.hardware, parsed.options)
    assert every.stages[3].host_bytes["activations"] == pytest.approx(5 * a_layer)


def test_a_pipeline_change_keeps_the_listed_layers(tmp_path) -> None:
    """Global layer ids: at pp 4 stage 0 holds layers 0, 1 (0 swapped, 1 recomputed) and stage 2 holds 4, 5; with 8
    micro-batches stage i keeps 4 − i in flight: host(0) = 4·A_layer, host(2) = 2·(A_layer + A_attn)."""
    from estimator.estimate import estimate

    parsed = apply_changes(parse([FIXTURE]), {"strategy.pp": 4, "strategy.dp": 2, "strategy.micro_batches": 8})
    assert parsed.strategy.offload_layers == parse([FIXTURE]).strategy.offload_layers
    res = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    ref = parse([FIXTURE])
    one = estimate(ref.model, ref.strategy, ref.hardware, ref.options)
    a_layer, a_attn = one.stages[4].host_bytes["activations"] / 4, one.stages[6].host_bytes["activations"] / 2
    host = [s.host_bytes["activations"] for s in res.stages]
    assert host[0] == pytest.approx(4 * a_layer) and host[1] == 0
    assert host[2] == pytest.approx(2 * (a_layer + a_attn))
    assert host[3] == pytest.approx(1 * a_attn)  # layer 6 (attention) with layer 7


def test_a_change_of_the_lists_is_refused_on_export(tmp_path) -> None:
    path = _copy(tmp_path)
    parsed = parse([path])
    with pytest.raises(ConfigError, match="offload_layers"):
        export(apply_changes(parsed, {"strategy.offload_layers": {"layer": [0, 1, 4]}}))


def test_plan_field_offload_layers_is_checked(tmp_path) -> None:
    from estimator.errors import LayoutError
    from estimator.estimate import estimate

    parsed = apply_changes(parse([FIXTURE]), {"strategy.offload_layers": {"layer": [0, 8]}})
    with pytest.raises(LayoutError, match=r"layer 8, outside the model's layers 0\.\.7"):
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    with pytest.raises(ConfigError, match="offload_layers"):
        apply_changes(parse([FIXTURE]), {"strategy.offload_layers": {"everything": [0]}})
    both = apply_changes(parse([FIXTURE]), {"strategy.offload_counts": 1})
    with pytest.raises(LayoutError, match="both pick the layers"):
        estimate(both.model, both.strategy, both.hardware, both.options)


MCORE = Path(__file__).resolve().parent / "fixtures" / "mindformers" / "tiny_mcore_moe.yaml"


def _mcore(tmp_path: Path, swap: str, recompute: str = "[1, 1]") -> Path:
    text = MCORE.read_text(encoding="utf-8").replace("recompute: [1, 1]", f"recompute: {recompute}")
    path = tmp_path / "mcore.yaml"
    path.write_text(text + "\nswap_config:\n  swap: True\n" + swap, encoding="utf-8")
    return path


def test_mcore_mtp_follows_the_last_layer_id(tmp_path) -> None:
    """MindFormers mcore (b14a730+) sets every MTP layer with ``layer_setting(mtp_layer, num_layers - 1)``: listing
    layer 3 of this 4-layer model swaps the MTP module (model index 4) too; listing 4 (the legacy MTP id) names no
    layer — accepted with a warning, not refused."""
    from estimator.layout import build_layout, layout_inputs
    from estimator.resolve import resolve

    path = _mcore(tmp_path, "  layer_swap:\n    - backward_prefetch: 1\n      layers: [3, 4]\n", "[0, 4]")
    parsed = parse([path])
    st = parsed.strategy
    assert st.offload_layers[0].layers == (3, 4)  # layer 3 and, through its id, the MTP module
    codes = [w.code for w in parsed.warnings]
    assert codes.count("W-MF-MTP-LAYER-ID") == 2  # swap_config and recompute_config each list id 4
    assert st.recompute.ranges == (RecomputeRange(0, 1, "full"),)  # layer 0 only: id 4 is no layer
    layout = build_layout(layout_inputs(resolve(parsed.model, st, parsed.hardware, parsed.options)))
    offload = {it.index: it.offload for s in layout.slots for it in s.items if it.index >= 0}
    assert offload == {0: False, 1: False, 2: False, 3: ("layer",), 4: ("layer",)}


def test_ids_past_the_mtp_layers_are_still_refused(tmp_path) -> None:
    path = _mcore(tmp_path, "  op_swap:\n    - op_name: 'attention'\n      backward_prefetch: 1\n      layers: [5]\n")
    with pytest.raises(ConfigError, match=r"swap_config\.op_swap\.0\.layers.*\[5\] are not layers"):
        parse([path])


def test_turning_swap_off_writes_the_listed_layers_as_per_stage_counts(tmp_path) -> None:
    """Swap off, MindFormers reads recompute lists as per-stage counts: layers 1 and 2 (stages 1 and 2 at pp 8)
    become [0, 1, 1, 0, 0, 0, 0, 0]."""
    path = _copy(tmp_path)
    off = export(apply_changes(parse([path]), {"strategy.offload_activations": ()}))[str(path)]
    assert "swap: False" in off and "recompute: [0, 1, 1, 0, 0, 0, 0, 0]" in off
    path.write_text(off, encoding="utf-8")
    again = parse([path]).strategy
    assert again.recompute.full_counts == (0, 1, 1, 0, 0, 0, 0, 0) and again.offload_activations == ()
