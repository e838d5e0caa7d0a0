"""The emulator plans a run from its ancestors only (plan_input): the very plan the whole graph gives."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session.emulator import EmulatorSession
from npu_jupyter._runtime.session.plan_input import RunGraphView, planner_input

MODES = ("allow_mix_precision", "must_keep_origin_dtype", "allow_fp32_to_fp16")


def _script(tf):
    """A TF1 script's graph: global step, fed learning rate, a queue and its close op, a cond, a static
    shape set after the op was made (only the tf.Graph knows it), resource and ref variables."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        step = v1.train.get_or_create_global_step()
        queue = v1.FIFOQueue(4, [tf.float32], name="inputs")
        batch = queue.dequeue(name="batch")
        batch.set_shape([2, 8])
        enqueue = queue.enqueue([tf.ones([2, 8])], name="enqueue")
        close = queue.close(cancel_pending_enqueues=True, name="close")
        rate = v1.placeholder_with_default(0.1, [], name="rate")
        with v1.variable_scope("net", use_resource=True):
            w = v1.get_variable("w", [8, 4], initializer=v1.glorot_uniform_initializer(seed=1))
        ref = v1.get_variable("ref", [4], initializer=v1.zeros_initializer(), use_resource=False)
        logits = tf.matmul(batch, w) + ref
        warm = tf.cond(step < 2, lambda: rate * 0.1, lambda: rate, name="warmup")
        loss = tf.reduce_mean(tf.square(logits), name="loss")
        train = v1.train.GradientDescentOptimizer(warm).minimize(loss, global_step=step, name="train")
        init = v1.global_variables_initializer()
        read, step_now = w.read_value(), step.read_value()
    fetch_sets = {
        "close": [close.name],
        "global step": [step_now.name],
        "variable read": [read.name, ref.name],
        "init": [init.name],
        "enqueue": [enqueue.name],
        "cond": [warm.name],
        "train": [loss.name, train.name],
    }
    return g, fetch_sets


def _same(a, b):
    assert a == b
    assert list(a.ops) == list(b.ops), "the same ops in the same (topological) order"
    assert a.title == b.title


@pytest.mark.parametrize("mode", MODES)
def test_a_run_planned_from_its_ancestors_is_the_plan_of_the_whole_graph(tf, mode):
    from models import cnn_v1, dataset_pipeline_v1, mlp_v1

    from npu_jupyter._plan.planner import plan

    cfg = NpuConfig(precision_mode=mode).snapshot()
    script, sets = _script(tf)
    pipeline = dataset_pipeline_v1()
    cases = [(script, names) for names in sets.values()]
    cases += [(pipeline.graph, list(pipeline.fetches)), (pipeline.graph, [pipeline.init_ops[0]])]
    for model in (mlp_v1(), cnn_v1()):  # graphs without library functions: read op by op
        cases += [(model.graph, list(model.init_ops)), (model.graph, list(model.fetches)), (model.graph, ["loss:0"])]
    for graph, names in cases:
        cut = planner_input(graph, tuple(names), share=1.0)
        assert isinstance(cut, RunGraphView), names
        assert len(cut.as_graph_def().node) < len(graph.as_graph_def().node) or names == sets["train"]
        _same(plan(cut, cfg, fetches=names), plan(graph, cfg, fetches=names))


def test_the_cut_graph_def_is_the_whole_graph_def_pruned(tf):
    from models import cnn_v1

    from npu_jupyter._runtime.session.plan_input import ancestors

    g, sets = _script(tf)
    cnn = cnn_v1().graph
    for graph, names in [(g, sets["train"]), (g, sets["close"]), (cnn, ["loss:0"]), (cnn, ["train"])]:
        keep = ancestors(graph, names, 10**6)
        cut = planner_input(graph, tuple(names), share=1.0).as_graph_def()
        whole = graph.as_graph_def()
        assert list(cut.node) == [n for n in whole.node if n.name in keep]
        assert cut.versions == whole.versions and cut.library == whole.library


def test_a_large_run_plans_from_the_graph_itself_and_unknown_names_reach_the_planner(tf):
    g, sets = _script(tf)
    assert planner_input(g, tuple(sets["train"])) is g, "a training step reaches most of the graph"
    assert isinstance(planner_input(g, tuple(sets["close"])), RunGraphView)
    assert planner_input(g, ("no_such_op",)) is g, "the planner raises its own error for it"
    assert planner_input(g, None) is g


