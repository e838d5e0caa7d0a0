"""One record of a step or a call: a session step and a traced-function call feed the same shared parts."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.functions import emulator as functions
from npu_jupyter._runtime.observe.observers import StepObservers
from npu_jupyter._runtime.observe.run_settings import RunSettings
from npu_jupyter._runtime.observe.step_record import StepRecord, StepValues, add_time, is_non_finite, non_finite_indices
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.session import report_book
from npu_jupyter._runtime.session.emulator import EmulatorSession
from npu_jupyter._runtime.session.watch import Watch

needs_functions = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


def _spy(monkeypatch, module):
    """Collect every record ``module`` times (its ``add_time`` still runs)."""
    seen: list[StepRecord] = []

    def spy(report, record):
        seen.append(record)
        add_time(report, record)

    monkeypatch.setattr(module, "add_time", spy)
    return seen


def _overflowing_graph(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.multiply(x, 1000.0, name="big")  # 70 * 1000 = 70000 > 65504: inf in float16
    return g


def test_add_time_derives_the_mean_total_and_spread_from_the_records_alone():
    report = RunReport(plan=None, steps=0, wall_ms=0.0)  # type: ignore[arg-type]
    for index, ms in enumerate([30.0, 10.0, 20.0]):
        add_time(report, StepRecord("call", "f", index, None, ms))
    assert report.steps == 3 and report.wall_ms == pytest.approx(20.0)
    timing = report.timing
    assert (timing.total_ms, timing.first_ms, timing.min_ms, timing.max_ms) == (60.0, 30.0, 10.0, 30.0)
    label = report.labels["wall_ms"]
    assert label.startswith("mean per call over 3 calls: min 10.00 ms, max 30.00 ms, the first 30.00 ms")
    assert label.endswith("wall-clock time of the emulation on this CPU")  # measured on this CPU, never an NPU time


def test_a_session_steps_label_says_mean_per_step_with_its_spread_and_first_step():
    """Review: "14.77 ms per step" was a mean including the warm-up step and said neither."""
    report = RunReport(plan=None, steps=0, wall_ms=0.0)  # type: ignore[arg-type]
    for index, ms in enumerate([40.0, 2.0, 3.0]):
        add_time(report, StepRecord("step", "y:0", index, None, ms))
    assert report.steps == 3 and report.wall_ms == pytest.approx(15.0)
    assert report.labels["wall_ms"] == (
        "mean per step over 3 steps: min 2.00 ms, max 40.00 ms, the first 40.00 ms (TensorFlow's warm-up); "
        "wall-clock time of the emulation on this CPU"
    )


def test_one_step_keeps_its_plain_label():
    one = RunReport(plan=None, steps=0, wall_ms=0.0)  # type: ignore[arg-type]
    add_time(one, StepRecord("step", "y:0", 0, None, 4.0))
    assert "wall_ms" not in one.labels  # the view's default label


def test_an_ascend_runs_mean_says_it_is_the_hosts_wall_time_of_session_run_not_a_device_time():
    """Review: the ascend time, taken on the host around session.run, read "measured on the device" and
    kept that plain label over many steps (a mean that did not say so, its GE build step hidden)."""
    device = RunReport(plan=None, backend="ascend", steps=0, wall_ms=0.0)  # type: ignore[arg-type]
    for index, ms in enumerate([900.0, 4.0]):
        add_time(device, StepRecord("step", "y:0", index, None, ms))
    assert device.labels["wall_ms"] == (
        "mean per step over 2 steps: min 4.00 ms, max 900.00 ms, the first 900.00 ms (the adapter builds and "
        "loads the graph in it); wall-clock time of session.run measured on the host while the device ran "
        "the graph (not a device kernel time)"
    )


def test_non_finite_values_are_judged_alike_for_numpy_fetches_and_tensors(tf):
    assert is_non_finite(np.array([1.0, np.inf], np.float32)) and is_non_finite(float("nan"))
    assert is_non_finite(tf.constant([np.nan], tf.float16)) and is_non_finite(tf.constant([np.inf], tf.bfloat16))
    assert not is_non_finite(np.array([1, 2])) and not is_non_finite(np.array([], np.float32))
    assert not is_non_finite(tf.constant([1.0])) and not is_non_finite(tf.constant(["inf"])) and not is_non_finite(None)
    assert non_finite_indices([np.float32(1.0), np.array([np.nan]), "text", tf.constant(np.inf)]) == (1, 3)


def test_after_step_reads_the_record_a_step_hands_over():
    """Drift and the reference's time come from the record: no positional list of the step's parts."""
    watch = Watch("scaled", "output", 0, "float16", True)
    values = StepValues((watch,), {watch.key: [np.array([1.0, 2.0])]}, {watch.key: [np.array([1.0, 2.5])]}, 7.5)
    record = StepRecord("step", "scaled:0", 0, None, 1.0, watched=values)
    report = RunReport(plan=None)  # type: ignore[arg-type]
    StepObservers(graph=None, dump_budget=None).after_step(report, RunSettings(), record)  # type: ignore[arg-type]
    assert report.drift["scaled"]["max_abs"] == pytest.approx(0.5)
    assert report.reference_wall_ms == 7.5


def test_the_reference_time_is_the_mean_over_the_steps_that_ran_it():
    """The schema and the report say "per step": a mean over the reference runs, not the last one's."""
    watch = Watch("scaled", "output", 0, "float16", True)
    observers = StepObservers(graph=None, dump_budget=None)  # type: ignore[arg-type]
    report = RunReport(plan=None)  # type: ignore[arg-type]
    for index, ms in enumerate((56.0, 2.0, 2.0)):
        values = StepValues((watch,), {watch.key: [np.array([1.0])]}, {watch.key: [np.array([1.0])]}, ms)
        observers.after_step(report, RunSettings(), StepRecord("step", "scaled:0", index, None, 1.0, watched=values))
    without = StepRecord("step", "scaled:0", 3, None, 1.0)  # a step without a reference leaves the mean alone
    observers.after_step(report, RunSettings(), without)
    assert report.reference_steps == 3
    assert report.reference_wall_ms == pytest.approx(20.0)


