"""Every bound on what the tool reads, in one place (docs/limits.md explains each one and its message).

Input is bounded where it is read, before anything is allocated from it: a file's size and kind, how far YAML
aliases expand, how deep any document nests, how long an integer's digits run, how far a shell variable grows,
how many files ``base_config`` includes pull in, and the magnitude of every numeric field of a plan. A value
outside a bound is a ConfigError that names the file, the key, the limit and the fix.

The limits are far above any real training config (the largest known model has 126 layers, the largest
vocabulary 262k, the largest cluster ~10^5 devices) and far below what would exhaust memory or time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .data_cache import MAX_CACHE_BYTES  # noqa: F401 (listed with the rest, below)
from .errors import MAX_MESSAGE_CHARS, ConfigError, clip  # noqa: F401 (MAX_MESSAGE_CHARS: listed with the rest)
from .messages import msg

# ------------------------------------------------------------------------------------------ files
MAX_FILE_BYTES = 1 << 20
"""A config, plan, script or config.json is at most 1 MiB: 20 times the largest real one (~50 KiB), and small
enough that the slowest reader (YAML) takes about a second."""
MAX_NESTING = 64
"""Mappings and lists nest at most 64 levels deep (real configs nest fewer than 10)."""
MAX_YAML_NODES = 1_000_000
"""A YAML document holds at most 10^6 values once its aliases are expanded (a 1 MiB file without aliases holds
fewer; "billion laughs" documents expand to 10^9 and more)."""
MAX_INT_DIGITS = 4300
"""An integer is written with at most 4,300 digits: Python's own limit for reading text as an integer
(``sys.get_int_max_str_digits``), which keeps every conversion linear."""
MAX_INCLUDE_DEPTH = 8
"""MindFormers ``base_config`` files include each other at most 8 levels deep (real configs use 1 or 2)."""
MAX_INCLUDED_FILES = 64
"""One config pulls in at most 64 ``base_config`` files, counted every time one is included (a diamond of
includes counts each path, so 2^30 paths cannot hide behind 60 files)."""
MAX_SHELL_VALUE_CHARS = 1 << 20
"""A launch-script variable or command expands to at most 1 MiB of text (``X=$X$X`` doubles it every line)."""
MAX_SHELL_VALUE_PARTS = 1 << 14
"""… and to at most 16,384 pieces (each piece remembers where in the script it came from, for the writer; real
launch scripts build values of a few hundred)."""
MAX_SHELL_NESTING = 16
"""``${A:-${B:-…}}`` nests at most 16 levels (real scripts nest 2 or 3; each level scans its text again)."""

# ------------------------------------------------------------------------------------------ plan fields
MAX_LAYERS = 10_000
"""Transformer layers (and MTP modules, noop layers, layer offsets): the layout is built layer by layer."""
MAX_DEVICES = 1 << 20
"""Devices, and every parallel degree: 1,048,576 (the largest clusters have ~10^5)."""
MAX_WIDTH = 1 << 20
"""Hidden sizes, head dimensions, low-rank widths: 1,048,576 (real models stay below 32,768)."""
MAX_FFN_WIDTH = 1 << 22
"""FFN widths: 4,194,304 (4 × MAX_WIDTH; real models stay below 200,000)."""
MAX_HEADS = 1 << 16
"""Attention heads and KV heads: 65,536 (real models have at most 128)."""
MAX_VOCAB = 1 << 24
"""Vocabulary: 16,777,216 tokens (the largest real vocabulary has 262,144)."""
MAX_EXPERTS = 1 << 20
"""Routed experts: 1,048,576 (real models have at most a few thousand)."""
MAX_SEQ_LENGTH = 1 << 27
"""Sequence length: 134,217,728 tokens (the longest trained contexts have ~10^7)."""
MAX_MICRO_BATCH_SIZE = 1 << 16
"""Micro-batch size: 65,536 sequences."""
MAX_MICRO_BATCHES = 1 << 16
"""Micro-batches per step: 65,536 (the pipeline schedule is replayed micro-batch by micro-batch)."""
MAX_GLOBAL_BATCH = 1 << 30
"""Global batch: 2^30 sequences per step (real runs use up to ~10^5; a Qt spin box holds it)."""
MAX_TOKENS = 1e18
"""Tokens to train on (``sapp fit --tokens``): 10^18 (the largest runs use ~4·10^13)."""
MAX_BYTES_PER_VALUE = 64
"""Byte widths (param_bytes, grad_bytes, …): at most 64 bytes per element (fp32 is 4)."""
MAX_CAPACITY = float(1 << 50)
"""Device memory and byte sizes in options: at most 1 PiB."""
MAX_RATE = 1e21
"""Compute and bandwidth rates: at most 10^21 per second (a zettaFLOP; today's devices reach ~10^16)."""

# ------------------------------------------------------------------------------------------ Python recipes
MAX_PY_STEPS = 1_000_000
"""A Python recipe (torchtitan registry, Megatron-Bridge) is read in at most 10^6 steps (an expression read, a list
element built): recipes calling each other ten times over, 15 levels deep, would take 10^15; the largest real
registry takes a few thousand per recipe."""

# ------------------------------------------------------------------------------------------ logs (sapp calibrate)
MAX_LOG_BYTES = 64 << 20
"""A training log is read from its first 64 MiB (said so): the arguments block and the first iterations are
what calibration reads; a run of 10^5 iterations logs ~30 MiB. Read line by line, never whole."""
MAX_LOG_LINE_BYTES = 64 << 10
"""A log line is read up to 64 KiB (the longest real lines, argument dumps, have a few hundred bytes)."""

# MAX_CACHE_BYTES: defined in data_cache (imported above), which the message catalogue reads before anything else
"""A file of the user's cache folder is read up to 32 MiB: the schedule-replay cache's (replay_cache.py) 20,000
entries take ~14 MiB, the message catalogue's (data_cache.py) ~0.2 MiB."""

# ------------------------------------------------------------------------------------------ search
MAX_CANDIDATES = 3_000_000
"""A search enumerates at most 3·10^6 candidate strategies: about 1.2 GiB at its peak (measured: 2.4·10^6
candidates took 1.0 GiB); an all=auto search of DeepSeek-V3 on 8,192 devices has 1.2·10^6."""
MAX_DIM_VALUES = 1024
"""A search dimension lists at most 1,024 values (``--dims mbs=1,2,…``)."""


@dataclass(frozen=True)
class Bound:
    """A numeric field's range: ``low`` ≤ value ≤ ``high`` (``low_open``: strictly above ``low``); ``what`` names
    the kind of value in the message."""

    low: float
    high: float
    what: str
    low_open: bool = False

    def rule(self) -> str:
        low = f"above {_number(self.low)}" if self.low_open else f"at least {_number(self.low)}"
        return f"{self.what} must be {low} and at most {_number(self.high)}"


def _number(value: float) -> str:
    if float(value).is_integer() and abs(value) >= 1 << 20 and (int(value) & (int(value) - 1)) == 0:
        return f"{int(value):,} (2^{int(value).bit_length() - 1})"
    if abs(value) >= 1e15:
        return f"{value:.0e}"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:g}"


