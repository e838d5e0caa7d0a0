"""Drift inside a traced function: a float32 shadow of its body, computed in the same call.

A session's drift (:mod:`.reference`) reruns the step in a second, unrewritten session from the same
weights. A traced function cannot be rerun: a Keras train function takes the next batch from its
iterator and updates the variables, so a second run would see other data and step the model twice.
Instead, when drift is asked for, the rewritten FunctionDef (:mod:`.npu_jupyter._runtime.functions.rewrite`) also gets a
*float32 shadow* of each pure op of the body whose inputs differ from the float32 run (an input the
plan rounds, or a producer with a shadow): the same op type and attributes, named
``<op>/_npu_emu_ref``, whose data inputs are the shadows of its producers, or the producer's own
tensor when the producer has no shadow. Shadows are never rounded, so the shadow chain computes what
the body computes without the plan's storage rounding, from the same weights and the same batch, in
the same call; no state is touched twice. A pure op none of whose inputs differ computes its own
reference exactly, so it gets no shadow and a drift of zero (under ``must_keep_origin_dtype`` nothing
is shadowed at all).

Not shadowed (their own tensors feed the shadows): the function's arguments; stateful ops (variable
reads and writes, ``ResourceApply*``, iterators and ``IteratorGetNext``, py funcs, random ops with
state); ``Optional*`` ops; ops with a resource or variant input or output; constants; calls, loops and
branches (``PartitionedCall``, ``StatefulPartitionedCall``, ``While``, ``If`` ...) and any op whose
type is a library function. Ops the runtime prunes (nothing the call returns or runs reads them) are
neither shadowed nor compared: they never run. Control inputs are dropped (data edges order the
shadows). The casts the emulation inserts and the observer nodes are not ops of the original body, so
they get no shadow.

Per float output of the body (not constants; shadowed ops, and unshadowed ones whose output is
rounded), small in-graph reductions compare the stored tensor (the rounded one where the plan rounds
it) with its reference (the shadow, or the op's unrounded output) in float64 and pack nine sums per
tensor (leaving out the inf/NaN both hold only on calls where some sum is not finite,
:meth:`_Builder.rows`); one stateful ``PyFunc`` (a control return, so the runtime runs it and with it the shadows)
hands that ``[n, 9]`` matrix to Python, which finishes :func:`npu_jupyter._runtime.observe.compare.metrics`'s
five numbers. The report keeps, per op, the worst output over all calls (and loop iterations).

Limits: a call, loop or branch is a source: downstream of it the reference starts again from what the
(emulated) callee returned, so drift does not accumulate across function boundaries; the callee's own
ops get their own shadows and rows (each body is rewritten), named ``<function>/<op>`` outside the
function the report plans. Ops behind an unshadowed op (a resource, a variant, an iterator) restart
from its emulated value the same way. The shadows and the float64 comparisons cost several times the
arithmetic of the call when the plan lowers precision (``bench/function_observe_bench.py``).
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from npu_jupyter._runtime.functions.observe_nodes import _callees, _control_return, _enum
from npu_jupyter._runtime.observe.compare import cosine, relative_rmse
from npu_jupyter._runtime.observe.observers import keep_worse
from npu_jupyter._runtime.value_ops import SAME_VALUES

if TYPE_CHECKING:
    from npu_jupyter._runtime.functions.rewrite import StoredRefs
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._tf_types import FunctionDef, Graph, NodeDef, Operation

REF_SUFFIX = "/_npu_emu_ref"
#: Said in a function report with drift: what its reference is, and where it starts again.
DRIFT_NOTE = (
    "drift inside functions: each op is compared, in the same call, with a float32 shadow of the body "
    "(same weights, same batch, no rounding); calls, loops, branches, variable reads and iterators are "
    "sources, so the reference starts again from their emulated values. The shadow runs inside each call, "
    "so each call's wall-clock time includes it; the per-op times leave it out."
)
REFERENCE_SCOPE = "npu_emu_ref"
_EPS = 1e-7  # the relative-error floor of compare.metrics
#: Op types never shadowed although TensorFlow does not mark them stateful.
_NOT_SHADOWED = (
    frozenset({"Placeholder", "Const", "NoOp", "ControlTrigger", "DebugNumericSummaryV2"})
    | frozenset({"OptionalGetValue", "OptionalHasValue", "OptionalFromValue", "OptionalNone", "PartitionedCall"})
    | frozenset({"StatefulPartitionedCall", "Enter", "Exit", "NextIteration", "LoopCond", "Merge", "Switch"})
)
_SOURCE_DTYPES = frozenset({"resource", "variant"})
_SKIPPED_TYPES = frozenset({"Placeholder", "VarHandleOp", "Const"})
#: The float64 sums each compared tensor hands over, in this order.
_SUMS = ("max_abs", "max_rel", "sum_diff", "sum_abs_ref", "sum_sq_diff", "dot", "norm2_a", "norm2_b", "size")


class DriftLog:
    """The drift rows the bodies' callbacks handed over during the calls under way."""

    def __init__(self) -> None:
        self._rows: list[tuple[str, list[tuple[str, int]], np.ndarray]] = []
        self._lock = threading.Lock()

    def add(self, function: str, watched: list[tuple[str, int]], sums: np.ndarray) -> None:
        """One execution of one body: the sums of each watched (op, output slot)."""
        with self._lock:
            self._rows.append((function, watched, sums))

    def drain(self) -> list[tuple[str, list[tuple[str, int]], np.ndarray]]:
        """What was handed over since the last drain."""
        with self._lock:
            rows, self._rows = self._rows, []
            return rows


