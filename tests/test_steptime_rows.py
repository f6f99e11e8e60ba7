"""The step time's row and stage passes against a straightforward recomputation (P-SCALAR-SPEED 'Sixth session —
step time'): a row's times from its device-free ``RowWork`` and its comm from per-context values by
``comm_recipe`` key equal the row's formulas written out in full (below) on the plan's device and the band's
ends; a chunk's per-kind comm sums equal the fold over each row's kinds, its passes (``chunk_passes``) its
times'; the band ends' ``seconds_per_stage`` equals what ``timed_stages`` makes on that device, with the stage
sums from the chunk records or (seventh session) from what the chunks hold. Each equal to the float, on the
bundled examples and generated plans."""

from __future__ import annotations

import pytest
from fuzzing import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from scripted_session import config_sets, opened_plan

from estimator import (
    ModelSpec,
    RecomputePlan,
    RunOptions,
    ShardingSpec,
    Strategy,
    find_preset,
    rowtime,
    steptime,
)
from estimator import (
    comm as C,
)
from estimator.activations import option_switches
from estimator.assembly.form import stage_plan
from estimator.chunktime import chunk_holdings, chunk_passes, chunk_times
from estimator.errors import SappError
from estimator.flops import EMBEDDING_COPY, VISION_EXTRAS, moe_zero_memory_on
from estimator.layout import EMBEDDING, MTP, NOOP, OUTPUT, VISION, build_layout, layout_inputs
from estimator.resolve import resolve
from estimator.stage import StagePricer

BUNDLED = [(name, files, args) for name, files, args in config_sets(None)]
H100 = find_preset("H100-80G")


pytestmark = pytest.mark.usefixtures("nothing_kept")


# ------------------------------------------------------------------------------------------ the reference
def _comm(ctx, row, backward, flops) -> dict:
    """A row's exposed comm per kind, written out (as rowtime had it before the recipe)."""
    r, k, item = ctx.r, ctx.k, row.item
    par, f = r.par, r.flags
    kind = item.kind
    out: dict = {}
    if kind in (NOOP, EMBEDDING_COPY, VISION_EXTRAS):
        return out
    full = item.option == "full"
    exp_tp = 1 - k.o_tp
    if kind == EMBEDDING:
        if f.vocab_emb_dp:
            return out
        fwd, bwd = C.tp_embedding(ctx.M_h, ctx.tp, par.sp, positions=r.dims.n_pos > 0)
        out["tp"] = (exp_tp * fwd, exp_tp * bwd, 0.0)
        return out
    if kind == OUTPUT:
        fwd, bwd = C.tp_head(ctx.M_h, ctx.tp, par.sp)
        out["tp"] = (exp_tp * fwd, exp_tp * bwd, 0.0)
        return out
    if kind == VISION:
        M_v = r.widths.c * r.model.vision.hidden_size * ctx.fc.vision_tokens
        fwd, bwd = C.tp_layer(M_v, ctx.tp, par.sp, 0.0)
        out["tp"] = (exp_tp * fwd, exp_tp * bwd if backward else 0.0, 0.0)
        return out
    block = item.block if kind == MTP else kind
    regathers = 0.0 if ctx.pricer.acts.gathered(item.option) else 2.0
    off = option_switches(item.option, ctx.pricer.acts.sel) if item.option in ("selective", "both") else frozenset()
    moe_rc = block.endswith("moe") and "moe" in off
    ffn_rc = moe_rc or ("mlp" in off and not block.endswith("moe"))
    fwd, bwd = C.tp_layer(ctx.M_h, ctx.tp, par.sp, regathers)
    if kind == MTP:
        hf, hb = C.tp_head(ctx.M_h, ctx.tp, par.sp)
        fwd, bwd = fwd + hf, bwd + hb
    if f.feat.async_tp:
        mm_f = rowtime.mm_time(ctx, flops.fwd_mm, flops.fwd_fp8)
        mm_b = rowtime.mm_time(ctx, flops.bwd_mm + flops.wgrad_mm, flops.bwd_fp8 + flops.wgrad_fp8)
        a_f = rowtime.async_tp_exposed(fwd, mm_f, par.t) if par.sp else exp_tp * fwd
        a_b = rowtime.async_tp_exposed(bwd, mm_b, par.t) if par.sp else exp_tp * bwd
        out["tp"] = (a_f, a_b, a_f if full else a_f / 2 if ffn_rc else 0.0)
    else:
        out["tp"] = (exp_tp * fwd, exp_tp * bwd, exp_tp * fwd if full else exp_tp * fwd / 2 if ffn_rc else 0.0)
    if not block.startswith("lin_"):
        cp_f = cp_b = 0.0
        if f.cp_algo in ("ring", "hybrid"):
            rf, rb = C.cp_ring(ctx.M_kv, ctx.ring)
            cp_f, cp_b = cp_f + (1 - k.o_cp_ring) * rf, cp_b + (1 - k.o_cp_ring) * rb
        if f.cp_algo in ("ulysses", "hybrid"):
            uf, ub = C.cp_ulysses(ctx.M_qkv, ctx.M_o, ctx.uly)
            cp_f, cp_b = cp_f + (1 - k.o_cp_ulysses) * uf, cp_b + (1 - k.o_cp_ulysses) * ub
        if f.cp_algo == "allgather":
            af, ab = C.cp_allgather(ctx.M_kv, ctx.ring)
            cp_f, cp_b = cp_f + (1 - k.o_cp_allgather) * af, cp_b + (1 - k.o_cp_allgather) * ab
        out["cp"] = (cp_f, cp_b, cp_f if full else 0.0)
    if block.endswith("moe"):
        ef, eb = C.ep_layer(ctx.M_r, ctx.ep, ctx.etp)
        exp_ep = 1 - k.o_ep
        out["ep"] = (exp_ep * ef, exp_ep * eb, exp_ep * ef if full or moe_rc else 0.0)
    return out


