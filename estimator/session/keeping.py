"""What survives a restart: per document (its files and open arguments) the search space last used and the
pinned baseline, and the compare set — kept as JSON in the user config folder (``session.json`` beside the
presets, ``estimator.userconfig``), read by the app at start and written after every change.

A plan is kept as the files it came from and what differs from them (``KeptPlan``): the full strategy, the
model and options values that were edited, the device and its capacity — never a Result (it is priced again)
and never a copy of the files. Rebuilding reads the files as they are now; when they changed since the plan
was kept (their digest differs), the rebuilt plan says so in its notes, and a plan that can no longer be
rebuilt is refused with the reason, never shown as the one kept.

A kept file that is unreadable, of another version or out of bounds is named and ignored (the app starts
without it); it is always replaced atomically.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SappError
from ..fields import canonical_values
from ..hardware import Hardware
from ..limits import MAX_DEVICES, MAX_DIM_VALUES, MAX_GLOBAL_BATCH
from ..messages import Message, msg
from ..parsed import ParsedConfig
from . import edits
from .opening import OpenRequest, read_plan

VERSION = 1
FILE_NAME = "session.json"
MAX_DOCUMENTS = 20            # documents remembered (newest first), as many as a long recent list
MAX_KEPT_BYTES = 1 << 20      # the file is read whole: bounded like every input
SEARCH_MODES = ("fixed", "list", "auto", "derived")
_OPEN_ARGS = ("framework", "devices", "model", "device")


def kept_path() -> Path:
    from ..userconfig import user_config_dir

    return user_config_dir() / FILE_NAME


def files_digest(parsed: ParsedConfig) -> str:
    """A digest of the texts the plan was read from (a change on disk changes it)."""
    h = hashlib.sha256()
    for source in parsed.sources:
        h.update(source.path.encode("utf-8", "replace") + b"\0" + source.text.encode("utf-8", "replace") + b"\0")
    return h.hexdigest()[:32]


# ------------------------------------------------------------------------------------------- plans
@dataclass(frozen=True)
class KeptPlan:
    """A plan as its files plus what differs from them."""

    paths: tuple[str, ...]
    args: dict[str, Any]
    strategy: dict[str, Any]          # every strategy field (``strategy_fields`` names)
    values: dict[str, Any]            # model.* / options.* values that differ from the files
    device: str                       # hardware.device and capacity (bytes) of the plan
    capacity: float
    name: str = ""
    digest: str = ""                  # of the files when kept

    def to_json(self) -> dict[str, Any]:
        return {"paths": list(self.paths), "args": self.args, "strategy": self.strategy, "values": self.values,
                "device": self.device, "capacity": self.capacity, "name": self.name, "digest": self.digest}

    @classmethod
    def from_json(cls, data: Any) -> KeptPlan:
        if not isinstance(data, dict):
            raise SappError(msg("keeping.plan-mapping"))
        paths = data.get("paths")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise SappError(msg("keeping.plan-paths"))
        args = _open_args(data.get("args"))
        strategy, values = data.get("strategy"), data.get("values", {})
        if not isinstance(strategy, dict) or not isinstance(values, dict):
            raise SappError(msg("keeping.plan-sections"))
        capacity = data.get("capacity")
        if not isinstance(capacity, (int, float)) or isinstance(capacity, bool) or not capacity > 0:
            raise SappError(msg("keeping.plan-capacity"))
        return cls(tuple(paths), args, dict(strategy), dict(values), str(data.get("device") or ""), float(capacity),
                   str(data.get("name") or ""), str(data.get("digest") or ""))

    @property
    def request_args(self) -> dict[str, Any]:
        return {k: v for k, v in self.args.items() if v is not None}


def _open_args(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or set(raw) - set(_OPEN_ARGS):
        raise SappError(msg("keeping.open-args", names=", ".join(_OPEN_ARGS)))
    out = {k: v for k, v in raw.items() if v is not None}
    if "devices" in out and not (isinstance(out["devices"], int) and 0 < out["devices"] <= MAX_DEVICES):
        raise SappError(msg("keeping.open-devices"))
    if any(not isinstance(v, str) for k, v in out.items() if k != "devices"):
        raise SappError(msg("keeping.open-names"))
    return out


def keep_plan(request: OpenRequest, base: ParsedConfig, plan: ParsedConfig, name: str = "") -> KeptPlan:
    """``plan`` (derived from ``base``, the plan ``request``'s files state) as a KeptPlan."""
    from ..formats.plan_writer import strategy_fields

    before = canonical_values(base.model, base.strategy, base.options)
    after = canonical_values(plan.model, plan.strategy, plan.options)
    values = {k: _json_value(v) for k, v in after.items()
              if not k.startswith("strategy.") and before.get(k) != v}
    return KeptPlan(request.paths, {k: v for k, v in request.args.items() if v is not None},
                    strategy_fields(plan.strategy), values, plan.hardware.id or plan.hardware.name,
                    float(plan.hardware.capacity), name, files_digest(base))


def _json_value(value: Any) -> Any:
    from ..records import _thaw

    return _thaw(value)


def rebuild_plan(kept: KeptPlan, base: ParsedConfig,
                 presets: Sequence[Hardware] = ()) -> tuple[ParsedConfig, tuple[Message, ...]]:
    """The kept plan on top of ``base`` (its files read now) and notes for the user; raises SappError when the
    files no longer allow it (the fields that differ are named)."""
    from ..formats.plan_writer import strategy_fields

    current = strategy_fields(base.strategy)
    changes: dict[str, Any] = {f"strategy.{k}": v for k, v in kept.strategy.items() if current.get(k) != v}
    if changes:  # the degrees come with their dp and micro-batch count: no hold rule re-derives them
        for pinned in ("dp", "micro_batches"):
            if pinned in kept.strategy:
                changes[f"strategy.{pinned}"] = kept.strategy[pinned]
    changes.update(kept.values)
    if kept.device and kept.device != (base.hardware.id or base.hardware.name):
        changes["hardware.device"] = kept.device
    if kept.capacity != base.hardware.capacity:
        changes["hardware.capacity"] = kept.capacity
    try:
        state = edits.propose(base, changes, presets=presets) if changes else None
    except SappError as exc:
        raise SappError(msg("keeping.not-rebuilt", plan=_plan_name(kept), files=_names(kept), reason=exc)) \
            from None
    parsed = state.parsed if state is not None else base
    got = strategy_fields(parsed.strategy)
    differ = sorted(k for k, v in kept.strategy.items() if got.get(k) != v)
    if differ:
        raise SappError(msg("keeping.not-rebuilt", plan=_plan_name(kept), files=_names(kept),
                            reason=msg("keeping.fields-differ", fields=", ".join(differ))))
    notes = ()
    if kept.digest and kept.digest != files_digest(base):
        notes = (msg("keeping.files-changed", files=_names(kept), plan=_plan_name(kept)),)
    return parsed, notes


@dataclass(frozen=True)
class Rebuilt:
    """A kept plan read again: the request for its files, the plan they state now, the kept plan on top."""

    request: OpenRequest
    base: ParsedConfig
    parsed: ParsedConfig
    notes: tuple[Message, ...] = ()


def read_kept(kept: KeptPlan, preset_dirs: Sequence[str | Path] = ()) -> Rebuilt:
    """Read a kept plan's files and rebuild it (a worker's job: it reads files)."""
    from ..hardware import load_presets

    request = OpenRequest.of(kept.paths, preset_dirs=preset_dirs, **kept.request_args)
    base = read_plan(request).parsed
    try:
        presets = load_presets(tuple(Path(d) for d in preset_dirs))
    except SappError:
        presets = load_presets(())
    parsed, notes = rebuild_plan(kept, base, presets)
    return Rebuilt(request, base, parsed, notes)


def _plan_name(kept: KeptPlan) -> Any:
    return kept.name or msg("keeping.the-plan")


def _names(kept: KeptPlan) -> str:
    return " + ".join(Path(p).name for p in kept.paths)


# --------------------------------------------------------------------------------------- search space
@dataclass(frozen=True)
class KeptSearch:
    """A search space as the app's editor holds it: device count, global batch, device preset, how many to
    rank, and per dimension its mode (fixed / list / auto / derived) with the listed values."""

    devices: int
    global_batch: int
    device: str
    top_k: int
    dims: dict[str, tuple[str, str]] = field(default_factory=dict)   # name -> (mode, values text)

    def to_json(self) -> dict[str, Any]:
        return {"devices": self.devices, "global_batch": self.global_batch, "device": self.device,
                "top_k": self.top_k, "dims": {k: list(v) for k, v in self.dims.items()}}

    @classmethod
    def from_json(cls, data: Any) -> KeptSearch:
        from ..search import parse_dims
        from ..search.space import DIMENSIONS

        if not isinstance(data, dict):
            raise SappError(msg("keeping.search-mapping"))
        devices, batch, top = data.get("devices"), data.get("global_batch"), data.get("top_k")
        for name, value, top_bound in (("devices", devices, MAX_DEVICES), ("global_batch", batch, MAX_GLOBAL_BATCH),
                                       ("top_k", top, 1000)):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= top_bound:
                raise SappError(msg("keeping.search-number", name=name, top=top_bound))
        dims: dict[str, tuple[str, str]] = {}
        raw = data.get("dims") or {}
        if not isinstance(raw, dict):
            raise SappError(msg("keeping.search-dims"))
        for name, entry in raw.items():
            if name not in DIMENSIONS or not isinstance(entry, list) or len(entry) != 2 or \
                    entry[0] not in SEARCH_MODES or not isinstance(entry[1], str) or \
                    len(entry[1]) > 16 * MAX_DIM_VALUES:
                raise SappError(msg("keeping.search-dim", name=name, modes=", ".join(SEARCH_MODES)))
            if entry[0] == "list":
                parse_dims([f"{name}={entry[1].replace(' ', '')}"])  # raises ConfigError naming the dimension
            dims[name] = (entry[0], entry[1])
        return cls(devices, batch, str(data.get("device") or ""), top, dims)


# ------------------------------------------------------------------------------------------ the file
@dataclass(frozen=True)
class KeptDocument:
    paths: tuple[str, ...]
    args: dict[str, Any]
    search: KeptSearch | None = None
    pinned: KeptPlan | None = None

    def to_json(self) -> dict[str, Any]:
        return {"paths": list(self.paths), "args": self.args,
                "search": self.search.to_json() if self.search else None,
                "pinned": self.pinned.to_json() if self.pinned else None}


@dataclass(frozen=True)
class Kept:
    """Everything kept: documents (newest first) and the compare set."""

    documents: tuple[KeptDocument, ...] = ()
    compare: tuple[KeptPlan, ...] = ()

    def document(self, paths: Sequence[str]) -> KeptDocument | None:
        key = _key(paths)
        return next((d for d in self.documents if _key(d.paths) == key), None)

    def with_document(self, doc: KeptDocument) -> Kept:
        key = _key(doc.paths)
        others = tuple(d for d in self.documents if _key(d.paths) != key)
        return Kept((doc, *others)[:MAX_DOCUMENTS], self.compare)

    def with_compare(self, plans: Sequence[KeptPlan]) -> Kept:
        return Kept(self.documents, tuple(plans))

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "documents": [d.to_json() for d in self.documents],
                "compare": [p.to_json() for p in self.compare]}


