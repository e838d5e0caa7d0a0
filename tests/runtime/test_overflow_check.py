"""An overflow check that ran and found nothing says so; where no check ran, the report says nothing of one."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from npu_jupyter._display.facts import report_facts
from npu_jupyter._display.mime import report_payload
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.functions import emulator as functions
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import OverflowCheck
from npu_jupyter._runtime.session.emulator import EmulatorSession

SCHEMA = json.loads((Path(__file__).parents[2] / "npu_jupyter" / "_display" / "report_schema.json").read_text())
needs_functions = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


def _graph(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        big = tf.multiply(x, 1000.0, name="big")  # 100 * 1000 = 1e5 overflows float16
        tf.reduce_sum(big, name="total")
    return g, x


def _check_facts(report):
    """The report's fact lines about overflow detection, as every view shows them."""
    return [f for f in report_facts(report_payload(report)) if f.key in ("run.overflow_check", "run.first_overflow")]


def test_a_session_check_that_found_nothing_says_so_with_its_steps_and_storage(tf, hand, tmp_path):
    g, x = _graph(tf)
    cfg = NpuConfig(enable_dump_debug=True, dump_path=str(tmp_path))
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        for _ in range(3):
            sess.run("total:0", {x: [1.0, 2.0]})
        report = sess.last_report
    assert report.first_overflow is None
    assert report.overflow_check == OverflowCheck(3, "all", ("float16", "float32"))
    (fact,) = _check_facts(report)
    assert fact.label == "Overflow check" and fact.tone == ""
    assert fact.text.startswith("no inf/NaN in 3 steps (emulated float16/float32 storage on this CPU;")
    assert "Overflow check: no inf/NaN in 3 steps" in str(report)  # the text report
    payload = report_payload(report)
    assert payload["run"]["overflow_check"] == {"checked": 3, "mode": "all", "storage": ["float16", "float32"]}
    assert list(jsonschema.Draft7Validator(SCHEMA).iter_errors(payload)) == []


def test_a_session_without_overflow_detection_says_nothing_of_a_check(tf, hand):
    g, x = _graph(tf)
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run("total:0", {x: [1.0, 2.0]})
        report = sess.last_report
    assert report.overflow_check is None and _check_facts(report) == []
    assert "overflow_check" not in report_payload(report)["run"]
    assert "Overflow check" not in str(report) and "no inf/NaN" not in str(report)


def test_a_session_check_that_found_an_overflow_names_it_and_claims_no_clean_run(tf, hand, tmp_path):
    g, x = _graph(tf)
    cfg = NpuConfig(enable_dump_debug=True, dump_path=str(tmp_path))
    with EmulatorSession(cfg, g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        sess.run("total:0", {x: [1.0, 2.0]})
        sess.run("total:0", {x: [100.0, 2.0]})
        report = sess.last_report
    first, check = _check_facts(report)
    assert (first.key, first.text) == ("run.first_overflow", "big")
    assert check.text.startswith("2 steps checked, inf/NaN found (the first overflow names the first op) (emulated")
    assert "no inf/NaN" not in str(report)


def test_a_step_whose_outputs_the_mode_does_not_cover_is_not_counted(tf, hand):
    """aicore_overflow covers AI Core ops only, no mode covers host ops nor an op GE executes itself (no
    kernel, so no overflow check on the device): such a step was not checked."""
    import dataclasses

    from npu_jupyter._runtime.observe.observers import note_checked

    report = RunReport(plan=None)
    g, _ = _graph(tf)
    plan = hand.plan(g, {"Mul"})
    ai_cpu = dataclasses.replace(plan.ops["big"], engine="AI_CPU")
    host = dataclasses.replace(plan.ops["big"], engine="HOST")
    read = dataclasses.replace(plan.ops["big"], op_type="ReadVariableOp")  # GE reads a variable itself
    note_checked(report, "aicore_overflow", [("float16", ai_cpu), ("float32", host)], plan.soc)
    note_checked(report, "all", [("float32", host), ("float32", read)], plan.soc)
    assert report.overflow_check is None
    note_checked(report, "all", [("float16", plan.ops["big"])], plan.soc)
    assert report.overflow_check == OverflowCheck(1, "all", ("float16",))


def test_collapsed_runs_add_their_checked_steps():
    from npu_jupyter._notebook.run_reports import collapse

    first, second, unchecked = RunReport(plan=None), RunReport(plan=None), RunReport(plan=None)
    first.overflow_check = OverflowCheck(2, "all", ("float32",))
    second.overflow_check = OverflowCheck(3, "all", ("float16",))
    assert collapse([first, unchecked, second]).overflow_check == OverflowCheck(5, "all", ("float16", "float32"))
    assert collapse([unchecked, RunReport(plan=None)]).overflow_check is None


@needs_functions
def test_a_traced_function_check_that_found_nothing_counts_its_calls(tmp_path):
    import tensorflow as tf

    @tf.function
    def grow(x):
        return tf.reduce_sum(tf.exp(x, name="grow"))

    config = {"precision_mode": "allow_mix_precision", "enable_dump_debug": True, "dump_path": str(tmp_path)}
    with functions.FunctionEmulation(config) as emulation:
        grow(tf.constant([1.0, 2.0]))
        grow(tf.constant([0.5, 2.0]))
    (report,) = emulation.reports.values()
    assert report.first_overflow is None and report.overflow_check is not None
    assert report.overflow_check.checked == 2 and report.overflow_check.mode == "all"
    (fact,) = _check_facts(report)
    assert fact.text.startswith("no inf/NaN in 2 calls (emulated ")


@needs_functions
def test_a_traced_function_observed_without_overflow_detection_says_nothing_of_a_check():
    """Mixed precision observes the function (to name a first non-finite op), but that is no overflow check."""
    import tensorflow as tf

    @tf.function
    def square(x):
        return tf.matmul(x, x)

    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}) as emulation:
        square(tf.ones([2, 2]))
    (report,) = emulation.reports.values()
    assert report.emulation  # rounded and observed
    assert report.overflow_check is None and _check_facts(report) == []
    assert "overflow_check" not in report_payload(report)["run"]