def _row(ctx, row) -> tuple:
    """A row's (F, B, W, Rc, comm) written out from the one-term helpers, on the context's device."""
    k, item = ctx.k, row.item
    flops = rowtime.kept_flops(ctx, row)
    backward = not (item.kind in (VISION, VISION_EXTRAS) and row.local.frozen) and item.grad != "off"
    a_none = row.act_none
    rc_bytes = 0.0 if item.option == "none" else a_none if item.option == "full" else a_none - row.act
    hbm = ctx.rate_hbm
    nf4_bytes, cast = rowtime.dequantize_bytes(row, ctx), rowtime.fp8_cast_bytes(ctx, row)
    nf4 = 0.0 if nf4_bytes is None else nf4_bytes / hbm  # [T-COMP.nf4]
    cast_f, cast_b = (0.0, 0.0) if cast is None else (cast[0] / hbm, cast[1] / hbm)  # [T-COMP.fp8cast]
    mm = rowtime.mm_time

    def attn(ctx, flops):  # [T-COMP.attn] FLOPs × the critical rank's causal imbalance / the attention rate
        return flops * ctx.attn_imbalance / ctx.rate_attn

    def ew(k_ew, act_bytes, rate_hbm):  # [T-COMP.ew] k_ew·A / (hbm_Bps·eff_hbm)
        return k_ew * act_bytes / rate_hbm

    F = mm(ctx, flops.fwd_mm, flops.fwd_fp8) + attn(ctx, flops.fwd_attn) + ew(k.k_ew_fwd, a_none, hbm) + nf4 + cast_f
    B = mm(ctx, flops.bwd_mm, flops.bwd_fp8) + attn(ctx, flops.bwd_attn) + (
        ew(k.k_ew_bwd, a_none, hbm) + nf4 + cast_b if backward else 0.0)
    W = mm(ctx, flops.wgrad_mm, flops.wgrad_fp8)
    Rc = mm(ctx, flops.rc - flops.rc_attn, flops.rc_fp8) + attn(ctx, flops.rc_attn) + \
        ew(k.k_ew_fwd, rc_bytes, hbm) + (nf4 + cast_f if item.option == "full" else 0.0)
    comm = _comm(ctx, row, backward, flops)
    if row.cost.rebuilt:
        B = B + ew(k.k_ew_fwd, row.cost.rebuilt, hbm)
    if row.cost.rebuilt and moe_zero_memory_on(ctx.r.flags.feat, item):
        ef, eb, erc = comm.get("ep", (0.0, 0.0, 0.0))
        comm["ep"] = (ef, eb + (1 - k.o_ep) * (C.all_to_all(ctx.M_r, ctx.ep) + C.all_gather(ctx.M_r, ctx.etp)), erc)
    if row.cost.offload:
        comm["host"] = rowtime.offload_exposed(ctx, row.cost.offload, F, B + W)
    return F, B, W, Rc, comm


