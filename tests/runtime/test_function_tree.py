"""One plan for a traced function and the functions it calls."""

from __future__ import annotations

from npu_jupyter._plan.model import OpDecision, Plan, Subgraph, Transfer
from npu_jupyter._runtime.functions.tree import function_of, tree_plan


def _op(name, engine="AI_CORE", after="float32", inputs=(), cluster="c0"):
    placement = "host" if engine == "HOST" else "device"
    return OpDecision(
        name=name,
        op_type="MatMul",
        placement=placement,
        engine=engine,
        placement_reason="r",
        dtype_before="float32",
        dtype_after=after,
        precision_reason="p",
        cluster=None if engine == "HOST" else cluster,
        inputs=list(inputs),
    )


def _plan(ops, title, **kw):
    return Plan(ops={d.name: d for d in ops}, title=title, **kw)


def test_the_called_functions_ops_join_under_their_function_name_and_count():
    top = _plan(
        [_op("x"), _op("call", inputs=["x"])], "2 ops · TF2 adapter (npu_device): whole function on the NPU · m · S"
    )
    top.subgraphs = [Subgraph("c0", ["x", "call"])]
    inner = _plan([_op("mm", after="float16")], "1 ops · whole · m · S", warnings=["slow mm"], errors=["bad mm"])
    inner.subgraphs = [Subgraph("c0", ["mm"])]
    joined = tree_plan([("outer_1", top), ("inner_2", inner)])
    assert list(joined.ops) == ["x", "call", "inner_2/mm"]
    assert joined.functions == ["outer_1", "inner_2"]
    assert joined.summary()["precision_changed"] == 1 and joined.summary()["ops"] == 3
    assert joined.title.startswith("3 ops in 2 functions · TF2 adapter (npu_device): whole function on the NPU")
    # a function compiled whole holds its callees in its one NPU graph
    assert [s.ops for s in joined.subgraphs] == [["x", "call", "inner_2/mm"]] and top.subgraphs[0].ops == ["x", "call"]
    assert joined.warnings == ["in inner_2: slow mm"] and joined.errors == ["in inner_2: bad mm"]
    assert [function_of(op, joined.functions) for op in joined.ops] == [0, 0, 1]


def test_a_mixed_callers_callees_keep_their_clusters_and_transfers():
    top = _plan([_op("x", engine="HOST"), _op("call", inputs=["x"])], "2 ops · mixed · m · S")
    top.subgraphs = [Subgraph("c0", ["call"])]
    inner = _plan([_op("a", engine="HOST"), _op("mm", inputs=["a"])], "2 ops · mixed · m · S")
    inner.subgraphs = [Subgraph("c0", ["mm"])]
    inner.transfers = [Transfer("a", "mm", "a:0", "float32", "h2d", 16, ["mm"])]
    joined = tree_plan([("outer_1", top), ("inner_2", inner)])
    assert [s.name for s in joined.subgraphs] == ["c0", "inner_2/c0"]
    assert joined.ops["inner_2/mm"].cluster == "inner_2/c0" and joined.ops["inner_2/mm"].inputs == ["inner_2/a"]
    (transfer,) = joined.transfers
    assert (transfer.src, transfer.dst, transfer.consumers) == ("inner_2/a", "inner_2/mm", ["inner_2/mm"])


def test_a_function_calling_nothing_keeps_its_plan():
    top = _plan([_op("x")], "1 ops · whole · m · S")
    joined = tree_plan([("f_1", top)])
    assert joined.ops == top.ops and joined.title == top.title and joined.functions == ["f_1"]


def test_a_mixed_callers_title_counts_the_npu_clusters_of_every_function_as_the_counts_line_does():
    """npu_device's title words name the called function's clusters; the tree's title must give the
    tree's count, the one ``summary()["clusters"]`` (the report's counts line) gives."""
    top = _plan(
        [_op("x", engine="HOST"), _op("call", inputs=["x"])],
        "2 ops · TF2 adapter (npu_device): mixed, 1 NPU cluster(s) · allow_mix_precision (precision_mode) · Ascend910",
    )
    top.subgraphs = [Subgraph("c0", ["call"])]
    inner = _plan(
        [_op("mm"), _op("add", inputs=["mm"], cluster="c1")],
        "2 ops · TF2 adapter (npu_device): mixed, 2 NPU cluster(s) · m · S",
    )
    inner.subgraphs = [Subgraph("c0", ["mm"]), Subgraph("c1", ["add"])]
    joined = tree_plan([("outer_1", top), ("inner_2", inner)])
    assert joined.summary()["clusters"] == 3
    assert joined.title == (
        "4 ops in 2 functions · TF2 adapter (npu_device): mixed, 3 NPU cluster(s) · allow_mix_precision "
        "(precision_mode) · Ascend910"
    )
    assert top.title.startswith(
        "2 ops · TF2 adapter (npu_device): mixed, 1 NPU cluster(s)"
    )  # the called plan is unchanged
