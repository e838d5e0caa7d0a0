"""A TF1 plan of TF 2's functional If/While says what it leaves unplanned; a TF 1.15-style graph says nothing."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._plan.planner import plan


def _loop_and_cond(v2: bool):
    """A while loop and a cond, with TF 2's control flow on (functional ops) or off (TF 1.15's)."""
    v1 = tf.compat.v1
    before = v1.control_flow_v2_enabled()
    (v1.enable_control_flow_v2 if v2 else v1.disable_control_flow_v2)()
    try:
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [4], name="x")
            _, h = v1.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h * 2.0), [tf.constant(0), x], name="loop")
            y = tf.cond(tf.reduce_sum(h) > 0.0, lambda: h + 1.0, lambda: h - 1.0, name="pick")
            tf.reduce_sum(y, name="loss")
    finally:
        (v1.enable_control_flow_v2 if before else v1.disable_control_flow_v2)()
    return g


def _flow_notes(p):
    return [n for n in p.notes if "functional control flow" in n]


def test_a_tf1_plan_of_functional_while_and_if_says_their_bodies_are_not_planned():
    g = _loop_and_cond(v2=True)
    functional = [op for op in g.get_operations() if op.type in ("While", "StatelessWhile", "If", "StatelessIf")]
    assert len(functional) == 2
    p = plan(g)
    (note,) = _flow_notes(p)
    assert note.startswith("2 op(s) are TensorFlow 2's functional control flow (")
    for op in functional:
        assert f"{op.name} ({op.type})" in note
        assert op.name in p.ops and all(body_op not in p.ops for body_op in ("loop/mul", "pick/add"))
    assert "tf.cond and tf.while_loop" in note
    assert "tf.compat.v1.disable_v2_behavior()" in note and "Switch/Merge/Enter/Exit" in note
    bodies = sum(len(p.ops[op.name].body_ops) for op in functional)
    assert bodies > 0 and f"Their functions hold {bodies} op(s)" in note


@pytest.mark.parametrize("config", [None, {"precision_mode": "allow_mix_precision"}, {"mix_compile_mode": True}])
def test_the_same_code_with_tf_1_15s_control_flow_has_no_such_note(config):
    g = _loop_and_cond(v2=False)
    p = plan(g, config)
    assert {"Enter", "Exit", "Merge", "Switch"} <= {d.op_type for d in p.ops.values()}
    assert "loop/mul" in p.ops  # the body's op is planned op by op
    assert _flow_notes(p) == []


def test_a_graph_without_control_flow_and_a_tf2_plan_have_no_such_note(conv_net):
    assert _flow_notes(plan(conv_net)) == []

    @tf.function
    def step(x):
        return tf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h * 2.0), [tf.constant(0), x])[1]

    fn = step.get_concrete_function(tf.TensorSpec([4], tf.float32))
    assert {op.type for op in fn.graph.get_operations()} & {"While", "StatelessWhile"}
    assert _flow_notes(plan(fn, adapter="tf2")) == []  # npu_device places functional ops: nothing hidden
    # nor with the TF1 rule: a tf.function is TF 2 code, for which TF 1.15's control flow is no advice
    assert _flow_notes(plan(fn)) == []