def test_a_session_step_is_one_record_numbered_by_its_graph(tf, hand, monkeypatch):
    seen = _spy(monkeypatch, report_book)
    g = _overflowing_graph(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        for _ in range(2):
            sess.run("big:0", {"x:0": np.array([70.0, 1.0], np.float32)})
        sess.run("x:0", {"x:0": np.array([1.0, 1.0], np.float32)})  # another run graph: its own numbering
        report = sess.reports[0]
    assert [(r.kind, r.name, r.index) for r in seen] == [("step", "big:0", 0), ("step", "big:0", 1), ("step", "x:0", 0)]
    assert seen[0].graph is not None and seen[0].graph.fetches == ("big:0",) and seen[2].graph.id == 1
    assert seen[0].non_finite_outputs == (0,) and seen[2].non_finite_outputs == ()
    assert report.timing.total_ms == pytest.approx(seen[0].wall_ms + seen[1].wall_ms)
    assert report.wall_ms == pytest.approx((seen[0].wall_ms + seen[1].wall_ms) / 2)


@needs_functions
def test_a_function_call_is_one_record_read_by_the_same_timing_and_non_finite_check(tf, monkeypatch):
    seen = _spy(monkeypatch, functions)
    big = tf.constant([70.0, 1.0])

    @tf.function
    def scale():
        return big * 1000.0

    with functions.FunctionEmulation({"precision_mode": "force_fp16"}) as emulation:
        for _ in range(3):
            scale()
    (report,) = emulation.reports.values()
    assert [(r.kind, r.index) for r in seen] == [("call", 0), ("call", 1), ("call", 2)]
    assert all(r.name == report.fetches[0] and r.plan is report.plan for r in seen)
    assert seen[0].non_finite_outputs == (0,)  # the same check a session's fetches go through
    assert seen[0].observations  # the observer nodes' hand-over rides in the record
    assert report.timing.total_ms == pytest.approx(sum(r.wall_ms for r in seen))
    assert report.timing.first_ms == seen[0].wall_ms
    assert report.non_finite is not None and report.non_finite.step == 0


def test_the_record_is_frozen():
    record = StepRecord("step", "y:0", 0, None, 1.0)
    with pytest.raises(AttributeError):
        record.wall_ms = 2.0  # type: ignore[misc]


@needs_functions
def test_a_call_that_could_not_be_profiled_says_why_once_from_its_record(tf, monkeypatch, tmp_path):
    import json

    from npu_jupyter._runtime.functions import profile as function_profile

    monkeypatch.setattr(function_profile, "xplane_module", lambda: None)  # as on a TensorFlow without XSpace
    seen = _spy(monkeypatch, functions)
    config = {"profiling_mode": True, "profiling_options": json.dumps({"output": str(tmp_path)})}

    @tf.function
    def double(x):
        return x * 2.0

    with functions.FunctionEmulation(config) as emulation:
        for _ in range(2):
            double(tf.constant([1.0]))
    (report,) = emulation.reports.values()
    assert [r.unprofiled for r in seen] == ["this TensorFlow has no XSpace protobuf module to read profiles from"] * 2
    assert all(r.profile is None for r in seen) and not report.op_times_us
    notes = [w for w in report.warnings if w.startswith("profiling:")]
    assert notes == [
        "profiling: this TensorFlow has no XSpace protobuf module to read profiles from; this call ran unprofiled"
    ]


def test_the_ascend_backend_times_its_runs_by_the_same_rule(tf, monkeypatch):
    from npu_jupyter._runtime.ascend import backend as ascend

    seen = _spy(monkeypatch, ascend)
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        y = tf.multiply(x, 2.0, name="y")
    config = NpuConfig()
    with ascend.AscendSession(config, graph=g, config=config.to_config_proto()) as sess:
        for _ in range(3):
            sess.run(y, {x: [1.0, 2.0]})
        report = sess.last_report
    assert [(r.kind, r.name, r.index) for r in seen] == [("step", "y:0", 0), ("step", "y:0", 1), ("step", "y:0", 2)]
    assert report.steps == 3 and report.timing.total_ms == pytest.approx(sum(r.wall_ms for r in seen))
    assert report.wall_ms == pytest.approx(report.timing.total_ms / 3)


def test_a_later_report_of_the_same_run_does_not_call_its_first_step_the_warm_up(tf):
    """Trial (AutoInt_ID0189): each epoch's training runs came after evaluation runs, so the session
    started a new report per epoch, and epoch 2's said its first step (41 ms, the fastest) was
    "TensorFlow's warm-up": only the graph's step 0 is."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        y, z = tf.multiply(x, 2.0, name="y"), tf.add(x, 1.0, name="z")
    with EmulatorSession(NpuConfig(), graph=g) as sess:
        for fetch in (y, y, z, y, y):
            sess.run(fetch, {x: [1.0, 2.0]})
        first, _, again = sess.reports
    assert "(TensorFlow's warm-up)" in first.labels["wall_ms"]
    assert again.fetches == ["y:0"] and again.timing.first_step == 2
    label = again.labels["wall_ms"]
    assert "TensorFlow's warm-up" not in label
    assert f"the first {again.timing.first_ms:.2f} ms (step 2 of its graph, after its warm-up); " in label
