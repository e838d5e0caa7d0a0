"""The normalised graph view: dtypes, refs, scope attrs, functions, pruning, ordering."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

from npu_jupyter._plan.graph.fetches import fetch_names
from npu_jupyter._plan.graph.view import build_view
from npu_jupyter.scope import keep_dtype_scope, without_npu_compile_scope


def _small_graph():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 8], name="x")
        w = v1.Variable(tf.ones([8, 3]), name="w", use_resource=False)
        y = tf.matmul(x, w, name="mm")
        parts = tf.split(y, 3, axis=1, name="split")
        with without_npu_compile_scope():
            host = tf.add(parts[0], 1.0, name="host_add")
        with keep_dtype_scope():
            kept = tf.nn.relu(parts[1], name="kept_relu")
        out = tf.add_n([host, kept, parts[2]], name="out")
        with tf.control_dependencies([out]):
            tf.no_op(name="after")
        v1.assign(w, tf.zeros([8, 3]), name="reset")
    return g


def test_output_dtypes_come_from_op_defs_including_number_attrs():
    view = build_view(_small_graph())
    assert view.nodes["split"].output_dtypes == ["float32"] * 3
    assert view.nodes["x"].output_dtypes == ["float32"]
    assert view.nodes["out"].input_dtypes == ["float32"] * 3
    assert view.nodes["out"].inputs == [("host_add", 0), ("kept_relu", 0), ("split", 2)]


def test_ref_variable_output_and_assign_ref_input_are_flagged():
    view = build_view(_small_graph())
    assert view.nodes["w"].output_refs == [True]
    assert view.nodes["reset"].input_refs == [True, False]
    assert view.nodes["mm"].input_refs is None  # MatMul has no ref args


def test_scope_attributes_are_read_from_nodes():
    view = build_view(_small_graph())
    assert view.nodes["host_add"].without_npu_compile
    assert not view.nodes["mm"].without_npu_compile
    assert view.nodes["kept_relu"].keep_dtype
    assert not view.nodes["out"].keep_dtype


def test_fetches_keep_only_data_and_control_ancestors():
    view = build_view(_small_graph(), fetches=["after"])
    assert "reset" not in view.nodes
    assert {"after", "out", "mm", "x", "w", "split"} <= set(view.nodes)


def test_fetches_accept_tensor_names_and_tensors():
    g = _small_graph()
    assert fetch_names(["out:0", "^after", g.get_tensor_by_name("mm:0")]) == ["out", "after", "mm"]
    assert set(build_view(g, fetches="mm:0").nodes) == {"mm", "x", "w", "w/read"}


def test_fetches_accept_every_structure_session_run_accepts():
    import collections

    g = _small_graph()
    pair = collections.namedtuple("Pair", "loss step")
    with g.as_default():
        sparse = tf.sparse.from_dense(g.get_tensor_by_name("mm:0"), name="sp")
    nested = [
        g.get_operation_by_name("after"),
        {"a": "out:0", "b": (g.get_tensor_by_name("mm:0"),)},
        pair(loss="split:1", step=[b"kept_relu"]),
        sparse,
    ]
    names = fetch_names(nested)
    assert names[:5] == ["after", "out", "mm", "split", "kept_relu"]
    assert set(names[5:]) == {sparse.indices.op.name, sparse.values.op.name, sparse.dense_shape.op.name}
    assert {"after", "out", sparse.indices.op.name} <= set(build_view(g, fetches=nested).nodes)


def test_a_resource_variable_fetch_names_the_read_session_run_returns():
    g = tf.Graph()
    with g.as_default():
        v = v1.Variable(1.0, name="v", use_resource=True)
    names = fetch_names([v])
    assert names == [v._graph_element.op.name]
    assert names[0] != "v"  # not the bare handle: Session.run returns the value


def test_plan_accepts_nested_fetch_lists_like_a_training_script():
    from npu_jupyter._plan.planner import plan

    g = _small_graph()
    p = plan(g, fetches=[[g.get_tensor_by_name("out:0"), g.get_operation_by_name("after")], {"m": "mm"}])
    assert "reset" not in p.ops and {"out", "after", "mm"} <= set(p.ops)


@pytest.mark.parametrize("bad", [[["out:0", 3]], {"x": None}, [""]])
def test_a_malformed_fetch_is_one_clear_error_naming_where_it_is(bad):
    with pytest.raises(TypeError, match="fetches.* Session.run accepts"):
        fetch_names(bad)


def test_unknown_fetch_is_one_clear_error():
    with pytest.raises(ValueError, match="'nope'"):
        build_view(_small_graph(), fetches=["nope:0"])


def test_graph_def_and_graph_give_the_same_nodes_in_topological_order():
    g = _small_graph()
    from_graph = build_view(g)
    from_def = build_view(g.as_graph_def())
    assert [n.name for n in from_graph.order] == [n.name for n in from_def.order]
    pos = {n.name: n.index for n in from_def.order}
    for n in from_def.order:
        assert all(pos[s] < n.index for s, _ in n.inputs)


def test_a_reversed_graph_def_is_put_back_in_topological_order():
    gd = _small_graph().as_graph_def()
    reversed_def = type(gd)()
    reversed_def.node.extend(reversed(list(gd.node)))
    view = build_view(reversed_def)
    pos = {n.name: n.index for n in view.order}
    for n in view.order:
        assert all(pos[s] < n.index for s, _ in n.inputs)
        assert all(pos[s] < n.index for s in n.control_inputs)


def test_static_shapes_are_looked_up_from_a_tf_graph_only():
    g = _small_graph()
    assert build_view(g).shape("mm:0") == (4, 3)
    assert build_view(g.as_graph_def()).shape("mm:0") is None


def test_static_shapes_are_known_only_when_every_dimension_is():
    """The view's op lookup (TensorFlow's unchecked one where it has one) answers as the tensor would."""
    g = tf.Graph()
    with g.as_default():
        v1.placeholder(tf.float32, None, name="unknown_rank")
        v1.placeholder(tf.float32, [None, 3], name="partly_known")
        tf.constant(1.0, name="scalar")
        tf.split(tf.ones([4, 6]), [2, 4], axis=1, name="split")
    view = build_view(g)
    expected = {
        "unknown_rank:0": None,
        "partly_known:0": None,
        "scalar:0": (),
        "split:0": (4, 2),
        "split:1": (4, 4),  # another output of the same op
        "split:2": None,  # no such output
        "missing:0": None,  # no such op
        "split": None,  # no output slot
        "split:first": None,
    }
    assert {t: view.shape(t) for t in expected} == expected
    assert view.output_shape("split", 1) == (4, 4)


def test_a_cached_view_that_looked_up_shapes_does_not_keep_its_graph_alive():
    """Boundary tensors' bytes read static shapes through the view; the cached view must still let the graph go."""
    import gc
    import weakref

    import numpy as np

    from npu_jupyter._plan.planner import plan

    g = tf.Graph()
    with g.as_default():  # no tensor kept in a local: it would keep the graph alive itself
        host = v1.py_func(np.tanh, [tf.nn.relu(v1.placeholder(tf.float32, [4, 8], name="x"), name="relu")], tf.float32)
        host.set_shape([4, 8])
        tf.exp(host, name="exp")
        del host
    transfers = plan(g, {"mix_compile_mode": True}).transfers
    assert [t.bytes for t in transfers] == [128, 128]  # relu:0 to the host, the PyFunc's back: 4 x 8 float32
    alive = weakref.ref(g)
    del g
    gc.collect()
    assert alive() is None


