"""Transformer Engine's cuBLASLt workspaces in [D-WORKSPACE] (issue 10): sizes from TE's source
(``get_cublas_workspace_size_bytes``: 32 MiB + 1 KiB on compute capability ≥ 9.0, 4 MiB below; grouped GEMM: one
per compute stream, 4), when a run uses TE, and that the allocator's trace holds them."""

from __future__ import annotations

from pathlib import Path

from estimator.device.trace import stage_trace
from estimator.device.workspaces import library_workspaces, uses_transformer_engine
from estimator.estimate import estimate, layout_inputs
from estimator.formats import parse
from estimator.hardware import find_preset
from estimator.layout import build_layout
from estimator.messages import CHINESE
from estimator.model import ModelSpec
from estimator.options import RunOptions
from estimator.resolve import resolve
from estimator.stage import StagePricer, stage_rows
from estimator.strategy import Strategy
from estimator.units import MiB

DENSE = ModelSpec(name="d", hidden_size=1024, num_layers=4, num_attention_heads=8, vocab_size=32000,
                  ffn_hidden_size=2816)
MOE = ModelSpec(name="m", hidden_size=1024, num_layers=4, num_attention_heads=8, vocab_size=32000,
                ffn_hidden_size=2816, num_experts=8, moe_ffn_hidden_size=704, experts_per_token=2)
ST = Strategy(seq_length=2048, dp=2, tp=2, pp=1, micro_batches=2)
TE_HOPPER = 32 * MiB + 1024  # TE ≥ 2.8, cc ≥ 9.0


def _ws(model: ModelSpec, device: str, framework: str = "megatron", st: Strategy = ST, **opts: object):
    return library_workspaces(resolve(model, st, find_preset(device), RunOptions(framework=framework, **opts)))


def test_te_workspace_sized_by_compute_capability() -> None:
    hopper = _ws(DENSE, "H100")
    assert hopper.cublas == 64 * MiB and hopper.te == (TE_HOPPER,)
    assert _ws(DENSE, "B200").te == (TE_HOPPER,)                      # cc 10.0
    ampere = _ws(DENSE, "A100")
    assert ampere.te == (4 * MiB,) and ampere.total == 16.25 * MiB + 4 * MiB  # cc 8.0: 4 MiB
    assert _ws(DENSE, "A2").te == () and _ws(DENSE, "A2", "mindspeed").te == ()  # Ascend: no CUDA, no TE


def test_when_a_run_uses_te() -> None:
    assert _ws(DENSE, "H200", "mindspeed").te == (TE_HOPPER,)          # Megatron underneath, on a CUDA device
    assert _ws(DENSE, "H200", transformer_engine=False).te == ()       # --transformer-impl local
    assert _ws(DENSE, "H200", "torchtitan").te == ()                   # torchtitan's layers are PyTorch's
    fp8 = ST.replace(fp8="tensorwise")
    assert _ws(DENSE, "H200", "torchtitan", fp8).te == ()              # torchtitan's FP8 is torchao's
    assert _ws(DENSE, "H200", "torchtitan", transformer_engine=True).te == (TE_HOPPER,)  # stated
    # grouped GEMM of the experts (TEGroupedLinear): one more workspace per compute stream
    assert _ws(MOE, "H200", st=ST.replace(ep=2, grouped_gemm=True)).te == (TE_HOPPER,) * 5
    assert _ws(MOE, "H200", st=ST.replace(ep=2)).te == (TE_HOPPER,)
    assert _ws(DENSE, "H200", st=ST.replace(grouped_gemm=True)).te == (TE_HOPPER,)  # no experts, no grouped GEMM


