"""compare(): accuracy metrics on known arrays, dumps and reports."""

from __future__ import annotations

import math

import numpy as np
import pytest

from npu_jupyter._runtime.observe.compare import compare, cosine, metrics
from npu_jupyter._runtime.observe.dump.writer import DumpEntry, DumpWriter


def test_metrics_on_known_arrays():
    m = metrics(np.array([1.0, 2.0, 4.0]), np.array([1.0, 2.0, 5.0]))
    assert m["max_abs"] == pytest.approx(1.0)
    assert m["max_rel"] == pytest.approx(0.2)
    assert m["accumulated_rel"] == pytest.approx(1.0 / 8.0)
    assert m["rmse"] == pytest.approx(math.sqrt(1.0 / 3.0))
    assert m["cosine"] == pytest.approx(25.0 / (math.sqrt(21.0) * math.sqrt(30.0)))


@pytest.mark.parametrize("size", [2, 3, 4, 7, 14, 41, 50])
def test_identical_tensors_have_cosine_one_and_no_error(size):
    # dot(x, x) / |x|^2 rounds to 1 +- 2.2e-16 for most of these sizes (which ones depends on the BLAS
    # and the CPU): the metric of identical tensors is exact by definition, on every machine.
    x = np.linspace(-3, 3, size)
    assert metrics(x, x) == {
        "cosine": 1.0,
        "max_abs": 0.0,
        "max_rel": 0.0,
        "accumulated_rel": 0.0,
        "rmse": 0.0,
        "rel_rmse": 0.0,
        "ref_rms": pytest.approx(math.sqrt(float(np.mean(x * x)))),  # the scale drift_ranking reads
        "size": float(size),
    }


@pytest.mark.parametrize("size", [2, 3, 4, 7, 14, 41, 50])
def test_a_cosine_never_leaves_its_range(size):
    x = np.linspace(-3, 3, size)
    assert -1.0 <= metrics(x, -x)["cosine"] <= -1.0 + 1e-15
    assert 1.0 - 1e-15 <= metrics(2.0 * x, x)["cosine"] <= 1.0  # parallel, not identical: clamped
    assert math.isnan(cosine(math.nan, 1.0, 1.0, identical=False))


def test_an_overflowed_tensor_shows_infinite_error():
    m = metrics(np.array([np.inf, 1.0], np.float16), np.array([70000.0, 1.0]))
    assert math.isinf(m["max_abs"]) and math.isnan(m["cosine"])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_tensor_against_a_zero_reference_has_no_cosine(bad):
    # GRU4Rec_ID0128 under dynamic loss scaling: the gradient of `u * state` with a zero state is
    # inf * 0 = NaN in float16 and 0 in float32; "cos 0.0000" beside "not finite" read as orthogonal.
    m = metrics(np.array([bad, 0.0]), np.zeros(2))
    assert math.isnan(m["cosine"])
    assert math.isnan(cosine(math.nan, math.inf, 0.0, identical=False))
    assert metrics(np.zeros(2), np.ones(2))["cosine"] == 0.0  # a finite zero tensor still has cosine 0


def test_shape_mismatch_is_one_clear_error():
    with pytest.raises(ValueError, match="3 and 2 elements"):
        metrics(np.zeros(3), np.zeros(2))


def _dump(path, values):
    path.mkdir()
    writer = DumpWriter(str(path))
    writer.write_step(0, [DumpEntry(op, "Add", "output", 0, np.asarray(v, np.float32)) for op, v in values.items()])
    return str(path)


def test_compare_two_dumps_per_op_and_slot(tmp_path):
    a = _dump(tmp_path / "a", {"x": [1.0, 2.0], "<b>": [1.0, 0.0], "only_a": [1.0]})
    b = _dump(tmp_path / "b", {"x": [1.0, 2.0], "<b>": [0.0, 1.0], "only_b": [1.0]})
    result = compare(a, b)
    rows = {r["op"]: r for r in result.to_records()}
    assert rows["x"]["cosine"] == pytest.approx(1.0)
    assert rows["<b>"]["cosine"] == pytest.approx(0.0)
    assert rows["<b>"]["slot"] == "output:0" and rows["<b>"]["step"] == 0
    assert result.only_a == ["only_a:output:0"] and result.only_b == ["only_b:output:0"]
    assert result.worst(1)[0].op == "<b>"


def test_html_escapes_op_names(tmp_path):
    a = _dump(tmp_path / "a", {"<script>alert(1)</script>": [1.0]})
    page = compare(a, a)._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_compare_two_run_reports_by_fetch_values(tf, hand):
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.add(x, 1e-3, name="y")
    reports = []
    for half in ((), ("AddV2",)):
        with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn(half)) as sess:
            sess.run("y:0", {"x:0": np.array([1.0, 2.0], np.float32)})
            reports.append(sess.last_report)
    result = compare(reports[1], reports[0])
    (row,) = result.rows
    assert row.op == "y:0"
    assert row.max_abs == pytest.approx(1e-3, rel=0.1)


def test_mixing_a_dump_and_a_report_is_refused(tmp_path):
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.report import RunReport

    with pytest.raises(TypeError, match="two dumps or two RunReports"):
        compare(RunReport(plan=Plan(ops={})), str(tmp_path))


@pytest.mark.parametrize("bad", [5, None, [1.0, 2.0]])
def test_comparing_something_that_is_not_a_dump_names_what_compare_takes(tmp_path, bad):
    writer = DumpWriter(str(tmp_path))
    writer.write_step(0, [DumpEntry("a", "Add", "output", 0, np.ones(3, np.float32), "float32")])
    with pytest.raises(TypeError, match=r"dump folders .*loaded dumps .*RunReports; got"):
        compare(str(tmp_path), bad)


def test_the_same_non_finite_values_in_both_runs_are_no_drift():
    """The zoo's Wide & Deep: a warm-up rate 0/0 is NaN in float32 too (a cond drops it); it ranked as the
    worst drift. The same inf/NaN at the same place is no difference; one only in ``actual`` still is."""
    same = metrics([np.nan, np.inf, 1.0], [np.nan, np.inf, 1.0])
    assert same["max_abs"] == 0.0 and same["rel_rmse"] == 0.0 and same["cosine"] == 1.0
    partly = metrics([np.nan, 2.0], [np.nan, 1.0])
    assert partly["max_abs"] == 1.0 and partly["rel_rmse"] == 1.0
    overflowed = metrics([np.inf, 1.0], [70000.0, 1.0])
    assert overflowed["max_abs"] == np.inf and np.isnan(overflowed["cosine"])


def test_relative_rmse_weighs_every_element_where_max_rel_follows_one_near_zero():
    b = np.array([1.0, -1.0, 1e-6, 2.0])
    a = b + np.array([1e-3, 0.0, 1e-5, 0.0])
    found = metrics(a, b)
    assert found["max_rel"] > 9  # the element near zero
    assert found["rel_rmse"] == pytest.approx(np.sqrt(np.mean((a - b) ** 2)) / np.sqrt(np.mean(b**2)))
    assert found["rel_rmse"] < 1e-3


def test_a_tensor_holding_only_the_references_own_inf_nan_has_every_field_a_drift_row_reads():
    # every position left out as no difference: the row still has the scale fields (_record_drift reads them)
    m = metrics(np.array([np.inf, np.nan]), np.array([np.inf, np.nan]))
    assert m["rel_rmse"] == 0.0 and m["ref_rms"] == 0.0 and m["size"] == 0.0
    assert metrics(np.zeros(0), np.zeros(0))["size"] == 0.0
