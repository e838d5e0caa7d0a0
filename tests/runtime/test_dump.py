"""Data dump: documented steps and slots, atomic layout, path checks, budget, load_dump."""

from __future__ import annotations

import os

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._runtime.observe import dump as dump_mod
from npu_jupyter._runtime.observe.dump.format import parse_dump_step, step_selected
from npu_jupyter._runtime.observe.dump.reader import load_dump
from npu_jupyter._runtime.observe.dump.writer import DumpEntry, DumpWriter
from npu_jupyter._runtime.session.emulator import EmulatorSession


def _graph(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        y = tf.add(x, 1e-4, name="y")
        tf.multiply(y, 2.0, name="z")
    return g


def _run_steps(tf, hand, tmp_path, steps, half=(), **options):
    g = _graph(tf)
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), **options)
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn(half)) as sess:
        for i in range(steps):
            sess.run("z:0", {"x:0": np.full(3, float(i + 1), np.float32)})
        return sess.last_report


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("0|5|10", [0, 5, 10]), ("0|3-5|10", [0, 3, 4, 5, 10]), (None, list(range(12))), ("", list(range(12)))],
)
def test_dump_step_grammar_selects_the_documented_steps(spec, expected):
    ranges = parse_dump_step(spec)
    assert [s for s in range(12) if step_selected(ranges, s)] == expected


@pytest.mark.parametrize("spec", ["1-a", "5-3", "1-2-3", " 1"])
def test_malformed_dump_step_is_refused_with_the_adapters_example(spec):
    with pytest.raises(NpuConfigError, match="correct example"):
        parse_dump_step(spec)


def test_dump_contains_exactly_the_selected_steps(tf, hand, tmp_path):
    _run_steps(tf, hand, tmp_path, 6, dump_step="0|2-3")
    dump = load_dump(tmp_path)
    assert dump.steps == [0, 2, 3]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["step_0", "step_2", "step_3"]
    np.testing.assert_allclose(dump[2]["x"][0], [3.0, 3.0, 3.0])


def test_output_mode_dumps_every_output_slot_and_no_inputs(tf, hand, tmp_path):
    _run_steps(tf, hand, tmp_path, 1)
    step = load_dump(tmp_path)[0]
    assert set(step) == {"x", "y", "y/y", "z", "z/y"}
    assert all(list(slots.keys()) == ["output:0"] for slots in step.values())


def test_input_mode_dumps_each_input_slot(tf, hand, tmp_path):
    _run_steps(tf, hand, tmp_path, 1, dump_mode="input")
    step = load_dump(tmp_path)[0]
    assert sorted(step["z"].keys()) == ["input:0", "input:1"]
    assert "x" not in step  # a placeholder has no inputs


def test_all_mode_dumps_inputs_and_outputs(tf, hand, tmp_path):
    _run_steps(tf, hand, tmp_path, 1, dump_mode="all")
    assert sorted(load_dump(tmp_path)[0]["z"].keys()) == ["input:0", "input:1", "output:0"]


def test_float16_outputs_are_dumped_as_float16(tf, hand, tmp_path):
    _run_steps(tf, hand, tmp_path, 1, half={"AddV2"})
    dump = load_dump(tmp_path)
    y = dump.get(0, "y", 0)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, [1.0, 1.0, 1.0])
    assert dump.get(0, "z", 0).dtype == np.float32


def test_dump_layer_limits_the_dump_to_named_ops(tf, hand, tmp_path):
    _run_steps(tf, hand, tmp_path, 1, dump_layer="z")
    assert set(load_dump(tmp_path)[0]) == {"z"}


