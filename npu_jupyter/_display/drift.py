"""Which ops drifted most from float32, and how one op's drift reads: the one ranking every view shows.

A report with ``--reference`` holds, per op, its worst drift over the steps that ran a reference
(``RunReport.drift``; each row keeps its step). Ops are ranked by the relative RMSE
(:func:`~npu_jupyter._runtime.observe.compare.drift_rank`), not by the largest element-wise relative
error, which one element near zero blows up on a tensor whose cosine is 1.0000. Two kinds of rows are
no news and are never listed as a largest drift:

* a row with no difference at all (an init run's constants): an entry with zero drift is not a drift;
* a pure copy (``Identity``, ``Snapshot``, ``ReadVariableOp``, a loop's ``Enter`` ...) of an op that
  drifted at least as much: it shows its producer's drift again, so the producer is listed instead.

The list is computed here once: :mod:`.mime` keeps its ops in a truncated payload, the payload ships
their indices (``run.drift_worst``, the Lab view's header chip) and :mod:`.facts` its labelled line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from npu_jupyter._runtime.observe.compare import drift_rank

if TYPE_CHECKING:  # pragma: no cover - typing only
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.report import RunReport

#: How many ops the "Largest drift" line lists.
SHOWN = 3
#: Op types whose output holds the values of an input unchanged: their drift is their producer's.
COPY_TYPES = frozenset(
    {"Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient", "CheckNumerics", "EnsureShape"}
    | {"ReadVariableOp", "RefIdentity", "Reshape", "Squeeze", "ExpandDims"}
    | {"Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration", "Switch", "RefSwitch"}
    | {"Merge", "RefMerge"}
)
#: What the drift figures are, said wherever drift is shown (labextension/src/optext.ts says the same).
DRIFT_UNITS = (
    "rel. RMSE: root mean square of a − b over that of the float32 value b, the figure ops are ranked by; "
    "max abs: largest |a − b|; cos: cosine similarity, 1 = same direction; step: where the op drifted most"
)


def drifted(row: Mapping[str, Any] | None) -> bool:
    """The row records a difference from float32 (a non-finite one counts): zero drift is no drift."""
    return row is not None and bool(row) and row.get("max_abs") != 0


def worst_drift(ops: Sequence[Mapping[str, Any]], top: int = SHOWN) -> list[int]:
    """Indices of the ``top`` ops that drifted most, worst first (payload-shaped ops: ``t``, ``i``, ``dr``).

    Ties keep graph order. A copy is left out when an op it copies (through other copies) drifted at
    least as much.
    """
    ranks = {k: drift_rank(op["dr"]) for k, op in enumerate(ops) if drifted(op.get("dr"))}
    kept = [k for k in ranks if not _repeats_a_producer(ops, k, ranks)]
    return sorted(kept, key=lambda k: (-ranks[k], k))[:top]


def _repeats_a_producer(ops: Sequence[Mapping[str, Any]], k: int, ranks: dict[int, float]) -> bool:
    """Op ``k`` is a copy whose drift an op it copies already shows (at least as large)."""
    if ops[k].get("t") not in COPY_TYPES:
        return False
    seen, todo = {k}, list(ops[k].get("i") or [])
    while todo:
        src = todo.pop()
        if src in seen or not 0 <= src < len(ops):
            continue
        seen.add(src)
        if src in ranks and ranks[src] >= ranks[k] * (1 - 1e-9):
            return True
        if ops[src].get("t") in COPY_TYPES:
            todo += list(ops[src].get("i") or [])
    return False


def worst_drift_names(plan: Plan, run: RunReport, top: int = SHOWN) -> list[str]:
    """The ops :func:`worst_drift` lists for a whole report, before the payload's budget drops any."""
    if not run.drift:
        return []
    names = list(plan.ops)
    index = {name: k for k, name in enumerate(names)}
    ops = [
        {"t": d.op_type, "i": [index[s] for s in d.inputs if s in index], "dr": run.drift.get(name)}
        for name, d in plan.ops.items()
    ]
    return [names[k] for k in worst_drift(ops, top)]


def drift_text(drift: Mapping[str, Any]) -> str:
    """``"rel. RMSE 0.0123, max abs 0.000784, cos 0.9999, step 2"``: one op's worst drift from float32.

    A figure that is not finite is null in a payload (JSON has no inf/NaN) and NaN in a report; a row
    written before the relative RMSE existed reads as it did (largest abs and rel error, cosine).
    """
    if "rel_rmse" not in drift:
        return _older_drift_text(drift)
    rel = _finite(drift.get("rel_rmse"))
    parts = ["not finite (inf/NaN)" if rel is None else f"rel. RMSE {rel:.3g}"]
    max_abs, cos = _finite(drift.get("max_abs")), _finite(drift.get("cos"))
    if max_abs is not None:
        parts.append(f"max abs {max_abs:.3g}")
    if cos is not None:
        parts.append(f"cos {cos:.4f}")
    if drift.get("step") is not None:
        parts.append(f"step {int(drift['step'])}")
    return ", ".join(parts)


def _older_drift_text(drift: Mapping[str, Any]) -> str:
    parts = [f"{drift['max_abs']:.3g} abs"] if _finite(drift.get("max_abs")) is not None else []
    if _finite(drift.get("max_rel")) is not None:
        parts.append(f"{drift['max_rel']:.3g} rel")
    if _finite(drift.get("cos")) is not None:
        parts.append(f"cos {drift['cos']:.4f}")
    return ", ".join(parts) or "not finite (inf/NaN)"


def _finite(value: object) -> float | None:
    """A finite number, or None (null in a payload, inf/NaN in a report)."""
    if not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
