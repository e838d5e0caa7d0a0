"""The one rule for "which op drifted most" (``_runtime/observe/drift_ranking.py``), below every view."""

from __future__ import annotations

import math

from drift_cases import DRIFTED, NOTHING_DRIFTED, PLAN, ZEROS, report

from npu_jupyter._display.drift import worst_drift_names
from npu_jupyter._runtime.observe.drift_ranking import worst_fetch_drift, worst_ops


def test_the_worst_op_is_ranked_by_relative_rmse_without_copies_or_zero_drift():
    assert worst_ops(PLAN, DRIFTED, 3) == ["dnn/MatMul", "dnn/near_zero", "loss"]
    assert worst_ops(PLAN, DRIFTED, 3) == worst_drift_names(PLAN, report(DRIFTED))  # the report's line


def test_nothing_drifted_names_no_op():
    assert worst_ops(PLAN, NOTHING_DRIFTED, 1) == []
    assert worst_ops(PLAN, {}, 1) == []
    assert ZEROS not in worst_ops(PLAN, DRIFTED, 10)


def test_the_fetch_drift_is_the_worst_fetch_by_the_same_rank():
    drift = {"loss": {"max_rel": 9.0, "rel_rmse": 1e-4}, "acc": {"max_rel": 0.1, "rel_rmse": 0.02}}
    assert worst_fetch_drift(drift, ["loss:0", "acc:0", "train"]) == drift["acc"]
    assert worst_fetch_drift(drift, ["train"]) is None
    non_finite = {"loss": {"rel_rmse": math.nan}, "acc": {"rel_rmse": 0.02}}
    assert worst_fetch_drift(non_finite, ["acc:0", "loss:0"]) is non_finite["loss"]  # NaN ranks first
