"""Nodes added by hand carry their attrs in the proto field each Python value stands for."""

from __future__ import annotations

import numpy as np


def test_each_attr_value_lands_in_its_proto_field(tf):
    from tensorflow.core.framework import graph_pb2

    from npu_jupyter._runtime.observe.node_defs import add_node

    graph = graph_pb2.GraphDef()
    value = tf.make_tensor_proto(np.array([1.0, 2.0], np.float32))
    node = add_node(
        graph.node,
        "n",
        "Const",
        ["^a"],
        T=("type", tf.float16.as_datatype_enum),
        Tout=("types", [tf.float32.as_datatype_enum, tf.int32.as_datatype_enum]),
        flag=True,
        count=3,
        label="x",
        value=value,
    )
    assert graph.node[0] is node or graph.node[0] == node
    assert list(node.input) == ["^a"] and node.op == "Const"
    assert node.attr["T"].type == tf.float16.as_datatype_enum
    assert list(node.attr["Tout"].list.type) == [tf.float32.as_datatype_enum, tf.int32.as_datatype_enum]
    assert node.attr["flag"].b is True and node.attr["count"].i == 3 and node.attr["label"].s == b"x"
    assert tf.make_ndarray(node.attr["value"].tensor).tolist() == [1.0, 2.0]
