"""The estimate a run report carries: computed once, on first read, shared by the reports of one plan."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._plan.model import OpDecision, Plan
from npu_jupyter.cost.attach import CostBlock, PendingEstimate, estimate_of

tf = pytest.importorskip("tensorflow")


def _graph_and_plan(errors: list[str] | None = None) -> tuple[object, Plan]:
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 64], name="x")
        w = tf.constant(np.ones((64, 32), np.float32), name="w")
        tf.matmul(x, w, name="mm")
    decision = OpDecision("mm", "MatMul", "device", "AI_CORE", "ok", "float32", "float16", "cube")
    return g, Plan(ops={"mm": decision}, errors=list(errors or []))


def test_a_pending_estimate_is_computed_once_at_the_fed_batch_and_shared_through_the_memo():
    graph, plan = _graph_and_plan()
    memo: dict = {}
    pending = PendingEstimate(plan, graph, {"x:0": [256, 64]}, memo)
    first = pending.result()
    assert first is not None and first.block is not None and first.block.step_ms > 0
    assert pending.result() is first and len(memo) == 1
    assert PendingEstimate(plan, graph, {"x:0": [256, 64]}, memo).result() is first  # same plan, same batch
    small = estimate_of(plan, graph, {"x:0": [1, 64]})
    assert small is not None and small.est_us["mm"] < first.est_us["mm"]  # the fed batch is what is estimated


def test_a_refused_plan_gets_a_block_without_numbers_and_no_graph_gets_no_estimate():
    graph, plan = _graph_and_plan(errors=["float32 Conv2DBackpropFilter is not supported"])
    refused = estimate_of(plan, graph)
    assert refused is not None and refused.est_us == {}
    assert isinstance(refused.block, CostBlock) and refused.block.step_ms is None
    assert refused.block.basis.startswith("refused: the adapter would not compile this graph")
    assert estimate_of(plan, None) is None and PendingEstimate(plan, None).result() is None


def test_a_traced_functions_estimate_covers_the_functions_it_calls_and_not_the_call_itself():
    """The report plan of a call tree names a callee's ops "<function>/<op>": each is estimated from its
    own graph (at the shape it was traced for, 64 x 64 here), and the call is no kernel of its own (its
    callee's ops are counted). The argument the call copies in and the result it copies back are copies."""
    from npu_jupyter._plan.planner import plan as plan_of
    from npu_jupyter._runtime.functions.tree import tree_plan
    from npu_jupyter.cost.attach import function_estimate

    @tf.function
    def inner(a):
        return tf.matmul(a, a, name="square")

    @tf.function
    def outer(x):
        return tf.reduce_sum(inner(x)) + tf.reduce_sum(tf.matmul(x, x, name="own"))

    top = outer.get_concrete_function(tf.TensorSpec([64, 64], tf.float32))
    callee = inner.get_concrete_function(tf.TensorSpec([64, 64], tf.float32))
    name = callee.function_def.signature.name
    config = {"precision_mode": "force_fp16"}
    joined = tree_plan([("top", plan_of(top, config, adapter="tf2")), (name, plan_of(callee, config, adapter="tf2"))])
    found = function_estimate(joined, [("", top.graph), (f"{name}/", callee.graph)], {"x:0": [64, 64]}, ["Identity:0"])
    assert found is not None and found.block is not None and found.block.step_ms > 0
    square, own = found.est_us[f"{name}/square"], found.est_us["own"]
    assert square == pytest.approx(own)  # the same 64 x 64 MatMul in float16, in the callee and in the caller
    calls = [op for op, d in joined.ops.items() if d.op_type in ("PartitionedCall", "StatefulPartitionedCall")]
    assert calls and not set(calls) & set(found.est_us)
    assert "copies the run's 1 fed tensor to the device and 1 fetched tensor back" in found.block.basis
    assert "unknown before the run" not in found.block.basis  # every shape was traced
    alone = function_estimate(joined, [("", top.graph)], {"x:0": [64, 64]}, ["Identity:0"])
    assert alone is not None and f"{name}/square" not in alone.est_us  # without the callee's graph: no figure for it
