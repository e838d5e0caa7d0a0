"""The zoo check's table as escaped HTML and plain text (rows are plain dicts; see npu_jupyter._zoo_check.task).

Same family as the precision sweep's table: one row per task, numbers labelled by kind in a legend
every view carries, and every string from the user (entry names, options, op names, errors) escaped.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any, cast

from npu_jupyter._runtime.observe.drift_ranking import AGAINST_INPUTS, figure_text
from npu_jupyter._units import format_bytes

PRED = "predicted by the planner"
EST = "estimated by the cost model (not measured)"
CPU = "wall-clock time of the emulation measured on this CPU (not NPU time)"
DRIFT = (
    "rel. RMSE: root mean square of a − b over that of the float32 value b (fetches: the worst fetch's); "
    "the worst op is ranked by it as the notebook report's Largest drift line ranks (copies of a drifting op "
    "and ops with no drift left out; none: no op drifted)"
)
#: The drift figure of rows written before the relative RMSE (a results file from an older version).
OLD_FIGURE = "max rel"

COLUMNS = (
    "entry",
    "options",
    "status",
    "compiles",
    "AI Core / AI CPU / host",
    "ops lowered",
    "first non-finite op",
    "drift of fetches",
    "worst op",
    "est. NPU ms/step",
    "vs float32",
    "est. memory",
    "vs float32",
    "ms/step on this CPU (emulation)",
)

#: The worst op's column (its text keeps the end of a long name, where the op's figure is).
WORST = COLUMNS.index("worst op")


def entry_label(entry: str) -> str:
    """A short name: the file's name (not its folders) and the function."""
    target, _, function = entry.rpartition(":")
    name = target.replace("\\", "/").rsplit("/", 1)[-1]
    return f"{name}:{function}"


def options_label(options: dict[str, Any]) -> str:
    """``allow_mix_precision`` for a precision mode alone, else ``key=value, ...``."""
    if list(options) == ["precision_mode"]:
        return str(options["precision_mode"])
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items())) or "(script's config)"


def cells(row: dict[str, Any]) -> tuple[str, ...]:
    """The row's text per column (n/a where the task did not get that far)."""
    placement = (
        "n/a" if row.get("ops") is None else f"{row['ai_core']} / {row['ai_cpu']} / {row['host']} of {row['ops']}"
    )
    compiles = {True: "yes", False: "no", None: "n/a"}[row.get("compiles")]
    return (
        entry_label(row["entry"]),
        options_label(row["options"]),
        row["status"],
        compiles,
        placement,
        _int(row.get("ops_lowered")),
        row.get("first_non_finite") or "",
        fetch_drift_text(row),
        worst_op_text(row),
        _g(row.get("est_step_ms")),
        _ratio(row.get("est_step_vs_fp32")),
        "n/a" if row.get("est_memory_bytes") is None else format_bytes(int(row["est_memory_bytes"])),
        _ratio(row.get("est_memory_vs_fp32")),
        "n/a" if row.get("cpu_ms_per_step") is None else f"{row['cpu_ms_per_step']:.1f}",
    )


def fetch_drift_text(row: dict[str, Any]) -> str:
    """``rel. RMSE 0.00123``: the fetches' drift, named by its figure (``max rel`` in an older results file)."""
    if "fetch_rel_rmse" in row or "fetch_max_rel" not in row:
        value = row.get("fetch_rel_rmse")
        return "n/a" if value is None else f"rel. RMSE {_g(value)}"
    return "n/a" if row["fetch_max_rel"] is None else f"{OLD_FIGURE} {_g(row['fetch_max_rel'])}"


#: Said under a table with a worst op "not finite" in a row whose results stayed finite (no first non-finite op).
OVERFLOW_NOT_IN_RESULTS = (
    "a worst op not finite in a row with no first non-finite op went inf/NaN in the emulated step, but no inf/NaN "
    "reached the loss or a checked variable write (a -1e9 attention mask; dynamic loss scaling's first steps, "
    "whose update is skipped): the run's notebook report names such ops"
)


def _overflow_not_in_results(row: dict[str, Any]) -> bool:
    """The row's worst op has a non-finite figure while no non-finite op was found in its results."""
    value = row.get("worst_op_rel_rmse")
    if value is None or row.get("worst_op") is None or row.get("first_non_finite"):
        return False
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def worst_op_text(row: dict[str, Any]) -> str:
    """``dense/MatMul (rel. RMSE 0.0123)``; ``none`` when a reference ran and no op drifted; '' without one.

    A row from a results file written before the relative RMSE keeps its op and figure, labelled
    ``max rel``; one whose figure is 0 (it named an op with no drift at all) reads ``none`` too.
    """
    worst = row.get("worst_op")
    if "worst_op_rel_rmse" in row or "worst_op_max_rel" not in row:
        name, figure, value = worst, "rel. RMSE", row.get("worst_op_rel_rmse")
    else:
        name, figure, value = worst, OLD_FIGURE, row["worst_op_max_rel"]
    if value is None:
        return ""
    if name is None or value == 0:
        return "none"
    against = f" {AGAINST_INPUTS}" if row.get("worst_op_cancelled") else ""
    return f"{name} ({figure} {_g(value)}{against})"


