"""plan(..., adapter="tf2"): tf.function graphs placed by the TF2 adapter's npu_device rule.

Every expectation below comes from tf_adapter_2.x/npu_device/core (npu_device.cpp Supported,
optimizers/runtime/node_placer.cpp, npu_build_npu_op_optimizer.cpp,
npu_trans_resource_input_to_node_optimizer.cpp), not from the planner's own output:

* Lgamma, OptionalFromValue and ResourceScatterNdMin are not in the bundled npu_supported_ops.json;
  AsString and StringLength are listed but isGray (the TF1 adapter keeps them on the host in mixed
  computing; npu_device never reads isGray).
"""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._plan.planner import plan

SPEC = tf.TensorSpec([4], tf.float32)


def _by_type(p, op_type):
    """The decisions of ``op_type`` in plan ``p`` (at least one)."""
    found = [d for d in p.ops.values() if d.op_type == op_type]
    assert found, f"no {op_type} in {sorted({d.op_type for d in p.ops.values()})}"
    return found


def test_an_unsupported_op_runs_on_the_cpu_and_splits_the_npu_clusters():
    @tf.function
    def f(x):
        return tf.math.lgamma(x * 2.0) + 1.0

    p = plan(f.get_concrete_function(SPEC), adapter="tf2")
    (lgamma,) = _by_type(p, "Lgamma")
    assert lgamma.placement == "host"
    assert lgamma.placement_reason.startswith("npu_device: Lgamma is not in npu_supported_ops.json")
    assert "node_placer.cpp DeterminedSurelyNodes" in lgamma.placement_reason
    (mul,) = _by_type(p, "Mul")
    (add,) = _by_type(p, "AddV2")
    # float edges never spread CPU placement; a CPU op on the path keeps the two NPU clusters apart
    assert mul.placement == add.placement == "device"
    assert mul.cluster != add.cluster
    assert "npu_device" in mul.placement_reason
    assert "TF2 adapter (npu_device): mixed" in p.title
    assert any("mix mode" in note and "Lgamma" in note for note in p.notes)


def test_a_fully_supported_function_compiles_whole_including_its_variables():
    v = tf.Variable(tf.ones([4]))

    @tf.function
    def step(x):
        v.assign_sub(x * 0.1)
        return tf.reduce_sum(v * x)

    p = plan(step.get_concrete_function(SPEC), adapter="tf2")
    assert all(d.placement == "device" for d in p.ops.values())
    assert len(p.subgraphs) == 1
    assert "whole function on the NPU" in p.title
    (handle,) = [d for d in p.ops.values() if d.op_type == "Placeholder" and d.dtype_before == "resource"]
    assert "replaced by its NPU variable (_is_substitute)" in handle.placement_reason
    # the TF1 rule (mixed computing) keeps a captured resource handle off the device
    tf1 = plan(step.get_concrete_function(SPEC), {"mix_compile_mode": True})
    assert tf1.ops[handle.name].placement == "host"


def test_isgray_ops_the_tf1_adapter_keeps_on_the_host_are_on_the_npu():
    @tf.function
    def f(x):
        return tf.strings.length(tf.strings.as_string(x))

    cf = f.get_concrete_function(SPEC)
    tf2 = plan(cf, adapter="tf2")
    tf1 = plan(cf, {"mix_compile_mode": True})
    for op_type in ("AsString", "StringLength"):
        (d,) = _by_type(tf2, op_type)
        assert d.placement == "device", d.placement_reason
        assert "npu_device ignores isGray" in d.placement_reason
        assert tf1.ops[d.name].placement == "host"
        assert not tf2.ops[d.name].approximate  # no TF2 decision rests on the approximate isGray list


def test_a_string_return_value_pulls_its_producer_to_the_cpu():
    @tf.function
    def f(x):
        return tf.strings.as_string(x * 3.0)

    p = plan(f.get_concrete_function(SPEC), adapter="tf2")
    (as_string,) = _by_type(p, "AsString")
    assert as_string.placement == "host"
    assert "string tensor" in as_string.placement_reason and "SpreadCpuNode" in as_string.placement_reason
    (mul,) = _by_type(p, "Mul")
    assert mul.placement == "device"


def test_cpu_placement_spreads_along_variant_edges():
    @tf.function
    def f(x):
        opt = tf.experimental.Optional.from_value(x)
        return opt.get_value() * 2.0

    p = plan(f.get_concrete_function(SPEC), adapter="tf2")
    (source,) = _by_type(p, "OptionalFromValue")
    assert source.placement == "host" and "not in npu_supported_ops.json" in source.placement_reason
    (get,) = _by_type(p, "OptionalGetValue")  # supported, but it reads a variant from a CPU op
    assert get.placement == "host"
    assert "variant tensor" in get.placement_reason and "SpreadCpuNode" in get.placement_reason
    (mul,) = _by_type(p, "Mul")
    assert mul.placement == "device"


