"""One light, normalised view of a TensorFlow graph for the planner.

The planner accepts a ``tf.Graph``, a ``GraphDef`` or a ``tf.function`` ConcreteFunction. All three
become a :class:`GraphView`: plain Python nodes (name, op type, data inputs with slot and dtype,
control inputs, output dtypes, the few attributes the adapter's rules read) in topological order.

Why a separate view: the adapter's rules walk every edge several times (seeding, propagation,
clustering, precision). Protobuf and TF Python objects are slow to touch, so the GraphDef is iterated
exactly once and everything later works on ``__slots__`` objects and ints. Output dtypes come from
each op type's ``OpDef`` (looked up once per type, not per node). Static shapes are not converted up
front (``as_graph_def(add_shapes=True)`` alone costs more than the whole plan); they are looked up
lazily, only for the tensors that cross the host/device boundary.

This module holds the view's types only. :mod:`npu_jupyter._plan.graph.view` builds a view from a NodeDef
reader (:mod:`node_reading`), per-op-type OpDef recipes (:mod:`op_recipes`) and the ordering
(:mod:`topology`); :mod:`fetches` reads what a ``Session.run`` would fetch.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Callable, List, Sequence, Tuple, cast

from npu_jupyter._plan.readonly import NO_STRINGS

if TYPE_CHECKING:
    from npu_jupyter._plan.graph.graph_exec import GraphExecConfig
    from npu_jupyter._tf_types import Graph, Operation

# Attribute names the adapter's scopes and helpers set (tests/data/reference/ADAPTER-FACTS.md §3.2, §3.3, §4.5).
WITHOUT_NPU_COMPILE = "_without_npu_compile"
KEEP_DTYPE = "_keep_dtype"
OP_MAX_SIZE = "_op_max_size"
NO_NEED_OPTIMIZE = "_NoNeedOptimize"

# V1 while-loop back edges: ignored by topological sort and by the adapter's cycle check.
BACK_EDGE_OPS = frozenset({"NextIteration", "RefNextIteration"})


class Node:
    """One op of the graph, reduced to what the rules need.

    Nodes are read-only once the view is built: a view is reused across re-plans, and nodes share
    list and tuple objects (the output dtypes of a single-output type, the input slots). The lists a
    plan's decisions show (input names, input and output dtypes, a body) are
    :class:`~npu_jupyter._plan.readonly.ReadOnlyList` objects, which the decisions hold as they are.

    Fields most nodes leave at their default (scope flags, called functions, a while frame, ref
    arguments) are class attributes: a node stores them only when its NodeDef sets them, so reading
    a graph writes ten fields per node instead of nineteen.
    """

    __slots__ = (
        "__dict__",  # holds the rare fields below, created only for a node that sets one
        "control_inputs",
        "ctrl_idx",
        "in_idx",
        "index",
        "input_dtypes",
        "input_names",
        "input_slots",
        "name",
        "op",
        "output_dtypes",
    )

    # Rare fields: the class-level value is the default every node reads until it sets its own.
    input_refs: list[bool] | None = None  # input arg is a ref type (None: no ref args)
    output_refs: list[bool] | None = None
    without_npu_compile = False
    keep_dtype = False
    op_max_size = False
    no_need_optimize = False
    functions: Sequence[str] = ()  # library functions this node calls (attrs or op type)
    body: list[str] = NO_STRINGS  # op types inside the called functions (for display)
    frame_name = ""  # V1 while-loop frame an Enter node opens

    def __init__(self, name: str, op: str) -> None:
        # node_reading.read_nodes builds nodes without this call and sets every slot itself:
        # a slot added here must be set there too (tests/plan/test_graph.py checks every reading path).
        self.name = name
        self.op = op
        self.index = -1  # position in GraphView.order (topological)
        # Fields that are empty for many nodes start as a shared empty list or tuple and are replaced,
        # never mutated: a view of a large graph then holds far fewer objects for the garbage collector
        # to scan (a cold plan's collector passes cost about as much as building the view itself).
        self.input_names: list[str] = NO_STRINGS  # producer name of each data input
        self.input_slots: Sequence[int] = ()  # producer output slot of each data input (shared tuples)
        self.input_dtypes: list[str] = NO_STRINGS  # dtype of each data input as produced ("" if unknown)
        self.control_inputs: list[str] = NO_STRINGS
        self.output_dtypes: list[str] = NO_STRINGS  # replaced (often by a list shared per op type)
        self.in_idx: Sequence[int] = ()  # producer index of each data input (-1: not in the view)
        self.ctrl_idx: Sequence[int] = ()  # index of each control input in the view

    @property
    def inputs(self) -> list[tuple[str, int]]:
        """(producer name, output slot) of each data input.

        Built on demand: the view stores names and slots apart, so that reading a graph creates no
        tuple per edge (the slots of most nodes are one shared tuple of zeros).
        """
        return list(zip(self.input_names, self.input_slots))

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.op!r})"


@dataclass
class FunctionInfo:
    """A library function, as the adapter's recursive support test sees it."""

    name: str
    op_types: list[str]
    calls: list[str]  # nested functions referenced by its nodes' attrs or op types
    output_dtypes: list[str]


# (preds, succs, consumers) of a view: :meth:`GraphView.preds` and the two after it
EdgeLists = Tuple[List[Sequence[int]], List[List[int]], List[List[Tuple[int, int]]]]