def test_report_points_at_the_dump(tf, hand, tmp_path):
    report = _run_steps(tf, hand, tmp_path, 2)
    assert report.dump_dir == os.path.realpath(tmp_path)
    assert report.dump.steps == (
        0,
        1,
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "dump_path must be set"),
        (lambda p: str(p / "missing"), "is invalid"),
        (lambda p: (p / "file.txt").write_text("x") and str(p / "file.txt"), "is not directory"),
    ],
)
def test_a_bad_dump_path_is_refused_before_running_and_leaves_nothing(tf, hand, tmp_path, make, message):
    path = make(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    options = {"enable_dump": True}
    if path:
        options["dump_path"] = path
    cfg = NpuConfig()
    for key, value in options.items():
        setattr(cfg, key, value)
    with pytest.raises(ValueError, match=message):
        EmulatorSession(cfg, _graph(tf), plan_fn=hand.plan_fn())
    assert sorted(tmp_path.rglob("*")) == before


def test_a_read_only_dump_path_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as root: permissions are not enforced")
        with pytest.raises(NpuConfigError, match="read, write permissions"):
            dump_mod.check_dump_path(str(folder))
    finally:
        folder.chmod(0o700)


def test_budget_stops_dumping_with_a_clear_message_and_keeps_earlier_steps(tmp_path):
    writer = DumpWriter(str(tmp_path), budget_bytes=1000)
    entry = DumpEntry("a/b", "Add", "output", 0, np.zeros(100, np.float32))  # 400 bytes + header
    writer.write_step(0, [entry])
    writer.write_step(1, [entry])
    with pytest.raises(dump_mod.DumpBudgetExceeded, match="budget exceeded.*step 2.*NPU_JUPYTER_DUMP_BUDGET"):
        writer.write_step(2, [entry])
    assert load_dump(tmp_path).steps == [0, 1]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_emulator_warns_once_the_budget_is_exceeded(tf, hand, tmp_path, monkeypatch):
    monkeypatch.setenv(dump_mod.BUDGET_ENV, "20B")
    with pytest.warns(RuntimeWarning, match="dump budget exceeded"):
        report = _run_steps(tf, hand, tmp_path, 3)
    assert load_dump(tmp_path).steps == []
    assert any("dump budget exceeded" in w for w in report.warnings)


def test_a_full_disk_is_one_clear_error_naming_the_disk_dump_path_and_step(tmp_path):
    """A real 256 KB tmpfs: the step that does not fit fails with ENOSPC wording, earlier steps stay."""
    import errno
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        writer = DumpWriter(str(disk))
        entry = DumpEntry("big", "Add", "output", 0, np.zeros(100 * 256, np.float32))  # 100 KB per step
        writer.write_step(0, [entry])
        with pytest.raises(OSError) as caught:
            for step in range(1, 5):
                writer.write_step(step, [entry])
        error = caught.value
        assert isinstance(error, dump_mod.DumpWriteError) and error.errno == errno.ENOSPC
        text = str(error)
        assert "disk is full" in text and "no space left" in text and str(disk) in text
        assert f"step {step}" in text
        assert load_dump(disk).steps == list(range(step))
        assert not [p for p in disk.iterdir() if p.name.startswith(".")]  # the failed step was removed
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_budget_env_accepts_units(monkeypatch):
    monkeypatch.setenv(dump_mod.BUDGET_ENV, "2MB")
    assert dump_mod.budget_from_env() == 2 * 1024 * 1024
    monkeypatch.setenv(dump_mod.BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match="NPU_JUPYTER_DUMP_BUDGET"):
        dump_mod.budget_from_env()


def test_a_half_written_step_is_invisible_to_readers(tmp_path):
    writer = DumpWriter(str(tmp_path))
    writer.write_step(0, [DumpEntry("x", "Placeholder", "output", 0, np.ones(2, np.float32))])
    partial = tmp_path / ".step_1.abc.partial"
    partial.mkdir()
    np.save(partial / "x.output.0.npy", np.ones(2))
    (tmp_path / "step_2").mkdir()  # a folder without its manifest is not a complete step
    assert load_dump(tmp_path).steps == [0]


def test_op_names_that_collide_after_sanitising_keep_separate_files(tmp_path):
    writer = DumpWriter(str(tmp_path))
    writer.write_step(
        0,
        [
            DumpEntry("a/b", "Add", "output", 0, np.array([1.0], np.float32)),
            DumpEntry("a_b", "Add", "output", 0, np.array([2.0], np.float32)),
        ],
    )
    dump = load_dump(tmp_path)
    assert dump.get(0, "a/b", 0)[0] == 1.0 and dump.get(0, "a_b", 0)[0] == 2.0


def test_rewriting_a_step_replaces_it_whole(tmp_path):
    writer = DumpWriter(str(tmp_path))
    writer.write_step(0, [DumpEntry("old", "Add", "output", 0, np.ones(1))])
    writer.write_step(0, [DumpEntry("new", "Add", "output", 0, np.ones(1))])
    assert set(load_dump(tmp_path)[0]) == {"new"}
    assert load_dump(tmp_path / "step_0").steps == [0]


def test_dump_data_stats_records_statistics_instead_of_tensors(tf, hand, tmp_path):
    _run_steps(tf, hand, tmp_path, 1, dump_data="stats")
    assert not list(tmp_path.rglob("*.npy"))
    z = next(t for t in load_dump(tmp_path).tensors() if t.op == "z")
    assert z.stats["max"] == pytest.approx(2.0002) and z.stats["count"] == 3 and z.stats["nan"] == 0
    with pytest.raises(ValueError, match="statistics only"):
        z.value


def test_ops_upstream_of_a_fed_tensor_are_not_dumped(tf, hand, tmp_path):
    g = _graph(tf)
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path))
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn()) as sess:
        assert sess.run("z:0", {"y:0": np.ones(3, np.float32)}).tolist() == [2.0, 2.0, 2.0]
    step = load_dump(tmp_path)[0]
    assert "z" in step and "x" not in step and "y" not in step


