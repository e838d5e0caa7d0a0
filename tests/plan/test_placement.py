"""Device candidates and host propagation (tests/data/reference/ADAPTER-FACTS.md §3.2–§3.4) on real TF graphs."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

from npu_jupyter._plan.placement import parse_in_out_pair
from npu_jupyter._plan.planner import plan
from npu_jupyter.scope import without_npu_compile_scope

MIX = {"mix_compile_mode": True}


def _seed_example():
    """The mixed-computing sess.run example of the adapter docs (seeds/mixed-computing.txt)."""
    g = tf.Graph()
    with g.as_default():
        x = v1.random_normal([2], name="X")
        y = v1.random_normal([2], name="Y")
        with without_npu_compile_scope():
            pred = tf.add(tf.multiply(x, 1.0, name="scaled"), 0.0, name="pred")
        tf.reduce_sum(tf.abs(pred - y, name="abs"), name="cost")
    return g


def test_ops_in_without_npu_compile_scope_run_on_the_host_in_mixed_computing():
    p = plan(_seed_example(), MIX)
    for name in ("scaled", "pred", "scaled/y", "pred/y"):
        assert p.ops[name].placement == "host"
        assert p.ops[name].engine == "HOST"
        assert "without_npu_compile_scope" in p.ops[name].placement_reason


def test_seed_example_reduce_sum_runs_on_the_device_as_today_s_adapter_decides():
    # The doc comment says "The reduce_sum node is executed on the host", but today's adapter seeds
    # every declared op outside the scope (Sum -> ReduceSum is declared), so it joins a GeOp.
    p = plan(_seed_example(), MIX)
    assert p.ops["cost"].placement == "device"
    assert p.ops["abs"].placement == "device"
    assert p.ops["cost"].cluster == p.ops["abs"].cluster


def test_without_npu_compile_scope_is_honoured_in_full_offload_too():
    p = plan(_seed_example())
    assert p.ops["pred"].placement == "host"
    assert "without_npu_compile_scope" in p.ops["pred"].placement_reason


def test_py_func_has_no_device_kernel_and_runs_on_the_host_in_mixed_computing():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        y = v1.py_func(np.square, [x], tf.float32, name="square")
        tf.nn.relu(y, name="relu")
    p = plan(g, MIX)
    assert p.ops["square"].placement == "host"
    assert p.ops["square"].placement_reason == "PyFunc has no device kernel: runs on the host (mixed computing)"
    assert p.ops["relu"].placement == "device"


def test_op_kept_on_host_in_mixed_computing_is_offloaded_in_full_offload():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        tf.strings.as_string(x, name="text")
    assert plan(g, MIX).ops["text"].placement == "host"
    assert "mixed computing" in plan(g, MIX).ops["text"].placement_reason
    assert plan(g).ops["text"].placement == "device"


def _string_graph(max_size: bool = False):
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.string, [3], name="a")
        joined = tf.strings.join([a, a], name="joined")  # StringJoin: never offloaded
        num = tf.strings.to_number(joined, name="num")
        tf.multiply(num, 2.0, name="double")
        if max_size:
            num.op._set_attr("_op_max_size", tf.compat.v1.AttrValue(i=1024))  # util.set_op_tensor_max_size
    return g


def test_string_edge_may_cross_into_the_device_when_iterations_per_loop_is_one():
    p = plan(_string_graph())
    assert p.ops["joined"].placement == "host"
    assert p.ops["num"].placement == "device"


def test_string_edge_pulls_its_consumer_to_the_host_when_iterations_per_loop_is_above_one():
    p = plan(_string_graph(), {"iterations_per_loop": 10})
    assert p.ops["num"].placement == "host"
    assert "string tensors never cross a GeOp boundary" in p.ops["num"].placement_reason


def test_op_max_size_exempts_a_node_from_the_string_rule():
    p = plan(_string_graph(max_size=True), {"iterations_per_loop": 10})
    assert p.ops["num"].placement == "device"


def _resource_graph():
    g = tf.Graph()
    with g.as_default():
        with without_npu_compile_scope():
            v = v1.get_variable("v", [3], initializer=v1.zeros_initializer(), use_resource=True)
        x = v1.placeholder(tf.float32, [3], name="x")
        tf.add(v.read_value(), x, name="sum")
    return g


def test_resource_edge_from_a_host_variable_pulls_the_read_to_the_host():
    p = plan(_resource_graph())
    reads = [d for d in p.ops.values() if d.op_type == "ReadVariableOp"]
    assert reads and all(d.placement == "host" for d in reads)
    outside = [d for d in reads if "without_npu_compile_scope" not in d.placement_reason]
    assert outside and "reads a resource tensor from host op v" in outside[0].placement_reason
    assert p.ops["sum"].placement == "device"
    assert not any(t.dtype == "resource" for t in p.transfers)


def test_mixed_computing_keeps_resource_ops_that_do_not_read_a_var_handle_on_the_host():
    var = tf.Variable(tf.ones([2, 2]))

    @tf.function
    def with_var(x):
        return tf.matmul(x, var.read_value())

    fn = with_var.get_concrete_function(tf.TensorSpec([2, 2], tf.float32))
    p = plan(fn, MIX)
    read = next(d for d in p.ops.values() if d.op_type == "ReadVariableOp")
    assert read.placement == "host"  # its handle is a captured placeholder, not a VarHandleOp
    assert "VarHandleOp" in read.placement_reason
    assert plan(fn).ops[read.name].placement == "device"


def _ref_graph():
    g = tf.Graph()
    with g.as_default():
        w = v1.Variable(tf.ones([3]), name="w", use_resource=False)
        with without_npu_compile_scope():
            v1.assign(w, tf.zeros([3]), name="reset")
        tf.multiply(w, 2.0, name="scaled")
    return g


def test_ref_variable_feeding_a_host_assign_is_pulled_to_the_host():
    p = plan(_ref_graph())
    assert p.ops["w"].placement == "host"
    assert "ref input of host op reset" in p.ops["w"].placement_reason


def test_variable_placement_host_keeps_variables_on_the_host():
    g = tf.Graph()
    with g.as_default():
        v = v1.get_variable("v", [3], initializer=v1.zeros_initializer(), use_resource=True)
        tf.add(v.read_value(), 1.0, name="plus")
    p = plan(g, {"mix_compile_mode": True, "variable_placement": "Host"})
    assert p.ops["v"].placement == "host"
    assert "variable_placement='Host'" in p.ops["v"].placement_reason
    assert plan(g, MIX).ops["v"].placement == "device"


def _chain():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        a = tf.nn.relu(x, name="a")
        b = tf.exp(a, name="b")
        c = tf.sigmoid(b, name="c")
        tf.tanh(c, name="d")
    return g


def test_in_out_pair_flag_true_offloads_exactly_the_range():
    cfg = {"mix_compile_mode": True, "in_out_pair": "[[['a'], ['c']]]"}
    p = plan(_chain(), cfg)
    assert [n for n, d in p.ops.items() if d.placement == "device"] == ["a", "b", "c"]
    assert "inside the in_out_pair range" in p.ops["b"].placement_reason
    assert "outside every in_out_pair range" in p.ops["d"].placement_reason


def test_in_out_pair_flag_false_offloads_everything_but_the_range():
    cfg = {"mix_compile_mode": True, "in_out_pair": "[[['a'], ['c']]]", "in_out_pair_flag": False}
    p = plan(_chain(), cfg)
    assert p.ops["b"].placement == "host"
    assert p.ops["d"].placement == "device"


def test_in_out_pair_node_the_device_cannot_run_is_an_error():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        a = tf.nn.relu(x, name="a")
        sq = v1.py_func(np.square, [a], tf.float32, name="square")
        tf.exp(sq, name="b")
    p = plan(g, {"mix_compile_mode": True, "in_out_pair": "[[['a'], ['b']]]"})
    assert "square is not supported npu node." in p.errors


def test_malformed_in_out_pair_in_a_dict_config_raises_the_option_error():
    from npu_jupyter._options.errors import NpuConfigError

    with pytest.raises(NpuConfigError, match="in_out_pair.*malformed"):
        plan(_chain(), {"mix_compile_mode": True, "in_out_pair": "[['a']]"})


def test_malformed_in_out_pair_imported_from_a_session_config_is_an_error_with_the_adapter_text():
    from npu_jupyter._options.config import NpuConfig

    proto = NpuConfig(mix_compile_mode=True).to_config_proto()
    (npu,) = [o for o in proto.graph_options.rewrite_options.custom_optimizers if o.name == "NpuOptimizer"]
    npu.parameter_map["in_out_pair"].s = b"[['a']]"
    p = plan(_chain(), NpuConfig.from_config_proto(proto))  # imports keep bad values as the adapter reads them
    assert "in_out_pair: [['a']] is invalid." in p.errors
    assert any(e.startswith("in_out_pair:") and "malformed" in e for e in p.errors)


def test_in_out_pair_parser_reads_the_documented_example():
    text = "[[['import/conv2d_1/convolution'], ['import/conv2d_59/BiasAdd', 'import/conv2d_67/BiasAdd']]]"
    assert parse_in_out_pair(text) == [
        (["import/conv2d_1/convolution"], ["import/conv2d_59/BiasAdd", "import/conv2d_67/BiasAdd"])
    ]
    assert parse_in_out_pair("[[['a'], ['b']], [['c']]]") == [(["a"], ["b"])]  # short pair ignored


def test_dataset_and_iterator_ops_stay_on_the_host_and_the_model_is_offloaded():
    import models

    m = models.dataset_pipeline_v1()
    p = plan(m.graph, fetches=list(m.fetches))
    datasets = [d for d in p.ops.values() if d.op_type.endswith("Dataset") or d.op_type.endswith("DatasetV2")]
    getnext = [d for d in p.ops.values() if d.op_type == "IteratorGetNext"]
    assert getnext and all(d.placement == "host" for d in getnext)
    assert all(d.placement == "host" for d in datasets)
    assert any(d.op_type == "MatMul" and d.placement == "device" for d in p.ops.values())


def test_whole_graph_with_iterator_initialiser_is_a_dataset_graph_and_not_offloaded():
    import models

    m = models.dataset_pipeline_v1()
    p = plan(m.graph)
    assert all(d.placement == "host" for d in p.ops.values())
    assert any("dataset initialisation graph" in w for w in p.warnings)


def test_a_tfrecord_iterator_initializer_is_a_note_and_compute_beside_it_still_warns(tmp_path):
    """TFRecordDataset(files) reshapes its file names (a Reshape into TensorSliceDataset): ModelZoo
    CycleGAN_ID0716's iterator initializer read "warning: Nothing is offloaded", which every script
    reading TFRecords runs into. An op that only feeds the pipeline is the pipeline's; a sink is not."""
    g = tf.Graph()
    with g.as_default():
        ds = v1.data.TFRecordDataset(str(tmp_path / "x.tfrecords")).repeat().batch(2)
        iterator = v1.data.make_initializable_iterator(ds)
        loss = tf.reduce_sum(tf.constant([1.0, 2.0]) * 3.0, name="loss")
    init = plan(g, fetches=[iterator.initializer.name])
    assert "Reshape" in {d.op_type for d in init.ops.values()}
    assert not init.warnings and any("Nothing to offload: dataset initialisation" in n for n in init.notes)
    whole = plan(g, fetches=[iterator.initializer.name, loss.op.name])
    assert any("Nothing is offloaded: dataset initialisation" in w for w in whole.warnings)


