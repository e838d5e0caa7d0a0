"""The ``run`` block of a report payload: what one run measured and where it wrote files.

Split from :mod:`npu_jupyter._display.mime` (which assembles the whole payload) because a run's facts
come from other stages than the plan's — the backend, the dump and profile writers, the non-finite
check, the real adapter's outputs — each read here once, in the shape ``report_schema.json`` gives.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # pragma: no cover - typing only; keeps this module import-light
    from npu_jupyter._display.payload_types import Actual, ActualRow, AdapterOutput, RunInfo
    from npu_jupyter._runtime.report import RunReport

# A list of findings (skipped dump steps, adapter outputs) must not eat the payload's budget on its own.
MAX_ITEMS = 100
_MAX_ACTUAL_ROWS = 2000


def run_block(run: RunReport) -> RunInfo:
    """The payload's ``run`` object (docs/report-schema.md): times rounded, paths as the views show them."""
    out: RunInfo = {
        "backend": run.backend,
        "steps": run.steps,
        "unit": "call" if run.function is not None else "step",
        "wall_ms": round(float(run.wall_ms), 3),  # a measured wall time is finite
        "reference_wall_ms": None if run.reference_wall_ms is None else round_number(run.reference_wall_ms, 3),
        "first_overflow": run.first_overflow,
        # this report's graph's own folder (dump_path/graph_<k> after the first graph), else dump_path
        "dump_dir": shown_path(run.dump.graph_dir or run.dump_dir),
        "trace_file": shown_path(run.trace_file),
        "op_summary_csv": shown_path(run.op_summary_csv),
        # ascend backend only (null / empty otherwise): see docs/report-schema.md
        "prediction": run.prediction_note,
        "adapter_outputs": [cast("AdapterOutput", dict(o)) for o in run.adapter_outputs][:MAX_ITEMS],
        "actual": _actual_block(run.actual),
    }
    _add_run_extras(out, run)
    return out


def shown_path(path: str | None) -> str | None:
    """A file a run wrote, as the views show and link it: relative to the kernel's working directory
    when it lies inside it (the notebook's folder, which JupyterLab can open), else absolute.

    A run records paths as it was given them (``--dump ./dump`` relative, ``--profile $dir``
    absolute); shown side by side they must read alike, and a relative one is a link in the views.
    """
    if not path:
        return path
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, os.getcwd())
    except ValueError:  # another drive on Windows
        return absolute
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _actual_block(actual: dict[str, Any] | None) -> Actual | None:
    """GE's actual engine/dtypes next to the prediction, capped like the other lists."""
    if actual is None:
        return None
    rows = list(actual.get("rows", []))
    return {
        "files": list(actual.get("files", []))[:MAX_ITEMS],
        "rows": [cast("ActualRow", dict(r)) for r in rows[:_MAX_ACTUAL_ROWS]],
        "differ": sum(1 for r in rows if not r.get("same")),
        "compared": len(rows),
        "missing": int(actual.get("missing", 0)),
        "error": actual.get("error"),
    }


def _add_run_extras(out: RunInfo, run: RunReport) -> None:
    """Optional run facts: which steps were dumped or skipped, where a function's calls came from when its
    title does not say, what the overflow check looked at, and the first non-finite value.
    """
    if run.dump.steps:
        out["dump_steps"] = sorted(set(run.dump.steps))
    if run.dump.skipped:
        out["dump_skipped"] = [{"step": item.step, "reason": item.reason} for item in run.dump.skipped[:MAX_ITEMS]]
    if run.rounded_tensors is not None:
        out["rounded_tensors"] = int(run.rounded_tensors)
    split = run.function.calls_split() if run.function is not None else ()
    if split:  # fit's validation ran the test function a later evaluate runs too: say whose calls are whose
        out["calls_from"] = [{"where": where, "calls": calls} for where, calls in split]
    check = run.overflow_check
    if check is not None and check.checked:
        out["overflow_check"] = {"checked": check.checked, "mode": check.mode, "storage": list(check.storage)}
    finding = run.non_finite
    if finding is not None:
        out["nonfinite"] = {"first_op": finding.where, "step": finding.step, "reason": finding.reason}


def round_number(value: float, digits: int) -> float | None:
    """Round for stable, short output; NaN/inf are not JSON, so they become null."""
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits)
