"""Which ops drifted most from float32: the one rule the report, the sweep and the zoo table rank by.

A run with a float32 reference holds, per op, its worst drift over the steps that ran a reference
(``RunReport.drift``). Ops are ranked by the relative RMSE (:func:`~.compare.drift_rank`), not by the
largest element-wise relative error, which one element near zero blows up on a tensor whose cosine is
1.0000. Two kinds of rows are no news and are never named as a largest drift:

* a row with no difference at all (an init run's constants, an ``Initializer/zeros``): zero drift is
  not a drift, so a run where nothing drifted has no worst op;
* a pure copy (``Identity``, ``Snapshot``, ``ReadVariableOp``, a loop's ``Enter`` ...) of an op that
  drifted at least as much: it shows its producer's drift again, so the producer is named instead.

It lives below the display layer so that ``npu_jupyter.sweep`` (which may not import the display) picks
its worst op by the same rule as the notebook report (``_display/drift.py``) and the zoo table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from npu_jupyter._runtime.observe.compare import drift_rank

if TYPE_CHECKING:  # pragma: no cover - typing only
    from npu_jupyter._plan.model import Plan

#: Op types whose output holds the values of an input unchanged: their drift is their producer's.
COPY_TYPES = frozenset(
    {"Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient", "CheckNumerics", "EnsureShape"}
    | {"ReadVariableOp", "RefIdentity", "Reshape", "Squeeze", "ExpandDims"}
    | {"Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration", "Switch", "RefSwitch"}
    | {"Merge", "RefMerge"}
)


def drifted(row: Mapping[str, Any] | None) -> bool:
    """The row records a difference from float32 (a non-finite one counts): zero drift is no drift."""
    return row is not None and bool(row) and row.get("max_abs") != 0


def worst_drift(ops: Sequence[Mapping[str, Any]], top: int) -> list[int]:
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


def worst_ops(plan: Plan, drift: Mapping[str, Mapping[str, Any]], top: int) -> list[str]:
    """The names :func:`worst_drift` ranks first among ``plan``'s ops, given a run's drift rows.

    Empty when nothing drifted (no reference, or every row has zero drift): there is no worst op then.
    """
    if not drift:
        return []
    names = list(plan.ops)
    index = {name: k for k, name in enumerate(names)}
    ops = [
        {"t": d.op_type, "i": [index[s] for s in d.inputs if s in index], "dr": drift.get(name)}
        for name, d in plan.ops.items()
    ]
    return [names[k] for k in worst_drift(ops, top)]


def worst_fetch_drift(drift: Mapping[str, Mapping[str, Any]], fetches: Iterable[str]) -> Mapping[str, Any] | None:
    """The drift row of the fetch that drifted most (by the same rank), or None when no fetch has one.

    ``fetches`` are tensor or op names (``loss:0``, ``train``); a fetch with no float output has no row.
    """
    rows = [drift[op] for op in dict.fromkeys(name.split(":")[0] for name in fetches) if op in drift]
    return max(rows, key=drift_rank, default=None)
