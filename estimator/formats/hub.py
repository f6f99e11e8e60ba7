"""A model named by Hub id or local model directory (``--model Qwen/Qwen3-8B``, a fine-tuning config's
``model_name_or_path``, a script's tokenizer): its config from the local Hugging Face cache or the shipped
catalogue (``estimator.catalogue``), read as a ``config.json`` is, with the source said in an assumption."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import catalogue
from ..errors import ConfigError
from ..messages import msg
from ..nearest import suggest
from ..parsed import Provenance
from ..warnings import Assumption, EstimateWarning
from .common import load_json, read_text
from .hf import looks_like_hf, read_hf, unknown_hf_keys, unmodelled_features
from .support import Collector, Reading


def read_config_json(path: Path) -> Any:
    """A local config.json through the readers' bounded loader (size, nesting, digits)."""
    return load_json(read_text(path), str(path))


def is_model_name(path: str) -> bool:
    """Whether ``path`` names a model rather than a config file: a directory holding a config.json, or a Hub id
    that is no file (any other directory is refused as one by the loader)."""
    p = Path(path)
    try:
        return (p / "config.json").is_file() or (not p.exists() and catalogue.HUB_ID.fullmatch(path.strip())
                                                 is not None)
    except (OSError, ValueError):  # a name no file system takes (too long, a NUL byte): the reader says why
        return False


def model_reading(name: str) -> Reading:
    """The model ``name`` refers to, as a model-role Reading; a ConfigError when nothing knows it."""
    found = catalogue.resolve(name, read_config_json)
    if found is None or not looks_like_hf(found.config):
        near = suggest(name, list(catalogue.all_ids()), cutoff=0.75)
        raise ConfigError(msg("hub.no-such-model.near", near=near) if near else msg("hub.no-such-model"), path=name)
    return reading_of(name, found)


def reading_of(name: str, found: catalogue.Found) -> Reading:
    values, prov, notes = read_hf(found.config, found.path or name)
    where = found.path or (found.entry.id if found.entry else name)
    for key, p in list(prov.items()):
        prov[key] = Provenance(p.source, path=where, key=p.key, raw=p.raw)
    if found.entry is not None:
        values["model.name"] = found.entry.name
    # what the config has that the estimator does not model (sliding windows …) or know is said, as for a config.json
    # given as a file
    said = unknown_hf_keys(found.config, where) + unmodelled_features(found.config, where)
    reading = Reading("hf_config", "model", values, prov,
                      [*(EstimateWarning("W-MODEL-NOTE", msg("W-MODEL-NOTE.text", name=name,
                                                             note=note)) for note in notes), *said],
                      [Assumption("model", name, msg("hub.model-s-config", how=found.how))],
                      text=json.dumps(found.config, indent=2), path=name)
    return reading


def collect_model(out: Collector, name: str, named_by: str, file_wins: bool = False) -> bool:
    """The model ``name`` into ``out`` (values with their provenance, notes, the assumption naming the file or
    catalogue entry); a W-MODEL warning naming ``named_by`` and the fix when nothing knows it. ``file_wins``: only
    the fields ``out`` does not hold yet are taken (a framework that applies the file's overrides over the model's
    config), and an unknown name is left to the caller to report."""
    found = catalogue.resolve(name, read_config_json)
    if found is None or not looks_like_hf(found.config):
        if not file_wins:
            out.warn("W-MODEL", msg("W-MODEL", named_by=named_by, name=name))
        return False
    reading = reading_of(name, found)
    taken = [k for k in reading.values if not (file_wins and k in out.values)]
    out.values.update({k: reading.values[k] for k in taken})
    out.provenance.update({k: reading.provenance[k] for k in taken if k in reading.provenance})
    out.warnings.extend(reading.warnings)
    out.assumptions.extend(reading.assumptions)
    return True


def vocab_of(name: str) -> tuple[int, str] | None:
    """The vocabulary of the model a tokenizer path or id names, with its source; None when unknown."""
    found = catalogue.resolve(name, read_config_json)
    if found is None:
        return None
    config = found.config.get("text_config", found.config) if isinstance(found.config.get("text_config"),
                                                                          dict) else found.config
    vocab = config.get("vocab_size", found.config.get("vocab_size"))
    if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab <= 0:
        return None
    return vocab, found.how


__all__ = ["collect_model", "is_model_name", "model_reading", "read_config_json", "reading_of", "vocab_of"]
