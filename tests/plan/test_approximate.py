"""Decisions resting on approximate op data are marked per op; a real CANN install marks none."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._plan import planner
from npu_jupyter._plan.planner import plan


def _mixed_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 4], name="x")
        y = tf.matmul(x, x, name="mm")
        text = tf.strings.as_string(y, name="text")
        tf.strings.length(text, name="n")
    return g


def test_host_kept_decisions_are_approximate_and_cube_ops_are_not():
    p = plan(_mixed_graph(), {"mix_compile_mode": True}, fetches=["n"])
    host = [d for d in p.ops.values() if d.engine == "HOST" and d.op_type.startswith("As")]
    assert host and all(d.approximate for d in host)
    assert not p.ops["mm"].approximate
    assert 0 < sum(d.approximate for d in p.ops.values()) < len(p.ops)


def test_a_library_from_a_cann_install_marks_nothing(monkeypatch):
    """The same plan from a library read from a CANN install (``approximate`` false) marks no decision."""
    bundled = planner.library_for("Ascend910")
    monkeypatch.setattr(bundled, "approximate", False)
    p = plan(_mixed_graph(), {"mix_compile_mode": True}, fetches=["n"])
    assert any(d.engine == "HOST" for d in p.ops.values())
    assert not any(d.approximate for d in p.ops.values())
