"""Hostile input, bounded: run cases in a child process under a memory limit (``RLIMIT_AS``), a limit on the
size of any file it writes (``RLIMIT_FSIZE``) and a time limit per case, and collect what each one ended with
(exit status, message, escaped exception, hang, death).

One child runs many cases (start-up is paid once); when a case hangs past its limit or the child dies, the
child is killed and a fresh one continues with the next case.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the code the children run (SAPP_HOSTILE_ROOT=<another checkout> replays the cases against it, e.g. an old main)
CODE = Path(os.environ.get("SAPP_HOSTILE_ROOT", ROOT))
WORKER = Path(__file__).with_name("hostile_worker.py")
CLI_MEMORY = 1 << 30        # 1 GiB of address space: the CLI needs ~150 MiB
GUI_MEMORY = 3 << 30        # Qt maps ~500 MiB
FILE_BYTES = 256 << 20      # no file a case writes grows past this (a write that copies an endless device stops)
CASE_SECONDS = 20.0         # a case that takes longer hangs (a generous bound on a loaded 2-core machine)


@dataclass
class Outcome:
    name: str
    rc: object = None
    exception: str | None = None
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    stderr_chars: int = 0
    hung: bool = False
    died: str | None = None  # the signal or status that ended the child

    @property
    def clean(self) -> bool:
        """Ended by itself, with no escaped exception."""
        return not self.hung and self.died is None and self.exception is None

    def describe(self) -> str:
        if self.hung:
            return f"{self.name}: hung (killed after {self.seconds:.0f} s)"
        if self.died:
            return f"{self.name}: the process died ({self.died})"
        if self.exception:
            return f"{self.name}: {self.exception}\n{self.rc}"
        return f"{self.name}: rc {self.rc!r} in {self.seconds:.2f} s; stderr: {self.stderr[-600:]!r}"


def _limit(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))
    os.setsid()


def run_cases(cases: list[dict], *, memory: int = CLI_MEMORY, seconds: float = CASE_SECONDS,
              cwd: Path | None = None) -> dict[str, Outcome]:
    """Outcome per case name. ``cases`` as described in hostile_worker.py."""
    results: dict[str, Outcome] = {}
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "QT_QPA_PLATFORM": "offscreen",
           "PYTHONPATH": str(CODE)}
    todo = list(cases)
    while todo:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(todo, fh)
        proc = subprocess.Popen([sys.executable, str(WORKER), fh.name], cwd=str(cwd or CODE), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=lambda: _limit(memory))
        current: str | None = None
        started = time.monotonic()
        buffer = b""
        try:
            while True:
                left = seconds - (time.monotonic() - started)
                ready, _, _ = select.select([proc.stdout], [], [], max(left, 0))
                if not ready:  # the current case hangs
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    if current is not None:
                        results[current] = Outcome(current, hung=True, seconds=seconds)
                    break
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:  # the child ended
                    proc.wait()
                    if current is not None:
                        err = proc.stderr.read().decode(errors="replace")[-2000:]
                        why = (f"signal {-proc.returncode}" if proc.returncode < 0 else f"status {proc.returncode}")
                        results[current] = Outcome(current, died=f"{why}; {err}", seconds=time.monotonic() - started)
                    break
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    record = json.loads(line)
                    if "start" in record:
                        current, started = record["start"], time.monotonic()
                    else:
                        results[record["name"]] = Outcome(
                            record["name"], record["rc"], record["exception"], record["seconds"],
                            record["stdout"], record["stderr"], record["stderr_chars"])
                        current = None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()
            os.unlink(fh.name)
        todo = [c for c in todo if c["name"] not in results]
    return results


def cli(name: str, *argv: str) -> dict:
    return {"name": name, "kind": "cli", "argv": [str(a) for a in argv]}


def gui(name: str, *argv: str) -> dict:
    return {"name": name, "kind": "gui", "argv": [str(a) for a in argv]}
