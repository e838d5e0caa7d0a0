"""One zoo task, inside its own process: run the entry under the option set, and turn it into a row.

What a row holds, and what kind of number each is (the table's legend says it again):

* **predicted by the planner** -- ``compiles`` (no plan error: the adapter would accept the graph),
  ``plan_errors``, the placement counts (``ai_core``/``ai_cpu``/``host``), ``ops_lowered`` (ops given a
  narrower float than the graph declares);
* **estimated by the cost model** -- ``est_step_ms``/``est_memory_bytes`` and their ratios to the same
  step all in float32 (``npu_jupyter.cost``: a roofline over published peak rates, never measured);
* **measured on this CPU** -- the emulation's results: ``loss``, ``first_non_finite`` (the first op
  whose output went inf/NaN), drift against a float32 reference of the same step (``fetch_rel_rmse``,
  ``worst_op``, ``worst_op_rel_rmse``: relative RMSE, ranked as the notebook report ranks), and times:
  ``cpu_ms_per_step`` (mean over the training steps, wall-clock time of the emulation on this CPU, not NPU time),
  ``plan_ms`` (the planner, total), ``startup_s`` (interpreter and TensorFlow import), ``entry_s``,
  ``finish_s`` (closing the sessions, the cost model and the row after the entry returned),
  ``task_s`` (the whole process, measured by its parent) and ``peak_rss_mb`` (its peak resident memory).

The training run (:mod:`.training_run`) is the largest run graph the entry ran at least ``steps`` times;
its runs folded into one report give the plan and the figures.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._tf_types import Graph, Operation
    from npu_jupyter._zoo_check.entry import ZooRun

#: Float widths in bits; an op is lowered when the plan gives one of its tensors a narrower float.
FLOAT_BITS = {"float64": 64, "float32": 32, "float16": 16, "bfloat16": 16}

#: Columns that are CPU times measured on the machine that ran the task (differ from run to run).
CPU_TIME_FIELDS = ("cpu_ms_per_step", "plan_ms", "startup_s", "entry_s", "finish_s", "task_s")
#: Everything measured about the machine's work rather than the model: CPU times and peak memory.
MACHINE_FIELDS = (*CPU_TIME_FIELDS, "peak_rss_mb")


def empty_row(entry: str, options: dict[str, Any], steps: int) -> dict[str, Any]:
    """Every column, unset: the shape of a row whatever happened to the task."""
    return {
        "entry": entry,
        "options": dict(options),
        "steps": steps,
        "status": "error",
        "error": None,
        "traceback": None,
        "compiles": None,
        "plan_errors": [],
        "ops": None,
        "ai_core": None,
        "ai_cpu": None,
        "host": None,
        "ops_lowered": None,
        "loss": None,
        "first_non_finite": None,
        "fetch_rel_rmse": None,
        "worst_op": None,
        "worst_op_rel_rmse": None,
        "est_step_ms": None,
        "est_step_vs_fp32": None,
        "est_memory_bytes": None,
        "est_memory_vs_fp32": None,
        "steps_run": 0,
        "cpu_ms_per_step": None,
        "plan_ms": None,
        "startup_s": None,
        "entry_s": None,
        "finish_s": None,
        "task_s": None,
        "peak_rss_mb": None,
    }


def run_task(entry: str, options: dict[str, Any], steps: int, reference: bool, started: float) -> dict[str, Any]:
    """Import TensorFlow, run the entry, and fill the row (an entry that raises fills ``error``)."""
    import traceback

    row = empty_row(entry, options, steps)
    import tensorflow as tf  # noqa: F401 - timed here: the start-up every task process pays

    from npu_jupyter._options.errors import NpuConfigError
    from npu_jupyter._zoo_check.entry import ZooRun, resolve
    from npu_jupyter._zoo_check.training_run import training_report

    row["startup_s"] = time.perf_counter() - started
    npu = ZooRun(options, steps, reference=reference)
    refusal = None
    begun = time.perf_counter()
    try:
        loss = resolve(entry)(npu, steps)
    except NpuConfigError as exc:  # the options laid over the script's config break a rule the adapter checks
        refusal = f"the adapter refuses this configuration: {exc}"
    except Exception as exc:  # noqa: BLE001 - the task's outcome is the row, whatever the entry raised
        row["error"] = f"{type(exc).__name__}: {exc}".strip()
        row["traceback"] = traceback.format_exc(limit=-6)
    else:
        row["loss"] = _number(loss)
    finally:
        row["entry_s"] = time.perf_counter() - begun
        row["plan_ms"] = npu.plan_ms if npu.plans else None
        _close(npu)
    training = training_report(npu)
    if training is not None:
        report, graph = training
        _fill(row, report, graph)
    if refusal is not None:
        row["compiles"] = False
        row["plan_errors"] = [refusal, *row["plan_errors"]]
    elif training is None and row["error"] is None:
        row["error"] = (
            "the entry ran no emulated step: run the training in npu.session(graph, config) (TF1) or inside "
            "npu.functions(config) (TF2), as the entry contract says"
        )
    row["status"] = _status(row)
    row["peak_rss_mb"] = peak_rss_mb()
    row["finish_s"] = time.perf_counter() - begun - row["entry_s"]
    return row


def peak_rss_mb() -> float | None:
    """The task process's peak resident memory in MiB (measured; None where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024.0 / (1024.0 if sys.platform == "darwin" else 1.0)  # bytes on macOS, KiB on Linux


