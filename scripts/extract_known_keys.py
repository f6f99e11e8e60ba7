"""Regenerate the generated key catalogues of estimator/formats/keys/ from the frameworks' public sources, so that
the launch-script and model.json readers can tell a misspelt flag or key from a real one they do not price.

    python scripts/extract_known_keys.py flags NAME=GIT_DIR[@REV,REV…] … > estimator/formats/keys/launch_flags.yaml
    python scripts/extract_known_keys.py json-keys NAME=GIT_DIR[@REV] … > estimator/formats/keys/mm_model_keys.yaml
    python scripts/extract_known_keys.py torchtitan NAME=GIT_DIR@REV,… > estimator/formats/keys/torchtitan.yaml
    python scripts/extract_known_keys.py hf-keys transformers-X.whl … > estimator/formats/keys/hf_config_keys.yaml

``flags``: every ``'--flag'`` string literal in the Python sources and, for Megatron-LM's dataclass-built
arguments (``ArgumentGroupFactory``), ``--field`` (and ``--no-field`` / ``--disable-field`` for a bool) for each
field of a dataclass in a ``*config*.py`` file. ``json-keys``: every key of every ``*model*.json`` of the
repository (MindSpeed-MM's model.json examples). ``torchtitan``: the TOML sections and keys of torchtitan's
``JobConfig`` (the dataclasses of ``config/job_config.py``, ``config_manager.py`` or ``config/configs.py``, or
the 2024 argparse ``--section.key`` options), with the sections SAPP ignores by design listed as ``ignored``.
``hf-keys``: every attribute a Hugging Face ``transformers`` configuration class takes (class annotations,
``__init__`` parameters and ``self.x =`` assignments of ``configuration_utils.py`` and every
``models/*/configuration_*.py`` of the wheels given).

Only names are taken; over-inclusion is harmless (a misspelling is in no source), omission is not.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

FLAG = re.compile(r"""['"](--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)['"]""")
FIELD = re.compile(r"^    ([a-z][a-z0-9_]*)\s*:\s*(\w+)", re.MULTILINE)


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def files(repo: str, commit: str, suffix: str) -> list[str]:
    return [p for p in git(repo, "ls-tree", "-r", "--name-only", commit).splitlines()
            if p.endswith(suffix) and not p.startswith("tests") and "/tests/" not in p]


def flags_at(repo: str, commit: str) -> set[str]:
    found: set[str] = set()
    for path in files(repo, commit, ".py"):
        text = git(repo, "show", f"{commit}:{path}")
        found.update(FLAG.findall(text))
        if "config" in path.rsplit("/", 1)[-1] and "@dataclass" in text:
            for name, kind in FIELD.findall(text):
                dashed = name.replace("_", "-")
                found.add(f"--{dashed}")
                if kind == "bool":
                    found.update({f"--no-{dashed}", f"--disable-{dashed}"})
    return found


