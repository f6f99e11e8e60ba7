"""Which files may be given together as one plan (issue 12 item 2).

Several files make one plan only when they are a known combination: a launch script with its MindSpeed-MM
``model.json``, a torchtitan TOML or a HyperParallel YAML with a Hugging Face ``config.json``. Any other config
can take its model from another file only through ``--model``, which says which file wins. Two unrelated files
(a 13B MindFormers YAML and a Qwen 7B launch script) would otherwise be priced as one mixed plan without a word.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ConfigError
from ..messages import msg
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
