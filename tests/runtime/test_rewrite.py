"""Storage rounding in the private graph copy."""

from __future__ import annotations

import numpy as np
import pytest
from rounding_forms import rounding_trips

from npu_jupyter._runtime.rewrite import ROUND_MARKER, build_private_graph, needs_rewrite

# Every test here runs with both rounding forms (Cast pairs and the NpuEmuRound kernel): same numbers.
pytestmark = pytest.mark.usefixtures("rounding")


def _graph(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        y = tf.add(x, tf.constant(1e-4), name="y")
        tf.identity(y, name="out")
    return g


def _run(private, fetch, feeds):
    import tensorflow as tf

    with tf.compat.v1.Session(graph=private.graph) as sess:
        return sess.run(private.tensor_name(fetch), feeds)


def test_float32_plan_gives_an_exact_copy_without_casts(tf, hand):
    g = _graph(tf)
    private = build_private_graph(g, hand.plan(g))
    assert private.roundings == []
    assert [op.name for op in private.graph.get_operations()] == [op.name for op in g.get_operations()]
    assert not needs_rewrite(hand.plan(g), g)


def test_float16_output_rounds_one_plus_1e4_to_one(tf, hand):
    g = _graph(tf)
    plan = hand.plan(g, {"AddV2"})
    assert needs_rewrite(plan, g)
    private = build_private_graph(g, plan)
    value = _run(private, "out:0", {"x:0": np.array([1.0, 2.0], np.float32)})
    np.testing.assert_array_equal(value, [1.0, 2.0])
    exact = _run(build_private_graph(g, None), "out:0", {"x:0": np.array([1.0, 2.0], np.float32)})
    assert exact[0] == np.float32(1.0) + np.float32(1e-4)


def test_fetching_a_rounded_output_returns_the_rounded_value(tf, hand):
    g = _graph(tf)
    private = build_private_graph(g, hand.plan(g, {"AddV2"}))
    assert ROUND_MARKER in private.tensor_name("y:0")
    assert _run(private, "y:0", {"x:0": np.array([1.0, 3.0], np.float32)}).tolist() == [1.0, 3.0]


def test_bfloat16_rounding_keeps_fewer_mantissa_bits_than_float16(tf, hand):
    g = _graph(tf)
    feeds = {"x:0": np.array([1.0, 1.01], np.float32)}
    bf16 = _run(build_private_graph(g, hand.plan(g, {"Identity"}, dtype="bfloat16")), "out:0", feeds)
    f16 = _run(build_private_graph(g, hand.plan(g, {"Identity"})), "out:0", feeds)
    assert abs(bf16[1] - 1.0101) > abs(f16[1] - 1.0101)


def test_input_rounding_is_not_duplicated_after_an_output_rounding(tf, hand):
    g = _graph(tf)
    private = build_private_graph(g, hand.plan(g, {"AddV2", "Identity"}))
    trips = rounding_trips(private.graph.get_operations())
    # y: two inputs + one output (3 round trips); out: its output (1); out's input already is y's rounded value
    assert len(trips) == 4
    assert not any(op.name.startswith("out/") and "_in0" in op.name for op in trips)


def test_unseeded_random_ops_get_fixed_seeds_only_when_asked(tf, hand):
    g = tf.Graph()
    with g.as_default():
        tf.random.normal([3], name="r")
    a = build_private_graph(g, None, fixed_seeds=True)
    b = build_private_graph(g, None, fixed_seeds=True)
    with tf.compat.v1.Session(graph=a.graph) as sa, tf.compat.v1.Session(graph=b.graph) as sb:
        np.testing.assert_array_equal(sa.run("r:0"), sb.run("r:0"))
    plain = build_private_graph(g, None)
    assert plain.graph.get_operation_by_name("r/RandomStandardNormal").get_attr("seed") == 0


def test_consumers_of_one_tensor_share_a_single_rounding(tf, hand):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.add(x, 1.0, name="a")
        tf.add(x, 2.0, name="b")
    private = build_private_graph(g, hand.plan(g, {"AddV2"}))
    rounds_of_x = [
        op for op in private.graph.get_operations() if ROUND_MARKER in op.name and op.inputs[0].name == "x:0"
    ]
    assert len(rounds_of_x) == 1
    with tf.compat.v1.Session(graph=private.graph) as sess:
        a, b = sess.run([private.tensor_name("a:0"), private.tensor_name("b:0")], {"x:0": [1e-4 + 1.0, 3.0]})
    assert a.tolist() == [2.0, 4.0] and b.tolist() == [3.0, 5.0]


def test_roundings_that_cannot_change_a_value_get_no_cast_and_the_values_stay_the_same(tf, hand):
    from npu_jupyter._runtime.rewrite import insert_casts, roundings

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [5], name="x")
        m = tf.multiply(x, 3.0, name="m")
        r = tf.nn.relu(m, name="r")
        i = tf.identity(r, name="i")
        tf.add(i, 1.0, name="out")
    rounded = roundings(hand.plan(g, {"Mul", "Relu", "Identity", "AddV2"}), g)
    every, lean = g.as_graph_def(), g.as_graph_def()
    every_map, lean_map = insert_casts(every, rounded), insert_casts(lean, rounded, g)

    def cast_owners(graph_def):
        return {node.name.split("/")[0] for node in rounding_trips(graph_def.node)}

    assert {"r", "i"} <= cast_owners(every) and not {"r", "i"} & cast_owners(lean)
    assert "m" in cast_owners(lean) and "out" in cast_owners(lean)  # these roundings do change values
    feeds = {"x:0": np.array([1.0001, -2.5, 30000.0, 1e-6, np.nan], np.float32)}  # 90000: inf in float16
    outputs = {}
    for name, graph_def, tensor_map in (("every", every, every_map), ("lean", lean, lean_map)):
        copy = tf.Graph()
        with copy.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=copy) as sess:
            outputs[name] = sess.run([tensor_map.get(t, t) for t in ("m:0", "r:0", "i:0", "out:0")], feeds)
    for a, b in zip(outputs["every"], outputs["lean"]):
        np.testing.assert_array_equal(a, b)


