"""Observer nodes inside a traced function: the values the device stores, handed to Python per call.

A traced function's signature cannot change (its callers expect the outputs they traced), so the
emulator cannot fetch extra tensors from it the way a session run does. Instead the rewritten
FunctionDef (:mod:`.function_rewrite`) gets one stateful ``PyFunc`` node whose inputs are the observed
tensors, and whose Python callback (registered in TensorFlow's py-func registry under a token, as
``tf.numpy_function`` does) records them. TensorFlow's function runtime prunes every node that neither
a return value nor a control return reaches (checked on TF 2.21: without the control return the
callback never runs), so the node is listed in ``control_ret`` / ``signature.control_output``.

What is observed is what the device would store: the rounded tensor where the plan rounds it (the
output of the ``Cast`` round trip), the original tensor elsewhere.

* **Finite flags** (the plan lowers precision, overflow detection off): per float output one
  ``All(IsFinite(Reshape(x, [-1])))``, packed into one bool vector, so only a few bytes cross into
  Python per call; the callback notes which outputs went inf/NaN.
* **Checked values** (``enable_dump_debug``): every float output is handed over and checked in Python;
  the non-finite ones are kept for the overflow dump.
* **Dumped values** (``enable_dump``): the tensors ``dump_mode`` / ``dump_layer`` select, kept only on
  the calls ``dump_step`` selects.

Nothing is added when none of the three is wanted, so a float32-preserving cell runs the original
function. A function compiled with XLA (``jit_compile=True``) is not observed: XLA cannot compile a
``PyFunc``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

OBSERVE_SCOPE = "npu_emu_observe"
#: Node attributes naming the functions a call or control-flow node runs.
_FUNCTION_ATTRS = ("f", "body", "cond", "then_branch", "else_branch", "branches")
_SKIPPED_TYPES = frozenset({"Placeholder", "VarHandleOp"})  # arguments and variable handles: state
_UNOBSERVABLE = frozenset({"resource", "variant", "string"})


@dataclass(frozen=True)
class Watched:
    """One observed tensor of a function: the op's input or output slot and its dtypes."""

    op: str
    op_type: str
    kind: str  # "output" | "input"
    slot: int
    dtype: str  # the graph's dtype of the tensor
    decided_dtype: str  # the plan's dtype for the slot ("" when the plan has none)
    rounded: bool  # the rewrite rounds this tensor through its half dtype


@dataclass
class Observation:
    """What one execution of one function's body handed over."""

    function: str
    bad: list[Watched] = field(default_factory=list)  # non-finite outputs, topological order
    values: dict[Watched, np.ndarray] = field(default_factory=dict)  # kept copies (dump, overflow)


class CallLog:
    """Observations of the eager calls under way, innermost last (a callback may call eagerly)."""

    def __init__(self) -> None:
        self._calls: list[tuple[bool, list[Observation]]] = []
        self._lock = threading.Lock()

    def begin(self, keep_values: bool) -> None:
        """A top-level call starts; ``keep_values``: copy the dumped tensors (``dump_step`` selects it)."""
        with self._lock:
            self._calls.append((keep_values, []))

    def end(self) -> list[Observation]:
        """The call ended: its observations, in the order the bodies finished."""
        with self._lock:
            return self._calls.pop()[1] if self._calls else []

    def keeps_values(self) -> bool:
        with self._lock:
            return bool(self._calls) and self._calls[-1][0]

    def add(self, observation: Observation) -> None:
        with self._lock:
            if self._calls:
                self._calls[-1][1].append(observation)