@pytest.mark.parametrize("spec", ["-5", "3-", "5\n", "٣"])
def test_dump_step_the_config_refuses_is_refused_by_the_runtime_too(spec):
    with pytest.raises(NpuConfigError, match="dump_step"):
        NpuConfig().set("dump_step", spec)
    with pytest.raises(NpuConfigError, match="correct example"):
        parse_dump_step(spec)


def _train_graph(tf):
    """w -= 0.1 * x per step: an initializer graph and a training graph, like a real loop."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        w = tf.compat.v1.get_variable("w", initializer=tf.constant([1.0, 2.0, 3.0]), use_resource=True)
        weights = tf.multiply(w.read_value(), 1.0, name="weights")
        with tf.control_dependencies([weights]):  # read before the update, every step
            tf.group(w.assign_sub(0.1 * x), name="train")
        init = tf.compat.v1.variables_initializer([w], name="init")
    return g, init.name


def test_dump_steps_count_per_graph_so_the_init_run_does_not_shift_training_steps(tf, hand, tmp_path):
    """dump_step "0|2" after an initializer run dumps training steps 0 and 2 (each graph counts its own
    iterations, as the adapter's GE models do); the init graph's own step 0 is dumped too, in its folder."""
    g, init = _train_graph(tf)
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), dump_step="0|2")
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn(())) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(["weights:0", "train"], {"x:0": np.ones(3, np.float32)})
        report = sess.last_report
    assert report.dump.steps == (
        0,
        2,
    )
    dump = load_dump(tmp_path)
    assert dump.graphs == [0, 1] and dump.graph_id == 1
    assert dump.steps == [0, 2]
    np.testing.assert_allclose(dump[0]["weights"][0], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(dump.get(2, "weights", 0), [0.8, 1.8, 2.8], rtol=1e-6)
    assert dump.graph_info(1)["fetches"] == ["weights:0", "train"] and dump.graph_info(1)["feeds"] == ["x:0"]
    init_graph = dump.graph(0)
    assert init_graph.steps == [0] and dump.graph_info(0)["fetches"] == [init]
    assert load_dump(tmp_path, graph=0).steps == [0]
    assert report.dump_dir == os.path.realpath(tmp_path)
    assert report.dump.graph_dir == os.path.join(os.path.realpath(tmp_path), "graph_1")
    assert load_dump(tmp_path / "graph_1").steps == [0, 2]
    assert load_dump(tmp_path / "graph_1" / "step_2").steps == [2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph_1", "graphs.json", "step_0"]
    with pytest.raises(KeyError, match="graphs: \\[0, 1\\]"):
        load_dump(tmp_path, graph=7)


def test_the_same_fetches_with_other_feeds_are_another_graph_with_its_own_counter(tf, hand, tmp_path):
    g = _graph(tf)
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), dump_step="1")
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn(())) as sess:
        for i in range(2):
            sess.run("z:0", {"x:0": np.full(3, float(i), np.float32)})
            sess.run("z:0", {"y:0": np.full(3, 10.0 + i, np.float32)})
    dump = load_dump(tmp_path)
    assert dump.graphs == [0, 1]
    np.testing.assert_allclose(dump.graph(0)[1]["z"][0], [2.0002] * 3, rtol=1e-5)
    np.testing.assert_allclose(dump.graph(1)[1]["z"][0], [22.0] * 3)


def test_load_dump_opens_the_training_graph_before_a_graph_with_more_steps(tmp_path):
    """An evaluation graph dumped more often than the training graph does not become the default."""
    from npu_jupyter._runtime.observe.dump.format import DumpGraph
    from npu_jupyter._runtime.observe.dump.writer import DumpEntry, DumpWriter

    writer = DumpWriter(str(tmp_path))
    graphs = [DumpGraph(0, ("init",), (), "initializer"), DumpGraph(1, ("train",), (), "training")]
    graphs.append(DumpGraph(2, ("eval",), (), ""))
    for graph, steps in zip(graphs, (1, 2, 5)):
        for step in range(steps):
            entry = DumpEntry(f"{graph.fetches[0]}_op", "Add", "output", 0, np.ones(2, np.float32))
            writer.write_step(step, [entry], graph=graph)
    dump = load_dump(tmp_path)
    assert dump.graph_id == 1 and dump.steps == [0, 1] and dump.graph_info(1)["role"] == "training"
    assert dump.graph(2).steps == list(range(5)) and dump.graph_info(0)["role"] == "initializer"


def _ref_variable_step(tf, optimizer, loss_scaled=False):
    """A TF1 regression on a ref variable (``v/read``), trained one step by ``optimizer``."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        w = tf.compat.v1.get_variable("w", initializer=np.ones((3, 1), np.float32), use_resource=False)
        loss = tf.reduce_mean(tf.matmul(x, w), name="loss")
        opt = optimizer()
        if loss_scaled:
            from npu_jupyter.adapter.tf1.loss_scale import FixedLossScaleManager, NPULossScaleOptimizer

            opt = NPULossScaleOptimizer(opt, FixedLossScaleManager(1024))
        train = opt.minimize(loss, name="train")
        init = tf.compat.v1.global_variables_initializer()
    assert w.dtype._is_ref_dtype  # the graph TF1 scripts build: reads alias the variable's buffer
    return g, x, w, loss, train, init


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "allow_fp32_to_fp16"])
def test_a_ref_variables_read_is_dumped_as_the_step_read_it_not_as_the_update_left_it(tf, tmp_path, precision):
    """``w/read`` hands on w's buffer, which the update writes in place later in the step: fetched after
    the step it showed the updated weights ([0, 0, 0]) while MatMul had read [1, 1, 1]."""
    g, x, w, loss, train, init = _ref_variable_step(tf, lambda: tf.compat.v1.train.GradientDescentOptimizer(1.0))
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), dump_mode="all", precision_mode=precision)
    with EmulatorSession(cfg, g) as sess:
        sess.run(init)
        sess.run([loss, train], {x: np.ones((2, 3), np.float32)})
        after = sess.run(w)
    np.testing.assert_array_equal(after.ravel(), [0.0, 0.0, 0.0])  # d(mean(x @ w))/dw = 1: the update ran
    step = load_dump(tmp_path)[0]
    np.testing.assert_array_equal(step["w/read"][0].ravel(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(step["MatMul"]["input:1"].ravel(), [1.0, 1.0, 1.0])


def test_reads_inside_the_loss_scale_cond_are_dumped_before_adam_updates_them(tf, tmp_path, tf1_variables):
    """NPULossScaleOptimizer applies Adam inside a tf.cond: beta1_power's read there reaches the variable
    through a RefSwitch, and Adam's own update of beta1_power (0.9 -> 0.81) must still come after it."""
    g, x, w, loss, train, init = _ref_variable_step(tf, lambda: tf.compat.v1.train.AdamOptimizer(0.1), True)
    reads = [op.name for op in g.get_operations() if op.name.endswith("beta1_power/read") and "cond" in op.name]
    assert reads, [op.name for op in g.get_operations() if "beta1_power" in op.name]
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), dump_mode="output")
    with EmulatorSession(cfg, g) as sess:
        sess.run(init)
        sess.run([loss, train], {x: np.ones((2, 3), np.float32)})
        (variable,) = [op for op in g.get_operations() if op.type == "VariableV2" and "beta1_power" in op.name]
        beta1_power = sess.run(variable.outputs[0])
        weights = sess.run(w)
    assert beta1_power == pytest.approx(0.81) and weights.ravel() == pytest.approx([0.9] * 3)  # the step applied
    step = load_dump(tmp_path)[0]
    for read in reads:
        assert step[read][0] == pytest.approx(0.9), read


