"""The ``sapp`` command line: estimate (table, JSON, explain, check), --set semantics, export, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from estimator.cli import main
from estimator.cli.plan import YOUNG_COLLECTION
from estimator.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "resources" / "examples" / "deepseek_v3_671b.plan.yaml"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_version():
    proc = subprocess.run([sys.executable, "-m", "estimator.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("sapp-planner ")


def test_estimate_table_marks_peak(capsys):
    code, out, _ = run(capsys, "estimate", str(PLAN))
    assert code == 0
    assert "DeepSeek-V3-671B" in out and "world 1024" in out
    peak_lines = [line for line in out.splitlines() if line.strip().startswith("*")]
    assert len(peak_lines) == 1
    assert "GiB" in out and "fits" in out


def test_estimate_json_schema(capsys):
    code, out, _ = run(capsys, "estimate", str(PLAN), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "sapp.estimate/1.1"  # minor 1: the tensor / allocator / device peaks (issue 10)
    assert data["model"]["parameters_total"] == 671_026_404_352
    assert data["model"]["parameters_active"] == 37_552_282_624
    assert data["strategy"]["world_size"] == 1024 and data["strategy"]["global_batch_size"] == 512
    assert data["limit"] in ("peak", "optimizer_step")
    assert len(data["stages"]) == 16
    stage = data["stages"][data["peak_stage"]]
    assert set(stage["bytes_by_category"]) == {"parameters", "gradients", "optimizer_states", "activations",
                                               "communication_buffers", "working_overhead", "reserve",
                                               "library_workspaces", "allocator_slack", "runtime_context",
                                               "comm_library"}
    assert max(stage["total"], stage["optimizer_step_peak"]) == data["peak_bytes"] == stage["device_peak_bytes"]
    assert all(isinstance(v, int) for v in stage["bytes_by_category"].values())
    assert data["step_time_s"] > 0 and 0 < data["mfu"] < 1 and data["tokens_per_s_per_device"] > 0
    assert abs(sum(data["parts"].values()) - data["step_time_s"]) <= 1e-9 * data["step_time_s"]
    assert set(data["parts"]) == {"fwd", "bwd", "recompute", "tp", "cp", "ep", "dp", "pp", "host", "bubble",
                                 "optimizer"}
    assert data["budget"] == 58 * 2**30


def test_set_keeps_world_and_batch(capsys):
    code, out, _ = run(capsys, "estimate", str(PLAN), "--json", "--set", "strategy.tp=8")
    data = json.loads(out)
    assert code == 0
    assert data["strategy"]["tp"] == 8 and data["strategy"]["dp"] == 8
    assert data["strategy"]["world_size"] == 1024 and data["strategy"]["global_batch_size"] == 512
    assert data["strategy"]["micro_batches"] == 64
    code, out, _ = run(capsys, "estimate", str(PLAN), "--json", "--set", "strategy.micro_batch_size=2")
    data = json.loads(out)
    assert data["strategy"]["micro_batches"] == 16 and data["strategy"]["global_batch_size"] == 512


def test_set_non_integer_names_both_fields(capsys):
    code, _, err = run(capsys, "estimate", str(PLAN), "--set", "strategy.tp=3")
    assert code == 1
    assert "strategy.tp" in err and "strategy.dp" in err and "Traceback" not in err


def test_unknown_field_suggests_nearest(capsys):
    code, _, err = run(capsys, "estimate", str(PLAN), "--set", "strategy.pipline=4")
    assert code == 1 and "unknown field 'strategy.pipline'" in err and "did you mean 'strategy." in err


def test_impossible_strategy_lists_every_rule(capsys):
    code, _, err = run(capsys, "estimate", str(PLAN), "--set", "strategy.ep=3", "--set", "strategy.tp=8")
    assert code == 1
    assert "R-EP-EXP" in err and "R-EP-LAYOUT" in err


def test_a_broken_expert_layout_is_not_also_an_expert_shard_refusal(capsys):
    """Without R-EP-LAYOUT the expert domain is no whole number of ranks (EDP = DP·TP·CP / (EP·ETP) < 1): the
    expert optimizer shard is not checked against it, so the user reads one refusal, not a second one with
    'shard 0 does not divide its group 0.25'."""
    code, _, err = run(capsys, "estimate", str(PLAN), "--set", "strategy.ep=128")
    assert code == 1 and "R-EP-LAYOUT" in err
    assert "R-OS-DIV" not in err


def test_check_exit_code(capsys, tmp_path):
    code, _, _ = run(capsys, "estimate", str(PLAN), "--check")
    assert code == 0
    code, _, _ = run(capsys, "estimate", str(PLAN), "--check", "--capacity", "8GB",
                     "--set", "options.max_device_memory=null")
    assert code == 3


def test_explain_prints_formulas(capsys):
    code, out, _ = run(capsys, "estimate", str(PLAN), "--explain", "--depth", "3")
    assert code == 0
    assert "[M-STAGE]" in out and "β_p·(E_d/sh_p + E_e/sh_pe)" in out


def test_export_diff_and_in_place(capsys, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.read_text())
    code, out, _ = run(capsys, "export", str(plan), "--set", "strategy.pp=8", "--diff")
    assert code == 0 and "-  pp: 16" in out and "+  pp: 8" in out
    assert plan.read_text() == PLAN.read_text()  # nothing written without -o/--in-place
    code, _, _err = run(capsys, "export", str(plan), "--set", "strategy.pp=8", "--in-place")
    assert code == 0 and (tmp_path / "plan.yaml.bak").read_text() == PLAN.read_text()
    assert "pp: 8" in plan.read_text() and "# DeepSeek-V3 671B" in plan.read_text()
    code, out, _ = run(capsys, "estimate", str(plan), "--json")
    assert json.loads(out)["strategy"]["pp"] == 8


def test_export_refuses_invalid_strategy(capsys, tmp_path):
    out_file = tmp_path / "out.yaml"
    code, _, err = run(capsys, "export", str(PLAN), "--set", "strategy.ep=3", "-o", str(out_file))
    assert code == 1 and "R-EP-EXP" in err and not out_file.exists()


@pytest.mark.parametrize(("text", "needle"), [
    ("strategy: {tp: 2\n", "malformed YAML"),
    ("strategy: {seq_length: 4096}\n", "options.framework"),
    ("options: {framework: pytorch}\nstrategy: {seq_length: 8}\n", "unknown framework"),
    ("options: {framework: megatron}\nstrategy: {seq_length: 8, tp: two}\n", "expected an integer"),
    ("options: {framework: megatron}\nstrategy: {seq_length: 8}\n", "model.hidden_size"),
    ("options: {framework: megatron}\nstrategy: {seq_length: 8}\nmodel: {hidden_size: 64, num_layers: 2, "
     "num_attention_heads: 4, vocab_size: 100, ffn_hidden_size: 128}\nhardware: {device: TPUv9}\n", "unknown device"),
    ("options: {framework: megatron}\nstrategy: {seq_length: 8, offset: [1, 2]}\nmodel: {hidden_size: 64, "
     "num_layers: 2, num_attention_heads: 4, vocab_size: 100, ffn_hidden_size: 128}\n", "E-OFF-LEN"),
])
def test_bad_plan_files_give_clear_messages(capsys, tmp_path, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, _, err = run(capsys, "estimate", str(path))
    assert code == 1
    assert needle in err and "Traceback" not in err
    if "malformed" in needle:
        assert f"{path}:1:" in err or f"{path}:2:" in err


def test_missing_file(capsys, tmp_path):
    code, _, err = run(capsys, "estimate", str(tmp_path / "nope.yaml"))
    assert code == 1 and "file not found" in err


def test_plan_with_hf_config_model(capsys, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                                  "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                                  "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256,
                                  "tie_word_embeddings": False}))
    plan = tmp_path / "plan.yaml"
    plan.write_text("options: {framework: torchtitan}\nstrategy: {seq_length: 8192, dp: 8, sharding: fsdp}\n")
    code, out, _ = run(capsys, "estimate", str(plan), "--model", str(config), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["model"]["parameters_total"] == 8_030_261_248
    assert data["hardware"]["device"] == "H100-80G"
    assert any(a["field"] == "hardware.device" for a in data["assumptions"])


def test_search_json_and_apply(capsys, tmp_path):
    code, out, _ = run(capsys, "search", str(PLAN), "--dims", "tp=4,8", "rec=auto", "--top", "3", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"candidates", "refusals", "survivors", "fitting", "pareto", "ranked", "seconds"}
    assert data["candidates"] == sum(data["refusals"].values()) + data["fitting"]
    first = data["ranked"][0]
    assert set(first) >= {"strategy", "peak_bytes", "peak_stage", "step_time_s", "tokens_per_s_per_device", "mfu"}
    assert first["strategy"]["tp"] in (4, 8) and first["peak_bytes"] <= data["budget"]
    times = [row["step_time_s"] for row in data["ranked"]]
    assert times == sorted(times)
    # the fastest row that is not the plan itself (its own recompute lists are a candidate too)
    k = next(k for k in range(len(data["ranked"])) if k != data["current"]["ranked_index"])
    first = data["ranked"][k]
    out_file = tmp_path / "best.yaml"
    csv_file = tmp_path / "rows.csv"
    code, out, _ = run(capsys, "search", str(PLAN), "--dims", "tp=4,8", "rec=auto", "--apply", str(k + 1), "-o",
                       str(out_file), "--csv", str(csv_file))
    assert code == 0 and "fastest strategies that fit" in out
    assert csv_file.read_text().splitlines()[0].startswith("list,dp,tp,pp")
    code, out, _ = run(capsys, "estimate", str(out_file), "--json")
    assert json.loads(out)["strategy"]["tp"] == first["strategy"]["tp"]
    assert json.loads(out)["step_time_s"] == pytest.approx(first["step_time_s"], rel=1e-9)


def test_balance_cli_and_export(capsys, tmp_path):
    out_file = tmp_path / "balanced.yaml"
    code, out, _ = run(capsys, "balance", str(PLAN), "-o", str(out_file))
    assert code == 0 and "model.model_config.offset" in out and "fits" in out
    code, out, _ = run(capsys, "estimate", str(out_file), "--json")
    data = json.loads(out)
    assert data["fits"] and data["strategy"]["offset"] != [1] * 15 + [-1]


def test_fit_cli(capsys):
    code, out, _ = run(capsys, "fit", str(PLAN), "--max", "micro_batch_size", "--tokens", "1e12", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["field"] == "micro_batch_size" and data["value"] >= 1 and data["days"] > 0
    assert data["next_value"] == data["value"] + 1 and data["limiting_stage"] is not None
    code, out, _ = run(capsys, "fit", str(PLAN), "--min-devices")
    assert code == 0 and "fewest devices that fit" in out


def test_report_html_and_markdown(capsys, tmp_path):
    import xml.etree.ElementTree as ET

    code, out, _ = run(capsys, "report", str(PLAN))
    assert code == 0 and out.startswith("<!doctype html>") and "<svg" in out and "Memory per stage" in out
    md = tmp_path / "sub" / "plan.md"
    code, _, _ = run(capsys, "report", str(PLAN), "-o", str(md))
    assert code == 0
    text = md.read_text()
    assert "![per-stage memory](plan.svg)" in text and "| *0 |" in text and "## Assumptions" in text
    svg = ET.parse(tmp_path / "sub" / "plan.svg").getroot()
    rects = [e for e in svg.iter() if e.tag.endswith("rect")]
    assert len(rects) > 16 * 5  # stacked segments of 16 stages plus the legend
    assert oct((tmp_path / "sub" / "plan.svg").stat().st_mode & 0o777) != "0o600"


def test_framework_limit_above_capacity_is_capped(capsys):
    """P-BUDGET-CAP: the plan's 58GB max_device_memory cannot be used on a 24 GiB device."""
    _code, out, _ = run(capsys, "estimate", str(PLAN), "--json", "--capacity", "24GB")
    data = json.loads(out)
    assert data["budget"] == 24 * 2**30 and not data["fits"]


