"""Which ops drifted most from float32, and how one op's drift reads: the one ranking every view shows.

A report with ``--reference`` holds, per op, its worst drift over the steps that ran a reference
(``RunReport.drift``; each row keeps its step). Ops are ranked by the relative RMSE
(:func:`~npu_jupyter._runtime.observe.compare.drift_rank`), not by the largest element-wise relative
error, which one element near zero blows up on a tensor whose cosine is 1.0000. Two kinds of rows are
no news and are never listed as a largest drift:

* a row with no difference at all (an init run's constants): an entry with zero drift is not a drift;
* a pure copy (``Identity``, ``Snapshot``, ``ReadVariableOp``, a loop's ``Enter`` ...) of an op that
  drifted at least as much: it shows its producer's drift again, so the producer is listed instead.

A summing op whose float32 reference cancels to rounding noise (a conv bias's gradient before a
BatchNormalization) is ranked, and shown, by its error over its inputs' scale, and ops that compute only
from it are not listed; an op whose float32 values are ≈ 0 ranks after the ops whose values are in
range and says so (the rules and their why: :mod:`~npu_jupyter._runtime.observe.drift_ranking`).

The rule lives in :mod:`npu_jupyter._runtime.observe.drift_ranking`, below the display, so the
precision sweep and the zoo table name the same worst op as this report's line.
The list is computed here once: :mod:`.mime` keeps its ops in a truncated payload, the payload ships
their indices (``run.drift_worst``, the Lab view's header chip) and :mod:`.facts` its labelled line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from npu_jupyter._runtime.observe import drift_ranking
from npu_jupyter._runtime.observe.drift_ranking import NOT_FINITE

if TYPE_CHECKING:  # pragma: no cover - typing only
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.report import RunReport

#: How many ops the "Largest drift" line lists.
SHOWN = 3
#: What the drift figures are, said wherever drift is shown (labextension/src/optext.ts says the same).
DRIFT_UNITS = (
    "rel. RMSE: root mean square of a − b over that of the float32 value b, the figure ops are ranked by; "
    "max abs: largest |a − b|; cos: cosine similarity, 1 = same direction; step: where the op drifted most"
)


def worst_drift(ops: Sequence[Mapping[str, Any]], top: int = SHOWN) -> list[int]:
    """Indices of the ``top`` ops that drifted most, worst first (payload-shaped ops: ``t``, ``i``, ``dr``).

    The rule (relative RMSE; zero drift and copies of a producer left out) is
    :func:`~npu_jupyter._runtime.observe.drift_ranking.worst_drift`, shared with the sweep and the zoo table.
    """
    return drift_ranking.worst_drift(ops, top)


def worst_drift_names(plan: Plan, run: RunReport, top: int = SHOWN) -> list[str]:
    """The ops :func:`worst_drift` lists for a whole report, before the payload's budget drops any."""
    return drift_ranking.worst_ops(plan, run.drift, top)


def drift_text(drift: Mapping[str, Any]) -> str:
    """``"rel. RMSE 0.0123, max abs 0.000784, cos 0.9999, step 2"``: one op's worst drift from float32.

    A figure that is not finite is null in a payload (JSON has no inf/NaN) and NaN in a report; a row
    written before the relative RMSE existed reads as it did (largest abs and rel error, cosine).
    """
    if "rel_rmse" not in drift:
        return _older_drift_text(drift)
    rel, in_rel = _finite(drift.get("rel_rmse")), _finite(drift.get("in_rel"))
    parts = [NOT_FINITE if rel is None else f"rel. RMSE {rel:.3g}"]
    if in_rel is not None:  # cancelled: the figure it is ranked by first, its own beside it
        own = "" if rel is None else f"; {rel:.3g} against its own reference"
        parts = [f"rel. RMSE {in_rel:.3g} against its inputs' scale ({drift_ranking.CANCELLED_NOTE}{own})"]
    max_abs, cos = _finite(drift.get("max_abs")), _finite(drift.get("cos"))
    if max_abs is not None:
        parts.append(f"max abs {max_abs:.3g}")
    if cos is not None:
        parts.append(f"cos {cos:.4f}")
    if drift.get("step") is not None:
        parts.append(f"step {int(drift['step'])}")
    if drift.get("from_cancelled"):
        parts.append(drift_ranking.FROM_CANCELLED_NOTE)
    if drift.get("maybe_cancelled"):
        parts.append(drift_ranking.MAYBE_CANCELLED_NOTE)
    if drift_ranking.near_zero(drift):  # its relative error says its values are tiny (from ref_rms)
        parts.append(drift_ranking.NEAR_ZERO_NOTE)
    return ", ".join(parts)


def _older_drift_text(drift: Mapping[str, Any]) -> str:
    parts = [f"{drift['max_abs']:.3g} abs"] if _finite(drift.get("max_abs")) is not None else []
    if _finite(drift.get("max_rel")) is not None:
        parts.append(f"{drift['max_rel']:.3g} rel")
    if _finite(drift.get("cos")) is not None:
        parts.append(f"cos {drift['cos']:.4f}")
    return ", ".join(parts) or NOT_FINITE


def _finite(value: object) -> float | None:
    """A finite number, or None (null in a payload, inf/NaN in a report)."""
    if not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