def test_concrete_function_calls_list_the_ops_of_their_body():
    @tf.function
    def inner(a):
        return tf.nn.softmax(tf.matmul(a, a))

    @tf.function
    def outer(a):
        return inner(a) + 1.0

    fn = outer.get_concrete_function(tf.TensorSpec([2, 2], tf.float32))
    view = build_view(fn)
    calls = [n for n in view.order if n.functions]
    assert calls, "the nested tf.function should appear as a call node"
    assert {"MatMul", "Softmax"} <= set(calls[0].body)
    assert calls[0].functions[0] in view.functions


def test_hostile_node_names_survive_unchanged():
    gd = _small_graph().as_graph_def()
    evil = "<script>alert(1)</script>"
    for node in gd.node:
        if node.name == "host_add":
            node.name = evil
        for k, inp in enumerate(node.input):
            if inp.split(":")[0] == "host_add":
                node.input[k] = inp.replace("host_add", evil)
    view = build_view(gd)
    assert evil in view.nodes
    assert (evil, 0) in view.nodes["out"].inputs


def test_rejects_objects_that_are_not_graphs():
    with pytest.raises(TypeError, match="tf.Graph, a GraphDef or a tf.function ConcreteFunction"):
        build_view(42)


# --------------------------------------------------------------------------------------------
# the fast conversion against straightforward reference paths
# --------------------------------------------------------------------------------------------


