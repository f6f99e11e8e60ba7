"""Writing a strategy back into a plan file: only the strategy fields that changed are touched; YAML keeps
its comments, order and quoting (ruamel round trip), JSON is re-serialised with its indentation."""

from __future__ import annotations

import io
import json
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from ..errors import ConfigError
from ..fields import REGISTRY
from ..messages import msg
from ..parsed import ParsedConfig, SourceFile
from ..records import _thaw
from ..strategy import Strategy


def strategy_fields(strategy: Strategy) -> dict[str, Any]:
    """Flat canonical ``name -> value`` of a Strategy (JSON-safe), ``recompute`` written as a mode or counts."""
    out: dict[str, Any] = {}
    for _key, info in REGISTRY.items():
        if info.section != "strategy":
            continue
        obj: Any = strategy
        for part in info.path:
            obj = getattr(obj, part)
        out[info.name] = _thaw(obj)
    plan = strategy.recompute
    out["recompute"] = _thaw(plan.full_counts) if plan.full_counts is not None else plan.default_mode
    out.pop("full_counts", None)
    return out


def changed_plan_fields(old: Strategy, new: Strategy) -> dict[str, Any]:
    """Plan-file field name -> new value, for every strategy field that differs (``strategy_fields`` names)."""
    before, after = strategy_fields(old), strategy_fields(new)
    return {k: v for k, v in after.items() if before.get(k) != v}


def write(source: SourceFile, parsed: ParsedConfig, strategy: Strategy) -> str:
    changes = changed_plan_fields(parsed.baseline_strategy, strategy)
    if not changes:
        return source.text
    if source.path.endswith(".json"):
        data = json.loads(source.text)
        data.setdefault("strategy", {}).update(changes)
        indent = _json_indent(source.text)
        return json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if source.text.endswith("\n") else "")
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    try:
        data = yaml.load(source.text)
    except Exception as exc:  # ruamel raises many types; the text was readable by PyYAML already
        raise ConfigError(msg("plan_writer.cannot-rewrite-yaml", exc=exc), path=source.path) from None
    section = data.get("strategy")
    if section is None:
        section = CommentedMap()
        data["strategy"] = section
    for name, value in changes.items():
        key = _existing_key(section, name)
        section[key] = _flow(value)
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _existing_key(section: CommentedMap, name: str) -> str:
    """Reuse an alias the user wrote (``os`` for ``shard_size``) instead of adding a second key."""
    from ..fields import ALIASES

    for alias, canonical in ALIASES.items():
        if canonical == f"strategy.{name}" and alias.split(".", 1)[1] in section:
            return alias.split(".", 1)[1]
    return name


def _flow(value: Any) -> Any:
    """Lists are written inline ([1, 2, 3]) as people write offsets and recompute counts."""
    from ruamel.yaml.comments import CommentedSeq

    if isinstance(value, list):
        seq = CommentedSeq(_flow(v) for v in value)
        seq.fa.set_flow_style()
        return seq
    return value


def _json_indent(text: str) -> int:
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else 2