def test_te_priced_in_the_tensor_peak_with_an_assumption() -> None:
    h200 = find_preset("H200")
    on = estimate(DENSE, ST, h200, RunOptions(framework="megatron"))
    off = estimate(DENSE, ST, h200, RunOptions(framework="megatron", transformer_engine=False))
    assert on.stages[0].bytes_by_category["library_workspaces"] == 64 * MiB + TE_HOPPER
    assert on.tensor_peak_bytes - off.tensor_peak_bytes == TE_HOPPER
    said = [a for a in on.assumptions if a.field == "options.transformer_engine"]
    assert len(said) == 1 and said[0].value is True
    assert "--transformer-impl transformer_engine" in str(said[0].source)
    assert "持有 Transformer Engine 的 cuBLASLt 工作区" in said[0].localized(CHINESE)
    assert not [a for a in off.assumptions if a.field == "options.transformer_engine"]  # stated: nothing assumed
    npu = estimate(DENSE, ST, find_preset("A2"), RunOptions(framework="megatron"))
    assert not [a for a in npu.assumptions if a.field == "options.transformer_engine"]


def test_explain_names_the_te_workspaces() -> None:
    from types import SimpleNamespace

    from estimator.device.stage_terms import inputs_workspaces, note_workspaces

    view = SimpleNamespace(r=resolve(DENSE, ST, find_preset("H200"), RunOptions(framework="megatron")),
                           stage=0, pricer=None)
    inputs = inputs_workspaces(view)  # type: ignore[arg-type]
    assert inputs["transformer_engine"] is True and inputs["te_workspaces"] == 1
    assert inputs["te_workspace"] == TE_HOPPER and inputs["compute_capability"] == 9.0
    note = note_workspaces(view)  # type: ignore[arg-type]
    assert str(note).startswith("cuBLAS handles 64 MiB; Transformer Engine 1 × 32 MiB cuBLASLt workspace(s)")
    assert note.localized(CHINESE).startswith("cuBLAS 句柄 64 MiB；Transformer Engine 1 × 32 MiB cuBLASLt 工作区")
    npu = SimpleNamespace(r=resolve(DENSE, ST, find_preset("A2"), RunOptions(framework="megatron")),
                          stage=0, pricer=None)
    assert "the device has no CUDA" in str(note_workspaces(npu))  # type: ignore[arg-type]
    assert uses_transformer_engine(npu.r)[0] is False


def test_trace_allocates_the_te_workspaces() -> None:
    """The allocator replay sees each TE workspace as its own allocation (32 MiB + 1 KiB: a 34 MiB segment)."""
    r = resolve(DENSE, ST, find_preset("H200"), RunOptions(framework="megatron"))
    pricer = StagePricer(r, build_layout(layout_inputs(r)))
    ws = library_workspaces(r)
    trace = stage_trace(pricer, 0, stage_rows(pricer, 0), ws, labels=True)
    labels = list((trace.labels or {}).values())
    te = [label for label in labels if label.endswith("TE workspace")]
    cublas = [label for label in labels if label.endswith("workspace") and label not in te]
    assert len(te) == 1 and len(cublas) == 2


def test_transformer_impl_read_from_megatron_scripts(tmp_path: Path) -> None:
    base = ("torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
            "--num-attention-heads 8 --seq-length 2048 --max-position-embeddings 2048 --vocab-size 32000 "
            "--micro-batch-size 1 --global-batch-size 16 --bf16 --tensor-model-parallel-size 2")
    for impl, expected in (("local", False), ("transformer_engine", True)):
        script = tmp_path / f"{impl}.sh"
        script.write_text(f"{base} --transformer-impl {impl}\n")
        parsed = parse([str(script)])
        assert parsed.options.transformer_engine is expected
        assert parsed.provenance["options.transformer_engine"].key.startswith("--transformer-impl")
    script = tmp_path / "default.sh"
    script.write_text(base + "\n")
    assert parse([str(script)]).options.transformer_engine is None  # the framework's default applies


def test_transformer_impl_read_from_megatron_bridge(tmp_path: Path) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text("model:\n  transformer_impl: local\n  seq_length: 2048\n"
                      "train:\n  global_batch_size: 8\n  micro_batch_size: 1\n")
    dims = {"model.hidden_size": 1024, "model.num_layers": 4, "model.num_attention_heads": 8,
            "model.vocab_size": 32000}
    parsed = parse([str(config)], devices=8, overrides=dims)
    assert parsed.options.transformer_engine is False
    assert parsed.provenance["options.transformer_engine"].key == "model.transformer_impl"