def json_keys_at(repo: str, commit: str) -> set[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            found.update(str(k) for k in node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in files(repo, commit, ".json"):
        if "model" in path.rsplit("/", 1)[-1]:
            try:
                walk(json.loads(git(repo, "show", f"{commit}:{path}")))
            except json.JSONDecodeError:
                continue
    return found


SECTION_OPTION = re.compile(r"""['"]--([a-z_0-9]+(?:\.[a-z_0-9]+)+)['"]""")
# torchtitan sections that hold no memory or speed setting: never reported
TORCHTITAN_IGNORED = ("job", "profiling", "metrics", "checkpoint", "lr_scheduler", "validation", "comm",
                      "fault_tolerance", "memory_estimation", "debug")


def _dataclass_fields(tree: ast.Module) -> dict[str, dict[str, str]]:
    """class name -> {field: annotation's class name} for every class of a module."""
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            fields = {}
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    fields[item.target.id] = ast.unparse(item.annotation)
            out[node.name] = fields
    return out


def _visit(sections: dict[str, set[str]], classes: dict[str, dict[str, str]], section: str, cls: str) -> None:
    """The fields of dataclass ``cls`` as the keys of ``section``; a field typed by another class is a sub-table."""
    for name, annotation in classes.get(cls, {}).items():
        sections.setdefault(section, set()).add(name)
        if annotation in classes and annotation != cls:
            _visit(sections, classes, f"{section}.{name}" if section else name, annotation)


def torchtitan_at(repo: str, commit: str) -> dict[str, set[str]]:
    """section path -> keys of torchtitan's JobConfig at ``commit``."""
    sections: dict[str, set[str]] = {}
    for path in ("torchtitan/config/job_config.py", "torchtitan/config_manager.py", "torchtitan/config/configs.py"):
        try:
            text = git(repo, "show", f"{commit}:{path}")
        except subprocess.CalledProcessError:
            continue
        for option in SECTION_OPTION.findall(text):  # the 2024 argparse form
            *section, key = option.split(".")
            sections.setdefault(".".join(section), set()).add(key)
            sections.setdefault("", set()).add(section[0])
        classes = _dataclass_fields(ast.parse(text))
        if "JobConfig" in classes:
            _visit(sections, classes, "", "JobConfig")
        elif path.endswith("configs.py"):  # 2026: one ``<Section>Config`` dataclass per TOML section
            for cls in classes:
                if cls.endswith("Config") and cls != "Config":
                    section = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.removesuffix("Config")).lower()
                    sections.setdefault("", set()).add(section)
                    _visit(sections, classes, section, cls)
    return sections


def torchtitan_main(specs: list[str]) -> None:
    print("# Generated by scripts/extract_known_keys.py torchtitan: torchtitan JobConfig sections and keys from:")
    known: dict[str, set[str]] = {}
    for spec in specs:
        name, _, rest = spec.partition("=")
        repo, _, revs = rest.partition("@")
        for rev in revs.split(","):
            commit = git(repo, "rev-parse", rev).strip()
            for section, keys in torchtitan_at(repo, commit).items():
                known.setdefault(section, set()).update(keys)
            print(f"# {name} {rev} = {commit[:10]}")
    print("title: torchtitan TOML")
    print(f"ignored: [{', '.join(TORCHTITAN_IGNORED)}]")
    print("sections:")
    for section in sorted(known):
        print(f"  '{section}':")
        for key in sorted(known[section]):
            print(f"    {key}: torchtitan JobConfig field")


def config_attributes(text: str) -> set[str]:
    """Attribute names a transformers configuration module's classes take."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    found.add(item.target.id)
        elif isinstance(node, ast.FunctionDef) and node.name in ("__init__", "__post_init__"):
            args = node.args
            found.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg != "self")
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self" \
                        and isinstance(sub.ctx, ast.Store):
                    found.add(sub.attr)
    return {name for name in found if not name.startswith("_") or name in ("_name_or_path", "_attn_implementation")}


def hf_main(wheels: list[str]) -> None:
    print("# Generated by scripts/extract_known_keys.py hf-keys: Hugging Face config attributes from:")
    known: set[str] = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                base = name.rsplit("/", 1)[-1]
                if name.endswith("configuration_utils.py") or (
                        "/models/" in name and base.startswith("configuration_") and base.endswith(".py")):
                    known |= config_attributes(archive.read(name).decode("utf-8"))
        print(f"# {Path(wheel).name}")
    print("title: Hugging Face config.json")
    print("keys:")
    for item in sorted(known):
        print(f"  - '{item}'")


def main(argv: list[str]) -> None:
    if argv[0] == "hf-keys":
        hf_main(argv[1:])
        return
    if argv[0] == "torchtitan":
        torchtitan_main(argv[1:])
        return
    kind, specs = argv[0], argv[1:]
    collect, title, field = {"flags": (flags_at, "Megatron-LM / MindSpeed", "flags"),
                             "json-keys": (json_keys_at, "MindSpeed-MM model.json", "keys")}[kind]
    print(f"# Generated by scripts/extract_known_keys.py {kind}: names only, from these sources:")
    known: set[str] = set()
    for spec in specs:
        name, _, rest = spec.partition("=")
        repo, _, revs = rest.partition("@")
        for rev in (revs.split(",") if revs else ["HEAD"]):
            commit = git(repo, "rev-parse", rev).strip()
            known |= collect(repo, commit)
            print(f"# {name} {rev} = {commit[:10]}")
    print(f"title: {title}")
    print(f"{field}:")
    for item in sorted(known):
        print(f"  - '{item}'")


if __name__ == "__main__":
    main(sys.argv[1:])
