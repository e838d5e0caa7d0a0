"""One zoo task's row, filled in this process (the columns; the process boundary is test_check.py's)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from npu_jupyter._zoo_check.task import CPU_TIME_FIELDS, MACHINE_FIELDS, empty_row, lowered_ops, run_task

ENTRIES = str(Path(__file__).with_name("entries.py"))

pytest.importorskip("tensorflow")


def _row(function: str, mode: str, steps: int = 2, reference: bool = True) -> dict:
    return run_task(f"{ENTRIES}:{function}", {"precision_mode": mode}, steps, reference, time.perf_counter())


def test_a_float16_mode_lowers_ops_drifts_and_estimates_less_memory():
    fp32 = _row("tiny", "must_keep_origin_dtype")
    fp16 = _row("tiny", "force_fp16")
    assert fp32["status"] == fp16["status"] == "ok"
    assert fp32["compiles"] and fp16["compiles"] and fp16["plan_errors"] == []
    assert fp32["ops_lowered"] == 0 and fp16["ops_lowered"] > 0
    assert fp16["ops"] == fp16["ai_core"] + fp16["ai_cpu"] + fp16["host"] > 0
    assert fp32["fetch_rel_rmse"] == 0.0 and fp16["fetch_rel_rmse"] > 0.0
    # nothing drifted under must_keep_origin_dtype: no op is named (the initializer's zeros were, by max rel)
    assert fp32["worst_op"] is None and fp32["worst_op_rel_rmse"] == 0.0
    assert fp16["worst_op"] and fp16["worst_op_rel_rmse"] > 0.0
    assert fp16["est_memory_vs_fp32"] < 1.0 and fp32["est_memory_vs_fp32"] == pytest.approx(1.0)
    assert fp16["steps_run"] == 2 and fp16["cpu_ms_per_step"] > 0 and fp16["plan_ms"] > 0
    assert math.isfinite(fp16["loss"]) and fp16["first_non_finite"] is None
    assert fp16["peak_rss_mb"] > 50  # this process has TensorFlow loaded


def test_the_estimate_is_the_one_the_runs_report_gives_with_its_feeds_and_fetches_copied():
    """The row's step time is the run report's: the fed x goes to the device and the fetched loss comes
    back every step (the adapter's GeOp _Arg and _Retval), on both sides of the float32 ratio."""
    import importlib.util

    from npu_jupyter._plan.planner import plan
    from npu_jupyter.cost import estimate

    spec = importlib.util.spec_from_file_location("zoo_test_entries", ENTRIES)
    assert spec is not None and spec.loader is not None
    entries = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entries)
    row = _row("tiny", "force_fp16")
    graph, _, train, loss = entries._regression(1.0)
    fed = {"x:0": list(entries.FEED.shape)}
    planned = plan(graph, {"precision_mode": "force_fp16"}, fetches=[train.name, loss.name])
    expected = estimate(planned, graph, fed_shapes=fed, fetched=[train.name, loss.name])
    assert [(c.tensor, c.direction) for c in expected.run_copies] == [("x:0", "h2d"), ("loss:0", "d2h")]
    assert row["est_step_ms"] == pytest.approx(expected.step_ms)
    assert row["est_step_vs_fp32"] == pytest.approx(expected.step_ratio_fp32)
    assert row["est_memory_bytes"] == expected.memory_bytes


def test_a_refused_configuration_has_no_estimated_step():
    """The Ascend 910 refuses float32 Conv2D filter gradients under must_keep_origin_dtype: the report gives
    no step time for a graph that would not compile, and neither does the table."""
    refused = _row("conv", "must_keep_origin_dtype")
    assert refused["status"] == "refused" and refused["plan_errors"]
    assert refused["est_step_ms"] is None and refused["est_memory_bytes"] is None
    lowered = _row("conv", "allow_mix_precision")
    assert lowered["status"] == "ok" and lowered["est_step_ms"] > 0


def test_the_options_are_laid_over_the_scripts_own_config():
    """The entry's session asks for force_fp32; the task's mode wins, so float16 overflows."""
    row = _row("overflow", "force_fp16")
    assert row["status"] == "non-finite"
    assert row["first_non_finite"]  # the op the emulator named
    kept = _row("overflow", "must_keep_origin_dtype")
    assert kept["status"] == "ok" and kept["ops_lowered"] == 0


