"""Which files may be given together as one plan (issue 12 item 2).

Several files make one plan only when they are a known combination: a launch script with its MindSpeed-MM
``model.json``, a torchtitan TOML or a HyperParallel YAML with a Hugging Face ``config.json``. Any other config
can take its model from another file only through ``--model``, which says which file wins. Two unrelated files
(a 13B MindFormers YAML and a Qwen 7B launch script) would otherwise be priced as one mixed plan without a word.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ..errors import ConfigError
from ..messages import Listing, msg
from ..warnings import EstimateWarning
from .support import Reading

# (strategy file's format, model file's format) pairs that describe one job
KNOWN_PAIRS = frozenset({
    ("mindspeed_script", "mindspeed_model"),
    ("torchtitan", "hf_config"),
    ("hyperparallel", "hf_config"),
    ("deepspeed", "hf_config"),
    ("torchtitan_py", "hf_config"),
})
# what each format is, in the user's words
LABELS = {
    "mindformers": "a MindFormers YAML", "mindspeed_script": "a launch script", "mindspeed_model": "a MindSpeed-MM "
    "model.json", "torchtitan": "a torchtitan TOML", "hyperparallel": "a HyperParallel YAML",
    "hf_config": "a Hugging Face config.json", "plan": "a plan file", "megatron": "a Megatron-LM launch script",
    "deepspeed": "a DeepSpeed JSON", "llamafactory": "a LLaMA-Factory YAML",
    "torchtitan_py": "a torchtitan config registry (Python)", "megatron_bridge": "a Megatron-Bridge YAML",
    "megatron_bridge_py": "a Megatron-Bridge recipe (Python)",
}
ALLOWED = ("a launch script with its model.json, a torchtitan TOML or registry, a HyperParallel YAML or a DeepSpeed "
           "JSON with a config.json, or one config with --model FILE for its model")


def label(reading: Reading) -> str:
    return f"{reading.path} ({LABELS.get(reading.format, reading.format)})"


def check_combination(readings: Sequence[Reading]) -> None:
    """Refuse files given together (not through ``--model``) that are not one known combination, naming them."""
    if len(readings) <= 1:
        return
    names = " and ".join(label(r) for r in readings)
    if len(readings) == 2:
        first, second = readings
        for strategy, model in ((first, second), (second, first)):
            if (strategy.format, model.format) in KNOWN_PAIRS:
                return
    raise ConfigError(msg("combination.one-plan-files", names=names, ALLOWED=ALLOWED))


# a model size in a file or checkpoint name: 7b, 72B, 0.5b, 1_5b (not the 3b of "a3b", an active-parameter count)
_SIZE = re.compile(r"(?<![a-z0-9])(\d+(?:[._]\d+)?)([bm])(?![a-z0-9])")


def model_sizes(text: str) -> set[str]:
    """The model sizes a path names ("Qwen2.5-VL-72B-Instruct" → {"72b"})."""
    return {number.replace("_", ".") + unit for number, unit in _SIZE.findall(text.lower())}


def mismatched_model(readings: Sequence[Reading]) -> list[EstimateWarning]:
    """W-MODEL-PAIR when a launch script names its model (``--mm-model FILE``, ``--load CKPT``) by a size that the
    name of the MindSpeed-MM model.json given with it contradicts (a 72B script with a 7B model.json): the plan
    would price one model's strategy with another's shape."""
    found: list[EstimateWarning] = []
    for script in (r for r in readings if r.format == "mindspeed_script" and r.references):
        for model in (r for r in readings if r.format == "mindspeed_model"):
            given = os.path.basename(model.path)
            if any(os.path.basename(value.strip()) == given for _, value in script.references):
                continue  # the very file the script passes
            named = model_sizes(given)
            stated = [(where, value) for where, value in script.references if model_sizes(value)]
            if named and stated and not any(model_sizes(value) & named for _, value in stated):
                found.append(EstimateWarning("W-MODEL-PAIR", msg(
                    "W-MODEL-PAIR", script=script.path, model=model.path,
                    references=Listing(f"{where} {value.strip()}" for where, value in stated))))
    return found
