"""Folding the runs of one run graph: steps add up, CPU time is per step, the worst drift and first finding stay."""

from __future__ import annotations

import math

from npu_jupyter._plan.model import Plan
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import NonFiniteFinding, OverflowCheck
from npu_jupyter._zoo_check.training_run import fold


def test_folded_runs_sum_steps_average_time_and_keep_the_worst_drift():
    plan = Plan(ops={})
    first = RunReport(plan=plan, steps=1, wall_ms=30.0, drift={"a": {"max_rel": 0.5}, "b": {"max_rel": 0.1}})
    first.overflow_check = OverflowCheck(1, "all", ("float16",))
    second = RunReport(
        plan=plan,
        steps=3,
        wall_ms=10.0,
        drift={"a": {"max_rel": 0.2}, "b": {"max_rel": math.nan}},
        first_overflow="b",
        non_finite=NonFiniteFinding(3, "b", "b", "inf", "Step 3: inf"),
        overflow_check=OverflowCheck(3, "all", ("float32",)),
    )
    folded = fold([first, second])
    assert folded.steps == 4 and folded.wall_ms == (30.0 + 3 * 10.0) / 4
    assert folded.drift["a"]["max_rel"] == 0.5 and math.isnan(folded.drift["b"]["max_rel"])
    assert folded.first_overflow == "b" and folded.non_finite is second.non_finite
    assert folded.overflow_check == OverflowCheck(4, "all", ("float16", "float32"))  # the checked steps add up
    assert fold([first]) is first


def test_folded_runs_keep_each_ops_worst_step_by_relative_rmse_as_a_session_does():
    """One element near zero gives the first run the larger max rel; the second drifted more overall."""
    plan = Plan(ops={})
    noisy = {"max_abs": 1e-4, "max_rel": 5.0, "rel_rmse": 1e-4, "step": 0}
    broad = {"max_abs": 1e-2, "max_rel": 0.1, "rel_rmse": 0.02, "step": 1}
    folded = fold([RunReport(plan=plan, drift={"a": noisy}), RunReport(plan=plan, drift={"a": broad})])
    assert folded.drift["a"] is broad
