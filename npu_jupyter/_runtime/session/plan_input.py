"""What the emulator hands the planner for one run: the user's graph, cut down to what the run reaches.

The planner plans a run graph: it reads the whole ``tf.Graph`` (every NodeDef converted) and then keeps
only the fetches' ancestors over data and control edges (``plan(graph, fetches=...)``). For a small
fetch set of a large model (closing the input queues, reading the global step or a variable, an
initializer) reading the whole graph is nearly all of the plan's time: seconds on a 38k-op model, once
for every new fetch set. The plan depends only on the ancestors' NodeDefs, the function library and the
static shapes of their tensors, so the emulator hands the default planner a *view* of the user's graph
whose ``as_graph_def()`` holds just those ancestors (in graph order) and the library, while every other
question (``get_tensor_by_name`` for static shapes, ...) goes to the graph itself. The planner prunes
that GraphDef to the same ancestors, so the plan is the same plan (``tests/runtime/test_plan_input.py``
compares them), at a cost proportional to the run graph rather than the model.

A run that reaches most of the graph (a training step) gets the graph itself: cutting it would save
little. A custom ``plan_fn`` always gets the graph itself (its contract is the user's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from npu_jupyter._runtime.session.run_graph import op_closure

if TYPE_CHECKING:
    from npu_jupyter._runtime.session.run_graph import GraphDefProto
    from npu_jupyter._tf_types import Graph, GraphDef, Operation

#: A run reaching more than this share of the graph's ops is planned from the graph itself.
CUT_SHARE = 0.5


class RunGraphView:
    """The user's ``tf.Graph`` as the planner reads it, with ``as_graph_def()`` holding one run's ancestors.

    Anything else is the graph's own attribute, so static shapes and op lookups answer as the graph does.
    Not weak-referenceable (``__slots__``), so the planner's per-graph view cache, whose entries hold
    their graph, keeps none of these views (it skips objects it cannot weakly reference).
    """

    __slots__ = ("_graph", "_graph_def")

    def __init__(self, graph: Graph, graph_def: GraphDef) -> None:
        self._graph = graph
        self._graph_def = graph_def

    def as_graph_def(self, *args: object, **kwargs: object) -> GraphDef:
        """The ancestors' NodeDefs (graph order), the graph's versions and function library."""
        return self._graph_def

    def __getattr__(self, name: str) -> object:
        return getattr(self._graph, name)


def planner_input(graph: Graph, fetches: tuple[object, ...] | None, share: float = CUT_SHARE) -> Graph | RunGraphView:
    """The graph itself, or a :class:`RunGraphView` of the fetches' ancestors when they are at most
    ``share`` of its ops.
    """
    if not fetches or not all(isinstance(f, str) for f in fetches):
        return graph
    ops = graph.get_operations()
    keep = ancestors(graph, [str(f) for f in fetches], int(len(ops) * share))
    if keep is None:
        return graph
    return RunGraphView(graph, _cut_graph_def(graph, ops, keep))


def ancestors(graph: Graph, names: list[str], limit: int) -> set[str] | None:
    """Op names the fetches reach over data and control inputs (fed tensors not cut, as the planner prunes).

    None when there are more than ``limit`` of them, or a name is not an op of the graph (the planner
    then reads the graph itself and raises its own error for the name).
    """
    stack: list[Operation] = []
    for name in names:
        op_name = name.lstrip("^").rpartition(":")[0] if ":" in name else name.lstrip("^")
        try:
            stack.append(graph.get_operation_by_name(op_name))
        except (KeyError, ValueError):
            return None
    return op_closure(stack, limit=limit)


def _cut_graph_def(graph: Graph, ops: list[Operation], keep: set[str]) -> GraphDef:
    """A GraphDef of the ``keep`` ops in graph order, with the graph's versions and function library.

    A graph without library functions is read op by op (only the kept NodeDefs are serialized), each
    NodeDef as ``as_graph_def`` writes it; one with functions is serialized whole once, for its
    library, and cut.
    """
    from tensorflow.core.framework import graph_pb2

    cut: GraphDefProto = graph_pb2.GraphDef()
    if getattr(graph, "_functions", None):
        full: GraphDefProto = graph.as_graph_def()
        cut.versions.CopyFrom(full.versions)
        cut.library.CopyFrom(full.library)
        cut.node.extend(node for node in full.node if node.name in keep)
    else:
        user: Any = graph  # graph_def_versions: a tf.Graph property the typing protocol leaves out
        cut.versions.CopyFrom(user.graph_def_versions)
        cut.node.extend(op.node_def for op in _in_graph_order(graph, ops, keep))
        for node in cut.node:  # as_graph_def lists control inputs by name, after the data inputs
            controls = [ref for ref in node.input if ref.startswith("^")]
            if len(controls) > 1:
                data = [ref for ref in node.input if not ref.startswith("^")]
                del node.input[:]
                node.input.extend(data + sorted(controls))
    return cast("GraphDef", cut)


def _in_graph_order(graph: Graph, ops: list[Operation], keep: set[str]) -> list[Operation]:
    """The ``keep`` ops in the order the graph holds them (``as_graph_def`` order: by op id).

    Sorting the few kept ops by id beats testing every op of a large graph; ``ops`` is the fallback
    where an op has no ``_id`` (TensorFlow's own attribute, present from 2.6 on).
    """
    kept = [graph.get_operation_by_name(name) for name in keep]
    try:
        return sorted(kept, key=lambda op: op._id)  # type: ignore[attr-defined]
    except AttributeError:
        return [op for op in ops if op.name in keep]
