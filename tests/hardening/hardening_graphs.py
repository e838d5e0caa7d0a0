"""Small real TensorFlow graphs for the hardening tests, and copies with arbitrary (hostile) node names.

TensorFlow refuses node names outside ``[A-Za-z0-9.][A-Za-z0-9_.\\-/>]*`` when it builds a graph, but a
GraphDef is just a proto: a user can load one from disk with any names. ``renamed`` rewrites a real
GraphDef's node names (and every input reference to them) so the planner and renderers see them.
"""

from __future__ import annotations

from typing import Any


def tiny_graph() -> Any:
    """x[4,8] -> MatMul(w) -> Relu -> Sum: a cube op, a vector op and a reduction."""
    import numpy as np
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        w = tf.constant(np.full((8, 3), 0.5, np.float32), name="w")
        y = tf.nn.relu(tf.matmul(x, w, name="mm"), name="y")
        tf.reduce_sum(y, name="total")
    return graph


def tiny_graph_def() -> Any:
    return tiny_graph().as_graph_def()


def renamed(graph_def: Any, names: dict[str, str]) -> Any:
    """A copy of ``graph_def`` whose nodes are renamed by ``names`` (old -> new), inputs rewritten."""
    from tensorflow.core.framework import graph_pb2

    out = graph_pb2.GraphDef()
    out.CopyFrom(graph_def)
    for node in out.node:
        node.name = names.get(node.name, node.name)
        for i, ref in enumerate(node.input):
            control = ref.startswith("^")
            base, sep, port = ref.lstrip("^").partition(":")
            new = names.get(base, base)
            node.input[i] = ("^" if control else "") + new + (sep + port if sep else "")
    return out


def set_string_attr(graph_def: Any, node_name: str, attr: str, value: str) -> None:
    """Give a node an extra string attribute (attribute strings are user data too)."""
    for node in graph_def.node:
        if node.name == node_name:
            node.attr[attr].s = value.encode("utf-8", "surrogatepass")
            return
    raise KeyError(node_name)
