"""sweep(): one table of time and drift per precision mode."""

from __future__ import annotations

import math

import numpy as np
import pytest

from npu_jupyter._sweep import sweep


def _build():
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [8, 16], name="x")
    w = tf.compat.v1.get_variable(
        "w", initializer=tf.constant(np.linspace(-1, 1, 16 * 4, dtype=np.float32).reshape(16, 4))
    )
    logits = tf.matmul(x, w, name="logits")
    loss = tf.reduce_mean(tf.square(logits), name="loss")
    tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss, name="train")
    return ["loss:0", "train"]


FEEDS = {"x:0": np.linspace(0, 1, 8 * 16, dtype=np.float32).reshape(8, 16) + 1e-3}


def test_sweep_reports_time_and_drift_per_mode():
    table = sweep(_build, feeds=FEEDS, modes=["must_keep_origin_dtype", "allow_fp32_to_fp16", "force_fp16"], steps=2)
    records = table.to_records()
    assert [r["mode"] for r in records] == ["must_keep_origin_dtype", "allow_fp32_to_fp16", "force_fp16"]
    keep, fp16 = table["must_keep_origin_dtype"], table["allow_fp32_to_fp16"]
    assert keep.error is None and keep.ops_changed == 0 and keep.max_abs == 0.0
    assert fp16.ops_changed > 0 and fp16.max_rel > 0 and fp16.cosine == pytest.approx(1.0, abs=1e-3)
    assert all(r["wall_ms"] > 0 for r in records)
    assert all(r["timed_steps"] == 2 for r in records)
    # ranked as the report ranks: by relative RMSE, and a mode where nothing drifted names no op
    assert fp16.rel_rmse > 0 and fp16.worst_op and fp16.worst_op_rel_rmse > 0
    assert keep.rel_rmse == 0.0 and keep.worst_op == "" and keep.worst_op_rel_rmse is None
    keep_line = next(line for line in repr(table).splitlines() if line.startswith("must_keep_origin_dtype"))
    assert keep_line.endswith("  none"), keep_line
    assert f"{fp16.worst_op} (rel. RMSE {fp16.worst_op_rel_rmse:.3g})" in repr(table)


def test_the_worst_op_is_the_one_the_reports_largest_drift_line_names(monkeypatch):
    """A widedeep-like step: max rel would name the op near zero, or an all-zero initializer."""
    from drift_cases import DRIFTED, NOTHING_DRIFTED, report

    from npu_jupyter import _sweep as sweep_module
    from npu_jupyter._display.drift import worst_drift_names

    monkeypatch.setattr(sweep_module, "_add_estimate", lambda row, report, graph: None)  # no graph here
    row = sweep_module._row("allow_mix_precision", report(DRIFTED), 1.0, None, 1)
    assert row.worst_op == worst_drift_names(report(DRIFTED).plan, report(DRIFTED))[0] == "dnn/MatMul"
    assert row.worst_op_rel_rmse == 0.01 and row.rel_rmse == 2e-4 and row.max_rel == 3e-4
    quiet = sweep_module._row("force_fp32", report(NOTHING_DRIFTED), 1.0, None, 1)
    assert quiet.worst_op == "" and quiet.worst_op_rel_rmse is None and quiet.rel_rmse == 0.0


def test_a_worst_op_whose_reference_cancels_gets_its_figure_against_its_inputs_scale(monkeypatch):
    from drift_cases import CANCEL_PLAN, CANCELLED, report

    from npu_jupyter import _sweep as sweep_module

    monkeypatch.setattr(sweep_module, "_add_estimate", lambda row, report, graph: None)  # no graph here
    row = sweep_module._row("allow_mix_precision", report(CANCELLED, CANCEL_PLAN), 1.0, None, 1)
    assert row.worst_op == "grad" and row.worst_op_cancelled
    assert row.worst_op_rel_rmse == pytest.approx(1.3e-5 / (1e-3 * math.sqrt(128)))  # not 666