_LAYERS = Bound(1, MAX_LAYERS, "a layer count")
_LAYERS0 = Bound(0, MAX_LAYERS, "a layer count")
_DEGREE = Bound(1, MAX_DEVICES, "a parallel degree")
_WIDTH = Bound(1, MAX_WIDTH, "a width")
_WIDTH0 = Bound(0, MAX_WIDTH, "a width (0: none)")
_FFN = Bound(0, MAX_FFN_WIDTH, "an FFN width")
_HEADS = Bound(1, MAX_HEADS, "a head count")
_HEADS0 = Bound(0, MAX_HEADS, "a head count (0: none)")
_BYTES = Bound(0, MAX_BYTES_PER_VALUE, "a byte width")
_BYTES_POSITIVE = Bound(0, MAX_BYTES_PER_VALUE, "a byte width", low_open=True)
_SIZE = Bound(0, MAX_CAPACITY, "a size in bytes")
_RATE = Bound(0, MAX_RATE, "a rate", low_open=True)
_FRACTION = Bound(0, 1, "a fraction")
_FACTOR = Bound(0, 1024, "a factor")

# canonical field -> its bound; every other numeric field of the registry gets DEFAULT_INT / DEFAULT_FLOAT
FIELD_BOUNDS: dict[str, Bound] = {
    "model.hidden_size": _WIDTH, "model.num_layers": _LAYERS,
    "model.num_attention_heads": _HEADS, "model.num_kv_heads": _HEADS, "model.vocab_size":
        Bound(1, MAX_VOCAB, "a vocabulary size"),
    "model.head_dim": _WIDTH, "model.v_head_dim": _WIDTH, "model.ffn_hidden_size": _FFN,
    "model.make_vocab_divisible_by": Bound(1, MAX_VOCAB, "a vocabulary padding"),
    "model.learned_positions": Bound(0, MAX_SEQ_LENGTH, "a position count"),
    "model.num_experts": Bound(0, MAX_EXPERTS, "an expert count"),
    "model.experts_per_token": Bound(0, MAX_EXPERTS, "an expert count"),
    "model.num_shared_experts": Bound(0, MAX_EXPERTS, "an expert count"),
    "model.moe_ffn_hidden_size": _FFN, "model.shared_ffn_hidden_size": _FFN,
    "model.first_k_dense": _LAYERS0, "model.moe_layer_freq": _LAYERS, "model.mtp_layers": _LAYERS0,
    "model.capacity_factor": Bound(0, 1024, "a capacity factor"),
    "model.q_lora_rank": _WIDTH0, "model.kv_lora_rank": _WIDTH0, "model.qk_rope_head_dim": _WIDTH0,
    "model.linear_num_key_heads": _HEADS0, "model.linear_key_head_dim": _WIDTH0,
    "model.linear_num_value_heads": _HEADS0, "model.linear_value_head_dim": _WIDTH0,
    "model.linear_conv_kernel": Bound(1, 1 << 10, "a convolution width"),
    "model.index_n_heads": _HEADS, "model.index_head_dim": _WIDTH,
    "model.index_topk": Bound(1, MAX_SEQ_LENGTH, "a key count"),
    "model.mamba_num_heads": _HEADS, "model.mamba_head_dim": _WIDTH, "model.mamba_state_dim": _WIDTH,
    "model.mamba_num_groups": _HEADS, "model.mamba_conv_kernel": Bound(1, 1 << 10, "a convolution width"),
    "strategy.seq_length": Bound(1, MAX_SEQ_LENGTH, "a sequence length"),
    "strategy.dp": _DEGREE, "strategy.tp": _DEGREE, "strategy.pp": _DEGREE, "strategy.cp": _DEGREE,
    "strategy.ep": _DEGREE, "strategy.etp": _DEGREE, "strategy.d_rep": _DEGREE, "strategy.d_sh": _DEGREE,
    "strategy.ulysses_degree": _DEGREE, "strategy.shard_size": _DEGREE, "strategy.expert_shard_size": _DEGREE,
    "strategy.vpp": Bound(1, MAX_LAYERS, "a virtual pipeline degree"),
    "strategy.micro_batch_size": Bound(1, MAX_MICRO_BATCH_SIZE, "a micro-batch size"),
    "strategy.micro_batches": Bound(1, MAX_MICRO_BATCHES, "a micro-batch count"),
    "strategy.n_acc": Bound(1, MAX_MICRO_BATCHES, "a gradient-accumulation count"),
    "strategy.n_s": Bound(1, MAX_MICRO_BATCHES, "a sequence split count"),
    "strategy.vpp_group": Bound(1, MAX_MICRO_BATCHES, "a micro-batch group"),
    "strategy.uniform_group": _LAYERS0, "strategy.moe_zero_memory_layers": _LAYERS0,
    "strategy.swap_times": Bound(1, 1 << 10, "a swap count"),
    "strategy.fp8_amax_history": Bound(1, 1 << 16, "an amax history length"),
    "strategy.lora_rank": Bound(0, MAX_WIDTH, "a LoRA rank (0: none)"),
    "strategy.n_optimizer_states": Bound(0, 16, "an optimizer state count"),
    "strategy.param_bytes": _BYTES_POSITIVE, "strategy.compute_bytes": _BYTES_POSITIVE,
    "strategy.grad_bytes": _BYTES, "strategy.master_bytes": _BYTES, "strategy.optimizer_state_bytes": _BYTES,
    "strategy.softmax_bytes": _BYTES, "strategy.dropout_mask_bytes": _BYTES, "strategy.norm_bytes": _BYTES,
    "strategy.residual_bytes": _BYTES, "strategy.loss_bytes": _BYTES, "strategy.reduce_bytes": _BYTES,
    "strategy.frozen_param_bytes": _BYTES_POSITIVE,
    "hardware.capacity": Bound(0, MAX_CAPACITY, "a device memory size", low_open=True),
    "hardware.eff_matmul": Bound(0, 1, "an efficiency", low_open=True),
    "hardware.eff_hbm": Bound(0, 1, "an efficiency", low_open=True),
    "hardware.hbm_bandwidth": _RATE, "hardware.host_link_bandwidth": _RATE,
    "options.reserve": _SIZE, "options.margin": _SIZE, "options.budget_override": _SIZE,
    "options.max_device_memory": Bound(0, MAX_CAPACITY, "a memory limit", low_open=True),
    "options.comm_lib_per_group": _SIZE,
    "options.frag_fraction": _FRACTION, "options.rho": Bound(0, 1024, "a factor", low_open=True),
    "options.causal_factor": _FRACTION,
    "options.overlap_tp": _FRACTION, "options.overlap_cp": _FRACTION, "options.overlap_ep": _FRACTION,
    "options.overlap_pp": _FRACTION, "options.overlap_dp": _FRACTION, "options.overlap_fsdp": _FRACTION,
    "options.k_ew_fwd": _FACTOR, "options.k_ew_bwd": _FACTOR,
}
# the vision tower's fields (model.vision); a tower's tokens per image count as sequence length
VISION_BOUNDS: dict[str, Bound] = {
    "num_layers": _LAYERS, "hidden_size": _WIDTH, "ffn_hidden_size": _FFN, "num_attention_heads": _HEADS,
    "num_kv_heads": _HEADS, "head_dim": _WIDTH, "patch_size": Bound(1, 1 << 12, "a patch size"),
    "in_channels": Bound(1, 1 << 12, "a channel count"), "temporal_patch_size": Bound(1, 1 << 12, "a patch size"),
    "spatial_merge_size": Bound(1, 1 << 12, "a merge size"), "out_hidden_size": _WIDTH,
    "seq_length": Bound(1, MAX_SEQ_LENGTH, "a sequence length"),
    "num_position_embeddings": Bound(1, MAX_SEQ_LENGTH, "a position count"),
}
DEFAULT_INT = Bound(0, 1 << 40, "an integer")
DEFAULT_FLOAT = Bound(0, 1e30, "a number")
LAYER_ENTRY = Bound(-MAX_LAYERS, MAX_LAYERS, "a per-stage layer entry")
"""Entries of per-stage lists (offsets, partitions, recompute counts) and their length."""


