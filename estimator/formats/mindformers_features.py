"""The issue-11 keys of a MindFormers config — ``model.model_config.pet_config`` (LoRA) — read into
``strategy.*``. A mixin of the MindFormers reader, kept apart so each feature's keys live in one place."""

from __future__ import annotations

from ..features import lora_targets_of
from .mindformers_schema import MC, mindformers_dtype
from .mindformers_source import MISSING, MindFormersSource

PET = (*MC, "pet_config")
# MindFormers' LoraConfig defaults (mindformers/pet/pet_config.py)
LORA_DEFAULTS = {"lora_rank": 8, "lora_dropout": 0.01, "param_init_type": "float16"}


class FeatureReader(MindFormersSource):
    def read_features(self) -> None:
        self.read_pet()

    def read_pet(self) -> None:
        """``pet_config`` (pet_type lora): rank, dropout, the adapters' param_init_type and the target_modules
        regular expression ('.*wq|.*wk|.*wv|.*wo'), whose module names map onto canonical targets."""
        pet = self.section(PET)
        if not pet:
            return
        kind = str(pet.get("pet_type", "")).strip().lower()
        if kind != "lora":
            self.warn("W-UNMODELLED", f"pet_config.pet_type {pet.get('pet_type')!r} is not modelled; priced as a full "
                                      "fine-tune")
            return
        keys = (*PET, "target_modules")
        pattern = self.get(keys)
        if pattern is MISSING or not isinstance(pattern, str | list):
            raise self.fail(keys, "LoRA needs target_modules (a regular expression such as '.*wq|.*wk|.*wv|.*wo')")
        names = pattern if isinstance(pattern, list) else str(pattern).split("|")
        targets, unknown = lora_targets_of([str(n) for n in names])
        if unknown:
            self.warn("W-LORA-TARGET", f"pet_config.target_modules {' | '.join(unknown)}: not a module the estimator "
                                       "knows; not adapted")
        if not targets:
            raise self.fail(keys, f"target_modules {pattern!r} names no module the estimator knows (wq, wk, wv, wo, "
                                  "w1, w2, w3, w_qkv, linear_qkv, …)")
        self.put_at("strategy.peft", "lora", (*PET, "pet_type"))
        self.put_at("strategy.lora_targets", targets, keys)
        rank = self.int_at((*PET, "lora_rank"), 1, 1 << 20)
        self.put_or_default("strategy.lora_rank", rank, (*PET, "lora_rank"), LORA_DEFAULTS["lora_rank"],
                            "MindFormers LoraConfig default lora_rank")
        dropout = self.float_at((*PET, "lora_dropout"))
        if dropout is not None and not 0 <= dropout < 1:
            raise self.fail((*PET, "lora_dropout"), f"must be in [0, 1); got {dropout}")
        self.put_or_default("strategy.lora_dropout", dropout, (*PET, "lora_dropout"), LORA_DEFAULTS["lora_dropout"],
                            "MindFormers LoraConfig default lora_dropout")
        dtype_keys = (*PET, "param_init_type")
        dtype = self.get(dtype_keys)
        if dtype is MISSING:
            self.assume("strategy.lora_param_bytes", 2.0, "MindFormers LoraConfig default param_init_type float16")
        else:
            size, _fp8 = mindformers_dtype(dtype, ".".join(dtype_keys), self.origin(dtype_keys))
            self.put_at("strategy.lora_param_bytes", float(size), dtype_keys)
