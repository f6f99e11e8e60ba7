"""Old-vs-new check for speed work: dump every number the estimator gives for a fixed set of plans — the estimate
(with and without Explain, and after an edit of the micro-batch count) of every bundled example, benchmark input,
fixture plan and (where ../shared is present) real config, and a set of searches (counts per rule, examples,
ranked and Pareto rows, the current plan) — then compare two dumps made by two checkouts. A speed change must
leave the dump identical to the byte.

    PYTHONPATH=. .venv/bin/python benchmarks/result_dump.py dump before.json      # in the old checkout
    PYTHONPATH=. .venv/bin/python benchmarks/result_dump.py dump after.json       # in the new one
    .venv/bin/python benchmarks/result_dump.py compare before.json after.json

(``PYTHONPATH=.``: the checkout's own ``estimator``, whichever worktree the virtual environment was installed from.
Both dumps must come from the same version of this file: copy it into the old checkout first.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from estimator import estimate
from estimator.errors import ConfigError, SappError
from estimator.formats import parse
from estimator.messages import Message
from estimator.parsed import ParsedConfig
from estimator.search import SearchSpace, parse_dims, search

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "resources" / "examples"
REAL = (ROOT.parent / "shared").resolve() / "real-configs"
REAL_DEVICES = (8, 64, 256, 1024)  # device counts to try where a real config leaves it to the launcher
REAL_MODEL = REAL / "hf_config" / "hf_llama3_1_8b_config.json"  # where it leaves the model to another file
HF_TRAINER = EXAMPLES / "torchtitan_llama3_8b_longctx_cp.toml"  # a Hugging Face config.json is a model only
PAIRS = {"mindspeed_qwen2_5vl_7b_finetune.sh": "mindspeed_qwen2_5vl_7b_model.json"}
DEVICES = {".toml": 256}  # torchtitan TOMLs do not state the device count
SEARCHES = [  # (plan, devices, global batch; None: the plan's), dimensions
    ("benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml", 1024, 4096, ["all=auto"]),
    ("benchmarks/inputs/deepseek_v3_671b_mindformers.plan.yaml", 256, 1024, ["tp=auto", "pp=auto", "rec=auto",
                                                                           "mbs=1,2", "os=auto"]),
    ("benchmarks/inputs/llama3_70b_torchtitan_pp8_vpp5.plan.yaml", 512, 1024, ["all=auto"]),
    ("resources/examples/mindspeed_deepseek_v3_671b_pretrain.sh", None, None, ["tp=auto", "pp=auto", "rec=auto"]),
    ("resources/examples/mindspeed_qwen2_5vl_7b_finetune.sh", None, None, ["all=auto"]),
    ("resources/examples/hyperparallel_qwen3_fsdp.yaml", None, None, ["all=auto"]),
    ("resources/examples/torchtitan_llama3_70b.toml", None, None, ["all=auto"]),
    ("resources/examples/mindformers_mixtral_8x7b.yaml", None, None, ["all=auto"]),
]


def plan_files() -> list[list[Path]]:
    paired = set(PAIRS.values())
    out = [[p, *([EXAMPLES / PAIRS[p.name]] if p.name in PAIRS else [])] for p in sorted(EXAMPLES.iterdir())
           if p.name != "index.yaml" and p.name not in paired]
    out += [[p] for p in sorted((ROOT / "benchmarks" / "inputs").glob("*.plan.yaml"))]
    out += [[p] for p in sorted((ROOT / "tests" / "fixtures").rglob("*.plan.yaml"))]
    return out + real_files()


def real_files() -> list[list[Path]]:
    """Every real config (../shared/real-configs, when present): a MindSpeed-MM script with its model.json, each
    recipe of a Python config module (``FILE.py:FUNCTION``)."""
    if not REAL.is_dir():
        return []
    out = []
    for path in sorted(REAL.rglob("*")):
        if not path.is_file() or path.suffix == ".md" or path.name.endswith("_model.json"):
            continue
        model = path.with_name(path.name.replace("_finetune.sh", "_model.json"))
        if path.name.endswith("_finetune.sh") and model.is_file():
            out.append([path, model])
        else:
            out += [[Path(f"{path}:{name}")] if name else [path] for name in recipes(path)]
    return out


def recipes(path: Path) -> list[str]:
    """The recipe functions of a Python config module that holds several (the first 12, which its refusal
    lists), else [""]: the file itself."""
    if path.suffix != ".py":
        return [""]
    try:
        parse([str(path)], devices=REAL_DEVICES[0])
    except ConfigError as err:
        said = err.bare
        if isinstance(said, Message) and said.key == "torchtitan_py.name-recipe-read":
            return [name.removesuffix(" …") for name in dict(said.params)["shown"].split(", ")]
    return [""]


def read(paths: list[Path]) -> ParsedConfig:
    if paths[0].is_relative_to(REAL):
        return read_real(paths)
    return parse([str(p) for p in paths], devices=DEVICES.get(paths[0].suffix))


def read_real(paths: list[Path]) -> ParsedConfig:
    """A real config as a user would open it: a Hugging Face config.json as the model of a torchtitan TOML; a
    file that leaves the device count to the launcher with the first of REAL_DEVICES that reads, and one that
    also leaves the model and sequence length to other files with Llama-3.1-8B's config and 4096 (the first
    error when none reads)."""
    if paths[0].parent.name == "hf_config":
        return parse([str(HF_TRAINER)], devices=DEVICES[".toml"], model=paths[0])
    tries: list[dict[str, Any]] = [{}, *({"devices": n} for n in REAL_DEVICES),
                                   *({"devices": n, "model": REAL_MODEL, "overrides": {"strategy.seq_length": 4096}}
                                     for n in REAL_DEVICES)]
    first: SappError | None = None
    for extra in tries:
        try:
            return parse([str(p) for p in paths], **extra)
        except SappError as err:
            first = first or err
    assert first is not None
    raise first


def plan_name(path: Path) -> str:
    return str(path.relative_to(REAL.parent) if path.is_relative_to(REAL) else path.relative_to(ROOT))


def as_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def dump() -> dict[str, str]:
    out: dict[str, str] = {}
    for paths in plan_files():
        name = plan_name(paths[0])
        try:
            parsed = read(paths)
        except SappError as err:
            out[name] = f"error: {err}"
            continue
        st = parsed.strategy
        for label, strategy in (("", st), (" m×2", st.replace(micro_batches=st.micro_batches * 2))):
            for explain in (False, True):
                key = f"estimate {name}{label}{' explain' if explain else ''}"
                try:
                    result = estimate(parsed.model, strategy, parsed.hardware, parsed.options, explain=explain)
                    out[key] = as_text(result.to_dict())
                except SappError as err:
                    out[key] = f"error: {err}"
    for path, devices, batch, dims in SEARCHES:
        paths = [ROOT / path]
        paths += [EXAMPLES / PAIRS[paths[0].name]] if paths[0].name in PAIRS else []
        parsed = read(paths)
        space = SearchSpace(devices=devices or parsed.strategy.world_size,
                            global_batch=batch or parsed.strategy.global_batch_size, dims=parse_dims(dims))
        key = f"search {path} {space.devices} {space.global_batch} {' '.join(dims)}"
        try:
            data = search(parsed, space).to_dict()
            data.pop("seconds")
            out[key] = as_text(data)
        except SappError as err:
            out[key] = f"error: {err}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("dump").add_argument("out")
    both = sub.add_parser("compare")
    both.add_argument("before")
    both.add_argument("after")
    args = ap.parse_args()
    if args.command == "dump":
        Path(args.out).write_text(json.dumps(dump(), indent=0, sort_keys=True), encoding="utf-8")
        return 0
    before, after = (json.loads(Path(p).read_text(encoding="utf-8")) for p in (args.before, args.after))
    differ = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    missing = sorted(before.keys() ^ after.keys())
    print(f"{len(before)} entries before, {len(after)} after: {len(differ)} differ, {len(missing)} in one only")
    for key in differ + missing:
        print(f"  {key}")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
