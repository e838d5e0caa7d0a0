"""The first non-finite op of a call, found from the observations of the bodies it ran (no TensorFlow)."""

from __future__ import annotations

from types import SimpleNamespace

from npu_jupyter.runtime.function_findings import first_non_finite, op_name
from npu_jupyter.runtime.function_observe import Observation, Watched


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