class FunctionReference:
    """The float32 shadow and the comparison nodes of one function body."""

    def __init__(
        self, name: str, original: FunctionDef, graph: Graph, rounded: set[tuple[str, str, int]], log: DriftLog
    ) -> None:
        self.name = name
        self.log = log
        self.watched: list[tuple[str, int]] = []  # compared outputs, in the order of the handed rows
        self.exact: list[tuple[str, int]] = []  # outputs identical to their reference by construction
        self.aliases: list[tuple[tuple[str, int], tuple[str, int]]] = []  # (view, the compared tensor it shows)
        self.shadowed: list[str] = []
        self.tokens: list[str] = []
        self._callbacks: list[Callable[..., np.bool_]] = []  # the py-func registry keeps only weak references
        self._original = original
        self._graph = graph
        self._rounded = rounded
        self._alias_rows: list[int] = []  # the compared row each alias shows

    def add_nodes(self, fdef: FunctionDef, refs: StoredRefs) -> None:
        """Add the shadows, the comparisons and the callback to ``fdef`` (a rewritten FunctionDef)."""
        for call in _callees(fdef, refs):  # a callee's reference runs only if its call is a control return too
            _control_return(fdef, call)
        nodes = [n for n in self._original.node_def if refs.has_node(n.name)]
        shadowed = self._needing_shadows({n.name: n for n in nodes})
        for node in nodes:
            if node.name in shadowed:
                copy = fdef.node_def.add()
                copy.CopyFrom(node)
                copy.name = node.name + REF_SUFFIX
                del copy.input[:]
                copy.input.extend(_shadow_ref(ref, shadowed) for ref in node.input if not ref.startswith("^"))
        self.shadowed = [n.name for n in nodes if n.name in shadowed]
        pairs: list[tuple[str, str, str]] = []  # (stored, reference, dtype)
        views: dict[tuple[str, int], tuple[tuple[str, int], tuple[str, str, str]]] = {}
        for node in nodes:
            op = _op(self._graph, node.name)
            if op is None or op.type in _SKIPPED_TYPES:
                continue
            outputs = op.outputs[:3] if op.type.startswith("FusedBatchNorm") else op.outputs
            for slot, tensor in enumerate(outputs):
                own, rounded = node.name in shadowed, (node.name, "output", slot) in self._rounded
                if not tensor.dtype.base_dtype.is_floating:
                    continue
                if not (own or rounded):  # identical to its reference by construction (or a source)
                    if _shadowable(node, op):
                        self.exact.append((node.name, slot))
                    continue
                stored, original = refs.ref(node.name, "output", slot), refs.original(node.name, slot)
                reference = _shadow_ref(original, shadowed) if own else original
                pair = (str(stored), reference, tensor.dtype.base_dtype.name)
                source = _viewed(op, slot) if own and not rounded else None
                if source is not None and (node.name, "input", source) not in self._rounded:
                    viewed = op.inputs[source]
                    views[(node.name, slot)] = ((viewed.op.name, viewed.value_index), pair)
                    continue
                pairs.append(pair)
                self.watched.append((node.name, slot))
        pairs += self._alias_views(views)
        index = {w: i for i, w in enumerate(self.watched)}
        self._alias_rows = [index[target] for _, target in self.aliases]
        builder = _Builder(fdef)
        rows = builder.rows(pairs)
        inputs = [rows] if rows else []
        token = self._register()
        f64 = [_enum("float64")] if pairs else []
        call = builder.add("drift", "PyFunc", inputs, token=token, Tin=f64, Tout=[_enum("bool")])
        _control_return(fdef, call)

    def _alias_views(
        self, views: dict[tuple[str, int], tuple[tuple[str, int], tuple[str, str, str]]]
    ) -> list[tuple[str, str, str]]:
        """Views (``Identity``, ``Reshape`` ...) of a compared tensor take its row; the others are compared.

        A view holds the same elements as its input, so its drift is its input's: comparing it again
        would only repeat float64 passes (Keras bodies are full of ``Identity`` nodes).
        """
        compared = set(self.watched)
        pairs: list[tuple[str, str, str]] = []
        for key, (target, pair) in views.items():
            seen = {key}
            while target in views and target not in seen:  # a view of a view
                seen.add(target)
                target = views[target][0]
            if target in compared:
                self.aliases.append((key, target))
            else:
                pairs.append(pair)
                self.watched.append(key)
        return pairs

    def _needing_shadows(self, nodes: dict[str, NodeDef]) -> set[str]:
        """The pure ops whose inputs differ from the float32 run: a rounded input, or a shadowed producer.

        An op none of whose inputs differ computes exactly its own reference, so it needs no shadow.
        """
        shadowable = {name for name, node in nodes.items() if _shadowable(node, _op(self._graph, name))}
        order = [op for op in self._graph.get_operations() if op.name in shadowable]  # creation order
        shadowed: set[str] = set()
        changed = True
        while changed:  # creation order is topological; the loop only guards against an odd body
            changed = False
            for op in order:
                if op.name not in shadowed and self._differs(op, shadowed):
                    shadowed.add(op.name)
                    changed = True
        return shadowed

    def _differs(self, op: Operation, shadowed: set[str]) -> bool:
        rounded = self._rounded
        return any(
            (op.name, "input", i) in rounded or (t.op.name, "output", t.value_index) in rounded or t.op.name in shadowed
            for i, t in enumerate(op.inputs)
        )

    def _register(self) -> str:
        from tensorflow.python.ops import script_ops

        callback = self.record  # one bound method object: kept here, weakly referenced by the registry
        self._callbacks.append(callback)
        token = str(script_ops._py_funcs.insert(callback))
        self.tokens.append(token)
        return token

    def record(self, *sums: Any) -> np.bool_:
        """Each time the body runs: hand its sums (and its outputs exact by construction) to the log."""
        rows = np.array(sums[0], dtype=np.float64, copy=True) if sums else np.zeros((0, len(_SUMS)))
        exact = np.zeros((len(self.exact), len(_SUMS)))
        exact[:, _SUMS.index("size")] = 1.0  # one element, no difference: drift 0, cosine 1
        viewed = rows[self._alias_rows].reshape(-1, len(_SUMS))
        watched = self.watched + self.exact + [view for view, _ in self.aliases]
        self.log.add(self.name, watched, np.concatenate([rows, exact, viewed]))
        return np.bool_(True)

    def release(self) -> None:
        """Drop the callback from TensorFlow's registry (the emulation ended)."""
        from tensorflow.python.ops import script_ops

        for token in self.tokens:
            script_ops._py_funcs.remove(token)
        self.tokens, self._callbacks = [], []


