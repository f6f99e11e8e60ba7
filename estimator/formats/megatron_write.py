"""Writing a strategy back as Megatron-LM arguments (docs/model.md#frameworks): the flags only Megatron-LM has
(``--cp-comm-type``, uneven first/last pipeline stages, the pipeline layout string, the embedding/loss split flags,
``--num-distributed-optimizer-instances``, Megatron-FSDP, the attention backend, precision-aware optimizer dtypes),
and the ``ARGS:`` block of a Megatron-LM recipe YAML. The script writer (``mindspeed_script_write``) calls
``megatron_flags`` for what differs from MindSpeed; what Megatron-LM cannot state is refused (R-FW)."""

from __future__ import annotations

import re
from typing import Any

from ..parsed import ParsedConfig
from ..strategy import Strategy
from .flag_source import FlagQueries
from .megatron_pipeline import PatternError, account_counts, parse_layout, uneven_counts
from .megatron_strategy_args import FSDP_STRATEGIES
from .support import refusal

CP_COMM = {"ring": "p2p", "ulysses": "a2a", "hybrid": "a2a+p2p", "allgather": "allgather"}
_PIPELINE_FLAGS = ("--pipeline-model-parallel-layout", "--decoder-first-pipeline-num-layers",
                   "--decoder-last-pipeline-num-layers", "--account-for-embedding-in-pipeline-split",
                   "--account-for-loss-in-pipeline-split", "--num-layers-per-virtual-pipeline-stage",
                   "--num-virtual-stages-per-pipeline-rank")
# Strategy fields only MindSpeed's flags can state
MINDSPEED_FIELDS = ("swap_optimizer", "swap_times", "reuse_fp32_param", "noop_layers", "moe_zero_memory",
                    "moe_zero_memory_layers", "mla_zero_memory")


def megatron_flags(path: str, fl: FlagQueries, old: Strategy, new: Strategy, changed: set[str],
                   parsed: ParsedConfig, want: dict[str, Any]) -> None:
    """Add to ``want`` (flag -> value, True or None) the Megatron-LM flags of the changed fields."""
    for name in sorted(changed & set(MINDSPEED_FIELDS)):
        raise refusal(f"strategy.{name} = {getattr(new, name)!r} is a MindSpeed setting; Megatron-LM has no flag "
                      "for it", path)
    if changed & {"cp_algo", "ulysses_degree", "cp"} and (new.cp_algo != "ring" or fl.has("--cp-comm-type")):
        _context_parallel(path, new, want)
    if changed & {"ep", "etp", "tp"}:
        if new.ep > 1 or fl.has("--expert-model-parallel-size"):
            want["--expert-model-parallel-size"] = str(new.ep)
        if new.etp is not None and (new.etp != new.tp or fl.has("--expert-tensor-parallel-size")):
            want["--expert-tensor-parallel-size"] = str(new.etp)
    if changed & {"vpp", "schedule", "pp", "partition", "emb_out_in_offset", "mtp_in_offset"}:
        _pipeline(path, fl, new, parsed, want)
    if "sharding" in changed or (changed & {"dp", "cp"} and new.sharding.os is not None):
        _sharding(path, fl, new, want)
    if "flash_attention" in changed:
        if new.flash_attention is False:
            want["--use-flash-attn"] = None
            want["--attention-backend"] = "unfused"
        else:
            backend = (fl.text("--attention-backend") or "").lower() if fl.has("--attention-backend") else ""
            if backend in ("unfused", "local") or (fl.text("--transformer-impl") or "") == "local":
                want["--attention-backend"] = "flash"
                want["--transformer-impl"] = None
    if "recompute_slice_activation" in changed:
        want["--distribute-saved-activations"] = True if new.recompute_slice_activation else None
    widths = {"grad_bytes": new.grad_bytes, "optimizer_state_bytes": new.optimizer_state_bytes}
    if "grad_bytes" in changed:
        if widths["grad_bytes"] not in (None, 2.0, 4.0):
            raise refusal(f"strategy.grad_bytes {new.grad_bytes}: Megatron keeps main gradients in fp32 or bf16", path)
        want["--grad-reduce-in-bf16"] = True if new.grad_bytes == 2.0 else None
    if "optimizer_state_bytes" in changed:
        if new.optimizer_state_bytes not in (None, 2.0, 4.0):
            raise refusal(f"strategy.optimizer_state_bytes {new.optimizer_state_bytes}: Megatron's precision-aware "
                          "optimizer keeps moments in fp32 or bf16", path)
        bf16 = new.optimizer_state_bytes == 2.0
        want["--use-precision-aware-optimizer"] = True if bf16 or fl.has("--use-precision-aware-optimizer") else None
        want["--exp-avg-dtype"] = "bf16" if bf16 else None
        want["--exp-avg-sq-dtype"] = "bf16" if bf16 else None