def test_use_off_line_false_offloads_nothing():
    p = plan(_chain(), {"use_off_line": False})
    assert {d.placement for d in p.ops.values()} == {"host"}
    assert "use_off_line is False" in p.ops["a"].placement_reason


def _calls(body):
    @tf.function
    def inner(a):
        return body(a)

    @tf.function
    def outer(a):
        return inner(a) * 2.0

    return outer.get_concrete_function(tf.TensorSpec([4], tf.float32))


def test_function_call_runs_on_the_device_when_every_op_of_its_body_does():
    fn = _calls(lambda a: tf.nn.relu(a) + 1.0)
    p = plan(fn)
    call = next(d for d in p.ops.values() if d.body_ops)
    assert call.placement == "device"
    assert "Relu" in call.body_ops


def test_function_call_with_a_py_func_inside_stays_on_the_host():
    fn = _calls(lambda a: tf.numpy_function(np.square, [a], tf.float32))
    p = plan(fn, MIX)
    call = next(d for d in p.ops.values() if d.body_ops)
    assert call.placement == "host"
    assert "PyFunc" in call.placement_reason or "no device kernel" in call.placement_reason


def test_enable_data_pre_proc_offloads_the_iterator_and_get_next_as_a_pair():
    import models

    m = models.dataset_pipeline_v1()
    p = plan(m.graph, {"enable_data_pre_proc": True}, fetches=list(m.fetches))
    pair = [d for d in p.ops.values() if d.op_type in ("IteratorV2", "IteratorGetNext")]
    assert len(pair) == 2 and all(d.placement == "device" for d in pair)
    assert "enable_data_pre_proc" in pair[0].placement_reason
    assert all(d.placement == "host" for d in p.ops.values() if d.op_type.endswith("Dataset"))


