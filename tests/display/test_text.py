"""The text/plain rendering: short, complete enough for a terminal, safe against control characters."""

from __future__ import annotations

from dataclasses import replace

from npu_jupyter._display import text
from npu_jupyter._display.facts import DRIFT_UNITS
from npu_jupyter._display.mime import report_payload
from npu_jupyter._plan.model import OpDecision, Plan
from npu_jupyter._runtime.report import RunReport
from npu_jupyter.cost.attach import CostBlock, CostEstimate


def _op(name: str, engine: str = "AI_CORE", after: str = "float32") -> OpDecision:
    return OpDecision(
        name=name,
        op_type="Mul",
        placement="host" if engine == "HOST" else "device",
        engine=engine,
        placement_reason="not supported on the device",
        dtype_before="float32",
        dtype_after=after,
        precision_reason="reduced to float16",
    )


def test_text_lists_interesting_ops_with_their_reason():
    plan = Plan(ops={"a": _op("a", "HOST"), "b": _op("b", after="float16"), "c": _op("c")})
    out = text.render(report_payload(plan))
    assert "a [Mul] HOST float32: not supported on the device" in out
    assert "b [Mul] AI_CORE float32->float16: reduced to float16" in out
    assert "  c [" not in out
    assert "  c [Mul]" in text.render(report_payload(plan), detail="full")


def test_newlines_in_op_names_cannot_fake_extra_report_lines():
    plan = Plan(ops={"evil\nERROR: fake": _op("evil\nERROR: fake", "HOST")})
    out = text.render(report_payload(plan))
    assert "\nERROR: fake" not in out and "evil\\nERROR: fake" in out


def test_run_lines_name_first_overflow_and_costliest_ops():
    plan = Plan(ops={"a": _op("a"), "b": _op("b")})
    run = RunReport(plan=plan, op_times_us={"a": 1.0, "b": 5.0}, first_overflow="b", overflow_ops=["b"])
    out = text.render(report_payload(run))
    assert "First overflow (inf/NaN): b" in out
    assert "Costliest ops (mean per step, wall-clock time of the emulation on this CPU): b 5.0 µs, a 1.0 µs" in out
    assert "b [Mul] AI_CORE float32 (⚠ overflow; mean 5.0 µs CPU)" in out


def test_a_per_op_time_in_the_op_list_says_it_is_cpu_time_where_it_stands():
    """Review: "MatMul … AI_CORE … (31.0 µs; drift …)" read as an NPU time; only a heading said CPU."""
    plan = Plan(ops={"mm": _op("mm", after="float16")})
    run = RunReport(plan=plan, op_times_us={"mm": 31.0}, drift={"mm": {"max_abs": 0.5, "max_rel": 0.1, "cos": 1.0}})
    out = text.render(report_payload(run))
    assert "mm [Mul] AI_CORE float32->float16 (mean 31.0 µs CPU; drift 0.5 abs" in out


def test_drift_units_are_explained_once_per_report():
    plan = Plan(ops={"mm": _op("mm", after="float16")})
    run = RunReport(plan=plan, drift={"mm": {"max_abs": 0.5, "max_rel": 0.1, "cos": 1.0}})
    out = text.render(report_payload(run))
    assert out.count(DRIFT_UNITS) == 1 and "Largest drift vs float32" in out


def test_str_of_a_plan_is_the_text_report_and_repr_stays_the_dataclass():
    plan = Plan(ops={"a": _op("a"), "b": _op("b", engine="HOST")}, soc="Ascend910", precision_mode="force_fp16")
    shown = str(plan)
    assert shown == text.render(report_payload(plan))
    assert shown.splitlines()[0] == "Plan (Ascend910, force_fp16)"
    assert "OpDecision" not in shown
    assert repr(plan).startswith("Plan(ops={'a': OpDecision(")


def test_a_call_trees_ops_are_named_inside_their_function_in_every_line():
    """Op rows, the costliest ops and the transfers say "MatMul (in inner)", not the traced prefix."""
    from npu_jupyter._plan.model import Transfer

    host, mm = _op("__inference_inner_3/x", "HOST"), _op("__inference_inner_3/MatMul", after="float16")
    plan = Plan(
        ops={"call": _op("call"), host.name: host, mm.name: mm},
        transfers=[Transfer(host.name, mm.name, f"{host.name}:0", "float32", "h2d", 16)],
        functions=["__inference_outer_2", "__inference_inner_3"],
    )
    report = RunReport(plan=plan, steps=2, op_times_us={mm.name: 5.0})
    out = text.render(report_payload(report), detail="full")
    assert "3 ops (outer and the 1 function it calls)" in out
    assert "  MatMul (in inner) [Mul] AI_CORE float32->float16" in out
    assert "MatMul (in inner) 5.0 µs" in out and "x (in inner) → MatMul (in inner) (host → device" in out
    assert "__inference_inner_3/" not in out


def _cost_line(cost: dict) -> str:
    plan = Plan(ops={"a": _op("a")})
    block = CostBlock(
        **{
            "step_ms": None,
            "memory_bytes": None,
            "step_ratio_fp32": None,
            "memory_ratio_fp32": None,
            "basis": "",
            **cost,
        }
    )
    out = text.render(report_payload(RunReport(plan=plan, cost=CostEstimate(block))))
    [line] = [line for line in out.splitlines() if "NPU step" in line]
    return line


def test_the_estimate_line_says_estimated_and_not_measured_once_and_names_its_basis():
    line = _cost_line({"step_ms": 1.5, "step_ratio_fp32": 0.5, "launch_share": 0.1, "basis": "roofline"})
    assert line.count("estimated") == 1 and line.count("not measured") == 1 and "assumes" not in line
    assert "(0.50× float32)" in line and "basis: roofline" in line and "launch cost" not in line


