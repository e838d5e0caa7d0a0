"""Observer nodes inside a traced function: the values the device stores, handed to Python per call.

A traced function's signature cannot change (its callers expect the outputs they traced), so the
emulator cannot fetch extra tensors from it the way a session run does. Instead the rewritten
FunctionDef (:mod:`.npu_jupyter._runtime.functions.rewrite`) gets stateful ``PyFunc`` nodes whose Python callbacks
(registered in TensorFlow's py-func registry under a token, as ``tf.numpy_function`` does) record
what the body computed. TensorFlow's function runtime prunes every node that neither a return value
nor a control return reaches (checked on TF 2.21: without the control return the callback never
runs), so the nodes are listed in ``control_ret`` / ``signature.control_output``. For the same reason
only ops a call runs are watched (:meth:`~.npu_jupyter._runtime.functions.rewrite.StoredRefs.has_node`):
watching a pruned one (a gradient for a constant, which nothing reads) would make the call run it.

What is observed is what the device would store: the rounded tensor where the plan rounds it (the
output of the ``Cast`` round trip), the original tensor elsewhere. Per execution of a body:

* **Finite flags** (the plan lowers precision, or ``enable_dump_debug``): per float output of a
  non-constant op one ``DebugNumericSummaryV2`` node ("any inf/NaN"; scalars share one ``IsFinite``
  per dtype), packed into one bool vector
  for the *head* callback, which opens the body's :class:`Observation` and notes which outputs went
  inf/NaN. Only a few bytes cross into Python. Without ``enable_dump_debug`` the flags that can never
  be the first false one are left out (:mod:`.needed_flags`): the same finding, fewer nodes.
* **Values** (``enable_dump``: the tensors ``dump_mode`` / ``dump_layer`` select; ``enable_dump_debug``:
  every float output, for the overflow dump): each goes through a ``Switch`` whose predicate is "some
  flag is false, or this call is dumped" (a third callback answers the latter), into the *values*
  callback. On the other calls the switched tensors are dead, so the values callback does not run and
  no tensor crosses into Python; the control return is a ``ControlTrigger`` after it, live either way
  (a dead control return of an inlined body would make the caller's dependents dead).

Nothing is added when none of this is wanted, so a float32-preserving cell runs the original
function. XLA cannot compile a ``PyFunc``: the emulation turns ``jit_compile`` off in the functions it
rewrites (:func:`.npu_jupyter._runtime.functions.rewrite.xla_marked`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from npu_jupyter._runtime.observe.by_design import Provenance
from npu_jupyter._runtime.observe.node_defs import add_node

if TYPE_CHECKING:
    from npu_jupyter._plan.model import OpDecision, Plan
    from npu_jupyter._runtime.functions.rewrite import StoredRefs
    from npu_jupyter._runtime.observe.run_settings import RunSettings
    from npu_jupyter._tf_types import Graph, NodeDef, Operation, Tensor

    #: A FunctionDef protobuf being rewritten (its mutating API is protobuf's own, not typed here).
    FunctionDefProto = Any

OBSERVE_SCOPE = "npu_emu_observe"
#: Node attributes naming the functions a call or control-flow node runs.
_FUNCTION_ATTRS = ("f", "body", "cond", "then_branch", "else_branch", "branches")
_SKIPPED_TYPES = frozenset({"Placeholder", "VarHandleOp"})  # arguments and variable handles: state
_UNOBSERVABLE = frozenset({"resource", "variant", "string"})
_CURT_HEALTH = 2  # tensorflow/core/protobuf/debug_event.proto: TensorDebugMode.CURT_HEALTH


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
    id: int = 0


class CallLog:
    """Observations of the eager calls under way, innermost last (a callback may call eagerly)."""

    def __init__(self) -> None:
        self._calls: list[tuple[bool, list[Observation]]] = []
        self._by_id: dict[int, Observation] = {}
        self._next = 0
        self._lock = threading.Lock()

    def begin(self, keep_values: bool) -> None:
        """A top-level call starts; ``keep_values``: copy the dumped tensors (``dump_step`` selects it)."""
        with self._lock:
            self._calls.append((keep_values, []))

    def end(self) -> list[Observation]:
        """The call ended: its observations, in the order the bodies finished."""
        with self._lock:
            observations = self._calls.pop()[1] if self._calls else []
            for obs in observations:
                self._by_id.pop(obs.id, None)
            return observations

    def keeps_values(self) -> bool:
        """True when the call under way copies its dumped tensors (its step is dumped)."""
        with self._lock:
            return bool(self._calls) and self._calls[-1][0]

    def add(self, observation: Observation) -> int:
        """Record a body's observation; its id lets the values callback find it."""
        with self._lock:
            self._next += 1
            observation.id = self._next
            if self._calls:
                self._calls[-1][1].append(observation)
                self._by_id[observation.id] = observation
            return observation.id

    def find(self, observation_id: int) -> Observation | None:
        """The observation the values callback of a body belongs to (None once its call ended)."""
        with self._lock:
            return self._by_id.get(observation_id)


