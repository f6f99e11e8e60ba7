"""Freeze (partial-parameter) fine-tuning (issue 11, [A-FREEZE], docs/decisions.md D-FREEZE): LLaMA-Factory's
``finetuning_type: freeze`` priced layer by layer. Hand derivations from LLaMA-Factory's model/adapter.py
(``_setup_freeze_tuning``: which parameters train, the fp32 cast of the trainable ones only) and
model_utils/checkpointing.py (``get_custom_gradient_checkpointing_func``: a layer without trainable weights runs
unchecked), and from autograd (a layer records a graph only when its input or its weights need a gradient)."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator.balance import balance
from estimator.balance.tables import StageTables
from estimator.device.ratio import with_slack_ratio
from estimator.errors import ConfigError, StrategyError
from estimator.estimate import estimate
from estimator.formats import parse
from estimator.layout import build_layout, layout_inputs
from estimator.parsed import apply_changes
from estimator.resolve import resolve
from estimator.stage import StagePricer

GiB = 2 ** 30
# Qwen/Qwen3-8B (config.json): 36 layers, h 4096, 32 heads and 8 KV heads of 128, SwiGLU 12288, q/k RMSNorm,
# vocabulary 151936, untied head
L, H, FFN, Q, KV, DH, V = 36, 4096, 12288, 32 * 128, 8 * 128, 128, 151936
LAYER = H * (Q + KV + KV) + Q * H + 2 * DH + 3 * H * FFN + 2 * H  # q k v o, q/k norms, gate up down, two norms
REST = 2 * V * H + H  # embedding, head, final norm
TOKENS = 4 * 2048  # per_device_train_batch_size × cutoff_len

YAML = (Path(__file__).resolve().parent / "fixtures" / "llamafactory" / "qwen3_freeze_sft.yaml").read_text(
    encoding="utf-8")


def _parse(tmp_path: Path, extra: str = ""):
    path = tmp_path / "freeze.yaml"
    path.write_text(YAML + extra, encoding="utf-8")
    return parse([str(path)], devices=8)


def _stage(parsed, **changes):
    st = parsed.strategy.replace(**changes) if changes else parsed.strategy
    return estimate(parsed.model, st, parsed.hardware, parsed.options).stages[0]


def test_last_two_layers_static_memory(tmp_path) -> None:
    """freeze_trainable_layers 2 (the default): layers 34 and 35 train in fp32 (4 B weights, 4 B gradients, two
    fp32 Adam states, no master copy under autocast); the other 34 layers, the embedding and the head stay bf16
    without gradient or optimizer state."""
    parsed = _parse(tmp_path)
    assert parsed.strategy.trainable_layers == (-2, -1)
    got = _stage(parsed).bytes_by_category
    assert got["parameters"] == pytest.approx(4 * 2 * LAYER + 2 * ((L - 2) * LAYER + REST))
    assert got["gradients"] == pytest.approx(4 * 2 * LAYER)
    assert got["optimizer_states"] == pytest.approx(2 * 4 * 2 * LAYER)
    full = _stage(parsed, trainable_layers=None, frozen_modules=()).bytes_by_category  # the old upper bound
    assert full["gradients"] == pytest.approx(4 * (L * LAYER + REST))


def test_frozen_layers_below_the_first_trainable_one_save_nothing(tmp_path) -> None:
    """With gradient checkpointing (LLaMA-Factory's default) a trainable layer keeps its bf16 input, T·h·2 bytes;
    the 34 frozen layers before layer 34 get an input that needs no gradient and weights that need none, so
    autograd records nothing there: the activations drop by 34 layer inputs against full fine-tuning, and those
    layers have no backward (B = W = Rc = 0)."""
    parsed = _parse(tmp_path)
    st = parsed.strategy
    assert st.checkpoint_trainable_only and st.recompute.default_mode == "full"
    frozen = _stage(parsed).bytes_by_category["activations"]
    full = _stage(parsed, trainable_layers=None, frozen_modules=()).bytes_by_category["activations"]
    assert full - frozen == pytest.approx((L - 2) * TOKENS * H * 2)
    r = resolve(parsed.model, st, parsed.hardware, parsed.options)
    layout = build_layout(layout_inputs(r))
    grads = {it.index: it.grad for it in layout.slots[0].items if it.index >= 0}
    assert grads == {i: ("off" if i < L - 2 else None) for i in range(L)}
    from estimator.rowtime import TimeContext, row_time
    from estimator.stage import stage_rows

    pricer = StagePricer(r, layout)
    ctx = TimeContext(pricer)
    rows = {row.item.index: row for row in stage_rows(pricer, 0)}
    off, trained = row_time(ctx, rows[0]), row_time(ctx, rows[L - 1])
    assert off.B == off.W == off.Rc == 0 and pytest.approx(trained.F) == off.F
    assert trained.B > 0 and trained.W > 0 and trained.Rc > 0


def test_frozen_layers_after_a_trainable_one_keep_what_input_gradients_need(tmp_path) -> None:
    """freeze_trainable_layers −2: layers 0 and 1 train, layers 2…35 are frozen behind them. LLaMA-Factory runs
    them unchecked (its checkpointing wraps trainable layers only), and autograd saves what their input
    gradients read: everything a plain layer saves less the inputs of its frozen linears (the q/k/v and gate/up
    inputs, the norm outputs, 2 × β_c·h; the down projection's input, β_c·hff = 6·h bytes) and the norms'
    pre-weight copies (2 × β_c·h), which only weight gradients read: 14·h bytes per token fewer."""
    parsed = _parse(tmp_path, "freeze_trainable_layers: -2\n")
    st = parsed.strategy
    assert st.trainable_layers == (0, 1)
    r = resolve(parsed.model, st, parsed.hardware, parsed.options)
    layout = build_layout(layout_inputs(r))
    items = {it.index: it for it in layout.slots[0].items if it.index >= 0}
    assert (items[0].option, items[0].grad) == ("full", None)
    assert (items[2].option, items[2].grad) == ("none", "frozen")  # not checkpointed
    pricer = StagePricer(r, layout)
    plain = pricer.activation(items[0], "none")
    assert pricer.activation(items[2]) == pytest.approx(plain - 14 * H * TOKENS)
    # and the weight gradients of a frozen layer are not computed (W = 0), its input gradients are (B > 0)
    from estimator.rowtime import TimeContext, row_time
    from estimator.stage import stage_rows

    rows = {row.item.index: row for row in stage_rows(pricer, 0)}
    frozen = row_time(TimeContext(pricer), rows[2])
    assert frozen.W == 0 and frozen.B > 0


def test_llama_pro_and_module_groups(tmp_path) -> None:
    """use_llama_pro with 4 trainable layers of 36: stride 9, layers 8, 17, 26, 35; freeze_trainable_modules mlp:
    only their gate/up/down weights (3·h·hff each) train."""
    parsed = _parse(tmp_path, "use_llama_pro: true\nfreeze_trainable_layers: 4\nfreeze_trainable_modules: mlp\n")
    st = parsed.strategy
    assert st.trainable_layers == (8, 17, 26, 35) and st.trainable_parts == ("mlp",)
    got = _stage(parsed).bytes_by_category
    mlp = 3 * H * FFN
    assert got["gradients"] == pytest.approx(4 * 4 * mlp)
    assert got["optimizer_states"] == pytest.approx(8 * 4 * mlp)
    assert got["parameters"] == pytest.approx(4 * 4 * mlp + 2 * (L * LAYER - 4 * mlp + REST))
    with pytest.raises(ConfigError, match="divisible"):
        _parse(tmp_path, "use_llama_pro: true\nfreeze_trainable_layers: 5\n")


def test_extra_modules_train_the_embedding_and_head(tmp_path) -> None:
    """freeze_extra_modules embed_tokens,lm_head: both tables train (fp32, gradients, states) — the head's row
    carries the final norm (h elements, which LLaMA-Factory leaves frozen: priced trainable with the head); with
    the embedding trainable every layer records a graph, so no layer is 'off'."""
    parsed = _parse(tmp_path, "freeze_extra_modules: embed_tokens,lm_head\n")
    assert parsed.strategy.frozen_modules == ()
    got = _stage(parsed).bytes_by_category
    assert got["gradients"] == pytest.approx(4 * (2 * LAYER + 2 * V * H + H))
    r = resolve(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    grads = {it.grad for it in build_layout(layout_inputs(r)).slots[0].items if it.index >= 0}
    assert grads == {None, "frozen"}
    said = _parse(tmp_path, "freeze_extra_modules: norm\n").warnings
    assert any(w.code == "W-NOT-PRICED" and "norm" in w.text for w in said)


def test_freeze_and_lora_are_refused_together(tmp_path) -> None:
    parsed = apply_changes(_parse(tmp_path), {"strategy.peft": "lora", "strategy.lora_rank": 8,
                                               "strategy.lora_targets": ("q", "v")})
    with pytest.raises(StrategyError, match="trainable_layers"):
        estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)


PLAN = Path(__file__).resolve().parent / "fixtures" / "kinds" / "house_llama.plan.yaml"


def _plan(**more):
    changes = {"model.num_layers": 16, "strategy.pp": 2, "strategy.dp": 1, "strategy.trainable_layers": (5, 9, 14),
               "strategy.frozen_modules": ("embedding", "output"), "strategy.recompute": "none"}
    changes.update(more)
    return apply_changes(parse([PLAN]), changes)


def test_the_balancer_prices_the_frozen_layers_as_the_estimate() -> None:
    """A candidate stage is priced by its layers' model indices: the balanced plan's stages, estimated with the
    same allocator slack per byte (P-SLACK-RATIO), cost what the balancer's tables said."""
    parsed = _plan()
    res = balance(parsed)
    tables = StageTables(parsed, ("none",))
    fixed = with_slack_ratio(parsed)
    after = estimate(fixed.model, res.strategy, fixed.hardware, fixed.options)
    start = 0
    for i, count in enumerate(res.counts):
        chosen = [ch for ch in tables.choices(i, start, count) if ch.assignment.full == 0]
        assert chosen[0].memory == pytest.approx(after.stages[i].total)
        start += count


def test_a_pipeline_change_keeps_the_trainable_layers() -> None:
    """Model indices: at pp 4 the trainable layers 5, 9, 14 sit on stages 1, 2 and 3; stage 0 (layers 0…3, all
    before the first trainable one) has no graph: no gradients, no layer activations."""
    parsed = _plan(**{"strategy.pp": 4})
    stages = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options).stages
    assert stages[0].bytes_by_category["gradients"] == 0
    assert stages[1].bytes_by_category["gradients"] > 0
    r = resolve(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    first = build_layout(layout_inputs(r)).slots[0].items
    assert all(it.grad == "off" for it in first if it.index >= 0)


def test_fsdp2_says_its_gradients_are_an_upper_bound() -> None:
    parsed = apply_changes(parse([PLAN]), {"options.framework": "torchtitan", "strategy.sharding": "fsdp",
                                           "strategy.trainable_layers": (3,)})
    res = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    assert any(w.code == "W-UNMODELLED" and "FSDP2" in w.text for w in res.warnings)


def _export_yaml(parsed, changes: dict) -> str:
    from estimator.export import export

    texts = export(apply_changes(parsed, changes))
    assert len(texts) == 1
    return next(iter(texts.values()))


def test_export_writes_the_freeze_keys_that_train_the_chosen_layers(tmp_path) -> None:
    """A what-if on the trainable layers writes the freeze_trainable_layers (and use_llama_pro) value that makes
    LLaMA-Factory's _setup_freeze_tuning train exactly them; the written file reads back to the same plan."""
    parsed = _parse(tmp_path)
    last4 = _export_yaml(parsed, {"strategy.trainable_layers": (-4, -3, -2, -1)})
    assert "freeze_trainable_layers: 4" in last4 and "finetuning_type: freeze" in last4
    assert "freeze_trainable_layers: 4" in _export_yaml(parsed, {"strategy.trainable_layers": (32, 33, 34, 35)})
    first3 = _export_yaml(parsed, {"strategy.trainable_layers": (0, 1, 2)})
    assert "freeze_trainable_layers: -3" in first3
    # every 9th layer of 36 (the last of 4 blocks): LLaMA Pro's expansion layers
    pro = _export_yaml(parsed, {"strategy.trainable_layers": (8, 17, 26, 35)})
    assert "freeze_trainable_layers: 4" in pro and "use_llama_pro: true" in pro
    (tmp_path / "freeze.yaml").write_text(pro, encoding="utf-8")
    assert parse([str(tmp_path / "freeze.yaml")], devices=8).strategy.trainable_layers == (8, 17, 26, 35)
    parts = _export_yaml(parsed, {"strategy.trainable_parts": ("mlp",), "strategy.frozen_modules": ("output",)})
    assert 'freeze_trainable_modules: "mlp"' in parts and 'freeze_extra_modules: "embed_tokens"' in parts
    assert "freeze_trainable_layers" not in parts  # LLaMA-Factory's default (2) left as the file has it
    every = _export_yaml(parsed, {"strategy.trainable_layers": tuple(range(-36, 0))})  # head and embedding frozen
    assert "freeze_trainable_layers: 36" in every
    with pytest.raises(ConfigError, match="freeze_trainable_layers 36"):
        _export_yaml(parsed, {"strategy.trainable_layers": None})
    full = _export_yaml(parsed, {"strategy.trainable_layers": None, "strategy.frozen_modules": ()})
    assert "finetuning_type: full" in full


def test_export_refuses_a_layer_set_llamafactory_cannot_train_and_plan_files_keep_it(tmp_path) -> None:
    from estimator.export import export

    parsed = _parse(tmp_path)
    with pytest.raises(ConfigError, match="freeze_trainable_layers") as caught:
        export(apply_changes(parsed, {"strategy.trainable_layers": (3, 10)}))
    assert "3, 10" in str(caught.value) and "freeze.yaml" in str(caught.value)
    plan = tmp_path / "house.plan.yaml"
    plan.write_text(PLAN.read_text(encoding="utf-8"), encoding="utf-8")
    edited = apply_changes(parse([plan]), {"strategy.trainable_layers": (-1, 0), "strategy.trainable_parts": ("mlp",),
                                           "strategy.frozen_param_bytes": 2})
    plan.write_text(export(edited)[str(plan)], encoding="utf-8")
    again = parse([plan]).strategy
    assert (again.trainable_layers, again.trainable_parts, again.frozen_param_bytes) == ((-1, 0), ("mlp",), 2.0)