def _key(paths: Sequence[str]) -> tuple[str, ...]:
    return tuple(str(Path(p).resolve()) for p in paths)


def document_key(paths: Sequence[str]) -> tuple[str, ...]:
    """How documents are told apart: their files' absolute paths, in order."""
    return _key(paths)


def load_kept(path: Path | None = None) -> tuple[Kept, Message | None]:
    """The kept state and why (part of) it was ignored ("" when all of it was read). A missing file is an
    empty state; an unreadable one is named and ignored; a broken entry is dropped and named (None: all read)."""
    path = path or kept_path()
    if not path.exists():
        return Kept(), None
    try:
        if not path.is_file() or path.stat().st_size > MAX_KEPT_BYTES:
            return Kept(), msg("keeping.not-regular", path=str(path), mib=MAX_KEPT_BYTES >> 20)
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return Kept(), msg("keeping.unreadable", path=str(path), reason=str(exc))
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return Kept(), msg("keeping.wrong-version", path=str(path), version=VERSION)
    problems: list[Message] = []
    documents = []
    for k, raw in enumerate(data.get("documents") or []):
        try:
            if not isinstance(raw, dict):
                raise SappError(msg("keeping.document-mapping"))
            paths = raw.get("paths")
            if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
                raise SappError(msg("keeping.document-paths"))
            search = KeptSearch.from_json(raw["search"]) if raw.get("search") is not None else None
            pinned = KeptPlan.from_json(raw["pinned"]) if raw.get("pinned") is not None else None
            documents.append(KeptDocument(tuple(paths), _open_args(raw.get("args")), search, pinned))
        except SappError as exc:
            problems.append(msg("keeping.bad-document", n=k + 1, error=exc))
    compare = []
    for k, raw in enumerate(data.get("compare") or []):
        try:
            compare.append(KeptPlan.from_json(raw))
        except SappError as exc:
            problems.append(msg("keeping.bad-compared", n=k + 1, error=exc))
    problem = msg("keeping.ignored", path=str(path), problems=problems) if problems else None
    return Kept(tuple(documents[:MAX_DOCUMENTS]), tuple(compare)), problem


def save_kept(kept: Kept, path: Path | None = None) -> None:
    """Write the state atomically (raises SappError naming the file when it cannot be written)."""
    from ..atomic import write_atomic

    path = path or kept_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic({str(path): json.dumps(kept.to_json(), indent=1, ensure_ascii=False) + "\n"}, backup=False)
    except OSError as exc:
        raise SappError(msg("keeping.not-written", path=str(path), reason=str(exc))) from None