def merge_drift(
    report: RunReport,
    rows: list[tuple[str, list[tuple[str, int]], np.ndarray]],
    names: Callable[[str, str], str | None],
    step: int,
) -> None:
    """Fold call ``step``'s sums into ``report.drift``: per op, the worst output of any call.

    Worst as a session step's drift is (:func:`~npu_jupyter._runtime.observe.observers.keep_worse`);
    ``names(function, op)`` is the op's name in the report; rows of functions it returns None for
    belong to another report.
    """
    for function, watched, sums in rows:
        for (op, _slot), row in zip(watched, np.asarray(sums).reshape(-1, len(_SUMS))):
            name = names(function, op)
            if name is not None:
                keep_worse(report.drift, name, {**finish(row), "step": step})


def finish(sums: Iterable[float]) -> dict[str, float]:
    """The report's drift row (``compare.metrics``'s definitions) from one tensor's nine sums."""
    values = dict(zip(_SUMS, (float(v) for v in sums)))
    if values["size"] == 0:
        zero = {"max_abs": 0.0, "max_rel": 0.0, "cos": 1.0, "rmse": 0.0, "accumulated_rel": 0.0, "rel_rmse": 0.0}
        return {**zero, "ref_rms": 0.0, "size": 0.0}
    na, nb = math.sqrt(values["norm2_a"]), math.sqrt(values["norm2_b"])
    identical = values["max_abs"] == 0 and math.isfinite(values["norm2_a"])  # no element differs
    rmse = math.sqrt(values["sum_sq_diff"] / values["size"])
    return {
        "max_abs": values["max_abs"],
        "max_rel": values["max_rel"],
        "cos": cosine(values["dot"], na, nb, identical),
        "rmse": rmse,
        "accumulated_rel": values["sum_diff"] / max(values["sum_abs_ref"], _EPS),
        "rel_rmse": relative_rmse(rmse, values["norm2_b"] / values["size"]),
        "ref_rms": math.sqrt(values["norm2_b"] / values["size"]),
        "size": values["size"],
    }


