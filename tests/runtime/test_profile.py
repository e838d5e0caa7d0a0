"""Profiling: a valid Chrome trace and an op_summary CSV named by the user's ops."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.observe import profile
from npu_jupyter._runtime.session.emulator import EmulatorSession


def _profiled(tf, hand, tmp_path, half=(), options=None):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        w = tf.constant(np.ones((8, 8), np.float32), name="w")
        h = tf.nn.relu(tf.matmul(x, w, name="mm"), name="act")
        tf.reduce_sum(h, name="total")
    opts = {"output": str(tmp_path), "training_trace": "on", "fp_point": "mm", "aic_metrics": "PipeUtilization"}
    opts.update(options or {})
    cfg = NpuConfig(profiling_mode=True, profiling_options=json.dumps(opts))
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn(half)) as sess:
        sess.run("total:0", {"x:0": np.ones((4, 8), np.float32)})
        sess.run("total:0", {"x:0": np.ones((4, 8), np.float32)})
        return sess.last_report


def test_trace_is_valid_chrome_trace_json(tf, hand, tmp_path):
    report = _profiled(tf, hand, tmp_path)
    with open(report.trace_file) as handle:
        trace = json.load(handle)
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] != "Iteration"]
    assert {"mm", "act", "total"} <= {e["name"] for e in spans}
    for event in spans:
        assert isinstance(event["ts"], (int, float)) and event["dur"] > 0
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
    assert trace["otherData"]["profiling_options"]["aic_metrics"] == "PipeUtilization"
    assert any(e["name"] == "FP_POINT mm" for e in trace["traceEvents"])


def test_one_trace_and_summary_per_step_under_output(tf, hand, tmp_path):
    _profiled(tf, hand, tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["op_summary_step_0.csv", "op_summary_step_1.csv", "trace_step_0.json", "trace_step_1.json"]


def test_op_summary_has_ascend_columns_and_user_op_names_without_casts(tf, hand, tmp_path):
    report = _profiled(tf, hand, tmp_path, half={"MatMul"})
    with open(report.op_summary_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == profile.CSV_COLUMNS
    names = {r["Op Name"] for r in rows}
    assert "mm" in names and not any("_npu_emu_round" in n for n in names)
    mm = next(r for r in rows if r["Op Name"] == "mm")
    assert mm["OP Type"] == "MatMul" and mm["Task Type"] == "AI_CORE"
    assert mm["Input Shapes"] == "4,8;8,8"
    assert mm["Output Shapes"] == "4,8" and mm["Output Data Types"] == "FLOAT16"
    assert float(mm["Task Duration(us, CPU emulation)"]) > 0


def test_op_summary_input_types_are_what_each_op_reads_on_the_device(tf, hand, tmp_path):
    """A float16 MatMul reads its float32 inputs cast to float16 (as the device's op_summary lists them):
    the CSV said FLOAT32;FLOAT32 beside the row's own FLOAT16 output. Every row lists the dtypes the plan
    says its op reads; an op the plan leaves in float32 keeps FLOAT32."""
    report = _profiled(tf, hand, tmp_path, half={"MatMul"})
    with open(report.op_summary_csv, newline="") as handle:
        rows = {r["Op Name"]: r for r in csv.DictReader(handle)}
    decisions = report.plan.ops
    assert rows["mm"]["Input Data Types"] == ";".join(d.upper() for d in decisions["mm"].input_dtypes)
    assert rows["mm"]["Input Data Types"] == "FLOAT16;FLOAT16"
    assert rows["act"]["Input Data Types"] == ";".join(d.upper() for d in decisions["act"].input_dtypes)
    assert decisions["total"].input_dtypes[0] == "float32"  # a plain op: its graph dtype
    assert rows["total"]["Input Data Types"].startswith("FLOAT32")


def test_op_summary_writes_no_device_columns_it_cannot_measure(tf, hand, tmp_path):
    report = _profiled(tf, hand, tmp_path)
    with open(report.op_summary_csv, newline="") as handle:
        header = next(csv.reader(handle))
    for device_only in (
        "Model ID",
        "Task ID",
        "Stream ID",
        "Task Wait Time(us)",
        "Block Dim",
        "Input Formats",
        "Output Formats",
        "Task Duration(us)",
    ):
        assert device_only not in header
    assert all("CPU emulation" in h for h in header if "Time" in h or "Duration" in h)


def test_only_the_steps_asked_for_are_profiled_not_variable_initialisation(tf, tmp_path):
    g = tf.Graph()
    with g.as_default():
        w = tf.compat.v1.get_variable("w", [3], initializer=tf.compat.v1.ones_initializer())
        loss = tf.reduce_sum(w * 2.0, name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    cfg = NpuConfig(profiling_mode=True, profiling_options=json.dumps({"output": str(tmp_path)}))
    with EmulatorSession(cfg, g) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train)
    # the init run is graph 0 (never profiled); the training graph's steps 0-2 go under graph_1, as its dump
    assert sorted(p.name for p in tmp_path.rglob("trace_step_*.json")) == [f"trace_step_{i}.json" for i in range(3)]
    assert {p.parent.name for p in tmp_path.rglob("trace_step_*.json")} == {"graph_1"}


def test_fp_and_bp_points_limit_profiling_to_runs_holding_them(tf, tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.reduce_sum(x * 2.0, name="step_out")
        tf.reduce_max(x, name="metric")
    opts = {"output": str(tmp_path), "training_trace": "on", "fp_point": "step_out", "bp_point": ""}
    cfg = NpuConfig(profiling_mode=True, profiling_options=json.dumps(opts))
    feed = {"x:0": np.ones(2, np.float32)}
    with EmulatorSession(cfg, g) as sess:
        sess.run("metric:0", feed)
        sess.run("step_out:0", feed)
    assert [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("trace_step_*.json")] == ["graph_1/trace_step_0.json"]


def test_report_holds_mean_per_op_times(tf, hand, tmp_path):
    report = _profiled(tf, hand, tmp_path)
    assert report.profile.steps == 2
    assert report.op_times_us["mm"] > 0
    assert "_SOURCE" not in report.op_times_us


def test_empty_profiling_options_mean_the_adapters_default_json():
    assert profile.parse_profiling_options("") == profile.DEFAULT_OPTIONS
    with pytest.raises(ValueError, match="not valid JSON"):
        profile.parse_profiling_options("{output:")


def _all_files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("case", ["under_a_file", "a_file"])
def test_an_unusable_profiling_output_is_one_config_error_before_running_and_nothing_is_written(tmp_path, case):
    from npu_jupyter._options.errors import NpuConfigError
    from npu_jupyter._runtime.observe.run_settings import read_run_settings

    (tmp_path / "file").write_text("a regular file")
    output = tmp_path / "file" / "prof" / "deeper" if case == "under_a_file" else tmp_path / "file"
    before = _all_files(tmp_path)
    cfg = NpuConfig(profiling_mode=True, profiling_options=json.dumps({"output": str(output)}))
    with pytest.raises(NpuConfigError) as caught:
        read_run_settings(cfg.snapshot())
    message = str(caught.value)
    assert "profiling_options output" in message and str(output) in message and "regular file" in message
    assert _all_files(tmp_path) == before


def test_a_missing_profiling_output_is_created_when_the_settings_are_read(tmp_path):
    from npu_jupyter._runtime.observe.run_settings import read_run_settings

    output = tmp_path / "prof" / "run1"
    read_run_settings(NpuConfig(profiling_mode=True, profiling_options=json.dumps({"output": str(output)})).snapshot())
    assert output.is_dir() and list(output.iterdir()) == []


def test_a_profiling_output_that_cannot_be_created_names_the_option_and_path(tmp_path):
    """A name longer than the file system allows cannot be created, even by root."""
    from npu_jupyter._options.errors import NpuConfigError
    from npu_jupyter._runtime.observe.run_settings import read_run_settings

    output = tmp_path / ("x" * 300)
    with pytest.raises(NpuConfigError, match="cannot be created") as caught:
        read_run_settings(
            NpuConfig(profiling_mode=True, profiling_options=json.dumps({"output": str(output)})).snapshot()
        )
    assert str(output) in str(caught.value) and list(tmp_path.iterdir()) == []


def test_queue_runner_threads_are_not_profiled_beside_the_training_step(tmp_path):
    """Traced runs from helper threads collided with the step's trace ("Another profiling session")."""
    import threading

    import numpy as np
    import tensorflow as tf

    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(8, [tf.float32], shapes=[[64, 64]])
        enqueue = queue.enqueue([tf.random.normal([64, 64])], name="enqueue")
        batch = queue.dequeue(name="batch")
        tf.reduce_sum(tf.matmul(batch, batch), name="loss")
        runner = tf.compat.v1.train.QueueRunner(queue, [enqueue] * 2)
    options = f'{{"output": "{tmp_path}", "task_trace": "on"}}'
    with EmulatorSession(NpuConfig(profiling_mode=True, profiling_options=options), g) as sess:
        coord = tf.train.Coordinator()
        threads = runner.create_threads(sess, coord=coord, start=True)
        try:
            losses = [sess.run("loss:0") for _ in range(6)]
            traced = [r for r in sess.reports if r.trace_file]
        finally:
            coord.request_stop()
            sess.run(queue.close(cancel_pending_enqueues=True))
            coord.join(threads, stop_grace_period_secs=5)
    assert np.isfinite(losses).all()
    assert traced and all(r.fetches == ["loss:0"] for r in traced)
    assert not [t for t in threading.enumerate() if t in threads and t.is_alive()]