def test_a_cpu_resource_spreads_to_its_consumers():
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant([1, 2], tf.int64), tf.constant([0.5, 1.5])), 0.0
    )

    @tf.function
    def f(k):
        return table.lookup(k) * 2.0

    p = plan(f.get_concrete_function(tf.TensorSpec([4], tf.int64)), adapter="tf2")
    (find,) = _by_type(p, "LookupTableFindV2")
    assert find.placement == "host"
    assert "resource tensor" in find.placement_reason
    handle = p.ops[find.inputs[0]]
    assert handle.placement == "host" and "not an NPU variable" in handle.placement_reason
    (mul,) = _by_type(p, "Mul")
    assert mul.placement == "device"


def test_a_functional_op_whose_body_holds_an_unsupported_op_runs_on_the_cpu():
    @tf.function
    def f(x, flag):
        return tf.cond(flag, lambda: tf.math.lgamma(x), lambda: x * 2.0)

    p = plan(f.get_concrete_function(SPEC, tf.TensorSpec([], tf.bool)), adapter="tf2")
    (cond,) = [d for d in p.ops.values() if d.op_type in ("If", "StatelessIf")]
    assert cond.placement == "host"
    assert "Lgamma" in cond.placement_reason and "npu_device" in cond.placement_reason
    assert "PlaceCpuNodeSubgraphs" in cond.placement_reason


def test_a_call_of_a_supported_function_stays_on_the_npu():
    @tf.function
    def inner(x):
        return tf.nn.relu(x)

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    p = plan(outer.get_concrete_function(SPEC), adapter="tf2")
    (call,) = [d for d in p.ops.values() if d.op_type in ("StatefulPartitionedCall", "PartitionedCall")]
    assert call.placement == "device"
    assert "whole function on the NPU" in p.title


def test_a_variable_read_by_an_unsupported_op_is_the_adapters_compile_error():
    v = tf.Variable(tf.zeros([4]))

    @tf.function
    def f(idx, upd):
        tf.raw_ops.ResourceScatterNdMin(ref=v.handle, indices=idx, updates=upd)
        return v.read_value()

    p = plan(f.get_concrete_function(tf.TensorSpec([2, 1], tf.int32), tf.TensorSpec([2], tf.float32)), adapter="tf2")
    assert any("Failed spread place" in e and "has placed on npu" in e for e in p.errors)
    # the substitute is copied per consumer (CopyShareableNode): the read is not tied to the CPU op
    (read,) = _by_type(p, "ReadVariableOp")
    assert read.placement == "device", read.placement_reason


def test_bitcast_which_cann_registers_is_supported_and_keeps_the_function_whole():
    """Keras 3's accuracy metric bitcasts floats; CANN's op definitions register Bitcast (GE's BitcastPass)."""

    @tf.function
    def f(x):
        return tf.bitwise.bitwise_and(tf.bitcast(x * 2.0, tf.int32), 0x7FFFFFFF)

    p = plan(f.get_concrete_function(SPEC), adapter="tf2")
    (bitcast,) = _by_type(p, "Bitcast")
    assert bitcast.placement == "device" and not bitcast.approximate
    assert "whole function on the NPU" in p.title and not p.errors


def test_the_compile_error_names_the_variable_the_cause_and_whether_op_data_is_approximate():
    v = tf.Variable(tf.zeros([4]), name="weights")

    @tf.function
    def inner(x):
        return tf.math.lgamma(x) + v

    @tf.function
    def outer(x):
        return inner(x) * 2.0

    p = plan(outer.get_concrete_function(SPEC), adapter="tf2")
    (error,) = p.errors
    assert error.startswith("Failed spread place ")
    assert "(resource argument: variable weights:0) must run on the NPU" in error
    assert "The CPU placement starts at StatefulPartitionedCall" in error and "Lgamma" in error
    assert "This verdict rests on approximate op data: Lgamma is not in the bundled approximation" in error


def test_a_cluster_of_only_identities_stays_on_the_cpu():
    @tf.function
    def f(x):
        return tf.identity(tf.math.lgamma(x))

    p = plan(f.get_concrete_function(SPEC), adapter="tf2")
    identities = [d for d in p.ops.values() if d.op_type == "Identity"]
    assert identities and all(d.placement == "host" for d in identities)
    assert all("BuildNpuOp" in d.placement_reason for d in identities)
    assert p.subgraphs == []


def test_every_reason_names_the_npu_device_rule_and_precision_is_still_decided():
    @tf.function
    def f(x):
        return tf.matmul(tf.reshape(x, [2, 2]), tf.reshape(x, [2, 2]))

    p = plan(f.get_concrete_function(SPEC), {"precision_mode": "allow_fp32_to_fp16"}, adapter="tf2")
    assert all(d.placement_reason.startswith("npu_device: ") for d in p.ops.values())
    (mm,) = _by_type(p, "MatMul")
    assert mm.dtype_after == "float16"