def test_a_launch_bound_step_says_why_it_shows_one_times_float32():
    line = _cost_line({"step_ms": 0.05, "step_ratio_fp32": 1.0, "launch_share": 0.93, "basis": "roofline"})
    assert "(1.00× float32: 93% of it is fixed launch and copy latency, which precision does not change)" in line
    assert "(1.00× float32: over 99% of it" in _cost_line(
        {"step_ms": 0.05, "step_ratio_fp32": 1.0, "launch_share": 1.0}
    )


def test_the_approximate_line_agrees_in_number_with_its_count():
    one = Plan(ops={"a": replace(_op("a"), approximate=True)})
    two = Plan(ops={name: replace(_op(name), approximate=True) for name in ("a", "b")})
    assert "Approximate: 1 decision rests on approximate op tables" in text.render(report_payload(one))
    assert "Approximate: 2 decisions rest on approximate op tables" in text.render(report_payload(two))


def test_the_reference_time_is_labelled_as_the_reference_runs_time_over_the_steps_that_ran_it():
    """Review: "2.00 ms mean per step" said neither over how many steps (those that ran the reference)
    nor whose clock; "CPU time" named a wall-clock reading."""
    run = RunReport(plan=Plan(ops={"a": _op("a")}), steps=3, wall_ms=14.0, reference_wall_ms=2.0, reference_steps=2)
    out = text.render(report_payload(run))
    assert (
        "float32 reference: 2.00 ms (mean per step over the 2 steps that ran it; wall-clock time of the float32 "
        "reference run on this CPU)" in out
    )
    assert "14.00 ms per step (wall-clock time of the emulation on this CPU)" in out


def _function_run(*callers: str) -> RunReport:
    """A report of a test function titled "Keras evaluate", called from ``callers`` (one call each)."""
    from npu_jupyter._runtime.report_records import FunctionInfo

    info = FunctionInfo("Keras evaluate (test function)", "f", ("f",), titled="in Keras evaluate")
    for where in callers:
        info = info.called(where)
    return RunReport(plan=Plan(ops={"a": _op("a")}), steps=len(callers), wall_ms=1.0, function=info)


def test_the_run_line_splits_a_functions_calls_by_where_they_came_from_in_text_and_html():
    """Trial (DIN_ID2641): "Calls of Keras evaluate (test function)" counted fit's validation calls as evaluate's."""
    from npu_jupyter._display import html

    fit, evaluate = "during Keras fit (validation)", "in Keras evaluate"
    payload = report_payload(_function_run(fit, fit, evaluate))
    assert payload["run"]["calls_from"] == [{"where": fit, "calls": 2}, {"where": evaluate, "calls": 1}]
    said = "backend emulator · 3 calls: 2 during Keras fit (validation), 1 in Keras evaluate · 1.00 ms per call ("
    assert said in text.render(payload)
    assert "3 calls: 2 during Keras fit (validation), 1 in Keras evaluate · 1.00 ms" in html.render(payload)
    assert "3 calls, all during Keras fit (validation) · " in text.render(report_payload(_function_run(fit, fit, fit)))


def test_the_run_line_says_nothing_more_when_all_calls_came_from_the_entry_point_in_the_title():
    payload = report_payload(_function_run("in Keras evaluate", "in Keras evaluate"))
    assert "calls_from" not in payload["run"]
    assert "backend emulator · 2 calls · 1.00 ms per call (" in text.render(payload)
    assert "Keras" not in next(f["text"] for f in payload["facts"] if f["key"] == "run")


def test_two_tensors_one_op_sends_across_are_named_by_slot_and_one_is_named_plainly():
    """Trial (Keras fit, mixed): two outputs of one call went to the host; the line listed
    ``call → optional`` twice, which reads as one edge repeated."""
    import numpy as np
    import pytest

    tf = pytest.importorskip("tensorflow")
    v1 = tf.compat.v1
    from npu_jupyter._plan.planner import plan as make_plan

    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 2], name="x")
        a, b = tf.split(x, 2, axis=1, name="halves")
        both = v1.py_func(lambda p, q: p + q, [a, b], tf.float32, name="host_sum")
        tf.identity(tf.nn.relu(x), name="alone")
        v1.py_func(np.negative, [tf.square(x, name="sq")], tf.float32, name="host_neg")
    planned = make_plan(g, {"mix_compile_mode": True})
    payload = report_payload(planned)
    slots = sorted(t.get("o") for t in payload["transfers"] if payload["ops"][t["s"]]["n"] == "halves")
    assert slots == [0, 1], "the payload says which output of the op each transfer carries"
    out = text.render(payload)
    assert "halves:0 → host_sum" in out and "halves:1 → host_sum" in out
    assert "sq → host_neg" in out and "sq:0" not in out, "an op sending one tensor keeps its plain name"
    assert both is not None


def test_a_report_written_before_transfer_slots_renders_as_before():
    payload = report_payload(Plan(ops={"a": _op("a", "HOST"), "b": _op("b")}))
    payload["transfers"] = [
        {"s": 0, "d": 1, "dt": "float32", "b": 4, "dir": "h2d"},
        {"s": 0, "d": 1, "dt": "float32", "b": 4, "dir": "h2d"},
    ]
    from npu_jupyter._display.facts import transfers_text

    assert transfers_text(payload) == "a → b (host → device, float32, 4 B); a → b (host → device, float32, 4 B)"
