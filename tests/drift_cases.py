"""A widedeep-like run's drift, shared by the sweep's, the zoo's and the ranking's tests.

What the zoo got wrong on a widedeep run: ranked by the largest element-wise relative error it named an
op whose values sit near zero (one element's error over a tiny reference), or, when nothing drifted, a
zero-drift initializer (``.../Initializer/zeros``, drift 0). The report ranks by relative RMSE, leaves
out zero drift and a copy of an op that drifted as much.
"""

from __future__ import annotations

from typing import Any

from npu_jupyter._plan.model import OpDecision, Plan
from npu_jupyter._runtime.report import RunReport

ZEROS = "linear/linear_model/weights/Initializer/zeros"
FETCHES = ["loss:0", "train"]


def drift_op(name: str, op_type: str, *inputs: str) -> OpDecision:
    """A device op lowered to float16 (white list): the shape every drift test needs."""
    return OpDecision(
        name=name,
        op_type=op_type,
        placement="device",
        engine="AI_CORE",
        placement_reason="supported",
        dtype_before="float32",
        dtype_after="float16",
        precision_reason="white list",
        inputs=list(inputs),
    )


def _row(rel_rmse: float, max_rel: float, max_abs: float = 1e-3) -> dict[str, float]:
    return {"max_abs": max_abs, "max_rel": max_rel, "cos": 0.9999, "rmse": 1e-4, "rel_rmse": rel_rmse, "step": 1}


PLAN = Plan(
    ops={
        d.name: d
        for d in (
            drift_op(ZEROS, "Const"),
            drift_op("x", "Placeholder"),
            drift_op("dnn/MatMul", "MatMul", "x"),
            drift_op("dnn/MatMul/copy", "Identity", "dnn/MatMul"),
            drift_op("dnn/near_zero", "Sub", "dnn/MatMul"),
            drift_op("loss", "Mean", "dnn/near_zero"),
            drift_op("train", "NoOp"),
        )
    }
)
#: Every row a widedeep step's reference leaves: the initializer matched float32 exactly.
DRIFTED = {
    ZEROS: _row(0.0, 0.0, max_abs=0.0),
    "dnn/MatMul": _row(0.01, 0.05),
    "dnn/MatMul/copy": _row(0.01, 0.05),
    "dnn/near_zero": _row(0.001, 5.0),  # one element near zero: the largest max rel, a small rel. RMSE
    "loss": _row(2e-4, 3e-4),
}
#: A mode under which nothing drifted (force_fp32): every row is zero drift.
NOTHING_DRIFTED = {name: _row(0.0, 0.0, max_abs=0.0) for name in (ZEROS, "dnn/MatMul", "loss")}


#: A conv bias before a BatchNorm: its gradient's float32 reference cancels to rounding noise.
CANCEL_PLAN = Plan(
    ops={
        d.name: d
        for d in (
            drift_op("dx", "AddN"),
            drift_op("grad", "BiasAddGrad", "dx"),
            drift_op("adam/m", "Sub", "grad"),
            drift_op("loss", "Mean", "dx"),
        )
    }
)


def _scaled(rel_rmse: float, rmse: float, ref_rms: float, size: float) -> dict[str, float]:
    return {**_row(rel_rmse, rel_rmse * 10), "rmse": rmse, "ref_rms": ref_rms, "size": size}


#: Its rows: the gradient reads rel. RMSE 666 against noise, 1.3e-5 / (1e-3 sqrt(128)) against dx's scale.
CANCELLED = {
    "dx": _scaled(1e-3, 1e-6, 1e-3, 1024),
    "grad": _scaled(666.0, 1.3e-5, 2e-8, 8),
    "adam/m": _scaled(666.0, 1.3e-5, 2e-8, 8),
    "loss": _scaled(2e-4, 2e-4, 1.0, 1),
}


def report(drift: dict[str, dict[str, float]], plan: Plan = PLAN) -> RunReport:
    """A training step's report with that drift, fetching the loss and the train op."""
    return RunReport(plan=plan, fetches=list(FETCHES), steps=3, drift=drift)


def old_results_file(entry: str = "/m/widedeep.py:zoo_entry") -> dict[str, Any]:
    """A zoo results file written before the relative RMSE: its drift columns are max rel ones.

    The widedeep rows as that version wrote them: force_fp16 named an op near zero with a NaN max rel,
    force_fp32 named the zero-drift initializer with drift 0.
    """
    from npu_jupyter._zoo_check.task import empty_row

    def old_row(mode: str, worst: str, worst_rel: object, fetch_rel: object) -> dict[str, Any]:
        row = {k: v for k, v in empty_row(entry, {"precision_mode": mode}, 2).items() if "rel_rmse" not in k}
        row.update(status="ok", compiles=True, steps_run=2, cpu_ms_per_step=12.5)
        row.update(fetch_max_rel=fetch_rel, worst_op=worst, worst_op_max_rel=worst_rel)
        return row

    return {
        "format": "npu_jupyter.zoo",
        "version": 1,
        "rows": [old_row("force_fp16", "dnn/near_zero", "nan", "inf"), old_row("force_fp32", ZEROS, 0.0, 0.0)],
    }
