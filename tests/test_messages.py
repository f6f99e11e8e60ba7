"""The message catalogue (estimator/messages/*.yaml): every text the estimator hands to the user has a catalogue key
with an English and a Simplified Chinese template. The keys and parameters are collected statically from the
source, so a new message without its translations — or text written straight into a warning, assumption, error,
rule or Explain node — fails here, naming the file and line."""

from __future__ import annotations

import ast
import re
import string
from dataclasses import dataclass
from pathlib import Path

import pytest

from estimator.errors import ConfigError, LayoutError, StrategyError, Violation
from estimator.messages import CHINESE, ENGLISH, LANGUAGES, Message, catalogue, catalogue_files, fields, localize, msg
from estimator.warnings import Assumption, EstimateWarning

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "estimator"
CODE = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$")  # W-REC-CLIP, R-FP8-DEVICE, E-PART-SUM

# (callable name, positions of its text arguments, keyword names of text arguments): where user text goes
TEXT_ARGUMENTS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "EstimateWarning": ((1,), ("text",)),
    "Assumption": ((2,), ("source",)),
    "Violation": ((1,), ("message",)),
    "LayoutError": ((1,), ("message",)),
    "ConfigError": ((0,), ("message",)),
    "SappError": ((0,), ()),
    "ModelSpecError": ((0,), ()),
    "LogError": ((0,), ()),
    "EditError": ((1,), ("message",)),
    "warn": ((1,), ("text",)),          # Collector.warn(code, text)
    "assume": ((2,), ("source",)),      # Collector.assume(name, value, source)
    "Quantity": ((0,), ("label", "note")),
    "sum_node": ((0,), ("label", "note")),
    "max_node": ((0,), ("label",)),
    "Rule": ((2,), ("message",)),
    "StageTerm": ((6,), ("note",)),
}
# the positional argument that is a code, for the callables that take one
CODE_ARGUMENTS = {"EstimateWarning": 0, "Violation": 0, "LayoutError": 0, "warn": 0, "Rule": 0}


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _raw_text(node: ast.expr) -> bool:
    """Text written in place: a string literal, an f-string, string arithmetic, a .format/.join call, or a
    conditional/lambda giving one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value != ""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return _raw_text(node.left) or _raw_text(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join"):
        return _raw_text(node.func.value) or node.func.attr == "join"
    if isinstance(node, ast.IfExp):
        return _raw_text(node.body) or _raw_text(node.orelse)
    if isinstance(node, ast.Lambda):
        return _raw_text(node.body)
    return False


def _sources() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(SOURCE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        out.append((rel, ast.parse(path.read_text(encoding="utf-8"), rel)))
    return out


SOURCES = _sources()


def _calls() -> list[tuple[str, ast.Call]]:
    return [(rel, node) for rel, tree in SOURCES for node in ast.walk(tree) if isinstance(node, ast.Call)]


def message_uses() -> list[tuple[Use, str, set[str] | None]]:
    """Every ``msg("KEY", name=…)`` of the estimator: where, the key, the parameter names (None: ``**`` used)."""
    out = []
    for rel, call in _calls():
        if _name(call.func) != "msg":
            continue
        first = call.args[0] if call.args else None
        key = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
        names: set[str] | None = {k.arg for k in call.keywords if k.arg is not None}
        if any(k.arg is None for k in call.keywords):
            names = None
        out.append((Use(rel, call.lineno, key or ast.unparse(first) if first else "msg()"), key, names))
    return out


def raw_texts() -> list[Use]:
    """Text handed to a warning, assumption, error, rule or Explain node without a catalogue key."""
    out = []
    for rel, call in _calls():
        name = _name(call.func)
        if name not in TEXT_ARGUMENTS:
            continue
        positions, keywords = TEXT_ARGUMENTS[name]
        args = [call.args[i] for i in positions if i < len(call.args)]
        args += [k.value for k in call.keywords if k.arg in keywords]
        out.extend(Use(rel, arg.lineno, f"{name}({ast.unparse(arg)[:90]})") for arg in args if _raw_text(arg))
    # a SappError subclass building its own message: super().__init__(f"...")
    for rel, tree in SOURCES:
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if not any(_name(b).endswith("Error") or _name(b) == "ExportRefused" for b in cls.bases):
                continue
            for call in (n for n in ast.walk(cls) if isinstance(n, ast.Call)):
                if _name(call.func) == "__init__" and call.args and _raw_text(call.args[0]):
                    out.append(Use(rel, call.lineno, f"{cls.name}: super().__init__({ast.unparse(call.args[0])[:80]})"))
    return out


def emitted_codes() -> dict[str, Use]:
    """Warning, rule and layout codes written in the source as the code argument of their constructors."""
    out: dict[str, Use] = {}
    for rel, call in _calls():
        name = _name(call.func)
        position = CODE_ARGUMENTS.get(name)
        if position is None or len(call.args) <= position:
            continue
        arg = call.args[position]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and CODE.match(arg.value):
            out.setdefault(arg.value, Use(rel, call.lineno, name))
    return out


# ------------------------------------------------------------------------------------------ the catalogue
def test_every_entry_has_english_and_its_translation_has_the_same_fields() -> None:
    problems = []
    for key, entry in catalogue().items():
        if ENGLISH not in entry or not set(entry) <= set(LANGUAGES):
            problems.append(f"{key}: languages {sorted(entry)}, expected {list(LANGUAGES)}")
            continue
        for language, template in entry.items():
            if not template.strip():
                problems.append(f"{key}: empty {language} template")
            try:
                names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
            except ValueError as exc:
                problems.append(f"{key} ({language}): {exc}")
                continue
            bad = [n for n in names if not n.isidentifier()]
            if bad:
                problems.append(f"{key} ({language}): fields must be named: {bad}")
        if CHINESE in entry and fields(entry[ENGLISH]) != fields(entry[CHINESE]):
            problems.append(f"{key}: fields differ: en {sorted(fields(entry[ENGLISH]))}, "
                            f"zh_CN {sorted(fields(entry[CHINESE]))}")
    assert not problems, "\n".join(problems)


def test_no_placeholder_reaches_the_user() -> None:
    markers = [f"{key} ({language})" for key, entry in catalogue().items() for language, template in entry.items()
               if re.fullmatch(r"\s*(TODO|FIXME|XXX|TBD)\b.*", template)]
    assert not markers, "placeholder templates: " + ", ".join(markers)


def test_every_entry_is_translated() -> None:
    """Every message has its Simplified Chinese template (the app would show a missing one in English)."""
    untranslated = sorted(key for key, entry in catalogue().items() if CHINESE not in entry)
    assert not untranslated, f"{len(untranslated)} messages have no zh_CN template: " + ", ".join(untranslated)


def test_an_entry_without_its_translation_is_said_in_english(monkeypatch: pytest.MonkeyPatch) -> None:
    import estimator.messages as messages

    monkeypatch.setattr(messages, "catalogue", lambda: {"x.only-english": {ENGLISH: "{n} layers"}})
    assert msg("x.only-english", n=3).render(CHINESE) == "3 layers"


def test_catalogue_files_load_and_keys_are_unique() -> None:
    seen: dict[str, str] = {}
    import yaml
    for path in catalogue_files():
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        assert isinstance(data, dict), path
        written = re.findall(r"^(\S[^:]*):\s*$", text, re.M)  # YAML keeps the last of two equal keys: refuse them
        assert len(written) == len(set(written)) == len(data), f"{path.name}: a key written twice"
        for key in data:
            assert key not in seen, f"{key} in {path.name} and {seen[key]}"
            seen[key] = path.name
    assert len(seen) == len(catalogue())


def test_the_catalogue_reads_as_pure_python_yaml_does() -> None:
    """The catalogue is read with libyaml's parser: the same templates to the character as PyYAML's pure-Python
    ``safe_load``."""
    import yaml
    expected: dict[str, dict[str, str]] = {}
    for path in catalogue_files():
        for key, entry in yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader).items():
            expected[str(key)] = {str(lang): str(text) for lang, text in entry.items()}
    assert catalogue() == expected


# ------------------------------------------------------------------------------------------ the source
def test_every_message_of_the_source_is_catalogued_with_its_parameters() -> None:
    cat = catalogue()
    problems = []
    uses = message_uses()
    assert len(uses) > 100, "the scan finds the estimator's msg() calls"
    for use, key, names in uses:
        if not key:
            problems.append(f"{use}: the key must be a string literal (so this test can check it)")
            continue
        entry = cat.get(key)
        if entry is None:
            problems.append(f"{use}: key {key} is not in the catalogue (estimator/messages/*.yaml)")
            continue
        wanted = fields(entry[ENGLISH])
        if names is not None and names != wanted:
            problems.append(f"{use}: {key} takes {sorted(wanted)}, the call gives {sorted(names)}")
    assert not problems, "\n".join(problems)


def test_no_text_bypasses_the_catalogue() -> None:
    """Warnings, assumptions, errors, rule messages and Explain labels take ``msg(…)``, never written text."""
    found = raw_texts()
    assert not found, "text without a catalogue key (use msg(KEY, …), see docs/architecture.md):\n" + \
        "\n".join(map(str, found))


def test_every_emitted_code_has_a_translation() -> None:
    cat = catalogue()
    codes = emitted_codes()
    assert {"W-REC-CLIP", "R-TP-HEADS", "W-KEY-UNKNOWN"} <= set(codes)
    missing = [f"{use}: {code}" for code, use in sorted(codes.items())
               if not any(k == code or k.startswith(code + ".") for k in cat)]
    assert not missing, "codes without a catalogue entry:\n" + "\n".join(missing)


def test_every_catalogue_key_is_used() -> None:
    """No dead entries: each key appears as a string literal in the estimator (formula ids included)."""
    literals = {node.value for _, tree in SOURCES for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    unused = sorted(set(catalogue()) - literals)
    assert not unused, "catalogue keys no source uses: " + ", ".join(unused)


# ------------------------------------------------------------------------------------------ rendering
def test_rendering_in_both_languages() -> None:
    warning = EstimateWarning("R-TP-HEADS", msg("R-TP-HEADS", t=3, a=64))
    assert warning.text == "TP 3 does not divide 64 attention heads"
    assert warning.to_dict() == {"code": "R-TP-HEADS", "text": warning.text}  # the JSON stays English
    assert warning.localized(CHINESE) == "[R-TP-HEADS] TP 3 不能整除 64 个注意力头"
    assert localize(warning, ENGLISH) == str(warning)


def test_nested_messages_and_lists_render_in_the_same_language() -> None:
    inner = msg("R-EP-DENSE", ep=2)
    error = ConfigError(inner, path="a.yaml", key="parallel.ep", line=4)
    assert str(error) == "a.yaml:4, key 'parallel.ep': EP 2 on a dense model"
    assert error.localized(CHINESE) == "a.yaml:4，键 'parallel.ep'：稠密模型上设置了 EP 2"
    assert error.bare_message == "EP 2 on a dense model"
    joined = Message("error.at-path", (("path", (msg("R-SP-T1"), msg("R-CP-SP"))), ("message", inner)))
    assert joined.render(CHINESE).startswith("序列并行需要 TP > 1（与关闭 SP 等价，属重复）、MindFormers 不支持")
    assert msg("error.at-path", path=[1, 2], message="m").render(CHINESE) == "[1, 2]：m"  # other lists as written


def test_errors_keep_their_message_across_processes() -> None:
    import pickle
    error = StrategyError([Violation("R-EP-DENSE", msg("R-EP-DENSE", ep=2)), Violation("R-CP-SP", msg("R-CP-SP"))])
    back = pickle.loads(pickle.dumps(error))
    assert str(back) == str(error) and back.codes == ("R-EP-DENSE", "R-CP-SP")
    assert back.localized(CHINESE).splitlines() == [
        "该策略违反了 2 条规则：", "  [R-EP-DENSE] 稠密模型上设置了 EP 2",
        "  [R-CP-SP] MindFormers 不支持 context_parallel 与 use_seq_parallel 同时使用"]
    layout = pickle.loads(pickle.dumps(LayoutError("R-EP-DENSE", msg("R-EP-DENSE", ep=4))))
    assert layout.code == "R-EP-DENSE" and "EP 4" in layout.localized(CHINESE)


def test_text_from_outside_stays_as_written() -> None:
    assert str(ConfigError("plain words", path="p.yaml")) == "p.yaml: plain words"
    assert ConfigError("plain words").localized(CHINESE) == "plain words"
    assumption = Assumption("strategy.tp", 1, "from a JSON file")
    assert str(assumption) == "strategy.tp = 1 (from a JSON file)"
    assert assumption.localized(CHINESE) == "strategy.tp = 1（from a JSON file）"  # only the brackets are Chinese


def test_a_missing_translation_falls_back_to_english_never_crashes() -> None:
    shown = msg("R-TP-HEADS", t=3).render(CHINESE)  # a parameter missing: the English template and the values
    assert shown == "TP {t} does not divide {a} attention heads {'t': 3}"
    assert msg("no-such-key", x=1).render(CHINESE) == "no-such-key {'x': 1}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_template_renders_with_its_own_fields(language: str) -> None:
    """Each template formats with sample values for its fields (catches a stray brace or a bad spec)."""
    for entry in catalogue().values():
        template = entry.get(language, entry[ENGLISH])
        values = {name: _sample(template, name) for name in fields(template)}
        string.Formatter().vformat(template, (), values)


def _sample(template: str, name: str) -> object:
    spec = re.search(r"\{" + re.escape(name) + r"(![rsa])?:([^}]*)\}", template)
    if spec and re.search(r"[dfgeEn%,_xXob]$|^[,_]$|\.\d", spec.group(2)):
        return 1234.5 if re.search(r"[feEg%]", spec.group(2)) or "." in spec.group(2) else 1234
    return "x"


def test_several_messages_joined_say_each_in_the_language() -> None:
    from estimator.messages import joined

    both = joined([msg("R-EP-DENSE", ep=2), msg("model.dense-layers-need")])
    assert str(both) == "EP 2 on a dense model; dense layers need ffn_hidden_size"
    assert both.render(CHINESE) == "稠密模型上设置了 EP 2；稠密层需要 ffn_hidden_size"


def test_an_error_quoted_in_a_message_is_said_in_the_same_language() -> None:
    from estimator.session.exporting import ExportRefused

    refused = ExportRefused(StrategyError([Violation("R-EP-DENSE", msg("R-EP-DENSE", ep=2))]), ("strategy.tp",))
    assert str(refused) == ("not exported: the strategy violates 1 rule:\n  [R-EP-DENSE] EP 2 on a dense model "
                            "(checked against the files' own strategy.tp: edits of those are not written by an export)")
    assert refused.localized(CHINESE).startswith(
        "未导出：该策略违反了 1 条规则：\n  [R-EP-DENSE] 稠密模型上设置了 EP 2（")


def test_explain_headings_keep_english_labels_and_say_them_in_chinese() -> None:
    from estimator.explain import CATEGORY_LABELS, Quantity, max_node, sum_node

    leaf = Quantity(msg("explain.stored"), 2.0, note=msg("explain.full-recompute-keeps"))
    peak = max_node(msg("explain.dynamic-max-over"), [leaf, Quantity("layer 3", 1.0)])
    total = sum_node(msg("explain.stage-total", stage=2), [Quantity(CATEGORY_LABELS["parameters"], 4.0), peak])
    assert total.label == "stage 2 total" and total.to_dict()["label"] == "stage 2 total"  # the JSON stays English
    assert total.children[0].label == "parameters"  # the app finds a category's node by this name
    assert peak.note == "argmax: stored" and peak.localized("note", CHINESE) == "最大项：存储"
    text = total.render(language=CHINESE)
    assert text.splitlines()[0].startswith("阶段 2 合计 = ") and "  参数 = " in text
    assert "完全重计算只保留层输入" in text
    assert "layer 3 = " in text  # a label written as plain text stays as written
    leaf.label = "renamed"  # plain text replacing a catalogued label wins over the message
    assert leaf.localized("label", CHINESE) == "renamed"


def test_a_kept_text_is_the_one_its_values_render(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendered texts are kept by template, language and parameters (estimator.messages._RENDERED): values Python
    calls equal but that render differently (1, 1.0, True; 0.0 and -0.0; a nested message's) never share a text,
    and a kept text is the one rendering afresh gives."""
    import estimator.messages as messages

    monkeypatch.setattr(messages, "catalogue", lambda: {"x.value": {ENGLISH: "{v} here", CHINESE: "{v} 在此"},
                                                         "x.inner": {ENGLISH: "inner {v}", CHINESE: "内 {v}"}})
    values = [1, 1.0, True, 0.0, -0.0, "1", None, (1, 2), (1.0, 2), msg("x.inner", v=1), msg("x.inner", v=1.0),
              msg("x.inner", v=True)]
    expected = {(repr(v), language): Message("x.value", (("v", v),)).render(language) for v in values
                for language in LANGUAGES}
    assert len(set(expected.values())) == len(expected) - 2  # only 1 and "1" say the same, in each language
    for _ in range(2):  # the second round reads what the first kept
        for v in values:
            for language in LANGUAGES:
                assert Message("x.value", (("v", v),)).render(language) == expected[(repr(v), language)]
    assert expected[("True", ENGLISH)] == "True here" and expected[("-0.0", ENGLISH)] == "-0.0 here"
    kept = {key for key in messages._RENDERED if key[0] == "{v} here"}
    assert len(kept) == len(values)  # every value its own entry, a list or a numpy number none
    assert messages._plain_key((("v", [1]),)) is None and messages._plain_key((("v", msg("x.inner", v=[1])),)) is None