def _reference_order(graph_def) -> list[str]:
    """Listed order with producers first, by plain recursion: the order the view must keep.

    Each node (in listed order) first emits its not yet emitted data producers, then its control
    producers, then itself; NextIteration producers (while back edges) are not followed.
    """
    by_name = {nd.name: nd for nd in graph_def.node}
    state: dict[str, int] = {}
    order: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        nd = by_name[name]
        data = [t.rpartition(":")[0] if ":" in t else t for t in nd.input if not t.startswith("^")]
        ctrl = [t[1:] for t in nd.input if t.startswith("^")]
        for src in data:
            if src in by_name and src not in state and by_name[src].op not in ("NextIteration", "RefNextIteration"):
                visit(src)
        for src in ctrl:
            if src in by_name and src not in state:
                visit(src)
        state[name] = 2
        order.append(name)

    for nd in graph_def.node:
        if nd.name not in state:
            visit(nd.name)
    return order


def _reference_nodes(graph) -> dict[str, tuple]:
    """Per op, read through TensorFlow's own Operation objects (not the GraphDef)."""
    out = {}
    for op in graph.get_operations():
        out[op.name] = (
            op.type,
            [(t.op.name, t.value_index) for t in op.inputs],
            [t.dtype.base_dtype.name for t in op.inputs],
            sorted(c.name for c in op.control_inputs),
            [t.dtype.base_dtype.name for t in op.outputs],
        )
    return out


def _assert_view_matches_references(graph, view) -> None:
    assert [n.name for n in view.order] == _reference_order(graph.as_graph_def())
    reference = _reference_nodes(graph)
    assert set(view.nodes) == set(reference)
    for n in view.order:
        got = (n.op, list(n.inputs), list(n.input_dtypes), sorted(n.control_inputs), n.output_dtypes)
        assert got == reference[n.name]
        assert [view.order[j].name for j in n.in_idx] == [s for s, _ in n.inputs]
        assert [view.order[j].name for j in n.ctrl_idx] == list(n.control_inputs)
        assert view.order[n.index] is n


def test_view_of_a_tf_function_graph_matches_tensorflows_own_operations():
    @tf.function
    def step(x, w):
        with tf.control_dependencies([tf.debugging.assert_all_finite(x, "x")]):
            y = tf.matmul(x, w)
        parts = tf.split(y, 3, axis=1)
        return tf.add_n(parts) + tf.reduce_sum(tf.nn.softmax(y))

    fn = step.get_concrete_function(tf.TensorSpec([2, 4], tf.float32), tf.TensorSpec([4, 3], tf.float32))
    _assert_view_matches_references(fn.graph, build_view(fn))


def test_shuffled_graph_def_gets_the_reference_order_and_edges():
    import random

    g = _small_graph()
    gd = g.as_graph_def()
    nodes = list(gd.node)
    random.Random(7).shuffle(nodes)
    shuffled = type(gd)()
    shuffled.node.extend(nodes)
    view = build_view(shuffled)
    assert [n.name for n in view.order] == _reference_order(shuffled)
    for n in view.order:
        assert [view.order[j].name for j in n.in_idx] == [s for s, _ in n.inputs]
        assert all(j < n.index for j in (*n.in_idx, *n.ctrl_idx))


def test_scope_attributes_are_read_whether_or_not_the_serialized_bytes_are_given():
    from npu_jupyter._plan.graph.view import view_of

    g = _small_graph()
    gd = g.as_graph_def()
    with_bytes = view_of(gd, g, None, gd.SerializeToString(deterministic=True))
    without = view_of(gd, g)
    flags = [(n.name, n.without_npu_compile, n.keep_dtype) for n in without.order]
    assert flags == [(n.name, n.without_npu_compile, n.keep_dtype) for n in with_bytes.order]
    assert ("host_add", True, False) in flags and ("kept_relu", False, True) in flags


@pytest.mark.slow
def test_view_of_the_resnet50_training_graph_matches_tensorflows_own_operations():
    import models

    fn = models.resnet50_train_step()
    _assert_view_matches_references(fn.graph, build_view(fn))


def _v1_while_graph(monkeypatch):
    """A V1 while loop (Enter/Merge/NextIteration back edges) after the small graph's ops."""
    from tensorflow.python.ops import control_flow_util

    monkeypatch.setattr(control_flow_util, "ENABLE_CONTROL_FLOW_V2", False)
    g = _small_graph()
    with g.as_default():
        x = g.get_tensor_by_name("mm:0")
        _, out = v1.while_loop(
            lambda i, acc: i < 3, lambda i, acc: (i + 1, acc * 2.0), [tf.constant(0), x], name="loop"
        )
        tf.nn.relu(out, name="after_loop")
    assert any(op.type == "NextIteration" for op in g.get_operations())
    return g


