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