def _shadowable(node: NodeDef, op: Operation | None) -> bool:
    """Whether a body node gets a float32 shadow: a pure op of tensors, not a call."""
    from tensorflow.python.framework import op_def_registry

    if op is None or node.op in _NOT_SHADOWED or not op.outputs or REFERENCE_SCOPE in node.name:
        return False
    definition = op_def_registry.get(node.op)
    if definition is None or definition.is_stateful:  # None: the type is a library function (a call)
        return False
    if any(value.HasField("func") or len(value.list.func) for value in node.attr.values()):
        return False  # runs a function (a loop body, a branch, a map function)
    tensors = list(op.inputs) + list(op.outputs)
    return not any(t.dtype.base_dtype.name in _SOURCE_DTYPES for t in tensors)


def _viewed(op: Operation, slot: int) -> int | None:
    """The input whose elements output ``slot`` of ``op`` holds unchanged, or None."""
    if op.type == "IdentityN":
        return slot
    return 0 if op.type in SAME_VALUES and slot == 0 else None


def _shadow_ref(ref: str, shadowed: set[str]) -> str:
    """A FunctionDef input reference redirected to the producer's shadow, when it has one."""
    node, sep, rest = ref.partition(":")
    return f"{node}{REF_SUFFIX}{sep}{rest}" if sep and node in shadowed else ref


def _op(graph: Graph, name: str) -> Operation | None:
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None