def _chunk(ctx, held) -> tuple:
    """A chunk's (F, B, W, Rc, fwd, bwd, recompute, comm per kind) summed from the written-out rows, each kind
    folded into F, B, Rc in the row's order and summed per kind over the rows that have it."""
    F = B = W = Rc = fwd = bwd = rec = 0.0
    comm = {"tp": 0.0, "cp": 0.0, "ep": 0.0, "host": 0.0}
    for n, _key, row in held.rows:
        f, b, w, rc, kinds = _row(ctx, row)
        f_ = b_ = rc_ = 0.0
        for kind, (cf, cb, crc) in kinds.items():
            f_, b_, rc_ = f_ + cf, b_ + cb, rc_ + crc
            comm[kind] = comm[kind] + n * (cf + cb + crc)
        F, B, W, Rc = F + n * (f + f_), B + n * (b + b_), W + n * w, Rc + n * (rc + rc_)
        fwd, bwd, rec = fwd + n * f, bwd + n * (b + w), rec + n * rc
    return F, B, W, Rc, fwd, bwd, rec, comm


# ------------------------------------------------------------------------------------------ the checks
def _check(r) -> None:
    """Rows and chunks on the plan's device, then on the band's ends (their RowWork and recipes the plan's); the
    band ends' per-stage seconds against ``timed_stages`` there."""
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    devices = [None] + ([r.hardware.at_band("high"), r.hardware.at_band("low")] if r.hardware.has_band else [])
    forms = {id(form): form for form, _entries in stage_plan(pricer.layout, r.dims.tie)}
    for hw in devices:
        ctx = steptime._kept_times(pricer, hw)[0]
        for form in forms.values():
            for j in range(r.par.vp):
                held = chunk_holdings(ctx, form, j, pricer.shared)
                for _n, _key, row in held.rows:
                    got = rowtime.row_time(ctx, row)
                    assert (got.F, got.B, got.W, got.Rc, got.comm) == _row(ctx, row), (row.item, hw)
                c = chunk_times(ctx, form, j, pricer.shared)
                assert (c.F, c.B, c.W, c.Rc, c.fwd, c.bwd, c.recompute, c.comm) == _chunk(ctx, held), (j, hw)
                assert tuple(chunk_passes(ctx, held)) == (c.F, c.B, c.W, c.Rc, c.fwd, c.bwd, c.recompute), (j, hw)
        if r.flags.schedule in steptime.S_ONLY:
            timed = steptime.timed_stages(pricer, hardware=hw)
            S, dp, opt = steptime.seconds_per_stage(pricer, hw)
            assert (S, dp, opt) == (timed.S, timed.dp_step, timed.t_opt), hw
            # a pricer whose stage sums the chunks' holdings make (no chunk records before): the same seconds
            first = StagePricer(r, build_layout(layout_inputs(r)))
            assert steptime.seconds_per_stage(first, hw) == (S, dp, opt), hw


@pytest.mark.parametrize("name,files,args", BUNDLED, ids=[b[0] for b in BUNDLED])
def test_rows_chunks_and_band_stages_of_every_bundled_example_equal_their_formulas(name, files, args):
    p = opened_plan(files, args)
    if p is None:
        pytest.skip("a config the session refuses to open is another test's subject")
    try:
        r = resolve(p.model, p.strategy, p.hardware, p.options)
    except SappError:
        pytest.skip("refused plan")
    _check(r)


MOE = ModelSpec(name="moe", hidden_size=2048, num_layers=8, num_attention_heads=16, num_kv_heads=4,
                ffn_hidden_size=5632, vocab_size=32000, num_experts=16, experts_per_token=2, moe_ffn_hidden_size=1024,
                first_k_dense=1)


@fuzz_settings(40)
@given(tp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2, 4]), vp=st.sampled_from([1, 2]),
       cp=st.sampled_from([1, 2]), mode=st.sampled_from(["none", "zero1", "zero3"]),
       rc=st.sampled_from(["none", "selective", "full"]),
       schedule=st.sampled_from([None, "gpipe", "zbv", "seq1f1b", "interleaved"]),
       framework=st.sampled_from(["megatron", "torchtitan", "mindformers"]))