def bound_of(qualified: str, kind: type) -> Bound:
    """The bound of a numeric field (``kind`` int or float)."""
    return FIELD_BOUNDS.get(qualified) or (DEFAULT_INT if kind is int else DEFAULT_FLOAT)


def check_number(value: int | float, bound: Bound, *, path: str | None = None, key: str | None = None) -> Any:
    """``value`` when it lies within ``bound`` (and is finite), else a ConfigError stating the rule."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(msg("limits.finite-number", value=value, rule=bound.rule()), path=path, key=key)
    below = value <= bound.low if bound.low_open else value < bound.low
    if below or value > bound.high:
        raise ConfigError(msg("limits.out-range", shown=_shown(value), rule=bound.rule()), path=path, key=key)
    return value


def _shown(value: int | float) -> str:
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a number of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    return str(value)


def check_totals(strategy: Any, where: str | None = None) -> None:
    """The products of a strategy's fields within their bounds: dp·tp·pp·cp devices and the global batch
    mbs·dp·micro_batches·n_acc (each factor is bounded alone, their product too)."""
    world = strategy.world_size
    if world > MAX_DEVICES:
        raise ConfigError(msg("limits.dp-tp-pp", dp=strategy.dp, tp=strategy.tp, pp=strategy.pp, cp=strategy.cp,
                              world=world, number=_number(MAX_DEVICES)),
                          path=where, key="strategy.dp")
    batch = strategy.global_batch_size
    if batch > MAX_GLOBAL_BATCH:
        raise ConfigError(msg("limits.micro_batch_size-dp-micro_batches", micro_batch_size=strategy.micro_batch_size,
                              dp=strategy.dp, micro_batches=strategy.micro_batches, n_acc=strategy.n_acc, batch=batch,
                              number=_number(MAX_GLOBAL_BATCH)),
                          path=where, key="strategy.micro_batches")


def check_list(values: Any, *, path: str | None = None, key: str | None = None, bound: Bound = LAYER_ENTRY) -> Any:
    """A per-stage list (ints, or a list of lists of ints): at most MAX_LAYERS entries, each within ``bound``."""
    if isinstance(values, (list, tuple)):
        if len(values) > MAX_LAYERS:
            raise ConfigError(msg("limits.list-entries-most", n_values=len(values), MAX_LAYERS=MAX_LAYERS), path=path,
                              key=key)
        for item in values:
            check_list(item, path=path, key=key, bound=bound)
    elif isinstance(values, (int, float)) and not isinstance(values, bool):
        check_number(values, bound, path=path, key=key)
    return values


def short_repr(value: Any, limit: int = 120) -> str:
    """A repr for a message, shortened (a huge value does not become a huge message)."""
    import reprlib

    r = reprlib.Repr()
    r.maxstring = r.maxother = r.maxlong = limit
    r.maxlist = r.maxtuple = r.maxdict = r.maxset = 8
    r.maxlevel = 3
    return clip(r.repr(value), limit * 2)