def _edges_by_name(view):
    return {
        n.name: (
            [view.order[j].name if j >= 0 else None for j in n.in_idx],
            list(n.input_dtypes),
            [view.order[j].name for j in n.ctrl_idx],
        )
        for n in view.order
    }


@pytest.mark.parametrize("listing", ["as exported", "shuffled", "loop constant last"])
def test_edges_numbered_while_reading_equal_edges_numbered_afresh(monkeypatch, listing):
    """The reader numbers edges against the nodes read so far and resolves the rest after the loop;
    a pruned listing is numbered afresh by the ordering. Both must give the same edges, input dtypes
    (a back edge's included) and a producers-first order: listed as exported, shuffled, or with the
    loop body's constant listed last (the repair then moves the NextIteration a Merge listed before
    the first unsorted node points back to)."""
    import random

    from npu_jupyter._plan.graph.view import view_of

    g = _v1_while_graph(monkeypatch)
    gd = g.as_graph_def()
    nodes = list(gd.node)
    if listing == "shuffled":
        random.Random(3).shuffle(nodes)
    elif listing == "loop constant last":
        mul = next(nd for nd in nodes if nd.name.startswith("loop/") and nd.op == "Mul")
        const = next(nd for nd in nodes if nd.name == mul.input[1])
        assert const.op == "Const"
        nodes.remove(const)
        nodes.append(const)
    del gd.node[:]
    gd.node.extend(nodes)
    read = view_of(gd)
    afresh = view_of(gd, fetches=[nd.name for nd in gd.node])  # prunes nothing, numbers afresh
    assert [n.name for n in read.order] == [n.name for n in afresh.order] == _reference_order(gd)
    assert _edges_by_name(read) == _edges_by_name(afresh)
    reference = _reference_nodes(g)
    for n in read.order:
        assert list(n.input_dtypes) == reference[n.name][2], n.name  # back edges read their producer's dtype
        assert read.order[n.index] is n
        back = {j for j in n.in_idx if read.order[j].op == "NextIteration"}
        assert all(j < n.index for j in (*n.in_idx, *n.ctrl_idx) if j not in back)


def test_every_node_field_is_set_on_each_reading_path():
    """Nodes are built without Node.__init__: whichever way a NodeDef is read (no inputs, control
    inputs only, another output slot, an op type TensorFlow does not know, a function call), every
    field must be set."""
    from tensorflow.core.framework import attr_value_pb2

    from npu_jupyter._plan.graph.graph import Node
    from npu_jupyter._plan.graph.view import view_of

    @tf.function
    def called(t):
        return t * 2.0

    g = _small_graph()
    with g.as_default():
        fn = called.get_concrete_function(tf.TensorSpec([4, 8], tf.float32))
        fn.add_to_graph(g)
        with tf.control_dependencies([g.get_operation_by_name("out")]):
            tf.constant(1.0, name="after_ctrl")
    gd = g.as_graph_def()
    unknown = gd.node.add(name="unknown_op", op="NotAnOpTensorFlowKnows")
    unknown.input.extend(["split:1", "^x"])
    unknown.attr["T"].CopyFrom(attr_value_pb2.AttrValue(type=tf.float32.as_datatype_enum))
    call = gd.node.add(name="call", op=fn.name.decode() if isinstance(fn.name, bytes) else fn.name)
    call.input.append("x")
    view = view_of(gd)
    slots = [s for s in Node.__slots__ if s != "__dict__"]
    for n in view.order:
        for slot in slots:
            assert hasattr(n, slot), f"{n.name} ({n.op}) has no {slot}"
    assert view.nodes["unknown_op"].output_dtypes == [] and view.nodes["unknown_op"].inputs == [("split", 1)]
    assert view.nodes["call"].functions == [view.nodes["call"].op]
    assert view.nodes["after_ctrl"].control_inputs == ["out"]


def _hostile_listing(kind: str):
    """The small graph's GraphDef made hostile in one way (or all ways, listed backwards)."""
    gd = _small_graph().as_graph_def()
    by_name = {nd.name: nd for nd in gd.node}
    if kind in ("duplicate names", "everything, reversed"):
        twin = gd.node.add(name="mm", op="Identity")  # a second "mm", listed after its consumers
        twin.input.append("x")
        twin.attr["T"].type = tf.float32.as_datatype_enum
        early = type(twin)()
        early.CopyFrom(by_name["x"])
        gd.node.insert(0, early)  # and a second "x" listed first
    if kind in ("missing producers", "everything, reversed"):
        by_name["host_add"].input[1] = "not_in_graph"
        by_name["kept_relu"].input[0] = "not_in_graph_either:2"
    if kind in ("control inputs naming missing, later and own nodes", "everything, reversed"):
        by_name["mm"].input.extend(["^no_such_op", "^reset"])
        by_name["x"].input.append("^x")
        by_name["after"].input.append("^missing")
    if kind in ("a data self-loop, an unknown op, a slot the producer lacks", "everything, reversed"):
        by_name["out"].input[2] = "out"
        by_name["split"].op = "NotAnOpTensorFlowKnows"
        by_name["host_add"].input[0] = "mm:4"
    if kind == "everything, reversed":
        nodes = list(gd.node)[::-1]
        del gd.node[:]
        gd.node.extend(nodes)
    return gd


