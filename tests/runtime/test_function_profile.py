"""Per-op CPU times inside a traced function call, read from TensorFlow's profiler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npu_jupyter.runtime import function_profile, profile


@pytest.fixture
def traced(tf):
    @tf.function
    def step(x):
        return tf.nn.relu(tf.matmul(x, x, name="mm"), name="act")

    x = tf.ones([32, 32])
    concrete = step.get_concrete_function(x)
    return step, concrete, x


def test_a_profiled_call_times_the_function_nodes_by_their_plan_decisions(tf, traced):
    from npu_jupyter.plan.planner import plan

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


def test_profile_files_of_a_call_are_the_session_profile_format(tmp_path, tf, traced):
    from npu_jupyter.plan.planner import plan

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
