"""Mixed-computing decisions on the real training graphs, checked against the adapter's rules directly.

The digests (``test_plan_digests.py``) only say the plan did not change. This file says which ops
must go to the host, and why, by applying the partition pass's mixed-computing rules
(``om_partition_subgraphs_pass.cc``) to the graph's own TensorFlow operations, with code that shares
nothing with the planner:

* ``IsUnSupportedResource``: in mixed computing, an op whose first resource input is not produced by a
  ``VarHandleOp``, or (without resource inputs) whose first resource output is not a VarHandleOp's,
  is not a candidate. In a traced ``tf.function`` every variable is a captured resource
  ``Placeholder``, so every variable read, assignment and optimizer update stays on the host.
* The out-set propagation: a host op pulls the consumers of its string/resource/variant outputs to the
  host and the producers of its resource/variant inputs (strings may cross when iterations_per_loop
  is 1; an edge from a Const does not count).
* ``AddRelationalConst``: a Const is offloaded only when a device op reads it or it controls one.

Everything else on these graphs is supported compute (the op types listed per model are AI Core
kernels in the op tables) and must be offloaded.
"""

from __future__ import annotations

from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._plan.planner import plan

MIX = {"mix_compile_mode": True}
_KEPT_OFF = (tf.string, tf.resource, tf.variant)

# AI Core compute each model is made of: must be offloaded in mixed computing.
DEVICE_COMPUTE = {
    "resnet50_train_step": {
        "Conv2D",
        "Conv2DBackpropFilter",
        "Conv2DBackpropInput",
        "Relu",
        "ReluGrad",
        "MaxPool",
        "MaxPoolGrad",
        "MatMul",
        "BiasAdd",
        "SparseSoftmaxCrossEntropyWithLogits",
    },
    "bert_train_step": {"BatchMatMulV2", "MatMul", "Softmax", "Erfc", "Rsqrt", "GatherV2", "UnsortedSegmentSum"},
    "lstm_train_step": {"MatMul", "Sigmoid", "Tanh", "BiasAdd", "BiasAddGrad"},
}


def _resource_rule(op: Any) -> bool:
    """IsUnSupportedResource: the first resource input decides, else the first resource output."""
    for t in op.inputs:
        if t.dtype == tf.resource:
            return t.op.type != "VarHandleOp"
    for t in op.outputs:
        if t.dtype == tf.resource:
            return op.type != "VarHandleOp"
    return False


def expected_host(graph: Any) -> dict[str, str]:
    """Op name -> which rule keeps it on the host ("resource", "edge" or "const")."""
    ops = list(graph.get_operations())
    host: dict[str, str] = {op.name: "resource" for op in ops if op.type != "Const" and _resource_rule(op)}
    work = list(host)
    by_name = {op.name: op for op in ops}
    while work:
        op = by_name[work.pop()]
        for t in op.outputs:
            if t.dtype not in _KEPT_OFF or t.dtype == tf.string:
                continue
            for consumer in t.consumers():
                if consumer.name not in host and consumer.type != "Assert":
                    host[consumer.name] = "edge"
                    work.append(consumer.name)
        for t in op.inputs:
            producer = t.op
            if t.dtype in (tf.resource, tf.variant) and producer.name not in host and producer.type != "Const":
                host[producer.name] = "edge"
                work.append(producer.name)
    for op in ops:
        if op.type != "Const":
            continue
        readers = [c for t in op.outputs for c in t.consumers()]
        if not any(c.name not in host for c in readers + list(op._control_outputs)):
            host[op.name] = "const"
    return host


REASON_WORDS = {
    "resource": "resource that is not a variable read directly from VarHandleOp",
    "edge": "tensors never cross a GeOp boundary",
    "const": "constant used only by host ops",
}


@pytest.mark.slow
@pytest.mark.parametrize("model_name", sorted(DEVICE_COMPUTE))
def test_mixed_computing_keeps_exactly_the_adapters_host_ops_on_the_host(model_name):
    import models

    fn = getattr(models, model_name)()
    p = plan(fn, MIX)
    want = expected_host(fn.graph)
    got = {name for name, d in p.ops.items() if d.placement == "host"}
    assert got == set(want), (sorted(got - set(want))[:10], sorted(set(want) - got)[:10])
    wrong_reason = [
        (n, p.ops[n].placement_reason)
        for n, rule in want.items()
        if REASON_WORDS[rule] not in p.ops[n].placement_reason
    ]
    assert not wrong_reason, wrong_reason[:5]


@pytest.mark.slow
@pytest.mark.parametrize("model_name", sorted(DEVICE_COMPUTE))
def test_mixed_computing_offloads_the_models_compute(model_name):
    import models

    fn = getattr(models, model_name)()
    p = plan(fn, MIX)
    compute = [d for d in p.ops.values() if d.op_type in DEVICE_COMPUTE[model_name]]
    assert {d.op_type for d in compute} == DEVICE_COMPUTE[model_name]
    assert all(d.placement == "device" and d.cluster for d in compute), [
        (d.name, d.placement_reason) for d in compute if d.placement != "device"
    ][:5]
    variables_read = [d for d in p.ops.values() if d.op_type == "ReadVariableOp"]
    assert variables_read and all(d.placement == "host" for d in variables_read)