@dataclass
class GraphView:
    """Nodes in topological order plus the function library and a lazy shape source."""

    nodes: dict[str, Node]
    order: list[Node]
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    tf_graph: Graph | None = None  # the tf.Graph the view came from, for lazy static shapes
    exec_config: GraphExecConfig | None = None  # the graph's own dynamic config
    _edge_lists: EdgeLists | None = None  # (preds, succs, consumers): :func:`_edge_lists`
    _find_op: str | None = None  # name of the tf_graph's op lookup method (:func:`_op_finder`)
    _op_counts: dict[str, int] | None = None

    # Edge lists depend on the graph only, so they are built once per view: a view is cached
    # across re-plans under other configs. Callers must not mutate them.

    def op_counts(self) -> dict[str, int]:
        """How many nodes of each op type the view holds: whole-graph tests ("is there a GetNext?")
        read this instead of walking every node again.
        """
        if self._op_counts is None:
            self._op_counts = Counter(map(attrgetter("op"), self.order))
        return self._op_counts

    def preds(self) -> list[Sequence[int]]:
        """Per node: indices of data and control producers that come earlier in topological order.

        A node without control inputs whose producers all come earlier (nearly every node) shares
        its ``in_idx`` list here instead of a copy: fewer objects for the garbage collector to scan.
        """
        return self._edges()[0]

    def succs(self) -> list[list[int]]:
        """Per node: indices of the consumers in :meth:`preds` (the same edges reversed)."""
        return self._edges()[1]

    def consumers(self) -> list[list[tuple[int, int]]]:
        """Per node index: (consumer index, input position) of every data out-edge."""
        return self._edges()[2]

    def _edges(self) -> EdgeLists:
        if self._edge_lists is None:
            self._edge_lists = _edge_lists(self.order)
        return self._edge_lists

    def shape(self, tensor: str) -> tuple[int, ...] | None:
        """Fully known static shape of ``"op:slot"``, else None (only from a tf.Graph)."""
        op, _, slot = tensor.rpartition(":")
        try:
            return self.output_shape(op, int(slot))
        except ValueError:
            return None

    def output_shape(self, op: str, slot: int) -> tuple[int, ...] | None:
        """Fully known static shape of output ``slot`` of op ``op``, else None (only from a tf.Graph)."""
        return self.shape_reader()(op, slot)

    def shape_reader(self) -> Callable[[str, int], tuple[int, ...] | None]:
        """A function answering :meth:`output_shape` for many tensors in a row; drop it after them.

        Asked once per tensor crossing a GeOp boundary (a thousand in a mixed-computing plan of
        ResNet-50's training step), so the op lookup is resolved once for all of them, and the op
        is found by TensorFlow's unchecked name lookup where it has one (see :func:`_op_finder`),
        about a fifth of ``get_tensor_by_name``'s cost. The view keeps the lookup's name, not the
        bound method: that would hold on to a graph the view cache reaches only through a weak
        proxy (the function returned holds it, hence "drop it").
        """
        if self.tf_graph is None:
            return _no_shape
        if self._find_op is None:
            self._find_op = _op_finder(self.tf_graph)
        return functools.partial(_known_shape, getattr(self.tf_graph, self._find_op))


def _edge_lists(order: list[Node]) -> EdgeLists:
    """Every node's earlier producers, consumers among those, and data consumers: (preds, succs, consumers).

    One pass over the nodes builds the three: every plan reads all of them (placement the
    consumers, clustering the others), and three passes over ResNet-50's training step took 4.6 ms
    of a cold plan, one 3.6 ms. Both edge lists of a node come out in the order of its inputs, data
    before control; a data edge from a later node (a while loop's back edge) is a consumer only.
    """
    preds: list[Sequence[int]] = []
    add_pred = preds.append
    succs: list[list[int]] = [[] for _ in order]
    cons: list[list[tuple[int, int]]] = [[] for _ in order]
    for n in order:
        i, idx, ctrl = n.index, n.in_idx, n.ctrl_idx
        earlier = not ctrl  # so far: the node's producers are exactly its earlier data producers
        pos = 0
        for j in idx:
            if j < 0:  # not in the view
                earlier = False
            else:
                cons[j].append((i, pos))
                if j < i:
                    succs[j].append(i)
                else:
                    earlier = False
            pos += 1  # noqa: SIM113 - enumerate() made the pass a sixth slower
        if earlier:  # nearly every node: its in_idx is shared, not copied
            add_pred(idx)
        else:
            for j in ctrl:
                if 0 <= j < i:
                    succs[j].append(i)
            add_pred([j for j in (*idx, *ctrl) if 0 <= j < i])
    return preds, succs, cons


def _no_shape(op: str, slot: int) -> None:
    """No static shapes without a tf.Graph (a view of a GraphDef)."""


def _known_shape(find: Callable[[str], Operation], op: str, slot: int) -> tuple[int, ...] | None:
    """The fully known static shape of output ``slot`` of the op ``find`` returns for ``op``, else None."""
    try:
        dims = find(op).outputs[slot].shape.as_list()
    except (KeyError, ValueError, IndexError):  # ValueError: unknown rank
        return None
    if None in dims:
        return None
    known = cast("list[int]", dims)  # no None, as just tested
    if known and min(known) < 0:
        return None
    return tuple(known)


def _op_finder(graph: Graph) -> str:
    """Name of the graph's fastest op-by-name lookup raising KeyError for an unknown name.

    TF 2.x's C++ graph has ``_get_operation_by_name``, TF 1.15 and 2.6 ``_get_operation_by_name_unsafe``;
    the public ``get_operation_by_name`` (which first checks the name's type and form) serves otherwise.
    """
    for private in ("_get_operation_by_name", "_get_operation_by_name_unsafe"):
        if callable(getattr(graph, private, None)):
            return private
    return "get_operation_by_name"