def _context_parallel(path: str, new: Strategy, want: dict[str, Any]) -> None:
    if new.cp_algo not in CP_COMM:
        raise refusal(f"cp_algo {new.cp_algo!r} has no --cp-comm-type", path)
    want["--cp-comm-type"] = CP_COMM[new.cp_algo]
    if new.cp_algo == "hybrid":
        u = new.ulysses_degree or 1
        if u < 1 or new.cp % u:
            raise refusal(f"ulysses_degree {u} does not divide cp {new.cp}", path)
        want["--hierarchical-context-parallel-sizes"] = f"{u} {new.cp // u}"
    else:
        want["--hierarchical-context-parallel-sizes"] = None
    want["--context-parallel-algo"] = None
    want["--ulysses-degree-in-cp"] = None


def _sharding(path: str, fl: FlagQueries, new: Strategy, want: dict[str, Any]) -> None:
    sh = new.sharding
    if sh.os_e is not None or not sh.span_cp or sh.mode not in ("none", "zero1", "zero2", "zero3"):
        raise refusal(f"strategy.sharding {sh.mode} (expert shard size {sh.os_e}, span_cp {sh.span_cp}) is not a "
                      "Megatron-LM optimizer/FSDP setting", path)
    fsdp = sh.mode in ("zero2", "zero3") or (fl.has("--use-megatron-fsdp") and sh.mode != "none")
    if fsdp:
        want["--use-megatron-fsdp"] = True
        want["--data-parallel-sharding-strategy"] = next(k for k, v in FSDP_STRATEGIES.items() if v == sh.mode)
        want["--use-distributed-optimizer"] = True
    else:
        want["--use-megatron-fsdp"] = None
        want["--data-parallel-sharding-strategy"] = None
        want["--use-distributed-optimizer"] = True if sh.mode == "zero1" else None
    domain = new.dp * new.cp
    if sh.os is not None and sh.os != domain:
        if sh.mode != "zero1" or fsdp or domain % sh.os:
            raise refusal(f"shard size {sh.os}: Megatron shards the distributed optimizer over dp·cp = {domain} or a "
                          "divisor of it (--num-distributed-optimizer-instances)", path)
        want["--num-distributed-optimizer-instances"] = str(domain // sh.os)
    else:
        want["--num-distributed-optimizer-instances"] = None


def _pipeline(path: str, fl: FlagQueries, new: Strategy, parsed: ParsedConfig, want: dict[str, Any]) -> None:
    """The pipeline split as the simplest Megatron flags that state it: none (even), the embedding/loss split
    flags, uneven first/last stages, else a layout string."""
    if new.schedule not in (None, "1f1b", "interleaved"):
        raise refusal(f"schedule {new.schedule}: Megatron-LM runs 1F1B or interleaved 1F1B (vpp)", path)
    want.update(dict.fromkeys(_PIPELINE_FLAGS))
    model = parsed.model
    total, mtp, p, vp = model.num_layers, model.mtp_layers, new.pp, new.vpp
    if new.mtp_in_offset and not new.emb_out_in_offset:
        raise refusal("MTP layers counted in the split without the embedding and output: Megatron's layout counts "
                      "all three", path)
    if new.partition is None and not new.mtp_in_offset:
        if new.emb_out_in_offset:
            try:
                account_counts(total, p, vp, True, True)
            except PatternError as exc:
                raise refusal(f"embedding and loss counted as layers: {exc}", path) from None
            want["--account-for-embedding-in-pipeline-split"] = True
            want["--account-for-loss-in-pipeline-split"] = True
        _virtual(fl, total + (2 if new.emb_out_in_offset else 0), p, vp, want)
        return
    rows = _rows(path, new, total, mtp)
    if not new.emb_out_in_offset and p > 1:
        uneven = _first_last(rows, total, p, vp)
        if uneven is not None:
            first, last = uneven
            want["--decoder-first-pipeline-num-layers"] = None if first is None else str(first)
            want["--decoder-last-pipeline-num-layers"] = None if last is None else str(last)
            if vp > 1:
                want["--num-virtual-stages-per-pipeline-rank"] = str(vp)
            return
    want["--pipeline-model-parallel-layout"] = layout_string(rows, new.emb_out_in_offset, new.mtp_in_offset, mtp)


def _virtual(fl: FlagQueries, positions: int, p: int, vp: int, want: dict[str, Any]) -> None:
    if vp == 1:
        return
    if fl.has("--num-layers-per-virtual-pipeline-stage") and positions % (p * vp) == 0:
        want["--num-layers-per-virtual-pipeline-stage"] = str(positions // (p * vp))
    else:
        want["--num-virtual-stages-per-pipeline-rank"] = str(vp)


def _rows(path: str, new: Strategy, total: int, mtp: int) -> list[list[int]]:
    """[chunk][stage] position counts of the strategy (an even split when it gives no partition)."""
    p, vp = new.pp, new.vpp
    if new.partition is None:
        positions = total + (2 if new.emb_out_in_offset else 0) + (mtp if new.mtp_in_offset else 0)
        base, rem = divmod(positions, p * vp)
        if rem:
            raise refusal(f"{positions} positions do not split evenly over pp {p} × vpp {vp}; give a partition", path)
        return [[base] * p for _ in range(vp)]
    if vp == 1:
        return [list(new.partition)]  # type: ignore[arg-type]
    return [list(row) for row in new.partition]  # type: ignore[union-attr]


def _first_last(rows: list[list[int]], total: int, p: int, vp: int) -> tuple[int | None, int | None] | None:
    """(first, last) decoder layers when ``--decoder-first/last-pipeline-num-layers`` state the split, else None."""
    per_rank = [sum(rows[j][i] for j in range(vp)) for i in range(p)]
    middle = per_rank[1:-1]
    if len(set(middle)) > 1:
        return None
    first = per_rank[0] if not middle or per_rank[0] != middle[0] else None
    last = per_rank[-1] if not middle or per_rank[-1] != middle[0] else None
    if p == 2:
        first, last = per_rank[0], per_rank[1]
    try:
        if uneven_counts(total, p, vp, first, last) != rows:
            return None
    except PatternError:
        return None
    return first, last


def layout_string(rows: list[list[int]], emb_out: bool, mtp_in: bool, mtp: int) -> str:
    """A ``--pipeline-model-parallel-layout`` string for [chunk][stage] position counts (E, t…, m…, L in model
    order; without emb_out the counts are decoder layers and E, m and L join the first and last stage)."""
    p, vp = len(rows[0]), len(rows)
    counts = [rows[q // p][q % p] for q in range(p * vp)]
    decoders = sum(counts) - (2 if emb_out else 0) - (mtp if mtp_in else 0)
    items = ("E" if emb_out else "") + "t" * decoders + ("m" * mtp if mtp_in else "") + ("L" if emb_out else "")
    stages, cursor = [], 0
    for c in counts:
        stages.append(items[cursor:cursor + c])
        cursor += c
    if not emb_out:
        stages[0] = "E" + stages[0]
        stages[-1] = stages[-1] + "m" * mtp + "L"
    return _compress(stages)


def _compress(stages: list[str]) -> str:
    """``Et*3|(tt|)*29m|L``-style: runs of a letter as ``x*n``, runs of equal stages as ``(…|)*n``."""
    def stage(s: str) -> str:
        runs = (m.group(0) for m in re.finditer(r"(.)\1*", s))
        return "".join(run if len(run) < 3 else f"{run[0]}*{len(run)}" for run in runs)

    out: list[str] = []
    k = 0
    while k < len(stages):
        n = 1
        while k + n < len(stages) and stages[k + n] == stages[k]:
            n += 1
        body = stage(stages[k])
        last = k + n == len(stages)
        if n > 1 and not last:
            out.append(f"({body}|)*{n}")
        elif n > 1:
            out.append(f"({body}|)*{n - 1}{body}")
        else:
            out.append(body + ("" if last else "|"))
        k += n
    text = "".join(out)
    assert "".join(parse_layout(text)) == "".join(stages)
    return text


__all__ = ["CP_COMM", "MINDSPEED_FIELDS", "layout_string", "megatron_flags"]