def test_cpu_times_exclude_the_warm_up_and_are_the_median_of_the_timed_steps(monkeypatch):
    """The first run of a session carries the warm-up; it must not land in any mode's number."""
    from npu_jupyter import _sweep as sweep_module

    seen = []
    real = sweep_module._timed_run

    def spy(sess, fetches, feeds):
        value = real(sess, fetches, feeds)
        seen.append((sess.last_report.steps, value))
        return value

    monkeypatch.setattr(sweep_module, "_timed_run", spy)
    monkeypatch.setattr(sweep_module.statistics, "median", lambda xs: max(xs) + 1000.0)
    table = sweep(_build, feeds=FEEDS, modes=["force_fp16"], steps=3, warmup=2)
    # every timed run came after the initializer and two warm-up runs of the same fetches
    assert [steps for steps, _ in seen] == [3, 4, 5]
    assert table["force_fp16"].wall_ms == max(v for _, v in seen) + 1000.0
    assert table["force_fp16"].timed_steps == 3


def test_every_view_labels_cpu_time_as_emulation_and_leads_with_the_estimate():
    table = sweep(_build, feeds=FEEDS, modes=["must_keep_origin_dtype", "force_fp16"], steps=1)
    text, page = repr(table), table._repr_html_()
    for view in (text, page):
        assert "wall-clock time of the emulation on this CPU (not NPU time)" in view
        assert "estimated by the cost model (not measured)" in view
        assert "vs first" not in view
    assert page.index("est. NPU ms/step") < page.index("ms/step on this CPU (emulation)")
    fp16, keep = table["force_fp16"], table["must_keep_origin_dtype"]
    assert fp16.est_step_ms is not None and fp16.est_step_ms > 0
    assert fp16.est_memory_vs_fp32 < 1.0 and keep.est_memory_vs_fp32 == pytest.approx(1.0)
    assert fp16.est_step_ms <= keep.est_step_ms


def test_bad_step_counts_are_one_clear_error():
    with pytest.raises(ValueError, match="steps must be >= 1"):
        sweep(_build, feeds=FEEDS, modes=["force_fp16"], steps=0)


def test_sweep_of_an_existing_graph_and_html_is_escaped(tf):
    g = tf.Graph()
    with g.as_default():
        fetches = _build()
    table = sweep(g, fetches, feeds=FEEDS, modes=["allow_mix_precision"], steps=1)
    assert table["allow_mix_precision"].error is None
    assert ">allow_mix_precision<" in (table._repr_html_() or "")
    assert "allow_mix_precision" in repr(table)


def test_a_failing_mode_is_a_row_not_an_exception():
    table = sweep(_build, feeds={}, modes=["force_fp16"], steps=1)  # x is not fed
    assert "InvalidArgumentError" in table["force_fp16"].error


def test_a_mode_the_adapter_would_refuse_carries_the_plan_errors_and_the_table_marks_it():
    """allow_fp32_to_bf16 on an Ascend910 is refused by the adapter: the numbers stay, marked, escaped."""
    table = sweep(_build, feeds=FEEDS, modes=["allow_fp32_to_fp16", "allow_fp32_to_bf16"], steps=1)
    fine, bf16 = table["allow_fp32_to_fp16"], table["allow_fp32_to_bf16"]
    assert fine.plan_errors == [] and not fine.refused
    assert bf16.error is None and bf16.refused and bf16.wall_ms > 0
    assert any("bf16" in e or "bfloat16" in e for e in bf16.plan_errors), bf16.plan_errors
    assert table.to_records()[1]["plan_errors"] == bf16.plan_errors
    page = table._repr_html_()
    assert "the adapter would refuse this graph" in page and page.count("would refuse") == 1
    import html

    assert html.escape(bf16.plan_errors[0]) in page
    assert "would refuse" in repr(table)