def _counting_planner(monkeypatch):
    """Record how many NodeDefs the default planner reads per call (the graph it is handed)."""
    from npu_jupyter._plan import planner

    seen: list[tuple[list[str], int]] = []
    real = planner.plan

    def spy(graph, config=None, **kwargs):
        seen.append((list(kwargs.get("fetches") or []), len(graph.as_graph_def().node)))
        return real(graph, config, **kwargs)

    monkeypatch.setattr(planner, "plan", spy)
    return seen


def test_closing_the_queue_after_training_plans_two_ops_not_the_model(tf, monkeypatch):
    g, sets = _script(tf)
    seen = _counting_planner(monkeypatch)
    total = len(g.as_graph_def().node)
    with EmulatorSession(NpuConfig(precision_mode="allow_mix_precision"), g) as sess:
        sess.run(sets["init"])
        sess.run(sets["enqueue"])
        sess.run(sets["train"])
        sess.run(sets["global step"])
        sess.run(sets["close"])
    from npu_jupyter._plan import planner

    assert not any(isinstance(g, RunGraphView) for g in list(planner._VIEW_CACHE)), "no cut view is kept"
    read = {tuple(names): count for names, count in seen}
    assert read[tuple(sets["close"])] == 2, "the close op and its queue"
    assert read[tuple(sets["global step"])] <= 3
    assert read[tuple(sets["train"])] == total, "a training step is planned from the graph itself"


def test_emulated_runs_and_reports_match_planning_the_whole_graph(tf):
    """Results bitwise, plans, emulation and warnings of every run equal a session planning whole graphs."""
    from npu_jupyter._plan.planner import plan

    g, sets = _script(tf)
    order = ["init", "enqueue", "train", "enqueue", "train", "global step", "variable read", "cond", "close"]
    outs = []
    for plan_fn in (None, plan):  # a custom plan_fn is handed the whole graph
        with EmulatorSession(NpuConfig(precision_mode="allow_mix_precision"), g, plan_fn=plan_fn) as sess:
            outs.append(([sess.run(sets[k]) for k in order], sess.reports))
    (ours, our_reports), (whole, whole_reports) = outs
    for a, b in zip(ours, whole):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    assert len(our_reports) == len(whole_reports)
    for a, b in zip(our_reports, whole_reports):
        _same(a.plan, b.plan)
        assert (a.fetches, a.steps, a.emulation, a.warnings) == (b.fetches, b.steps, b.emulation, b.warnings)
        assert a.session.first_step == b.session.first_step and a.session.last_step == b.session.last_step
    assert any(r.emulation for r in our_reports), "the training step is emulated (rounded) in both"


def test_dump_overflow_and_profiling_runs_match_planning_the_whole_graph(tf, tmp_path):
    """With dump (every step, all tensors), overflow detection and profiling on, the cut plans write the
    same dump files with the same values, and the same overflow findings, as whole-graph plans."""
    import json

    from npu_jupyter._plan.planner import plan

    g, sets = _script(tf)
    order = ["init", "enqueue", "train", "global step", "variable read", "close"]
    seen = []
    for side, plan_fn in (("cut", None), ("whole", plan)):
        out = tmp_path / side
        (out / "profiling").mkdir(parents=True)
        cfg = NpuConfig(
            precision_mode="allow_mix_precision",
            enable_dump=True,
            dump_path=str(out),
            dump_mode="all",
            enable_dump_debug=True,
            dump_debug_mode="all",
            profiling_mode=True,
            profiling_options=json.dumps({"output": str(out / "profiling"), "training_trace": "on"}),
        )
        with EmulatorSession(cfg, g, plan_fn=plan_fn) as sess:
            for k in order:
                sess.run(sets[k])
            reports = [(r.fetches, r.overflow_ops, r.dump.steps, r.emulation) for r in sess.reports]
        files = {
            p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*.npy"))  # tensor files: names and bytes
        }
        seen.append((reports, files))
    (cut_reports, cut_files), (whole_reports, whole_files) = seen
    assert cut_files, "the steps were dumped"
    assert cut_reports == whole_reports
    assert cut_files.keys() == whole_files.keys()
    assert all(cut_files[k] == whole_files[k] for k in cut_files)
