"""Carrying variable values between private graphs: correct after the graph grows, cheap per step."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._runtime.session import variables


@pytest.fixture
def tf():
    import tensorflow as tf

    return tf


def _graph_with_variable(tf, name="v", value=1.0):
    graph = tf.Graph()
    with graph.as_default():
        var = tf.compat.v1.get_variable(name, initializer=np.full(3, value, np.float32), use_resource=True)
        init = tf.compat.v1.global_variables_initializer()
    return graph, var, init


def test_values_round_trip_between_two_sessions(tf):
    graph, _, init = _graph_with_variable(tf, value=2.0)
    source = tf.compat.v1.Session(graph=graph)
    source.run(init)
    target_graph, _, _ = _graph_with_variable(tf, value=0.0)
    target = tf.compat.v1.Session(graph=target_graph)
    assert variables.read_variables(target, target_graph) == {}  # nothing initialized yet
    variables.write_variables(target, target_graph, variables.read_variables(source, graph))
    assert np.array_equal(variables.read_variables(target, target_graph)["v"], np.full(3, 2.0, np.float32))


def test_repeated_syncs_of_an_unchanged_graph_do_not_relist_its_ops(tf, monkeypatch):
    graph, _, init = _graph_with_variable(tf)
    sess = tf.compat.v1.Session(graph=graph)
    sess.run(init)
    for _ in range(2):  # builds both tables (building the writer grows the graph once more)
        variables.write_variables(sess, graph, variables.read_variables(sess, graph))
    listed = []
    real = variables.variable_ops
    monkeypatch.setattr(variables, "variable_ops", lambda g: listed.append(g) or real(g))
    for _ in range(3):
        variables.write_variables(sess, graph, variables.read_variables(sess, graph))
    assert listed == []


def test_a_variable_added_after_the_first_sync_is_read_too(tf):
    graph, _, init = _graph_with_variable(tf)
    sess = tf.compat.v1.Session(graph=graph)
    sess.run(init)
    assert set(variables.read_variables(sess, graph)) == {"v"}
    with graph.as_default():
        extra = tf.compat.v1.get_variable("w", initializer=np.ones(2, np.float32), use_resource=True)
    sess.run(extra.initializer)
    assert set(variables.read_variables(sess, graph)) == {"v", "w"}
