"""The planner reads op definitions the way TF 1.15 offers them (the Ascend adapter's TF 1)."""

from __future__ import annotations

import npu_jupyter
from npu_jupyter._plan.graph import op_recipes


def test_plan_works_where_op_def_registry_has_only_get_registered_ops(monkeypatch):
    """TF 1.15's ``op_def_registry`` has ``get_registered_ops()`` (a dict), not ``get(name)``."""
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    g = tf.Graph()  # built first: TensorFlow's own op building needs today's registry
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        y = tf.nn.relu(tf.matmul(x, tf.ones([4, 2])), name="y")
    real_get = op_def_registry.get
    monkeypatch.delattr(op_def_registry, "get")

    class _AllOps(dict):
        def get(self, name, default=None):  # the real registry knows every op; look each one up
            return real_get(name)

    monkeypatch.setattr(op_def_registry, "get_registered_ops", _AllOps, raising=False)
    monkeypatch.setattr(op_recipes, "RECIPES", {})  # read every op type afresh through the old API
    plan = npu_jupyter.plan(g, fetches=[y])
    assert plan.ops["MatMul"].engine == "AI_CORE"