def _number(value: Any) -> float | None:  # noqa: ANN401 - the entry's loss: whatever it returned, float() decides
    """The entry's loss as a float (a numpy scalar, a 0-d array, a Python number); None if it gave none."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _close(npu: ZooRun) -> None:
    """Close sessions the entry left open (their reports stay readable)."""
    for session in npu.sessions:
        with contextlib.suppress(Exception):  # best effort: the reports are already recorded
            session.close()


def _fill(row: dict[str, Any], report: RunReport, graph: Graph | None) -> None:
    """The planner's, the cost model's and the emulation's columns from the training run's report."""
    plan = report.plan
    assert plan is not None  # noqa: S101 - narrows the type: training_run picks planned reports only
    summary = plan.summary()
    row.update(
        compiles=not plan.errors,
        plan_errors=[str(e) for e in plan.errors],
        ops=summary["ops"],
        ai_core=summary["ai_core"],
        ai_cpu=summary["ai_cpu"],
        host=summary["host"],
        ops_lowered=len(lowered_ops(plan, graph)),
        steps_run=report.steps,
        cpu_ms_per_step=report.wall_ms,
        first_non_finite=_first_non_finite(report, row["loss"]),
    )
    _fill_drift(row, report, plan)
    _fill_estimate(row, report, graph)


def _first_non_finite(report: RunReport, loss: float | None) -> str | None:
    """The first op whose output went inf/NaN, as the emulator named it; a note when it could not."""
    finding = report.non_finite
    named = report.first_overflow or (finding.where if finding is not None else None)
    if named:
        return str(named)
    if loss is not None and not math.isfinite(loss):
        return "(loss non-finite; no op named)"
    return None


def _fill_drift(row: dict[str, Any], report: RunReport, plan: Plan) -> None:
    """Drift from float32 as the notebook report ranks it (reference runs only): relative RMSE.

    ``fetch_rel_rmse``: the fetch that drifted most; ``worst_op``: the op the report's "Largest drift"
    line names first (:mod:`npu_jupyter._runtime.observe.drift_ranking`), with its ``worst_op_rel_rmse``
    (against its inputs' scale, and ``worst_op_cancelled`` set, when its reference cancels).
    When no op drifted, ``worst_op`` stays None and ``worst_op_rel_rmse`` is 0 (the table says "none").
    """
    from npu_jupyter._runtime.observe.drift_ranking import worst_fetch_drift, worst_op_figure

    drift = report.drift
    if not drift:
        return
    fetch = worst_fetch_drift(drift, report.fetches)
    row["fetch_rel_rmse"] = None if fetch is None else _rel_rmse(fetch)
    worst = worst_op_figure(plan, drift)
    row["worst_op"] = None if worst is None else worst[0]
    row["worst_op_rel_rmse"] = 0.0 if worst is None else (math.nan if worst[1] is None else worst[1])
    if worst is not None and worst[2]:  # its reference cancels: the figure is against its inputs' scale
        row["worst_op_cancelled"] = True


def _rel_rmse(drift: Mapping[str, Any]) -> float:
    """The relative RMSE of a drift row; NaN when not finite or missing (the results file keeps it as "nan")."""
    value = drift.get("rel_rmse")
    return math.nan if value is None else float(value)


def _fill_estimate(row: dict[str, Any], report: RunReport, graph: Graph | None) -> None:
    """The cost model's estimate of one step, and vs the same step in float32, as the run's report gives it.

    ``RunReport.estimate_block`` is where a report's estimate comes from: at the shapes
    the run fed, with its feeds' and fetches' copies, the emulator's stand-ins left out; none for a plan
    the adapter would refuse, or without a graph (n/a).
    """
    block = report.estimate_block(graph)
    if block is None or block.step_ms is None:
        return
    row.update(
        est_step_ms=block.step_ms,
        est_step_vs_fp32=block.step_ratio_fp32,
        est_memory_bytes=block.memory_bytes,
        est_memory_vs_fp32=block.memory_ratio_fp32,
    )


def _status(row: dict[str, Any]) -> str:
    """One word per row: error, refused (a plan error), non-finite, or ok."""
    if row["error"]:
        return "error"
    if row["compiles"] is False:
        return "refused"
    if row["first_non_finite"]:
        return "non-finite"
    return "ok"


def lowered_ops(plan: Plan, graph: Graph | None) -> list[str]:
    """Ops the plan computes in a narrower float than ``graph`` declares for them (predicted by the planner).

    Compares every input and output the plan decides with the same tensor's dtype in the graph, so an op
    the script already writes in float16 is not counted: only ops the NPU config lowers are. Without a
    readable graph, the plan's own before/after output dtype is compared.
    """
    lowered = []
    for name, decision in plan.ops.items():
        op = _operation(graph, name)
        if op is None:
            if _narrower(decision.dtype_after, decision.dtype_before):
                lowered.append(name)
            continue
        pairs = list(zip([t.dtype.base_dtype.name for t in op.inputs], decision.input_dtypes))
        pairs += zip([t.dtype.base_dtype.name for t in op.outputs], decision.output_dtypes)
        if any(_narrower(new, old) for old, new in pairs):
            lowered.append(name)
    return lowered


def _operation(graph: Graph | None, name: str) -> Operation | None:
    """``graph``'s op ``name``; None without a graph, or one that has no such op or cannot be read by name."""
    if graph is None:
        return None
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError, AttributeError):
        return None


def _narrower(decided: str, declared: str) -> bool:
    """Whether ``decided`` is a float type narrower than the float type ``declared``."""
    return decided in FLOAT_BITS and declared in FLOAT_BITS and FLOAT_BITS[decided] < FLOAT_BITS[declared]
