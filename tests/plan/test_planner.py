"""plan(): inputs, config handling, pruning, and whole-model plans."""

from __future__ import annotations

import pickle
import sys

import pytest

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._plan.planner import plan


def _decisions(p):
    return [
        (d.name, d.op_type, d.placement, d.engine, d.dtype_before, d.dtype_after, d.cluster, d.input_dtypes)
        for d in p.ops.values()
    ]


def test_graph_def_graph_and_concrete_function_give_the_same_plan():
    @tf.function
    def step(x, w):
        return tf.nn.softmax(tf.matmul(tf.nn.relu(x), w))

    fn = step.get_concrete_function(tf.TensorSpec([2, 4], tf.float32), tf.TensorSpec([4, 3], tf.float32))
    cfg = NpuConfig(precision_mode="allow_mix_precision")
    from_fn = plan(fn, cfg)
    assert _decisions(from_fn) == _decisions(plan(fn.graph, cfg))
    assert _decisions(from_fn) == _decisions(plan(fn.graph.as_graph_def(), cfg))
    assert any(d.op_type == "MatMul" and d.dtype_after == "float16" for d in from_fn.ops.values())


def test_npu_config_options_drive_the_plan_and_are_recorded(conv_net):
    cfg = NpuConfig(mix_compile_mode=True, precision_mode="force_fp16")
    p = plan(conv_net, cfg)
    assert p.config_changes == {"mix_compile_mode": True, "precision_mode": "force_fp16"}
    assert p.precision_mode == "force_fp16"
    assert "mixed computing" in p.title and "force_fp16" in p.title
    assert p.ops["relu"].dtype_after == "float16"


def test_soc_argument_wins_over_soc_config(conv_net):
    cfg = NpuConfig(soc_config="Ascend910B1")
    assert plan(conv_net, cfg).soc == "Ascend910B"
    assert plan(conv_net, cfg).precision_mode == "must_keep_origin_dtype"
    assert plan(conv_net, cfg, soc="Ascend910").precision_mode == "allow_fp32_to_fp16"


def test_unset_config_plans_full_offload_with_the_training_default(conv_net):
    p = plan(conv_net)
    assert p.config_changes == {}
    assert p.precision_mode == "allow_fp32_to_fp16" and p.soc == "Ascend910"
    assert len(p.subgraphs) == 1


def test_fetches_prune_the_plan_to_what_they_need(conv_net):
    p = plan(conv_net, fetches=["mm:0"])
    assert set(p.ops) == {"x", "filter", "conv", "relu", "flat", "flat/shape", "w", "mm"}


def test_every_decision_has_reasons_and_per_tensor_dtypes(conv_net):
    p = plan(conv_net, {"precision_mode": "allow_mix_precision"})
    for d in p.ops.values():
        assert d.placement_reason and d.precision_reason
        assert len(d.output_dtypes) == len(conv_net.get_operation_by_name(d.name).outputs)
        assert len(d.input_dtypes) == len(d.inputs)


def test_every_decision_field_is_set_and_equals_a_keyword_built_decision(conv_net):
    # the planner fills decisions attribute by attribute (faster than the generated __init__)
    from dataclasses import fields

    from npu_jupyter._plan.model import OpDecision

    names = [f.name for f in fields(OpDecision)]
    p = plan(conv_net, {"precision_mode": "allow_mix_precision"})
    for d in p.ops.values():
        assert list(vars(d)) == names
        assert d == OpDecision(**{k: getattr(d, k) for k in names})


def test_a_decision_field_the_planner_does_not_set_is_one_clear_error(conv_net):
    from npu_jupyter._plan import planner
    from npu_jupyter._plan.model import OpDecision

    built = next(iter(plan(conv_net).ops.values()))
    planner._check_decision_fields(built)  # a decision the planner built has every field
    partial = object.__new__(OpDecision)
    for key, value in list(vars(built).items())[:-1]:  # as if a newly added field were not set
        setattr(partial, key, value)
    with pytest.raises(AssertionError, match="set every field there"):
        planner._check_decision_fields(partial)


def test_hostile_op_names_survive_planning_unchanged(conv_net):
    gd = conv_net.as_graph_def()
    evil = "<script>alert(1)</script>"
    for node in gd.node:
        if node.name == "relu":
            node.name = evil
        for k, inp in enumerate(node.input):
            if inp == "relu":
                node.input[k] = evil
    p = plan(gd)
    assert p.ops[evil].name == evil and p.ops[evil].op_type == "Relu"
    assert p.ops["flat"].inputs[0] == evil
    assert evil in p.subgraphs[0].ops