def _one_shot_model():
    g = tf.Graph()
    with g.as_default():
        ds = tf.data.Dataset.from_tensor_slices(np.ones([16, 8], np.float32)).batch(4)
        x = v1.data.make_one_shot_iterator(ds).get_next(name="batch")
        tf.reduce_sum(tf.matmul(x, tf.ones([8, 2])), name="loss")
    return g


def test_get_next_of_a_one_shot_iterator_says_the_adapter_pairs_only_initializable_iterators():
    p = plan(_one_shot_model(), {"enable_data_pre_proc": True}, fetches=["loss"])
    reason = p.ops["batch"].placement_reason
    assert p.ops["batch"].placement == "host"
    assert "reads the OneShotIterator" in reason and "not an Iterator/IteratorV2" in reason
    assert "not paired with a GetNext" not in reason


def test_one_shot_iterator_with_iterations_per_loop_above_one_is_the_adapter_error():
    p = plan(_one_shot_model(), {"iterations_per_loop": 10}, fetches=["loss"])
    assert any(e.startswith("iterator_per_loop only support 1 when using OneShotIterator") for e in p.errors)
    assert not plan(_one_shot_model(), fetches=["loss"]).errors


def test_string_dataset_outputs_without_data_pre_processing_get_the_adapter_warning():
    g = tf.Graph()
    with g.as_default():
        ds = tf.data.Dataset.from_tensor_slices(["a", "bb", "ccc"]).repeat()
        item = v1.data.make_one_shot_iterator(ds).get_next(name="item")
        tf.strings.length(item, name="size")
    p = plan(g, fetches=["size"])
    assert "Dataset outputs have string output_type, please set enable_data_pre_proc=True." in p.warnings


