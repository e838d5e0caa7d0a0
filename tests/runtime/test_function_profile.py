"""Per-op CPU times inside a traced function call, read from TensorFlow's profiler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npu_jupyter._runtime.functions import profile as function_profile
from npu_jupyter._runtime.observe import profile


@pytest.fixture
def traced(tf):
    @tf.function
    def step(x):
        return tf.nn.relu(tf.matmul(x, x, name="mm"), name="act")

    x = tf.ones([32, 32])
    concrete = step.get_concrete_function(x)
    return step, concrete, x


def test_a_profiled_call_times_the_function_nodes_by_their_plan_decisions(tf, traced):
    from npu_jupyter._plan.planner import plan

    step, concrete, x = traced
    decisions = plan(concrete).ops
    with function_profile.CallProfiler() as profiler:
        step(x)
    assert profiler.error is None
    _, shapes = function_profile.tree_facts([concrete.graph])
    result = function_profile.call_profile(profiler.events, decisions, step=0, shapes=shapes)
    names = [t.name for t in result.ops]
    assert "mm" in names and "act" in names  # the nodes of the function body, by their own names
    assert set(names) <= set(decisions)  # TensorFlow's helper nodes are dropped
    mm = next(t for t in result.ops if t.name == "mm")
    assert mm.op_type == "MatMul" and mm.engine == decisions["mm"].engine  # not the CPU kernel's name
    assert mm.output_shapes == [[32, 32]] and mm.duration_us > 0
    assert mm.input_dtypes == list(decisions["mm"].input_dtypes)  # what it reads on the device (the CSV's inputs)


def test_profile_files_of_a_call_are_the_session_profile_format(tmp_path, tf, traced):
    from npu_jupyter._plan.planner import plan

    step, concrete, x = traced
    decisions = plan(concrete).ops
    with function_profile.CallProfiler() as profiler:
        step(x)
    facts, shapes = function_profile.tree_facts([concrete.graph])
    result = function_profile.call_profile(profiler.events, decisions, step=3, shapes=shapes)
    folder = function_profile.function_folder(str(tmp_path), "__inference_step/../x 12")
    assert folder == str(tmp_path / "__inference_step_x_12")  # one folder under output, whatever the name
    profile.write(result, facts, {"training_trace": "on"}, folder)
    trace = json.loads(Path(result.trace_file).read_text())
    assert any(e.get("name") == "mm" and e["ph"] == "X" for e in trace["traceEvents"])
    assert "not of an NPU" in trace["otherData"]["note"]
    assert "mm,MatMul," in Path(result.op_summary_csv).read_text()


def test_a_call_under_another_profiler_runs_unprofiled_and_says_why(tmp_path, tf, traced):
    step, _, x = traced
    tf.profiler.experimental.start(str(tmp_path))
    try:
        with function_profile.CallProfiler() as profiler:
            out = step(x)
    finally:
        tf.profiler.experimental.stop()
    assert float(out[0, 0]) == 32.0
    assert profiler.events == [] and "profiler could not start" in profiler.error


def _keras_fit_and_predict(emulation_config):
    import keras
    import numpy as np

    from npu_jupyter._runtime.functions import emulator as functions

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(4, name="dense")])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 6)).astype("float32"), rng.normal(size=(32, 4)).astype("float32")
    with functions.FunctionEmulation(emulation_config) as emulation:
        model.fit(x, y, epochs=2, batch_size=16, verbose=0)
        model.predict(x, batch_size=16, verbose=0)
    return emulation


def test_keras_calls_under_profiling_get_per_op_cpu_times_and_files_per_call(tmp_path):
    from npu_jupyter._display.mime import report_payload
    from npu_jupyter._runtime.functions import emulator as functions

    if not functions.supported():
        pytest.skip("traced functions are emulated on TensorFlow >= 2.14 only")
    config = {
        "precision_mode": "allow_mix_precision",
        "profiling_mode": True,
        "profiling_options": json.dumps({"output": str(tmp_path)}),
    }
    emulation = _keras_fit_and_predict(config)
    train, predict = emulation.reports.values()
    assert train.profile.steps == 4 and predict.profile.steps == 2  # every call
    # ops of the inlined train step are named as in their own function (not "StatefulPartitionedCall/...")
    assert any("dense" in name and name.endswith("/MatMul") for name in train.op_times_us)
    assert not any(name.startswith("StatefulPartitionedCall/") for name in train.op_times_us)
    folder = Path(train.trace_file).parent
    assert folder.parent == tmp_path and folder.name == train.fetches[0]  # one folder per function
    assert sorted(p.name for p in folder.glob("trace_step_*.json")) == [f"trace_step_{i}.json" for i in range(4)]
    payload = report_payload(train)
    assert payload["title"].startswith("Calls of Keras fit (train function)")
    assert report_payload(predict)["title"].startswith("Calls of Keras predict (predict function)")
    assert any("us" in op for op in payload["ops"])  # the views show the per-op CPU times


def test_without_profiling_no_profiler_runs_around_calls(tmp_path):
    from npu_jupyter._runtime.functions import emulator as functions

    if not functions.supported():
        pytest.skip("traced functions are emulated on TensorFlow >= 2.14 only")
    emulation = _keras_fit_and_predict({"precision_mode": "allow_mix_precision"})
    for report in emulation.reports.values():
        assert not report.op_times_us and report.trace_file is None and report.profile.steps == 0


def test_a_profiled_call_starts_tensorflows_profiler_at_its_default_levels(tf, traced, monkeypatch):
    """No ProfilerOptions: TF 2.21 drops options given from Python, logging four C++ warnings per call.

    TensorFlow's defaults are the levels wanted (host tracer 2, Python tracer 0), so the call is
    profiled the same, and a script profiled outside a cell gets no "expects an i value" lines.
    """
    from tensorflow.python.profiler import profiler_v2

    defaults = profiler_v2.ProfilerOptions()
    assert (defaults.host_tracer_level, defaults.python_tracer_level) == (2, 0)
    starts: list[dict] = []
    start = profiler_v2.start

    def spy(logdir, options=None):
        starts.append({"options": options})
        return start(logdir, options=options)

    monkeypatch.setattr(profiler_v2, "start", spy)
    step, _, x = traced
    with function_profile.CallProfiler() as profiler:
        step(x)
    assert starts == [{"options": None}]
    assert profiler.error is None and any(name == "mm" for name, _, _ in profiler.events)