def test_plan_holds_no_tensorflow_objects_and_pickles(conv_net):
    p = plan(conv_net)
    again = pickle.loads(pickle.dumps(p))
    assert _decisions(again) == _decisions(p)


def test_bad_graph_argument_is_one_clear_error():
    with pytest.raises(TypeError, match="needs a tf.Graph, a GraphDef or a tf.function ConcreteFunction"):
        plan("not a graph")


@pytest.mark.slow
def test_resnet50_training_step_is_one_geop_with_cube_ops_in_float16():
    import models

    fn = models.resnet50_train_step()
    p = plan(fn)
    assert len(p.ops) == models.node_count(fn)
    assert len(p.subgraphs) == 1 and not p.errors
    convs = [d for d in p.ops.values() if d.op_type.startswith("Conv2D")]
    assert convs and all(d.placement == "device" and d.dtype_after == "float16" for d in convs)
    mix = plan(fn, {"precision_mode": "allow_mix_precision"})
    assert {d.policy for d in mix.ops.values() if d.op_type == "BiasAddGrad"} == {"black"}


@pytest.mark.slow
def test_bert_and_lstm_training_steps_plan_on_both_socs():
    import models

    for fn in (models.bert_train_step(), models.lstm_train_step()):
        for soc in ("Ascend910", "Ascend910B"):
            p = plan(fn, soc=soc)
            assert len(p.ops) == len(fn.graph.as_graph_def().node)
            assert p.subgraphs
            assert all(d.placement_reason for d in p.ops.values())


def test_replanning_sees_attributes_set_after_the_first_plan():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2, 2], name="x")
        tf.matmul(x, x, name="mm")
    cfg = {"precision_mode": "allow_fp32_to_fp16"}
    assert plan(g, cfg, soc="Ascend910B").ops["mm"].dtype_after == "float16"
    # what npu_bridge's util.keep_tensors_dtypes does to an existing graph
    g.get_operation_by_name("mm")._set_attr("_keep_dtype", tf.compat.v1.AttrValue(i=1))
    assert plan(g, cfg, soc="Ascend910B").ops["mm"].dtype_after == "float32"


def test_a_planned_graph_is_freed_once_the_user_drops_it_and_its_cached_view_goes_with_it():
    import gc
    import weakref

    from npu_jupyter._plan import planner

    g = tf.Graph()
    with g.as_default():
        tf.matmul(v1.placeholder(tf.float32, [2, 2], name="x"), tf.ones([2, 2]), name="mm")
    plan(g)
    assert planner._VIEW_CACHE.get(g) is not None, "the view is cached for re-plans of the same graph"
    assert plan(g, {"precision_mode": "force_fp16"}).ops["mm"].dtype_after == "float16"  # the cached view's shapes
    alive = weakref.ref(g)
    del g
    gc.collect()
    assert alive() is None, "the planner's view cache must not keep the user's graph alive"


def _one_matmul_graph():
    g = tf.Graph()
    with g.as_default():
        tf.matmul(v1.placeholder(tf.float32, [2, 2], name="x"), tf.ones([2, 2]), name="mm")
    return g


def _in_generation(obj, *generations):
    import gc

    return any(o is obj for gen in generations for o in gc.get_objects(generation=gen))


@pytest.mark.skipif(sys.version_info < (3, 8), reason="gc.get_objects(generation=) is Python 3.8+")
def test_a_plans_objects_go_to_the_oldest_generation_without_a_young_collection_scanning_them():
    import gc

    g = _one_matmul_graph()
    gc.collect()
    decision = plan(g).ops["mm"]
    [[] for _ in range(1000)]  # tracked allocations: enough to start a young collection
    assert gc.isenabled() and gc.is_tracked(decision)
    assert not _in_generation(decision, 0, 1), "a young collection would scan the plan only to find it alive"
    assert _in_generation(decision, 2)


@pytest.mark.skipif(sys.version_info < (3, 8), reason="gc.get_objects(generation=) is Python 3.8+")
def test_objects_the_process_froze_stay_frozen_and_a_collector_the_user_turned_off_stays_off():
    import gc

    g = _one_matmul_graph()
    mine = [object()]  # an object the process froze (a list: tracked by the collector)
    gc.freeze()  # a server about to fork() freezes its objects: unfreezing them would undo that
    try:
        plan(g)
        assert gc.get_freeze_count() > 0 and not _in_generation(mine, 0, 1, 2), "still frozen"
    finally:
        gc.unfreeze()
    assert _in_generation(mine, 2)  # the test's own unfreeze: the check above can see a thawed object
    gc.disable()
    try:
        decision = plan(g, {"precision_mode": "force_fp16"}).ops["mm"]
        assert not gc.isenabled()
        assert _in_generation(decision, 0), "with the collector off the planner moves nothing"
    finally:
        gc.enable()