def test_host_op_inside_a_v1_while_loop_keeps_the_whole_loop_on_the_host(monkeypatch):
    from tensorflow.python.ops import control_flow_util

    monkeypatch.setattr(control_flow_util, "ENABLE_CONTROL_FLOW_V2", False)
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")

        def body(i, acc):
            step = v1.py_func(np.negative, [acc], tf.float32, name="host_step")
            step.set_shape([4])
            return i + 1, tf.exp(step, name="loop_exp")

        _, out = v1.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), x], name="loop")
        tf.nn.relu(out, name="after")
    assert any(op.type == "Enter" for op in g.get_operations())
    p = plan(g, MIX)
    # Exit nodes belong to the enclosing frame, as in TensorFlow's control-flow info
    loop_ops = [d for d in p.ops.values() if d.name.startswith("loop/") and d.op_type not in ("Const", "Exit")]
    assert loop_ops and all(d.placement == "host" for d in loop_ops)
    assert any("while loop" in d.placement_reason for d in loop_ops)
    assert p.ops["after"].placement == "device"


# ---- ops rewritten before partitioning (_plan.rewrites) ----------------------------------------


def _unary_composition(op_names):
    """x -> _UnaryOpsComposition(op_names) -> Square, as grappler leaves a CPU graph."""
    from tensorflow.core.framework import attr_value_pb2, graph_pb2, types_pb2

    gd = graph_pb2.GraphDef()
    x = gd.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    fused = gd.node.add(name="fused", op="_UnaryOpsComposition", input=["x"])
    fused.attr["T"].type = types_pb2.DT_FLOAT
    fused.attr["op_names"].CopyFrom(
        attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(s=[o.encode() for o in op_names]))
    )
    sq = gd.node.add(name="out", op="Square", input=["fused"])
    sq.attr["T"].type = types_pb2.DT_FLOAT
    return gd


