"""Runs hostile cases one after another in this (memory-limited) process and prints one JSON line per case.

Started by ``hostile_harness.run_cases``; reads the case list (JSON) from the file named in argv[1]. A case is
``{"name", "kind": "cli" | "gui" | "call", "argv" | "call": "module:function", "args"}``. Before each case it
prints ``{"start": name}`` so that the parent knows which case a hang or a kill belongs to.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
import time
import traceback


def _run(case: dict) -> dict:
    out, err = io.StringIO(), io.StringIO()
    rc: object = None
    exception = None
    started = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if case["kind"] == "cli":
                from estimator.cli import main

                rc = main(case["argv"])
            elif case["kind"] == "gui":
                from sapp_gui.app import main

                rc = main(case["argv"])
            else:
                module, name = case["call"].split(":")
                rc = getattr(importlib.import_module(module), name)(*case.get("args", []))
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    except BaseException as exc:  # everything that escapes is what the tests look for
        exception = f"{type(exc).__name__}: {str(exc)[:2000]}"
        rc = traceback.format_exc(limit=-8)[-4000:]
    return {"name": case["name"], "rc": rc, "exception": exception, "seconds": time.perf_counter() - started,
            "stdout": out.getvalue()[-20000:], "stdout_chars": len(out.getvalue()),
            "stderr": err.getvalue()[-20000:], "stderr_chars": len(err.getvalue())}


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        cases = json.load(fh)
    for case in cases:
        print(json.dumps({"start": case["name"]}), flush=True)
        print(json.dumps(_run(case), default=str), flush=True)


if __name__ == "__main__":
    main()
