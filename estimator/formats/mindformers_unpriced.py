"""MindFormers keys that change memory or step time but are not priced (D-MF-UNREAD): the catalogue knows them, so
they raise no W-KEY-UNKNOWN; each is said here when it departs from what the estimate assumes, naming the key and
which way the estimate errs. A mixin of the MindFormers reader."""

from __future__ import annotations

from typing import Any

from ..messages import Text, msg
from .mindformers_schema import MC, POC, RC
from .mindformers_source import MISSING, MindFormersSource

# optimizer.type values priced as they are: AdamW and its fused / Adam variants (two states per parameter)
ADAM_TYPES = frozenset({"adamw", "fusedadamw", "adamweightdecay", "fusedadamweightdecay", "adamweightdecayx",
                        "fp32stateadamweightdecay", "pmaadamw", "adam"})
MOE_BLOCKS = (("moe_config",), (*MC, "moe_config"))
# MindSpore's default parallel_optimizer_threshold (KB): smaller parameters stay whole (norms, biases; not priced)
OP_THRESHOLD_KB = 64
# switches said when true: (keys under a MoE block or the model, what is not priced)
MOE_SWITCHES: tuple[tuple[str, Text], ...] = (
    ("comp_comm_parallel", msg("mindformers_unpriced.moe-overlap")),
    ("moe_shared_expert_overlap", msg("mindformers_unpriced.shared-expert-overlap")),
    ("enable_deredundency", msg("mindformers_unpriced.deredundency")),
    ("use_allgather_dispatcher", msg("mindformers_unpriced.allgather-dispatcher")),
)


class UnpricedReader(MindFormersSource):
    def read_unpriced(self) -> None:
        self._optimizer()
        for block in MOE_BLOCKS:
            for name, effect in MOE_SWITCHES:
                self._said_if((*block, name), self.get((*block, name)) is True, effect)
        dispatcher = self.get((*MC, "moe_token_dispatcher_type"))
        self._said_if((*MC, "moe_token_dispatcher_type"), dispatcher == "allgather",
                      msg("mindformers_unpriced.allgather-dispatcher"))
        slices = self.get((*MC, "fine_grain_interleave"))
        self._said_if((*MC, "fine_grain_interleave"), isinstance(slices, int) and not isinstance(slices, bool)
                      and slices > 1, msg("mindformers_unpriced.fine-grain-interleave"))
        self._said_if((*RC, "mp_comm_recompute"), self.get((*RC, "mp_comm_recompute")) is False,
                      msg("mindformers_unpriced.mp-comm-kept"))
        for name in ("select_recompute_exclude", "select_comm_recompute_exclude"):
            value = self.get((*RC, name))
            self._said_if((*RC, name), value not in (MISSING, None, False, [], {}),
                          msg("mindformers_unpriced.recompute-exclude"))
        mode = self.get(("parallel", "parallel_mode"))
        self._said_if(("parallel", "parallel_mode"),
                      mode is not MISSING and str(mode).strip().lower() not in ("1", "semi_auto_parallel"),
                      msg("mindformers_unpriced.parallel-mode"))
        context = self.get(("context", "mode"))
        self._said_if(("context", "mode"),
                      context is not MISSING and str(context).strip().upper() not in ("0", "GRAPH_MODE"),
                      msg("mindformers_unpriced.pynative"))
        level = self.get((*POC, "optimizer_level"))
        self._said_if((*POC, "optimizer_level"), level is not MISSING and str(level).strip().lower() != "level1",
                      msg("mindformers_unpriced.optimizer-level"))
        self._context()

    def _context(self) -> None:
        """MindSpore context and parallel-context keys that change memory or time (docs/decisions.md D-MF-AUDIT)."""
        memory = self.get(("context", "memory_optimize_level"))
        if memory is MISSING:  # MindSpore's set_context default is O0: SOMAS off (docs/decisions.md D-MF-AUDIT)
            self.warn("W-UNMODELLED", msg("mindformers_unpriced.somas-off-by-default",
                                          effect=msg("mindformers_unpriced.somas-off")))
        else:
            self._said_if(("context", "memory_optimize_level"), str(memory).strip().upper() == "O0",
                          msg("mindformers_unpriced.somas-off"))
        self._gradient_sync()
        threshold = self.get((*POC, "parallel_optimizer_threshold"))
        self._said_if((*POC, "parallel_optimizer_threshold"), isinstance(threshold, int | float) and
                      not isinstance(threshold, bool) and threshold > OP_THRESHOLD_KB,
                      msg("mindformers_unpriced.op-threshold"))
        deterministic = self.get(("context", "deterministic"))
        self._said_if(("context", "deterministic"), str(deterministic).strip().upper() == "ON",
                      msg("mindformers_unpriced.deterministic"))
        self._said_if(("train_precision_sync",), self.get(("train_precision_sync",)) is True,
                      msg("mindformers_unpriced.deterministic"))

    def _gradient_sync(self) -> None:
        """MindSpore's gradient_fp32_sync (default True) converts the gradients to fp32 before their data-parallel
        all-reduce; False reduces them as they come (16-bit after the cast of fp32 parameters). The reduction is
        priced in the gradient width, which is the parameter width here."""
        if self.values.get("strategy.dp", 1) <= 1:
            return
        sync = self.get(("parallel", "gradient_fp32_sync"))
        params = self.values.get("strategy.param_bytes", 4.0)  # MindFormers' default float32 parameters
        if sync is False and params == 4:
            self._said_if(("parallel", "gradient_fp32_sync"), True, msg("mindformers_unpriced.gradient-16bit-sync"))
        elif sync is not False and params < 4:
            self.warn("W-UNMODELLED", msg("mindformers_unpriced.gradient-fp32-sync", width=int(params)))

    def _said_if(self, keys: tuple[str, ...], on: bool, effect: Text) -> None:
        if on:
            self.warn("W-UNMODELLED", msg("W-UNMODELLED.mindformers-key", key=".".join(keys),
                                          value=self.get(keys), effect=effect))

    def _optimizer(self) -> None:
        """``optimizer.type`` (the section is otherwise hyper-parameters): AdamW-like types are what is priced."""
        kind: Any = self.get(("optimizer", "type"))
        if kind is MISSING or not isinstance(kind, str) or kind.strip().lower() in ADAM_TYPES:
            return
        effect = msg("mindformers_unpriced.came") if kind.strip().lower() == "came" else \
            msg("mindformers_unpriced.optimizer")
        self.warn("W-NOT-PRICED", msg("W-NOT-PRICED.mindformers-optimizer", kind=kind, effect=effect))


__all__ = ["ADAM_TYPES", "UnpricedReader"]
