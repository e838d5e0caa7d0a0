"""Collect the run reports of a ``%%npu`` cell, one per distinct run.

A training loop calls ``sess.run(train_op)`` a thousand times; a thousand identical reports would bury
the one that matters. Runs of the same session with the same fetches and the same plan collapse into
one report whose ``steps`` is the number of runs, with times averaged per run and overflow findings
kept from every run. Order follows the first run of each group, so the output is deterministic.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def cell_reports(sessions: list[Any]) -> list[Any]:
    """Every RunReport of the cell's sessions, collapsed per (session, fetches, plan)."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    plan_keys: dict[int, tuple[Any, ...]] = {}
    for number, session in enumerate(sessions):
        for report in _reports_of(session):
            key = (number, tuple(report.fetches), _plan_key(report.plan, plan_keys))
            groups.setdefault(key, []).append(report)
    return [collapse(reports) for reports in groups.values()]


def collapse(reports: list[Any]) -> Any:
    """One RunReport standing for several runs of the same thing."""
    if len(reports) == 1:
        return reports[0]
    last = reports[-1]
    steps = sum(max(1, r.steps) for r in reports)
    overflow: list[str] = []
    for r in reports:
        overflow += [name for name in r.overflow_ops if name not in overflow]
    return dataclasses.replace(
        last,
        steps=steps,
        wall_ms=_weighted(reports, lambda r: r.wall_ms),
        reference_wall_ms=_weighted(reports, lambda r: r.reference_wall_ms),
        op_times_us=_mean_times(reports),
        overflow_ops=overflow,
        first_overflow=next((r.first_overflow for r in reports if r.first_overflow), None),
        dump_dir=next((r.dump_dir for r in reversed(reports) if r.dump_dir), None),
        trace_file=next((r.trace_file for r in reversed(reports) if r.trace_file), None),
        op_summary_csv=next((r.op_summary_csv for r in reversed(reports) if r.op_summary_csv), None),
    )


def _reports_of(session: Any) -> list[Any]:
    reports = getattr(session, "reports", None)
    if reports:
        return list(reports)
    last = getattr(session, "last_report", None)
    return [last] if last is not None else []


def _plan_key(plan: Any, memo: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
    """Identity of a plan by content (a re-planned identical graph is the same plan), memoised by id."""
    key = memo.get(id(plan))
    if key is None:
        key = memo[id(plan)] = (tuple(plan.ops), plan.precision_mode, plan.soc)
    return key


def _weighted(reports: list[Any], value: Any) -> float | None:
    """Mean per run across reports that each cover ``steps`` runs; None if any value is missing."""
    values = [(value(r), max(1, r.steps)) for r in reports]
    if any(v is None for v, _ in values):
        return None
    total = sum(n for _, n in values)
    return sum(v * n for v, n in values) / total


def _mean_times(reports: list[Any]) -> dict[str, float]:
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for r in reports:
        for name, us in r.op_times_us.items():
            sums[name] = sums.get(name, 0.0) + us * max(1, r.steps)
            counts[name] = counts.get(name, 0) + max(1, r.steps)
    return {name: sums[name] / counts[name] for name in sums}