_CHANGES = {
    "append": lambda xs: xs.append("annotated"),
    "extend": lambda xs: xs.extend(["annotated"]),
    "insert": lambda xs: xs.insert(0, "annotated"),
    "item": lambda xs: xs.__setitem__(slice(0, 0), ["annotated"]),
    "+=": lambda xs: xs.__iadd__(["annotated"]),
    "*=": lambda xs: xs.__imul__(2),
    "sort": lambda xs: xs.sort(),
    "reverse": lambda xs: xs.reverse(),
    "clear": lambda xs: xs.clear(),
    "del": lambda xs: xs.__delitem__(slice(None)),
    "pop": lambda xs: xs.pop(),
    "remove": lambda xs: xs.remove("annotated"),
}


def test_a_decisions_lists_refuse_every_change_so_no_other_decision_or_later_plan_can_change():
    """A user may try to annotate a plan in a notebook. The decisions share their lists with each other
    and with the cached view (readonly.py), so every change is refused with a message naming the way
    out, nothing changes, and a copy of one's own is a plain list."""
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2, 2], name="x")
        a = tf.matmul(x, x, name="a")
        tf.matmul(a, a, name="b")
    cfg = {"precision_mode": "allow_fp32_to_fp16"}
    first = plan(g, cfg)
    fields = ("inputs", "input_dtypes", "output_dtypes", "body_ops", "declared_input_dtypes", "producer_dtypes")
    expected = {name: [list(getattr(d, f)) for f in fields] for name, d in first.ops.items()}
    assert expected["b"] == [
        ["a", "a"],
        ["float16", "float16"],
        ["float16"],
        [],
        ["float32", "float32"],
        ["float16", "float16"],
    ]
    for d in first.ops.values():
        for field in fields:
            for change in _CHANGES.values():
                with pytest.raises(TypeError, match=r"read-only.*list\(decision\.inputs\)"):
                    change(getattr(d, field))
    assert {name: [list(getattr(d, f)) for f in fields] for name, d in first.ops.items()} == expected
    again = plan(g, cfg)  # the cached view
    assert {name: [getattr(d, f) for f in fields] for name, d in again.ops.items()} == expected
    mine = list(first.ops["b"].inputs)
    mine.append("annotated")
    assert type(mine) is list and first.ops["b"].inputs == ["a", "a"]
    records = first.to_records()
    records[0]["inputs"].append("annotated")  # records are the user's own plain lists
    assert all(type(r[f]) is list for r in records for f in fields)
    copied = pickle.loads(pickle.dumps(first))  # a plan sent to another process: unpickling must not call extend
    assert {name: [getattr(d, f) for f in fields] for name, d in copied.ops.items()} == expected
    with pytest.raises(TypeError, match="read-only"):
        copied.ops["b"].inputs.append("annotated")


def test_a_decision_built_by_hand_has_read_only_lists_as_the_planners_have():
    from npu_jupyter._plan.model import OpDecision
    from npu_jupyter._plan.readonly import ReadOnlyList

    d = OpDecision(
        name="x", op_type="Relu", placement="device", engine="AI_CORE", placement_reason="",
        dtype_before="float32", dtype_after="float32", precision_reason="", inputs=["a"],
    )  # fmt: skip
    assert d.inputs == ["a"] and type(d.inputs) is ReadOnlyList and type(d.body_ops) is ReadOnlyList
    with pytest.raises(TypeError, match="read-only"):
        d.body_ops.append("Relu")


@pytest.mark.parametrize("value", ["mm", b"mm"])
def test_a_decision_built_by_hand_refuses_one_string_for_a_list_instead_of_splitting_it(value):
    """``inputs="mm"`` (one producer name where a list belongs) must not become ``["m", "m"]``."""
    from npu_jupyter._plan.model import OpDecision

    with pytest.raises(
        TypeError, match=r"OpDecision\.inputs takes a list of strings, not the single (str|bytes) b?'mm'"
    ):
        OpDecision(
            name="x", op_type="Relu", placement="device", engine="AI_CORE", placement_reason="",
            dtype_before="float32", dtype_after="float32", precision_reason="", inputs=value,
        )  # fmt: skip


def test_npu_jupyter_plan_stays_callable_after_a_plan_submodule_was_imported(conv_net):
    import npu_jupyter
    import npu_jupyter._plan.model

    assert npu_jupyter.plan(conv_net, fetches="mm").ops["mm"].placement == "device"
