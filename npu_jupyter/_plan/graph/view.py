"""Building a :class:`~npu_jupyter._plan.graph.graph.GraphView` from any graph input ``plan()`` accepts.

A ``tf.Graph``, a ``GraphDef`` or a ``tf.function`` ConcreteFunction become one GraphDef; its nodes are
read once (:mod:`node_reading`), pruned to the fetches (:mod:`fetches`, :mod:`topology`) and ordered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npu_jupyter._plan.graph.export import exported, keys_in
from npu_jupyter._plan.graph.fetches import fetch_names
from npu_jupyter._plan.graph.graph import GraphView
from npu_jupyter._plan.graph.graph_exec import DYNAMIC_INPUT, graph_config
from npu_jupyter._plan.graph.node_reading import SCOPE_ATTRS, read_library, read_nodes
from npu_jupyter._plan.graph.topology import link, prune
from npu_jupyter._plan.readonly import ReadOnlyList

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Graph, GraphDef


def build_view(graph: object, fetches: object = None) -> GraphView:
    """Convert any accepted graph input into a :class:`GraphView` (pruned to ``fetches``)."""
    graph_def, tf_graph, serialized = exported(graph)
    return view_of(graph_def, tf_graph, fetches, serialized)


def view_of(
    graph_def: GraphDef, tf_graph: Graph | None = None, fetches: object = None, serialized: bytes | None = None
) -> GraphView:
    """The view of a GraphDef; ``tf_graph`` (when known) answers static-shape lookups.

    ``serialized`` (the GraphDef's bytes, when the caller has them) lets the conversion skip tests
    for scope attributes that occur nowhere in the graph.
    """
    library = read_library(graph_def) if graph_def.library.function else {}
    present = keys_in(serialized, (*SCOPE_ATTRS, DYNAMIC_INPUT))
    scoped = present.difference((DYNAMIC_INPUT,))
    listed, numbered = read_nodes(graph_def.node, library, scoped)
    nodes = {n.name: n for n in listed}
    wanted = fetch_names(fetches)
    if wanted:  # the reader numbered edges among all nodes: the pruned listing is numbered afresh
        listed = prune(nodes, listed, wanted)
        nodes = {n.name: n for n in listed}
        numbered = None
    exec_config = graph_config(graph_def, set(nodes) if wanted else None, DYNAMIC_INPUT in present)
    order = link(listed, numbered)
    if library:
        for n in order:
            if n.functions:
                body: list[str] = []
                for fname in n.functions:
                    info = library.get(fname)
                    if info is not None:
                        body.extend(info.op_types)
                n.body = ReadOnlyList(body)
    return GraphView(nodes=nodes, order=order, functions=library, tf_graph=tf_graph, exec_config=exec_config)
