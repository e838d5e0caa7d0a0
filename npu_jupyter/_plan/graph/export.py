"""A graph input as a GraphDef, together with the serialized bytes it was read from.

The planner needs both: the GraphDef to read nodes from, and bytes to search for the rare attribute
keys that only some graphs carry (scope attributes, a graph's own dynamic config), so that a graph
without them skips testing every node for them. ``tf.Graph.as_graph_def()`` serializes the graph in
C++ and parses the bytes into a GraphDef, then drops them: serializing that GraphDef again to get
them back cost 2.5-5 ms of a 75 ms cold plan of ResNet-50's training step. :func:`exported` runs the
same two steps itself and keeps the bytes.

TensorFlow's C++ export writes each node's attribute map in no fixed order (two exports of one graph
differ byte for byte), so the bytes answer "does this key occur anywhere" and nothing that depends on
order: the planner's view cache compares the GraphDefs they parse into, not the bytes.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Graph, GraphDef


def exported(graph: object) -> tuple[GraphDef, Graph | None, bytes]:
    """(GraphDef, tf.Graph or None, serialized bytes) for any input ``plan()`` accepts; one clear error otherwise.

    A ``tf.function`` ConcreteFunction is read through its FuncGraph. An object that only looks like a
    graph (it has ``as_graph_def`` and ``get_tensor_by_name``, like the emulator's view of one run's
    ancestors) is read through its own ``as_graph_def()``.
    """
    from tensorflow.core.framework import graph_pb2

    if isinstance(graph, graph_pb2.GraphDef):
        return graph, None, graph.SerializeToString()
    inner = getattr(graph, "graph", None)  # ConcreteFunction -> FuncGraph
    if inner is not None and hasattr(inner, "as_graph_def") and not hasattr(graph, "as_graph_def"):
        graph = inner
    if not (hasattr(graph, "as_graph_def") and hasattr(graph, "get_tensor_by_name")):
        raise TypeError(
            f"plan() needs a tf.Graph, a GraphDef or a tf.function ConcreteFunction, got {type(graph).__name__}"
        )
    tf_graph = cast("Graph", graph)  # a tf.Graph, a FuncGraph or a graph-like view, as the attributes show
    data = _export_bytes(tf_graph)
    if data is None:
        graph_def = tf_graph.as_graph_def()
        return graph_def, tf_graph, graph_def.SerializeToString()
    return parsed(data), tf_graph, data


def keys_in(serialized: bytes | None, keys: tuple[str, ...]) -> frozenset[str]:
    """The ``keys`` that occur as an attribute name in a graph's serialized bytes; all of them when the
    bytes are unknown.

    An attribute map entry always starts with its key field: the tag byte ``0x0A``, the key's length
    (one byte below 128) and the key. One pass of one pattern over the bytes looks for exactly those
    three together; ResNet-50's training step exports 1.3 MB. A pattern starting with a line feed is
    tried at the few offsets holding one, where the bare keys (all starting with ``_``, which names
    are full of) were tried at 96,000: 0.7 ms of a cold plan instead of 1.3 ms (a substring search
    per key took 1.9 ms).
    """
    if serialized is None:
        return frozenset(keys)
    return frozenset(match[2:].decode() for match in _pattern(keys).findall(serialized))


@functools.lru_cache(maxsize=None)
def _pattern(keys: tuple[str, ...]) -> re.Pattern[bytes]:
    """One compiled alternation of ``keys`` as attribute map keys: tag, length and key, literal bytes.

    With its length in front, no key's frame is the start of another's: the order does not matter.
    """
    framed = []
    for key in keys:
        raw = key.encode()
        if len(raw) >= 128:  # a two-byte length: never one of the planner's keys
            raise ValueError(f"attribute key {key!r} is too long for keys_in")
        framed.append(re.escape(b"\n" + bytes((len(raw),)) + raw))
    return re.compile(b"|".join(framed))


def parsed(data: bytes) -> GraphDef:
    """The GraphDef of exported bytes, as ``as_graph_def()`` gives it: an empty library is no field at all."""
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(data)
    if not graph_def.library.function:
        graph_def.ClearField("library")
    return cast("GraphDef", graph_def)


def _export_bytes(graph: Graph) -> bytes | None:
    """The bytes TensorFlow's C++ export writes for ``graph``, as ``as_graph_def()`` reads them; None
    where that export cannot be reached the same way.

    Only for a ``tf.Graph`` (or FuncGraph) whose export is TensorFlow's own: the steps are those of
    ``Graph._as_graph_def`` in TF 1.15, 2.6 and 2.21 (under the graph's lock, ``TF_GraphToGraphDef``
    into a buffer, whose bytes are then parsed). The C graph handle is a plain pointer up to TF 2.1x
    and a scoped handle (``.get()``) later. Any other object, or a TensorFlow whose internals moved,
    gets None and is read through ``as_graph_def()``.
    """
    try:
        from tensorflow.python.framework import c_api_util, ops

        try:
            from tensorflow.python.client import pywrap_tf_session as c_api
        except ImportError:  # TF 1.15
            from tensorflow.python import pywrap_tensorflow as c_api
        kind: Any = type(graph)  # TensorFlow's classes are untyped
        if not isinstance(graph, ops.Graph) or kind.as_graph_def is not ops.Graph.as_graph_def:
            return None
        if kind._as_graph_def is not ops.Graph._as_graph_def:
            return None
        tf_graph: ops.Graph = graph
        with tf_graph._lock, c_api_util.tf_buffer() as buf:
            handle = tf_graph._c_graph
            if hasattr(handle, "get"):
                with handle.get() as c_graph:
                    c_api.TF_GraphToGraphDef(c_graph, buf)
            else:
                c_api.TF_GraphToGraphDef(handle, buf)
            data = c_api.TF_GetBuffer(buf)
    except (ImportError, AttributeError, TypeError):
        return None
    return data if isinstance(data, bytes) else bytes(data)