class _Builder:
    """Adds the comparison nodes, in FunctionDef spelling, under :data:`REFERENCE_SCOPE`."""

    def __init__(self, fdef: FunctionDef) -> None:
        self.fdef = fdef
        self.count = 0
        self._consts: dict[str, str] = {}

    def add(self, what: str, op: str, inputs: list[str], **attrs: Any) -> str:
        self.count += 1
        node = self.fdef.node_def.add(name=f"{REFERENCE_SCOPE}/{self.count}/{what}", op=op)
        node.input.extend(inputs)
        for key, value in attrs.items():
            if isinstance(value, list):
                node.attr[key].list.type.extend(value)
            elif isinstance(value, str):
                node.attr[key].s = value.encode()
            elif key in ("T", "SrcT", "DstT", "Tidx", "Tshape", "out_type", "dtype"):
                node.attr[key].type = value
            elif isinstance(value, bool):
                node.attr[key].b = value
            elif isinstance(value, int):
                node.attr[key].i = value
            else:
                node.attr[key].tensor.CopyFrom(value)
        return str(node.name)

    def const(self, value: np.ndarray) -> str:
        import tensorflow as tf

        key = f"{value.dtype}:{value.tolist()}"
        if key not in self._consts:
            name = self.add(
                "const", "Const", [], dtype=_enum(str(value.dtype)), value=tf.compat.v1.make_tensor_proto(value)
            )
            self._consts[key] = f"{name}:output:0"
        return self._consts[key]

    def _unary(self, op: str, x: str, **attrs: Any) -> str:
        return f"{self.add(op.lower(), op, [x], **attrs)}:y:0"

    def _binary(self, op: str, x: str, y: str) -> str:
        return f"{self.add(op.lower(), op, [x, y], T=_enum('float64'))}:z:0"

    def _reduce(self, op: str, x: str) -> str:
        axis = self.const(np.array(0, np.int32))
        name = self.add(op.lower(), op, [x, axis], T=_enum("float64"), Tidx=_enum("int32"), keep_dims=False)
        return f"{name}:output:0"

    def _flat64(self, ref: str, dtype: str) -> str:
        f64 = _enum("float64")
        cast = f"{self.add('cast', 'Cast', [ref], SrcT=_enum(dtype), DstT=f64, Truncate=False)}:y:0"
        shape = self.const(np.array([-1], np.int32))
        return f"{self.add('flat', 'Reshape', [cast, shape], T=f64, Tshape=_enum('int32'))}:output:0"

    def rows(self, pairs: list[tuple[str, str, str]]) -> str:
        """The ``[n, 9]`` float64 sums of :data:`_SUMS`, one row per (stored, reference, dtype); "" for none.

        Leaving out the inf/NaN both tensors hold (:meth:`_compared`) takes a dozen passes over each
        tensor, and it changes nothing unless a reference value is inf/NaN: then that tensor's sum of
        ``|reference|`` is not finite either (a sum that overflows takes the masked side too). So the sums
        are computed as they are; only when one of them is not finite do the masked sums run, behind a
        ``Switch`` whose other side is dead (not run) on the calls where all are finite, and a ``Merge``
        takes whichever side ran. With every unmasked sum finite no element is masked, so both sides give
        the same numbers, bit for bit.
        """
        if not pairs:
            return ""
        f64 = _enum("float64")
        flats = [(self._flat64(stored, dtype), self._flat64(reference, dtype)) for stored, reference, dtype in pairs]
        plain = self._pack("rows", [self._sums(a, b, self._size(a)) for a, b in flats])
        finite = f"{self.add('finite', 'IsFinite', [plain], T=f64)}:y:0"
        axes = self.const(np.array([0, 1], np.int32))
        every = f"{self.add('all_finite', 'All', [finite, axes], Tidx=_enum('int32'), keep_dims=False)}:output:0"
        masked = []
        for a, b in flats:
            a, b = (f"{self.add('switch', 'Switch', [x, every], T=f64)}:output_false:0" for x in (a, b))
            a, b, kept = self._compared(a, b)
            masked.append(
                self._sums(
                    a, b, self._reduce("Sum", self._unary("Cast", kept, SrcT=_enum("bool"), DstT=f64, Truncate=False))
                )
            )
        fast = f"{self.add('switch', 'Switch', [plain, every], T=f64)}:output_true:0"
        merged = self.add("rows", "Merge", [fast, self._pack("masked_rows", masked)], T=f64, N=2)
        return f"{merged}:output:0"

    def _sums(self, a: str, b: str, count: str) -> str:
        """The nine sums comparing flat float64 ``a`` (stored) with ``b`` (reference); ``count``: elements kept."""
        f64 = _enum("float64")
        diff = self._unary("Abs", self._binary("Sub", a, b), T=f64)
        abs_b = self._unary("Abs", b, T=f64)
        rel = self._binary("RealDiv", diff, self._binary("Maximum", abs_b, self.const(np.array(_EPS, np.float64))))
        values = [
            self._reduce("Max", diff),
            self._reduce("Max", rel),
            self._reduce("Sum", diff),
            self._reduce("Sum", abs_b),
            self._reduce("Sum", self._binary("Mul", diff, diff)),
            self._reduce("Sum", self._binary("Mul", a, b)),
            self._reduce("Sum", self._binary("Mul", a, a)),
            self._reduce("Sum", self._binary("Mul", b, b)),
            count,
        ]
        return f"{self.add('sums', 'Pack', values, T=f64, N=len(values), axis=0)}:output:0"

    def _size(self, a: str) -> str:
        """The element count of flat ``a`` as a float64 scalar."""
        size = f"{self.add('size', 'Size', [a], T=_enum('float64'), out_type=_enum('int64'))}:output:0"
        return self._unary("Cast", size, SrcT=_enum("int64"), DstT=_enum("float64"), Truncate=False)

    def _pack(self, what: str, rows: list[str]) -> str:
        return f"{self.add(what, 'Pack', rows, T=_enum('float64'), N=len(rows), axis=0)}:output:0"

    def _compared(self, a: str, b: str) -> tuple[str, str, str]:
        """``a`` and ``b`` with zeros where both hold the same inf or NaN, and where they do not (the kept).

        The same non-finite value in both is what the float32 program computes by design (a NaN a
        ``Select`` drops later): no difference, left out as ``compare.metrics`` leaves it out.
        """
        f64, flag = _enum("float64"), "incompatible_shape_error"
        not_finite = self._unary("LogicalNot", self._unary("IsFinite", b, T=f64))
        both_nan = self._logical("LogicalAnd", self._unary("IsNan", a, T=f64), self._unary("IsNan", b, T=f64))
        equal = f"{self.add('equal', 'Equal', [a, b], T=f64, **{flag: True})}:z:0"
        same = self._logical("LogicalAnd", not_finite, self._logical("LogicalOr", equal, both_nan))
        zero = self.const(np.array(0.0, np.float64))
        a, b = (f"{self.add('select', 'SelectV2', [same, zero, x], T=f64)}:output:0" for x in (a, b))
        return a, b, self._unary("LogicalNot", same)

    def _logical(self, op: str, x: str, y: str) -> str:
        return f"{self.add(op.lower(), op, [x, y])}:z:0"


__all__ = ["DRIFT_NOTE", "REF_SUFFIX", "DriftLog", "FunctionReference", "finish", "merge_drift"]