def _v1_loop(tf):
    """A TF1 while loop (Enter/Merge/NextIteration, as TF 1.15 builds it) scaling x by 1.0001 three times."""
    v1 = tf.compat.v1
    before = v1.control_flow_v2_enabled()
    v1.disable_control_flow_v2()
    try:
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [], name="x")
            _, out = v1.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 1.0001), [0, x])
            tf.identity(out, name="out")
    finally:
        if before:
            v1.enable_control_flow_v2()
    return g


def _lowered_next_iteration_output(tf, hand, g):
    """A plan storing only the NextIteration's float output in float16 (its input stays float32)."""
    from dataclasses import replace

    plan = hand.plan(g, {"NextIteration"})
    for name, d in plan.ops.items():
        if d.op_type == "NextIteration":
            plan.ops[name] = replace(
                d, input_dtypes=[t.dtype.base_dtype.name for t in g.get_operation_by_name(name).inputs]
            )
    return plan


def test_a_rounded_next_iteration_keeps_the_loop_importable_and_rounds_each_iteration(tf, hand):
    """Trial (zoo check: lstm_sentiment's dynamic_rnn under force_fp16): a Cast pair between a loop's
    NextIteration and its Merge made TensorFlow refuse the copy ("484 nodes in a cycle")."""
    g = _v1_loop(tf)
    plan = _lowered_next_iteration_output(tf, hand, g)
    assert any(r.op.endswith("NextIteration_1") and r.kind == "output" for r in build_private_graph(g, plan).roundings)
    private = build_private_graph(g, plan)
    merge = [op for op in private.graph.get_operations() if op.type == "Merge" and op.inputs[1].dtype == tf.float32]
    assert merge and all(op.inputs[1].op.type == "NextIteration" for op in merge), "the back edge stays direct"
    # each iteration's 1.0001 is stored as float16's 1.0; float32 would give 1.0003
    assert _run(private, "out:0", {"x:0": np.float32(1.0)}) == np.float32(1.0)


def test_an_emulated_session_runs_a_loop_whose_next_iteration_is_rounded(tf, hand):
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g = _v1_loop(tf)
    plan = _lowered_next_iteration_output(tf, hand, g)
    with EmulatorSession(NpuConfig(), g, plan_fn=lambda graph, config, fetches=None: plan) as sess:
        assert sess.run("out:0", {"x:0": np.float32(1.0)}) == np.float32(1.0)