def test_rows_chunks_and_band_stages_of_generated_plans_equal_their_formulas(tp, pp, vp, cp, mode, rc, schedule,
                                                                           framework):
    strategy = Strategy(seq_length=4096, tp=tp, pp=pp, vpp=vp if pp > 1 else 1, cp=cp, dp=2, micro_batches=8,
                        ep=2, sharding=ShardingSpec(mode=mode), recompute=RecomputePlan(default_mode=rc),
                        schedule=schedule)
    try:
        r = resolve(MOE, strategy, H100, RunOptions(framework=framework))
        _check(r)
    except SappError:
        return  # a refused plan has no step time


def test_a_recipe_key_names_everything_its_value_reads():
    """Rows of one plan that differ in what their comm reads get different ``comm_recipe`` keys and shares (a key
    that dropped the re-gathers would hand one row's comm to another, a share that dropped the recompute's part
    one row's recompute comm to another)."""
    strategy = Strategy(seq_length=4096, tp=4, pp=2, cp=2, dp=2, ep=2, micro_batches=8,
                        sharding=ShardingSpec(mode="zero1"),
                        recompute=RecomputePlan(default_mode="selective", full_counts=(1, 1), switches=("mlp", "moe")))
    r = resolve(MOE, strategy, H100, RunOptions(framework="megatron"))
    _check(r)
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    ctx = rowtime.TimeContext(pricer)
    keys: dict = {}
    shares: dict = {}
    for form, _entries in stage_plan(pricer.layout, r.dims.tie):
        for j in range(r.par.vp):
            for _n, _key, row in chunk_holdings(ctx, form, j, pricer.shared).rows:
                for kind, key, rc in rowtime.row_work(ctx, row, rowtime.row_key(row)).comm:
                    value = _comm(ctx, row, True, rowtime.kept_flops(ctx, row))[kind]
                    keys.setdefault(key, set()).add(value[:2])
                    shares.setdefault((key, rc), set()).add(value)
    assert all(len(values) == 1 for values in keys.values())
    assert all(len(values) == 1 for values in shares.values())
    assert {rc for key, rc in shares if key[0] == "layer"} == {"full", "half"}  # rows of two recompute shares


@fuzz_settings(40)
@given(fp8=st.sampled_from(["none", "tensorwise", "mxfp8"]), async_tp=st.booleans(),
       peft=st.sampled_from(["none", "qlora"]), offload=st.sampled_from([(), ("self_attention",), ("layer",)]),
       offload_params=st.booleans(), zero=st.sampled_from(["disable", "level0", "level1"]),
       overlap=st.sampled_from([None, True]), cp_algo=st.sampled_from([None, "ulysses", "hybrid", "allgather"]),
       balanced=st.sampled_from([None, False]), rc=st.sampled_from(["selective", "full"]),
       framework=st.sampled_from(["megatron", "torchtitan", "mindspeed", "mindformers"]))
def test_rows_chunks_and_band_stages_with_features_equal_their_formulas(fp8, async_tp, peft, offload, offload_params,
                                                                      zero, overlap, cp_algo, balanced, rc,
                                                                      framework):
    """FP8 casts, async TP, NF4 dequantisation, offloaded activations and shards, zero-memory MoE, the DP
    overlaps, each CP algorithm and an unbalanced causal split, a recomputed MLP: the terms a row's work and
    recipe carry besides the plain ones."""
    strategy = Strategy(seq_length=4096, tp=2, pp=2, cp=2, dp=2, ep=2, micro_batches=8, sequence_parallel=True,
                        sharding=ShardingSpec(mode="zero1"),
                        recompute=RecomputePlan(default_mode=rc, switches=("mlp",)), cp_load_balance=balanced,
                        fp8=fp8, async_tp=async_tp, peft=peft, lora_rank=8 if peft != "none" else 0,
                        offload_activations=offload, offload_params=offload_params, moe_zero_memory=zero,
                        overlap_grad_reduce=overlap, overlap_param_gather=overlap,
                        **({"cp_algo": cp_algo} if cp_algo else {}))
    try:
        r = resolve(MOE, strategy, H100, RunOptions(framework=framework))
    except SappError:
        return  # a refused combination has no step time
    _check(r)
