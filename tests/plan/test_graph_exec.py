"""The graph's own dynamic-execution attributes (util.set_graph_exec_config) plan over the session options."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

from npu_jupyter._plan.partition import CUT_OFF_REASON
from npu_jupyter._plan.planner import plan
from npu_jupyter.adapter.tf1.graph_exec import set_graph_exec_config

LAZY = {"dynamic_input": True, "dynamic_graph_execute_mode": "lazy_recompile"}


def _model(**marks):
    """Iterator -> GetNext -> matmul -> host op -> matmul; the loss marked with ``marks`` when given."""
    from npu_jupyter.scope import without_npu_compile_scope

    g = tf.Graph()
    with g.as_default():
        ds = tf.data.Dataset.from_tensor_slices(np.ones([16, 8], np.float32)).batch(4, drop_remainder=True)
        x = v1.data.make_initializable_iterator(ds).get_next(name="batch")
        a = tf.nn.relu(tf.matmul(x, tf.ones([8, 8]), name="mm1"), name="relu1")
        with without_npu_compile_scope():
            h = tf.add(a, 1.0, name="host_add")
        loss = tf.reduce_sum(tf.matmul(h, tf.ones([8, 2]), name="mm2"), name="loss")
        if marks:
            set_graph_exec_config(loss, **marks)
    return g


def _clusters(p):
    return sorted(sorted(s.ops) for s in p.subgraphs)


def test_a_graph_marked_lazy_recompile_plans_as_the_session_option_does():
    marked = plan(_model(dynamic_input=True, dynamic_graph_execute_mode="lazy_recompile"), None, fetches=["loss"])
    as_option = plan(_model(), LAZY, fetches=["loss"])
    unmarked = plan(_model(), None, fetches=["loss"])
    assert _clusters(marked) == _clusters(as_option)
    assert len(_clusters(marked)) == 2 and _clusters(marked) != _clusters(unmarked)
    assert CUT_OFF_REASON in {unmarked.ops["mm1"].placement_reason, unmarked.ops["mm2"].placement_reason}
    assert all(marked.ops[n].placement == "device" for n in ("mm1", "mm2"))
    assert any("node 'loss' (util.set_graph_exec_config)" in n for n in marked.notes)


def test_the_graphs_dynamic_input_false_wins_over_the_sessions_lazy_recompile():
    # GetGraphConfig sets dynamic_input from the node; the session's is read only when no node set one
    off = plan(_model(dynamic_input=False), LAZY, fetches=["loss"])
    assert _clusters(off) == _clusters(plan(_model(), None, fetches=["loss"]))


def test_a_mark_outside_the_run_graph_is_not_read():
    g = _model()
    with g.as_default():
        other = tf.constant(1.0, name="other")
        set_graph_exec_config(other, dynamic_input=True, dynamic_graph_execute_mode="lazy_recompile")
    assert _clusters(plan(g, None, fetches=["loss"])) == _clusters(plan(_model(), None, fetches=["loss"]))


def test_lazy_recompile_from_the_graph_with_a_device_loop_is_the_adapters_error():
    marked = _model(dynamic_input=True, dynamic_graph_execute_mode="lazy_recompile")
    p = plan(marked, {"iterations_per_loop": 4}, fetches=["loss"])
    assert any("iterations_per_loop only support 1 in lazy_recompile mode. Current is: 4" in e for e in p.errors)


def test_dynamic_execute_from_the_graph_partitions_like_static_shapes():
    marked = _model(dynamic_input=True, dynamic_graph_execute_mode="dynamic_execute")
    p = plan(marked, None, fetches=["loss"])
    assert _clusters(p) == _clusters(plan(_model(), None, fetches=["loss"]))
