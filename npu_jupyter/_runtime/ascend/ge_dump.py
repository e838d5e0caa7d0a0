"""Reading the graph engine's own graph dumps (``DUMP_GE_GRAPH``) to set actual next to predicted.

With ``DUMP_GE_GRAPH`` = 1, 2 or 3 the CANN graph engine (GE) writes, per graph and build stage, a
``ge_proto_<id>_<stage>.txt`` file into ``DUMP_GRAPH_PATH`` (default: the working directory): the
protobuf text format of ``ge.proto.ModelDef`` from the public ``ge_ir.proto`` (Ascend metadef). The
``..._Build.txt`` stage is the graph as compiled, so its ops carry what GE really decided:

* ``OpDef.attr["_ge_attr_op_kernel_lib_name"]`` — the kernel library, hence the engine (AI Core,
  AI CPU, DVPP, host CPU, or GE's own local/runtime ops);
* ``OpDef.input_desc`` / ``output_desc`` ``.dtype`` — the dtypes the op runs in;
* ``OpDef.attr["_datadump_original_op_names"]`` — the TensorFlow ops a fused GE op came from.

The reader is a small tolerant parser of protobuf text format (no generated ge_ir module is needed and
fields it does not know are skipped). It was written from the schema and tested on dumps built from the
schema; it has **not been checked against dumps from a device**.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan

ENV_SWITCH = "DUMP_GE_GRAPH"
ENV_PATH = "DUMP_GRAPH_PATH"
BUILD_STAGES = ("_Build.txt", "_PreRunAfterBuild.txt")
KERNEL_LIB_ATTR = "_ge_attr_op_kernel_lib_name"
ORIGINAL_NAMES_ATTR = "_datadump_original_op_names"
# ~4 MB/s on a laptop CPU (bench/ge_dump_bench.py): larger dumps (DUMP_GE_GRAPH=1 keeps weights) are refused
MAX_DUMP_BYTES = 64 * 1024 * 1024

# ge.proto.DataType enum names -> numpy-style names the planner uses
_DTYPES = {
    "DT_FLOAT": "float32",
    "DT_FLOAT16": "float16",
    "DT_BF16": "bfloat16",
    "DT_DOUBLE": "float64",
    "DT_INT8": "int8",
    "DT_UINT8": "uint8",
    "DT_INT16": "int16",
    "DT_UINT16": "uint16",
    "DT_INT32": "int32",
    "DT_INT64": "int64",
    "DT_UINT32": "uint32",
    "DT_UINT64": "uint64",
    "DT_BOOL": "bool",
    "DT_STRING": "string",
    "DT_COMPLEX64": "complex64",
    "DT_COMPLEX128": "complex128",
    "DT_RESOURCE": "resource",
    "DT_VARIANT": "variant",
    "DT_UNDEFINED": "",
}
_DTYPE_NUMBERS = {
    1: "DT_FLOAT",
    2: "DT_FLOAT16",
    3: "DT_INT8",
    4: "DT_UINT8",
    5: "DT_INT16",
    6: "DT_UINT16",
    7: "DT_INT32",
    8: "DT_INT64",
    9: "DT_UINT32",
    10: "DT_UINT64",
    11: "DT_BOOL",
    12: "DT_DOUBLE",
    13: "DT_STRING",
    16: "DT_COMPLEX64",
    17: "DT_COMPLEX128",
    23: "DT_RESOURCE",
    26: "DT_VARIANT",
    27: "DT_BF16",
    0: "DT_UNDEFINED",
}


class GeDumpError(ValueError):
    """A GE dump file that is not protobuf text format of a ModelDef (names the file and the line)."""


@dataclass
class GeOp:
    """One op of a GE graph as compiled."""

    name: str
    op_type: str
    kernel_lib: str = ""
    input_dtypes: list[str] = field(default_factory=list)
    output_dtypes: list[str] = field(default_factory=list)
    original_names: list[str] = field(default_factory=list)

    @property
    def engine(self) -> str:
        """AI_CORE, AI_CPU, DVPP, HOST (host CPU kernels), HCCL, GE (GE's own local/runtime ops) or UNKNOWN."""
        return engine_of(self.kernel_lib)


@dataclass
class GeGraph:
    """One graph of a dump file."""

    name: str
    source: str
    ops: list[GeOp] = field(default_factory=list)


def engine_of(kernel_lib: str) -> str:
    """The engine a kernel library name stands for (AIcoreEngine, aicpu_tf_kernel, DNN_VM_GE_LOCAL...)."""
    lib = kernel_lib.lower()
    if not lib:
        return "UNKNOWN"
    if "aicore" in lib:
        return "AI_CORE"
    if "aicpu" in lib:
        return "AI_CPU"
    if "dvpp" in lib:
        return "DVPP"
    if "host_cpu" in lib or lib.endswith("cpu") or "host" in lib:
        return "HOST"
    if "hccl" in lib:
        return "HCCL"
    if "ge_local" in lib or "rts" in lib or lib.startswith("dnn_vm"):
        return "GE"
    return "UNKNOWN"


# -- protobuf text format --------------------------------------------------------------------------

_TOKEN = re.compile(
    r'\s*(?:#[^\n]*\n\s*)*(?:("(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')|([{}\[\]:<>,;])|([^\s{}\[\]:<>,;"\']+))'
)
_ESCAPES = {
    "n": b"\n",
    "t": b"\t",
    "r": b"\r",
    '"': b'"',
    "'": b"'",
    "\\": b"\\",
    "a": b"\a",
    "b": b"\b",
    "f": b"\f",
    "v": b"\v",
    "?": b"?",
}


def _unquote(literal: str) -> str:
    """A text-format string literal (C escapes, octal bytes of UTF-8) as text."""
    body, out, i = literal[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        octal = re.match(r"[0-7]{1,3}", body[i + 1 :])
        hexa = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :]) if nxt == "x" else None
        if octal:
            out.append(int(octal.group(0), 8) & 0xFF)
            i += 1 + len(octal.group(0))
        elif hexa:
            digits = hexa.group(0)
            out.append(int(digits, 16))
            i += 2 + len(digits)
        else:
            out += _ESCAPES.get(nxt, nxt.encode("utf-8"))
            i += 2
    return out.decode("utf-8", errors="replace")


def _tokens(text: str, source: str) -> Iterator[tuple[str, str, int]]:
    """(kind, text, line) with kind 'str', 'punct' or 'word'; lines counted incrementally (linear time)."""
    pos, line, counted = 0, 1, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            rest = text[pos:]
            if re.fullmatch(r"\s*(#[^\n]*\n?\s*)*", rest):
                return
            line += text.count("\n", counted, pos)
            raise GeDumpError(f"{source}: line {line}: cannot read {rest.strip()[:40]!r} as protobuf text format")
        start = match.start(match.lastindex or 0)
        line += text.count("\n", counted, start)
        counted = start
        if match.group(1) is not None:
            yield "str", match.group(1), line
        elif match.group(2) is not None:
            yield "punct", match.group(2), line
        else:
            yield "word", match.group(3), line
        pos = match.end()


def parse_text_proto(text: str, source: str = "<text>") -> dict[str, list[Any]]:
    """Protobuf text format as nested dicts: field name -> list of values (scalars or dicts)."""
    stack: list[dict[str, list[Any]]] = [{}]
    pending: str | None = None
    tokens = list(_tokens(text, source))
    i = 0
    while i < len(tokens):
        kind, value, line = tokens[i]
        if kind == "punct" and value in "}>":
            if len(stack) == 1:
                raise GeDumpError(f"{source}: line {line}: unbalanced {value!r}")
            stack.pop()
            i += 1
            continue
        if kind == "punct" and value in ",;":
            i += 1
            continue
        if kind != "word":
            raise GeDumpError(f"{source}: line {line}: expected a field name, got {value!r}")
        pending, i = value, i + 1
        if i < len(tokens) and tokens[i][1] == ":":
            i += 1
        if i >= len(tokens):
            raise GeDumpError(f"{source}: line {line}: field {pending!r} has no value")
        kind, value, line = tokens[i]
        if kind == "punct" and value in "{<":
            child: dict[str, list[Any]] = {}
            stack[-1].setdefault(pending, []).append(child)
            stack.append(child)
            i += 1
        elif kind == "punct" and value == "[":
            i += 1
            while i < len(tokens) and tokens[i][1] != "]":
                if tokens[i][1] != ",":
                    stack[-1].setdefault(pending, []).append(_scalar(tokens[i]))
                i += 1
            i += 1
        elif kind == "punct":
            raise GeDumpError(f"{source}: line {line}: field {pending!r} has no value before {value!r}")
        else:
            scalar = _scalar(tokens[i])
            i += 1
            while kind == "str" and i < len(tokens) and tokens[i][0] == "str":  # adjacent literals concatenate
                scalar = f"{scalar}{_unquote(tokens[i][1])}"
                i += 1
            stack[-1].setdefault(pending, []).append(scalar)
    if len(stack) != 1:
        raise GeDumpError(f"{source}: ends inside a message ({len(stack) - 1} '{{' not closed)")
    return stack[0]


def _scalar(token: tuple[str, str, int]) -> str | bool | int | float:
    kind, value, _ = token
    if kind == "str":
        return _unquote(value)
    if value in ("true", "True"):
        return True
    if value in ("false", "False"):
        return False
    try:
        return int(value, 0)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value  # an enum identifier such as DT_FLOAT


# -- ModelDef -> GeGraph ---------------------------------------------------------------------------


def _first(message: dict[str, list[Any]], name: str, default: object = None) -> Any:  # noqa: ANN401 - a parsed text-proto field: a scalar or a nested message, as its schema says
    values = message.get(name) or []
    return values[0] if values else default


def _dtype_name(value: object) -> str:
    if isinstance(value, int):
        value = _DTYPE_NUMBERS.get(value, f"DT_{value}")
    return _DTYPES.get(str(value), str(value).lower())


def _attrs(op: dict[str, list[Any]]) -> dict[str, dict[str, list[Any]]]:
    """map<string, AttrDef> entries as key -> AttrDef dict."""
    return {str(_first(e, "key", "")): (_first(e, "value") or {}) for e in op.get("attr", []) if isinstance(e, dict)}


def _op(op: dict[str, list[Any]]) -> GeOp:
    attrs = _attrs(op)
    lib = _first(attrs.get(KERNEL_LIB_ATTR, {}), "s", "")
    originals_list = _first(attrs.get(ORIGINAL_NAMES_ATTR, {}), "list") or {}
    originals = [str(s) for s in originals_list.get("s", [])] if isinstance(originals_list, dict) else []
    return GeOp(
        name=str(_first(op, "name", "")),
        op_type=str(_first(op, "type", "")),
        kernel_lib=str(lib),
        input_dtypes=[_dtype_name(_first(d, "dtype", "DT_UNDEFINED")) for d in op.get("input_desc", [])],
        output_dtypes=[_dtype_name(_first(d, "dtype", "DT_UNDEFINED")) for d in op.get("output_desc", [])],
        original_names=originals,
    )


def read_ge_dump(path: str) -> list[GeGraph]:
    """The graphs of one ``ge_proto_*.txt`` file (a ModelDef; a bare GraphDef is read too)."""
    size = os.path.getsize(path)
    if size > MAX_DUMP_BYTES:
        raise GeDumpError(
            f"{path}: {size / 1e6:.0f} MB is too large to read here (limit "
            f"{MAX_DUMP_BYTES / 1e6:.0f} MB); set DUMP_GE_GRAPH=2 so GE leaves the weights out"
        )
    with open(path, encoding="utf-8", errors="replace") as handle:
        message = parse_text_proto(handle.read(), source=path)
    graphs = message.get("graph", [message])
    result = []
    for graph in graphs:
        if not isinstance(graph, dict):
            raise GeDumpError(f"{path}: 'graph' is not a message")
        ops = [_op(op) for op in graph.get("op", []) if isinstance(op, dict)]
        result.append(GeGraph(name=str(_first(graph, "name", "")), source=path, ops=ops))
    return result


def dump_directory(environ: dict[str, str] | None = None) -> str | None:
    """Where GE writes its graph dumps, or None when ``DUMP_GE_GRAPH`` does not switch them on."""
    env = os.environ if environ is None else environ
    if str(env.get(ENV_SWITCH, "")).strip() not in ("1", "2", "3"):
        return None
    return os.path.abspath(env.get(ENV_PATH) or os.getcwd())


def build_dumps(directory: str, since: float = 0.0) -> list[str]:
    """The compiled-graph dump files (``ge_proto_*_Build.txt``) modified at or after ``since``, oldest first."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(directory), "ge_proto_*.txt")):
        if path.endswith(BUILD_STAGES):
            try:
                mtime = os.path.getmtime(path)
            except OSError:
                continue
            if mtime >= since:
                found.append((mtime, path))
    return [path for _, path in sorted(found)]


def actual_by_tf_name(graphs: list[GeGraph]) -> dict[str, GeOp]:
    """TF op name -> the GE op that ran it (by its own name or its original names after fusion)."""
    index: dict[str, GeOp] = {}
    for graph in graphs:
        for op in graph.ops:
            for name in op.original_names or [op.name]:
                index.setdefault(name, op)
    return index


def compare(plan: Plan, graphs: list[GeGraph]) -> list[dict[str, Any]]:
    """Per planned op found in the dumps: predicted vs actual engine and output dtypes.

    Rows: ``{"n": op, "pe": predicted engine, "ae": actual engine, "pd": predicted output dtypes,
    "ad": actual output dtypes, "ge": GE op name, "same": bool}``; ops the plan puts on the host are
    expected to be absent from GE's graphs and are left out, as are GE-only ops and GE's own plumbing
    (Data, NetOutput: engine ``GE``).
    """
    actual = actual_by_tf_name(graphs)
    rows = []
    for name, decision in plan.ops.items():
        op = actual.get(name)
        if op is None or op.engine == "GE":  # GE's own plumbing (Data, NetOutput): nothing was decided
            continue
        predicted_dtypes = list(decision.output_dtypes) or [decision.dtype_after]
        actual_dtypes = op.output_dtypes
        same_dtypes = (
            not actual_dtypes or actual_dtypes[: len(predicted_dtypes)] == predicted_dtypes[: len(actual_dtypes)]
        )
        rows.append(
            {
                "n": name,
                "pe": decision.engine,
                "ae": op.engine,
                "pd": predicted_dtypes,
                "ad": actual_dtypes,
                "ge": op.name,
                "same": decision.engine == op.engine and same_dtypes,
            }
        )
    return rows


def missing_from_dumps(plan: Plan, graphs: list[GeGraph]) -> list[str]:
    """Ops the plan puts on the device that no GE op accounts for (pruned, or named differently)."""
    actual = actual_by_tf_name(graphs)
    return [n for n, d in plan.ops.items() if d.engine != "HOST" and n not in actual]
