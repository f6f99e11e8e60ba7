"""Enumerating candidates as numpy integer columns (docs/model.md#search): never one Python object per candidate.

t | N; p | N/t; cp | N/(t·p); d = N/(t·p·cp) (every device used); b within bounds with m = G/(d·b); ep | d·t·cp
and ep | n_exp; etp, os from the framework's set; vp, sp and the recompute mode. Undeclared dimensions keep
the parsed value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..limits import MAX_CANDIDATES
from ..messages import msg
from ..parsed import ParsedConfig
from .space import Dim, SearchSpace

COLUMNS = ("t", "p", "cp", "d", "b", "m", "ep", "etp", "vp", "os", "sp", "rec", "d_sh")
KEEP_PARSED_REC = -1  # rec dimension undeclared: the parsed recompute plan (rescaled when pp/vpp change)


@dataclass
class Candidates:
    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.columns["t"])

    def take(self, index: np.ndarray) -> Candidates:
        return Candidates({k: v[index] for k, v in self.columns.items()})

    def row(self, k: int) -> dict[str, int]:
        return {name: int(col[k]) for name, col in self.columns.items()}


def divisors(n: int) -> list[int]:
    """Every divisor of ``n`` (none for n < 1), in order, from its prime factorisation: the time grows with the
    square root of the largest prime factor, not of ``n`` (10^18 = 2^18·5^18 is instant)."""
    if n < 1:
        return []
    factors: dict[int, int] = {}
    rest, k = n, 2
    while k * k <= rest:
        while rest % k == 0:
            factors[k] = factors.get(k, 0) + 1
            rest //= k
        k += 1 if k == 2 else 2
    if rest > 1:
        factors[rest] = factors.get(rest, 0) + 1
    out = [1]
    for prime, power in factors.items():
        out = [d * prime ** i for d in out for i in range(power + 1)]
    return sorted(out)


def _values(dim: Dim | None, parsed_value: int, auto_values: list[int]) -> list[int]:
    if dim is None:
        return [parsed_value]
    if dim.auto:
        return auto_values
    return list(dim.values)


Block = tuple[int, int, int, int, list[list[int]]]  # (t, p, cp, d, the values of VALUE_DIMS)
VALUE_DIMS = ("b", "ep", "etp", "vp", "os", "sp", "rec")  # a block's product, in enumeration order (rec fastest)


def enumerate_candidates(parsed: ParsedConfig, space: SearchSpace) -> Candidates:
    """Every candidate of the space, in enumeration order: blocks by (t, p, cp), each block the product of its
    VALUE_DIMS (the search itself builds only the survivors of the cheap rules: ``sieve``)."""
    blocks = candidate_blocks(parsed, space)
    if not blocks:
        return Candidates({c: np.zeros(0, dtype=np.int64) for c in COLUMNS})
    grids = [np.meshgrid(*[np.asarray(v, dtype=np.int64) for v in values], indexing="ij") for *_, values in blocks]
    return Candidates(block_columns(parsed, space.global_batch, blocks, grids))


def candidate_blocks(parsed: ParsedConfig, space: SearchSpace) -> list[Block]:
    """The (t, p, cp, d) blocks of the space with the values of every other dimension; blocks with an empty
    dimension are left out. Raises ConfigError when the space holds more than MAX_CANDIDATES candidates."""
    model, st, fw_name = parsed.model, parsed.strategy, parsed.options.framework
    n = space.devices
    heads = model.num_attention_heads
    per_node = parsed.hardware.devices_per_node
    tp_max = space.bounds.tp_max or min(per_node, heads)
    l_eff = model.num_layers + len(st.noop_layers) + (model.mtp_layers if st.mtp_in_offset else 0) + \
        (2 if st.emb_out_in_offset else 0)
    pp_max = space.bounds.pp_max or min(l_eff, max(min(n, per_node), n // per_node))
    cp_max = max(1, st.seq_length // space.bounds.cp_tokens)
    vp_values = _values(space.dim("vpp"), st.vpp, list(range(1, space.bounds.vpp_max + 1)))
    b_values = _values(space.dim("mbs"), st.micro_batch_size, list(range(1, space.bounds.mbs_max + 1)))
    sp_values = _values(space.dim("sp"), int(st.sequence_parallel), [0, 1])
    rec_values = _values(space.dim("rec"), KEEP_PARSED_REC, _rec_auto(st))
    n_exp = model.num_experts if model.is_moe else 0
    mode = st.sharding.mode

    plan: list[Block] = []
    for t in _values(space.dim("tp"), st.tp, [x for x in divisors(n) if x <= tp_max]):
        if n % t:
            continue
        for p in _values(space.dim("pp"), st.pp, [x for x in divisors(n // t) if x <= pp_max]):
            if n % (t * p):
                continue
            for cp in _values(space.dim("cp"), st.cp, [x for x in divisors(n // (t * p)) if x <= cp_max]):
                if n % (t * p * cp):
                    continue
                d = n // (t * p * cp)
                ep_auto = [x for x in divisors(d * t * cp) if n_exp and n_exp % x == 0] if n_exp else [1]
                ep_values = _values(space.dim("ep"), st.ep, ep_auto)
                etp_values = _etp_set(fw_name, space.dim("etp"), st.etp, t, model.is_moe)
                os_values = _os_set(fw_name, mode, space.dim("os"), st, d, cp)
                # the plan's sequence parallel at TP 1 is off, as Megatron turns it off there (searched or
                # listed, sp=1 at t=1 is a duplicate of sp=0 and refused: R-SP-T1)
                t_sp = [0] if t == 1 and space.dim("sp") is None else sp_values
                plan.append((t, p, cp, d, [b_values, ep_values, etp_values, vp_values, os_values, t_sp,
                                           rec_values]))
    check_count(plan)  # before anything is allocated
    return [block for block in plan if all(block[4])]


def block_columns(parsed: ParsedConfig, g: int, blocks: list[Block],
                  grids: list[list[np.ndarray]]) -> dict[str, np.ndarray]:
    """The COLUMNS of the rows ``grids`` name, block after block: per block one array per VALUE_DIMS (values of
    that dimension, of one shape); derived here: m = G/(d·b·n_acc) (0: none), with G the space's global batch,
    and FSDP2's d_sh."""
    st = parsed.strategy
    n_acc = st.n_acc
    # column-major ([column, candidate]) so that every column is a contiguous view; each block is written in
    # place (no per-block copies to concatenate: a cold process pays for every page it touches first)
    table = np.empty((len(COLUMNS), sum(grid[0].size for grid in grids)), dtype=np.int64)
    start = 0
    for (t, p, cp, d, _values), grid in zip(blocks, grids, strict=True):
        b, ep, etp, vp, os, sp, rec = (x.reshape(-1) for x in grid)
        block = table[:, start:start + len(b)]
        start += len(b)
        block[0], block[1], block[2], block[3] = t, p, cp, d
        block[4] = b
        with np.errstate(divide="ignore"):
            # m = G/(d·b·n_acc): the plan's accumulation steps (flushes per step) stay
            block[5] = np.where(g % (d * b * n_acc) == 0, g // (d * b * n_acc), 0)
        block[6] = ep
        block[7] = np.where(etp == 0, t, etp)  # 0 encodes "= t"
        block[8], block[9], block[10], block[11] = vp, os, sp, rec
        span = cp if st.sharding.span_cp else 1
        block[12] = np.where(os % span == 0, os // span, d)  # FSDP2: d_sh = os/span
    return {name: table[k] for k, name in enumerate(COLUMNS)}


def check_count(plan: list[tuple[int, int, int, int, list[list[int]]]]) -> int:
    """The number of candidates ``plan`` builds; a ConfigError naming the dimensions to narrow when it exceeds
    MAX_CANDIDATES (each candidate costs a few hundred bytes through the pricing)."""
    total = sum(math.prod(len(v) for v in values) for *_, values in plan)
    if total <= MAX_CANDIDATES:
        return total
    widest: dict[str, int] = {"tp": len({t for t, *_ in plan}), "pp": len({p for _, p, *_ in plan}),
                              "cp": len({cp for _, _, cp, *_ in plan})}
    for name, k in (("mbs", 0), ("ep", 1), ("etp", 2), ("vpp", 3), ("os", 4), ("sp", 5), ("rec", 6)):
        widest[name] = max(len(values[k]) for *_, values in plan)
    varied = ", ".join(f"{name} {count}" for name, count in sorted(widest.items(), key=lambda kv: -kv[1])
                       if count > 1)
    raise ConfigError(msg("candidates.search-space-has", total=total, MAX_CANDIDATES=MAX_CANDIDATES, varied=varied))


def _rec_auto(st) -> list[int]:
    """Recompute modes an auto ``rec`` tries: none, selective, full, and the plan's own per-stage / per-op
    recompute when it is not one of those (it may beat all three: issue 12)."""
    plan = st.recompute
    own = plan.full_counts is not None or plan.sel_counts is not None or plan.comm_counts is not None or \
        bool(plan.ranges)
    return [KEEP_PARSED_REC, 0, 1, 2] if own else [0, 1, 2]


def _etp_set(framework: str, dim: Dim | None, parsed: int | None, t: int, moe: bool) -> list[int]:
    """Expert TP values: torchtitan/HyperParallel {1, t}; Megatron/MindSpeed the divisors of t; MindFormers
    its own rule (one value, docs/model.md#expert-layout). 0 stands for "= t" (resolved per candidate)."""
    if not moe:
        return [1]
    if dim is not None and not dim.auto:
        return list(dim.values)
    if dim is None:
        return [parsed] if parsed is not None else [_default_etp_code(framework)]
    if framework in ("megatron", "mindspeed"):
        return divisors(t)
    if framework == "mindformers":
        return [_default_etp_code(framework)]
    return sorted({1, t})


def _default_etp_code(framework: str) -> int:
    # MindFormers' rule depends on ep and d; it is applied when pricing (code -2)
    return 0 if framework in ("megatron", "mindspeed") else (-2 if framework == "mindformers" else 1)


def _os_set(framework: str, mode: str, dim: Dim | None, st, d: int, cp: int) -> list[int]:
    """Optimizer/FSDP shard group sizes over the dense domain D = d·cp (d when not spanning CP): Megatron
    {1, D}; MindFormers the divisors of D; torchtitan/HyperParallel d_sh·span for d_sh | d (d_rep = d/d_sh,
    HSDP when > 1). Undeclared: the parsed size, else the whole domain."""
    span = cp if st.sharding.span_cp else 1
    domain = d * span
    if mode == "none":
        return [1]
    if dim is not None and not dim.auto:
        return list(dim.values)
    if dim is None:
        if mode == "hsdp" and st.d_sh:
            return [st.d_sh * span]
        return [st.sharding.os] if st.sharding.os is not None else [domain]
    if framework in ("megatron", "mindspeed"):
        return sorted({1, domain})
    if framework == "hf_trainer":  # DeepSpeed ZeRO shards over every data-parallel rank
        return [domain]
    if framework in ("torchtitan", "hyperparallel"):
        return [x * span for x in divisors(d)]
    return divisors(domain)