class FunctionObserver:
    """The observer node of one function: what it watches, and the callback that records it."""

    def __init__(
        self,
        name: str,
        plan: Plan,
        graph: Graph,
        rounded: set[tuple[str, str, int]],
        settings: RunSettings,
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
        if settings.enable_dump_debug or flags:
            self.flagged = outputs
        if settings.enable_dump_debug:
            self.checked = outputs
        if settings.enable_dump:
            self.dumped = _dump_tensors(plan, graph, rounded, settings)
        self.values = list(dict.fromkeys(self.checked + self.dumped))
        self.provenance = Provenance(graph, plan, rounded) if self.flagged else None
        self._graph = graph
        self._thinned = flags and not settings.enable_dump_debug  # dump_debug lists every overflowing op
        self.callees: dict[str, list[str]] = {}
        self.tokens: list[str] = []
        self._callbacks: list[Callable[..., object]] = []  # the registry keeps only weak references
        self._checked = set(self.checked)
        self._dumped = set(self.dumped)

    @property
    def active(self) -> bool:
        """Whether the function needs an observer node at all."""
        return bool(self.flagged or self.values)

    # ------------------------------------------------------------------ the node

    def add_nodes(self, fdef: FunctionDefProto, refs: StoredRefs) -> None:
        """Add the flag, head, switch and values nodes to ``fdef`` (a rewritten FunctionDef)."""
        self.callees = _callees(fdef, refs)
        for call in self.callees:  # a callee's observer runs only if its call is a control return too
            _control_return(fdef, call)
        self.flagged = [w for w in self.flagged if refs.has_node(w.op)]
        if self._thinned and self.provenance is not None:
            from npu_jupyter._runtime.functions.needed_flags import needed_flags

            self.flagged = needed_flags(self.flagged, self._graph, refs, self.provenance, self.callees)
        self.values = [w for w in self.values if refs.has_node(w.op) and refs.ref(w.op, w.kind, w.slot)]
        if not self.active:
            return
        builder = _NodeBuilder(fdef)
        bool_type, id_type = _enum("bool"), _enum("int64")
        scalars = [_rank(self._graph, w) == 0 for w in self.flagged]
        flags = builder.flags([cast_ref(refs, w) for w in self.flagged], [w.dtype for w in self.flagged], scalars)
        head = builder.py_func(
            "head", self._register(self.head), [flags] if flags else [], [bool_type] if flags else [], [id_type]
        )
        _control_return(fdef, head)
        if not self.values:
            return
        want = builder.py_func("want", self._register(self.want), [], [], [bool_type])
        pred = builder.any_false_or(flags, f"{want}:output:0") if flags else f"{want}:output:0"
        inputs = [builder.switch(f"{head}:output:0", pred, id_type)]
        inputs += [builder.switch(cast_ref(refs, w), pred, _enum(w.dtype)) for w in self.values]
        types = [id_type] + [_enum(w.dtype) for w in self.values]
        values = builder.py_func("values", self._register(self.record_values), inputs, types, [bool_type])
        # On calls whose values stay in the graph the values node is dead; a dead control return would
        # make the caller's dependents of an inlined call dead too. A ControlTrigger is live either way.
        _control_return(fdef, builder.add("done", "ControlTrigger", ["^" + values]).name)

    def _register(self, callback: Callable[..., object]) -> str:
        from tensorflow.python.ops import script_ops

        self._callbacks.append(callback)
        token = str(script_ops._py_funcs.insert(callback))
        self.tokens.append(token)
        return token

    def release(self) -> None:
        """Drop the callbacks from TensorFlow's registry (the emulation ended)."""
        from tensorflow.python.ops import script_ops

        for token in self.tokens:
            script_ops._py_funcs.remove(token)
        self.tokens, self._callbacks = [], []

    # ------------------------------------------------------------------ the callbacks

    def head(self, *flags: np.ndarray) -> np.int64:
        """Each time the body runs: open its observation, noting the outputs whose flag is false."""
        observation = Observation(self.name)
        if flags:
            ok = np.asarray(flags[0]).reshape(-1)
            observation.bad = [w for w, fine in zip(self.flagged, ok) if not fine]
        observation_id: np.int64 = np.int64(self.log.add(observation))
        return observation_id

    def want(self) -> np.bool_:
        """Whether the current call is dumped (then the values reach Python even when all is finite)."""
        return np.bool_(self.log.keeps_values())

    def record_values(self, observation_id: np.int64, *values: np.ndarray) -> np.bool_:
        """Runs only when some output went non-finite or the call is dumped: keep the copies needed."""
        observation = self.log.find(int(observation_id))
        if observation is None:
            return np.bool_(False)
        bad = set(observation.bad)
        keep = self.log.keeps_values()
        for w, value in zip(self.values, values):
            if (w in bad and w in self._checked) or (keep and w in self._dumped):
                observation.values[w] = np.array(value, copy=True)
        return np.bool_(True)


def _control_return(fdef: FunctionDefProto, node: str) -> None:
    """Make ``node`` a control return of ``fdef`` (so the runtime does not prune it)."""
    if node not in fdef.control_ret:
        fdef.control_ret[node] = node
        fdef.signature.control_output.append(node)


def cast_ref(refs: StoredRefs, w: Watched) -> str:
    """The stored value's reference (never None here: unresolvable watches were dropped)."""
    return str(refs.ref(w.op, w.kind, w.slot))


def _float_outputs(plan: Plan, graph: Graph, rounded: set[tuple[str, str, int]]) -> list[Watched]:
    """Every float output of the planned ops that a call computes, in the plan's (topological) order.

    Constants are left out: their values do not change from call to call (and an intended ``-inf``
    mask constant is not an overflow); they are still dumped.
    """
    out: list[Watched] = []
    for name, decision in plan.ops.items():
        op = _op(graph, name)
        if op is None or op.type in _SKIPPED_TYPES or op.type == "Const":
            continue
        outputs = op.outputs[:3] if op.type.startswith("FusedBatchNorm") else op.outputs  # not reserve space
        for slot, tensor in enumerate(outputs):
            if tensor.dtype.base_dtype.is_floating:
                out.append(_watched(decision, op, "output", slot, tensor, rounded))
    return out


def _dump_tensors(plan: Plan, graph: Graph, rounded: set[tuple[str, str, int]], settings: RunSettings) -> list[Watched]:
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


def _watched(
    decision: OpDecision, op: Operation, kind: str, slot: int, tensor: Tensor, rounded: set[tuple[str, str, int]]
) -> Watched:
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


def _rank(graph: Graph, w: Watched) -> int | None:
    """The static rank of a watched output (None when unknown)."""
    op = _op(graph, w.op)
    return op.outputs[w.slot].shape.rank if op is not None else None


def _op(graph: Graph, name: str) -> Operation | None:
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None


def _callees(fdef: FunctionDefProto, refs: StoredRefs) -> dict[str, list[str]]:
    """Node -> the functions it runs (a call, a loop body, a branch), for the nodes a call of the body runs.

    A call the runtime prunes (its results unread) is left out: made a control return so that its
    body's observers run, it would run, though neither TensorFlow nor the device runs it.
    """
    out: dict[str, list[str]] = {}
    for node in fdef.node_def:
        if not refs.has_node(node.name):
            continue
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


def _enum(dtype: str) -> int:
    import tensorflow as tf

    return int(tf.as_dtype(dtype).as_datatype_enum)


class _NodeBuilder:
    """Adds nodes, in FunctionDef spelling, under :data:`OBSERVE_SCOPE`."""

    def __init__(self, fdef: FunctionDefProto) -> None:
        self.fdef = fdef
        self.count = 0

    def add(self, what: str, op: str, inputs: list[str], **attrs: Any) -> NodeDef:
        """A node named ``<scope>/<n>/<what>`` (numbered, so names never clash)."""
        self.count += 1
        node: NodeDef = add_node(self.fdef.node_def, f"{OBSERVE_SCOPE}/{self.count}/{what}", op, inputs, **attrs)
        return node

    def const(self, what: str, value: np.ndarray) -> str:
        import tensorflow as tf

        node = self.add(
            what, "Const", [], dtype=("type", _enum(str(value.dtype))), value=tf.compat.v1.make_tensor_proto(value)
        )
        return f"{node.name}:output:0"

    def py_func(self, what: str, token: str, inputs: list[str], tin: list[int], tout: list[int]) -> str:
        """A stateful ``PyFunc`` node calling the callback registered under ``token``; its name."""
        node = self.add(what, "PyFunc", inputs, token=token, Tin=("types", tin), Tout=("types", tout))
        return str(node.name)

    def switch(self, ref: str, pred: str, dtype: int) -> str:
        """``ref`` when ``pred`` holds, a dead tensor otherwise (its consumers then do not run)."""
        node = self.add("switch", "Switch", [ref, pred], T=("type", dtype))
        return f"{node.name}:output_true:0"

    def any_false_or(self, flags: str, other: str) -> str:
        """``not all(flags) or other``: a scalar bool."""
        zero = self.const("axis", np.array(0, np.int32))
        every = self.add("all_finite", "All", [flags, zero], Tidx=("type", _enum("int32")), keep_dims=False)
        some_bad = self.add("some_bad", "LogicalNot", [f"{every.name}:output:0"])
        either = self.add("either", "LogicalOr", [f"{some_bad.name}:y:0", other])
        return f"{either.name}:z:0"

    def flags(self, refs: list[str], dtypes: list[str], scalars: list[bool]) -> str:
        """One bool vector: whether each tensor is all finite, in the order of ``refs``; "" for none.

        One ``DebugNumericSummaryV2`` node per tensor (the kernel ``tf.debugging`` dumps use), in its
        ``CURT_HEALTH`` mode: ``[tensor_id, 1.0 if any inf/NaN else 0.0]``. With every id 0, the row
        maximum of the packed summaries is the tensor's "any inf/NaN". One node per tensor keeps a graph
        of many small ops (a Transformer) from doubling its op count. Scalars (``scalars``: their static
        shape is ``[]``; an optimizer's per-variable step arithmetic is a third of a Transformer's flags)
        take no node each: packed per dtype into one vector, one ``IsFinite`` answers for all of them.
        """
        if not refs:
            return ""
        parts: list[str] = []
        order: list[int] = []  # the tensor behind each entry of the joined parts
        by_dtype: dict[str, list[int]] = {}
        for index, (dtype, scalar) in enumerate(zip(dtypes, scalars)):
            if scalar:
                by_dtype.setdefault(dtype, []).append(index)
        for dtype, indices in by_dtype.items():
            kind = ("type", _enum(dtype))
            packed = self.add("scalars", "Pack", [refs[i] for i in indices], T=kind, N=len(indices), axis=0)
            parts.append(f"{self.add('finite', 'IsFinite', [f'{packed.name}:output:0'], T=kind).name}:y:0")
            order += indices
        rest = [i for i, scalar in enumerate(scalars) if not scalar]
        if rest:
            parts.append(self._health_flags([refs[i] for i in rest], [dtypes[i] for i in rest]))
            order += rest
        if len(parts) == 1:
            return parts[0]  # one part holds every tensor in the order given
        int32 = ("type", _enum("int32"))
        axis = self.const("axis", np.array(0, np.int32))
        joined = self.add("joined", "ConcatV2", [*parts, axis], T=("type", _enum("bool")), N=len(parts), Tidx=int32)
        positions = np.argsort(np.array(order, np.int64)).astype(np.int32)  # tensor i sits at positions[i]
        gathered = self.add(
            "flags",
            "GatherV2",
            [f"{joined.name}:output:0", self.const("positions", positions), axis],
            Tparams=("type", _enum("bool")),
            Tindices=int32,
            Taxis=int32,
            batch_dims=0,
        )
        return f"{gathered.name}:output:0"

    def _health_flags(self, refs: list[str], dtypes: list[str]) -> str:
        """The flags of ``refs`` from one ``DebugNumericSummaryV2`` node each (see :meth:`flags`)."""
        f32 = _enum("float32")
        summaries = [
            f"{self.add('health', 'DebugNumericSummaryV2', [ref], T=('type', _enum(dtype)), output_dtype=('type', f32), tensor_debug_mode=_CURT_HEALTH, tensor_id=0).name}:output:0"
            for ref, dtype in zip(refs, dtypes)
        ]
        packed = self.add("summaries", "Pack", summaries, T=("type", f32), N=len(summaries), axis=0)
        one = self.const("row", np.array(1, np.int32))
        bad = self.add(
            "bad",
            "Max",
            [f"{packed.name}:output:0", one],
            T=("type", f32),
            Tidx=("type", _enum("int32")),
            keep_dims=False,
        )
        zero = self.const("zero", np.array(0.0, np.float32))
        finite = self.add(
            "flags", "Equal", [f"{bad.name}:output:0", zero], T=("type", f32), incompatible_shape_error=True
        )
        return f"{finite.name}:z:0"