def test_user_family_profiles(tmp_path):
    """User profiles (YAML of the shipped shape) are found beside the shipped ones and may replace them."""
    from estimator import profiles

    (tmp_path / "mine.yaml").write_text("name: mine\nextends: default\nffn_gated: false\nmatch: {names: [mymodel]}\n")
    try:
        profiles.add_profile_dir(tmp_path)
        assert profiles.get_profile("mine").ffn_gated is False
        assert profiles.detect_family(None, (), None, "mymodel-7b")[0] == "mine"
        text = profiles.profile_yaml(profiles.get_profile("mine"))
        assert "ffn_gated: false" in text and "mymodel" in text
    finally:
        profiles._USER_DIRS.remove(tmp_path)
        profiles.all_profiles.cache_clear()


def test_a_broken_user_profile_folder_is_refused_and_not_registered(tmp_path):
    """One malformed user profile must not make every config unreadable: the folder is refused by name."""
    from estimator import profiles

    (tmp_path / "bad.yaml").write_text("name: bad\nffn_gated: false\nnot_a_field: 3\n")
    with pytest.raises(ConfigError, match="not_a_field"):
        profiles.add_profile_dir(tmp_path)
    assert tmp_path not in profiles._USER_DIRS
    assert "default" in profiles.all_profiles()


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["estimate", "--help"]])
def test_version_and_help_import_no_command(argv):
    """`sapp --version` and `--help` build the parser alone: no numpy, no YAML, no reader, no command module."""
    code = ("import sys\nfrom estimator.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'yaml', 'ruamel', 'PySide6')\n"
            "               or m.startswith(('estimator.formats', 'estimator.estimate', 'estimator.session',\n"
            "                                'estimator.cli.estimate', 'estimator.cli.plan')))\n"
            "print('HEAVY', heavy, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stderr, proc.stderr


def test_opening_a_plan_imports_no_distribution_metadata():
    """A command that opens a plan imports neither ``importlib.metadata`` (with email, zipfile and csv: the plug-ins'
    entry points are looked for in the distributions' folders first, and none declares one here) nor
    ``importlib.resources`` (the package's data is read from its folder) nor what the app keeps across a restart:
    ~20 ms of every command (P-IMPORT-SPEED)."""
    code = ("import sys\nfrom estimator.cli import main\nmain(['estimate', sys.argv[1], '--json'])\n"
            "cut = sorted(m for m in sys.modules if m.split('.')[0] in ('email', 'zipfile', 'csv')\n"
            "             or m.startswith(('importlib.metadata', 'importlib.resources',\n"
            "                              'estimator.session.keeping')))\n"
            "print('CUT', cut, file=sys.stderr)")
    plan = ROOT / "resources" / "examples" / "deepseek_v3_671b.plan.yaml"
    proc = subprocess.run([sys.executable, "-c", code, str(plan)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "CUT []" in proc.stderr, proc.stderr


@pytest.mark.parametrize(("config", "fmt", "readers"), [
    ("deepseek_v3_671b.plan.yaml", "plan", []),
    ("mindformers_llama3_70b.yaml", "mindformers", ["mindformers", "torchtitan"]),
    ("torchtitan_llama3_70b.toml", "torchtitan", ["mindformers", "torchtitan"])])
def test_a_plan_file_imports_no_framework_reader(config, fmt, readers):
    """The framework readers are imported on the first file that needs one (P-COLD-START): a plan file never
    does, and a framework's file is still detected with every reader there to try."""
    code = ("import sys\nfrom estimator.formats import read_file\nreading = read_file(sys.argv[1], 256)\n"
            "print('READ', reading.format, sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
            "      if m in ('estimator.formats.mindformers', 'estimator.formats.torchtitan')))")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT / "resources" / "examples" / config)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert f"READ {fmt} {readers}" in proc.stdout, proc.stdout


def test_the_command_line_process_freezes_what_it_opened():
    """`sapp estimate` as a process pauses the garbage collector while it imports and opens the plan, then
    freezes those objects and resumes it with a larger first threshold; a caller of main(argv) is left alone."""
    import gc

    code = ("import gc, sys\nfrom estimator.cli import main\nsys.argv = ['sapp', *sys.argv[1:]]\n"
            "from estimator.cli import plan\nopened = plan.load_session\n"
            "def spy(args):\n    print('PAUSED', not gc.isenabled(), file=sys.stderr)\n    session = opened(args)\n"
            "    print('AFTER', gc.isenabled(), gc.get_freeze_count() > 10_000, gc.get_threshold()[0], "
            "file=sys.stderr)\n    return session\n"
            "plan.load_session = spy\nimport estimator.cli.estimate as command\ncommand.load_plan = "
            "lambda args: plan.load_session(args).parsed\nmain()\n")
    proc = subprocess.run([sys.executable, "-c", code, "estimate", str(PLAN)], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "PAUSED True" in proc.stderr and f"AFTER True True {YOUNG_COLLECTION}" in proc.stderr, proc.stderr
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    assert main(["estimate", str(PLAN), "--json"]) == 0
    assert gc.isenabled() and gc.get_threshold() == threshold and gc.get_freeze_count() == frozen


def _own_command_line(tmp_path: Path, prologue: str, *argv: str) -> subprocess.CompletedProcess:
    code = (f"import atexit, sys, threading\nfrom estimator.cli import main\n{prologue}\n"
            "atexit.register(lambda: print('HANDLER', file=sys.stderr))\n"
            "sys.argv = ['sapp', *sys.argv[1:]]\nprint('RETURNED', main(), file=sys.stderr)\n"
            "if 'done' in globals():\n    done.set()\n")
    env = {**__import__("os").environ, "SAPP_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, env=env)


def test_the_command_line_process_ends_after_its_exit_handlers(tmp_path):
    """A command that opened a plan ends its process at once (cli.end_process): with its status, its output
    flushed, the atexit handlers run (the schedule-replay cache written) — and nothing after main()."""
    proc = _own_command_line(tmp_path, "", "estimate", str(PLAN), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "sapp.estimate/1.1"
    assert "HANDLER" in proc.stderr and "RETURNED" not in proc.stderr
    assert list((tmp_path / "cache").glob("replay-*.json"))
    bad = _own_command_line(tmp_path, "", "estimate", str(tmp_path / "missing.plan.yaml"))
    assert bad.returncode == 1 and "sapp estimate: error:" in bad.stderr and "HANDLER" in bad.stderr
    assert "RETURNED" not in bad.stderr


def test_the_command_line_process_exits_as_usual_beside_another_thread(tmp_path):
    """With a second thread running, main returns and the interpreter ends the process as usual (it waits for the
    thread, here until the caller tells it to end)."""
    waiting = ("done = threading.Event()\nthreading.Thread(target=lambda: done.wait(60) and "
               "print('THREAD', file=sys.stderr)).start()")
    proc = _own_command_line(tmp_path, waiting, "estimate", str(PLAN), "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.split() == ["RETURNED", "0", "THREAD", "HANDLER"], proc.stderr