@pytest.mark.parametrize(
    "kind",
    [
        "duplicate names",
        "missing producers",
        "control inputs naming missing, later and own nodes",
        "a data self-loop, an unknown op, a slot the producer lacks",
        "everything, reversed",
    ],
)
def test_hostile_listings_number_edges_as_a_fresh_numbering_does(kind):
    """The reader resolves inputs against the nodes read so far and leaves the rest (producers
    listed later or missing, control inputs naming missing or own nodes) to one pass after its loop,
    and hands names that repeat to the ordering. Whatever the listing, the view must equal the one
    the ordering numbers afresh (a pruned listing: every node fetched), node for node."""
    from npu_jupyter._plan.graph.view import view_of

    gd = _hostile_listing(kind)
    read = view_of(gd)
    afresh = view_of(gd, fetches=sorted({nd.name for nd in gd.node}))

    def edges(view):
        return [
            (
                n.name,
                n.op,
                [(view.order[j].name, view.order[j].op) if j >= 0 else None for j in n.in_idx],
                list(n.input_dtypes),
                [(view.order[j].name, view.order[j].op) for j in n.ctrl_idx],
            )
            for n in view.order
        ]

    assert edges(read) == edges(afresh)
    assert len(read.order) == len(gd.node)
    last = {nd.name: nd.op for nd in gd.node}  # a repeated name reads its last listed node
    for k, (n, (name, _, data, _, ctrl)) in enumerate(zip(read.order, edges(read))):
        assert n.index == k
        assert len(n.input_dtypes) == len(n.input_names)
        assert data == [(s, last[s]) if s in last else None for s in n.input_names], name
        assert ctrl == [(s, last[s]) for s in n.control_inputs if s in last], name
        # producers first: only a node's edge to itself points at or after it
        assert all(j < k or read.order[j] is n for j in (*n.in_idx, *n.ctrl_idx)), name


@pytest.mark.parametrize(
    ("op", "position"),
    [("Relu", 0), ("MatMul", 0), ("AddN", 0), ("ConcatV2", 0), ("Select", 1), ("Cast", None), ("Shape", None)],
)
def test_an_op_types_output_is_read_from_the_input_its_opdef_types_by_the_same_attr(op, position):
    """Relu's and AddN's output is typed T like input 0, Select's like input 1 (after the bool
    condition); Cast (SrcT in, DstT out) and Shape (T in, out_type out) have no such input."""
    from npu_jupyter._plan.graph.op_recipes import recipe_of

    assert recipe_of(op).typed_input == position


def test_when_names_repeat_output_dtypes_come_from_attrs_not_from_the_input_found_while_reading():
    """The reader takes an op's output dtype from its input typed by the same attr, found by name among
    the nodes read so far; with a repeated name the ordering resolves that name to the last node listed,
    so the attrs decide, as for any other unusual listing."""
    from tensorflow.core.framework import attr_value_pb2, graph_pb2

    gd = graph_pb2.GraphDef()
    for name, op, dtype, inputs in (
        ("x", "Placeholder", tf.float32, []),
        ("r", "Relu", tf.float16, ["x"]),
        ("x", "Placeholder", tf.float16, []),  # the same name again: the one "r" reads after ordering
    ):
        node = gd.node.add(name=name, op=op)
        node.input.extend(inputs)
        node.attr["dtype" if op == "Placeholder" else "T"].CopyFrom(
            attr_value_pb2.AttrValue(type=dtype.as_datatype_enum)
        )
    from npu_jupyter._plan.graph.op_recipes import recipe_of
    from npu_jupyter._plan.graph.view import view_of

    recipe_of("Relu"), recipe_of("Placeholder")  # known types, and no scope key in the bytes: the inline reading
    view = view_of(gd, None, None, gd.SerializeToString())
    assert view.nodes["r"].output_dtypes == ["float16"]
    assert view.nodes["r"].input_dtypes == ["float16"]
