"""The first non-finite op of a call, found from the observations of the bodies it ran (no TensorFlow)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from npu_jupyter._plan.model import Plan
from npu_jupyter._runtime.functions.findings import FunctionFindings, first_non_finite, op_name
from npu_jupyter._runtime.functions.observe_nodes import Observation, Watched
from npu_jupyter._runtime.observe.run_settings import RunSettings
from npu_jupyter._runtime.observe.step_record import StepRecord
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import FunctionInfo, NonFiniteFinding


def _w(op: str, op_type: str = "MatMul") -> Watched:
    return Watched(op, op_type, "output", 0, "float32", "float16", True)


def _observers(**callees: dict[str, list[str]]) -> dict[str, object]:
    return {name: SimpleNamespace(callees=calls, plan=None) for name, calls in callees.items()}


def test_a_call_whose_body_went_non_finite_is_searched_inside():
    observers = _observers(top={"call": ["body"]}, body={})
    observations = [
        Observation("body", bad=[_w("inner/matmul"), _w("inner/add", "AddV2")]),
        Observation("top", bad=[_w("call", "StatefulPartitionedCall"), _w("loss", "Mean")]),
    ]
    assert first_non_finite("top", observations, observers) == ("body", _w("inner/matmul"))


def test_an_op_before_the_call_is_first_even_when_the_body_went_non_finite_later():
    observers = _observers(top={"call": ["body"]}, body={})
    observations = [
        Observation("body", bad=[_w("inner/matmul")]),
        Observation("top", bad=[_w("scale", "Mul"), _w("call", "StatefulPartitionedCall")]),
    ]
    assert first_non_finite("top", observations, observers) == ("top", _w("scale", "Mul"))


def test_a_loop_body_is_searched_in_iteration_order():
    observers = _observers(top={"while": ["cond", "body"]}, body={}, cond={})
    observations = [
        Observation("body", bad=[]),
        Observation("body", bad=[_w("grow", "Mul")]),
        Observation("body", bad=[_w("add", "AddV2"), _w("grow", "Mul")]),
        Observation("top", bad=[_w("while", "While")]),
    ]
    assert first_non_finite("top", observations, observers) == ("body", _w("grow", "Mul"))


def test_without_a_finding_in_the_top_body_the_first_body_that_had_one_is_named():
    observers = _observers(top={}, helper={})
    observations = [Observation("top", bad=[]), Observation("helper", bad=[_w("log", "Log")])]
    assert first_non_finite("top", observations, observers) == ("helper", _w("log", "Log"))
    assert first_non_finite("top", [Observation("top")], observers) is None


def test_ops_of_other_functions_than_the_reports_plan_carry_their_function_name():
    assert op_name("body", "matmul", main="body") == "matmul"
    assert op_name("top", "matmul", main="body") == "top/matmul"


def test_a_calls_non_finite_finding_is_one_record_kept_from_the_first_such_call():
    """Issue 21: a function's finding was stored twice (``extra["non_finite"]`` and ``extra["nonfinite"]``)."""
    report = RunReport(plan=Plan(ops={}), fetches=["top"], function=FunctionInfo("top", plan_function="top"))
    findings = FunctionFindings(RunSettings())
    observers = _observers(top={"call": ["body"]}, body={})
    first = [Observation("body", bad=[_w("inner/matmul")]), Observation("top", bad=[_w("call", "PartitionedCall")])]
    later = [Observation("top", bad=[_w("loss", "Mean")])]
    for index, observed in [(2, first), (3, later)]:  # output 0 came back inf in both calls
        record = StepRecord("call", "top", index, report.plan, 1.0, (np.array([np.inf]),), observations=tuple(observed))
        findings.after_call(report, record, observers)  # type: ignore[arg-type]
    finding = report.non_finite
    assert isinstance(finding, NonFiniteFinding) and not hasattr(report, "extra")
    assert finding.step == 2 and finding.first_op == finding.where == "body/inner/matmul" and finding.function == "body"
    assert finding.outputs == (0,) and finding.first_tensor == "inner/matmul:0" and finding.rounded
    assert finding.message.startswith("Call 2 of top returned non-finite values")
    assert finding.reason.startswith("The call returned non-finite values") and "Call 2" not in finding.reason
    assert report.warnings == [finding.message]  # the first call's finding only, said once
    # the report's plan is an Ascend910's (saturation mode): the cause says the device clamps instead of inf
    assert "That inf is the emulation's (IEEE arithmetic): an Ascend910 (saturation mode" in finding.message


def test_a_finding_without_a_float32_shadow_names_the_only_way_to_get_one_for_a_function():
    """ModelZoo face_recognition_TF2 after emulate_adapter(): its train_step's finding said "run with
    reference=True (%%npu --reference)", but no function API takes reference=True (it is a TF1 session's
    run argument); a traced function gets its float32 shadow in a %%npu --reference cell only."""
    report = RunReport(plan=Plan(ops={}), fetches=["top"], function=FunctionInfo("top", plan_function="top"))
    observers = _observers(top={})
    record = StepRecord(
        "call",
        "top",
        1,
        report.plan,
        1.0,
        (np.array([1.0]),),
        observations=(Observation("top", bad=[_w("norm/mul", "Mul")]),),
    )
    FunctionFindings(RunSettings()).after_call(report, record, observers)  # type: ignore[arg-type]
    finding = report.non_finite
    assert isinstance(finding, NonFiniteFinding) and finding.where == "norm/mul"
    assert "reference=True" not in finding.reason
    assert "Whether float32 stays finite was not checked: run the code in a %%npu --reference cell" in finding.reason