class FunctionObserver:
    """The observer node of one function: what it watches, and the callback that records it."""

    def __init__(
        self,
        name: str,
        plan: Any,
        graph: Any,
        rounded: set[tuple[str, str, int]],
        settings: Any,
        flags: bool,
        log: CallLog,
    ) -> None:
        self.name = name
        self.plan = plan
        self.log = log
        self.flagged: list[Watched] = []
        self.checked: list[Watched] = []
        self.dumped: list[Watched] = []
        outputs = _float_outputs(plan, graph, rounded)
        if settings.enable_dump_debug:
            self.checked = outputs
        elif flags:
            self.flagged = outputs
        if settings.enable_dump:
            self.dumped = _dump_tensors(plan, graph, rounded, settings)
        self.values = list(dict.fromkeys(self.checked + self.dumped))
        self.callees: dict[str, list[str]] = {}
        self.token: str | None = None
        self._callback: Any = None
        self._checked = set(self.checked)
        self._dumped = set(self.dumped)

    @property
    def active(self) -> bool:
        """Whether the function needs an observer node at all."""
        return bool(self.flagged or self.values)

    # ------------------------------------------------------------------ the node

    def add_nodes(self, fdef: Any, refs: Any) -> None:
        """Add the flag nodes and the PyFunc to ``fdef`` (a rewritten FunctionDef) and run it as a control return."""
        from tensorflow.python.ops import script_ops

        self.callees = _callees(fdef)
        for call in self.callees:  # a callee's observer runs only if its call is a control return too
            if call not in fdef.control_ret:
                fdef.control_ret[call] = call
                fdef.signature.control_output.append(call)
        self.flagged = [w for w in self.flagged if refs.has_node(w.op)]
        self.values = [w for w in self.values if refs.has_node(w.op) and refs.ref(w.op, w.kind, w.slot)]
        if not self.active:
            return
        builder = _NodeBuilder(fdef)
        inputs: list[str] = []
        types: list[int] = []
        if self.flagged:
            inputs.append(builder.flags([cast_ref(refs, w) for w in self.flagged], [w.dtype for w in self.flagged]))
            types.append(_enum("bool"))
        for w in self.values:
            inputs.append(cast_ref(refs, w))
            types.append(_enum(w.dtype))
        self._callback = self.record  # the registry keeps only a weak reference
        self.token = script_ops._py_funcs.insert(self._callback)
        node = builder.add(
            "record", "PyFunc", inputs, token=self.token, Tin=("types", types), Tout=("types", [_enum("bool")])
        )
        fdef.control_ret[node.name] = node.name
        fdef.signature.control_output.append(node.name)

    def release(self) -> None:
        """Drop the callback from TensorFlow's registry (the emulation ended)."""
        if self.token is not None:
            from tensorflow.python.ops import script_ops

            script_ops._py_funcs.remove(self.token)
            self.token = None

    # ------------------------------------------------------------------ the callback

    def record(self, *arrays: Any) -> Any:
        """Called by the PyFunc node each time the body runs: note non-finite tensors, keep copies."""
        observation = Observation(self.name)
        rest = list(arrays)
        if self.flagged:
            flags = np.asarray(rest.pop(0)).reshape(-1)
            observation.bad = [w for w, ok in zip(self.flagged, flags) if not ok]
        keep = self.log.keeps_values()
        for w, value in zip(self.values, rest):
            bad = w in self._checked and _non_finite(value)
            if bad:
                observation.bad.append(w)
            if bad or (keep and w in self._dumped):
                observation.values[w] = np.array(value, copy=True)
        self.log.add(observation)
        return np.bool_(True)


def cast_ref(refs: Any, w: Watched) -> str:
    """The stored value's reference (never None here: unresolvable watches were dropped)."""
    return str(refs.ref(w.op, w.kind, w.slot))


def _float_outputs(plan: Any, graph: Any, rounded: set[tuple[str, str, int]]) -> list[Watched]:
    """Every float output of the planned ops, in the plan's (topological) order."""
    out: list[Watched] = []
    for name, decision in plan.ops.items():
        op = _op(graph, name)
        if op is None or op.type in _SKIPPED_TYPES:
            continue
        outputs = op.outputs[:3] if op.type.startswith("FusedBatchNorm") else op.outputs  # not reserve space
        for slot, tensor in enumerate(outputs):
            if tensor.dtype.base_dtype.is_floating:
                out.append(_watched(decision, op, "output", slot, tensor, rounded))
    return out


