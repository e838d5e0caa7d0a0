"""Readers for the precision files a config names: modify_mixlist JSON, customize_dtypes, op_precision_mode.

Each reader mirrors the checks of the component that reads the file on a real system (GE's fusion engine,
tests/data/reference/ADAPTER-FACTS.md §4.4–§4.5) and returns the parsed rules plus the problems it found. A problem that
makes GE refuse the file is an *error* (the real compile fails); one it only logs is a *warning*. Op names are matched
against both Ascend IR types (``MatMulV2``) and TensorFlow types (``MatMul``) because users write either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from npu_jupyter._ops.library import OpLibrary

_LISTS = {"black-list": "black", "white-list": "white", "gray-list": "gray"}
_ACTIONS = ("to-add", "to-remove")
_LIST_NAMES = ("gray-list", "white-list", "black-list")  # in the order GE's error names them
_LEVEL_NAMES = ("Top", "Second", "Third")
_EXPECTED_BELOW: dict[type, str] = {dict: "'to-add' or 'to-remove'", list: "array"}
# (adds, removes) combinations GE accepts per op (§4.4); anything else is refused.
_LEGAL = {
    (frozenset(), frozenset({"black"})),
    (frozenset(), frozenset({"white"})),
    (frozenset({"gray"}), frozenset()),
    (frozenset({"gray"}), frozenset({"black"})),
    (frozenset({"gray"}), frozenset({"white"})),
    (frozenset({"white"}), frozenset()),
    (frozenset({"white"}), frozenset({"gray"})),
    (frozenset({"white"}), frozenset({"black"})),
    (frozenset({"black"}), frozenset()),
    (frozenset({"black"}), frozenset({"gray"})),
    (frozenset({"black"}), frozenset({"white"})),
}


def _ge_dtype_names() -> tuple[dict[str, str], frozenset[str]]:
    """GE's dtype name table (``ge_dtype_names.json``): names with a TensorFlow dtype, GE-only names.

    Data, not code: the table is GE's, cited in the file, and must be comparable with it line by line.
    """
    from npu_jupyter._package_data import read_package_text

    text = read_package_text("npu_jupyter._plan", "ge_dtype_names.json")
    data = json.loads(text)
    return dict(data["tensorflow"]), frozenset(data["ge_only"])


_GE_DTYPES, _GE_ONLY_DTYPES = _ge_dtype_names()
_MAX_LINE = 1024


@dataclass
class FileFindings:
    """Errors and warnings from reading a precision file, reported with the plan's."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _read_text(path: str, option: str, findings: FileFindings) -> str | None:
    """The file's text, or None with a plan error: a file named by an option is user input, so an
    unreadable, non-UTF-8 or impossible path (an embedded NUL) is a finding, never a traceback.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        findings.errors.append(f"{option} file {path!r} cannot be read: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        findings.errors.append(f"{option} file {path!r} is not UTF-8 text (byte {exc.start}); save it as UTF-8")
    except ValueError as exc:  # embedded NUL in the path
        findings.errors.append(f"{option} file path {path!r} is not a usable path: {exc}")
    return None


def _resolve(name: str, lib: OpLibrary, option: str, findings: FileFindings) -> list[str]:
    """Keys an op-type name stands for: itself as an Ascend IR type and the IR type of the TF op.

    ``MatMul`` is both an IR type and the TF op whose IR type is ``MatMulV2``; users mean either, so
    both match. The key equal to ``name`` is the one GE matches literally; any other is our reading
    of a TensorFlow name (see :func:`_literal_first`). An empty list (with a warning) when the name
    matches neither spelling.
    """
    keys: list[str] = []
    ir = lib.ir_type(name)
    if ir is not None:
        keys.append(ir)
    caps = lib.caps(name)
    if caps is not None and getattr(caps, "declared", True) and caps.ir_type not in keys:
        keys.append(caps.ir_type)
    if not keys:
        findings.warnings.append(
            f"{option} names {name!r}, which matches no Ascend IR op type and no TensorFlow op type: ignored"
        )
    return keys


def _literal_first(names: list[str], lib: OpLibrary, option: str, findings: FileFindings) -> list[tuple[str, str]]:
    """(name, IR key) pairs of a file's op-type names, a TensorFlow-name reading dropped where the file
    names that IR type itself.

    GE matches the names in these files literally, so a file naming both ``BatchMatMul`` and
    ``BatchMatMulV2`` (as ModelZoo switch files do) has one entry per IR type. Reading ``BatchMatMul``
    also as the TF op whose IR type is ``BatchMatMulV2`` must not make the two entries collide (a
    false "repeats a rule", or GE's "invalid operation" for a black + white pair), nor let the first
    line decide for the type the second line names: the literal entry wins, wherever it is.
    """
    literal = {name for name in names if lib.ir_type(name) == name}
    pairs: list[tuple[str, str]] = []
    for name in names:
        for key in _resolve(name, lib, option, findings):
            if key == name or key not in literal:
                pairs.append((name, key))
    return pairs


# --------------------------------------------------------------------------------------------
# modify_mixlist
# --------------------------------------------------------------------------------------------


def _level(
    doc: dict[str, Any], keys: tuple[str, ...], path: str, allowed: tuple[str, ...], child: type, findings: FileFindings
) -> Iterator[tuple[str, Any]]:
    """The entries of one level of a mixlist file that GE accepts; GE's error for each one it refuses.

    ``keys`` are the keys above this level (none for the top); an entry is accepted when its key is
    in ``allowed`` and its value has the type the next level needs (``child``).
    """
    where = f"{_LEVEL_NAMES[len(keys)]} level of json file {path!r}"
    if keys:
        where += " under " + "/".join(repr(k) for k in keys)
    expected = " or ".join(repr(a) for a in allowed)
    for key, value in doc.items():
        if key not in allowed:
            findings.errors.append(f"{where} should be {expected}, got {key!r}")
        elif not isinstance(value, child):
            below = f"{_LEVEL_NAMES[len(keys) + 1]} level of json file {path!r} under " + "/".join(
                repr(k) for k in (*keys, key)
            )
            findings.errors.append(f"{below} should be {_EXPECTED_BELOW[child]}")
        else:
            yield key, value


def read_mixlist(path: str, lib: OpLibrary) -> tuple[dict[str, tuple[frozenset[str], frozenset[str]]], FileFindings]:
    """IR op type -> (lists added to, lists removed from); GE's format checks become errors."""
    findings = FileFindings()
    text = _read_text(path, "modify_mixlist", findings)
    if text is None:
        return {}, findings
    if not text.strip():
        findings.errors.append(f"modify_mixlist file {path!r} is empty")
        return {}, findings
    try:
        doc = json.loads(text)
    except ValueError as exc:
        findings.errors.append(f"modify_mixlist file {path!r} is not valid JSON: {exc}")
        return {}, findings
    if not isinstance(doc, dict):
        expected = " or ".join(repr(name) for name in _LIST_NAMES)
        findings.errors.append(f"Top level of json file {path!r} should be {expected}")
        return {}, findings
    entries = [
        (top, action, str(name))
        for top, body in _level(doc, (), path, _LIST_NAMES, dict, findings)
        for action, names in _level(body, (top,), path, _ACTIONS, list, findings)
        for name in names
    ]
    keys: dict[str, list[str]] = {}
    for name, ir in _literal_first(
        list(dict.fromkeys(name for _, _, name in entries)), lib, "modify_mixlist", findings
    ):
        keys.setdefault(name, []).append(ir)
    ops: dict[str, tuple[set[str], set[str]]] = {}
    for top, action, name in entries:
        for ir in keys.get(name, []):
            adds, removes = ops.setdefault(ir, (set(), set()))
            (adds if action == "to-add" else removes).add(_LISTS[top])
    out: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for ir, (adds, removes) in ops.items():
        key = (frozenset(adds), frozenset(removes))
        if key not in _LEGAL:
            desc = "+".join([f"add-{a}" for a in sorted(adds)] + [f"remove-{r}" for r in sorted(removes)])
            findings.errors.append(f"Operation {desc} for op {ir} is invalid")
            continue
        out[ir] = key
    return out, findings


def apply_mixlist(
    policy: str, change: tuple[frozenset[str], frozenset[str]] | None, ir: str, warnings: list[str] | None = None
) -> tuple[str, bool]:
    """New policy of an op after its modify_mixlist entry, and whether the file changed it."""
    if change is None:
        return policy, False
    adds, removes = change
    new = policy
    for r in removes:
        if r == policy:
            new = "gray"
        elif warnings is not None:
            warnings.append(f"modify_mixlist removes {ir} from the {r} list, but it is on the {policy} list")
    if "black" in adds:
        new = "black"
    elif "white" in adds:
        new = "white"
    elif "gray" in adds:
        new = "gray"
    return new, True


# --------------------------------------------------------------------------------------------
# customize_dtypes
# --------------------------------------------------------------------------------------------


@dataclass
class DtypeRule:
    """One customize_dtypes line: dtypes per input/output position (None: keep), and its source."""

    inputs: list[str | None]
    outputs: list[str | None]
    line: int
    text: str


def _dtypes(part: str, findings: FileFindings) -> list[str | None] | None:
    """The dtypes of one ``InputDtype:``/``OutputDtype:`` list; None (with an error) on a bad token.

    Like the fusion engine: the token is upper-cased, prefixed with ``DT_`` and looked up in GE's
    name table, so ``float32``, ``FLOAT`` and ``bfloat16`` are all accepted. A name GE accepts but
    TensorFlow has no dtype for (``int4``, ``hifloat8``) keeps the op's own dtype at that position.
    """
    out: list[str | None] = []
    for tok in part.split(","):
        tok = tok.strip()
        if not tok:
            out.append(None)
            continue
        ge = "DT_" + tok.upper()
        if ge in _GE_ONLY_DTYPES:
            findings.warnings.append(
                f"customize_dtypes: {tok} ({ge}) is a GE dtype with no TensorFlow "
                "equivalent: the planner keeps the op's own dtype there"
            )
            out.append(None)
            continue
        if ge not in _GE_DTYPES:
            allowed = ", ".join(sorted({k[3:].lower() for k in _GE_DTYPES} | {k[3:].lower() for k in _GE_ONLY_DTYPES}))
            findings.errors.append(f"{tok} is an invalid dtype (GE accepts, in any case: {allowed})")
            return None
        out.append(_GE_DTYPES[ge])
    while out and out[-1] is None:
        out.pop()
    return out


def _parse_rule(spec: str, findings: FileFindings) -> tuple[list[str | None], list[str | None]] | None:
    i_pos = spec.find("InputDtype:")
    o_pos = spec.find("OutputDtype:")
    if i_pos < 0 and o_pos < 0:
        return None
    if i_pos >= 0 and o_pos >= 0 and o_pos < i_pos:
        return None
    inputs: list[str | None] = []
    outputs: list[str | None] = []
    if i_pos >= 0:
        end = o_pos if o_pos >= 0 else len(spec)
        parsed = _dtypes(spec[i_pos + len("InputDtype:") : end].rstrip(","), findings)
        if parsed is None:
            return None
        inputs = parsed
    if o_pos >= 0:
        parsed = _dtypes(spec[o_pos + len("OutputDtype:") :], findings)
        if parsed is None:
            return None
        outputs = parsed
    return inputs, outputs


def read_customize_dtypes(path: str, lib: OpLibrary) -> tuple[dict[str, DtypeRule], dict[str, DtypeRule], FileFindings]:
    """(rules by op name, rules by IR op type, findings); any malformed line rejects the whole file.

    Blank and ``#`` lines are rejected too: the fusion engine's parser does not skip them, although a
    documentation example shows comments (tests/data/reference/ADAPTER-FACTS.md §4.5, inferred).
    """
    findings = FileFindings()
    text = _read_text(path, "customize_dtypes", findings)
    by_name: dict[str, DtypeRule] = {}
    by_type: dict[str, DtypeRule] = {}
    type_rules: list[tuple[str, DtypeRule]] = []  # (op type as written, rule), in file order
    if text is None:
        return by_name, by_type, findings
    bad = "The content format of the customization file is incorrect"
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if len(raw) > _MAX_LINE:
            findings.errors.append(f"{bad}: line {lineno} is longer than {_MAX_LINE} characters")
            break
        is_type = line.startswith("OpType::")
        if is_type:
            key, sep, spec = line[len("OpType::") :].partition(":")
        else:
            key, sep, spec = line.partition("::")
        parsed = _parse_rule(spec, findings) if sep and key else None
        if parsed is None:
            hint = (
                " (blank and comment lines are not skipped by the parser)" if not line or line.startswith("#") else ""
            )
            findings.errors.append(f"{bad}: line {lineno}: {raw!r}{hint}")
            break
        rule = DtypeRule(parsed[0], parsed[1], lineno, line)
        if is_type:
            type_rules.append((key, rule))
        else:
            _keep_first(by_name, key, rule, findings)
    if findings.errors:
        return {}, {}, findings
    first_of: dict[str, DtypeRule] = {}  # each op type's first line, in file order
    for name, rule in type_rules:
        if first_of.setdefault(name, rule) is not rule:
            findings.warnings.append(_repeated(rule, first_of[name], name))
    for name, key in _literal_first(list(first_of), lib, "customize_dtypes", findings):
        _keep_first(by_type, key, first_of[name], findings)
    return by_name, by_type, findings


def _keep_first(table: dict[str, DtypeRule], key: str, rule: DtypeRule, findings: FileFindings) -> None:
    """Record ``rule`` for ``key`` unless a line has already set one: the fusion engine keeps the first."""
    first = table.setdefault(key, rule)
    if first is not rule:
        findings.warnings.append(_repeated(rule, first, key))


def _repeated(rule: DtypeRule, first: DtypeRule, key: str) -> str:
    """The warning for a line that names an op (type) an earlier line has a rule for: both lines cited."""
    return f"customize_dtypes line {rule.line} repeats line {first.line}'s rule for {key}: ignored (the first applies)"


# --------------------------------------------------------------------------------------------
# op_precision_mode (.ini) and optypelist_for_implmode
# --------------------------------------------------------------------------------------------


def read_op_precision_mode(path: str, findings: FileFindings) -> tuple[dict[str, str], dict[str, str]]:
    """(mode by op type, mode by node name) from an ini with ``[ByOpType]``/``[ByNodeName]`` sections."""
    text = _read_text(path, "op_precision_mode", findings)
    by_type: dict[str, str] = {}
    by_name: dict[str, str] = {}
    if text is None:
        return by_type, by_name
    section = "byoptype"
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            continue
        key, sep, value = line.partition("=")
        if not sep:
            findings.warnings.append(f"op_precision_mode file {path!r}: line {raw!r} is not key=value: ignored")
            continue
        (by_name if section == "bynodename" else by_type)[key.strip()] = value.strip()
    return by_type, by_name