def test_options_the_tf2_adapter_does_not_read_are_named_in_the_notes():
    @tf.function
    def f(x):
        return x * 2.0

    p = plan(f.get_concrete_function(SPEC), {"iterations_per_loop": 10}, adapter="tf2")
    assert any("does not read" in note and "iterations_per_loop" in note for note in p.notes)


def test_an_unknown_adapter_is_one_clear_error():
    @tf.function
    def f(x):
        return x * 2.0

    with pytest.raises(ValueError, match=r"adapter='tf3'.*'tf1'.*'tf2'"):
        plan(f.get_concrete_function(SPEC), adapter="tf3")


def test_the_tf1_rule_stays_the_default():
    @tf.function
    def f(x):
        return tf.math.lgamma(x)

    p = plan(f.get_concrete_function(SPEC))
    assert not any(d.placement_reason.startswith("npu_device") for d in p.ops.values())


def test_ops_joined_by_a_string_edge_follow_a_cpu_op_on_a_path_between_them():
    @tf.function
    def f(x):
        text = tf.strings.as_string(x)
        with tf.control_dependencies([text]):
            blocker = tf.math.lgamma(x)
        with tf.control_dependencies([blocker]):
            return tf.strings.length(text), blocker

    p = plan(f.get_concrete_function(SPEC), adapter="tf2")
    # AsString -> StringLength carries a string; Lgamma (CPU) lies on a path between them, so the
    # concrete group {AsString, Lgamma, StringLength} goes to the CPU together
    for op_type in ("AsString", "StringLength"):
        (d,) = _by_type(p, op_type)
        assert d.placement == "host", d.placement_reason
        assert "BuildConcreteCluster" in d.placement_reason


def test_without_npu_compile_scope_is_a_tf1_scope_npu_device_does_not_read():
    from npu_jupyter.scope import without_npu_compile_scope

    @tf.function
    def f(x):
        with without_npu_compile_scope():
            y = tf.square(x, name="kept")
        return y + 1.0

    cf = f.get_concrete_function(SPEC)
    assert plan(cf, {"mix_compile_mode": True}).ops["kept"].placement == "host"
    assert plan(cf, adapter="tf2").ops["kept"].placement == "device"


def _iterator_notes(p):
    return [n for n in p.notes if n.startswith("npu_device reads the dataset iterator on the NPU")]


def _iterator():
    return iter(tf.data.Dataset.from_tensors(tf.ones([4])).repeat())


def test_an_iterator_read_outside_a_loop_is_one_step_per_call_whatever_npu_loop_size_says():
    """Only a While fed by the mirrored iterator gets _consumed_iterators (npu_trans_resource_input_to_node_optimizer.cpp),
    and TryTransToNpuLoopGraph needs one (IsGraphNeedLoop): a Keras step function reading the iterator with
    IteratorGetNext runs one step per call. The note used to say NPU_LOOP_SIZE made it a device loop."""

    @tf.function
    def step(iterator):
        return tf.reduce_sum(next(iterator) * 2.0)

    p = plan(step.get_concrete_function(_iterator()), adapter="tf2")
    (note,) = _iterator_notes(p)
    assert "each call of this function is one step" in note and "reads it outside a loop" in note
    assert "runs NPU_LOOP_SIZE iterations" not in note


def _read_before_and_in_a_loop(body):
    @tf.function
    def loop(iterator):
        total = tf.reduce_sum(next(iterator))
        for _ in tf.range(3):
            total += body(next(iterator))
        return total

    return loop.get_concrete_function(_iterator())


def test_an_iterator_a_while_loop_takes_is_a_device_loop_only_for_a_function_wholly_on_the_npu():
    supported = plan(_read_before_and_in_a_loop(tf.reduce_sum), adapter="tf2")
    (note,) = _iterator_notes(supported)
    if "whole function on the NPU" in supported.title:
        assert "npu_device compiles it into the device graph, which runs NPU_LOOP_SIZE iterations per call" in note
        assert note.count("when that loop is the whole function") == 1  # a condition the plan does not check
    else:  # TF 2.6's loop takes a variant input, which cannot be copied to the NPU: mix mode there
        assert "variant input" in " ".join(supported.notes)
        assert "each call runs the loop as TensorFlow does" in note
    mixed = plan(_read_before_and_in_a_loop(lambda x: tf.reduce_sum(tf.math.lgamma(x))), adapter="tf2")
    (note,) = _iterator_notes(mixed)
    assert "each call runs the loop as TensorFlow does" in note and "only of a function compiled whole" in note
