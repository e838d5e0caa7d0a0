"""GeOp clusters, the full-offload single-cluster rule and host<->device transfers (§3.5)."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

from npu_jupyter._plan.partition import CHECKPOINT_PATH_REASON, CUT_OFF_REASON
from npu_jupyter._plan.planner import plan

MIX = {"mix_compile_mode": True}


def _split_by_py_func():
    """Two device regions separated by a PyFunc, plus an independent device branch."""
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [8, 16], name="x")
        a = tf.nn.relu(tf.matmul(x, tf.ones([16, 16]), name="mm1"), name="relu1")
        b = tf.exp(a, name="exp1")
        h = v1.py_func(np.tanh, [b], tf.float32, name="host_fn")
        h.set_shape([8, 16])
        c = tf.sigmoid(h, name="sig2")
        tf.matmul(c, tf.ones([16, 4]), name="mm2")
        y = v1.placeholder(tf.float32, [8], name="y")
        tf.abs(y, name="side")
    return g


def test_full_offload_keeps_only_the_largest_cluster_and_cuts_off_the_rest():
    p = plan(_split_by_py_func())
    assert len(p.subgraphs) == 1
    assert p.subgraphs[0].name == "GeOp1_0"
    assert p.ops["mm1"].cluster == "GeOp1_0"
    for name in ("sig2", "mm2"):
        assert p.ops[name].placement == "host" and p.ops[name].engine == "HOST"
        assert p.ops[name].placement_reason == CUT_OFF_REASON


def test_full_offload_cut_off_warning_names_the_ops_and_the_fix():
    p = plan(_split_by_py_func())
    (warning,) = [w for w in p.warnings if "cut off" in w]
    assert "sig2" in warning and "mm2" in warning and "host_fn" in warning
    assert "mix_compile_mode=True" in warning and "without_npu_compile_scope" in warning


def test_full_offload_merges_mutually_unreachable_clusters():
    p = plan(_split_by_py_func())
    assert p.ops["side"].cluster == "GeOp1_0"  # independent of the main cluster: merged into it


def test_mixed_computing_keeps_several_clusters():
    p = plan(_split_by_py_func(), MIX)
    assert [s.name for s in p.subgraphs] == ["GeOp1_0", "GeOp1_1"]
    assert p.ops["mm1"].cluster != p.ops["mm2"].cluster
    assert p.ops["sig2"].placement == "device"
    assert not any("cut off" in w for w in p.warnings)


def test_transfers_list_each_boundary_edge_with_bytes_from_static_shapes():
    p = plan(_split_by_py_func(), MIX)
    edges = {(t.src, t.dst, t.direction): t for t in p.transfers}
    out = edges[("exp1", "host_fn", "d2h")]
    assert out.bytes == 8 * 16 * 4 and out.dtype == "float32" and out.tensor == "exp1:0"
    assert edges[("host_fn", "sig2", "h2d")].bytes == 8 * 16 * 4
    assert p.summary()["transfer_bytes"] == sum(t.bytes for t in p.transfers)


def test_transfer_bytes_are_unknown_for_a_bare_graph_def():
    p = plan(_split_by_py_func().as_graph_def(), MIX)
    assert p.transfers and all(t.bytes is None for t in p.transfers)


def _shared_variable():
    g = tf.Graph()
    with g.as_default():
        v = v1.get_variable("v", [4], initializer=v1.ones_initializer(), use_resource=True)
        x = v1.placeholder(tf.float32, [4], name="x")
        a = tf.multiply(v.read_value(), x, name="first")
        h = v1.py_func(np.negative, [a], tf.float32, name="host_fn")
        second = tf.add(h, 1.0, name="second")
        v.assign_add(second, name="update", read_value=False)
    return g


def test_mixed_computing_replicates_a_shared_variable_into_each_geop():
    p = plan(_shared_variable(), MIX)
    assert p.ops["first"].cluster != p.ops["update"].cluster
    assert p.ops["update"].cluster == p.ops["second"].cluster
    assert any(note.startswith("variable v is replicated into each GeOp") for note in p.notes)
    assert not any(t.src == "v" for t in p.transfers)


def test_ref_variable_cut_off_from_its_geop_is_an_error():
    g = tf.Graph()
    with g.as_default():
        w = v1.Variable(tf.ones([4]), name="w", use_resource=False)
        x = v1.placeholder(tf.float32, [4], name="x")
        big = tf.exp(tf.sigmoid(tf.tanh(x * w)))  # w joins the big cluster through its read
        h = v1.py_func(np.negative, [big], tf.float32, name="host_fn")
        v1.assign(w, tf.exp(h), name="cut_off_assign")  # after the host op: cut off from w's GeOp
    p = plan(g)
    assert p.ops["cut_off_assign"].placement == "host"
    assert any(e.startswith("Ref Tensors (e.g., Variables) are not supported as") for e in p.errors)


def test_lone_identity_is_not_offloaded_when_no_larger_cluster_exists():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        h = v1.py_func(np.negative, [x], tf.float32, name="host_fn")
        tf.identity(h, name="ident")
    p = plan(g, MIX)
    assert p.ops["ident"].placement == "host"
    assert "lone NoOp/Identity" in p.ops["ident"].placement_reason
    assert not any("ident" in s.ops for s in p.subgraphs)


def _cluster_graph_is_acyclic(p) -> bool:
    """Contract every GeOp to one node and check the result has no cycle."""
    key = {name: (d.cluster or name) for name, d in p.ops.items()}
    succ: dict[str, set[str]] = {}
    for name, d in p.ops.items():
        for src in d.inputs:
            if src in key and key[src] != key[name]:
                succ.setdefault(key[src], set()).add(key[name])
    state: dict[str, int] = {}

    def visit(n: str) -> bool:
        stack = [(n, iter(succ.get(n, ())))]
        state[n] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return False
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(succ.get(nxt, ()))))
        return True

    return all(visit(n) for n in list(succ) if n not in state)


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["lstm_train_step", "bert_train_step", "mlp_v1"])
def test_clusters_never_form_a_cycle_in_mixed_computing(builder):
    import models

    model = getattr(models, builder)()
    graph = getattr(model, "graph", model)
    p = plan(graph, MIX)
    assert p.subgraphs
    assert _cluster_graph_is_acyclic(p)


def test_a_host_op_on_a_parallel_branch_does_not_split_the_cluster():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 4], name="x")
        prep = v1.py_func(np.negative, [x], tf.float32, name="prep")
        prep.set_shape([4, 4])
        y = v1.placeholder(tf.float32, [4, 4], name="y")
        mm = tf.matmul(y, tf.ones([4, 4]), name="mm")
        joined = tf.add(tf.nn.relu(mm, name="relu"), prep, name="join")
        tf.exp(joined, name="out")
    p = plan(g)
    assert {p.ops[n].cluster for n in ("y", "mm", "relu", "join", "out")} == {"GeOp1_0"}
    assert [w for w in p.warnings if "cut off" in w and "mm" in w] == []


def _on_host(t, name):
    """``t`` through a PyFunc (host only), keeping its static shape so transfers have bytes."""
    out = v1.py_func(np.tanh, [t], tf.float32, name=name)
    out.set_shape(t.shape)
    return out


def _host_tensor_read_twice():
    """A PyFunc output read by two ops of the same GeOp, and a device tensor read by two host ops."""
    g = tf.Graph()
    with g.as_default():
        h = _on_host(v1.placeholder(tf.float32, [8, 16], name="x"), "host_fn")
        s = tf.add(tf.exp(h, name="exp_a"), tf.sigmoid(h, name="sig_b"), name="sum")
        _on_host(s, "host_out0")
        _on_host(s, "host_out1")
    return g


def test_a_tensor_read_by_two_ops_of_one_geop_is_one_transfer_with_both_consumers():
    p = plan(_host_tensor_read_twice())
    into = [t for t in p.transfers if t.tensor == "host_fn:0"]
    assert len(into) == 1
    assert into[0].direction == "h2d" and into[0].consumers == ["exp_a", "sig_b"]
    out = [t for t in p.transfers if t.tensor == "sum:0"]
    assert len(out) == 1
    assert out[0].direction == "d2h" and out[0].consumers == ["host_out0", "host_out1"]


def test_transfer_bytes_count_each_crossing_tensor_once():
    p = plan(_host_tensor_read_twice())
    by_tensor = {t.tensor: t.bytes for t in p.transfers}
    assert p.summary()["transfer_bytes"] == sum(by_tensor.values())
    assert p.summary()["transfer_bytes"] == 8 * 16 * 4 * len(by_tensor)


def test_a_tensor_entering_two_geops_is_one_transfer_per_geop():
    g = tf.Graph()
    with g.as_default():
        h = _on_host(v1.placeholder(tf.float32, [4, 4], name="x"), "host_fn")
        tf.add(_on_host(tf.exp(h, name="first"), "host_mid"), h, name="second")
    p = plan(g, MIX)
    assert p.ops["first"].cluster != p.ops["second"].cluster
    into = sorted(
        (t.consumers[0], p.ops[t.dst].cluster) for t in p.transfers if t.tensor == "host_fn:0" and t.direction == "h2d"
    )
    assert into == sorted([("first", p.ops["first"].cluster), ("second", p.ops["second"].cluster)])


def _saver_training_graph(sharded: bool):
    """A TF1 training step with a real tf.compat.v1.train.Saver (SaveV2/RestoreV2 plumbing)."""
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 3], name="x")
        w = v1.get_variable("w", [3, 2])
        loss = tf.reduce_sum(tf.matmul(x, w), name="loss")
        v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        v1.train.Saver(sharded=sharded)
    return g


@pytest.mark.parametrize("sharded", [False, True])
def test_saver_checkpoint_plumbing_gives_no_cut_off_warning(sharded):
    p = plan(_saver_training_graph(sharded))
    assert not any("cut off" in w for w in p.warnings)
    cut = [d for d in p.ops.values() if d.placement_reason == CHECKPOINT_PATH_REASON]
    assert cut and all(d.name.startswith("save") and d.placement == "host" for d in cut)
    assert any("checkpoint" in n and cut[0].name in n for n in p.notes)
    # trial (din_tf_allenyzx): the note said "no compute is lost" while save/control_dependency's own
    # reason still told the user to enable mix_compile_mode
    assert not any("mix_compile_mode" in d.placement_reason for d in p.ops.values())


def test_compute_cut_off_next_to_a_saver_still_warns():
    g = _saver_training_graph(False)
    with g.as_default():
        h = v1.py_func(np.tanh, [g.get_tensor_by_name("loss:0")], tf.float32, name="host_fn")
        tf.exp(tf.exp(h, name="cut_exp"), name="cut_exp2")
    p = plan(g)
    (warning,) = [w for w in p.warnings if "cut off" in w]
    assert "2 supported ops are cut off" in warning and "cut_exp2" in warning
    assert "save/" not in warning  # the Saver's path ops are left to the note
    assert p.ops["cut_exp2"].placement_reason == CUT_OFF_REASON  # compute cut off keeps its advice


# ---- dynamic inputs (dynamic_input + dynamic_graph_execute_mode) ------------------------------

LAZY = {"dynamic_input": True, "dynamic_graph_execute_mode": "lazy_recompile"}


def _dataset_model_with_a_host_gap():
    """Iterator -> GetNext -> matmul -> host op -> matmul: full offload cuts the tail off."""
    from npu_jupyter.scope import without_npu_compile_scope

    g = tf.Graph()
    with g.as_default():
        ds = tf.data.Dataset.from_tensor_slices(np.ones([16, 8], np.float32)).batch(4, drop_remainder=True)
        it = v1.data.make_initializable_iterator(ds)
        x = it.get_next(name="batch")
        a = tf.nn.relu(tf.matmul(x, tf.ones([8, 8]), name="mm1"), name="relu1")
        with without_npu_compile_scope():
            h = tf.add(a, 1.0, name="host_add")
        tf.reduce_sum(tf.matmul(h, tf.ones([8, 2]), name="mm2"), name="loss")
    return g


def test_lazy_recompile_keeps_several_geops_and_cuts_nothing_off():
    g = _dataset_model_with_a_host_gap()
    full = plan(g, fetches=["loss"])
    lazy = plan(g, LAZY, fetches=["loss"])
    cut = [n for n, d in full.ops.items() if d.placement_reason == CUT_OFF_REASON]
    assert {"mm1", "mm2"} & set(cut)  # the full-offload rule without dynamic inputs
    assert all(lazy.ops[n].placement == "device" for n in cut)
    assert lazy.ops["mm1"].cluster not in (None, lazy.ops["mm2"].cluster) and lazy.ops["mm2"].cluster
    assert not any("cut off" in w for w in lazy.warnings), lazy.warnings
    assert any("lazy_recompile" in n for n in lazy.notes)


def test_dynamic_execute_partitions_like_static_shapes():
    # om_partition_subgraphs_pass.cc reads only lazy_recompile when merging clusters
    g = _dataset_model_with_a_host_gap()
    dyn = plan(g, {"dynamic_input": True, "dynamic_graph_execute_mode": "dynamic_execute"}, fetches=["loss"])
    assert CUT_OFF_REASON in {dyn.ops["mm1"].placement_reason, dyn.ops["mm2"].placement_reason}


def test_lazy_recompile_with_data_pre_processing_gives_the_get_next_its_own_geop():
    g = _dataset_model_with_a_host_gap()
    p = plan(g, {**LAZY, "enable_data_pre_proc": True}, fetches=["loss"])
    getnext = p.ops["batch"]
    assert getnext.placement == "device" and "GeOp of its own" in getnext.placement_reason
    iterator = next(d for d in p.ops.values() if d.op_type in ("Iterator", "IteratorV2"))
    assert iterator.cluster == getnext.cluster
    assert p.ops["mm1"].cluster not in (None, getnext.cluster)
    plain = plan(g, {"enable_data_pre_proc": True, "mix_compile_mode": True}, fetches=["loss"])
    assert plain.ops["mm1"].cluster == plain.ops["batch"].cluster  # without lazy_recompile they merge


def test_a_ref_variable_read_through_a_plain_input_crosses_without_the_ref_error():
    # OMSplitter checks the destination's input type: SaveV2 reads w's ref output as a value
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 8], name="x")
        w = v1.Variable(tf.ones([8, 3]), name="w", use_resource=False)
        tf.reduce_sum(tf.matmul(x, w), name="loss")
        saver = v1.train.Saver()
    for config in (None, MIX):
        p = plan(g, config, fetches=[saver.saver_def.save_tensor_name])
        assert p.ops["w"].placement == "device" and p.ops["save/SaveV2"].placement == "host"
        assert not any(e.startswith("Ref Tensors") for e in p.errors), p.errors
        assert any(t.tensor == "w:0" and t.direction == "d2h" for t in p.transfers)


def test_crossing_candidates_list_every_consumer_of_an_edge_between_groups() -> None:
    """The shortcut past the largest group finds the same group-crossing consumers as a full scan."""
    import random

    from npu_jupyter._plan.clustering import _crossing_candidates

    rng = random.Random(23)
    for count, small in ((400, 30), (400, 200)):  # a few small groups; groups too large to list
        preds = [sorted(rng.sample(range(i), min(i, 3))) for i in range(count)]
        succs: list[list[int]] = [[] for _ in range(count)]
        for i, ps in enumerate(preds):
            for p in ps:
                succs[p].append(i)
        grouped = [i for i in range(count) if rng.random() < 0.9]
        smalls = rng.sample(grouped, small)
        groups = [[i for i in grouped if i not in smalls]] + [sorted(smalls[k::5]) for k in range(5)]
        gid = [-1] * count
        for c, g in enumerate(groups):
            for i in g:
                gid[i] = c
        ends = [i for i in range(count) if gid[i] >= 0 and any(gid[p] >= 0 and gid[p] != gid[i] for p in preds[i])]
        listed = list(_crossing_candidates(groups, succs, count))
        assert listed == sorted(set(listed))
        assert [i for i in listed if i in ends] == ends
