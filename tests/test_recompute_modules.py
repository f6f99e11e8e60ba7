"""Megatron's whole-module selective recompute (``--recompute-modules mlp moe shared_experts``), from Megatron-LM's
TransformerLayer and MoELayer: "mlp", "moe" and "shared_experts" use normal checkpointing — the module runs under
``tensor_parallel.checkpoint(forward, False, pre_mlp_layernorm_output)``, so only its input (the pre-MLP norm output,
itself dropped when "layernorm" is recomputed too) is kept, and the backward runs the module's forward again: its
matmuls, and for the MoE layer its router, dispatch and combine. Derivations written here, per token at bf16."""

from __future__ import annotations

from pathlib import Path

import pytest
from format_helpers import variant

from estimator import ModelSpec, RunOptions, Strategy, estimate, find_preset
from estimator.estimate import layout_inputs
from estimator.flops import FlopContext, selective_flops
from estimator.formats import parse
from estimator.layout import build_layout
from estimator.resolve import resolve
from estimator.stage import StagePricer
from estimator.steptime import estimate_step_time
from estimator.strategy import RecomputePlan

H100 = find_preset("H100-80G")
H, F, A, KV, DH, V = 4096, 14336, 32, 8, 128, 128256
E, TOPK, F_EXP, F_SH = 64, 4, 1024, 2048
MOE = ModelSpec(name="moe", family="default", hidden_size=H, num_layers=4, num_attention_heads=A, num_kv_heads=KV,
                head_dim=DH, ffn_hidden_size=F, vocab_size=V, num_experts=E, experts_per_token=TOPK,
                moe_ffn_hidden_size=F_EXP, shared_ffn_hidden_size=F_SH, first_k_dense=1)
MEGATRON = RunOptions(framework="megatron")
ARRAYS = Path(__file__).resolve().parent / "fixtures" / "megatron" / "train_moe_mla_arrays.sh"


def _pricer(*modules: str) -> StagePricer:
    st = Strategy(seq_length=4096, dp=8, recompute=RecomputePlan(default_mode="selective", switches=modules))
    r = resolve(MOE, st, H100, MEGATRON)
    return StagePricer(r, build_layout(layout_inputs(r)))


def _kept(pricer: StagePricer, kind: str) -> dict[str, float]:
    sums = pricer.acts.sums(kind, "selective")
    return {"token": sums.sp + sums.tp + sums.rep, "routed": sums.exp + sums.expt}


def test_recomputing_the_dense_mlp_keeps_only_its_input():
    core, mlp = _kept(_pricer("core_attn"), "dense"), _kept(_pricer("core_attn", "mlp"), "dense")
    # gate and up projections (SwiGLU's two branches), the SiLU product that fc2 reads, and SiLU's output unless the
    # activation is fused: 2 B each per element of the FFN width
    fused = _pricer("core_attn").r.flags.fused_act
    assert core["token"] - mlp["token"] == 2 * F * (3 if fused else 4)


def test_recomputing_the_moe_layer_keeps_only_its_input():
    pricer = _pricer("core_attn", "moe")
    moe, dense = _kept(pricer, "moe"), _kept(pricer, "dense")
    both = _kept(_pricer("core_attn", "moe", "mlp"), "dense")
    assert moe["routed"] == 0  # nothing of the routed experts, the dispatched tokens or their outputs
    assert moe["token"] == both["token"]  # the attention half and the MLP input: what a checkpointed dense MLP keeps
    assert dense == _kept(_pricer("core_attn"), "dense")  # "moe" leaves the dense layers alone
    # "shared_experts" alone drops the shared experts' gate, up and SiLU product (and SiLU output unfused)
    shared = _kept(_pricer("core_attn", "shared_experts"), "moe")
    full = _kept(_pricer("core_attn"), "moe")
    fused = pricer.r.flags.fused_act
    assert full["token"] - shared["token"] == 2 * F_SH * (3 if fused else 4)
    assert shared["routed"] == full["routed"] > 0


def test_layernorm_with_moe_drops_the_checkpoint_input_too():
    pricer = _pricer("core_attn", "moe", "layernorm")
    with_norm = _kept(pricer, "moe")
    stats = 2 * 4 if pricer.r.flags.norm_stats else 0  # the two norms' fp32 statistics per token
    assert _kept(_pricer("core_attn", "moe"), "moe")["token"] - with_norm["token"] == 2 * H * 2 + stats


def test_the_backward_runs_the_module_forward_again():
    pricer = _pricer("core_attn", "mlp", "moe")
    r = pricer.r
    T, R = 4096, 4096 * TOPK
    c = FlopContext(dims=r.dims, flags=r.flags, T=T, R=R, s=4096, t=1, etp=1, v_pad=V, kappa=0.5, bwd_attn=2.5,
                    sel=pricer.acts.sel)
    base = FlopContext(dims=r.dims, flags=r.flags, T=T, R=R, s=4096, t=1, etp=1, v_pad=V, kappa=0.5, bwd_attn=2.5,
                       sel=frozenset({"core"}))
    assert selective_flops(c, "dense", "selective") - selective_flops(base, "dense", "selective") == \
        2 * T * 3 * H * F
    assert selective_flops(c, "moe", "selective") - selective_flops(base, "moe", "selective") == \
        2 * T * 3 * H * F_SH + 2 * T * H * E + 2 * R * 3 * H * F_EXP


def test_a_megatron_script_prices_them_without_a_warning(tmp_path):
    plain = parse([str(ARRAYS)])
    path = variant(tmp_path, ARRAYS, ("--recompute-modules core_attn mla_up_proj)",
                                      "--recompute-modules core_attn mla_up_proj mlp moe)"))
    parsed = parse([path])
    assert parsed.strategy.recompute.switches == ("core_attn", "mla_up_proj", "mlp", "moe")
    assert not [w for w in parsed.warnings if "recompute" in w.text]
    lower = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options)
    higher = estimate(plain.model, plain.strategy, plain.hardware, plain.options)
    assert lower.stages[0].bytes_by_category["activations"] < higher.stages[0].bytes_by_category["activations"]


@pytest.mark.parametrize("modules", [("mlp",), ("moe",), ("shared_experts",)])
def test_the_step_time_counts_the_recompute(modules):
    def recompute_seconds(*mods: str) -> float:
        st = Strategy(seq_length=4096, dp=8, recompute=RecomputePlan(default_mode="selective", switches=mods))
        return estimate_step_time(MOE, st, H100, MEGATRON).parts["recompute"]
    assert recompute_seconds("core_attn", *modules) > recompute_seconds("core_attn")


def test_a_recomputed_moe_layer_dispatches_again():
    def exposed(*mods: str) -> dict:
        st = Strategy(seq_length=4096, dp=8, ep=8, tp=2, sequence_parallel=True,
                      recompute=RecomputePlan(default_mode="selective", switches=mods))
        return estimate_step_time(MOE, st, H100, MEGATRON).parts
    base, moe, shared = exposed("core_attn"), exposed("core_attn", "moe"), exposed("core_attn", "shared_experts")
    assert moe["ep"] > base["ep"] and moe["tp"] > base["tp"]  # dispatch + combine, the MLP half's TP collectives
    assert shared["ep"] == base["ep"]
