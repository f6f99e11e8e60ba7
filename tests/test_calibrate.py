"""``sapp calibrate`` (issue 10): the log parsers on lines as the frameworks print them, the round trip (a log
synthesised from a known plan with known terms is calibrated back to those terms, and the calibrated estimate
matches the log within 2 %), refusals by name, the saved profile applied by later estimates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.calibrate import LogError, calibrate, looks_like_log, read_log, read_logs, save
from estimator.cli import main
from estimator.estimate import estimate
from estimator.formats import parse
from estimator.units import GiB, MiB

PLAN = """\
model: {name: calib-7b, family: llama2, hidden_size: 4096, num_layers: 8, num_attention_heads: 32,
        ffn_hidden_size: 11008, vocab_size: 32000}
strategy: {dp: 4, tp: 2, pp: 2, micro_batch_size: 1, micro_batches: 4, seq_length: 4096, sequence_parallel: true}
hardware: {device: A2}
options: {framework: mindspeed}
"""
SLACK, CONTEXT, COMM, EFF = 1.4, 3.25 * GiB, 0.85, 0.33


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SAPP_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "calib.plan.yaml"
    path.write_text(PLAN)
    return path


def _arguments(tp: int = 2) -> str:
    args = {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": 2, "world_size": 16,
            "num_layers": 8, "hidden_size": 4096, "seq_length": 4096, "global_batch_size": 16,
            "micro_batch_size": 1}
    body = "".join(f"  {k} {'.' * (40 - len(k))} {v}\n" for k, v in args.items())
    return ("------------------------ arguments ------------------------\n" + body +
            "-------------------- end of arguments ---------------------\n")


def synthesise(plan: Path, folder: Path, tp: int = 2) -> list[str]:
    """Megatron-style logs of ranks 0 and 8 (stages 0 and 1) and their plogs, from the plan priced with the
    known terms: slack × SLACK, context CONTEXT, HCCL buffers × COMM, matmul efficiency EFF."""
    parsed = parse([str(plan)])
    parts = estimate(parsed.model, parsed.strategy, parsed.hardware, parsed.options).stages
    timed = estimate(parsed.model, parsed.strategy, parsed.hardware.replace(eff_matmul=EFF), parsed.options)
    step_ms = timed.step_time_s * 1000
    paths = []
    for stage, rank in ((0, 0), (1, 8)):
        part = parts[stage]
        allocated = part.tensor_peak / MiB
        reserved = (part.tensor_peak + SLACK * part.allocator_slack) / MiB
        lines = [_arguments(tp)] if rank == 0 else []
        for it in (10, 20, 30, 40):
            lines.append(f" iteration       {it}/     100 | consumed samples:  {it * 16} | elapsed time per iteration "
                         f"(ms): {step_ms * (3 if it == 10 else 1):.1f} | learning rate: 1.0E-05 | global batch "
                         "size:    16 | lm loss: 7.1E+00 |\n")
            lines.append(f"[Rank {rank}] (after {it} iterations) memory (MB) | allocated: {allocated * 0.7:.2f} | "
                         f"max allocated: {allocated:.2f} | reserved: {reserved * 0.95:.2f} | max reserved: "
                         f"{reserved:.2f}\n")
        log = folder / f"rank_{rank}.log"
        log.write_text("".join(lines))
        app = int(part.tensor_peak + SLACK * part.allocator_slack)
        plog = folder / f"plog_rank_{rank}.log"
        modules = {"RUNTIME": int(3 * GiB), "DRV": int(0.25 * GiB),
                   "HCCL": int(COMM * part.bytes_by_category["comm_library"]),
                   "APP": app}
        plog.write_text("".join(
            f"[INFO] DRV(1,python3):2026-01-01-00:00:00.000.000 [ascend][drv][devmm][_svm_mem_stats_show 148]"
            f"DEV_MEM dev{rank % 8} Mem stats (Bytes). (module_name={name}; module_id=3; current_alloced_size={v}; "
            f"alloced_peak_size={v}; alloc_cnt=6; free_cnt=2)\n" for name, v in modules.items()))
        paths += [str(log), str(plog)]
    return paths


def test_round_trip_recovers_the_terms(plan: Path, tmp_path: Path, config_dir: Path) -> None:
    logs = synthesise(plan, tmp_path)
    cal = calibrate(parse([str(plan)]), read_logs(logs), "roundtrip")
    terms = {k: t.value for k, t in cal.profile.terms.items()}
    assert terms["allocator_slack_factor"] == pytest.approx(SLACK, rel=1e-3)
    assert terms["runtime_context"] == pytest.approx(CONTEXT, rel=1e-6)
    assert terms["comm_library_factor"] == pytest.approx(COMM, rel=1e-6)
    assert terms["eff_matmul"] == pytest.approx(EFF, rel=0.01)
    assert not cal.profile.not_determined
    for stage in cal.stages:  # the calibrated estimate matches the log within 2 %
        assert stage.after.allocator_peak == pytest.approx(stage.allocator, rel=0.02)
        assert stage.after.device_peak == pytest.approx(stage.device, rel=0.02)
        assert abs(stage.before.device_peak / stage.device - 1) > 0.02  # …which the uncalibrated one did not
    assert cal.step_after == pytest.approx(cal.step_measured, rel=0.02)
    path = save(cal, config_dir / "calibrations")
    assert path.name == "roundtrip.yaml" and "allocator_slack_factor" in path.read_text()
    # where each term came from is said in the app's language, and saved in English
    from estimator.messages import CHINESE, localize

    source = cal.profile.terms["allocator_slack_factor"].source
    assert localize(source, CHINESE).endswith("实测与模型的分配器余量之比")
    from estimator.calibrate.profile import read_profile

    assert read_profile(path).terms["allocator_slack_factor"].source == str(source)


def test_later_estimates_apply_the_profile(plan: Path, tmp_path: Path, config_dir: Path, capsys) -> None:
    logs = synthesise(plan, tmp_path)
    assert main(["calibrate", *logs, "--config", str(plan), "--name", "a2-run"]) == 0
    out = capsys.readouterr().out
    assert "allocator_slack_factor = 1.4" in out and "saved" in out and "before → after" in out
    assert (config_dir / "calibrations" / "a2-run.yaml").is_file()
    assert main(["estimate", str(plan), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["options"]["calibration"] == "a2-run"
    assert payload["options"]["allocator_slack_factor"] == pytest.approx(SLACK, rel=1e-3)
    eff = next(f for f in payload["hardware"]["figures"] if f["figure"] == "eff_matmul")
    assert eff["source"] == "calibrated" and "calibrated from rank_0.log" in eff["title"]
    assert any(a["field"] == "options.calibration" for a in payload["assumptions"])
    assert main(["estimate", str(plan), "--json", "--calibration", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["options"]["calibration"] is None


def test_a_log_of_another_plan_is_refused_by_name(plan: Path, tmp_path: Path, config_dir: Path) -> None:
    logs = synthesise(plan, tmp_path, tp=4)
    with pytest.raises(LogError, match=r"rank_0\.log:\d+: the run had tp = 4, the config has 2"):
        calibrate(parse([str(plan)]), read_logs(logs))
    assert not (config_dir / "calibrations").exists()  # nothing written


def test_unusable_logs_are_clear_errors(plan: Path, tmp_path: Path, capsys) -> None:
    empty = tmp_path / "train.log"
    empty.write_text("loading data\nepoch 1\n")
    with pytest.raises(LogError, match="no usable line; looked for Megatron"):
        read_log(empty)
    assert main(["calibrate", str(empty), "--config", str(plan)]) == 1
    assert "train.log: no usable line" in capsys.readouterr().err
    bad_rank = tmp_path / "rank_99.log"
    bad_rank.write_text("[Rank 99] (after 10 iterations) memory (MB) | allocated: 1 | max allocated: 2 | "
                        "reserved: 3 | max reserved: 4\n")
    with pytest.raises(LogError, match="rank 99 does not exist in a world of 16"):
        calibrate(parse([str(plan)]), read_logs([str(bad_rank)]))


def test_parsers_read_the_lines_frameworks_print(tmp_path: Path) -> None:
    titan = tmp_path / "titan.log"
    titan.write_text("[rank0]: Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]\n"
                     "\x1b[31mstep: 10  \x1b[32mloss:  7.1234  \x1b[38;2;180;60;0mgrad_norm:  1.2345  \x1b[33mmemory: "
                     "37.51GiB(39.48%)  \x1b[34mtps: 7,523  \x1b[36mtflops: 351.23  \x1b[35mmfu: 35.51%\x1b[39m\n")
    got = read_log(titan)
    assert got.memory[0].max_reserved == pytest.approx(37.51 * GiB) and got.tokens_per_s == [7523.0]
    assert got.tflops == [351.23] and got.stated["dp_shard"][0] == 4 and got.stated["tp"][0] == 2
    ms = tmp_path / "worker_3.log"
    ms.write_text("Device MOC memory size: 65536M\nMindSpore Used memory size: 59392M\n"
                  "Used peak memory usage (without fragments): 48874M\nActual peak memory usage (with fragments): "
                  "50120M\n2025-04-07 15:34:29,173 - INFO - { Epoch:[  1/  2], step:[    2/   19], loss: 10.633, "
                  "per_step_time: 1752ms, lr: 1e-05, overflow cond: False, loss_scale: 1.0, "
                  "train_throughput_per_npu: 2.896T\n")
    got = read_log(ms)
    assert got.rank == 3 and got.memory[0].max_allocated == 48874 * MiB and got.memory[0].max_reserved == 50120 * MiB
    assert got.step_times[0][0] == pytest.approx(1.752) and got.pool == 59392 * MiB
    stats = tmp_path / "stats.json"
    entries = [{"rank": r, "stats": {"allocated_bytes.all.peak": a, "reserved_bytes.all.peak": b}}
               for r, a, b in ((0, 10, 12), (1, 11, 15))]
    stats.write_text(json.dumps(entries))
    got = read_log(stats)
    assert [(s.rank, s.max_allocated, s.max_reserved) for s in got.memory] == [(0, 10, 12), (1, 11, 15)]


def test_logs_are_told_from_configs(plan: Path, tmp_path: Path) -> None:
    """The app routes a dropped file by this: a log with a line the parsers use, a memory_stats dump, not a config."""
    logs = synthesise(plan, tmp_path)
    assert all(looks_like_log(p) for p in logs)
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({"allocated_bytes.all.peak": 1, "reserved_bytes.all.peak": 2}))
    hf = tmp_path / "config.json"
    hf.write_text(json.dumps({"hidden_size": 4096, "num_hidden_layers": 8}))
    assert looks_like_log(stats) and not looks_like_log(hf) and not looks_like_log(plan)
    assert not looks_like_log(tmp_path / "missing.log")


def test_only_regular_files_are_sniffed_as_logs(tmp_path) -> None:
    """A FIFO dropped on the window would block the sniffing read: anything but a regular file is not a log."""
    import os

    from estimator.calibrate.logs import looks_like_log

    fifo = tmp_path / "run.log"
    os.mkfifo(fifo)
    assert looks_like_log(fifo) is False
    assert looks_like_log(tmp_path) is False
    plain = tmp_path / "train.log"
    plain.write_text(" iteration 10/ 100 | elapsed time per iteration (ms): 512.0 | memory (MB) | allocated: 1.0 | "
                     "max allocated: 2.0 | reserved: 3.0 | max reserved: 4.0\n")
    assert looks_like_log(plain) is True
