"""exported(): a graph input as a GraphDef plus the bytes it was read from, and the view cache built on it."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

from tensorflow.core.framework import graph_pb2

from npu_jupyter._plan import planner
from npu_jupyter._plan.graph.export import _export_bytes, exported
from npu_jupyter._plan.planner import plan
from npu_jupyter._runtime.session.plan_input import RunGraphView


def _tf1_graph():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2, 2], name="x")
        w = v1.get_variable("w", [2, 2], initializer=v1.ones_initializer())
        tf.nn.relu(tf.matmul(x, w), name="y")
    return g


def _function_with_a_library():
    @tf.function
    def inner(a):
        return a * 2.0

    @tf.function
    def outer(a):
        return tf.nn.relu(inner(a))

    return outer.get_concrete_function(tf.TensorSpec([3], tf.float32))


def _parsed(data):
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(data)
    return graph_def


@pytest.mark.parametrize("make", [_tf1_graph, _function_with_a_library], ids=["tf1_graph", "func_graph_with_library"])
def test_the_graph_def_and_bytes_are_tensorflows_own_export(make):
    source = make()
    tf_graph = getattr(source, "graph", source)
    graph_def, got_graph, data = exported(source)
    assert got_graph is tf_graph
    assert graph_def == tf_graph.as_graph_def(), "the same GraphDef as_graph_def() gives (an empty library dropped)"
    assert _export_bytes(tf_graph) is not None, "this TensorFlow's export is reached directly: no second serialization"
    parsed = _parsed(data)
    if not parsed.library.function:
        parsed.ClearField("library")
    assert parsed == graph_def, "the bytes are the ones the GraphDef was read from"


def test_a_graph_def_is_taken_as_it_is_and_a_graph_like_view_through_its_own_export():
    g = _tf1_graph()
    graph_def = g.as_graph_def()
    assert exported(graph_def)[0] is graph_def and exported(graph_def)[1] is None
    cut = graph_pb2.GraphDef()
    cut.node.extend(n for n in graph_def.node if n.name == "x")
    view = RunGraphView(g, cut)
    assert _export_bytes(view) is None
    got, got_graph, data = exported(view)
    assert got is cut and got_graph is view and _parsed(data) == cut


def test_a_graph_whose_class_exports_differently_is_read_through_its_own_as_graph_def():
    class Renaming(tf.Graph):
        def as_graph_def(self, *args, **kwargs):
            out = super().as_graph_def(*args, **kwargs)
            out.node[0].name = "renamed"
            return out

    g = Renaming()
    with g.as_default():
        v1.placeholder(tf.float32, [2], name="x")
    assert _export_bytes(g) is None
    assert [n.name for n in exported(g)[0].node] == ["renamed"]


def test_bad_input_is_one_clear_error():
    with pytest.raises(
        TypeError, match="plan\\(\\) needs a tf.Graph, a GraphDef or a tf.function ConcreteFunction, got int"
    ):
        exported(3)


def test_a_replan_of_an_unchanged_graph_reuses_its_view_though_each_export_orders_attributes_anew():
    g = _tf1_graph()
    first = planner._view(g, None)
    assert planner._view(g, None) is first
    assert planner._view(g, ["y"]) is not first, "other fetches: another view"
    kept = planner._VIEW_CACHE[g][1]
    assert isinstance(kept, bytes), "the cache keeps the export's bytes, a quarter of the parsed GraphDef's memory"


def test_a_replan_sees_an_attribute_changed_to_a_value_of_the_same_size():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2, 2], name="x")
        tf.matmul(x, x, name="mm")
    cfg = {"precision_mode": "allow_fp32_to_fp16"}
    mm = g.get_operation_by_name("mm")
    mm._set_attr("_keep_dtype", v1.AttrValue(b=True))
    assert plan(g, cfg, soc="Ascend910B").ops["mm"].dtype_after == "float32"
    mm._set_attr("_keep_dtype", v1.AttrValue(b=False))  # same attribute, same size: only the value differs
    assert plan(g, cfg, soc="Ascend910B").ops["mm"].dtype_after == "float16"


def test_keys_in_finds_each_key_the_bytes_hold_and_assumes_all_when_there_are_none():
    from npu_jupyter._plan.graph.export import keys_in
    from npu_jupyter._plan.graph.graph_exec import DYNAMIC_INPUT
    from npu_jupyter._plan.graph.node_reading import SCOPE_ATTRS

    keys = (*SCOPE_ATTRS, DYNAMIC_INPUT)
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        y = tf.identity(x, name="y")
    y.op._set_attr("_keep_dtype", tf.compat.v1.AttrValue(i=1))
    _, _, data = exported(g)
    assert keys_in(data, keys) == {"_keep_dtype"}
    y.op._set_attr(DYNAMIC_INPUT, tf.compat.v1.AttrValue(b=True))
    x.op._set_attr("_NoNeedOptimize", tf.compat.v1.AttrValue(b=True))
    assert keys_in(exported(g)[2], keys) == {"_keep_dtype", DYNAMIC_INPUT, "_NoNeedOptimize"}
    assert keys_in(None, keys) == set(keys)  # bytes unknown: every key may be there
    assert keys_in(b"", keys) == frozenset()
