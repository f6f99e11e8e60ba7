"""Fuzzing what the format fuzz tests do not reach (issue 16, verification pass): ``sapp calibrate``'s log parsers,
layer-kind formulas and kind files, calibration profiles and the static reading of Python recipes. Each input must
be read or refused with a SappError — never another exception. The budget follows the fuzz profile
(tests/fuzzing.py; scripts/fuzz.sh runs these under a memory cap)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
from format_helpers import mutate
from fuzzing import fuzz_settings
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from estimator.calibrate.logs import read_log
from estimator.calibrate.profile import read_profile
from estimator.errors import SappError
from estimator.formats.py_static import Module
from estimator.kinds import _load_file
from estimator.kinds.expr import parse_formula

ROOT = Path(__file__).resolve().parents[2]
LOG = (
    "------------------------ arguments ------------------------\n"
    "  tensor_model_parallel_size ...................... 2\n  num_layers ...................... 8\n"
    "-------------------- end of arguments ---------------------\n"
    " iteration       10/     100 | consumed samples:  160 | elapsed time per iteration (ms): 1234.5 | "
    "learning rate: 1.0E-05 | global batch size:    16 | lm loss: 7.1E+00 | throughput per GPU (TFLOP/s/GPU): 1.5 |\n"
    "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1,234.5 | max allocated: 2345.6 | reserved: 3000.0 | "
    "max reserved: 3100.0\n"
    "[rank0]: Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]\n"
    "\x1b[31mstep: 10  \x1b[32mloss:  7.1234  \x1b[33mmemory: 37.51GiB(39.48%)  \x1b[34mtps: 7,523  "
    "\x1b[36mtflops: 351.23\x1b[39m\n"
    "DEV_MEM dev3 Mem stats (Bytes). (module_name=HCCL; module_id=3; current_alloced_size=1; "
    "alloced_peak_size=123456)\n"
    "Device MOC memory size: 65536M\nMindSpore Used memory size: 59392M\n"
    "Used peak memory usage (without fragments): 48874M\nActual peak memory usage (with fragments): 50120M\n"
    "{ Epoch:[  1/  2], step:[    2/   19], loss: 10.633, per_step_time: 1752ms, train_throughput_per_npu: 2.896T\n"
    "{'data_parallel': 4, 'model_parallel': 2, 'pipeline_stage': 2}\n"
)
STATS = json.dumps([{"rank": 0, "stats": {"allocated_bytes.all.peak": 10, "reserved_bytes.all.peak": 12}},
                    {"rank": 1, "stats": {"allocated_bytes.all.peak": 11, "reserved_bytes.all.peak": 15}}])
LOG_INSERTS = ["[Rank ", "9" * 400, "1e400", "NaN", "nan", "inf", ",", "|", " | max allocated: ", "\x1b[", "\n",
               "memory: ", "GiB(", "%)", "{", "[", "]", "}", '"rank": ', '"allocated_bytes.all.peak": ', "-1",
               "\x00", "\udcff", "arguments ---", "end of arguments", "'data_parallel': "]
PROFILE = """\
name: hand-made
created: '2026-01-01'
device: A2
framework: mindformers
logs: [rank_0.log]
terms:
  runtime_context: {value: 1000000, from: 'rank_0.log:4'}
  eff_matmul: {value: 0.55, from: 'rank_0.log:7'}
not_determined: [comm_library_factor]
measured_on: {tp: 2, pp: 2}
"""
YAML_INSERTS = ["&a ", "*a", "!!int ", "!!float x", "2024-02-30", "9" * 5000, ": ", "\n  ", "[", "]", "{", "}",
                "- ", ".nan", "-.inf", "~", "'", '"', "<<: *a", "? "]
FORMULA_INSERTS = ["**", "*", "/", "//", "%", "(", ")", "64", "9", "1e308", "-", "min(", "max(", "ceil(", ",",
                   " if ", " else ", " and ", " not ", "==", "<", "h", "s", "a", "b_sm", "0", "0.5", "1e-308"]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    return path


@fuzz_settings(60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), json_log=st.booleans())
def test_fuzz_calibration_logs(tmp_path: Path, data: st.DataObject, json_log: bool) -> None:
    text = mutate(data.draw, STATS if json_log else LOG, LOG_INSERTS)
    path = _write(tmp_path, "rank_0.log", text)
    try:
        reading = read_log(path)
    except SappError:
        return
    for sample in reading.memory:  # what is read is a number the fit can use
        assert all(v is None or (np.isfinite(v) and v >= 0) for v in (sample.max_allocated, sample.max_reserved))


@fuzz_settings(60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_calibration_profiles(tmp_path: Path, data: st.DataObject) -> None:
    path = _write(tmp_path, "profile.yaml", mutate(data.draw, PROFILE, YAML_INSERTS))
    try:
        profile = read_profile(path)
    except SappError:
        return
    assert all(np.isfinite(term.value) for term in profile.terms.values())


@fuzz_settings(60)
@given(data=st.data())
def test_fuzz_layer_kind_files(data: st.DataObject) -> None:
    shipped = (ROOT / "estimator" / "kinds" / "sliding_window.yaml").read_text()
    with contextlib.suppress(SappError):
        _load_file(mutate(data.draw, shipped, YAML_INSERTS + FORMULA_INSERTS), "user.yaml", "user")


@fuzz_settings(100)
@given(data=st.data(), arrays=st.booleans())
def test_fuzz_layer_kind_formulas(data: st.DataObject, arrays: bool) -> None:
    text = "".join(data.draw(st.lists(st.sampled_from(FORMULA_INSERTS), min_size=1, max_size=30)))
    symbols = {"h": 4096.0, "s": 8192, "a": 32, "b_sm": 2}
    if arrays:
        symbols = {k: np.array([v, 2 * v]) for k, v in symbols.items()}
    try:
        formula = parse_formula(text, "user.yaml")
        value = formula(symbols)
    except SappError:
        return
    assert np.all(np.isfinite(np.asarray(value, dtype=float)))


@fuzz_settings(40)
@given(data=st.data())
def test_fuzz_python_recipes(data: st.DataObject) -> None:
    source = (ROOT / "tests" / "fixtures" / "megatron_bridge" / "llama_recipes.py").read_text()
    inserts = ["[", "]", "(", ")", " * 100000", " + ", "f()", "{(1, 2): 3}", "1e999", "-", "cfg.model.x = ",
               "\n    ", "\ndef f():\n    return [f(), f()]\n", "lambda: 0", "**", "*args", "{**x}"]
    try:
        module = Module(mutate(data.draw, source, inserts), "recipes.py")
        for name in list(module.functions):
            module.evaluate(name)
    except SappError:
        pass