def test_the_training_step_is_reported_not_a_side_graph_run_more_often():
    row = _row("busy_side_runs", "force_fp16", steps=2)
    assert row["status"] == "ok" and row["steps_run"] == 2  # the side graph ran 8 times
    assert row["ops_lowered"] > 0 and row["fetch_rel_rmse"] > 0  # the regression's step, lowered and drifting


def test_an_entry_that_raises_is_an_error_row_with_its_message():
    row = _row("raises", "force_fp16")
    assert row["status"] == "error" and row["error"] == "RuntimeError: the script failed <b>here</b>"
    assert "RuntimeError" in row["traceback"]


def test_an_entry_that_runs_no_emulated_step_says_what_the_contract_asks():
    row = _row("no_session", "force_fp16")
    assert row["status"] == "error" and "npu.session(graph, config)" in row["error"]


def test_without_reference_there_are_no_drift_columns():
    row = _row("tiny", "force_fp16", reference=False)
    assert row["status"] == "ok" and row["fetch_rel_rmse"] is None and row["worst_op"] is None
    assert row["worst_op_rel_rmse"] is None


def test_tf2_functions_are_emulated_through_npu_functions():
    from npu_jupyter._runtime.functions.emulator import supported

    if not supported():
        pytest.skip("traced functions are emulated on TensorFlow >= 2.14 only")
    row = _row("tf2_loop", "force_fp16")
    assert row["status"] == "ok", row["error"]
    assert row["steps_run"] == 2 and row["ops_lowered"] > 0 and row["ops"] > 0


def test_lowered_ops_do_not_count_what_the_script_writes_in_float16():
    import tensorflow as tf

    import npu_jupyter

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        w = tf.compat.v1.get_variable("w", [8, 8], initializer=tf.compat.v1.ones_initializer())
        y = tf.matmul(x, w, name="mm32")
        z = tf.matmul(tf.cast(y, tf.float16, name="to16"), tf.cast(w, tf.float16, name="w16"), name="mm16")
        loss = tf.reduce_mean(tf.cast(z, tf.float32), name="loss")
    plan = npu_jupyter.plan(graph, {"precision_mode": "allow_mix_precision"}, fetches=[loss])
    lowered = lowered_ops(plan, graph)
    assert "mm32" in lowered and not {"to16", "w16", "mm16"} & set(lowered)
    assert "mm32" in lowered_ops(plan, None)  # no graph: the plan's own before/after dtypes


def test_every_row_has_every_column_and_cpu_times_are_named():
    row = empty_row("a.py:f", {"precision_mode": "force_fp16"}, 3)
    assert set(CPU_TIME_FIELDS) <= set(MACHINE_FIELDS) <= set(row)
    assert row["status"] == "error" and row["compiles"] is None


def test_the_worst_op_is_the_one_the_reports_largest_drift_line_names():
    """A widedeep-like step: max rel would name the op near zero, or the all-zero initializer."""
    from drift_cases import DRIFTED, NOTHING_DRIFTED, PLAN, report

    from npu_jupyter._display.drift import worst_drift_names
    from npu_jupyter._zoo_check.task import _fill_drift

    row = empty_row("a.py:f", {"precision_mode": "allow_mix_precision"}, 3)
    _fill_drift(row, report(DRIFTED), PLAN)
    assert row["worst_op"] == worst_drift_names(PLAN, report(DRIFTED))[0] == "dnn/MatMul"
    assert row["worst_op_rel_rmse"] == 0.01 and row["fetch_rel_rmse"] == 2e-4
    quiet = empty_row("a.py:f", {"precision_mode": "force_fp32"}, 3)
    _fill_drift(quiet, report(NOTHING_DRIFTED), PLAN)
    assert quiet["worst_op"] is None and quiet["worst_op_rel_rmse"] == 0.0 and quiet["fetch_rel_rmse"] == 0.0


def test_a_worst_op_whose_reference_cancels_gets_its_figure_against_its_inputs_scale():
    from drift_cases import CANCEL_PLAN, CANCELLED, report

    from npu_jupyter._zoo_check.task import _fill_drift

    row = empty_row("a.py:f", {"precision_mode": "allow_mix_precision"}, 3)
    _fill_drift(row, report(CANCELLED, CANCEL_PLAN), CANCEL_PLAN)
    assert row["worst_op"] == "grad" and row["worst_op_cancelled"] is True
    assert row["worst_op_rel_rmse"] == pytest.approx(1.3e-5 / (1e-3 * math.sqrt(128)))  # not 666
