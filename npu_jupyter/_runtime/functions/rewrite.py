"""Storage rounding inside a traced ``tf.function``: the plan's precisions applied to a FunctionDef.

TF2 code (Keras ``fit``, GradientTape loops) runs graphs that live as ``FunctionDef`` protos in the
eager context's function library, called by name. The emulator changes no TensorFlow code: it
plans the function's graph, inserts the same ``Cast`` round trips the session emulator inserts
(``rewrite.roundings`` / ``rewrite.insert_casts``, one rule for both: no Cast pair where rounding cannot
change a value, :func:`~npu_jupyter._runtime.rewrite.held_values`), and hands back a FunctionDef of
the *same name*, which the caller then registers in place of the original for the duration of a cell.

FunctionDef inputs spell tensors as ``node:output_arg:index``; TensorFlow's own converter gives a
GraphDef spelling (``node:index``) plus the map between the two, so the rewrite works on the GraphDef
and maps every reference back.

An ``observe`` hook (:mod:`npu_jupyter._runtime.functions.observe_nodes`) may add observer nodes to the
rewritten definition; :class:`StoredRefs` tells it where each op's stored value lives (the rounded
tensor when the plan rounds it). A definition is rewritten when it rounds a tensor or is observed;
otherwise the original is handed back untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from npu_jupyter._runtime.rewrite import Rounding, emulation_of, insert_casts, roundings

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import FunctionDef, Graph, GraphDef


@dataclass
class RewrittenFunction:
    """A FunctionDef with the plan's roundings, and what was rounded (empty: nothing to change)."""

    definition: FunctionDef  # same signature and name as the original
    roundings: list[Rounding] = field(default_factory=list)

    def emulation(self) -> dict[str, str]:
        """Op -> how its precision is emulated (for the report)."""
        return emulation_of(self.roundings)


class StoredRefs:
    """Where the rewritten definition holds the value the device stores for an op's input or output."""

    def __init__(
        self,
        graph_def: GraphDef,
        tensor_map: dict[str, str],
        flat_to_nested: dict[str, str],
        args: set[str],
        results: Iterable[str],
    ) -> None:
        self._nodes = {node.name: node for node in graph_def.node if node.name not in args}
        self._tensor_map = tensor_map
        self._flat_to_nested = flat_to_nested
        self._live = live_nodes(graph_def, results)

    def has_node(self, op: str) -> bool:
        """True for an op of the body that a call runs: not an argument, and not pruned (:func:`live_nodes`).

        Observers and the float32 shadow only read such ops: reading a pruned one would make the call
        run it (and report it), though neither TensorFlow nor the device ever does.
        """
        return op in self._nodes and op in self._live

    def ref(self, op: str, kind: str, slot: int) -> str | None:
        """FunctionDef spelling of ``op``'s input or output ``slot`` as stored (after its rounding)."""
        if kind == "output":
            flat = f"{op}:{slot}"
            return _nested(_graph_ref(self._tensor_map.get(flat, flat)), self._flat_to_nested)
        node = self._nodes.get(op)
        if node is None:
            return None
        data = [ref for ref in node.input if not ref.startswith("^")]
        return _nested(data[slot], self._flat_to_nested) if slot < len(data) else None

    def original(self, op: str, slot: int) -> str:
        """FunctionDef spelling of ``op``'s output ``slot`` as the op computed it (before any rounding)."""
        return _nested(f"{op}:{slot}", self._flat_to_nested)


def live_nodes(graph_def: GraphDef, results: Iterable[str]) -> set[str]:
    """The nodes a call runs: those the ``results`` (return values' and control returns' ops) need.

    TensorFlow's function runtime runs only these (checked on TF 2.21: an unread ``gather`` out of range
    does not fail the call, a read one does; an unread gradient taken for a constant never runs), and
    ``tf.function`` lists the stateful ops that must run, variable writes say, as control returns.
    Found backwards over data and control inputs.
    """
    inputs = {node.name: node.input for node in graph_def.node}
    live: set[str] = set()
    stack = [name for name in results if name in inputs]
    while stack:
        name = stack.pop()
        if name in live:
            continue
        live.add(name)
        for ref in inputs[name]:
            producer = ref.lstrip("^").split(":", 1)[0]
            if producer in inputs and producer not in live:
                stack.append(producer)
    return live


def _result_nodes(fdef: FunctionDef, nested_to_flat: dict[str, str]) -> list[str]:
    """The ops of ``fdef``'s return values and control returns (flat node names)."""
    returned = [nested_to_flat.get(ref, ref).split(":", 1)[0] for ref in fdef.ret.values()]
    return returned + list(fdef.control_ret.values())


#: ``observe(definition, refs)`` adds observer nodes to a rewritten FunctionDef in place.
ObserveHook = Callable[["FunctionDef", StoredRefs], None]


