"""The "Largest drift vs float32" line and chip (``_display/drift.py``): what is listed, and how it reads.

A reviewer read a Keras fit report and a TF1 session report line by line: the list ranked by the
largest element-wise relative error (1.16 rel beside cos 1.0000), listed an ``Identity`` beside the
op it copies, and an init run listed zero-drift constants as its largest drift.
"""

from __future__ import annotations

from drift_cases import drift_op

from npu_jupyter._display import html, text
from npu_jupyter._display.drift import worst_drift
from npu_jupyter._display.mime import report_payload
from npu_jupyter._plan.model import Plan
from npu_jupyter._runtime.report import RunReport


def _row(rel_rmse: float, max_abs: float = 1e-3, step: int = 0) -> dict[str, float]:
    return {"max_abs": max_abs, "max_rel": 0.5, "cos": 0.9999, "rmse": max_abs / 2, "rel_rmse": rel_rmse, "step": step}


def _report(drift: dict[str, dict[str, float]]) -> RunReport:
    ops = [
        drift_op("x", "Placeholder"),
        drift_op("mm", "MatMul", "x"),
        drift_op("mm/copy", "Identity", "mm"),
        drift_op("mm/copy/copy", "Snapshot", "mm/copy"),
        drift_op("bias", "BiasAdd", "mm"),
        drift_op("read", "ReadVariableOp"),
        drift_op("loss", "Mean", "bias"),
    ]
    return RunReport(plan=Plan(ops={d.name: d for d in ops}), steps=3, drift=drift)


def _facts(report: RunReport) -> dict[str, str]:
    payload = report_payload(report)
    return {fact["key"]: fact["text"] for fact in payload["facts"]}


def test_a_copy_is_not_listed_beside_the_op_it_copies():
    drift = {
        "mm": _row(0.02),
        "mm/copy": _row(0.02),
        "mm/copy/copy": _row(0.02),
        "bias": _row(0.01),
        "loss": _row(0.001),
    }
    payload = report_payload(_report(drift))
    names = [payload["ops"][k]["n"] for k in payload["run"]["drift_worst"]]
    assert names == ["mm", "bias", "loss"]  # not mm/copy, not the copy of the copy
    listed = _facts(_report(drift))["ops.dr"]
    assert "mm/copy" not in listed and listed.startswith("mm rel. RMSE 0.02")


def test_a_copy_that_drifted_more_than_what_it_copies_is_listed():
    """A copy stored in half precision from a float32 producer rounds there: that drift is its own."""
    drift = {"mm": _row(0.001), "mm/copy": _row(0.03)}
    payload = report_payload(_report(drift))
    assert [payload["ops"][k]["n"] for k in payload["run"]["drift_worst"]] == ["mm/copy", "mm"]


def test_zero_drift_is_no_drift_and_a_run_without_any_says_so():
    zero = {"max_abs": 0.0, "max_rel": 0.0, "cos": 1.0, "rmse": 0.0, "rel_rmse": 0.0, "step": 0}
    report = _report({"read": zero, "x": dict(zero)})
    payload = report_payload(report)
    assert payload["run"]["drift_worst"] == []
    assert _facts(report)["ops.dr"] == "none: every compared output equals its float32 reference"
    plain = text.render(payload)
    assert "Largest drift vs float32: none: every compared output equals its float32 reference" in plain
    assert "none: every compared output equals its float32 reference" in html.render(payload)
    one = _report({"read": zero, "loss": _row(0.004, step=2)})
    assert _facts(one)["ops.dr"] == "loss rel. RMSE 0.004, max abs 0.001, cos 0.9999, step 2"


def test_the_list_ranks_by_relative_rmse_and_says_each_ops_step():
    drift = {"bias": _row(0.0005, max_abs=0.9, step=1), "loss": _row(0.2, max_abs=1e-4, step=2)}
    listed = _facts(_report(drift))["ops.dr"]
    assert listed == (
        "loss rel. RMSE 0.2, max abs 0.0001, cos 0.9999, step 2; bias rel. RMSE 0.0005, max abs 0.9, cos 0.9999, step 1"
    )
    label = next(f["label"] for f in report_payload(_report(drift))["facts"] if f["key"] == "ops.dr")
    assert label.startswith("Largest drift vs float32, each op's worst step (rel. RMSE: root mean square of a − b")


def test_a_non_finite_drift_ranks_first_and_reads_as_such():
    drift = {"loss": _row(0.2), "bias": {**_row(0.0), "rel_rmse": float("nan"), "max_abs": float("inf")}}
    payload = report_payload(_report(drift))
    assert payload["ops"][payload["run"]["drift_worst"][0]]["n"] == "bias"
    assert _facts(_report(drift))["ops.dr"].startswith("bias not finite (inf/NaN), cos 0.9999, step 0; loss")


def test_a_small_drift_is_not_rounded_to_zero_in_the_payload():
    payload = report_payload(_report({"loss": _row(3.2e-7, max_abs=2.5e-8)}))
    (entry,) = [op for op in payload["ops"] if op["n"] == "loss"]
    assert entry["dr"]["rel_rmse"] == 3.2e-7 and entry["dr"]["max_abs"] == 2.5e-8 and entry["dr"]["step"] == 0


def test_payloads_written_before_rel_rmse_rank_and_read_as_they_did():
    ops = [
        {"t": "Add", "i": [], "dr": {"max_abs": 0.0227, "max_rel": 7.99, "cos": 0.99999}},
        {"t": "Add", "i": [], "dr": {"max_abs": 0.0018, "max_rel": 91.0, "cos": 0.99998}},
    ]
    assert worst_drift(ops) == [1, 0]