def test_a_ref_variable_written_inside_a_while_loop_is_dumped_without_an_edge_into_the_loop(
    tf, tmp_path, tf1_variables
):
    """The read's copy orders the writes of its own frame only: an edge into a while loop's frame is one
    TensorFlow refuses to run ("inputs from different frames")."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        v = tf.compat.v1.get_variable("v", initializer=np.ones(3, np.float32))
        seen = tf.multiply(v, x, name="seen")  # reads v/read before the loop

        def body(i):
            with tf.control_dependencies([tf.compat.v1.assign_add(v, x)]):
                return i + 1

        with tf.control_dependencies([seen]):
            loop = tf.compat.v1.while_loop(lambda i: i < 2, body, [tf.constant(0)], name="loop")
        init = tf.compat.v1.global_variables_initializer()
    cfg = NpuConfig(enable_dump=True, dump_path=str(tmp_path), dump_mode="all", precision_mode="must_keep_origin_dtype")
    with EmulatorSession(cfg, g) as sess:
        sess.run(init)
        out, _ = sess.run([seen, loop], {x: np.full(3, 2.0, np.float32)})
        after = sess.run(v)
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(after, [5.0, 5.0, 5.0])  # both iterations wrote
    assert load_dump(tmp_path)[0]["seen"][0].tolist() == [2.0, 2.0, 2.0]
