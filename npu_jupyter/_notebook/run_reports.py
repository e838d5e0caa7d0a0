"""Collect the run reports of a ``%%npu`` cell, one per distinct run.

A training loop calls ``sess.run(train_op)`` a thousand times; a thousand identical reports would bury
the one that matters. Runs of the same session with the same fetches and the same plan collapse into
one report whose ``steps`` is the number of runs, with times averaged per run and overflow findings
kept from every run. Order follows the first run of each group, so the output is deterministic.

Two more things keep the report a person came for on top:

* a run that only initialises variables (``sess.run(tf.compat.v1.global_variables_initializer())``)
  is not worth a full report before the training loop's: :func:`arrange` puts such runs after the
  others, as a one-line note, unless they are all the cell ran; so does a run that only initialised a
  dataset iterator (``sess.run(iterator.initializer)``) with nothing to flag;
* a warning repeated word for word by several reports of the cell (the planner repeats some for every
  run of a Saver, say) is shown in full once; later reports point back to it
  (:func:`dedupe_warnings`), and a note every traced function's report carries (the TF2 placement
  rule) is shown with the first report only.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Hashable, Iterable

from npu_jupyter._display.brief import ITERATOR_INIT, brief_line, is_iterator_init_run
from npu_jupyter._runtime.observe.initializers import is_initializer_plan
from npu_jupyter._runtime.report_records import CLOCKS, OverflowCheck

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.report import RunReport

    #: (session number, fetches, plan identity): the runs that collapse into one report.
    RunKey = tuple[int, tuple[str, ...], tuple[Hashable, ...]]


def cell_reports(sessions: list[object]) -> list[RunReport]:
    """Every RunReport of the cell's sessions, collapsed per (session, fetches, plan).

    Each carries the cost model's estimate of its plan as the runtime attached it where it built the
    report (``RunReport.estimate``), so ``%%npu`` shows the estimate ``session().last_report`` has.
    """
    groups: dict[RunKey, list[RunReport]] = {}
    plan_keys: dict[int, tuple[Hashable, ...]] = {}
    for number, session in enumerate(sessions):
        for report in _reports_of(session):
            key = (number, tuple(report.fetches), _plan_key(report.plan, plan_keys))
            groups.setdefault(key, []).append(report)
    return [collapse(reports) for reports in groups.values()]


def collapse(reports: list[RunReport]) -> RunReport:
    """One RunReport standing for several runs of the same thing (the last run's records and estimate)."""
    if len(reports) == 1:
        return reports[0]
    from npu_jupyter._runtime.observe.observers import keep_worse  # numpy and the dump writer: not at load

    last = reports[-1]
    steps = sum(max(1, r.steps) for r in reports)
    overflow: list[str] = []
    drift: dict[str, dict[str, float]] = {}
    for r in reports:
        overflow += [name for name in r.overflow_ops if name not in overflow]
        for op, row in r.drift.items():  # each op's worst step of every run, not the last run's
            keep_worse(drift, op, row)
    timing = reports[0].timing
    for r in reports[1:]:
        timing = timing.then(r.timing)
    labels = dict(last.labels)
    profile, dump = reports[0].profile, reports[0].dump
    for r in reports[1:]:
        profile, dump = profile.then(r.profile), dump.then(r.dump)
    if "us" in labels and profile.steps:  # which steps the folded per-op times are the mean of
        from npu_jupyter._runtime.observe.profile import CPU_TIME

        labels["us"] = profile.label(CPU_TIME, "call" if last.function is not None else "step")
    if last.backend in CLOCKS and timing.first_ms is not None:  # the label of the folded steps, not the last's
        from npu_jupyter._runtime.observe.step_record import time_label

        labels["wall_ms"] = time_label("call" if last.function is not None else "step", steps, timing, last.backend)
    return dataclasses.replace(
        last,
        steps=steps,
        timing=timing,
        labels=labels,
        profile=profile,
        wall_ms=_weighted(reports, lambda r: r.wall_ms) or 0.0,  # every report has a wall time: never None
        reference_wall_ms=_reference_mean(reports),
        reference_steps=sum(r.reference_steps for r in reports),
        overflow_steps=sum(r.overflow_steps for r in reports),
        op_times_us=_mean_times(reports),
        overflow_ops=overflow,
        drift=drift,
        first_overflow=next((r.first_overflow for r in reports if r.first_overflow), None),
        overflow_check=OverflowCheck.folded(r.overflow_check for r in reports),
        dump=dump,
        non_finite=next((r.non_finite for r in reports if r.non_finite is not None), None),  # the first, not the last's
        non_finite_by_design=_every(r.non_finite_by_design for r in reports),
        first_overflow_by_step={k: v for r in reports for k, v in r.first_overflow_by_step.items()},
        warnings=_later_findings_unsaid(reports, _every(r.warnings for r in reports)),
        notes=_every(r.notes for r in reports),
        dump_dir=next((r.dump_dir for r in reversed(reports) if r.dump_dir), None),
        trace_file=next((r.trace_file for r in reversed(reports) if r.trace_file), None),
        op_summary_csv=next((r.op_summary_csv for r in reversed(reports) if r.op_summary_csv), None),
        fed_shapes_varied=any(r.fed_shapes_varied or r.fed_shapes != last.fed_shapes for r in reports),
    )


def _later_findings_unsaid(reports: list[RunReport], warnings: list[str]) -> list[str]:
    """``warnings`` without the first findings of the parts after the first that had one.

    A report says its first non-finite step and not the later ones (``run_notes.note_non_finite``); a
    folded report is one report, so a later part's first finding is one of its later steps.
    """
    found = [r.non_finite.message for r in reports if r.non_finite is not None]
    return [w for w in warnings if w not in found[1:]]


def _every(lists: Iterable[list[str]]) -> list[str]:
    """Each message of the folded reports once, in the order they first said it."""
    return list(dict.fromkeys(message for messages in lists for message in messages))


def _reports_of(session: object) -> list[RunReport]:
    """A session's reports (``reports``), else its ``last_report`` (a session keeping only that)."""
    reports = getattr(session, "reports", None)
    if reports:
        return list(reports)
    last = getattr(session, "last_report", None)
    return [last] if last is not None else []


def _plan_key(plan: Plan | None, memo: dict[int, tuple[Hashable, ...]]) -> tuple[Hashable, ...]:
    """Identity of a plan by content (a re-planned identical graph is the same plan), memoised by id."""
    if plan is None:  # a traced function without a plannable graph: its runs group by their fetches
        return ()
    key = memo.get(id(plan))
    if key is None:
        key = memo[id(plan)] = (tuple(plan.ops), plan.precision_mode, plan.soc)
    return key


def _weighted(reports: list[RunReport], value: Callable[[RunReport], float | None]) -> float | None:
    """Mean per run across reports that each cover ``steps`` runs; None if any value is missing."""
    values = [(value(r), max(1, r.steps)) for r in reports]
    known = [(v, n) for v, n in values if v is not None]
    if len(known) < len(values):
        return None
    return sum(v * n for v, n in known) / sum(n for _, n in known)


def _reference_mean(reports: list[RunReport]) -> float | None:
    """The float32 reference's mean per step over the steps that ran one (None: none did).

    A report's ``reference_wall_ms`` is the mean over its ``reference_steps``; a report whose steps ran
    no reference (the reference was off for those runs, or skipped) adds nothing rather than hiding
    the others' time, and a report with many steps but one reference step weighs one.
    """
    known = [(r.reference_wall_ms, r.reference_steps) for r in reports if r.reference_wall_ms is not None]
    known = [(ms, n) for ms, n in known if n > 0]
    steps = sum(n for _, n in known)
    return sum(ms * n for ms, n in known) / steps if steps else None


def _mean_times(reports: list[RunReport]) -> dict[str, float]:
    """Per-op µs, the mean per run over the runs the reports' times are the mean of.

    A report's per-op times are the mean over its profiled steps after the warm-up (``profile``), so
    each weighs by those; a report holding only the warm-up's times weighs nothing once another has
    timed steps (the warm-up stays out, as the label says). Without profile records, by ``steps``.
    """
    timed = any(r.profile.timed_steps for r in reports)
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for r in reports:
        weight = r.profile.timed_steps if timed else (r.profile.steps or max(1, r.steps))
        for name, us in r.op_times_us.items():
            sums[name] = sums.get(name, 0.0) + us * weight
            counts[name] = counts.get(name, 0) + weight
    return {name: sums[name] / counts[name] for name in sums if counts[name]}


# -- initialiser runs ---------------------------------------------------------------------------


def is_initializer_run(report: RunReport) -> bool:
    """True when the run only initialised variables: its fetches are NoOp groups and every other op
    of its plan is a variable, an assignment, or computes nothing but an assignment's initial value.

    Decided from the plan's structure rather than the fetch name ("init"), so renamed initialisers
    count and a NoOp grouping training updates (``minimize``) or a Saver restore does not: an apply op
    is neither an assignment nor feeds one, and a restore reads a checkpoint (an external input).
    """
    if report.function is not None and report.function.helper == "initializer":  # initialize_variables
        return True
    if brief_line(report) is not None:  # sess.run(iterator.initializer): a dataset iterator, on the host
        return True
    return report.plan is not None and is_initializer_plan(report.plan, report.fetches)


def arrange(reports: list[RunReport]) -> tuple[list[RunReport], list[RunReport]]:
    """(reports to render in full, initialiser runs to mention in one line), both in run order.

    When the cell ran nothing but initialisers they are the reports: there is nothing else to show.
    """
    init = [r for r in reports if is_initializer_run(r)]
    if len(init) == len(reports):
        return reports, []
    return [r for r in reports if not is_initializer_run(r)], init


def initializer_note(reports: list[RunReport]) -> str:
    """``also ran: init (variable initialisation, 22 ops)`` for the collapsed initialiser runs.

    A run that only initialised a dataset iterator says so: ``MakeIterator (dataset iterator
    initialisation, 7 ops on the host)``.
    """
    parts = []
    for r in reports:
        runs = f", {r.steps} runs" if r.steps > 1 else ""
        ops = len(r.plan.ops) if r.plan is not None else 0
        if r.function is not None and r.function.helper:  # "variable initialisation (initialize_variables), ..."
            parts.append(f"{r.function.label} ({ops} ops{runs})")
        elif is_iterator_init_run(r):
            parts.append(f"{', '.join(r.fetches)} ({ITERATOR_INIT}, {ops} ops on the host{runs})")
        else:
            parts.append(f"{', '.join(r.fetches)} (variable initialisation, {ops} ops{runs})")
    return "also ran: " + "; ".join(parts)


# -- warnings repeated across reports -------------------------------------------------------------


def dedupe_warnings(reports: list[RunReport]) -> list[RunReport]:
    """Reports whose warnings already shown by an earlier report of the cell are cut to a pointer.

    The first report keeps the full text; a later one keeps a short line naming that report, so its
    warning count stays right and nothing is lost. Reports without repeats are returned unchanged
    (the same objects).
    """
    first_seen: dict[str, str] = {}
    out = []
    shown_notes: set[str] = set()
    for report in _notes_once(reports, shown_notes):
        plan = report.plan
        if plan is None:  # nothing planned, nothing repeated
            out.append(report)
            continue
        warnings = []
        for message in plan.warnings:
            where = first_seen.get(message)
            if where is None:
                first_seen[message] = _label(report)
                warnings.append(message)
            else:
                warnings.append(f"Same warning as the report of {where} above: {_gist(message)}")
        if warnings == plan.warnings:
            out.append(report)
        else:
            out.append(dataclasses.replace(report, plan=dataclasses.replace(plan, warnings=warnings)))
    return out


def _notes_once(reports: list[RunReport], shown: set[str]) -> list[RunReport]:
    """Reports after the first that carries the TF2 rule's note, without that note.

    The note (how the TF2 adapter's placement is predicted) is the same for every traced function of
    a cell: it is shown with the first report, not repeated under each. Notes about one report's own
    graph (Keras 3 built it, XLA was turned off) stay with every report they concern.
    """
    from npu_jupyter._runtime.functions.emulator import TF2_RULE_NOTE

    out = []
    for report in reports:
        notes = list(report.notes)
        kept = [note for note in notes if note != TF2_RULE_NOTE or note not in shown]
        shown.update(notes)
        if kept == notes:
            out.append(report)
        else:
            out.append(dataclasses.replace(report, notes=kept))
    return out


def _label(report: RunReport) -> str:
    """The report's fetches, as a later report's pointer back to it names them."""
    from npu_jupyter._display.payload import fetch_names

    return fetch_names(report.fetches) or "the run"


def _gist(message: str, limit: int = 90) -> str:
    """The first sentence (or the first ``limit`` characters) of a warning."""
    first = message.split(". ", maxsplit=1)[0].split(": ", maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"
