"""The issue-11 keys of a MindFormers config — ``model.model_config.pet_config`` (LoRA) and ``swap_config``
(fine-grained activation swap) — read into ``strategy.*``. A mixin of the MindFormers reader, kept apart so each
feature's keys live in one place."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..features import lora_targets_of
from ..messages import msg
from .mindformers_schema import MC, mindformers_dtype
from .mindformers_source import MISSING, MindFormersSource

PET = (*MC, "pet_config")
# MindFormers' LoraConfig defaults (mindformers/pet/pet_config.py)
LORA_DEFAULTS = {"lora_rank": 8, "lora_dropout": 0.01, "param_init_type": "float16"}


SWAP = ("swap_config",)
# op_name keywords of swap_config.op_swap -> offload groups (MindFormers' Llama op names)
SWAP_OPS = (("attention", ("self_attention",)), ("flash", ("self_attention",)), ("feed_forward", ("mlp",)),
            ("mlp", ("mlp",)), ("norm", ("input_norm", "post_attention_norm")))


def layer_slots(layers: int, pp: int, vp: int, offset: Any) -> list[list[range]]:
    """The global layer ids of each [chunk][stage] as MindFormers' LayerSetting places them: ``layers // (pp·vp)``
    per slot plus its offset, chunk-major (mindformers/models/utils.py). With ``swap_config.swap`` on, the
    recompute lists name layers by these ids (``_format_recompute_list_select_layer_index``)."""
    rows = offset if isinstance(offset, tuple | list) and offset and isinstance(offset[0], tuple | list) else \
        [offset] * vp
    avg, start, out = layers // (pp * vp), 0, []
    for row in rows:
        sizes = row if isinstance(row, tuple | list) else [row] * pp
        chunk = []
        for extra in sizes:
            chunk.append(range(start, start + avg + int(extra)))
            start += avg + int(extra)
        out.append(chunk)
    return out


def counts_of_layers(ids: list[int], slots: list[list[range]]) -> Any:
    """Per stage (per chunk and stage when interleaved) how many of the layer ids ``ids`` it holds."""
    rows = tuple(tuple(sum(1 for i in set(ids) if i in slot) for slot in chunk) for chunk in slots)
    return rows[0] if len(rows) == 1 else rows


def layers_of_counts(counts: Any, slots: list[list[range]]) -> list[int]:
    """The layer ids of per-stage (or per chunk and stage) counts: the first ``count`` layers of each slot, as the
    estimator prices them."""
    if isinstance(counts, int):
        rows: Any = [[counts] * len(slots[0])] * len(slots)
    elif counts and isinstance(counts[0], tuple | list):
        rows = counts
    else:
        rows = [counts]
    return [i for chunk, row in zip(slots, rows, strict=True) for slot, k in zip(chunk, row, strict=True)
            for i in (list(slot) if k is True else list(slot)[:int(k)])]  # True: every layer of the slot


def ranges_of(ids: list[int], option: str) -> list[dict[str, Any]]:
    """Sorted layer indices as recompute ranges ``{first, count, option}``, one per run of consecutive ids."""
    out: list[dict[str, Any]] = []
    for i in sorted(set(ids)):
        if out and out[-1]["first"] + out[-1]["count"] == i:
            out[-1]["count"] += 1
        else:
            out.append({"first": i, "count": 1, "option": option})
    return out


def ids_of_ranges(ranges: Any, option: str) -> list[int]:
    """The layer indices of the recompute ranges with ``option``."""
    return sorted({i for r in ranges if r.option == option for i in range(r.first, r.first + r.count)})


class FeatureReader(MindFormersSource):
    def read_features(self) -> None:
        self.read_pet()
        self.read_swap()

    def read_swap(self) -> None:
        """``swap_config``: swap on with neither layer_swap nor op_swap swaps every layer's flash-attention
        activations (MindFormers' default policy); layer_swap swaps whole layers, op_swap the named operators,
        each entry in the layers its ``layers`` names (True: every layer) — global layer ids, as LayerSetting's
        ``set_swap`` checks ``layer_id in layers`` (mindformers/parallel_core/training_graph/transformer/utils.py),
        read into ``strategy.offload_layers`` (model order, D-SWAP-LAYERS)."""
        if not self.bool_at((*SWAP, "swap")):
            return
        covered: dict[str, set[int] | None] = {}  # group -> its layer ids (None: every layer)

        def add(groups: list[str], keys: tuple[str, ...], layers: Any) -> None:
            ids = None if layers is True else self.swap_layer_ids(keys, layers)
            for group in groups:
                if ids is None or covered.get(group, set()) is None:
                    covered[group] = None
                else:
                    covered[group] = covered.get(group, set()) | ids  # type: ignore[operator]

        layer_swap = self.get((*SWAP, "layer_swap"))
        if layer_swap is not MISSING and layer_swap:
            entries = layer_swap if isinstance(layer_swap, list) else [layer_swap]
            first = entries[0].get("layers") if isinstance(entries[0], dict) else None
            if first is True:  # LayerSetting.set_swap: a bool in the first entry swaps every layer
                add(["layer"], (*SWAP, "layer_swap", "0", "layers"), True)
            else:
                for k, entry in enumerate(entries):
                    add(["layer"], (*SWAP, "layer_swap", str(k), "layers"),
                        entry.get("layers") if isinstance(entry, dict) else None)
        op_swap = self.get((*SWAP, "op_swap"))
        if op_swap is not MISSING and op_swap:
            entries = op_swap if isinstance(op_swap, list) else [op_swap]
            for k, entry in enumerate(entries):
                name = str(entry.get("op_name", "")).lower() if isinstance(entry, dict) else ""
                found = [g for word, gs in SWAP_OPS if word in name for g in gs]
                if not found:
                    self.warn("W-UNMODELLED", msg("W-UNMODELLED.swap_config-op_swap-op_name", name=name))
                    continue
                add(found, (*SWAP, "op_swap", str(k), "layers"), entry.get("layers"))
        if layer_swap is MISSING and op_swap is MISSING:
            covered["self_attention"] = None  # the default policy: flash attention in every layer
        groups = [g for g, ids in covered.items() if ids is None or ids]
        if not groups:
            return
        self.put_at("strategy.offload_activations", tuple(groups), (*SWAP, "swap"))
        lists = [{"group": g, "layers": sorted(ids)} for g, ids in covered.items() if ids is not None and ids]
        if lists:  # a group without a list swaps in every layer
            self.put_at("strategy.offload_layers", lists, SWAP)

    def model_layers(self) -> int:
        """Body + MTP layers in model order."""
        return int(self.values.get("model.num_layers", 0)) + int(self.values.get("model.mtp_layers", 0))

    def swap_layer_ids(self, keys: tuple[str, ...], layers: Any) -> set[int]:
        """The model-order indices a swap ``layers`` list names. MindFormers' ids are global layer ids; legacy
        models number MTP layers after the body (num_layers + k, counted in the offsets), while mcore models give
        every MTP layer the last body layer's id (``layer_setting(mtp_layer, num_layers - 1)`` since b14a730), so
        there id num_layers − 1 also swaps the MTP layers and ids num_layers … num_layers + mtp − 1 name no layer
        (warned, not priced)."""
        if layers is False or layers is None:
            return set()
        if not isinstance(layers, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in layers):
            raise ConfigError(msg("mindformers_features.swap-layers-list", value=layers), path=self.origin(keys[:2]),
                              key=".".join(keys))
        body = int(self.values.get("model.num_layers", 0))
        mtp = int(self.values.get("model.mtp_layers", 0))
        bad = [i for i in layers if not 0 <= i < body + mtp]
        if bad:
            raise ConfigError(msg("mindformers_read.swap-layer-ids", ids=bad, layers=body + mtp),
                              path=self.origin(keys[:2]), key=".".join(keys))
        ids = self.mcore_mtp_ids(keys, set(layers))
        if mtp and not self.values.get("strategy.mtp_in_offset") and body - 1 in ids:
            ids |= set(range(body, body + mtp))  # the MTP layers carry the last body layer's id
        return ids

    def mcore_mtp_ids(self, keys: tuple[str, ...], ids: set[int]) -> set[int]:
        """``ids`` less those a MindFormers mcore model gives no layer: its MTP layers take the last body layer's
        id, so ids num_layers … num_layers + mtp − 1 (MTP ids in a legacy model) match nothing — said, not
        refused (MindFormers ignores them too)."""
        body = int(self.values.get("model.num_layers", 0))
        if not self.values.get("model.mtp_layers") or self.values.get("strategy.mtp_in_offset"):
            return ids
        unmatched = sorted(i for i in ids if i >= body)
        if unmatched:
            self.warn("W-MF-MTP-LAYER-ID", msg("W-MF-MTP-LAYER-ID", path=self.origin(keys[:2]), key=".".join(keys),
                                                ids=unmatched, last=body - 1))
        return {i for i in ids if i < body}

    def read_pet(self) -> None:
        """``pet_config`` (pet_type lora): rank, dropout, the adapters' param_init_type and the target_modules
        regular expression ('.*wq|.*wk|.*wv|.*wo'), whose module names map onto canonical targets."""
        pet = self.section(PET)
        if not pet:
            return
        kind = str(pet.get("pet_type", "")).strip().lower()
        if kind != "lora":
            self.warn("W-UNMODELLED", msg("W-UNMODELLED.pet_config-pet_type-modelled", pet_type=pet.get('pet_type')))
            return
        keys = (*PET, "target_modules")
        pattern = self.get(keys)
        if pattern is MISSING or not isinstance(pattern, str | list):
            raise self.fail(keys, msg("mindformers_features.lora-needs-target_modules"))
        names = pattern if isinstance(pattern, list) else str(pattern).split("|")
        targets, unknown = lora_targets_of([str(n) for n in names])
        if unknown:
            self.warn("W-LORA-TARGET", msg("W-LORA-TARGET.pet_config-target_modules-module",
                                           unknown=' | '.join(unknown)))
        if not targets:
            raise self.fail(keys, msg("mindformers_features.target_modules-names-module", pattern=pattern))
        self.put_at("strategy.peft", "lora", (*PET, "pet_type"))
        self.put_at("strategy.lora_targets", targets, keys)
        rank = self.int_at((*PET, "lora_rank"), 1, 1 << 20)
        self.put_or_default("strategy.lora_rank", rank, (*PET, "lora_rank"), LORA_DEFAULTS["lora_rank"],
                            msg("mindformers_features.mindformers-loraconfig-default-2"))
        dropout = self.float_at((*PET, "lora_dropout"))
        if dropout is not None and not 0 <= dropout < 1:
            raise self.fail((*PET, "lora_dropout"), msg("mindformers_features.must-got", dropout=dropout))
        self.put_or_default("strategy.lora_dropout", dropout, (*PET, "lora_dropout"), LORA_DEFAULTS["lora_dropout"],
                            msg("mindformers_features.mindformers-loraconfig-default-3"))
        dtype_keys = (*PET, "param_init_type")
        dtype = self.get(dtype_keys)
        if dtype is MISSING:
            self.assume("strategy.lora_param_bytes", 2.0, msg("mindformers_features.mindformers-loraconfig-default"))
        else:
            size, _fp8 = mindformers_dtype(dtype, ".".join(dtype_keys), self.origin(dtype_keys))
            self.put_at("strategy.lora_param_bytes", float(size), dtype_keys)