def _dump_tensors(plan: Any, graph: Any, rounded: set[tuple[str, str, int]], settings: Any) -> list[Watched]:
    """The tensors ``dump_mode`` and ``dump_layer`` select (any dtype TensorFlow can hand to Python)."""
    kinds = ("input", "output") if settings.dump_mode == "all" else (settings.dump_mode,)
    out: list[Watched] = []
    for name, decision in plan.ops.items():
        op = _op(graph, name)
        if op is None or op.type in _SKIPPED_TYPES or (settings.dump_layer and name not in settings.dump_layer):
            continue
        for kind in kinds:
            tensors = op.outputs if kind == "output" else op.inputs
            for slot, tensor in enumerate(tensors):
                if tensor.dtype.base_dtype.name not in _UNOBSERVABLE:
                    out.append(_watched(decision, op, kind, slot, tensor, rounded))
    return out


def _watched(decision: Any, op: Any, kind: str, slot: int, tensor: Any, rounded: set[tuple[str, str, int]]) -> Watched:
    decided = decision.output_dtypes if kind == "output" else decision.input_dtypes
    return Watched(
        op.name,
        op.type,
        kind,
        slot,
        tensor.dtype.base_dtype.name,
        decided[slot] if slot < len(decided) else "",
        (op.name, kind, slot) in rounded,
    )


def _op(graph: Any, name: str) -> Any:
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None


def _callees(fdef: Any) -> dict[str, list[str]]:
    """Node -> the functions it runs (a call, a loop body, a branch)."""
    out: dict[str, list[str]] = {}
    for node in fdef.node_def:
        names = []
        for attr in _FUNCTION_ATTRS:
            if attr not in node.attr:
                continue
            value = node.attr[attr]
            if value.HasField("func"):
                names.append(value.func.name)
            names.extend(f.name for f in value.list.func)
        if names:
            out[node.name] = names
    return out


def _non_finite(value: Any) -> bool:
    """Whether a float tensor holds inf/NaN (bfloat16 arrives as an ml_dtypes array numpy can test)."""
    array = np.asarray(value)
    if array.size == 0:
        return False
    try:
        return not bool(np.isfinite(array).all())
    except TypeError:  # a dtype numpy cannot test: nothing to report
        return False


def _enum(dtype: str) -> int:
    import tensorflow as tf

    return int(tf.as_dtype(dtype).as_datatype_enum)


class _NodeBuilder:
    """Adds nodes, in FunctionDef spelling, under :data:`OBSERVE_SCOPE`."""

    def __init__(self, fdef: Any) -> None:
        self.fdef = fdef
        self.count = 0

    def add(self, what: str, op: str, inputs: list[str], **attrs: Any) -> Any:
        self.count += 1
        node = self.fdef.node_def.add(name=f"{OBSERVE_SCOPE}/{self.count}/{what}", op=op)
        node.input.extend(inputs)
        for key, value in attrs.items():
            if isinstance(value, tuple) and value[0] == "type":
                node.attr[key].type = value[1]
            elif isinstance(value, tuple) and value[0] == "types":
                node.attr[key].list.type.extend(value[1])
            elif isinstance(value, bool):
                node.attr[key].b = value
            elif isinstance(value, int):
                node.attr[key].i = value
            elif isinstance(value, str):
                node.attr[key].s = value.encode()
            else:
                node.attr[key].tensor.CopyFrom(value)
        return node

    def const(self, what: str, value: np.ndarray) -> str:
        import tensorflow as tf

        node = self.add(
            what, "Const", [], dtype=("type", _enum(str(value.dtype))), value=tf.compat.v1.make_tensor_proto(value)
        )
        return f"{node.name}:output:0"

    def flags(self, refs: list[str], dtypes: list[str]) -> str:
        """One bool vector: whether each tensor is all finite (exact: ``All(IsFinite(x))``)."""
        minus_one = self.const("minus_one", np.array([-1], np.int32))
        zero = self.const("zero", np.array(0, np.int32))
        int32 = ("type", _enum("int32"))
        alls = []
        for ref, dtype in zip(refs, dtypes):
            flat = self.add("flat", "Reshape", [ref, minus_one], T=("type", _enum(dtype)), Tshape=int32)
            finite = self.add("finite", "IsFinite", [f"{flat.name}:output:0"], T=("type", _enum(dtype)))
            every = self.add("all", "All", [f"{finite.name}:y:0", zero], Tidx=int32, keep_dims=False)
            alls.append(f"{every.name}:output:0")
        packed = self.add("flags", "Pack", alls, T=("type", _enum("bool")), N=len(alls), axis=0)
        return f"{packed.name}:output:0"