def test_fused_unary_chain_is_placed_as_the_ops_the_adapter_splits_it_into():
    p = plan(_unary_composition(["Relu", "Tanh"]))
    d = p.ops["fused"]
    assert d.placement == "device" and d.engine == "AI_CORE"  # the table's own entry says AI CPU
    assert "splits it back" in d.placement_reason and "Relu, Tanh" in d.placement_reason
    assert d.body_ops == ["Relu", "Tanh"]
    assert d.cluster == p.ops["out"].cluster


def test_fused_unary_chain_with_an_op_without_device_kernel_names_it():
    p = plan(_unary_composition(["Relu", "NoSuchUnaryOp"]), MIX)
    d = p.ops["fused"]
    assert d.placement == "host" and "NoSuchUnaryOp has no device kernel" in d.placement_reason


def test_accumulate_n_reason_says_the_adapter_fuses_the_rewrite_back():
    from tensorflow.core.framework import graph_pb2, types_pb2

    gd = graph_pb2.GraphDef()
    for name in ("a", "b"):
        n = gd.node.add(name=name, op="Placeholder")
        n.attr["dtype"].type = types_pb2.DT_FLOAT
    acc = gd.node.add(name="AccumulateNV2", op="AccumulateNV2", input=["a", "b"])
    acc.attr["T"].type = types_pb2.DT_FLOAT
    acc.attr["N"].i = 2
    acc.attr["shape"].shape.unknown_rank = True
    d = plan(gd).ops["AccumulateNV2"]
    assert d.placement == "device" and "fuses them back into this one op" in d.placement_reason


def test_dynamic_dims_with_two_get_nexts_in_one_run_graph_is_the_adapter_abort():
    g = tf.Graph()
    with g.as_default():
        outs = []
        for k in range(2):
            ds = tf.data.Dataset.from_tensor_slices(np.ones([8, 4], np.float32)).batch(2)
            outs.append(v1.data.make_initializable_iterator(ds).get_next(name=f"batch{k}"))
        tf.add(outs[0], outs[1], name="both")
    dims = {"input_shape": "batch0:-1,4", "dynamic_dims": "2;4", "dynamic_node_type": 0}
    p = plan(g, dims, fetches=["both"])
    assert any(e.startswith("dynamic dims func can not support graph with 2 IteratorGetNext node.") for e in p.errors)
    assert not any("IteratorGetNext node" in e for e in plan(g, dims, fetches=["batch0"]).errors)