def rewrite_function(
    fdef: FunctionDef,
    graph: Graph,
    plan: Plan,
    observe: ObserveHook | None = None,
    *,
    drop_xla: bool = False,
    reference: ObserveHook | None = None,
) -> RewrittenFunction:
    """``fdef`` with every float32 tensor the plan lowers rounded through its half dtype.

        ``graph`` is the traced FuncGraph the plan was made from (op names are the FunctionDef's node
        names). ``observe`` adds observer nodes (see :class:`StoredRefs`); ``reference`` adds, before them,
    the float32 shadow drift is measured against (:mod:`.npu_jupyter._runtime.functions.reference`). ``drop_xla`` removes the
        ``jit_compile`` marks of the function and of the calls it makes (:func:`xla_marked`). With nothing
        to round, observe or drop, the original definition is returned untouched.
    """
    from tensorflow.core.framework import function_pb2
    from tensorflow.python.framework import function_def_to_graph

    rounded = roundings(plan, graph)
    drop = drop_xla and xla_marked(fdef)
    if not rounded and observe is None and reference is None and not drop:
        return RewrittenFunction(fdef)
    graph_def, nested_to_flat = function_def_to_graph.function_def_to_graph_def(fdef)
    _canonical_inputs(graph_def)
    tensor_map = insert_casts(graph_def, rounded, graph) if rounded else {}  # no Cast where none can change a value
    flat_to_nested = _invert(nested_to_flat)
    args = {arg.name for arg in fdef.signature.input_arg}
    new = function_pb2.FunctionDef()
    new.CopyFrom(fdef)
    del new.node_def[:]
    for node in graph_def.node:
        if node.name in args and node.op == "Placeholder":
            continue  # the function's own arguments, not nodes of its body
        copy = new.node_def.add()
        copy.CopyFrom(node)
        for i, ref in enumerate(node.input):
            copy.input[i] = _nested(ref, flat_to_nested)
    for key, ref in list(new.ret.items()):
        flat = nested_to_flat.get(ref, ref)
        if flat in tensor_map:  # the function returns what the device stored (the rounded tensor)
            new.ret[key] = _nested(tensor_map[flat], flat_to_nested)
    refs = StoredRefs(graph_def, tensor_map, flat_to_nested, args, _result_nodes(fdef, nested_to_flat))
    if reference is not None:
        reference(new, refs)
    if observe is not None:
        observe(new, refs)
    if drop:
        _drop_xla(new)
    return RewrittenFunction(new, rounded)


#: Attributes that make TensorFlow compile a function (or a call) with XLA.
XLA_ATTRS = ("_XlaMustCompile", "_XlaCompile")


def xla_marked(fdef: FunctionDef) -> bool:
    """Whether ``fdef`` or one of its call nodes asks for XLA compilation (``jit_compile=True``).

    XLA's simplifier removes a float32 -> float16 -> float32 ``Cast`` pair (excess precision is
    allowed by default), so under XLA the storage rounding silently vanishes (seen on TF 2.21), and XLA
    cannot compile an observer's ``PyFunc``. The device compiles the graph with GE, not XLA, so the
    emulated functions run without it.
    """
    if any(fdef.attr[a].b for a in XLA_ATTRS if a in fdef.attr):
        return True
    return any(node.attr[a].b for node in fdef.node_def for a in XLA_ATTRS if a in node.attr)


def _drop_xla(fdef: FunctionDef) -> None:
    for attr in XLA_ATTRS:
        if attr in fdef.attr:
            del fdef.attr[attr]
        for node in fdef.node_def:
            if attr in node.attr:
                del node.attr[attr]


def _canonical_inputs(graph_def: GraphDef) -> None:
    """Spell slot 0 inputs ``op`` (GraphDef's canonical form), as the rewiring of rounded outputs expects.

    TensorFlow's converter writes ``op:0``; left so, consumers of a rounded output (those that do not
    round their own inputs, an ``IdentityN`` say) would read the unrounded tensor.
    """
    for node in graph_def.node:
        for i, ref in enumerate(node.input):
            if not ref.startswith("^") and ref.endswith(":0"):
                node.input[i] = ref[:-2]


def _graph_ref(tensor_name: str) -> str:
    """GraphDef input spelling of a tensor name (``op`` for slot 0)."""
    op, _, slot = tensor_name.rpartition(":")
    return op if slot == "0" else tensor_name


def _invert(nested_to_flat: dict[str, str]) -> dict[str, str]:
    """Flat (``node:0``) -> nested (``node:output_arg:0``) spelling of the original tensors."""
    inverse: dict[str, str] = {}
    for nested, flat in nested_to_flat.items():
        if flat.startswith("^"):
            continue
        inverse.setdefault(flat, nested)
    return inverse


def _nested(ref: str, flat_to_nested: dict[str, str]) -> str:
    """A GraphDef input reference in FunctionDef spelling; added Casts output their ``y``."""
    if ref.startswith("^"):
        return ref
    name, _, slot = ref.partition(":")
    flat = f"{name}:{slot or '0'}"
    if flat in flat_to_nested:
        return flat_to_nested[flat]
    return f"{name}:y:{slot or '0'}"  # a Cast this rewrite added
