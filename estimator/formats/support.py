"""What the framework-format readers and writers share: the ``Reading`` one file contributes and the
``Collector`` that builds it, bounded integer values, dtype widths, the R-FW refusal, and re-reading a file's
own strategy to see what an export changes.

Kept here once so that every format reports values, provenance, limits and refusals the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..fields import REGISTRY, coerce
from ..limits import DEFAULT_INT, MAX_MICRO_BATCHES
from ..limits import MAX_LAYERS as MAX_LAYERS  # the readers take it from here
from ..messages import Text, english, msg
from ..parsed import ParsedConfig, Provenance, SourceFile, build_plan
from ..strategy import Strategy
from ..warnings import Assumption, EstimateWarning


# ------------------------------------------------------------------------------------------ readings
@dataclass
class Reading:
    """What one file contributed."""

    format: str
    role: str  # model | strategy | both
    values: dict[str, Any]
    provenance: dict[str, Provenance]
    warnings: list[EstimateWarning] = field(default_factory=list)
    assumptions: list[Assumption] = field(default_factory=list)  # values the reader defaulted, with sources
    text: str = ""
    path: str = ""
    # model fields this file states as changes to a model loaded from elsewhere (a recipe's assignments over
    # ``--model``): they win over the model file, as the framework applies them on top
    model_overrides: frozenset[str] = frozenset()
    # (where, value) of the files and checkpoints the file names for its model (a launch script's --mm-model and
    # --load): a model file given with it that names another model is said (combination.mismatched_model)
    references: tuple[tuple[str, str], ...] = ()


# A format reader: (text, path, loaded data, --devices) -> Reading
Reader = Callable[[str, str, Any, "int | None"], Reading]


@dataclass
class Collector:
    """Flat canonical values with their provenance, warnings and assumptions, for one file."""

    path: str
    values: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Provenance] = field(default_factory=dict)
    warnings: list[EstimateWarning] = field(default_factory=list)
    assumptions: list[Assumption] = field(default_factory=list)
    model_overrides: set[str] = field(default_factory=set)  # see Reading.model_overrides

    def put(self, name: str, value: Any, key: str, raw: Any = None) -> None:
        """A value read from the file at ``key``."""
        self.values[name] = value
        self.provenance[name] = Provenance("file", path=self.path, key=key, raw=value if raw is None else raw)

    def derive(self, name: str, value: Any, how: str) -> None:
        self.values[name] = value
        self.provenance[name] = Provenance("derived", path=self.path, key=how)

    def assume(self, name: str, value: Any, source: Text) -> None:
        """A value the file leaves to the framework's default."""
        self.values[name] = value
        self.provenance[name] = Provenance("default", path=self.path, key=english(source))
        self.assumptions.append(Assumption(name, value, source))

    def warn(self, code: str, text: Text) -> None:
        self.warnings.append(EstimateWarning(code, text))

    def reading(self, fmt: str, role: str, text: str = "", path: str = "") -> Reading:
        """The Reading of what was collected (``parse`` fills in text and path when they are left empty)."""
        return Reading(fmt, role, self.values, self.provenance, self.warnings, self.assumptions, text=text,
                       path=path, model_overrides=frozenset(self.model_overrides))


# ------------------------------------------------------------------------------------------ values
MAX_VALUE = int(DEFAULT_INT.high)  # the bounds live in estimator/limits.py (docs/limits.md)