#: Plan errors a refused row shows under it; the results file, JSON and CSV keep them all.
SHOWN_ERRORS = 3


def grouped_errors(errors: list[str]) -> list[str]:
    """Plan errors differing only in the op they name, one line each (as the notebook report groups them).

    A mode no kernel supports names every conv of the graph (Inception-ResNet-v2 under
    must_keep_origin_dtype: hundreds of "<op> (Conv2D): no AI Core or AI CPU kernel supports float32"):
    one line with the count and the first ops says it. A planner error starts with the op's name, then
    its type in parentheses; the row keeps no plan, so those names are the op names grouping looks for.
    """
    from npu_jupyter._display.grouping import group_messages

    names = {e.split(" (", 1)[0] for e in errors if " (" in e}
    return group_messages(errors, names)


def problem(row: dict[str, Any]) -> str:
    """What stopped or refused the task (the plan's errors, the entry's exception), or ''."""
    if row.get("error"):
        first = str(row["error"]).strip().splitlines()[0] if str(row["error"]).strip() else ""
        return f"{row['status']}: {first}"
    errors = row.get("plan_errors")
    if errors:
        grouped = grouped_errors([str(e) for e in errors])
        shown = "; ".join(grouped[:SHOWN_ERRORS])
        more = len(grouped) - SHOWN_ERRORS
        rest = f"; and {more} more (all in the results file's plan_errors)" if more > 0 else ""
        return f"the adapter would refuse this graph (numbers are emulated only): {shown}{rest}"
    return ""


def legend(rows: list[dict[str, Any]]) -> str:
    """What kind of number each column is."""
    steps = [str(n) for n in sorted({r["steps_run"] for r in rows if r.get("steps_run")})]
    # tasks that stopped early ran fewer steps: "the 1 or 2 training step(s)", never "the 1/2"
    counted = " or ".join([", ".join(steps[:-1]), steps[-1]] if len(steps) > 1 else steps) or "0"
    drift = f"drift vs a float32 reference of the same step: measured by the emulator; {DRIFT}"
    if any("worst_op_max_rel" in r and "worst_op_rel_rmse" not in r for r in rows):
        drift += f"; {OLD_FIGURE}: largest |a − b| / |b|, in rows of an older results file"
    if any(_overflow_not_in_results(r) for r in rows):
        drift += f"; {OVERFLOW_NOT_IN_RESULTS}"
    return (
        f"compiles, placement, ops lowered: {PRED} (compiles = the plan has no error). First non-finite op, "
        f"{drift}. est. NPU ms/step, est. memory: {EST}; vs float32: the same estimate with every float tensor in "
        f"float32. ms/step on this CPU: {CPU}, mean over the {counted} training step(s) of each task, first step "
        f"included. One process per task."
    )


def text(rows: list[dict[str, Any]]) -> str:
    """The table as aligned plain text, problems under their row, then the legend."""
    table = [COLUMNS, *(cells(r) for r in rows)]
    widths = [min(40, max(len(line[i]) for line in table)) for i in range(len(COLUMNS))]
    lines = []
    for number, line in enumerate(table):
        lines.append("  ".join(_fit(value, widths[i], i == WORST) for i, value in enumerate(line)).rstrip())
        why = problem(rows[number - 1]) if number else ""
        if why:
            lines.append(f"    {why}")
    lines.append(legend(rows))
    return "\n".join(lines)


def render_html(rows: list[dict[str, Any]], title: str = "zoo check") -> str:
    """The table as HTML; every value is escaped text."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = []
    span = len(COLUMNS)
    for row in rows:
        status = html.escape(row["status"], quote=True)
        body.append(
            f"<tr class='npu-zoo-{status}'>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(row)) + "</tr>"
        )
        why = problem(row)
        if why:
            body.append(f"<tr class='npu-zoo-problem'><td></td><td colspan='{span - 1}'>{html.escape(why)}</td></tr>")
    body.append(
        f"<tr class='npu-zoo-legend'><td colspan='{span}' style='opacity:.8'>{html.escape(legend(rows))}</td></tr>"
    )
    return (
        f"<table><caption>{html.escape(title)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def csv_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flat records for a CSV file: options as JSON, plan errors joined, the rest as they are."""
    flat = []
    for row in rows:
        record = {k: v for k, v in row.items() if k != "traceback"}
        record["options"] = json.dumps(row["options"], sort_keys=True)
        record["plan_errors"] = "; ".join(row.get("plan_errors") or [])
        flat.append(record)
    return flat


def _fit(value: str, width: int, keep_end: bool = False) -> str:
    """``value`` cut to ``width``; the worst op's cell keeps its end (the op's own name and its figure)."""
    if len(value) <= width:
        return value
    return "…" + value[len(value) - width + 1 :] if keep_end else value[: width - 1] + "…"


def _int(value: object) -> str:
    return "n/a" if value is None else str(value)


def _ratio(value: object) -> str:
    return "n/a" if value is None else f"{value:.2f}×"


def _g(value: object) -> str:
    if value is None:
        return "n/a"
    return figure_text(float(cast("float", value)))
