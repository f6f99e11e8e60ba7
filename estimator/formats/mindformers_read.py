"""Reading a MindFormers training YAML (docs/model.md#frameworks): the strategy half, in the order MindFormers applies
it.

- the global batch is G = batch_size·d·micro_batch_num·gradient_accumulation_steps·micro_batch_interleave_num:
  with ``pipeline_stage`` > 1 the micro-batches per flush are ``micro_batch_num`` and the flushes per step
  ``gradient_accumulation_steps``; with one stage ``micro_batch_num`` is ignored and the accumulation steps are
  the micro-batches; a micro-batch holds batch_size·micro_batch_interleave_num sequences (its interleaved
  parts are all in memory);
- offsets are kept as written (int, list[p], list[vp][p]) with the MTP modules counted (``mtp_in_offset``);
  recompute settings are bools, per-stage lists, per-chunk lists or dicts of op regexes mapped by keyword onto
  the switches of docs/model.md#selective-recompute;
- device counts and global batches that comments (or ``--devices``) state are checked against the degrees.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..messages import msg, reason
from ..units import parse_size
from ..warnings import Assumption
from .mindformers_features import FeatureReader, counts_of_layers, layer_slots, ranges_of
from .mindformers_model import ModelReader
from .mindformers_schema import (
    CP_ALGOS,
    DATASET_SEQ,
    DEVICE_COMMENT,
    FORMAT,
    GBS_COMMENT,
    MAX_COUNT,
    MAX_DEGREE,
    MAX_MICRO,
    MAX_SEQ,
    MC,
    PAR,
    PC,
    PIPE,
    POC,
    RC,
    RUN,
    SCHEDULERS,
    comm_switch,
    comment_numbers,
    mindformers_dtype,
    selective_switch,
)
from .mindformers_source import MISSING
from .mindformers_unpriced import UnpricedReader
from .support import MAX_LAYERS, flatten_rows


class MindFormersReader(ModelReader, FeatureReader, UnpricedReader):
    """Turns one merged MindFormers config into canonical values with provenance."""

    # -- sections -------------------------------------------------------------------------------------
    def run(self, devices: int | None) -> None:
        self.section(MC)
        for keys in (PC, RC, RUN, PAR, PIPE, POC, ("context",)):
            self.section(keys)
        self.read_model()
        self.read_parallel()
        self.read_batch()
        self.read_pipeline()
        self.read_recompute()
        self.read_sharding()
        self.read_widths()
        self.read_options()
        self.read_features()
        self.read_unpriced()
        self.check_statements(devices)

    def degree(self, field: str, keys: tuple[str, ...], default: int = 1, note: bool = True) -> int:
        value = self.int_at(keys)
        if value is None:
            if note:
                self.assume(field, default, msg("mindformers_read.absent-mindformers-default", keys='.'.join(keys),
                                                default=default))
            else:
                self.values[field] = default
            return default
        self.put_at(field, value, keys)
        return value

    def read_parallel(self) -> None:
        self.dp = self.degree("strategy.dp", (*PC, "data_parallel"))
        self.tp = self.degree("strategy.tp", (*PC, "model_parallel"))
        self.pp = self.degree("strategy.pp", (*PC, "pipeline_stage"))
        self.cp = self.degree("strategy.cp", (*PC, "context_parallel"), note=False)
        self.degree("strategy.ep", (*PC, "expert_parallel"), note=False)
        sp = self.bool_at((*PC, "use_seq_parallel"))
        if sp is not None:
            self.put_at("strategy.sequence_parallel", sp, (*PC, "use_seq_parallel"))
        self.put_or_default("strategy.vocab_emb_dp", self.bool_at((*PC, "vocab_emb_dp")), (*PC, "vocab_emb_dp"),
                            False, msg("mindformers_read.parallel_config-vocab_emb_dp-absent"))
        algo = self.str_at((*PC, "context_parallel_algo"))
        if algo is not None:
            if algo not in CP_ALGOS:
                raise self.fail((*PC, "context_parallel_algo"),
                                msg("mindformers_read.unknown-context_parallel_algo-use", algo=algo,
                                    CP_ALGOS=', '.join(CP_ALGOS)))
            self.put_at("strategy.cp_algo", CP_ALGOS[algo], (*PC, "context_parallel_algo"))
            if algo == "hybrid_cp":
                degree = self.int_at((*PC, "ulysses_degree_in_cp"))
                if degree is not None:
                    self.put_at("strategy.ulysses_degree", degree, (*PC, "ulysses_degree_in_cp"))

    def read_batch(self) -> None:
        """b = batch_size·micro_batch_interleave_num (the interleaved parts of one micro-batch are all held);
        p > 1: m = micro_batch_num, n_acc = gradient_accumulation_steps; p = 1: m = the accumulation steps."""
        batch_keys, gas_keys = (*RUN, "batch_size"), (*RUN, "gradient_accumulation_steps")
        b = self.int_at(batch_keys, 1, MAX_MICRO)
        gas = self.int_at(gas_keys, 1, MAX_MICRO)
        mbin = self.int_at(("micro_batch_interleave_num",), 1, 64) or 1
        mbn = self.int_at((*PC, "micro_batch_num"), 1, MAX_MICRO)
        if b is None:
            self.assume("strategy.micro_batch_size", mbin, msg("mindformers_read.runner_config-batch_size-absent"))
        elif mbin > 1:
            self.derive("strategy.micro_batch_size", b * mbin,
                        f"runner_config.batch_size {b} × micro_batch_interleave_num {mbin}")
        else:
            self.put_at("strategy.micro_batch_size", b, batch_keys)

        def steps(field: str) -> int:
            if gas is None:
                self.derive(field, 1, "runner_config.gradient_accumulation_steps absent: 1")
                return 1
            self.put_at(field, gas, gas_keys)
            return gas

        if self.pp > 1:
            self.put_or_default("strategy.micro_batches", mbn, (*PC, "micro_batch_num"), 1,
                                msg("mindformers_read.parallel_config-micro_batch_num-absent"))
            steps("strategy.n_acc")
        else:
            m = steps("strategy.micro_batches")
            self.derive("strategy.n_acc", 1, "pipeline_stage 1: accumulation steps are the micro-batches")
            if mbn not in (None, 1):
                self.warn("W-MF-MBN-IGNORED", msg("W-MF-MBN-IGNORED", mbn=mbn, m=m))
        seq = self.int_at((*MC, "seq_length"), 1, MAX_SEQ)
        data_seq = self.int_at(DATASET_SEQ, 1, MAX_SEQ)
        if seq is not None:
            self.put_at("strategy.seq_length", seq, (*MC, "seq_length"))
            if data_seq is not None and data_seq != seq:
                self.warn("W-MF-SEQ", msg("W-MF-SEQ", seq=seq, DATASET_SEQ='.'.join(DATASET_SEQ), data_seq=data_seq))
        elif data_seq is not None:
            self.put_at("strategy.seq_length", data_seq, DATASET_SEQ)
        else:
            raise ConfigError(msg("mindformers_read.training-sequence-length", DATASET_SEQ='.'.join(DATASET_SEQ)),
                              path=self.path, key="model.model_config.seq_length")

    def read_pipeline(self) -> None:
        interleave = bool(self.bool_at((*PIPE, "pipeline_interleave")))
        scheduler = self.str_at((*PIPE, "pipeline_scheduler"))
        chunks = self.int_at((*MC, "pp_interleave_num"), 1, 64)
        vp = chunks if (chunks and interleave) else 1
        if chunks and chunks > 1 and not interleave:
            self.warn("W-MF-VPP-IGNORED", msg("W-MF-VPP-IGNORED", chunks=chunks))
        if chunks is not None and interleave:
            self.put_at("strategy.vpp", vp, (*MC, "pp_interleave_num"))
        schedule = None
        if scheduler is not None:
            name = scheduler.strip().lower()
            if name not in SCHEDULERS:
                raise self.fail((*PIPE, "pipeline_scheduler"), msg("mindformers_read.unknown-scheduler",
                                                                   scheduler=scheduler, known=", ".join(SCHEDULERS)))
            if not interleave:
                if name != "1f1b":
                    self.warn("W-MF-SCHED-IGNORED", msg("W-MF-SCHED-IGNORED", scheduler=scheduler))
            elif name == "1f1b":
                schedule = "1f1b"
            elif name == "seqpipe":
                schedule = "seq1f1b"
            elif name in ("seqvpp", "seqsmartvpp"):
                schedule = "seqsmartvpp" if vp > 1 else "seq1f1b"
                if vp == 1:
                    self.assumptions.append(Assumption("strategy.schedule", "seq1f1b",
                                                       msg("mindformers_read.pipeline_scheduler-pp_interleave_num-runs",
                                                           name=name)))
            elif name == "gpipe":
                schedule = "gpipe"
            else:
                schedule = "zbv"
        if schedule is not None:
            self.put_at("strategy.schedule", schedule, (*PIPE, "pipeline_scheduler"))
        if schedule in ("seq1f1b", "seqsmartvpp"):
            self.put_or_default("strategy.n_s", self.int_at((*PC, "seq_split_num"), 1, 1024), (*PC, "seq_split_num"),
                                1, msg("mindformers_read.parallel_config-seq_split_num-absent"))
        self.read_offset(vp)

    def read_offset(self, vp: int) -> None:
        keys = (*MC, "offset")
        value = self.get(keys)
        if value is MISSING:
            return
        bad = self.fail(keys, msg("mindformers_read.offset-must-integer", value=value))

        def ints(seq: Any) -> tuple[int, ...]:
            if not isinstance(seq, list) or not seq:
                raise bad
            return tuple(self.as_int(keys, x, -MAX_LAYERS, MAX_LAYERS) for x in seq)

        if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            offset: Any = tuple(ints(v) for v in value)
        elif isinstance(value, list) and any(isinstance(v, list | dict) for v in value):
            raise bad
        elif isinstance(value, list):
            offset = ints(value)
        else:
            offset = self.as_int(keys, value, -MAX_LAYERS, MAX_LAYERS)
        if self.pp * vp <= 1:  # MindFormers ignores offsets with a single stage
            if any(flatten_rows(offset)):
                self.warn("W-MF-OFFSET-IGNORED", msg("W-MF-OFFSET-IGNORED", value=value))
            if offset != 0:
                return
        self.put_at("strategy.offset", offset, keys)
        self.check_offset_sum(offset, vp)

    def check_offset_sum(self, offset: Any, vp: int) -> None:
        """MindFormers refuses offsets that do not sum to the remainder (LayerSetting); say so with a fix."""
        layers = self.values.get("model.num_layers")
        if layers is None or self.pp * vp <= 1:
            return
        mtp = self.values.get("model.mtp_layers", 0) if self.values.get("strategy.mtp_in_offset") else 0
        slots = self.pp * vp
        rem = (layers + mtp) % slots
        total = sum(flatten_rows(offset))
        if total == rem:
            return
        counted = msg("W-MF-OFFSET-SUM.layers-mtp", layers=layers, mtp=mtp) if mtp else \
            msg("W-MF-OFFSET-SUM.layers", layers=layers)
        key = ".".join((*MC, "offset"))
        where = self.origin((*MC, "offset"))
        if vp == 1:
            self.warn("W-MF-OFFSET-SUM", msg("W-MF-OFFSET-SUM.fits", path=where, key=key, offset=offset,
                                             total=total, counted=counted, slots=slots, rem=rem,
                                             fits=[1 if k < rem else 0 for k in range(self.pp)]))
        else:
            self.warn("W-MF-OFFSET-SUM", msg("W-MF-OFFSET-SUM", path=where, key=key, offset=offset, total=total,
                                             counted=counted, slots=slots, rem=rem))

    # -- recompute ------------------------------------------------------------------------------------
    def counts(self, keys: tuple[str, ...], value: Any) -> Any:
        """A bool, list[p] of ints/bools, or list[vp][p] of ints, validated; with ``swap_config.swap`` on a list
        of layer ids, as MindFormers then reads it (``layer_ids``)."""
        if isinstance(value, bool):
            return value
        if self.bool_at(("swap_config", "swap")) and isinstance(value, list) and \
                all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return self.layer_ids(keys, value)
        bad = f"expected True/False, a list of layer counts per stage or a list of such lists; got {value!r}"
        if not isinstance(value, list) or not value:
            raise self.fail(keys, bad)
        if all(isinstance(v, list) for v in value):
            rows = []
            for row in value:
                if not row:
                    raise self.fail(keys, bad)
                if any(isinstance(x, bool) for x in row):
                    raise self.fail(keys, msg("mindformers_read.true-false-inside"))
                rows.append(tuple(self.as_int(keys, x, 0, MAX_COUNT) for x in row))
            return tuple(rows)
        if any(isinstance(v, list) for v in value):
            raise self.fail(keys, bad)
        return tuple(v if isinstance(v, bool) else self.as_int(keys, v, 0, MAX_COUNT) for v in value)

    def recompute_ids(self, keys: tuple[str, ...], value: list[int]) -> list[int]:
        """The model-order indices (body + MTP) a recompute list under swap names: MindFormers' global layer ids,
        an mcore model's MTP layers following the last body layer's id (``swap_layer_ids``)."""
        return sorted(self.swap_layer_ids(keys, value))

    def layer_ids(self, keys: tuple[str, ...], value: list[int]) -> Any:
        """MindFormers with ``swap_config.swap`` on reads recompute lists as global layer ids (LayerSetting
        ``_format_recompute_list_select_layer_index``): counted per stage (per chunk and stage when interleaved)."""
        total = self.model_layers()  # body + MTP: an mcore model's MTP ids are said by mcore_mtp_ids
        layers = total if self.values.get("strategy.mtp_in_offset") else int(self.values.get("model.num_layers", 0))
        bad = [i for i in value if not 0 <= i < total]  # layers: what LayerSetting splits
        if bad:
            raise self.fail(keys, msg("mindformers_read.swap-layer-ids", ids=bad, layers=total))
        ids = self.mcore_mtp_ids(keys, set(value))
        vp = int(self.values.get("strategy.vpp", 1))
        return counts_of_layers(sorted(ids), layer_slots(layers, self.pp, vp, self.values.get("strategy.offset", 0)))

    def merge_counts(self, keys: tuple[str, ...], found: list[tuple[str, Any]]) -> Any:
        """One count value from several op patterns; differing values are combined by the largest."""
        active = [(p, v) for p, v in found if v is not False]
        if not active:
            return None
        values = [v for _, v in active]
        if any(v is True for v in values):
            merged: Any = True
        elif all(v == values[0] for v in values):
            merged = values[0]
        else:
            shape = {(len(v), tuple(len(r) for r in v) if isinstance(v[0], tuple) else ()) for v in values}
            if len(shape) != 1:
                raise self.fail(keys, msg("mindformers_read.op-patterns-give"))
            if isinstance(values[0][0], tuple):
                merged = tuple(tuple(max(int(v[j][i]) for v in values) for i in range(len(values[0][j])))
                               for j in range(len(values[0])))
            else:
                merged = tuple(True if any(v[i] is True for v in values) else max(int(v[i]) for v in values)
                               for i in range(len(values[0])))
        if len({repr(v) for v in values}) > 1:
            self.warn("W-SEL-MIXED", msg("W-SEL-MIXED", keys='.'.join(keys), p=', '.join((repr(p) for p, _ in active)),
                                         merged=merged))
        return merged

    def patterns(self, keys: tuple[str, ...], value: Any, comm: bool) -> tuple[Any, tuple[str, ...]]:
        """(counts, switches) of a dict (or list) of op regexes; unmatched patterns are warned about."""
        items = [(p, True) for p in value] if isinstance(value, list) else list(value.items())
        found: list[tuple[str, Any]] = []
        switches: set[str] = set()
        for pattern, raw in items:
            if not isinstance(pattern, str):
                raise self.fail(keys, msg("mindformers_read.op-patterns-must", pattern=pattern))
            counts = self.counts((*keys, pattern), raw) if raw is not None else False
            switch = comm_switch(pattern) if comm else selective_switch(pattern)
            if switch is None:
                self.warn("W-SEL-UNMATCHED", msg("W-SEL-UNMATCHED", pattern=pattern))
                continue
            found.append((pattern, counts))
            if counts is not False:
                switches.add(switch)
        return self.merge_counts(keys, found), tuple(sorted(switches))

    def read_recompute(self) -> None:
        full_keys = (*RC, "recompute")
        full = self.get(full_keys)
        if full is not MISSING:
            if isinstance(full, dict):
                raise self.fail(full_keys, msg("mindformers_read.recompute-takes-true"))
            if self.bool_at(("swap_config", "swap")) and isinstance(full, list) and \
                    all(isinstance(v, int) and not isinstance(v, bool) for v in full):
                # layer ids under swap: kept as the layers they name ([A-OFFLOAD-LAYERS] prices swap per layer)
                self.put_at("strategy.recompute_ranges", ranges_of(self.recompute_ids(full_keys, full), "full"),
                            full_keys)
            else:
                self.put_at("strategy.recompute", self.counts(full_keys, full), full_keys)
        for name, field, comm in (("select_recompute", "strategy.sel_counts", False),
                                  ("select_comm_recompute", "strategy.comm_counts", True)):
            keys = (*RC, name)
            value = self.get(keys)
            if value is MISSING or value is False:
                continue
            if isinstance(value, dict) or (isinstance(value, list) and value and
                                           all(isinstance(v, str) for v in value)):
                counts, switches = self.patterns(keys, value, comm)
                if counts is None:
                    continue
                self.put_at(field, counts, keys)
                if not comm:
                    self.put_at("strategy.recompute_switches", switches, keys)
            else:
                self.put_at(field, self.counts(keys, value), keys)
        sliced = self.bool_at((*RC, "recompute_slice_activation"))
        if sliced is not None:
            self.put_at("strategy.recompute_slice_activation", sliced, (*RC, "recompute_slice_activation"))

    # -- sharding, widths, options --------------------------------------------------------------------
    def read_sharding(self) -> None:
        keys = (*PAR, "enable_parallel_optimizer")
        enabled = self.bool_at(keys)
        if enabled is None:
            self.assume("strategy.sharding", "none", msg("mindformers_read.parallel-enable_parallel_optimizer-absent"))
        elif not enabled:
            self.put_at("strategy.sharding", "none", keys)
        else:
            self.put_at("strategy.sharding", "mf_op", keys)
        size = self.int_at((*POC, "optimizer_weight_shard_size"), -1, MAX_DEGREE)
        if size is not None and size > 0:
            self.put_at("strategy.shard_size", size, (*POC, "optimizer_weight_shard_size"))
        shard = self.bool_at((*POC, "gradient_accumulation_shard"))
        if shard is not None:
            self.put_at("strategy.grad_shard", shard, (*POC, "gradient_accumulation_shard"))
        elif enabled:
            self.assume("strategy.grad_shard", False, msg("mindformers_read.gradient_accumulation_shard-absent-false"))
        keys = (*RC, "parallel_optimizer_comm_recompute")
        regather = self.bool_at(keys)
        if regather is not None:
            self.put_at("strategy.keep_gathered_weights", not regather, keys)
        elif enabled:
            self.assume("strategy.keep_gathered_weights", True,
                        msg("mindformers_read.parallel_optimizer_comm_recompute-absent-false"))

    def width(self, field: str, names: tuple[str, ...]) -> int | None:
        keys, value = self.first(MC, names)
        if value is MISSING:
            return None
        size, fp8 = mindformers_dtype(value, ".".join(keys), self.origin(keys))
        if fp8:
            self.warn("W-FP8", msg("W-FP8.fp8-tensors-priced", keys='.'.join(keys), value=value))
        if field:
            self.put_at(field, float(size), keys)
        return size

    def read_widths(self) -> None:
        self.width("strategy.param_bytes", ("param_init_type", "params_dtype"))
        self.width("strategy.compute_bytes", ("compute_dtype",))
        self.width("strategy.softmax_bytes", ("softmax_compute_type", "softmax_compute_dtype"))
        compute = self.values.get("strategy.compute_bytes")
        # β_n and β_r are 4 for float32, else the compute width (docs/model.md#byte-widths-per-framework)
        keys, _ = self.first(MC, ("layernorm_compute_type", "layernorm_compute_dtype"))
        norm = self.width("", ("layernorm_compute_type", "layernorm_compute_dtype"))
        if norm == 4 or (norm is not None and compute is not None):
            self.put_at("strategy.norm_bytes", 4.0 if norm == 4 else compute, keys)
        residual = self.bool_at((*MC, "fp32_residual_connection"))
        keys, _ = self.first(MC, ("fp32_residual_connection",))
        if residual is None:
            keys, _ = self.first(MC, ("res_dtype",))
            size = self.width("", ("res_dtype",))
            residual = None if size is None else size == 4
        if residual or (residual is not None and compute is not None):
            self.put_at("strategy.residual_bytes", 4.0 if residual else compute, keys)

    def read_options(self) -> None:
        self.derive("options.framework", FORMAT, "MindFormers YAML")
        keys = ("context", "max_device_memory")
        memory = self.get(keys)
        if memory is not MISSING:
            try:
                size = parse_size(memory)
            except ValueError as exc:
                raise self.fail(keys, reason(exc)) from None
            if not 0 < size < 1 << 50:
                raise self.fail(keys, msg("mindformers_read.plausible-device-memory", memory=memory))
            self.put_at("options.max_device_memory", size, keys)
        fa = self.bool_at((*MC, "use_flash_attention"))
        if fa is not None:
            self.put_at("strategy.flash_attention", fa, (*MC, "use_flash_attention"))
        fused = self.bool_at((*MC, "use_fused_swiglu"))
        act = self.get((*MC, "hidden_act"))
        act = act if isinstance(act, str) else None
        if fused:
            self.put_at("options.fused_gated_act", True, (*MC, "use_fused_swiglu"))
        elif act and act.lower() == "fusedswiglu":
            self.put_at("options.fused_gated_act", True, (*MC, "hidden_act"))

    def check_statements(self, devices: int | None) -> None:
        """Warn where the file's comments (or --devices) state a device count or global batch that the degrees
        do not give; the product of the degrees wins."""
        world = self.dp * self.tp * self.pp * self.cp
        product = (f"data_parallel {self.dp} × model_parallel {self.tp} × pipeline_stage {self.pp} × "
                   f"context_parallel {self.cp} = {world}")
        for lineno, stated in comment_numbers(self.text, DEVICE_COMMENT):
            if stated != world:
                self.warn("W-MF-DEVICES", msg("W-MF-DEVICES.comment-line-says", lineno=lineno, stated=stated,
                                              product=product))
        if devices is not None and devices != world:
            self.warn("W-MF-DEVICES", msg("W-MF-DEVICES", devices=devices, product=product))
        v = self.values
        batch = v["strategy.micro_batch_size"] * self.dp * v["strategy.micro_batches"] * v["strategy.n_acc"]
        stated_batches = comment_numbers(self.text, GBS_COMMENT)
        for keys in ((*RUN, "global_batch_size"), ("global_batch_size",)):
            value = self.int_at(keys, 1, 1 << 40)
            if value is not None:
                stated_batches.append((0, value))
        for lineno, stated in stated_batches:
            if stated != batch:
                where = f"the comment on line {lineno}" if lineno else "the file"
                self.warn("W-MF-GBS", msg("W-MF-GBS", where=where, stated=stated, batch=batch))

    def role(self) -> str:
        needed = ("model.hidden_size", "model.num_layers", "model.num_attention_heads", "model.vocab_size")
        return "both" if all(k in self.values for k in needed) else "strategy"