def to_int(value: Any, path: str, key: str, minimum: int = 1, allowed: tuple[int, ...] = (),
           maximum: int = MAX_VALUE) -> int:
    """An integer config value in [``minimum``, ``maximum``] (or one of ``allowed``), else a ConfigError
    naming the key."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(msg("fields.expected-integer-got", value=value), path=path, key=key)
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except (ValueError, OverflowError):
        number = None
    if number is None:
        raise ConfigError(msg("fields.expected-integer-got", value=value), path=path, key=key)
    if number < minimum and number not in allowed:
        extra = f" (or {', '.join(map(str, allowed))})" if allowed else ""
        raise ConfigError(msg("support.must-integer-got", minimum=minimum, extra=extra, number=number), path=path,
                          key=key)
    if number > maximum:
        raise ConfigError(msg("hf.implausibly-large-limit", number=number, maximum=maximum), path=path, key=key)
    return number


def check_micro_batches(m: int, path: str, key: str) -> int:
    """Micro-batches per pipeline flush, bounded (the schedule replay is linear in them)."""
    if m > MAX_MICRO_BATCHES:
        raise ConfigError(msg("support.micro-batches-per", m=m, MAX_MICRO_BATCHES=MAX_MICRO_BATCHES), path=path,
                          key=key)
    return m


def plain_lists(value: Any) -> Any:
    """Tuples (as a Strategy holds them) to lists (as a config file writes them), at every depth."""
    if isinstance(value, list | tuple):
        return [plain_lists(v) for v in value]
    return value


def flatten_rows(value: Any) -> list[Any]:
    """Every entry of an int, a per-stage tuple, or a per-chunk tuple of per-stage tuples (offsets, counts)."""
    if isinstance(value, int):
        return [value]
    return [x for row in value for x in (row if isinstance(row, tuple) else (row,))]


# ------------------------------------------------------------------------------------------ dtypes
DTYPE_BYTES = {"float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2,
               "half": 2}


def known_dtype(name: str) -> tuple[int, bool] | None:
    """(bytes, is_fp8) of a lower-case dtype name without its module prefix, or None when unknown. FP8 tensors
    are priced as 2 bytes (docs/model.md#symbols, docs/model.md#byte-widths-per-framework)."""
    if name in DTYPE_BYTES:
        return DTYPE_BYTES[name], False
    if "fp8" in name or "float8" in name:
        return 2, True
    return None


def dtype_bytes(value: Any, path: str, key: str) -> int:
    """Bytes per element of a PyTorch-style dtype name (``bfloat16``, ``torch.float32``)."""
    found = known_dtype(str(value).strip().lower().replace("torch.", ""))
    if found is None:
        raise ConfigError(msg("support.unknown-dtype-expected", value=value), path=path,
                          key=key)
    return found[0]


# ------------------------------------------------------------------------------------------ writing
def refusal(message: str, path: str | None = None, key: str | None = None) -> ConfigError:
    """The R-FW error: the file's format cannot state what was asked (``message`` says what and why)."""
    return ConfigError(msg("support.r-fw", message=message), path=path, key=key)


def refuse(fmt: str, what: str, path: str | None = None) -> ConfigError:
    """The R-FW refusal in the words the TOML/YAML writers use: a ``fmt`` file cannot express ``what``."""
    return refusal(f"a {fmt} file cannot express {what}; choose an expressible strategy or edit the file by hand",
                   path)


def changed_fields(old: Strategy, new: Strategy) -> dict[str, Any]:
    """``field`` or ``record.field`` -> new value, for every Strategy field that differs."""
    a, b = old.to_dict(), new.to_dict()
    out: dict[str, Any] = {}
    for key in b:
        if isinstance(b[key], dict):
            out.update({f"{key}.{k}": v for k, v in b[key].items() if a[key].get(k) != v})
        elif a[key] != b[key]:
            out[key] = b[key]
    return out


def refuse_unwritable(fmt: str, old: Strategy, new: Strategy, writable: set[str], path: str) -> None:
    """Refuse (R-FW) a change to any Strategy field outside ``writable`` (``field`` / ``record.field`` names)."""
    changed = changed_fields(old, new)
    extra = sorted(set(changed) - writable)
    if extra:
        raise refuse(fmt, ", ".join(f"strategy {k} = {changed[k]!r}" for k in extra), path)


def original_strategy(source: SourceFile, parsed: ParsedConfig, reader: Reader, data: Any) -> Strategy:
    """The strategy ``source`` itself states (``parsed`` may carry later edits), re-read with the device
    count of ``parsed`` (or none, for files that state theirs)."""
    problem: ConfigError | None = None
    for devices in (parsed.strategy.world_size, None):
        try:
            reading = reader(source.text, source.path, data, devices)
        except ConfigError as exc:
            problem = problem or exc
            continue
        values = {k: v for k, v in parsed.values.items() if not k.startswith("strategy.")}
        values.update({k: v for k, v in reading.values.items() if k.startswith("strategy.")})
        values = {k: coerce(REGISTRY[k], v, source.path) if k in REGISTRY else v for k, v in values.items()}
        return build_plan(values, where=source.path).strategy
    raise ConfigError(msg("support.cannot-re-read", value=problem.bare_message if problem else ''),
                      path=source.path)
