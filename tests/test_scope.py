"""The adapter's scopes stamp exactly the adapter's node attributes, in v1 graphs and tf.function graphs."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2

from npu_jupyter import scope


def _v1_graph(build):
    graph = tf.Graph()
    with graph.as_default():
        build()
    return graph


def test_without_npu_compile_scope_marks_only_ops_created_inside():
    def build():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        with scope.without_npu_compile_scope():
            y = tf.add(tf.multiply(x, 1.0, name="mul"), 0.0, name="add")
        tf.reduce_sum(tf.abs(y), name="cost")

    graph = _v1_graph(build)
    marked = {op.name for op in graph.get_operations() if "_without_npu_compile" in op.node_def.attr}
    assert marked == {"mul", "mul/y", "add", "add/y"}
    attr = graph.get_operation_by_name("mul").node_def.attr["_without_npu_compile"]
    assert attr == attr_value_pb2.AttrValue(b=True) and attr.WhichOneof("value") == "b"
    assert graph.get_operation_by_name("mul").get_attr("_without_npu_compile") is True


def test_keep_dtype_scope_sets_int_one_like_todays_adapter():
    def build():
        a = tf.constant([[1.0, 2.0]], name="a")
        with scope.keep_dtype_scope():
            tf.matmul(a, a, transpose_b=True, name="mm")

    op = _v1_graph(build).get_operation_by_name("mm")
    attr = op.node_def.attr["_keep_dtype"]
    assert attr == attr_value_pb2.AttrValue(i=1) and attr.WhichOneof("value") == "i"


def test_nested_scopes_combine_and_survive_graph_def_serialization():
    def build():
        with scope.without_npu_compile_scope(), scope.keep_dtype_scope():
            tf.constant(1.0, name="both")
        with scope.keep_dtype_scope():
            tf.constant(2.0, name="keep_only")

    nodes = {n.name: n for n in _v1_graph(build).as_graph_def().node}
    assert set(nodes["both"].attr) >= {"_without_npu_compile", "_keep_dtype"}
    assert "_keep_dtype" in nodes["keep_only"].attr and "_without_npu_compile" not in nodes["keep_only"].attr


def test_scopes_work_inside_tf_function_graphs():
    @tf.function
    def step(x):
        with scope.without_npu_compile_scope():
            host = tf.square(x, name="host_square")
        return tf.sqrt(host, name="device_sqrt")

    graph = step.get_concrete_function(tf.TensorSpec([3], tf.float32)).graph
    ops = {op.name: op for op in graph.get_operations()}
    assert ops["host_square"].get_attr("_without_npu_compile") is True
    assert "_without_npu_compile" not in ops["device_sqrt"].node_def.attr
    assert float(step(tf.constant([4.0, 9.0, 16.0]))[1]) == 9.0


def test_keras_layers_called_in_a_scope_are_marked():
    layer = tf.keras.layers.Dense(2)

    @tf.function
    def forward(x):
        with scope.keep_dtype_scope():
            return layer(x)

    graph = forward.get_concrete_function(tf.TensorSpec([1, 3], tf.float32)).graph
    matmuls = [op for op in graph.get_operations() if op.type == "MatMul"]
    assert matmuls and all(op.get_attr("_keep_dtype") == 1 for op in matmuls)


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: scope.npu_stage_scope(3), {"_stage_level": attr_value_pb2.AttrValue(i=3)}),
        (scope.npu_mem_type_scope, {"_output_memory_type": attr_value_pb2.AttrValue(i=1)}),
        (
            lambda: scope.npu_weight_prefetch_scope(2, 1024),
            {"_buffer_pool_id": attr_value_pb2.AttrValue(i=2), "_buffer_pool_size": attr_value_pb2.AttrValue(i=1024)},
        ),
        (
            lambda: scope.op_specified_engine_scope("AIcoreEngine", "AIcoreKernel"),
            {
                "_specified_engine_name": attr_value_pb2.AttrValue(s=b"AIcoreEngine"),
                "_specified_kernel_lib_name": attr_value_pb2.AttrValue(s=b"AIcoreKernel"),
            },
        ),
        (lambda: scope.npu_qos_label_scope(5), {"_qos_service_label": attr_value_pb2.AttrValue(i=5)}),
        (lambda: scope.subgraph_multi_dims_scope(1), {"_subgraph_multi_dims_index": attr_value_pb2.AttrValue(i=1)}),
        (scope.npu_optimizer_scope, {"_optimizer": attr_value_pb2.AttrValue(b=True)}),
        (scope.disable_autofuse, {"_disable_autofuse_scope": attr_value_pb2.AttrValue(b=True)}),
        (lambda: scope.limit_core_num_scope("0", "8"), {"_op_vectorcore_num": attr_value_pb2.AttrValue(s=b"8")}),
        (lambda: scope.npu_variable_scope("host"), {"_variable_placement": attr_value_pb2.AttrValue(s=b"host")}),
    ],
)
def test_other_adapter_scopes_set_their_attributes(make, expected):
    def build():
        with make():
            tf.constant(1.0, name="c")

    attrs = _v1_graph(build).get_operation_by_name("c").node_def.attr
    assert {k: attrs[k] for k in expected} == expected


def test_bad_scope_arguments_are_refused_like_the_adapter():
    with pytest.raises(ValueError, match="placement"):
        scope.npu_variable_scope("gpu")
    with pytest.raises(ValueError, match="string"):
        scope.limit_core_num_scope("0", 8)
    with pytest.raises(ValueError, match="> 0"):
        scope.limit_core_num_scope("0", "0")
    with pytest.raises(ValueError, match="positive"):
        scope.npu_graph_slice_scope(0)


def test_name_scopes_produce_the_names_the_adapter_looks_for():
    def build():
        with scope.npu_recompute_scope():
            tf.constant(1.0, name="r")
        with scope.npu_graph_slice_scope(4):
            tf.constant(1.0, name="s")

    names = {op.name for op in _v1_graph(build).get_operations()}
    assert names == {"NpuRecompute/r", "SliceNum-4-NpuGraphSlicing4/s"}
